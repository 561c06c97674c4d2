#pragma once
// merge_outputs: [Kernel] -> [Kernel]. A kernel joins an earlier one whose results have its shape
// when it reads their values only at its own index: the joint kernel loops once and writes every
// result, and the later one's reads of the earlier's become values in registers. Adam's moments
// and its parameter update are one kernel per parameter (not three), and on a GPU a product's
// pre-activation and its activation one (not two, the second reading the first back).
//
// What may join: a kernel without reductions of its own (its value is elementwise ops of what it
// reads), at the earlier kernel's shape, reading that kernel's results through elementwise ops
// only (no view: a view would read other threads' elements). A kernel with reductions is joined
// only by one that reads its results (its epilogue; FuseOptions::merge_epilogues, GPUs only): two
// unrelated kernels in a product's loops would slow it. The joint kernel runs where either of
// the two did, whichever keeps every kernel after its inputs: at the later one's place when no
// kernel in between reads the earlier one's results, else at the earlier one's when the later
// one's inputs are all made before it.
#include "fuse.hpp"

namespace tg {

namespace detail {
constexpr bool contains(const std::vector<int>& v, int x) {
  for (int y : v)
    if (y == x) return true;
  return false;
}
/// What a kernel computes with: whether it has reductions, and the materialized nodes it reads,
/// each with whether it reads it only at its own index (through elementwise ops, no view).
struct KernelReads {
  bool reduces = false;
  std::vector<std::pair<int, bool>> reads;
};
constexpr KernelReads kernel_reads(const Graph& g, const NodeFlags& mat, const Kernel& k) {
  KernelReads r;
  // (node, whether a view or a reduction lies between it and the output); each pair once
  std::vector<std::pair<int, bool>> stack{{k.root, false}};
  std::vector<std::uint8_t> seen(2 * g.size(), 0);
  while (!stack.empty()) {
    auto [n, moved] = stack.back();
    stack.pop_back();
    if (seen[2 * std::size_t(n) + moved]++) continue;
    const Node& node = g[n];
    if (n != k.root && mat[std::size_t(n)]) {
      r.reads.push_back({n, !moved});
      continue;
    }
    r.reduces = r.reduces || is_reduce(node.op);
    const bool m = moved || node.op == Op::View || is_reduce(node.op);
    for (int i = 0; i < node.nsrc(); ++i) stack.push_back({node.src[std::size_t(i)], m});
  }
  return r;
}
} // namespace detail

/// The merge_outputs pass (see the top of this file), with FuseOptions' merge_epilogues and
/// max_inputs.
constexpr Schedule merge_outputs(const Graph& g, Schedule s, const FuseOptions& o = {}) {
  const std::size_t max_params = o.max_inputs > 0 ? std::size_t(o.max_inputs) + 1 : 0;
  std::vector<Kernel>& ks = s.kernels;
  // per kernel (not a vector<bool>: Clang cannot grow one in a constant expression)
  std::vector<std::uint8_t> reduces;
  for (const Kernel& k : ks) reduces.push_back(detail::kernel_reads(g, s.materialized, k).reduces);
  for (std::size_t j = 1; j < ks.size(); ++j) {
    const Kernel& b = ks[j];
    if (reduces[j]) continue;
    const detail::KernelReads rb = detail::kernel_reads(g, s.materialized, b);
    for (std::size_t i = j; i-- > 0;) {
      const Kernel& a = ks[i];
      if (!(g[a.root].shape == g[b.root].shape)) continue;
      bool reads_a = false, aligned = true;
      for (const auto& [n, at_own_index] : rb.reads)
        if (detail::contains(a.outputs, n)) {
          reads_a = true;
          aligned = aligned && at_own_index;
        }
      if (!aligned || (reduces[i] && (!reads_a || !o.merge_epilogues))) continue;
      Kernel joint = a;
      for (int o : b.outputs) joint.outputs.push_back(o);
      for (int in : b.inputs)
        if (!detail::contains(a.outputs, in) && !detail::contains(joint.inputs, in))
          joint.inputs.push_back(in);
      if (max_params > 0 && joint.outputs.size() + joint.inputs.size() > max_params) continue;
      // where it may run: before every other reader of a's results (at b's place), or after every
      // input of b (at a's)
      bool at_b = true, at_a = true;
      for (std::size_t k = i + 1; k < j; ++k) {
        for (int in : ks[k].inputs) at_b = at_b && !detail::contains(a.outputs, in);
        for (int o : ks[k].outputs) at_a = at_a && !detail::contains(b.inputs, o);
      }
      if (!at_b && !at_a) continue;
      const std::size_t keep = at_b ? j : i, drop = at_b ? i : j;
      ks[keep] = std::move(joint);
      ks.erase(ks.begin() + std::ptrdiff_t(drop));
      reduces[keep] = reduces[i];
      reduces.erase(reduces.begin() + std::ptrdiff_t(drop));
      --j; // (the next kernel is now at j)
      break;
    }
  }
  return s;
}

} // namespace tg
