#pragma once
// merge_outputs: [Kernel] -> [Kernel]. A kernel joins an earlier one whose results have its shape
// when it reads their values only at its own index: the joint kernel loops once and writes every
// result, and the later one's reads of the earlier's become values in registers. Adam's moments
// and its parameter update are one kernel per parameter (not three); on a GPU a product's
// pre-activation and its activation are one, and so are a row's max and sum (or mean and
// variance).
//
// What may join, at the earlier kernel's shape:
// - a kernel without reductions of its own that reads the earlier's results through elementwise
//   ops only (no view: a view would read other threads' elements). If the earlier kernel has
//   reductions, the later must read its results (its epilogue; FuseOptions::merge_epilogues,
//   GPUs only): an unrelated kernel in a product's loops would slow it.
// - a kernel with reductions (FuseOptions::merge_reductions, GPUs only), when neither it nor the
//   earlier one is a product (no reduction reads a tensor broadcast other than along its reduced
//   axes), and it reads the earlier's results (at its own index, or inside a reduction broadcast
//   along the reduced axes: a variance's mean, the max under a softmax's sum) or a tensor the
//   earlier one reads. The lowering runs reductions over loops of one size in one loop (a row's
//   max and sum: one pass), and one that reads another's result after it.
// The joint kernel runs where either of the two did, whichever keeps every kernel after its
// inputs: at the later one's place when no kernel in between reads the earlier one's results,
// else at the earlier one's when the later one's inputs are all made before it.
#include "fuse.hpp"

namespace tg {

namespace detail {
constexpr bool contains(const std::vector<int>& v, int x) {
  for (int y : v)
    if (y == x) return true;
  return false;
}
/// Where a kernel reads a materialized node: at its own index (through elementwise ops and
/// reshapes), broadcast along the reduced axes of one of its reductions at its own index (a
/// variance's mean, a softmax's max under its sum), or elsewhere (another thread's element).
enum class ReadAt : std::uint8_t { Own, Row, Other };
/// What a kernel computes with: whether it has reductions, whether one of them reads a tensor
/// broadcast otherwise than along its reduced axes (a product: matmul, convolution), and the
/// materialized nodes it reads, each with where.
struct KernelReads {
  bool reduces = false;
  bool product = false;
  std::vector<std::pair<int, ReadAt>> reads;
};
/// Whether node x, read inside reduction `red` through movements `moves` (from x's shape to the
/// reduction's input), is read at the reduction's own index, alike along its reduced axes.
constexpr bool read_by_row(const Graph& g, int red, int x, const std::vector<Movement>& moves) {
  const Node& r = g[red];
  ShapeTracker t = ShapeTracker::contiguous(g[x].shape).apply(moves);
  const View& v = t.views.back();
  if (t.views.size() != 1 || v.has_mask() || !(v.offset == 0) || !(v.shape == g[r.src[0]].shape) ||
      !(prod(g[x].shape) == prod(r.shape)))
    return false;
  const Shape own = contiguous_strides(r.shape); // (a reduced axis has size 1 there)
  for (std::size_t d = 0; d < v.ndim(); ++d) {
    bool reduced = false;
    for (int a : r.axes) reduced = reduced || std::size_t(a) == d;
    if (!(v.shape[d] == 1) && !(v.strides[d] == (reduced ? SInt(0) : own[d]))) return false;
  }
  return true;
}
constexpr KernelReads kernel_reads(const Graph& g, const NodeFlags& mat, const Kernel& k) {
  KernelReads r;
  // A path from the root: the reduction it is inside (-1: none yet, -2: one it cannot be read by
  // rows in: nested, or under a view other than a reshape), whether a view other than a reshape
  // lies above (outside reductions), and the movements below that reduction. Each path once.
  struct Path {
    int node, red;
    bool moved;
    std::vector<Movement> moves;
  };
  std::vector<Path> stack{{k.root, -1, false, {}}};
  std::vector<std::vector<Path>> seen(g.size()); // per node, the paths that reached it
  while (!stack.empty()) {
    Path p = std::move(stack.back());
    stack.pop_back();
    bool known = false;
    for (const Path& s : seen[std::size_t(p.node)])
      known = known || (s.red == p.red && s.moved == p.moved && s.moves == p.moves);
    if (known) continue;
    seen[std::size_t(p.node)].push_back(p);
    const Node& node = g[p.node];
    if (p.node != k.root && mat[std::size_t(p.node)]) {
      ReadAt at = ReadAt::Other;
      if (p.red == -1 && !p.moved) at = ReadAt::Own;
      if (p.red >= 0 && read_by_row(g, p.red, p.node, p.moves)) at = ReadAt::Row;
      r.product = r.product || (p.red != -1 && at != ReadAt::Row && has_expand(p.moves));
      r.reads.push_back({p.node, at});
      continue;
    }
    Path next{-1, p.red, p.moved, p.moves};
    if (is_reduce(node.op)) {
      r.reduces = true;
      next.red = p.red == -1 && !p.moved ? p.node : -2;
      if (p.red == -1) next.moves.clear();
    } else if (node.op == Op::View) {
      if (p.red == -1)
        next.moved = p.moved || !reshape_only(node.moves);
      else
        next.moves.insert(next.moves.begin(), node.moves.begin(), node.moves.end());
    }
    for (int i = 0; i < node.nsrc(); ++i) {
      next.node = node.src[std::size_t(i)];
      stack.push_back(next);
    }
  }
  return r;
}
} // namespace detail

/// The merge_outputs pass (see the top of this file), with FuseOptions' merge_epilogues,
/// merge_reductions and max_inputs.
constexpr Schedule merge_outputs(const Graph& g, Schedule s, const FuseOptions& o = {}) {
  const std::size_t max_params = o.max_inputs > 0 ? std::size_t(o.max_inputs) + 1 : 0;
  std::vector<Kernel>& ks = s.kernels;
  // per kernel; a joint kernel keeps only its flags right (its reads are never asked again: the
  // kernel at j is always one fuse made)
  std::vector<detail::KernelReads> reads;
  for (const Kernel& k : ks) reads.push_back(detail::kernel_reads(g, s.materialized, k));
  for (std::size_t j = 1; j < ks.size(); ++j) {
    const Kernel& b = ks[j];
    const detail::KernelReads& rb = reads[j];
    if (rb.reduces && rb.product) continue;
    for (std::size_t i = j; i-- > 0;) {
      const Kernel& a = ks[i];
      if (!(g[a.root].shape == g[b.root].shape)) continue;
      bool reads_a = false, aligned = true, shares = false;
      for (const auto& [n, at] : rb.reads)
        if (detail::contains(a.outputs, n)) {
          reads_a = true;
          aligned = aligned && at != detail::ReadAt::Other;
        }
      for (int in : b.inputs) shares = shares || detail::contains(a.inputs, in);
      if (!aligned) continue;
      const detail::KernelReads& ra = reads[i];
      if (rb.reduces) { // by rows: the later reads the earlier's results, or what it reads
        if (!o.merge_reductions || (ra.reduces && ra.product) || (!reads_a && !shares)) continue;
      } else if (ra.reduces && (!reads_a || !o.merge_epilogues)) {
        continue;
      }
      Kernel joint = a;
      for (int out : b.outputs) joint.outputs.push_back(out);
      for (int in : b.inputs)
        if (!detail::contains(a.outputs, in) && !detail::contains(joint.inputs, in))
          joint.inputs.push_back(in);
      if (max_params > 0 && joint.outputs.size() + joint.inputs.size() > max_params) continue;
      // where it may run: before every other reader of a's results (at b's place), or after every
      // input of b (at a's)
      bool at_b = true, at_a = true;
      for (std::size_t k = i + 1; k < j; ++k) {
        for (int in : ks[k].inputs) at_b = at_b && !detail::contains(a.outputs, in);
        for (int out : ks[k].outputs) at_a = at_a && !detail::contains(b.inputs, out);
      }
      if (!at_b && !at_a) continue;
      const std::size_t keep = at_b ? j : i, drop = at_b ? i : j;
      ks[keep] = std::move(joint);
      ks.erase(ks.begin() + std::ptrdiff_t(drop));
      reads[keep].reduces = ra.reduces || rb.reduces;
      reads[keep].product = ra.product || rb.product;
      reads.erase(reads.begin() + std::ptrdiff_t(drop));
      --j; // (the next kernel is now at j)
      break;
    }
  }
  return s;
}

} // namespace tg
