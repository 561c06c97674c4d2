#pragma once
// The tg::Tensor class. Its members and the free functions of tensor/ are declared here and in
// core.hpp, ops.hpp, movement.hpp, math.hpp, indexing.hpp, creation.hpp and print.hpp (tensor.hpp
// includes them all) and defined in tg/impl/tensor/ (autograd's in tg/impl/autograd.hpp, assign's
// in tg/impl/jit.hpp); templates are defined where they are declared.
#include <concepts>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <span>

#include "../util/rc.hpp"
#include "lazy.hpp"

namespace tg {

namespace detail {
/// One axis of a reduction: any integer but bool.
template <class T>
concept Axis = std::integral<T> && !std::same_as<T, bool>;
} // namespace detail

template <class T>
concept Arithmetic =
    std::is_arithmetic_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;

/// dtype (unset: float32 for factories, the element type for data) and device ("" = default).
struct TensorOptions {
  std::optional<DType> dtype;
  std::string device;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype(d) {}
  TensorOptions(DType d, std::string dev) : dtype(d), device(std::move(dev)) {}
};

/// A symbolic size bound to a value: `tg::sym("batch", 1, 4096, 32)`.
TG_API SInt sym(std::string_view name, std::int64_t lo, std::int64_t hi, std::int64_t value);

/// One axis of an index: a slice [start:stop:step] (negative values count from the end).
struct Slice {
  std::optional<std::int64_t> start, stop;
  std::int64_t step = 1;
};
/// An integer (removes the axis) or a Slice. (Not a std::variant: <variant> would cost every
/// file that includes tg.hpp its parse.)
struct Index {
  std::int64_t i = 0; // when !is_slice
  Slice slice;        // when is_slice
  bool is_slice = false;
  template <std::integral I> Index(I i_) : i(std::int64_t(i_)) {}
  Index(Slice s) : slice(s), is_slice(true) {}
};

class Tensor;
/// A tensor operand that remembers the user's call site (operators cannot take a default argument).
struct TensorArg {
  const Tensor& t;
  std::source_location loc;
  TensorArg(const Tensor& t_, std::source_location l = std::source_location::current())
      : t(t_), loc(l) {}
};

class Tensor {
public:
  using Loc = std::source_location;

  Tensor() = default;
  explicit Tensor(LazyPtr n) : n_(std::move(n)) {}

  // ---- data ------------------------------------------------------------------------------
  template <Arithmetic E>
  Tensor(std::initializer_list<E> v, TensorOptions o = {}, Loc loc = Loc::current())
      : Tensor(from_data(std::vector<E>(v), {std::int64_t(v.size())}, o, loc)) {}
  template <Arithmetic E>
  Tensor(std::initializer_list<std::initializer_list<E>> v, TensorOptions o = {},
         Loc loc = Loc::current()) {
    std::vector<E> flat;
    std::int64_t cols = v.size() ? std::int64_t(v.begin()->size()) : 0;
    for (auto& row : v) {
      if (std::int64_t(row.size()) != cols)
        detail::fail<shape_error>("tensor", "nested lists have different lengths", loc);
      flat.insert(flat.end(), row.begin(), row.end());
    }
    *this = from_data(flat, {std::int64_t(v.size()), cols}, o, loc);
  }
  template <Arithmetic E>
  Tensor(std::initializer_list<std::initializer_list<std::initializer_list<E>>> v,
         TensorOptions o = {}, Loc loc = Loc::current()) {
    std::vector<E> flat;
    std::int64_t d1 = v.size() ? std::int64_t(v.begin()->size()) : 0, d2 = -1;
    for (auto& a : v) {
      if (std::int64_t(a.size()) != d1)
        detail::fail<shape_error>("tensor", "nested lists have different lengths", loc);
      for (auto& b : a) {
        if (d2 < 0) d2 = std::int64_t(b.size());
        if (std::int64_t(b.size()) != d2)
          detail::fail<shape_error>("tensor", "nested lists have different lengths", loc);
        flat.insert(flat.end(), b.begin(), b.end());
      }
    }
    *this = from_data(flat, {std::int64_t(v.size()), d1, d2 < 0 ? 0 : d2}, o, loc);
  }
  /// Copies `data` into a new tensor of the given shape (default: 1-D).
  template <Arithmetic E>
  static Tensor from_data(const std::vector<E>& data, Shape shape = {}, TensorOptions o = {},
                          Loc loc = Loc::current());
  template <Arithmetic E>
  static Tensor from_data(const E* data, Shape shape, TensorOptions o = {},
                          Loc loc = Loc::current());
  /// A 0-d tensor.
  template <Arithmetic E>
  static Tensor scalar(E v, TensorOptions o = {}, Loc loc = Loc::current()) {
    return from_data(std::vector<E>{v}, Shape{}, o, loc);
  }

  // ---- properties ------------------------------------------------------------------------
  bool defined() const { return bool(n_); }
  std::vector<std::int64_t> shape() const;
  const Shape& sym_shape() const { return node().shape; }
  std::int64_t size(int dim, Loc loc = Loc::current()) const;
  DType dtype() const { return node().dtype; }
  const std::string& device() const { return node().device; }
  std::int64_t numel() const;
  int ndim() const { return int(node().shape.size()); }
  const LazyPtr& lazy() const { return n_; }
  /// True when the value is in memory (a buffer or a view of one).
  bool is_realized() const { return detail::is_materialized(node()); }

  // ---- autograd (autograd/backward.hpp) ---------------------------------------------------
  /// Marks a leaf tensor as a parameter whose gradient backward() accumulates (float dtypes).
  Tensor& requires_grad_(bool on = true, Loc loc = Loc::current());
  bool requires_grad() const { return node().requires_grad; }
  /// The gradient accumulated by backward(); undefined (defined() == false) before.
  Tensor grad() const { return node().grad ? Tensor(node().grad) : Tensor(); }
  void set_grad(const Tensor& g) { n_->grad = g.n_; }
  /// Gradients of this tensor (a scalar, or with `gradient` of its shape) into every leaf
  /// that requires grad, added to what their .grad() holds.
  void backward(const Tensor& gradient = Tensor(), Loc loc = Loc::current()) const;
  /// The same value, cut from the autograd graph.
  Tensor detach() const;

  // ---- evaluation ------------------------------------------------------------------------
  /// Computes the tensor now (while a method is exported, a value of its inputs stays lazy:
  /// detail::realize_requested).
  Tensor& realize() {
    detail::realize_requested({n_});
    return *this;
  }
  Tensor contiguous(Loc loc = Loc::current()) const;
  /// Writes `value` into this tensor's buffer (engine/jit.hpp; see tg::assign).
  Tensor& assign(const Tensor& value, Loc loc = Loc::current());
  Tensor to(const std::string& device, Loc loc = Loc::current()) const;
  Tensor cast(DType t, Loc loc = Loc::current()) const;
  Tensor bitcast(DType t, Loc loc = Loc::current()) const;
  template <Arithmetic E> std::vector<E> to_vector(Loc loc = Loc::current()) const;
  template <Arithmetic E> E item(Loc loc = Loc::current()) const;
  std::string to_string() const;

  // ---- elementwise -----------------------------------------------------------------------
  Tensor neg(Loc loc = Loc::current()) const;
  Tensor abs(Loc loc = Loc::current()) const;
  Tensor sign(Loc loc = Loc::current()) const;
  Tensor exp(Loc loc = Loc::current()) const;
  Tensor exp2(Loc loc = Loc::current()) const;
  Tensor log(Loc loc = Loc::current()) const;
  Tensor log2(Loc loc = Loc::current()) const;
  Tensor sqrt(Loc loc = Loc::current()) const;
  Tensor rsqrt(Loc loc = Loc::current()) const;
  Tensor reciprocal(Loc loc = Loc::current()) const;
  Tensor sin(Loc loc = Loc::current()) const;
  Tensor cos(Loc loc = Loc::current()) const;
  Tensor tan(Loc loc = Loc::current()) const;
  Tensor tanh(Loc loc = Loc::current()) const;
  Tensor sigmoid(Loc loc = Loc::current()) const;
  Tensor relu(Loc loc = Loc::current()) const;
  Tensor leaky_relu(double negative_slope = 0.01, Loc loc = Loc::current()) const;
  /// approximate: "none" (erf, as PyTorch's default) or "tanh".
  Tensor gelu(const std::string& approximate = "none", Loc loc = Loc::current()) const;
  Tensor silu(Loc loc = Loc::current()) const;
  Tensor softplus(double beta = 1, double threshold = 20, Loc loc = Loc::current()) const;
  Tensor square(Loc loc = Loc::current()) const;
  Tensor floor(Loc loc = Loc::current()) const;
  Tensor ceil(Loc loc = Loc::current()) const;
  Tensor round(Loc loc = Loc::current()) const;
  Tensor trunc(Loc loc = Loc::current()) const;
  Tensor isnan(Loc loc = Loc::current()) const;
  Tensor isinf(Loc loc = Loc::current()) const;
  Tensor logical_not(Loc loc = Loc::current()) const;
  Tensor pow(const Tensor& e, Loc loc = Loc::current()) const;
  Tensor pow(double e, Loc loc = Loc::current()) const;
  Tensor maximum(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor minimum(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor clamp(std::optional<double> lo, std::optional<double> hi, Loc loc = Loc::current()) const;
  // math.hpp: more elementwise functions, as torch.* (first derivatives exact)
  Tensor erf(Loc loc = Loc::current()) const;
  Tensor erfc(Loc loc = Loc::current()) const;
  Tensor log1p(Loc loc = Loc::current()) const;
  Tensor expm1(Loc loc = Loc::current()) const;
  Tensor sinh(Loc loc = Loc::current()) const;
  Tensor cosh(Loc loc = Loc::current()) const;
  Tensor asinh(Loc loc = Loc::current()) const;
  Tensor acosh(Loc loc = Loc::current()) const;
  Tensor atanh(Loc loc = Loc::current()) const;
  Tensor atan(Loc loc = Loc::current()) const;
  Tensor asin(Loc loc = Loc::current()) const;
  Tensor acos(Loc loc = Loc::current()) const;
  Tensor atan2(const Tensor& x, Loc loc = Loc::current()) const;
  Tensor hypot(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor lerp(const Tensor& end, const Tensor& weight, Loc loc = Loc::current()) const;
  Tensor lerp(const Tensor& end, double weight, Loc loc = Loc::current()) const;
  /// Python's %: the remainder has the divisor's sign (integers by zero give 0).
  Tensor remainder(const Tensor& o, Loc loc = Loc::current()) const;
  /// C's fmod: the remainder has the dividend's sign.
  Tensor fmod(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor floor_divide(const Tensor& o, Loc loc = Loc::current()) const;
  /// Integer and bool tensors only.
  Tensor bitwise_and(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor bitwise_or(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor bitwise_xor(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor bitwise_not(Loc loc = Loc::current()) const;
  Tensor bitwise_left_shift(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor bitwise_right_shift(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor logical_and(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor logical_or(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor logical_xor(const Tensor& o, Loc loc = Loc::current()) const;

  // ---- reductions (no axes: all) ---------------------------------------------------------
  // One axis is a template so that `{}` picks the axes overload (all axes), not axis 0.
  Tensor sum(Loc loc = Loc::current()) const { return sum(std::vector<int>{}, false, loc); }
  template <detail::Axis A>
  Tensor sum(A axis, bool keepdim = false, Loc loc = Loc::current()) const {
    return sum(std::vector<int>{int(axis)}, keepdim, loc);
  }
  Tensor sum(std::vector<int> axes, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor mean(Loc loc = Loc::current()) const { return mean(std::vector<int>{}, false, loc); }
  template <detail::Axis A>
  Tensor mean(A axis, bool keepdim = false, Loc loc = Loc::current()) const {
    return mean(std::vector<int>{int(axis)}, keepdim, loc);
  }
  Tensor mean(std::vector<int> axes, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor max(Loc loc = Loc::current()) const { return max(std::vector<int>{}, false, loc); }
  template <detail::Axis A>
  Tensor max(A axis, bool keepdim = false, Loc loc = Loc::current()) const {
    return max(std::vector<int>{int(axis)}, keepdim, loc);
  }
  Tensor max(std::vector<int> axes, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor min(Loc loc = Loc::current()) const { return min(std::vector<int>{}, false, loc); }
  template <detail::Axis A>
  Tensor min(A axis, bool keepdim = false, Loc loc = Loc::current()) const {
    return min(std::vector<int>{int(axis)}, keepdim, loc);
  }
  Tensor min(std::vector<int> axes, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor prod(Loc loc = Loc::current()) const { return prod(std::vector<int>{}, false, loc); }
  template <detail::Axis A>
  Tensor prod(A axis, bool keepdim = false, Loc loc = Loc::current()) const {
    return prod(std::vector<int>{int(axis)}, keepdim, loc);
  }
  Tensor prod(std::vector<int> axes, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor any(Loc loc = Loc::current()) const { return any(std::vector<int>{}, false, loc); }
  template <detail::Axis A>
  Tensor any(A axis, bool keepdim = false, Loc loc = Loc::current()) const {
    return any(std::vector<int>{int(axis)}, keepdim, loc);
  }
  Tensor any(std::vector<int> axes, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor all(Loc loc = Loc::current()) const { return all(std::vector<int>{}, false, loc); }
  template <detail::Axis A>
  Tensor all(A axis, bool keepdim = false, Loc loc = Loc::current()) const {
    return all(std::vector<int>{int(axis)}, keepdim, loc);
  }
  Tensor all(std::vector<int> axes, bool keepdim = false, Loc loc = Loc::current()) const;
  /// max and min over axes (all when empty), as torch.amax / amin.
  Tensor amax(std::vector<int> axes = {}, bool keepdim = false, Loc loc = Loc::current()) const {
    return max(std::move(axes), keepdim, loc);
  }
  Tensor amin(std::vector<int> axes = {}, bool keepdim = false, Loc loc = Loc::current()) const {
    return min(std::move(axes), keepdim, loc);
  }
  /// The p-norm over axes (all when empty): torch.linalg.vector_norm (p: 2, 1, inf, -inf, 0 or
  /// any other positive number).
  Tensor norm(double p = 2, std::vector<int> axes = {}, bool keepdim = false,
              Loc loc = Loc::current()) const;
  /// Index of the first maximum (over the flattened tensor when no axis is given); int64.
  Tensor argmax(std::optional<int> axis = std::nullopt, bool keepdim = false,
                Loc loc = Loc::current()) const;
  Tensor argmin(std::optional<int> axis = std::nullopt, bool keepdim = false,
                Loc loc = Loc::current()) const;
  /// Variance with Bessel's correction by default (correction = 1), as PyTorch.
  Tensor var(std::vector<int> axes = {}, double correction = 1, bool keepdim = false,
             Loc loc = Loc::current()) const;
  Tensor std(std::vector<int> axes = {}, double correction = 1, bool keepdim = false,
             Loc loc = Loc::current()) const;
  Tensor logsumexp(std::vector<int> axes, bool keepdim = false, Loc loc = Loc::current()) const;
  template <detail::Axis A>
  Tensor logsumexp(A axis, bool keepdim = false, Loc loc = Loc::current()) const {
    return logsumexp(std::vector<int>{int(axis)}, keepdim, loc);
  }

  // ---- movement (zero-copy views) --------------------------------------------------------
  Tensor reshape(Shape shape, Loc loc = Loc::current()) const;
  Tensor view(Shape shape, Loc loc = Loc::current()) const {
    return reshape(std::move(shape), loc);
  }
  Tensor permute(std::vector<int> dims, Loc loc = Loc::current()) const;
  Tensor transpose(int d0, int d1, Loc loc = Loc::current()) const;
  Tensor T(Loc loc = Loc::current()) const;
  /// -1 keeps a size; new leading axes may be added.
  Tensor expand(Shape shape, Loc loc = Loc::current()) const;
  Tensor broadcast_to(Shape shape, Loc loc = Loc::current()) const {
    return expand(std::move(shape), loc);
  }
  Tensor squeeze(Loc loc = Loc::current()) const;
  Tensor squeeze(int dim, Loc loc = Loc::current()) const;
  Tensor unsqueeze(int dim, Loc loc = Loc::current()) const;
  Tensor flatten(int start_dim = 0, int end_dim = -1, Loc loc = Loc::current()) const;
  /// PyTorch's F.pad: pairs (before, after) starting from the last axis; negative values crop.
  Tensor pad(std::vector<std::int64_t> pads, double value = 0, Loc loc = Loc::current()) const;
  Tensor slice(int dim, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
               std::int64_t step = 1, Loc loc = Loc::current()) const;
  Tensor index(std::vector<Index> idx, Loc loc = Loc::current()) const;
  /// PyTorch's Tensor.unfold: the windows of `size` elements every `step` along dim, as a view
  /// whose dim counts the windows and whose new last axis holds each window's elements.
  Tensor unfold(int dim, std::int64_t size, std::int64_t step, Loc loc = Loc::current()) const;
  /// x[i]: an integer index that remembers the caller's line (operator[] takes one argument).
  struct At {
    std::int64_t i;
    std::source_location loc;
    template <std::integral I>
    At(I i_, std::source_location l = std::source_location::current())
        : i(std::int64_t(i_)), loc(l) {}
  };
  Tensor operator[](At at) const { return index({Index(at.i)}, at.loc); }
  Tensor flip(std::vector<int> dims, Loc loc = Loc::current()) const;
  std::vector<Tensor> split(std::int64_t size, int dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> split(std::vector<std::int64_t> sizes, int dim = 0,
                            Loc loc = Loc::current()) const;
  std::vector<Tensor> chunk(std::int64_t chunks, int dim = 0, Loc loc = Loc::current()) const;
  Tensor repeat(std::vector<std::int64_t> repeats, Loc loc = Loc::current()) const;
  Tensor gather(int dim, const Tensor& index, Loc loc = Loc::current()) const;
  Tensor index_select(int dim, const Tensor& index, Loc loc = Loc::current()) const;

  // ---- composite ------------------------------------------------------------------------
  Tensor matmul(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor dot(const Tensor& o, Loc loc = Loc::current()) const;
  Tensor softmax(int dim, Loc loc = Loc::current()) const;
  Tensor log_softmax(int dim, Loc loc = Loc::current()) const;
  Tensor cumsum(int dim, Loc loc = Loc::current()) const;
  // indexing.hpp: ops that select, place or order elements
  Tensor cumprod(int dim, Loc loc = Loc::current()) const;
  /// The running maximum along dim and the index of the last element equal to it (int64).
  std::pair<Tensor, Tensor> cummax(int dim, Loc loc = Loc::current()) const;
  std::pair<Tensor, Tensor> cummin(int dim, Loc loc = Loc::current()) const;
  Tensor logcumsumexp(int dim, Loc loc = Loc::current()) const;
  /// value where mask (bool, broadcast to this tensor's shape) is true.
  Tensor masked_fill(const Tensor& mask, double value, Loc loc = Loc::current()) const;
  /// The lower (upper) triangle of the last two dims: j - i <= k (j - i >= k); the rest zero.
  Tensor tril(std::int64_t k = 0, Loc loc = Loc::current()) const;
  Tensor triu(std::int64_t k = 0, Loc loc = Loc::current()) const;
  /// out[..., index[i][j], ...] = src[i][j] along dim (indices checked on the host).
  Tensor scatter(int dim, const Tensor& index, const Tensor& src, Loc loc = Loc::current()) const;
  Tensor scatter_add(int dim, const Tensor& index, const Tensor& src,
                     Loc loc = Loc::current()) const;
  /// out[..., index[k], ...] += source[..., k, ...] along dim (index 1-D).
  Tensor index_add(int dim, const Tensor& index, const Tensor& source,
                   Loc loc = Loc::current()) const;
  /// Sorted values and their indices (int64) along dim; stable; NaN sorts as the largest.
  /// O(n^2) work along dim: meant for dims of up to a few thousand.
  std::pair<Tensor, Tensor> sort(int dim = -1, bool descending = false,
                                 Loc loc = Loc::current()) const;
  Tensor argsort(int dim = -1, bool descending = false, Loc loc = Loc::current()) const;
  /// The k largest (or smallest) values along dim, sorted, and their indices.
  std::pair<Tensor, Tensor> topk(std::int64_t k, int dim = -1, bool largest = true,
                                 Loc loc = Loc::current()) const;

  // ---- building blocks (used by the ops above and by the library layers) -----------------
  static Tensor make(Op op, DType t, Shape shape, std::vector<LazyPtr> src,
                     const std::string& device);
  Tensor alu(Op op, Loc loc) const;
  static Tensor alu(Op op, const Tensor& a, const Tensor& b, const char* name, Loc loc);
  Tensor move(Movement m) const;
  /// This tensor (computed under no_grad) with a gradient rule of its own: `rule` gives the
  /// gradients of `parents` from this tensor's (a no-op when none of them requires grad).
  Tensor with_grad_rule(const std::vector<Tensor>& parents, Rc<const CustomGrad> rule) const;
  /// A View node for `moves` applied in order (`out`: the shape after the last), composed with
  /// the view below as move() does; the moves are moved from.
  Tensor append_moves(Shape out, std::span<Movement> moves) const;
  Tensor reduce(Op op, std::vector<int> axes, bool keepdim, const char* name, Loc loc) const;
  /// A constant of this tensor's device, broadcast to `shape`.
  static Tensor full_on(const Shape& shape, double v, DType t, const std::string& device);
  /// The same with an exact value (integers beyond 2^53 do not survive a double).
  static Tensor full_on(const Shape& shape, Scalar v, DType t, const std::string& device);
  Tensor const_like(double v, std::optional<DType> t = std::nullopt) const {
    return full_on(sym_shape(), v, t.value_or(dtype()), device());
  }
  int normalize_axis(int axis, const char* op, Loc loc, int extra = 0) const;
  /// A float tensor for float math: ints and bools become float32.
  Tensor as_float() const { return is_float(dtype()) ? *this : cast(DType::Float32); }

private:
  const LazyNode& node() const {
    if (!n_) throw error("tg: use of an undefined (default-constructed) Tensor");
    return *n_;
  }
  LazyPtr n_;
};

// ---- shapes -----------------------------------------------------------------------------
namespace detail {
TG_API std::string shape_of(const Tensor& t);
/// The dtype of a binary op's result: PyTorch's promotion, 0-d operands counting for less.
TG_API DType promote(const Tensor& a, const Tensor& b);
/// NumPy broadcasting of two shapes; false when they do not broadcast.
TG_API bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);
} // namespace detail

/// Seeds tg's random number generator (rand, randn, randint, ... are reproducible).
TG_API void manual_seed(std::uint64_t seed);

} // namespace tg
