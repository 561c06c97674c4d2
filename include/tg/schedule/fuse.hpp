#pragma once
// fuse: Graph -> [Kernel]. Elementwise work and views are inlined into their consumers; a
// reduction is inlined into the one consumer that reads it back at the same index (an
// elementwise epilogue), otherwise it ends a kernel of its own. Every kernel materializes one node.
#include "../graph/graph.hpp"

namespace tg {

struct Kernel {
  int root = -1;           // the node this kernel materializes
  std::vector<int> inputs; // materialized nodes it reads (kernel parameters 1..n; 0 is the output)
};

struct Schedule {
  std::vector<Kernel> kernels;
  NodeFlags materialized; // per node: has a buffer (an input, or a kernel's root)
};

namespace detail {
constexpr bool reshape_only(const Node& n) {
  for (const Movement& m : n.moves)
    if (m.op != MoveOp::Reshape) return false;
  return true;
}
constexpr void collect_inputs(const Graph& g, const NodeFlags& mat, int node, int root,
                              std::vector<int>& inputs, NodeFlags& seen) {
  if (seen[std::size_t(node)]) return;
  seen[std::size_t(node)] = true;
  const Node& n = g[node];
  if (node != root && mat[std::size_t(node)]) {
    inputs.push_back(node);
    return;
  }
  for (int k = 0; k < n.nsrc(); ++k)
    collect_inputs(g, mat, n.src[std::size_t(k)], root, inputs, seen);
}
} // namespace detail

/// Which nodes need a buffer. Views of materialized nodes never do.
constexpr NodeFlags materialize(const Graph& g) {
  NodeFlags mat(g.size(), false);
  for (std::size_t i = 0; i < g.size(); ++i)
    mat[i] = g.nodes[i].op == Op::Buffer || g.nodes[i].op == Op::Contiguous;
  for (int o : g.outputs) mat[std::size_t(o)] = true;
  auto consumers = g.consumers();
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!is_reduce(g.nodes[i].op) || mat[i]) continue;
    // Follow the single chain of consumers up to a materialized node; every step must keep
    // the reduction's output index (elementwise ops and reshapes only).
    std::size_t cur = i;
    bool inline_ok = false;
    while (true) {
      const auto& cs = consumers[cur];
      if (cs.size() != 1) break;
      const Node& c = g.nodes[std::size_t(cs[0])];
      if (is_reduce(c.op) || (c.op == Op::View && !detail::reshape_only(c))) break;
      cur = std::size_t(cs[0]);
      if (mat[cur]) {
        inline_ok = true;
        break;
      }
    }
    mat[i] = !inline_ok;
  }
  return mat;
}

constexpr Schedule fuse(const Graph& g) {
  Schedule s;
  s.materialized = materialize(g);
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!s.materialized[i] || g.nodes[i].op == Op::Buffer) continue;
    Kernel k;
    k.root = int(i);
    NodeFlags seen(g.size(), false);
    detail::collect_inputs(g, s.materialized, int(i), int(i), k.inputs, seen);
    s.kernels.push_back(std::move(k));
  }
  return s;
}

} // namespace tg
