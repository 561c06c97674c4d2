#pragma once
// Type-erased callables for the light headers, which keep <functional> out: it costs a Clang
// translation unit about 0.4 s, as much as all the standard headers tg.hpp needs.
#include <type_traits>
#include <utility>

namespace tg::detail {

/// Whether an F (not the wrapper itself) can be called with A... for an R.
template <class F, class Self, class R, class... A>
inline constexpr bool callable_as = !std::is_same_v<std::remove_cvref_t<F>, Self> &&
                                    std::is_invocable_r_v<R, std::remove_reference_t<F>&, A...>;

template <class Sig> class FunctionRef;
/// A callable borrowed for the duration of a call (the caller keeps it alive).
template <class R, class... A> class FunctionRef<R(A...)> {
public:
  template <class F, std::enable_if_t<callable_as<F, FunctionRef, R, A...>, int> = 0>
  FunctionRef(F&& f) // NOLINT: converts like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(__builtin_addressof(f)))),
        call_([](void* o, A... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<A>(a)...);
        }) {}
  R operator()(A... a) const { return call_(obj_, std::forward<A>(a)...); }

private:
  void* obj_;
  R (*call_)(void*, A...);
};

template <class Sig> class Function;
/// An owned callable, copied with its owner (std::function's semantics, without its header).
template <class R, class... A> class Function<R(A...)> {
public:
  Function() = default;
  template <class F, std::enable_if_t<callable_as<F, Function, R, A...>, int> = 0>
  Function(F&& f) // NOLINT: converts like std::function
      : p_(new Holder<std::decay_t<F>>(std::forward<F>(f))) {}
  Function(const Function& o) : p_(o.p_ ? o.p_->clone() : nullptr) {}
  Function(Function&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Function& operator=(Function o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Function() { delete p_; }
  explicit operator bool() const { return p_ != nullptr; }
  /// Calls it (it must be set).
  R operator()(A... a) const { return p_->call(std::forward<A>(a)...); }

private:
  // An owning raw pointer: std::unique_ptr's header costs a Clang translation unit about 0.2 s
  // (libstdc++ 12 includes <ostream> there).
  struct Base {
    virtual ~Base() = default;
    virtual R call(A... a) = 0;
    virtual Base* clone() const = 0;
  };
  template <class F> struct Holder final : Base {
    F f;
    template <class G> explicit Holder(G&& g) : f(std::forward<G>(g)) {}
    R call(A... a) override { return f(std::forward<A>(a)...); }
    Base* clone() const override { return new Holder(f); }
  };
  Base* p_ = nullptr;
};

} // namespace tg::detail
