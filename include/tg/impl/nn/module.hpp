#pragma once
// What nn/module.hpp declares (TG_API, config.hpp).
#include "../../tg.hpp"

namespace tg::nn {

TG_API Module::~Module() = default;

TG_API Tensor Module::forward(const Tensor& x) {
  (void)x;
  throw error("tg.nn." + type_name() +
              ": this module does not take a single tensor (see its forward overloads)");
}

TG_API Tensor Module::operator()(const Tensor& x) { return forward(x); }

TG_API std::string Module::type_name() const { return "Module"; }

TG_API std::string Module::extra_repr() const { return ""; }

TG_API std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect(out, "", recurse, Kind::Parameter);
  return out;
}

TG_API std::vector<Tensor> Module::parameters(bool recurse) const {
  return values(named_parameters(recurse));
}

TG_API std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect(out, "", recurse, Kind::Buffer);
  return out;
}

TG_API std::vector<Tensor> Module::buffers(bool recurse) const {
  return values(named_buffers(recurse));
}

TG_API std::vector<std::pair<std::string, Module*>> Module::named_children() {
  std::vector<std::pair<std::string, Module*>> out;
  for (const Slot& s : modules_) out.emplace_back(s.name, child(s));
  return out;
}

TG_API std::vector<std::pair<std::string, const Module*>> Module::named_children() const {
  std::vector<std::pair<std::string, const Module*>> out;
  for (const Slot& s : modules_) out.emplace_back(s.name, child(s));
  return out;
}

TG_API std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  for (auto& [name, m] : named_children())
    for (auto& [sub, sm] : m->named_modules())
      out.emplace_back(sub.empty() ? name : name + "." + sub, sm);
  return out;
}

TG_API Module& Module::get_submodule(const std::string& path) {
  if (path.empty()) return *this;
  std::size_t dot = path.find('.');
  std::string head = path.substr(0, dot);
  for (const Slot& s : modules_)
    if (s.name == head)
      return dot == std::string::npos ? *child(s) : child(s)->get_submodule(path.substr(dot + 1));
  throw error("tg.nn." + type_name() + ": no submodule '" + head + "'");
}

TG_API Tensor& Module::get_parameter(const std::string& path) {
  return member(path, Kind::Parameter);
}

TG_API Tensor& Module::get_buffer(const std::string& path) { return member(path, Kind::Buffer); }

TG_API std::int64_t Module::num_parameters() const {
  std::int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

TG_API StateDict Module::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect(out, "", true, Kind::State);
  StateDict sd;
  for (auto& [k, v] : out) sd.insert(k, v);
  return sd;
}

TG_API LoadResult Module::load_state_dict(const StateDict& sd, bool strict,
                                          std::source_location loc) {
  StateDict own = state_dict();
  LoadResult r;
  std::vector<std::string> mismatched;
  std::vector<std::pair<Tensor, Tensor>> writes;
  for (const auto& [k, target] : own) {
    const Tensor* v = sd.find(k);
    if (!v || !v->defined()) {
      r.missing_keys.push_back(k);
      continue;
    }
    if (v->shape() != target.shape()) {
      mismatched.push_back("size mismatch for " + k + ": copying a tensor of shape " +
                           tg::detail::shape_of(*v) +
                           " from the state dict, the shape in the current model is " +
                           tg::detail::shape_of(target));
      continue;
    }
    Tensor value = v->device() == target.device() ? *v : v->to(target.device());
    writes.emplace_back(target, value.detach().cast(target.dtype()));
  }
  for (const auto& [k, v] : sd)
    if (!own.contains(k)) r.unexpected_keys.push_back(k);
  bool fail =
      !mismatched.empty() || (strict && (!r.missing_keys.empty() || !r.unexpected_keys.empty()));
  if (fail) {
    std::string msg = "error(s) in loading the state dict of " + type_name() + ":";
    auto list = [](const std::vector<std::string>& ks) {
      std::string s;
      for (std::size_t i = 0; i < ks.size(); ++i) {
        s += i ? ", \"" : "\"";
        s += ks[i];
        s += '"';
      }
      return s;
    };
    if (strict && !r.missing_keys.empty()) msg += "\n  missing key(s): " + list(r.missing_keys);
    if (strict && !r.unexpected_keys.empty())
      msg += "\n  unexpected key(s): " + list(r.unexpected_keys);
    for (const std::string& m : mismatched) msg += "\n  " + m;
    tg::detail::fail<error>("load_state_dict", msg, loc);
  }
  if (!writes.empty()) {
    no_grad guard;
    tg::assign(writes, loc);
  }
  return r;
}

TG_API Module& Module::train(bool mode) {
  training_ = mode;
  for (auto& [name, m] : named_children()) m->train(mode);
  return *this;
}

TG_API Module& Module::eval() { return train(false); }

TG_API bool Module::is_training() const { return training_; }

TG_API void Module::zero_grad() {
  for (Tensor& p : parameters()) p.set_grad(Tensor());
}

TG_API std::string Module::to_string() const {
  std::string r = type_name() + "(" + extra_repr();
  auto kids = named_children();
  if (!kids.empty()) {
    r += "\n";
    for (auto& [name, m] : kids) {
      std::string sub = m->to_string(), ind;
      for (char c : sub) {
        ind.push_back(c);
        if (c == '\n') ind += "  ";
      }
      r += "  (" + name + "): " + ind + "\n";
    }
  }
  return r + ")";
}

TG_API Tensor& Module::register_parameter(const std::string& name, Tensor& member,
                                          bool requires_grad) {
  check_name(name);
  if (member.defined()) {
    materialize(member);
    if (requires_grad) member.requires_grad_();
  }
  params_.push_back(Slot{name, offset_of(&member), nullptr, true});
  return member;
}

TG_API void Module::add_module(const std::string& name, Module* member, Rc<Module> owned) {
  check_name(name);
  if (member) {
    modules_.push_back(Slot{name, offset_of(member), nullptr, true});
    return;
  }
  if (!owned) throw error("tg.nn.register_module: '" + name + "' is a null module");
  modules_.push_back(Slot{name, 0, std::move(owned), true});
}

TG_API Tensor& Module::register_buffer(const std::string& name, Tensor& member, bool persistent) {
  check_name(name);
  if (member.defined()) materialize(member);
  buffers_.push_back(Slot{name, offset_of(&member), nullptr, persistent});
  return member;
}

TG_API std::ptrdiff_t Module::offset_of(const void* member) const {
  return reinterpret_cast<const char*>(member) - reinterpret_cast<const char*>(this);
}

TG_API Tensor& Module::tensor_at(const Slot& s) const {
  return *reinterpret_cast<Tensor*>(const_cast<char*>(reinterpret_cast<const char*>(this)) +
                                    s.offset);
}

TG_API Module* Module::child(const Slot& s) const {
  if (s.owned) return s.owned.get();
  return reinterpret_cast<Module*>(const_cast<char*>(reinterpret_cast<const char*>(this)) +
                                   s.offset);
}

TG_API void Module::check_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw error("tg.nn." + type_name() + ": '" + name +
                "' is not a valid member name (non-empty, no '.')");
  for (const auto* list : {&params_, &buffers_, &modules_})
    for (const Slot& s : *list)
      if (s.name == name)
        throw error("tg.nn." + type_name() + ": '" + name + "' is registered twice");
}

TG_API void Module::materialize(Tensor& t) {
  if (t.lazy()->op == Op::Buffer) return;
  no_grad guard;
  t = t.detach().contiguous().realize();
}

TG_API void Module::collect(std::vector<std::pair<std::string, Tensor>>& out,
                            const std::string& prefix, bool recurse, Kind kind) const {
  if (kind != Kind::Buffer)
    for (const Slot& s : params_) {
      const Tensor& t = tensor_at(s);
      if (t.defined()) out.emplace_back(prefix + s.name, t);
    }
  if (kind != Kind::Parameter)
    for (const Slot& s : buffers_) {
      const Tensor& t = tensor_at(s);
      if (t.defined() && (kind == Kind::Buffer || s.persistent))
        out.emplace_back(prefix + s.name, t);
    }
  if (recurse)
    for (const Slot& s : modules_) child(s)->collect(out, prefix + s.name + ".", true, kind);
}

TG_API Tensor& Module::member(const std::string& path, Kind kind) {
  std::size_t dot = path.rfind('.');
  Module& owner = dot == std::string::npos ? *this : get_submodule(path.substr(0, dot));
  std::string name = dot == std::string::npos ? path : path.substr(dot + 1);
  for (const Slot& s : kind == Kind::Parameter ? owner.params_ : owner.buffers_)
    if (s.name == name) return owner.tensor_at(s);
  throw error("tg.nn." + type_name() + ": no " +
              (kind == Kind::Parameter ? "parameter" : "buffer") + " '" + path + "'");
}

TG_API std::vector<Tensor> Module::values(const std::vector<std::pair<std::string, Tensor>>& kv) {
  std::vector<Tensor> r;
  for (const auto& [k, v] : kv) r.push_back(v);
  return r;
}

TG_API std::size_t ModuleList::size() const { return items_.size(); }

TG_API bool ModuleList::empty() const { return items_.empty(); }

TG_API std::string ModuleList::type_name() const { return "ModuleList"; }

TG_API Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& m : items_) y = m->forward(y);
  return y;
}

TG_API std::string Sequential::type_name() const { return "Sequential"; }

} // namespace tg::nn
