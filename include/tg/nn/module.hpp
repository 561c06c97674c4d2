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
// members of the module itself; modules held on the heap are registered by a shared pointer
// (std::shared_ptr or tg::Rc; ModuleList and Sequential do this).
#include <concepts>
#include <cstdint>
#include <iosfwd>

#include "../state/state_dict.hpp"
#include "../util/rc.hpp"

namespace tg::nn {

/// What load_state_dict(strict = false) found missing or left unused.
struct LoadResult {
  std::vector<std::string> missing_keys, unexpected_keys;
};

class Module {
public:
  TG_API virtual ~Module();

  /// The computation of a module with one input. Modules with other signatures (attention)
  /// add their own overloads; this one throws for them.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x);

  /// The PyTorch-style name of the module's type, for printing and messages.
  virtual std::string type_name() const;
  /// Its constructor arguments, for printing (as torch's extra_repr).
  virtual std::string extra_repr() const;

  // ---- parameters and buffers ------------------------------------------------------------
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// Buffers (running statistics and the like), persistent or not.
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  /// The direct submodules.
  std::vector<std::pair<std::string, Module*>> named_children();
  std::vector<std::pair<std::string, const Module*>> named_children() const;
  /// This module ("") and every module below it, depth first, with dotted names.
  std::vector<std::pair<std::string, Module*>> named_modules();
  /// The module at a dotted path ("layers.0"); "" is this module.
  Module& get_submodule(const std::string& path);
  /// The parameter member at a dotted path ("layers.0.weight"), by reference: assigning to it
  /// replaces the parameter (as setattr in PyTorch).
  Tensor& get_parameter(const std::string& path);
  Tensor& get_buffer(const std::string& path);
  /// The number of parameter elements.
  std::int64_t num_parameters() const;

  // ---- state ------------------------------------------------------------------------------
  /// Parameters and persistent buffers by dotted name (the tensors themselves, not copies).
  StateDict state_dict() const;
  /// Copies `sd` into the parameters and buffers, in place (one tg::assign; values are cast to
  /// each parameter's dtype and moved to its device). A shape mismatch is always an error;
  /// with `strict`, so are missing and unexpected keys. Every problem is listed in the message.
  LoadResult load_state_dict(const StateDict& sd, bool strict = true,
                             std::source_location loc = std::source_location::current());

  // ---- modes ------------------------------------------------------------------------------
  /// Training mode (the default) for this module and every submodule: dropout drops, batch norm
  /// uses and updates batch statistics.
  Module& train(bool mode = true);
  Module& eval();
  bool is_training() const;
  /// Sets every parameter's gradient to undefined (as zero_grad(set_to_none=True)).
  void zero_grad();
  /// Turns gradient tracking of every parameter on or off (freezing).
  Module& requires_grad_(bool on = true) {
    for (Tensor& p : parameters()) p.requires_grad_(on);
    return *this;
  }

  /// A tree like torch's repr: "Sequential(\n  (0): Linear(in_features=2, ...)\n)".
  std::string to_string() const;

protected:
  Module() = default;
  Module(const Module&) = default;
  Module(Module&&) = default;
  Module& operator=(const Module&) = default;
  Module& operator=(Module&&) = default;

  /// Registers the data member `member` as a parameter called `name`: it becomes a realized
  /// buffer that requires grad (unless `requires_grad` is false). An undefined tensor (an absent
  /// bias) is registered but skipped by parameters() and state_dict().
  Tensor& register_parameter(const std::string& name, Tensor& member, bool requires_grad = true);
  /// Registers the data member `member` as a buffer (state that is not trained: running
  /// statistics). Non-persistent buffers are left out of state_dict().
  Tensor& register_buffer(const std::string& name, Tensor& member, bool persistent = true);
  /// Registers the data member `member` as a submodule.
  template <std::derived_from<Module> M> M& register_module(const std::string& name, M& member) {
    add_module(name, &member, nullptr);
    return member;
  }
  /// Registers a module held by a shared pointer, std::shared_ptr<M> or tg::Rc<M> (owned jointly
  /// with the caller); returns it.
  template <class P, std::enable_if_t<std::derived_from<typename P::element_type, Module>, int> = 0>
  P register_module(const std::string& name, P m) {
    add_module(name, nullptr, Rc<Module>(m));
    return m;
  }

private:
  enum class Kind { Parameter, Buffer, State };
  struct Slot {
    std::string name;
    std::ptrdiff_t offset; // from this module's address (members)
    Rc<Module> owned;
    bool persistent;
  };

  std::ptrdiff_t offset_of(const void* member) const;
  Tensor& tensor_at(const Slot& s) const;
  Module* child(const Slot& s) const;
  void check_name(const std::string& name) const;
  /// Registers a data member (`member`) or a module held by `owned`.
  void add_module(const std::string& name, Module* member, Rc<Module> owned);
  static void materialize(Tensor& t);
  void collect(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix,
               bool recurse, Kind kind) const;
  Tensor& member(const std::string& path, Kind kind);
  static std::vector<Tensor> values(const std::vector<std::pair<std::string, Tensor>>& kv);

  std::vector<Slot> params_, buffers_, modules_;
  bool training_ = true;
};

TG_API std::ostream& operator<<(std::ostream& os, const Module& m);

namespace detail {
template <class M> Rc<Module> hold(M&& m) {
  using D = std::decay_t<M>;
  if constexpr (requires { typename D::element_type; }) {
    static_assert(std::derived_from<typename D::element_type, Module>, "tg.nn: not a module");
    return Rc<Module>(std::forward<M>(m));
  } else {
    static_assert(std::derived_from<D, Module>, "tg.nn: not a module");
    return make_rc<D>(std::forward<M>(m));
  }
}
/// Whether Ms is exactly one L: a copy or a move of L, not a list that holds it.
template <class L, class... Ms>
inline constexpr bool just_l = sizeof...(Ms) == 1 && (std::is_same_v<std::decay_t<Ms>, L> && ...);
/// Whether Ms make a list of modules for L's constructor.
template <class L, class... Ms>
inline constexpr bool modules_of = sizeof...(Ms) > 0 && !just_l<L, Ms...>;
} // namespace detail

/// Modules in a list, named "0", "1", ... (torch.nn.ModuleList). Takes modules by value (moved
/// onto the heap) or by shared pointer (std::shared_ptr or tg::Rc).
class ModuleList : public Module {
public:
  ModuleList() = default;
  template <class... Ms, std::enable_if_t<detail::modules_of<ModuleList, Ms...>, int> = 0>
  explicit ModuleList(Ms&&... ms) {
    (push_back(std::forward<Ms>(ms)), ...);
  }
  template <class M> ModuleList& push_back(M&& m) {
    items_.push_back(
        register_module(std::to_string(items_.size()), detail::hold(std::forward<M>(m))));
    return *this;
  }
  std::size_t size() const;
  bool empty() const;
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
  std::string type_name() const override;

protected:
  std::vector<Rc<Module>> items_;
};

/// Modules applied in order (torch.nn.Sequential): Sequential(Linear(2, 4), ReLU(), Linear(4, 1)).
class Sequential : public ModuleList {
public:
  Sequential() = default;
  template <class... Ms, std::enable_if_t<detail::modules_of<Sequential, Ms...>, int> = 0>
  explicit Sequential(Ms&&... ms) {
    (push_back(std::forward<Ms>(ms)), ...);
  }
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};

} // namespace tg::nn
