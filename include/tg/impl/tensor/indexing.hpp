#pragma once
// What tensor/indexing.hpp declares (TG_API, config.hpp).
#include <cmath>
#include <map>

#include "../../graph/sint_text.hpp"
#include "../../tensor/tensor.hpp"

namespace tg::detail {

TG_API Tensor arange_along(std::int64_t n, int rank, int at, const std::string& device) {
  Shape s(std::size_t(rank), SInt(1));
  s[std::size_t(at)] = n;
  return arange_on(n, device).reshape(s);
}

TG_API Tensor upto_mask(std::int64_t n, int rank, int d, const std::string& device) {
  return arange_along(n, rank + 1, d + 1, device) <= arange_along(n, rank + 1, d, device);
}

TG_API Tensor running(const Tensor& x, int d, Op op, const char* name, std::source_location loc) {
  if (x.ndim() == 0) return x;
  Tensor fill = Tensor::full_on({}, reduce_identity(op, x.dtype()), x.dtype(), x.device());
  Tensor picked = where(upto_mask(x.size(d), x.ndim(), d, x.device()), x.unsqueeze(d, loc), fill);
  return picked.reduce(op, {d + 1}, false, name, loc);
}

TG_API Tensor running_index(const Tensor& x, const Tensor& values, int d) {
  const std::int64_t n = x.size(d);
  Tensor xj = x.unsqueeze(d), vi = values.unsqueeze(d + 1);
  Tensor same = xj == vi;
  if (is_float(x.dtype())) same = same.logical_or(xj.isnan().logical_and(vi.isnan()));
  Tensor j = arange_along(n, x.ndim() + 1, d + 1, x.device());
  Tensor hit = same.logical_and(upto_mask(n, x.ndim(), d, x.device()));
  return where(hit, j, Tensor::full_on({}, -1, j.dtype(), x.device()))
      .max(d + 1)
      .cast(DType::Int64); // (an index, int64 as in PyTorch)
}

TG_API Tensor pick_along(const Tensor& x, const Tensor& index, int d) {
  Tensor j = arange_along(x.size(d), x.ndim() + 1, d + 1, x.device());
  Tensor hit = index.unsqueeze(d + 1) == j; // i at d, j at d + 1
  return where(hit, x.unsqueeze(d), Tensor::full_on({}, 0, x.dtype(), x.device()))
      .sum(d + 1)
      .cast(x.dtype());
}

TG_API std::pair<std::vector<int>, std::vector<int>> axis_last(int rank, int d) {
  std::vector<int> p, inv(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i)
    if (i != d) p.push_back(i);
  p.push_back(d);
  for (int i = 0; i < rank; ++i) inv[std::size_t(p[std::size_t(i)])] = i;
  return {p, inv};
}

TG_API std::pair<Tensor, Tensor> place(const Tensor& index, const Tensor& src, std::int64_t O) {
  Tensor hit = index.cast(DType::Int64).unsqueeze(-1) ==
               arange_along(O, index.ndim() + 1, index.ndim(), index.device());
  Tensor zero = Tensor::full_on({}, 0, src.dtype(), src.device());
  return {where(hit, src.unsqueeze(-1), zero).sum(-2).cast(src.dtype()), hit.any(-2)};
}

TG_API Tensor before(const Tensor& a, const Tensor& b, bool descending) {
  const Tensor& lo = descending ? b : a;
  const Tensor& hi = descending ? a : b;
  Tensor lt = lo < hi;
  if (is_float(a.dtype())) lt = lt.logical_or(hi.isnan().logical_and(lo.isnan().logical_not()));
  return lt;
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::cumprod(int dim, Loc loc) const {
  int d = normalize_axis(dim, "cumprod", loc);
  Tensor x = is_float(dtype()) ? *this : cast(DType::Int64);
  return detail::running(x, d, Op::ReduceProd, "cumprod", loc);
}

TG_API std::pair<Tensor, Tensor> Tensor::cummax(int dim, Loc loc) const {
  int d = normalize_axis(dim, "cummax", loc);
  if (ndim() == 0) return {*this, full_on({}, 0, DType::Int64, device())};
  Tensor v = detail::running(detach(), d, Op::ReduceMax, "cummax", loc);
  Tensor i = detail::running_index(detach(), v, d);
  return {detail::pick_along(*this, i, d), i};
}

TG_API std::pair<Tensor, Tensor> Tensor::cummin(int dim, Loc loc) const {
  int d = normalize_axis(dim, "cummin", loc);
  if (ndim() == 0) return {*this, full_on({}, 0, DType::Int64, device())};
  detail::require_not_bool(*this, "cummin", loc);
  // max of the reversed order: -x for floats, ~x for integers
  Tensor flip = is_float(dtype()) ? -*this : alu(Op::Xor, *this, const_like(-1), "cummin", loc);
  Tensor m = detail::running(flip.detach(), d, Op::ReduceMax, "cummin", loc);
  Tensor v = is_float(dtype()) ? -m : alu(Op::Xor, m, const_like(-1), "cummin", loc);
  Tensor i = detail::running_index(detach(), v, d);
  return {detail::pick_along(*this, i, d), i};
}

/// log(cumsum(exp(x))), shifted by the running maximum so that nothing overflows.
TG_API Tensor Tensor::logcumsumexp(int dim, Loc loc) const {
  int d = normalize_axis(dim, "logcumsumexp", loc);
  Tensor x = as_float();
  if (ndim() == 0) return x;
  Tensor c = detail::running(x.detach(), d, Op::ReduceMax, "logcumsumexp", loc);
  Tensor shift = where(c.isinf(loc), x.const_like(0), c); // all -inf so far, or an inf
  // terms past the running position are masked before exp: after it, one that overflowed would
  // make the gradient 0 * inf (NaN)
  Tensor diff = x.unsqueeze(d, loc) - shift.unsqueeze(d + 1, loc);
  Tensor none = full_on({}, -INFINITY, x.dtype(), device());
  Tensor terms = where(detail::upto_mask(size(d), ndim(), d, device()), diff, none).exp(loc);
  return terms.sum(d + 1).log(loc) + shift;
}

TG_API Tensor Tensor::masked_fill(const Tensor& mask, double value, Loc loc) const {
  if (mask.dtype() != DType::Bool)
    detail::fail<dtype_error>(
        "masked_fill", std::string("mask must be bool, got ") + dtype_name(mask.dtype()), loc);
  Shape out;
  if (!detail::broadcast_shapes(sym_shape(), mask.sym_shape(), out) || !(out == sym_shape()))
    detail::fail<shape_error>("masked_fill",
                              "mask " + detail::shape_of(mask) +
                                  " does not broadcast to the tensor's shape " +
                                  detail::shape_of(*this),
                              loc);
  return where(mask, full_on({}, value, dtype(), device()), *this, loc);
}

} // namespace tg

namespace tg::detail {

TG_API Tensor triangle(const Tensor& x, std::int64_t k, bool lower, const char* op,
                       std::source_location loc) {
  if (x.ndim() < 2) fail<shape_error>(op, "needs at least 2 dims, got " + shape_of(x), loc);
  const int r = x.ndim();
  Tensor row = arange_along(x.size(-2), r, r - 2, x.device()),
         col = arange_along(x.size(-1), r, r - 1, x.device());
  Tensor off = col - row, kk = Tensor::full_on({}, double(k), DType::Int64, x.device());
  Tensor keep = lower ? off <= kk : off >= kk;
  return where(keep, x, Tensor::full_on({}, 0, x.dtype(), x.device()), loc);
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::tril(std::int64_t k, Loc loc) const {
  return detail::triangle(*this, k, true, "tril", loc);
}

TG_API Tensor Tensor::triu(std::int64_t k, Loc loc) const {
  return detail::triangle(*this, k, false, "triu", loc);
}

} // namespace tg

namespace tg::detail {

TG_API Tensor scatter_like(const Tensor& x, int dim, const Tensor& index, const Tensor& src,
                           bool add, const char* op, std::source_location loc) {
  int d = x.normalize_axis(dim, op, loc);
  if (index.ndim() != x.ndim() || src.ndim() != x.ndim())
    fail<shape_error>(op,
                      "index " + shape_of(index) + " and src " + shape_of(src) +
                          " must have as many dims as the tensor " + shape_of(x),
                      loc);
  for (int i = 0; i < x.ndim(); ++i)
    if (index.size(i) > src.size(i) || (i != d && index.size(i) > x.size(i)))
      fail<shape_error>(op,
                        "index " + shape_of(index) + " is larger than src " + shape_of(src) +
                            " or, but in dim " + std::to_string(d) + ", the tensor " + shape_of(x),
                        loc);
  Tensor idx = checked_index(index, x, d, op, loc);
  Tensor s = src.cast(x.dtype());
  if (!(s.sym_shape() == index.sym_shape())) // the part of src that index covers
    s = s.move(
        {MoveOp::Shrink, std::vector<SInt>(std::size_t(x.ndim()), SInt(0)), index.sym_shape()});
  auto [perm, inv] = axis_last(x.ndim(), d);
  auto [sum, any] = place(idx.permute(perm, loc), s.permute(perm, loc), x.size(d));
  std::vector<std::int64_t> pads{0, 0}; // up to the tensor's size in every other dim
  for (int i = x.ndim() - 2; i >= 0; --i)
    pads.insert(pads.end(), {0, x.size(perm[std::size_t(i)]) - sum.size(i)});
  sum = sum.pad(pads, 0, loc).permute(inv, loc);
  if (add) return TensorArg(x, loc) + sum;
  return where(any.pad(pads, 0, loc).permute(inv, loc), sum, x, loc);
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::scatter(int dim, const Tensor& index, const Tensor& src, Loc loc) const {
  return detail::scatter_like(*this, dim, index, src, false, "scatter", loc);
}

TG_API Tensor Tensor::scatter_add(int dim, const Tensor& index, const Tensor& src, Loc loc) const {
  return detail::scatter_like(*this, dim, index, src, true, "scatter_add", loc);
}

TG_API Tensor Tensor::index_add(int dim, const Tensor& index, const Tensor& source, Loc loc) const {
  int d = normalize_axis(dim, "index_add", loc);
  if (index.ndim() != 1 || source.ndim() != ndim() || source.size(d) != index.size(0))
    detail::fail<shape_error>("index_add",
                              "index " + detail::shape_of(index) + " must be 1-D and source " +
                                  detail::shape_of(source) + " like the tensor " +
                                  detail::shape_of(*this) + " but with index's length in dim " +
                                  std::to_string(d),
                              loc);
  for (int i = 0; i < ndim(); ++i)
    if (i != d && source.size(i) != size(i))
      detail::fail<shape_error>("index_add",
                                "source " + detail::shape_of(source) + " does not match " +
                                    detail::shape_of(*this) + " in dim " + std::to_string(i),
                                loc);
  Tensor idx = detail::checked_index(index, *this, d, "index_add", loc);
  auto [perm, inv] = detail::axis_last(ndim(), d);
  Shape lead(std::size_t(ndim() - 1), SInt(1));
  lead.push_back(index.sym_shape()[0]);
  auto [sum, any] =
      detail::place(idx.reshape(lead, loc), source.cast(dtype()).permute(perm, loc), size(d));
  return TensorArg(*this, loc) + sum.permute(inv, loc);
}

TG_API std::pair<Tensor, Tensor> Tensor::sort(int dim, bool descending, Loc loc) const {
  int d = normalize_axis(dim, "sort", loc);
  if (ndim() == 0) return {*this, full_on({}, 0, DType::Int64, device())};
  const std::int64_t n = size(d);
  Tensor key = dtype() == DType::Bool ? cast(DType::Int32) : *this;
  // rank[i] = #{j: x[j] before x[i]} + #{j < i: x[j] ties x[i]} (stable)
  Tensor xi = key.unsqueeze(d + 1, loc), xj = key.unsqueeze(d, loc); // i at d, j at d + 1
  Tensor tie = xj == xi;
  if (is_float(dtype())) tie = tie.logical_or(xj.isnan(loc).logical_and(xi.isnan(loc)));
  Tensor i_ar = detail::arange_along(n, ndim() + 1, d, device()),
         j_ar = detail::arange_along(n, ndim() + 1, d + 1, device());
  Tensor first = detail::before(xj, xi, descending).logical_or(tie.logical_and(j_ar < i_ar));
  Tensor rank = first.cast(DType::Int64).sum(d + 1, false, loc); // [..., n(i), ...]
  // out[k] = x[i] with rank[i] == k: k at d, i at d + 1
  Tensor hit = rank.unsqueeze(d, loc) == i_ar;
  Tensor values =
      where(hit, unsqueeze(d, loc), full_on({}, 0, dtype(), device()), loc).sum(d + 1, false, loc);
  Tensor indices =
      where(hit, j_ar, full_on({}, 0, DType::Int64, device()), loc).sum(d + 1, false, loc);
  return {values.cast(dtype()), indices};
}

TG_API Tensor Tensor::argsort(int dim, bool descending, Loc loc) const {
  return sort(dim, descending, loc).second;
}

TG_API std::pair<Tensor, Tensor> Tensor::topk(std::int64_t k, int dim, bool largest,
                                              Loc loc) const {
  int d = normalize_axis(dim, "topk", loc);
  const std::int64_t n = ndim() == 0 ? 1 : size(d);
  if (k < 0 || k > n)
    detail::fail<shape_error>("topk",
                              "k = " + std::to_string(k) + " is out of range for dim " +
                                  std::to_string(d) + " of " + detail::shape_of(*this),
                              loc);
  auto [v, i] = sort(d, largest, loc);
  if (ndim() == 0) return {v, i};
  return {v.slice(d, 0, k, 1, loc), i.slice(d, 0, k, 1, loc)};
}

TG_API Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands,
                     std::source_location loc) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  auto bad = [&](const std::string& why) {
    detail::fail<shape_error>("einsum", "\"" + std::string(equation) + "\": " + why, loc);
  };
  std::size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), out;
  std::vector<std::string> terms;
  for (std::size_t b = 0, e;; b = e + 1) {
    e = lhs.find(',', b);
    terms.push_back(lhs.substr(b, e == std::string::npos ? e : e - b));
    if (e == std::string::npos) break;
  }
  if (terms.size() != operands.size())
    bad(std::to_string(terms.size()) + " operands in the equation, " +
        std::to_string(operands.size()) + " given");
  std::string letters;                // every letter, in order of appearance
  std::map<char, int> count, written; // in the operands after diagonals; in the equation
  for (const std::string& t : terms)
    for (char c : t) ++written[c];
  std::map<char, SInt> size;
  std::vector<Tensor> xs(operands);
  for (std::size_t k = 0; k < terms.size(); ++k) {
    std::string& t = terms[k];
    if (int(t.size()) != xs[k].ndim())
      bad("operand " + std::to_string(k) + " has " + std::to_string(xs[k].ndim()) +
          " dims, the equation names " + std::to_string(t.size()));
    // a letter twice in one operand takes the diagonal: "ii->i"
    for (std::size_t q = 1; q < t.size(); ++q) {
      std::size_t p = t.find(t[q]);
      if (p == q) continue;
      if (!(xs[k].sym_shape()[p] == xs[k].sym_shape()[q]))
        bad("letter '" + std::string(1, t[q]) + "' repeats over dims of different sizes");
      const int r = xs[k].ndim();
      Tensor on = detail::arange_along(xs[k].size(int(p)), r, int(p), xs[k].device()) ==
                  detail::arange_along(xs[k].size(int(q)), r, int(q), xs[k].device());
      xs[k] = where(on, xs[k], Tensor::full_on({}, 0, xs[k].dtype(), xs[k].device()), loc)
                  .sum(int(q), false, loc)
                  .cast(xs[k].dtype());
      t.erase(q--, 1);
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
      char c = t[i];
      if (!std::isalpha(static_cast<unsigned char>(c)))
        bad("'" + std::string(1, c) + "' is not a letter");
      if (!count[c]++) letters += c;
      const SInt& s = xs[k].sym_shape()[i];
      auto it = size.find(c);
      if (it == size.end() || it->second == 1)
        size[c] = s;
      else if (!(s == 1) && !(s == it->second))
        bad("letter '" + std::string(1, c) + "' has sizes " + detail::shape_str({it->second}) +
            " and " + detail::shape_str({s}));
    }
  }
  if (arrow == std::string::npos) { // implicit: the letters written once, in alphabetical order
    for (auto& [c, n] : written)
      if (n == 1) out += c;
  } else {
    out = eq.substr(arrow + 2);
    for (char c : out)
      if (!count.count(c)) bad("output letter '" + std::string(1, c) + "' is in no operand");
  }
  Tensor prod;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const std::string& t = terms[k];
    std::vector<int> perm;
    Shape shape;
    for (char c : letters) {
      std::size_t at = t.find(c);
      if (at != std::string::npos) perm.push_back(int(at));
      shape.push_back(at == std::string::npos ? SInt(1) : xs[k].sym_shape()[at]);
    }
    Tensor x = xs[k].permute(perm, loc).reshape(shape, loc);
    prod = prod.defined() ? TensorArg(prod, loc) * x : x;
  }
  std::vector<int> summed;
  for (std::size_t i = 0; i < letters.size(); ++i)
    if (out.find(letters[i]) == std::string::npos) summed.push_back(int(i));
  Tensor r = summed.empty() ? prod : prod.sum(summed, false, loc);
  std::string kept; // the letters left, in `letters` order
  for (char c : letters)
    if (out.find(c) != std::string::npos) kept += c;
  std::vector<int> perm;
  for (char c : out) perm.push_back(int(kept.find(c)));
  return perm.size() > 1 ? r.permute(perm, loc) : r;
}

TG_API Tensor einsum(std::string_view equation, std::initializer_list<Tensor> operands,
                     std::source_location loc) {
  return einsum(equation, std::vector<Tensor>(operands), loc);
}

} // namespace tg
