#pragma once
// Reverse-mode autograd over the lazy graph. Gradient rules exist for the primitive ops only;
// every composite op (softmax, matmul, conv, losses) is differentiated through its primitives.
// Gradients are ordinary lazy tensors, so they fuse like any other work. Tensor::backward and
// tg::grad are defined in tg/impl/autograd.hpp.
#include <unordered_map>

#include "../runtime/launch.hpp"
#include "../tensor/tensor.hpp"

namespace tg {

namespace detail {

/// The same view with its permutes moved after the reshapes that only insert size-1 axes and
/// the expands that follow them, so that an expand's gradient (a sum) is taken in the source's
/// axis order: dW of x @ W.T comes out in W's layout, where it came out transposed and went
/// through a transposing copy. The first other move ends the reordering.
inline std::vector<Movement> permutes_last(const Shape& in, const std::vector<Movement>& moves) {
  Shape phys = in;                  // the source's shape after the moves so far, before `perm`
  std::vector<int> perm(in.size()); // logical axis i is physical axis perm[i]
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = int(i);
  auto identity = [&] {
    for (std::size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != int(i)) return false;
    return true;
  };
  std::vector<Movement> out;
  std::size_t i = 0;
  for (; i < moves.size(); ++i) {
    const Movement& m = moves[i];
    if (m.op == MoveOp::Permute) {
      std::vector<int> p(perm.size());
      for (std::size_t j = 0; j < p.size(); ++j) p[j] = perm[std::size_t(m.a[j].constant())];
      perm = p;
    } else if (m.op == MoveOp::Expand) {
      for (std::size_t j = 0; j < perm.size(); ++j) phys[std::size_t(perm[j])] = m.a[j];
      out.push_back({MoveOp::Expand, phys, {}});
    } else if (m.op == MoveOp::Reshape) {
      // match the new shape's axes to the logical ones; the others must be inserted 1s
      const Shape& to = m.a;
      std::vector<int> from(to.size(), -1); // new axis -> logical axis, or -1 (an inserted 1)
      std::size_t l = 0;
      bool fits = true;
      for (std::size_t t = 0; t < to.size() && fits; ++t) {
        if (l < perm.size() && to[t] == phys[std::size_t(perm[l])])
          from[t] = int(l++);
        else
          fits = to[t] == 1;
      }
      if (!fits || l != perm.size()) break;
      // each inserted axis goes right before the physical axis of the next matched one
      std::vector<std::vector<int>> before(phys.size() + 1);
      for (std::size_t t = 0; t < to.size(); ++t) {
        if (from[t] >= 0) continue;
        std::size_t at = phys.size();
        for (std::size_t u = t + 1; u < to.size(); ++u)
          if (from[u] >= 0) {
            at = std::size_t(perm[std::size_t(from[u])]);
            break;
          }
        before[at].push_back(int(t));
      }
      Shape next;
      std::vector<int> new_of_old(phys.size()), next_perm(to.size());
      for (std::size_t p = 0; p <= phys.size(); ++p) {
        for (int t : before[p]) {
          next_perm[std::size_t(t)] = int(next.size());
          next.push_back(SInt(1));
        }
        if (p == phys.size()) break;
        new_of_old[p] = int(next.size());
        next.push_back(phys[p]);
      }
      for (std::size_t t = 0; t < to.size(); ++t)
        if (from[t] >= 0) next_perm[t] = new_of_old[std::size_t(perm[std::size_t(from[t])])];
      phys = next;
      perm = next_perm;
      out.push_back({MoveOp::Reshape, phys, {}});
    } else {
      break;
    }
  }
  if (!identity()) {
    std::vector<SInt> p;
    for (int a : perm) p.push_back(SInt(a));
    out.push_back({MoveOp::Permute, p, {}});
  }
  out.insert(out.end(), moves.begin() + std::ptrdiff_t(i), moves.end());
  return out;
}

/// An expand's gradient: `g` summed over the expanded `axes`. One long axis (at least 8192)
/// summed into a small result (at most 65536 elements) is summed 256 elements at a time first,
/// then over those partial sums: a weight gradient summed over batch x positions (conv2d's dW,
/// 144 x 32 outputs over 25088 rows) otherwise streams all of its inputs from memory for every
/// register tile (docs/performance.md); in chunks, a chunk's rows stay in cache for all the
/// tiles, and the chunks run in parallel. Not with TG_OPT=0.
inline Tensor sum_expanded(const Tensor& g, const std::vector<int>& axes) {
  constexpr std::int64_t chunk = 256;
  auto loc = std::source_location::current();
  if (axes.size() == 1 && lower_options().split_reduce > 1) {
    const std::size_t a = std::size_t(axes[0]);
    const Shape& s = g.sym_shape();
    bool fixed = true;
    std::int64_t out = 1;
    for (std::size_t i = 0; i < s.size(); ++i) {
      fixed = fixed && s[i].is_const();
      if (fixed && i != a) out *= s[i].constant();
    }
    if (fixed && s[a].constant() >= 8192 && s[a].constant() % chunk == 0 && out <= 65536) {
      Shape split = s;
      split[a] = SInt(s[a].constant() / chunk);
      split.insert(split.begin() + std::ptrdiff_t(a) + 1, SInt(chunk));
      Tensor partial =
          g.reshape(split).reduce(Op::ReduceSum, {int(a) + 1}, false, "expand.backward", loc);
      return partial.reduce(Op::ReduceSum, {int(a)}, true, "expand.backward", loc);
    }
  }
  return g.reduce(Op::ReduceSum, axes, true, "expand.backward", loc);
}

inline Tensor unmove(const Movement& m, const Shape& in, const Tensor& g);

/// The gradient of sliding windows (MoveOp::Window): each tap's entries are put back where they
/// were read (a strided, shifted view) and the taps summed, one elementwise expression of
/// gated loads; windowed axes in turn, from the last tap axis.
inline Tensor unwindow(const Movement& m, const Shape& in, const Tensor& g) {
  Tensor r = g;
  for (std::size_t j = in.size(); j-- > 0;) {
    const std::int64_t k = m.a[j].constant();
    if (k == 0) continue;
    const std::int64_t step = m.b[2 * j].constant(), d = m.b[2 * j + 1].constant();
    const std::int64_t o = r.size(int(j)), span = (o - 1) * step + 1;
    const Shape& rs = r.sym_shape();
    Shape taps(rs.begin(), rs.end() - 1), spanned = taps;
    spanned[j] = span;
    Tensor sum;
    for (std::int64_t t = 0; t < k; ++t) {
      std::vector<SInt> lo(rs.size(), SInt(0)), hi = rs;
      lo.back() = t;
      hi.back() = t + 1;
      Tensor gt = r.move({MoveOp::Shrink, lo, hi}).reshape(taps);
      if (step != 1) {
        std::vector<SInt> steps(taps.size(), SInt(1));
        steps[j] = step;
        gt = unmove({MoveOp::Stride, steps, {}}, spanned, gt);
      }
      std::vector<SInt> before(taps.size(), SInt(0)), after = before;
      before[j] = t * d;
      after[j] = in[j] - SInt(t * d + span);
      gt = gt.move({MoveOp::Pad, before, after});
      sum = sum.defined() ? sum + gt : gt;
    }
    r = sum;
  }
  return r;
}

/// The gradient of a movement op's input, given the gradient of its output.
inline Tensor unmove(const Movement& m, const Shape& in, const Tensor& g) {
  switch (m.op) {
  case MoveOp::Window:
    return unwindow(m, in, g);
  case MoveOp::Reshape:
    return g.reshape(in);
  case MoveOp::Permute: {
    std::vector<int> inv(m.a.size());
    for (std::size_t i = 0; i < m.a.size(); ++i) inv[std::size_t(m.a[i].constant())] = int(i);
    return g.permute(inv);
  }
  case MoveOp::Expand: {
    std::vector<int> axes;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (!(in[i] == m.a[i])) axes.push_back(int(i));
    return axes.empty() ? g : sum_expanded(g, axes);
  }
  case MoveOp::Pad: {
    std::vector<SInt> lo = m.a, hi = m.a;
    for (std::size_t i = 0; i < in.size(); ++i) hi[i] = m.a[i] + in[i];
    return g.move({MoveOp::Shrink, lo, hi});
  }
  case MoveOp::Shrink: {
    std::vector<SInt> before = m.a, after = m.a;
    for (std::size_t i = 0; i < in.size(); ++i) after[i] = in[i] - m.b[i];
    return g.move({MoveOp::Pad, before, after});
  }
  case MoveOp::Flip:
    return g.move(m);
  case MoveOp::Stride: {
    // scatter back: every output element to position i*k; pad each with k-1 zeros, then crop
    Tensor r = g;
    for (std::size_t ax = 0; ax < in.size(); ++ax) {
      std::int64_t k = m.a[ax].constant();
      if (k == 1) continue;
      std::int64_t n = in[ax].constant(), cnt = r.sym_shape()[ax].constant();
      Shape s = r.sym_shape(), split = s;
      split.insert(split.begin() + std::ptrdiff_t(ax) + 1, SInt(1));
      std::vector<SInt> before(split.size(), SInt(0)), after = before;
      after[ax + 1] = k - 1;
      Tensor spread = r.reshape(split).move({MoveOp::Pad, before, after});
      s[ax] = cnt * k;
      spread = spread.reshape(s);
      std::vector<SInt> lo(s.size(), SInt(0)), hi = s, b2(s.size(), SInt(0)), a2 = b2;
      if (cnt * k >= n) {
        hi[ax] = n;
        spread = spread.move({MoveOp::Shrink, lo, hi});
      } else {
        a2[ax] = n - cnt * k;
        spread = spread.move({MoveOp::Pad, b2, a2});
      }
      r = spread;
    }
    return r;
  }
  }
  return g;
}

/// Gradients of one node's parents (undefined where a parent gets none).
inline std::vector<Tensor> vjp(const LazyPtr& node, const GradRecord& r, const Tensor& g) {
  if (r.custom) return (*r.custom)(g);
  auto P = [&](std::size_t i) { return Tensor(r.parents[i]); };
  Tensor out(node);
  const DType t = node->dtype;
  auto c = [&](double v) { return Tensor::full_on({}, v, t, node->device); };
  switch (r.op) {
  case Op::Neg:
    return {-g};
  case Op::Recip:
    return {-g * out * out};
  case Op::Sqrt:
    return {g / (out * c(2))};
  case Op::Exp2:
    return {g * out * c(kLn2)};
  case Op::Log2:
    return {g / (P(0) * c(kLn2))};
  case Op::Sin:
    return {g * P(0).cos()};
  case Op::Trunc:
    return {g * c(0)};
  case Op::Cast:
    return {is_float(r.parents[0]->dtype) ? g.cast(r.parents[0]->dtype) : Tensor()};
  case Op::Add:
    return {g, g};
  case Op::Mul:
    return {g * P(1), g * P(0)};
  case Op::Div:
    return {g / P(1), -g * P(0) / (P(1) * P(1))};
  case Op::Max: {
    // ties split the gradient evenly
    Tensor a = P(0), b = P(1);
    Tensor wa = (a > b).cast(t) + (a == b).cast(t) * c(0.5);
    return {g * wa, g * (c(1) - wa)};
  }
  case Op::Pow: {
    Tensor a = P(0), b = P(1);
    Tensor da = g * b * a.pow(b - c(1));
    Tensor db = g * out * where(a > c(0), a, c(1)).log();
    return {da, db};
  }
  case Op::Where: {
    Tensor zero = Tensor::full_on({}, 0, t, node->device);
    return {Tensor(), where(P(0), g, zero), where(P(0), zero, g)};
  }
  case Op::ReduceSum:
    return {g.expand(r.parents[0]->shape)};
  case Op::ReduceMax: {
    // the gradient goes to the maxima, split evenly among ties
    Tensor x = P(0);
    Tensor hit = (x == out.expand(x.sym_shape())).cast(t);
    Tensor count =
        hit.reduce(Op::ReduceSum, r.axes, true, "max.backward", std::source_location::current());
    return {hit * (g / count).expand(x.sym_shape())};
  }
  case Op::ReduceProd: {
    // product of the others: out / x where x != 0; with zeros, the product of the rest
    Tensor x = P(0);
    Tensor nz = x != c(0);
    Tensor safe = where(nz, x, c(1));
    Tensor zeros = (x == c(0)).cast(t).reduce(Op::ReduceSum, r.axes, true, "prod.backward",
                                              std::source_location::current());
    Tensor prod_nz =
        safe.reduce(Op::ReduceProd, r.axes, true, "prod.backward", std::source_location::current());
    Tensor others = where(
        nz, where(zeros.expand(x.sym_shape()) > c(0), c(0), prod_nz.expand(x.sym_shape()) / safe),
        where(zeros.expand(x.sym_shape()) == c(1), prod_nz.expand(x.sym_shape()), c(0)));
    return {g.expand(x.sym_shape()) * others};
  }
  case Op::View: {
    std::vector<Movement> moves = permutes_last(r.parents[0]->shape, r.moves);
    std::vector<Shape> shapes{r.parents[0]->shape};
    for (const Movement& m : moves) shapes.push_back(moved_shape(shapes.back(), m));
    Tensor gi = g;
    for (std::size_t i = moves.size(); i-- > 0;) gi = unmove(moves[i], shapes[i], gi);
    return {gi};
  }
  // A value the forward pass materializes gets a materialized gradient too: a fused gradient
  // expression read by several reductions (a conv's dW and dX) would be recomputed in each of
  // them, once per broadcast element.
  case Op::Contiguous:
    return {g.contiguous()};
  default:
    return std::vector<Tensor>(r.parents.size()); // comparisons, bitwise ops, bitcast: no gradient
  }
}

/// d(outputs)/d(inputs) weighted by `seeds`; a leaf with no path gets an undefined Tensor.
inline std::vector<Tensor> gradients(const std::vector<Tensor>& outputs,
                                     const std::vector<Tensor>& seeds,
                                     const std::vector<LazyPtr>& wanted, bool accumulate_leaves) {
  no_grad guard;
  // reverse topological order over nodes that require grad
  std::vector<LazyPtr> order;
  std::unordered_map<const LazyNode*, int> state; // 1 visiting, 2 done
  std::vector<std::pair<LazyPtr, std::size_t>> stack;
  for (const Tensor& o : outputs) {
    if (!o.lazy()->requires_grad || state.count(o.lazy().get())) continue;
    stack.push_back({o.lazy(), 0});
    state[o.lazy().get()] = 1;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (n->grad_fn && next < n->grad_fn->parents.size()) {
        LazyPtr p = n->grad_fn->parents[next++];
        if (p->requires_grad && !state.count(p.get())) {
          state[p.get()] = 1;
          stack.push_back({p, 0});
        }
        continue;
      }
      state[n.get()] = 2;
      order.push_back(n);
      stack.pop_back();
    }
  }
  std::unordered_map<const LazyNode*, Tensor> grads;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].lazy()->requires_grad) continue;
    auto& acc = grads[outputs[i].lazy().get()];
    acc = acc.defined() ? acc + seeds[i] : seeds[i];
  }
  for (std::size_t k = order.size(); k-- > 0;) {
    const LazyPtr& n = order[k];
    auto it = grads.find(n.get());
    if (it == grads.end() || !n->grad_fn) continue;
    std::vector<Tensor> gs = vjp(n, *n->grad_fn, it->second);
    for (std::size_t i = 0; i < gs.size(); ++i) {
      const LazyPtr& p = n->grad_fn->parents[i];
      if (!gs[i].defined() || !p->requires_grad) continue;
      Tensor gi = gs[i].dtype() == p->dtype ? gs[i] : gs[i].cast(p->dtype);
      auto& acc = grads[p.get()];
      acc = acc.defined() ? acc + gi : gi;
    }
  }
  if (accumulate_leaves)
    for (const LazyPtr& n : order) {
      if (n->grad_fn) continue;
      auto it = grads.find(n.get());
      if (it == grads.end()) continue;
      n->grad = n->grad ? (Tensor(n->grad) + it->second).lazy() : it->second.lazy();
    }
  std::vector<Tensor> out;
  for (const LazyPtr& w : wanted) {
    auto it = grads.find(w.get());
    out.push_back(it == grads.end() ? Tensor() : it->second);
  }
  return out;
}

} // namespace detail

} // namespace tg
