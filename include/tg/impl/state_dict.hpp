#pragma once
// What state/state_dict.hpp declares (TG_API, config.hpp).
#include "../tg.hpp"

namespace tg {

TG_API StateDict::StateDict(std::initializer_list<value_type> items) {
  for (const auto& [k, v] : items) insert(k, v);
}

TG_API void StateDict::insert(const std::string& name, const Tensor& t) {
  if (Tensor* p = find(name))
    *p = t;
  else
    items_.emplace_back(name, t);
}

TG_API Tensor& StateDict::operator[](const std::string& name) {
  if (Tensor* p = find(name)) return *p;
  items_.emplace_back(name, Tensor());
  return items_.back().second;
}

TG_API const Tensor& StateDict::at(const std::string& name) const {
  if (const Tensor* p = find(name)) return *p;
  throw error("tg.StateDict: no tensor named '" + name + "'");
}

TG_API Tensor* StateDict::find(const std::string& name) {
  for (auto& [k, v] : items_)
    if (k == name) return &v;
  return nullptr;
}

TG_API const Tensor* StateDict::find(const std::string& name) const {
  for (const auto& [k, v] : items_)
    if (k == name) return &v;
  return nullptr;
}

TG_API bool StateDict::contains(const std::string& name) const { return find(name) != nullptr; }

TG_API bool StateDict::erase(const std::string& name) {
  for (auto it = items_.begin(); it != items_.end(); ++it)
    if (it->first == name) {
      items_.erase(it);
      return true;
    }
  return false;
}

TG_API std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> r;
  for (const auto& kv : items_) r.push_back(kv.first);
  return r;
}

TG_API std::size_t StateDict::size() const { return items_.size(); }

TG_API bool StateDict::empty() const { return items_.empty(); }

TG_API auto StateDict::begin() -> iterator { return items_.begin(); }

TG_API auto StateDict::end() -> iterator { return items_.end(); }

TG_API auto StateDict::begin() const -> const_iterator { return items_.begin(); }

TG_API auto StateDict::end() const -> const_iterator { return items_.end(); }

} // namespace tg
