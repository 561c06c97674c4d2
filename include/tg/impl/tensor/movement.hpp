#pragma once
// What tensor/movement.hpp declares (TG_API, config.hpp).
#include <algorithm>

#include "../../graph/sint_text.hpp"
#include "../../tensor/tensor.hpp"

namespace tg {

TG_API Tensor Tensor::reshape(Shape shape, Loc loc) const {
  int infer = -1;
  SInt known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0)
        detail::fail<shape_error>("reshape",
                                  "only one dimension can be -1 in " + detail::shape_str(shape) +
                                      " (reshaping " + detail::shape_of(*this) + ")",
                                  loc);
      infer = int(i);
    } else if (shape[i].is_const() && shape[i].constant() < 0) {
      detail::fail<shape_error>("reshape",
                                "invalid size in " + detail::shape_str(shape) + " (reshaping " +
                                    detail::shape_of(*this) + ")",
                                loc);
    } else
      known = known * shape[i];
  }
  SInt total = tg::prod(sym_shape());
  if (infer >= 0) {
    if (total.is_const() && known.is_const()) {
      if (known.constant() == 0 || total.constant() % known.constant())
        detail::fail<shape_error>(
            "reshape",
            "cannot reshape " + detail::shape_of(*this) + " into " + detail::shape_str(shape), loc);
      shape[std::size_t(infer)] = total.constant() / known.constant();
    } else if (known.is_const() && total.divisible_by(known.constant())) {
      shape[std::size_t(infer)] = total.div_exact(known.constant());
    } else if (known == total) {
      shape[std::size_t(infer)] = 1;
    } else {
      detail::fail<shape_error>("reshape",
                                "cannot infer -1 in " + detail::shape_str(shape) + " from " +
                                    detail::shape_of(*this),
                                loc);
    }
  }
  if (!(tg::prod(shape) == total) && tg::prod(shape).eval() != total.eval())
    detail::fail<shape_error>("reshape",
                              "cannot reshape " + detail::shape_of(*this) + " (" +
                                  std::to_string(total.eval()) + " elements) into " +
                                  detail::shape_str(shape),
                              loc);
  return move({MoveOp::Reshape, shape, {}});
}

TG_API Tensor Tensor::permute(std::vector<int> dims, Loc loc) const {
  if (int(dims.size()) != ndim())
    detail::fail<shape_error>("permute",
                              "got " + std::to_string(dims.size()) +
                                  " dims for a tensor of shape " + detail::shape_of(*this),
                              loc);
  std::vector<bool> seen(dims.size(), false);
  std::vector<SInt> order;
  bool identity = true;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    int d = normalize_axis(dims[i], "permute", loc);
    if (seen[std::size_t(d)])
      detail::fail<shape_error>("permute",
                                "dimension " + std::to_string(d) + " repeats (permuting " +
                                    detail::shape_of(*this) + ")",
                                loc);
    seen[std::size_t(d)] = true;
    order.push_back(d);
    identity = identity && d == int(i);
  }
  if (identity) return *this;
  return move({MoveOp::Permute, order, {}});
}

TG_API Tensor Tensor::transpose(int d0, int d1, Loc loc) const {
  int a = normalize_axis(d0, "transpose", loc), b = normalize_axis(d1, "transpose", loc);
  if (ndim() == 0) return *this; // axis 0 (or -1) of a 0-d tensor: nothing to swap
  std::vector<int> p;
  for (int i = 0; i < ndim(); ++i) p.push_back(i);
  std::swap(p[std::size_t(a)], p[std::size_t(b)]);
  return permute(p, loc);
}

TG_API Tensor Tensor::T(Loc loc) const {
  if (ndim() > 2)
    detail::fail<shape_error>(
        "T", "needs a tensor of at most 2 dims, got " + detail::shape_of(*this) + " (use permute)",
        loc);
  return ndim() < 2 ? *this : transpose(0, 1, loc);
}

TG_API Tensor Tensor::expand(Shape shape, Loc loc) const {
  const Shape& s = sym_shape();
  if (shape.size() < s.size())
    detail::fail<shape_error>("expand",
                              "cannot expand " + detail::shape_of(*this) + " to fewer dims " +
                                  detail::shape_str(shape),
                              loc);
  std::size_t lead = shape.size() - s.size();
  Shape src(lead, SInt(1));
  src.insert(src.end(), s.begin(), s.end());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (i < lead)
        detail::fail<shape_error>("expand", "-1 is not allowed for a new leading dim", loc);
      shape[i] = src[i];
    }
    if (!(shape[i] == src[i]) && !(src[i] == 1))
      detail::fail<shape_error>(
          "expand", "cannot expand " + detail::shape_of(*this) + " to " + detail::shape_str(shape),
          loc);
  }
  if (!lead) return src == shape ? *this : move({MoveOp::Expand, std::move(shape), {}});
  // the reshape that adds the leading 1s and the expand as one View node, not a node each
  const std::size_t count = src == shape ? 1 : 2;
  Movement moves[] = {{MoveOp::Reshape, std::move(src), {}}, {MoveOp::Expand, shape, {}}};
  return append_moves(std::move(shape), std::span(moves, count));
}

TG_API Tensor Tensor::squeeze(Loc loc) const {
  Shape s;
  for (const SInt& d : sym_shape())
    if (!(d == 1)) s.push_back(d);
  return reshape(s, loc);
}

TG_API Tensor Tensor::squeeze(int dim, Loc loc) const {
  int d = normalize_axis(dim, "squeeze", loc);
  if (ndim() == 0) return *this;
  if (!(sym_shape()[std::size_t(d)] == 1)) return *this;
  Shape s = sym_shape();
  s.erase(s.begin() + d);
  return reshape(s, loc);
}

TG_API Tensor Tensor::unsqueeze(int dim, Loc loc) const {
  int d = normalize_axis(dim, "unsqueeze", loc, 1);
  Shape s = sym_shape();
  s.insert(s.begin() + d, SInt(1));
  return reshape(s, loc);
}

TG_API Tensor Tensor::flatten(int start, int end, Loc loc) const {
  if (ndim() == 0) return reshape({1}, loc);
  int a = normalize_axis(start, "flatten", loc), b = normalize_axis(end, "flatten", loc);
  if (a > b)
    detail::fail<shape_error>("flatten",
                              "start_dim " + std::to_string(start) + " comes after end_dim " +
                                  std::to_string(end) + " of " + detail::shape_of(*this),
                              loc);
  Shape s(sym_shape().begin(), sym_shape().begin() + a);
  SInt m = 1;
  for (int i = a; i <= b; ++i) m = m * sym_shape()[std::size_t(i)];
  s.push_back(m);
  s.insert(s.end(), sym_shape().begin() + b + 1, sym_shape().end());
  return reshape(s, loc);
}

TG_API Tensor Tensor::pad(std::vector<std::int64_t> pads, double value, Loc loc) const {
  if (pads.size() % 2 || int(pads.size()) > 2 * ndim())
    detail::fail<shape_error>("pad",
                              "needs pairs (before, after) for at most " + std::to_string(ndim()) +
                                  " dims of " + detail::shape_of(*this) + ", got " +
                                  std::to_string(pads.size()) + " values",
                              loc);
  std::vector<SInt> before(std::size_t(ndim()), SInt(0)), after = before, lo = before,
                                                          hi = sym_shape();
  bool crop = false, grow = false;
  for (std::size_t k = 0; k < pads.size() / 2; ++k) {
    std::size_t axis = std::size_t(ndim()) - 1 - k;
    std::int64_t b = pads[2 * k], e = pads[2 * k + 1];
    std::int64_t size = sym_shape()[axis].eval();
    if (b < -size || e < -size || b + e < -size)
      detail::fail<shape_error>("pad",
                                "cropping more than the size of dim " + std::to_string(axis) +
                                    " of " + detail::shape_of(*this),
                                loc);
    if (b < 0) {
      lo[axis] = -b;
      crop = true;
    } else if (b > 0) {
      before[axis] = b;
      grow = true;
    }
    if (e < 0) {
      hi[axis] = hi[axis] + e;
      crop = true;
    } else if (e > 0) {
      after[axis] = e;
      grow = true;
    }
  }
  Tensor r = *this;
  if (crop) r = r.move({MoveOp::Shrink, lo, hi});
  if (!grow) return r;
  Tensor padded = r.move({MoveOp::Pad, before, after});
  if (value == 0) return padded;
  Tensor inside =
      full_on(r.sym_shape(), 1, DType::Bool, device()).move({MoveOp::Pad, before, after});
  return where(inside, padded, detail::scalar_for(*this, value).cast(dtype()), loc);
}

TG_API Tensor Tensor::slice(int dim, std::optional<std::int64_t> start,
                            std::optional<std::int64_t> stop, std::int64_t step, Loc loc) const {
  int d = normalize_axis(dim, "slice", loc);
  if (ndim() == 0) detail::fail<shape_error>("slice", "a 0-d tensor cannot be sliced", loc);
  if (step == 0)
    detail::fail<shape_error>("slice",
                              "step cannot be zero (slicing " + detail::shape_of(*this) + ")", loc);
  const SInt& size_s = sym_shape()[std::size_t(d)];
  if (!size_s.is_const() && !start && !stop && step == 1) return *this;
  // Python's slice semantics, clamped (util/slice.hpp): shrink, then flip, then stride
  const SliceBounds sb = slice_bounds(size_s.eval(), start, stop, step);
  std::vector<SInt> lo(std::size_t(ndim()), SInt(0)), hi = sym_shape();
  Tensor r = *this;
  lo[std::size_t(d)] = sb.lo;
  hi[std::size_t(d)] = sb.hi;
  if (!(lo[std::size_t(d)] == 0 && hi[std::size_t(d)] == sym_shape()[std::size_t(d)]))
    r = r.move({MoveOp::Shrink, lo, hi});
  if (step < 0) {
    std::vector<SInt> axes(std::size_t(ndim()), SInt(0));
    axes[std::size_t(d)] = 1;
    r = r.move({MoveOp::Flip, axes, {}});
  }
  std::int64_t k = step < 0 ? -step : step;
  if (k != 1 && sb.count > 0) {
    std::vector<SInt> steps(std::size_t(ndim()), SInt(1));
    steps[std::size_t(d)] = k;
    r = r.move({MoveOp::Stride, steps, {}});
  }
  return r;
}

TG_API Tensor Tensor::unfold(int dim, std::int64_t size, std::int64_t step, Loc loc) const {
  if (ndim() == 0) detail::fail<shape_error>("unfold", "a 0-d tensor has no axis to unfold", loc);
  const int d = normalize_axis(dim, "unfold", loc);
  const SInt& n = sym_shape()[std::size_t(d)];
  if (!n.is_const())
    detail::fail<shape_error>("unfold",
                              "dim " + std::to_string(d) + " of " + detail::shape_of(*this) +
                                  " is symbolic; windows need its size",
                              loc);
  if (size < 1 || step < 1 || size > n.constant())
    detail::fail<shape_error>("unfold",
                              "needs 1 <= size <= " + std::to_string(n.constant()) + " (dim " +
                                  std::to_string(d) + " of " + detail::shape_of(*this) +
                                  ") and step >= 1, got size " + std::to_string(size) +
                                  " and step " + std::to_string(step),
                              loc);
  std::vector<SInt> k(std::size_t(ndim()), SInt(0)), sd(2 * std::size_t(ndim()), SInt(1));
  k[std::size_t(d)] = size;
  sd[2 * std::size_t(d)] = step;
  return move({MoveOp::Window, std::move(k), std::move(sd)});
}

TG_API Tensor Tensor::index(std::vector<Index> idx, Loc loc) const {
  if (int(idx.size()) > ndim())
    detail::fail<shape_error>("index",
                              "too many indices (" + std::to_string(idx.size()) +
                                  ") for a tensor of shape " + detail::shape_of(*this),
                              loc);
  Tensor r = *this;
  std::vector<int> drop;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    if (idx[i].is_slice) {
      const Slice& s = idx[i].slice;
      r = r.slice(int(i), s.start, s.stop, s.step, loc);
    } else {
      std::int64_t k = idx[i].i, n = r.size(int(i), loc);
      if (k < -n || k >= n)
        detail::fail<index_error>("index",
                                  "index " + std::to_string(k) + " is out of range for dim " +
                                      std::to_string(i) + " of size " + std::to_string(n),
                                  loc);
      if (k < 0) k += n;
      r = r.slice(int(i), k, k + 1, 1, loc);
      drop.push_back(int(i));
    }
  }
  if (drop.empty()) return r;
  Shape s;
  for (int i = 0; i < r.ndim(); ++i)
    if (std::find(drop.begin(), drop.end(), i) == drop.end())
      s.push_back(r.sym_shape()[std::size_t(i)]);
  return r.reshape(s, loc);
}

TG_API Tensor Tensor::flip(std::vector<int> dims, Loc loc) const {
  std::vector<SInt> axes(std::size_t(ndim()), SInt(0));
  for (int d : dims) {
    int a = normalize_axis(d, "flip", loc);
    if (ndim() == 0) continue; // a 0-d tensor takes axis 0 and flips nothing
    if (axes[std::size_t(a)] == 1)
      detail::fail<shape_error>("flip",
                                "dim " + std::to_string(a) +
                                    " appears more than once in the dims of " +
                                    detail::shape_of(*this),
                                loc);
    axes[std::size_t(a)] = 1;
  }
  return move({MoveOp::Flip, axes, {}});
}

TG_API std::vector<Tensor> Tensor::split(std::int64_t size, int dim, Loc loc) const {
  if (size <= 0)
    detail::fail<shape_error>("split",
                              "split size must be positive, got " + std::to_string(size) +
                                  " (splitting " + detail::shape_of(*this) + ")",
                              loc);
  std::int64_t n = this->size(dim, loc);
  std::vector<std::int64_t> sizes;
  for (std::int64_t b = 0; b < n; b += size) sizes.push_back(std::min(size, n - b));
  if (sizes.empty()) sizes.push_back(0);
  return split(sizes, dim, loc);
}

TG_API std::vector<Tensor> Tensor::split(std::vector<std::int64_t> sizes, int dim, Loc loc) const {
  int d = normalize_axis(dim, "split", loc);
  std::int64_t total = 0;
  for (std::int64_t s : sizes) total += s;
  if (total != size(d, loc))
    detail::fail<shape_error>("split",
                              "sizes add up to " + std::to_string(total) + ", not the " +
                                  std::to_string(size(d, loc)) + " of dim " + std::to_string(d) +
                                  " of " + detail::shape_of(*this),
                              loc);
  std::vector<Tensor> out;
  std::int64_t b = 0;
  for (std::int64_t s : sizes) {
    out.push_back(slice(d, b, b + s, 1, loc));
    b += s;
  }
  return out;
}

TG_API std::vector<Tensor> Tensor::chunk(std::int64_t chunks, int dim, Loc loc) const {
  if (chunks <= 0)
    detail::fail<shape_error>("chunk",
                              "chunks must be positive, got " + std::to_string(chunks) +
                                  " (chunking " + detail::shape_of(*this) + ")",
                              loc);
  std::int64_t n = size(dim, loc);
  return split(std::max<std::int64_t>((n + chunks - 1) / chunks, 1), dim, loc);
}

TG_API Tensor Tensor::repeat(std::vector<std::int64_t> reps, Loc loc) const {
  if (int(reps.size()) < ndim())
    detail::fail<shape_error>("repeat",
                              "needs at least " + std::to_string(ndim()) + " repeat counts for " +
                                  detail::shape_of(*this) + ", got " + std::to_string(reps.size()),
                              loc);
  std::size_t lead = reps.size() - std::size_t(ndim());
  Shape s(lead, SInt(1));
  s.insert(s.end(), sym_shape().begin(), sym_shape().end());
  Shape inter, expanded, out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (reps[i] < 0)
      detail::fail<shape_error>("repeat",
                                "negative repeat count " + std::to_string(reps[i]) + " for " +
                                    detail::shape_of(*this),
                                loc);
    inter.push_back(1);
    inter.push_back(s[i]);
    expanded.push_back(reps[i]);
    expanded.push_back(s[i]);
    out.push_back(s[i] * SInt(reps[i]));
  }
  return reshape(inter, loc).expand(expanded, loc).reshape(out, loc);
}

} // namespace tg

namespace tg::detail {

TG_API Tensor checked_index(const Tensor& index, const Tensor& input, int d, const char* op,
                            std::source_location loc) {
  const std::int64_t n = input.size(d);
  if (!is_int(index.dtype()))
    fail<dtype_error>(
        op, std::string("index must be an integer tensor, got ") + dtype_name(index.dtype()), loc);
  std::vector<std::int64_t> v = index.to_vector<std::int64_t>();
  for (std::int64_t x : v)
    if (x < -n || x >= n)
      fail<index_error>(op,
                        "index " + std::to_string(x) + " is out of range for dim " +
                            std::to_string(d) + " of " + shape_of(input),
                        loc);
  Tensor i = index.cast(DType::Int64);
  return where(i < std::int64_t(0), i + n, i, loc);
}

TG_API Tensor arange_on(std::int64_t n, const std::string& device) {
  if (n > std::numeric_limits<std::int32_t>::max()) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = i;
    return Tensor::from_data(v, {n}, TensorOptions(DType::Int64, device));
  }
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < std::int32_t(n); ++i) v[std::size_t(i)] = i;
  return Tensor::from_data(v, {n}, TensorOptions(DType::Int32, device));
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::gather(int dim, const Tensor& index, Loc loc) const {
  int d = normalize_axis(dim, "gather", loc);
  if (index.ndim() != ndim())
    detail::fail<shape_error>("gather",
                              "index " + detail::shape_of(index) +
                                  " must have as many dims as the input " + detail::shape_of(*this),
                              loc);
  for (int i = 0; i < ndim(); ++i)
    if (i != d && index.size(i) > size(i))
      detail::fail<shape_error>("gather",
                                "index " + detail::shape_of(index) + " is larger than the input " +
                                    detail::shape_of(*this) + " in dim " + std::to_string(i),
                                loc);
  std::int64_t n = size(d);
  Tensor idx = detail::checked_index(index, *this, d, "gather", loc);
  // crop the input to the index's extent (except along dim), then one-hot select along dim
  std::vector<SInt> lo(std::size_t(ndim()), SInt(0)), hi = index.sym_shape();
  hi[std::size_t(d)] = sym_shape()[std::size_t(d)];
  Tensor x = (hi == sym_shape()) ? *this : move({MoveOp::Shrink, lo, hi});
  Shape ar(std::size_t(ndim()) + 1, SInt(1));
  ar[std::size_t(d) + 1] = n;
  Tensor onehot = idx.unsqueeze(d + 1, loc) == detail::arange_on(n, device()).reshape(ar, loc);
  Tensor picked =
      where(onehot, x.unsqueeze(d, loc), Tensor::full_on({}, 0, x.dtype(), x.device()), loc);
  return picked.reduce(Op::ReduceSum, {d + 1}, false, "gather", loc);
}

TG_API Tensor Tensor::index_select(int dim, const Tensor& index, Loc loc) const {
  int d = normalize_axis(dim, "index_select", loc);
  if (index.ndim() > 1)
    detail::fail<shape_error>("index_select", "index must be 1-D, got " + detail::shape_of(index),
                              loc);
  std::int64_t n = size(d), m = index.numel();
  Tensor idx = detail::checked_index(index.reshape({m}), *this, d, "index_select", loc);
  // out[..., j, ...] = sum_k x[..., k, ...] * (idx[j] == k)
  Shape is(std::size_t(ndim()) + 1, SInt(1));
  is[std::size_t(d)] = m;
  Shape ks(std::size_t(ndim()) + 1, SInt(1));
  ks[std::size_t(d) + 1] = n;
  Tensor onehot = idx.reshape(is, loc) == detail::arange_on(n, device()).reshape(ks, loc);
  Tensor picked = where(onehot, unsqueeze(d, loc), full_on({}, 0, dtype(), device()), loc);
  return picked.reduce(Op::ReduceSum, {d + 1}, false, "index_select", loc);
}

TG_API Tensor cat(const std::vector<Tensor>& ts, int dim, std::source_location loc) {
  if (ts.empty()) detail::fail<shape_error>("cat", "needs at least one tensor", loc);
  int d = ts[0].normalize_axis(dim, "cat", loc);
  if (ts[0].ndim() == 0)
    detail::fail<shape_error>("cat", "0-d tensors cannot be concatenated (use stack)", loc);
  DType t = ts[0].dtype();
  SInt total = 0;
  for (const Tensor& x : ts) {
    if (x.ndim() != ts[0].ndim())
      detail::fail<shape_error>("cat",
                                "tensors must have the same number of dims: " +
                                    detail::shape_of(ts[0]) + " and " + detail::shape_of(x),
                                loc);
    for (int i = 0; i < x.ndim(); ++i)
      if (i != d && !(x.sym_shape()[std::size_t(i)] == ts[0].sym_shape()[std::size_t(i)]))
        detail::fail<shape_error>("cat",
                                  "shapes " + detail::shape_of(ts[0]) + " and " +
                                      detail::shape_of(x) + " differ outside dim " +
                                      std::to_string(d),
                                  loc);
    t = promote(t, x.dtype());
    total = total + x.sym_shape()[std::size_t(d)];
  }
  if (ts.size() == 1) return ts[0].cast(t);
  Tensor out;
  SInt offset = 0;
  for (const Tensor& x : ts) {
    std::vector<SInt> before(std::size_t(x.ndim()), SInt(0)), after = before;
    before[std::size_t(d)] = offset;
    offset = offset + x.sym_shape()[std::size_t(d)];
    after[std::size_t(d)] = total - offset;
    Tensor p = x.cast(t).move({MoveOp::Pad, before, after});
    out = out.defined() ? (t == DType::Bool ? out.logical_or(p, loc)
                                            : Tensor::alu(Op::Add, out, p, "cat", loc))
                        : p;
  }
  return out;
}

TG_API Tensor stack(const std::vector<Tensor>& ts, int dim, std::source_location loc) {
  if (ts.empty()) detail::fail<shape_error>("stack", "needs at least one tensor", loc);
  std::vector<Tensor> u;
  for (const Tensor& x : ts) {
    if (!(x.sym_shape() == ts[0].sym_shape()))
      detail::fail<shape_error>(
          "stack", "shapes " + detail::shape_of(ts[0]) + " and " + detail::shape_of(x) + " differ",
          loc);
    u.push_back(x.unsqueeze(dim, loc));
  }
  return cat(u, dim, loc);
}

TG_API Tensor Tensor::matmul(const Tensor& o, Loc loc) const {
  if (ndim() == 0 || o.ndim() == 0)
    detail::fail<shape_error>("matmul",
                              "needs tensors of at least 1 dim, got " + detail::shape_of(*this) +
                                  " and " + detail::shape_of(o),
                              loc);
  Tensor a = ndim() == 1 ? unsqueeze(0, loc) : *this;
  Tensor b = o.ndim() == 1 ? o.unsqueeze(1, loc) : o;
  bool copy = detail::copy_transposed_operand(a, b);
  const Shape &as = a.sym_shape(), &bs = b.sym_shape();
  if (!(as.back() == bs[bs.size() - 2]))
    detail::fail<shape_error>("matmul",
                              "shapes " + detail::shape_of(*this) + " and " + detail::shape_of(o) +
                                  " cannot be multiplied (" + detail::shape_str({as.back()}) +
                                  " vs " + detail::shape_str({bs[bs.size() - 2]}) + ")",
                              loc);
  Shape batch;
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  if (!detail::broadcast_shapes(ab, bb, batch))
    detail::fail<shape_error>("matmul",
                              "batch dims of " + detail::shape_of(*this) + " and " +
                                  detail::shape_of(o) + " cannot be broadcast",
                              loc);
  SInt n = as[as.size() - 2], k = as.back(), m = bs.back();
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {n, k, SInt(1)});
  sb.insert(sb.end(), {SInt(1), k, m});
  Shape full = batch;
  full.insert(full.end(), {n, k, m});
  auto broadcast_b = [&](const Tensor& t) {
    return t.unsqueeze(-3, loc).expand(sb, loc).expand(full, loc);
  };
  Tensor prodt = alu(Op::Mul, a.unsqueeze(-1, loc).expand(sa, loc).expand(full, loc),
                     broadcast_b(copy ? b.contiguous(loc) : b), "matmul", loc);
  // The backward reads the operand as the caller laid it out, not the copy: the gradient of x in
  // x @ w.t() sums over w's rows, along which w itself is contiguous and the copy is not.
  if (copy && prodt.lazy()->grad_fn) prodt.lazy()->grad_fn->parents[1] = broadcast_b(b).lazy();
  Tensor r = prodt.reduce(Op::ReduceSum, {int(full.size()) - 2}, false, "matmul", loc);
  if (ndim() == 1) r = r.squeeze(-2, loc);
  if (o.ndim() == 1) r = r.squeeze(-1, loc);
  return r;
}

TG_API Tensor Tensor::dot(const Tensor& o, Loc loc) const {
  if (ndim() != 1 || o.ndim() != 1)
    detail::fail<shape_error>("dot",
                              "needs two 1-D tensors, got " + detail::shape_of(*this) + " and " +
                                  detail::shape_of(o),
                              loc);
  if (size(0) != o.size(0))
    detail::fail<shape_error>("dot",
                              "the tensors have different sizes: " + detail::shape_of(*this) +
                                  " and " + detail::shape_of(o),
                              loc);
  return matmul(o, loc);
}

TG_API Tensor matmul(const Tensor& a, const Tensor& b, std::source_location loc) {
  return a.matmul(b, loc);
}

TG_API Tensor Tensor::softmax(int dim, Loc loc) const {
  normalize_axis(dim, "softmax", loc); // the error names the op called
  Tensor x = as_float();
  Tensor e = (x - x.max(dim, true, loc)).exp(loc);
  return e / e.sum(dim, true, loc);
}

TG_API Tensor Tensor::log_softmax(int dim, Loc loc) const {
  normalize_axis(dim, "log_softmax", loc);
  Tensor x = as_float();
  Tensor s = x - x.max(dim, true, loc);
  return s - s.exp(loc).sum(dim, true, loc).log(loc);
}

/// Running sum along dim: out[i] = sum_{j <= i} x[j] (one kernel, O(n^2) work along dim).
TG_API Tensor Tensor::cumsum(int dim, Loc loc) const {
  int d = normalize_axis(dim, "cumsum", loc);
  Tensor x = is_float(dtype()) ? *this : cast(DType::Int64);
  if (ndim() == 0) return x;
  std::int64_t n = size(d);
  Tensor ar = detail::arange_on(n, device());
  Shape is(std::size_t(ndim()) + 1, SInt(1)), js = is;
  is[std::size_t(d)] = n;
  js[std::size_t(d) + 1] = n;
  Tensor upto = ar.reshape(js, loc) <= ar.reshape(is, loc); // j <= i
  Tensor picked =
      where(upto, x.unsqueeze(d, loc), Tensor::full_on({}, 0, x.dtype(), x.device()), loc);
  return picked.reduce(Op::ReduceSum, {d + 1}, false, "cumsum", loc);
}

TG_API Tensor softmax(const Tensor& x, int dim, std::source_location loc) {
  return x.softmax(dim, loc);
}

TG_API Tensor log_softmax(const Tensor& x, int dim, std::source_location loc) {
  return x.log_softmax(dim, loc);
}

TG_API Tensor maximum(const Tensor& a, const Tensor& b, std::source_location loc) {
  return a.maximum(b, loc);
}

TG_API Tensor minimum(const Tensor& a, const Tensor& b, std::source_location loc) {
  return a.minimum(b, loc);
}

} // namespace tg
