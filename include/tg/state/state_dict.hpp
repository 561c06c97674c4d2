#pragma once
// StateDict: named tensors in insertion order (PyTorch's OrderedDict of a state_dict). Modules
// produce and consume it (nn/module.hpp); safetensors reads and writes it (state/safetensors.hpp).
#include <string>
#include <utility>
#include <vector>

#include "../tensor/tensor.hpp"

namespace tg {

class StateDict {
public:
  using value_type = std::pair<std::string, Tensor>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  StateDict() = default;
  StateDict(std::initializer_list<value_type> items) {
    for (const auto& [k, v] : items) insert(k, v);
  }

  /// Adds `name` (or replaces the tensor already stored under it).
  void insert(const std::string& name, const Tensor& t) {
    if (Tensor* p = find(name))
      *p = t;
    else
      items_.emplace_back(name, t);
  }
  /// The tensor stored under `name`, inserting an undefined one when absent (as std::map).
  Tensor& operator[](const std::string& name) {
    if (Tensor* p = find(name)) return *p;
    items_.emplace_back(name, Tensor());
    return items_.back().second;
  }
  /// The tensor stored under `name`; throws tg::error naming the key when absent.
  const Tensor& at(const std::string& name) const {
    if (const Tensor* p = find(name)) return *p;
    throw error("tg.StateDict: no tensor named '" + name + "'");
  }
  Tensor* find(const std::string& name) {
    for (auto& [k, v] : items_)
      if (k == name) return &v;
    return nullptr;
  }
  const Tensor* find(const std::string& name) const {
    for (const auto& [k, v] : items_)
      if (k == name) return &v;
    return nullptr;
  }
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  bool erase(const std::string& name) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == name) {
        items_.erase(it);
        return true;
      }
    return false;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> r;
    for (const auto& kv : items_) r.push_back(kv.first);
    return r;
  }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

private:
  std::vector<value_type> items_;
};

} // namespace tg
