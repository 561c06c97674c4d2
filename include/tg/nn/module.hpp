#pragma once
// nn::Module: a tree of modules whose parameters and buffers get dotted names (layers.0.weight)
// from one registration per member, as torch.nn.Module. A module registers its members in its
// constructor:
//
//   struct Net : tg::nn::Module {
//     tg::nn::Linear fc1{784, 256}, fc2{256, 10};
//     tg::Tensor scale;
//     Net() {
//       register_module("fc1", fc1);
//       register_module("fc2", fc2);
//       register_parameter("scale", scale = tg::ones({1}));
//     }
//     tg::Tensor forward(const tg::Tensor& x) override { return fc2(fc1(x).relu()) * scale; }
//   };
//
// Registrations record where a member lies inside its module (an offset from the module), so
// modules can be copied and moved: a copy shares its parameters' storage (tensors are handles),
// like assigning a torch module to a second name. Members registered by reference must be data
// members of the module itself; modules held on the heap are registered as std::shared_ptr
// (ModuleList and Sequential do this).
#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>

#include "../state/state_dict.hpp"

namespace tg::nn {

/// What load_state_dict(strict = false) found missing or left unused.
struct LoadResult {
  std::vector<std::string> missing_keys, unexpected_keys;
};

class Module {
public:
  virtual ~Module() = default;

  /// The computation of a module with one input. Modules with other signatures (attention)
  /// add their own overloads; this one throws for them.
  virtual Tensor forward(const Tensor& x) {
    (void)x;
    throw error("tg.nn." + type_name() +
                ": this module does not take a single tensor (see its forward overloads)");
  }
  Tensor operator()(const Tensor& x) { return forward(x); }

  /// The PyTorch-style name of the module's type, for printing and messages.
  virtual std::string type_name() const { return "Module"; }
  /// Its constructor arguments, for printing (as torch's extra_repr).
  virtual std::string extra_repr() const { return ""; }

  // ---- parameters and buffers ------------------------------------------------------------
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const {
    std::vector<std::pair<std::string, Tensor>> out;
    collect(out, "", recurse, Kind::Parameter);
    return out;
  }
  std::vector<Tensor> parameters(bool recurse = true) const {
    return values(named_parameters(recurse));
  }
  /// Buffers (running statistics and the like), persistent or not.
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const {
    std::vector<std::pair<std::string, Tensor>> out;
    collect(out, "", recurse, Kind::Buffer);
    return out;
  }
  std::vector<Tensor> buffers(bool recurse = true) const { return values(named_buffers(recurse)); }
  /// The direct submodules.
  std::vector<std::pair<std::string, Module*>> named_children() {
    std::vector<std::pair<std::string, Module*>> out;
    for (const Slot& s : modules_) out.emplace_back(s.name, child(s));
    return out;
  }
  std::vector<std::pair<std::string, const Module*>> named_children() const {
    std::vector<std::pair<std::string, const Module*>> out;
    for (const Slot& s : modules_) out.emplace_back(s.name, child(s));
    return out;
  }
  /// This module ("") and every module below it, depth first, with dotted names.
  std::vector<std::pair<std::string, Module*>> named_modules() {
    std::vector<std::pair<std::string, Module*>> out{{"", this}};
    for (auto& [name, m] : named_children())
      for (auto& [sub, sm] : m->named_modules())
        out.emplace_back(sub.empty() ? name : name + "." + sub, sm);
    return out;
  }
  /// The module at a dotted path ("layers.0"); "" is this module.
  Module& get_submodule(const std::string& path) {
    if (path.empty()) return *this;
    std::size_t dot = path.find('.');
    std::string head = path.substr(0, dot);
    for (const Slot& s : modules_)
      if (s.name == head)
        return dot == std::string::npos ? *child(s) : child(s)->get_submodule(path.substr(dot + 1));
    throw error("tg.nn." + type_name() + ": no submodule '" + head + "'");
  }
  /// The parameter member at a dotted path ("layers.0.weight"), by reference: assigning to it
  /// replaces the parameter (as setattr in PyTorch).
  Tensor& get_parameter(const std::string& path) { return member(path, Kind::Parameter); }
  Tensor& get_buffer(const std::string& path) { return member(path, Kind::Buffer); }
  /// The number of parameter elements.
  std::int64_t num_parameters() const {
    std::int64_t n = 0;
    for (const Tensor& p : parameters()) n += p.numel();
    return n;
  }

  // ---- state ------------------------------------------------------------------------------
  /// Parameters and persistent buffers by dotted name (the tensors themselves, not copies).
  StateDict state_dict() const {
    std::vector<std::pair<std::string, Tensor>> out;
    collect(out, "", true, Kind::State);
    StateDict sd;
    for (auto& [k, v] : out) sd.insert(k, v);
    return sd;
  }
  /// Copies `sd` into the parameters and buffers, in place (one tg::assign; values are cast to
  /// each parameter's dtype and moved to its device). A shape mismatch is always an error;
  /// with `strict`, so are missing and unexpected keys. Every problem is listed in the message.
  LoadResult load_state_dict(const StateDict& sd, bool strict = true,
                             std::source_location loc = std::source_location::current()) {
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

  // ---- modes ------------------------------------------------------------------------------
  /// Training mode (the default) for this module and every submodule: dropout drops, batch norm
  /// uses and updates batch statistics.
  Module& train(bool mode = true) {
    training_ = mode;
    for (auto& [name, m] : named_children()) m->train(mode);
    return *this;
  }
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  /// Sets every parameter's gradient to undefined (as zero_grad(set_to_none=True)).
  void zero_grad() {
    for (Tensor& p : parameters()) p.set_grad(Tensor());
  }
  /// Turns gradient tracking of every parameter on or off (freezing).
  Module& requires_grad_(bool on = true) {
    for (Tensor& p : parameters()) p.requires_grad_(on);
    return *this;
  }

  /// A tree like torch's repr: "Sequential(\n  (0): Linear(in_features=2, ...)\n)".
  std::string to_string() const {
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

protected:
  Module() = default;
  Module(const Module&) = default;
  Module(Module&&) = default;
  Module& operator=(const Module&) = default;
  Module& operator=(Module&&) = default;

  /// Registers the data member `member` as a parameter called `name`: it becomes a realized
  /// buffer that requires grad (unless `requires_grad` is false). An undefined tensor (an absent
  /// bias) is registered but skipped by parameters() and state_dict().
  Tensor& register_parameter(const std::string& name, Tensor& member, bool requires_grad = true) {
    check_name(name);
    if (member.defined()) {
      materialize(member);
      if (requires_grad) member.requires_grad_();
    }
    params_.push_back(Slot{name, offset_of(&member), nullptr, true});
    return member;
  }
  /// Registers the data member `member` as a buffer (state that is not trained: running
  /// statistics). Non-persistent buffers are left out of state_dict().
  Tensor& register_buffer(const std::string& name, Tensor& member, bool persistent = true) {
    check_name(name);
    if (member.defined()) materialize(member);
    buffers_.push_back(Slot{name, offset_of(&member), nullptr, persistent});
    return member;
  }
  /// Registers the data member `member` as a submodule.
  template <std::derived_from<Module> M> M& register_module(const std::string& name, M& member) {
    check_name(name);
    modules_.push_back(Slot{name, offset_of(static_cast<Module*>(&member)), nullptr, true});
    return member;
  }
  /// Registers a module held by shared pointer (owned jointly with the caller).
  template <std::derived_from<Module> M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    check_name(name);
    if (!m) throw error("tg.nn.register_module: '" + name + "' is a null module");
    modules_.push_back(Slot{name, 0, m, true});
    return m;
  }

private:
  enum class Kind { Parameter, Buffer, State };
  struct Slot {
    std::string name;
    std::ptrdiff_t offset; // from this module's address (members)
    std::shared_ptr<Module> owned;
    bool persistent;
  };

  std::ptrdiff_t offset_of(const void* member) const {
    return reinterpret_cast<const char*>(member) - reinterpret_cast<const char*>(this);
  }
  Tensor& tensor_at(const Slot& s) const {
    return *reinterpret_cast<Tensor*>(const_cast<char*>(reinterpret_cast<const char*>(this)) +
                                      s.offset);
  }
  Module* child(const Slot& s) const {
    if (s.owned) return s.owned.get();
    return reinterpret_cast<Module*>(const_cast<char*>(reinterpret_cast<const char*>(this)) +
                                     s.offset);
  }
  void check_name(const std::string& name) const {
    if (name.empty() || name.find('.') != std::string::npos)
      throw error("tg.nn." + type_name() + ": '" + name +
                  "' is not a valid member name (non-empty, no '.')");
    for (const auto* list : {&params_, &buffers_, &modules_})
      for (const Slot& s : *list)
        if (s.name == name)
          throw error("tg.nn." + type_name() + ": '" + name + "' is registered twice");
  }
  static void materialize(Tensor& t) {
    if (t.lazy()->op == Op::Buffer) return;
    no_grad guard;
    t = t.detach().contiguous().realize();
  }
  void collect(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix,
               bool recurse, Kind kind) const {
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
  Tensor& member(const std::string& path, Kind kind) {
    std::size_t dot = path.rfind('.');
    Module& owner = dot == std::string::npos ? *this : get_submodule(path.substr(0, dot));
    std::string name = dot == std::string::npos ? path : path.substr(dot + 1);
    for (const Slot& s : kind == Kind::Parameter ? owner.params_ : owner.buffers_)
      if (s.name == name) return owner.tensor_at(s);
    throw error("tg.nn." + type_name() + ": no " +
                (kind == Kind::Parameter ? "parameter" : "buffer") + " '" + path + "'");
  }
  static std::vector<Tensor> values(const std::vector<std::pair<std::string, Tensor>>& kv) {
    std::vector<Tensor> r;
    for (const auto& [k, v] : kv) r.push_back(v);
    return r;
  }

  std::vector<Slot> params_, buffers_, modules_;
  bool training_ = true;
};

TG_API std::ostream& operator<<(std::ostream& os, const Module& m);

namespace detail {
template <class M> std::shared_ptr<Module> hold(M&& m) {
  using D = std::decay_t<M>;
  if constexpr (requires { typename D::element_type; }) {
    static_assert(std::derived_from<typename D::element_type, Module>, "tg.nn: not a module");
    return std::static_pointer_cast<Module>(m);
  } else {
    static_assert(std::derived_from<D, Module>, "tg.nn: not a module");
    return std::make_shared<D>(std::forward<M>(m));
  }
}
} // namespace detail

/// Modules in a list, named "0", "1", ... (torch.nn.ModuleList). Takes modules by value (moved
/// onto the heap) or by std::shared_ptr.
class ModuleList : public Module {
public:
  ModuleList() = default;
  template <class... Ms>
    requires(sizeof...(Ms) > 0 &&
             !(sizeof...(Ms) == 1 && (std::is_same_v<std::decay_t<Ms>, ModuleList> && ...)))
  explicit ModuleList(Ms&&... ms) {
    (push_back(std::forward<Ms>(ms)), ...);
  }
  template <class M> ModuleList& push_back(M&& m) {
    items_.push_back(
        register_module(std::to_string(items_.size()), detail::hold(std::forward<M>(m))));
    return *this;
  }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  Module& operator[](std::size_t i) { return *items_.at(i); }
  const Module& operator[](std::size_t i) const { return *items_.at(i); }
  /// The i-th module as its own type (throws tg::error if it is not an M).
  template <class M> M& at(std::size_t i) {
    auto* p = dynamic_cast<M*>(items_.at(i).get());
    if (!p)
      throw error("tg.nn.ModuleList: module " + std::to_string(i) + " is a " +
                  items_[i]->type_name());
    return *p;
  }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  std::string type_name() const override { return "ModuleList"; }

protected:
  std::vector<std::shared_ptr<Module>> items_;
};

/// Modules applied in order (torch.nn.Sequential): Sequential(Linear(2, 4), ReLU(), Linear(4, 1)).
class Sequential : public ModuleList {
public:
  Sequential() = default;
  template <class... Ms>
    requires(sizeof...(Ms) > 0 &&
             !(sizeof...(Ms) == 1 && (std::is_same_v<std::decay_t<Ms>, Sequential> && ...)))
  explicit Sequential(Ms&&... ms) {
    (push_back(std::forward<Ms>(ms)), ...);
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    for (auto& m : items_) y = m->forward(y);
    return y;
  }
  std::string type_name() const override { return "Sequential"; }
};

} // namespace tg::nn
