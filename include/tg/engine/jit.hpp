#pragma once
// assign: write values into existing buffers (parameters and optimizer state update in place).
// jit: capture the device work of a function on an early call and replay it afterwards: no graph
// building, scheduling or compiling on replay (tinygrad's TinyJit, tensorgrad's compiled step).
// Both are defined in tg/impl/jit.hpp; the template here only calls the function.
#include <tuple>

#include "../tensor/core.hpp"
#include "../util/function.hpp"
#include "../util/rc.hpp"

namespace tg {

/// Realizes every value into the buffer of its target (a realized tensor of the same shape;
/// values are cast to the target's dtype) in one schedule. Afterwards each value tensor aliases
/// its target's memory. The tensors in `realize_too` are realized in the same schedule, from the
/// targets' old contents (an optimizer keeps the gradients it read this way).
TG_API void assign(const std::vector<std::pair<Tensor, Tensor>>& pairs,
                   const std::vector<Tensor>& realize_too,
                   std::source_location loc = std::source_location::current());

inline void assign(const std::vector<std::pair<Tensor, Tensor>>& pairs,
                   std::source_location loc = std::source_location::current()) {
  assign(pairs, {}, loc);
}

inline Tensor& Tensor::assign(const Tensor& value, Loc loc) {
  tg::assign({{*this, value}}, loc);
  return *this;
}

namespace detail {
template <class R> struct JitResult; // how a function's result is flattened to tensors and rebuilt
template <> struct JitResult<Tensor> {
  static std::vector<Tensor> flatten(const Tensor& t) { return {t}; }
  static Tensor rebuild(const std::vector<Tensor>& ts) { return ts[0]; }
};
template <> struct JitResult<std::vector<Tensor>> {
  static std::vector<Tensor> flatten(const std::vector<Tensor>& t) { return t; }
  static std::vector<Tensor> rebuild(const std::vector<Tensor>& ts) { return ts; }
};
template <> struct JitResult<void> {};
template <class... T> struct JitResult<std::tuple<T...>> {
  static std::vector<Tensor> flatten(const std::tuple<T...>& t) {
    return std::apply([](const auto&... x) { return std::vector<Tensor>{x...}; }, t);
  }
  static std::tuple<T...> rebuild(const std::vector<Tensor>& ts) {
    return rebuild(ts, std::index_sequence_for<T...>{});
  }
  template <std::size_t... I>
  static std::tuple<T...> rebuild(const std::vector<Tensor>& ts, std::index_sequence<I...>) {
    return std::tuple<T...>{ts[I]...};
  }
};
} // namespace detail

namespace detail {
/// Everything tg::jit does but calling the function: it keeps the capture between calls and
/// decides what each call does (warm up, capture, replay, or run and compare with the capture).
/// Copies of a Jit share one capture.
class JitCore {
public:
  TG_API JitCore();
  /// One call with these arguments; `run` calls the function once (its results made contiguous
  /// and realized in one schedule) where the call is not a replay. The results.
  TG_API std::vector<Tensor>
  call(std::vector<Tensor> inputs,
       detail::FunctionRef<std::vector<Tensor>(const std::vector<Tensor>&)> run);
  TG_API std::size_t captured_launches() const;

private:
  struct State;
  Rc<State> s_;
};
} // namespace detail

/// A function of tensors whose device work is captured once and replayed. The first call runs
/// normally (kernels compile); the second runs while recording every launch; later calls copy
/// nothing and build nothing: they rebind the inputs' buffers and replay the launches.
/// Rules, as for TinyJit: inputs are tensors of the captured shapes, dtypes and devices (a
/// symbolic size may change within its bounds); state must change through tg::assign (parameters,
/// optimizer moments, a learning rate held in a tensor); host values made inside the function
/// are frozen at capture; the returned tensors alias buffers that the next replay overwrites.
template <class F> class Jit {
public:
  explicit Jit(F f) : fn_(std::move(f)) {}

  template <class... Args> auto operator()(const Args&... args) {
    static_assert((std::is_same_v<Args, Tensor> && ...),
                  "tg::jit: every argument must be a tg::Tensor");
    using R = decltype(fn_(args...));
    std::vector<Tensor> outs = core_.call({args...}, [&](const std::vector<Tensor>& inputs) {
      return run(inputs, std::index_sequence_for<Args...>{});
    });
    if constexpr (!std::is_void_v<R>) return detail::JitResult<R>::rebuild(outs);
  }

  /// The number of device steps a replay runs (kernels and copies).
  std::size_t captured_launches() const { return core_.captured_launches(); }

private:
  /// One call of the function, its results made contiguous and realized in one schedule, the
  /// same way on every call so that the calls build the same work.
  template <std::size_t... I>
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, std::index_sequence<I...>) {
    using R = decltype(fn_(inputs[I]...));
    if constexpr (std::is_void_v<R>) {
      fn_(inputs[I]...);
      return {};
    } else {
      std::vector<Tensor> outs = detail::JitResult<R>::flatten(fn_(inputs[I]...));
      for (Tensor& o : outs) o = o.contiguous();
      realize(outs);
      return outs;
    }
  }

  F fn_;
  detail::JitCore core_;
};

/// Wraps a function of tensors in a Jit (see Jit).
template <class F> Jit<F> jit(F f) { return Jit<F>(std::move(f)); }

} // namespace tg
