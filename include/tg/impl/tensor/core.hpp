#pragma once
// What tensor/core.hpp declares (TG_API, config.hpp).
#include <algorithm>

#include "../../tensor/reduce_split.hpp"
#include "../../tensor/tensor.hpp"
#include "../../util/rc.hpp"

namespace tg {

TG_API std::int64_t Tensor::numel() const { return tg::prod(node().shape).eval(); }

TG_API std::vector<std::int64_t> Tensor::shape() const {
  std::vector<std::int64_t> r;
  for (const SInt& d : node().shape) r.push_back(d.eval());
  return r;
}

TG_API std::int64_t Tensor::size(int dim, Loc loc) const {
  if (ndim() == 0) detail::fail<shape_error>("size", "a 0-d tensor has no dimensions", loc);
  return node().shape[std::size_t(normalize_axis(dim, "size", loc))].eval();
}

TG_API int Tensor::normalize_axis(int axis, const char* op, Loc loc, int extra) const {
  int n = std::max(ndim() + extra, 1); // a 0-d tensor takes axis 0 and -1, as PyTorch
  int a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n)
    detail::fail<shape_error>(op,
                              "axis " + std::to_string(axis) +
                                  " is out of range for a tensor of shape " +
                                  detail::shape_of(*this),
                              loc);
  return a;
}

TG_API Tensor Tensor::make(Op op, DType t, Shape shape, std::vector<LazyPtr> src,
                           const std::string& device) {
  auto n = make_rc<LazyNode>();
  n->op = op;
  n->dtype = t;
  n->shape = std::move(shape);
  n->src = std::move(src);
  n->device = device;
  if (grad_enabled() && std::any_of(n->src.begin(), n->src.end(),
                                    [](const LazyPtr& s) { return s->requires_grad; })) {
    n->requires_grad = true;
    n->grad_fn = make_rc<GradRecord>(GradRecord{op, n->src, {}, {}, nullptr});
  }
  return Tensor(std::move(n));
}

} // namespace tg

namespace tg::detail {

TG_API bool user_site(const std::source_location& loc) {
  static const std::string root = [] {
    std::string f = __FILE__;
    std::size_t p = f.rfind("/tg/");
    return p == std::string::npos ? std::string() : f.substr(0, p + 4);
  }();
  return root.empty() || std::string_view(loc.file_name()).substr(0, root.size()) != root;
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::full_on(const Shape& shape, double v, DType t, const std::string& device) {
  return full_on(shape, Scalar::of(t, v), t, device);
}

TG_API Tensor Tensor::full_on(const Shape& shape, Scalar v, DType t, const std::string& device) {
  Tensor c = make(Op::Const, t, {}, {}, device);
  c.n_->value = v;
  if (shape.empty()) return c;
  // reshape to 1s, then expand: one View node, as c.move(reshape).move(expand) would leave
  Movement moves[] = {{MoveOp::Reshape, Shape(shape.size(), SInt(1)), {}},
                      {MoveOp::Expand, shape, {}}};
  return c.append_moves(shape, moves);
}

TG_API Tensor Tensor::with_grad_rule(const std::vector<Tensor>& parents,
                                     Rc<const CustomGrad> rule) const {
  if (!grad_enabled() || std::none_of(parents.begin(), parents.end(),
                                      [](const Tensor& p) { return p.requires_grad(); }))
    return *this;
  std::vector<LazyPtr> ps;
  for (const Tensor& p : parents) ps.push_back(p.lazy());
  n_->requires_grad = true;
  n_->grad_fn = make_rc<GradRecord>(GradRecord{n_->op, std::move(ps), {}, {}, std::move(rule)});
  return *this;
}

TG_API Tensor Tensor::move(Movement m) const {
  const LazyNode& n = node();
  Shape out = moved_shape(n.shape, m);
  if (m.op == MoveOp::Reshape && out == n.shape) return *this;
  return append_moves(std::move(out), {&m, 1});
}

TG_API Tensor Tensor::append_moves(Shape out, std::span<Movement> moves) const {
  const LazyNode& n = node();
  // compose with the view below: one View node per chain (not past a custom gradient rule)
  const bool compose = n.op == Op::View && !(n.grad_fn && n.grad_fn->custom);
  Tensor r = make(Op::View, n.dtype, std::move(out), {compose ? n.src[0] : n_}, n.device);
  std::vector<Movement>& all = r.n_->moves;
  all.reserve((compose ? n.moves.size() : 0) + moves.size()); // one allocation for them all
  if (compose) all.assign(n.moves.begin(), n.moves.end());
  for (Movement& m : moves) all.push_back(std::move(m));
  if (r.n_->grad_fn) r.n_->grad_fn->moves = all;
  return r;
}

TG_API Tensor Tensor::alu(Op op, Loc) const {
  return make(op, dtype(), sym_shape(), {n_}, device());
}

TG_API Tensor Tensor::alu(Op op, const Tensor& a0, const Tensor& b0, const char* name, Loc loc) {
  if (a0.device() != b0.device())
    detail::fail<device_error>(
        name, "tensors are on different devices (" + a0.device() + " and " + b0.device() + ")",
        loc);
  Shape out;
  if (!detail::broadcast_shapes(a0.sym_shape(), b0.sym_shape(), out))
    detail::fail<shape_error>(name,
                              "shapes " + detail::shape_of(a0) + " and " + detail::shape_of(b0) +
                                  " cannot be broadcast",
                              loc);
  detail::made_at(a0, name, loc);
  detail::made_at(b0, name, loc);
  DType t = detail::promote(a0, b0);
  // expand takes its shape by value: skip the copy where the operand has that shape already
  auto widen = [&](const Tensor& x) {
    Tensor c = x.cast(t);
    return c.sym_shape() == out ? c : c.expand(out);
  };
  Tensor a = widen(a0), b = widen(b0);
  DType rt = is_compare(op) ? DType::Bool : t;
  return make(op, rt, std::move(out), {a.n_, b.n_}, a.device());
}

TG_API Tensor Tensor::cast(DType t, Loc) const {
  if (t == dtype()) return *this;
  return make(Op::Cast, t, sym_shape(), {n_}, device());
}

TG_API Tensor Tensor::bitcast(DType t, Loc loc) const {
  if (itemsize(t) != itemsize(dtype()))
    detail::fail<dtype_error>("bitcast",
                              std::string("cannot reinterpret ") + dtype_name(dtype()) + " as " +
                                  dtype_name(t) + " (different sizes)",
                              loc);
  if (t == dtype()) return *this;
  return make(Op::Bitcast, t, sym_shape(), {n_}, device());
}

TG_API Tensor Tensor::reduce(Op op, std::vector<int> axes, bool keepdim, const char* name,
                             Loc loc) const {
  if (axes.empty())
    for (int i = 0; i < ndim(); ++i) axes.push_back(i);
  for (int& a : axes) a = normalize_axis(a, name, loc);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    detail::fail<shape_error>(name, "an axis is repeated", loc);
  if (ndim() == 0) axes.clear(); // axis 0 (or -1) of a 0-d tensor, as PyTorch: nothing to reduce
  Shape s = sym_shape();
  for (int a : axes) s[std::size_t(a)] = 1;
  Tensor r = *this;
  // On a GPU, a long reduction into few outputs runs as two (detail::gpu_reduce_split); not a
  // max that records its gradient, whose ties would no longer share it evenly.
  static thread_local bool splitting = false; // (the two parts are not split again)
  bool split = false;
  const Shape& in = sym_shape();
  if (!splitting && !axes.empty() && !(op == Op::ReduceMax && requires_grad()) &&
      std::all_of(in.begin(), in.end(), [](const SInt& d) { return d.is_const(); }) &&
      detail::splits_reductions(device())) {
    std::vector<std::int64_t> dims;
    for (const SInt& d : in) dims.push_back(d.constant());
    if (detail::ReduceSplit sp = detail::gpu_reduce_split(dims, axes); sp.k > 1) {
      Tensor src = *this;
      if (sp.pad > 0) { // with the reduction's identity
        std::vector<std::int64_t> pads(2 * (dims.size() - std::size_t(sp.axis)), 0);
        pads.back() = sp.pad;
        src = pad(pads, reduce_identity(op, dtype()).as_double(dtype()), loc);
        dims[std::size_t(sp.axis)] += sp.pad;
      }
      Shape cut;
      std::vector<int> inner; // the reduced axes of the cut shape, but its k axis
      for (std::size_t i = 0; i < dims.size(); ++i) {
        if (int(i) == sp.axis) cut.push_back(sp.k);
        cut.push_back(int(i) == sp.axis ? dims[i] / sp.k : dims[i]);
        if (std::find(axes.begin(), axes.end(), int(i)) != axes.end())
          inner.push_back(int(i) < sp.axis ? int(i) : int(i) + 1);
      }
      struct Reset {
        bool& flag;
        ~Reset() { flag = false; }
      } reset{splitting = true};
      // a 16-bit float's partial sums and products stay float32 (as its accumulator is), and
      // are rounded once, as one reduction rounds them
      const bool widen = is_half(dtype()) && op != Op::ReduceMax;
      if (widen) src = src.cast(DType::Float32, loc);
      r = src.reshape(cut)
              .reduce(op, inner, true, name, loc)
              .reduce(op, {sp.axis}, true, name, loc)
              .reshape(s);
      if (widen) r = r.cast(dtype(), loc);
      split = true;
    }
  }
  if (!axes.empty() && !split) {
    r = make(op, dtype(), s, {n_}, device());
    r.n_->axes = axes;
    if (r.n_->grad_fn) r.n_->grad_fn->axes = axes;
  }
  if (keepdim) return r;
  Shape squeezed;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (std::find(axes.begin(), axes.end(), int(i)) == axes.end()) squeezed.push_back(s[i]);
  return r.reshape(squeezed);
}

TG_API Tensor Tensor::contiguous(Loc) const {
  if (node().op == Op::Buffer) return *this;
  return make(Op::Contiguous, dtype(), sym_shape(), {n_}, device());
}

TG_API void realize(std::vector<Tensor> ts) {
  std::vector<LazyPtr> nodes;
  for (const Tensor& t : ts) nodes.push_back(t.lazy());
  detail::realize_requested(nodes);
}

} // namespace tg
