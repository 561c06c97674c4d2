#pragma once
// fuse: Graph -> [Kernel]. Elementwise work and views are inlined into their consumers; a
// reduction is inlined into the one consumer that reads it back at the same index (an
// elementwise epilogue), or (FuseOptions::row_reductions) into every kernel that reads it
// broadcast over its rows; otherwise it ends a kernel of its own. Every kernel fuse makes
// materializes one node (merge_outputs.hpp then joins kernels that share their loops).
#include "../graph/graph.hpp"

namespace tg {

/// Choices the fuser makes beyond correctness.
struct FuseOptions {
  /// A reduction whose every reader broadcasts it back along the axes after the ones its index
  /// depends on (a softmax's row max and row sum, a layer norm's mean and variance) is computed
  /// inside the kernels that read it, once per row (the lowering hoists it out of the loops its
  /// index does not depend on), where it ended a kernel of its own: a softmax is one kernel that
  /// reads each row from memory once and finds it in cache for the second and third pass, not
  /// three kernels that each stream the whole tensor. Each reader computes it again, so at most
  /// two may (kernels, or reductions it is read inside), one of them broadcasting it. Only for
  /// devices where one thread runs a whole row (the CPU): a GPU thread per element would compute
  /// the row's reduction per element.
  bool row_reductions = false;
  /// An elementwise result (not a bare view or cast of a buffer) that a reduction reads
  /// broadcast along at least `broadcast_operand_min` of its output elements while varying along
  /// a reduced axis (a matmul's relu'd operand, read once per output column) is materialized by a
  /// kernel of its own, so the reduction reads it instead of computing it again for each
  /// broadcast index. 0: never.
  std::int64_t broadcast_operand_min = 8;
  /// The most tensors a kernel may read (a device's storage buffers per shader stage, less the
  /// output: WebGPU's are few). A kernel that would read more is cut: the computed node inside it
  /// that reads the most tensors within the limit gets a buffer of its own, until every kernel
  /// fits. 0: no limit.
  int max_inputs = 0;
  /// Kernels that loop over results of one shape share one kernel that writes each of them
  /// (merge_outputs.hpp): Adam's moments and parameter update, a row's max and sum.
  bool merge_outputs = true;
  /// And a kernel with reductions writes its epilogue's results too (a product's pre-activation
  /// and activation). Off on the CPU: GCC leaves the epilogue of a register tile with two stores
  /// per element scalar (a 128x784x256 linear and its relu: 257 us as one kernel, 241 as two;
  /// a 784x256 weight gradient and Adam's update: 550 us as one, 281 + 66 as two).
  bool merge_epilogues = false;
  /// And kernels with reductions join (a row's max and sum, a variance after its mean). Off on
  /// the CPU: the joint kernel's loops lose the register tiles or vector partial sums that each
  /// reduction got alone (a batch norm's three gradient sums per channel: 2.1 ms as one kernel,
  /// 0.77 ms as three), and a variance waits on its mean within a row (4096 rows of 256: 72 us
  /// as one kernel, 58 as two).
  bool merge_reductions = false;
};

struct Kernel {
  int root = -1;            // the node whose shape the kernel loops over (outputs[0])
  std::vector<int> outputs; // the nodes it materializes, root first (kernel parameters 0..n-1)
  std::vector<int> inputs;  // materialized nodes it reads (the parameters after the outputs)
};

struct Schedule {
  std::vector<Kernel> kernels;
  NodeFlags materialized; // per node: has a buffer (an input, or a kernel's root)
};

namespace detail {
constexpr bool reshape_only(const std::vector<Movement>& moves) {
  for (const Movement& m : moves)
    if (m.op != MoveOp::Reshape) return false;
  return true;
}
constexpr bool has_expand(const std::vector<Movement>& moves) {
  for (const Movement& m : moves)
    if (m.op == MoveOp::Expand) return true;
  return false;
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

/// The readers of a reduction that read_by_rows found: the materialized nodes and reductions
/// whose index spaces read it, and whether one of them reads it broadcast.
struct RowReaders {
  std::vector<int> readers;
  bool broadcast = false;
};
/// Whether reduction `r`'s readers, reached through elementwise ops and views `moves` (reshapes
/// and expands only) from node `at`, each read it at an index that depends only on axes of their
/// index space before the ones it is broadcast along (see FuseOptions::row_reductions).
constexpr bool read_by_rows(const Graph& g, const NodeFlags& mat,
                            const std::vector<std::vector<int>>& consumers, int r, int at,
                            const std::vector<Movement>& moves, RowReaders& found) {
  for (int c : consumers[std::size_t(at)]) {
    const Node& n = g[c];
    std::vector<Movement> m = moves;
    if (n.op == Op::View) {
      for (const Movement& mv : n.moves) {
        if (mv.op != MoveOp::Reshape && mv.op != MoveOp::Expand) return false;
        m.push_back(mv);
      }
    } else if (!is_elementwise(n.op) && !is_reduce(n.op) && n.op != Op::Contiguous) {
      return false;
    }
    if (is_reduce(n.op) || mat[std::size_t(c)]) {
      // the index space that reads r, and which of its axes r's index depends on
      ShapeTracker t = ShapeTracker::contiguous(g[r].shape).apply(m);
      const View& v = t.views.back();
      if (t.views.size() != 1 || v.has_mask()) return false;
      bool broadcast = false; // some axis along which r is read alike has been met
      for (std::size_t d = 0; d < v.ndim(); ++d) {
        if (v.shape[d] == 1) continue;
        bool along = false; // a reduced axis of the reader: r must not vary along it
        for (int a : n.axes) along = along || (is_reduce(n.op) && std::size_t(a) == d);
        bool depends = !(v.strides[d] == 0);
        if (depends && (along || broadcast)) return false;
        broadcast = broadcast || (!depends && !along);
      }
      found.broadcast = found.broadcast || broadcast || is_reduce(n.op);
      bool known = false;
      for (int k : found.readers) known = known || k == c;
      if (!known) found.readers.push_back(c);
      continue;
    }
    if (!read_by_rows(g, mat, consumers, r, c, m, found)) return false;
  }
  return true;
}
/// Whether a reduction that reads node `e` (from node `at`, through elementwise ops and views
/// `moves`, up to the first reduction or materialized node; each node once: `seen[node] == e`)
/// reads it alike along at least `min_broadcast` of its output indices while it varies along a
/// reduced axis (see FuseOptions::broadcast_operand_min).
constexpr bool read_broadcast_by_reduction(const Graph& g, const NodeFlags& mat,
                                           const std::vector<std::vector<int>>& consumers, int e,
                                           int at, const std::vector<Movement>& moves,
                                           std::int64_t min_broadcast, std::vector<int>& seen) {
  for (int c : consumers[std::size_t(at)]) {
    if (seen[std::size_t(c)] == e) continue;
    seen[std::size_t(c)] = e;
    const Node& n = g[c];
    std::vector<Movement> m = moves;
    if (n.op == Op::View) m.insert(m.end(), n.moves.begin(), n.moves.end());
    // no expand, no broadcast (and no view to build: constexpr budget)
    if (is_reduce(n.op) && has_expand(m)) {
      // The last view maps the reduction's index space onto the views before it: a zero stride
      // there reads every earlier view, and so `e`, alike along that axis.
      ShapeTracker t = ShapeTracker::contiguous(g[e].shape).apply(m);
      const View& v = t.views.back();
      std::int64_t broadcast = 1;
      bool varies = false;
      for (std::size_t d = 0; d < v.ndim(); ++d) {
        bool reduced = false;
        for (int a : n.axes) reduced = reduced || std::size_t(a) == d;
        bool zero = v.strides[d] == 0;
        if (reduced)
          varies = varies || (!zero && !(v.shape[d] == 1));
        else if (zero)
          broadcast *= v.shape[d].max_value();
      }
      if (varies && broadcast >= min_broadcast) return true;
    } else if (!is_reduce(n.op) && (n.op == Op::View || is_elementwise(n.op)) &&
               !mat[std::size_t(c)] &&
               read_broadcast_by_reduction(g, mat, consumers, e, c, m, min_broadcast, seen)) {
      return true;
    }
  }
  return false;
}
/// Whether `n` computes something (an elementwise op other than a cast of a buffer or constant).
constexpr bool computes(const Graph& g, const Node& n) {
  if (!is_elementwise(n.op)) return false;
  if (n.op != Op::Cast && n.op != Op::Bitcast) return true;
  const Node& src = g[n.src[0]];
  return src.op != Op::Buffer && src.op != Op::Const && src.op != Op::View;
}
} // namespace detail

/// Which nodes need a buffer. Views of materialized nodes never do.
constexpr NodeFlags materialize(const Graph& g, FuseOptions o = {}) {
  NodeFlags mat(g.size(), false);
  for (std::size_t i = 0; i < g.size(); ++i)
    mat[i] = g.nodes[i].op == Op::Buffer || g.nodes[i].op == Op::Contiguous;
  for (int o : g.outputs) mat[std::size_t(o)] = true;
  auto consumers = g.consumers();
  std::vector<int> seen(o.broadcast_operand_min > 0 ? g.size() : 0, -1);
  if (o.broadcast_operand_min > 0)
    for (std::size_t i = g.size(); i-- > 0;) { // consumers first: the last op of a chain is enough
      if (mat[i] || !detail::computes(g, g.nodes[i])) continue;
      mat[i] = detail::read_broadcast_by_reduction(g, mat, consumers, int(i), int(i), {},
                                                   o.broadcast_operand_min, seen);
    }
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
      if (is_reduce(c.op) || (c.op == Op::View && !detail::reshape_only(c.moves))) break;
      cur = std::size_t(cs[0]);
      if (mat[cur]) {
        inline_ok = true;
        break;
      }
    }
    mat[i] = !inline_ok;
  }
  if (o.row_reductions)
    for (std::size_t i = 0; i < g.size(); ++i) {
      const Node& n = g.nodes[i];
      bool output = false;
      for (int out : g.outputs) output = output || out == int(i);
      if (!is_reduce(n.op) || !mat[i] || output) continue;
      bool rows = false; // its result has more than one element (one thread would run them all)
      for (std::size_t d = 0; d < n.shape.size(); ++d) rows = rows || (!(n.shape[d] == 1));
      // Each reader computes it again: worth it where one reads it broadcast (that kernel reads
      // the rows anyway), and for at most two readers.
      detail::RowReaders found;
      if (rows && detail::read_by_rows(g, mat, consumers, int(i), int(i), {}, found) &&
          found.broadcast && found.readers.size() <= 2)
        mat[i] = false;
    }
  return mat;
}

namespace detail {
/// The tensors node `n` reads when it is fused (as collect_inputs finds them).
constexpr std::size_t inputs_of(const Graph& g, const NodeFlags& mat, int n) {
  std::vector<int> inputs;
  NodeFlags seen(g.size(), false);
  collect_inputs(g, mat, n, n, inputs, seen);
  return inputs.size();
}
/// FuseOptions::max_inputs: gives buffers to computed nodes inside kernels that read too many
/// tensors, the one reading the most within the limit first, until every kernel fits (a node of
/// one op reads at most three).
constexpr void cut_to_inputs(const Graph& g, NodeFlags& mat, std::size_t max_inputs) {
  // again until none is cut: a buffer given inside one kernel can add an input to another that
  // computes the same node from inputs it reads anyway
  for (bool cut = true; cut;) {
    cut = false;
    for (std::size_t root = 0; root < g.size(); ++root) {
      if (!mat[root] || g.nodes[root].op == Op::Buffer) continue;
      while (inputs_of(g, mat, int(root)) > max_inputs) {
        NodeFlags inside(g.size(), false); // the nodes this kernel computes
        inside[root] = true;
        for (std::size_t i = root + 1; i-- > 0;) {
          if (!inside[i]) continue;
          const Node& n = g.nodes[i];
          for (int k = 0; k < n.nsrc(); ++k)
            if (!mat[std::size_t(n.src[std::size_t(k)])])
              inside[std::size_t(n.src[std::size_t(k)])] = true;
        }
        int best = -1;
        std::size_t most = 0;
        for (std::size_t i = 0; i < root; ++i) {
          if (!inside[i] || !(computes(g, g.nodes[i]) || is_reduce(g.nodes[i].op))) continue;
          const std::size_t n = inputs_of(g, mat, int(i));
          if (n <= max_inputs && n > most) best = int(i), most = n;
        }
        if (best < 0) break; // (one op that reads more: left for the device to refuse)
        mat[std::size_t(best)] = true;
        cut = true;
      }
    }
  }
}
} // namespace detail

constexpr Schedule fuse(const Graph& g, FuseOptions o = {}) {
  Schedule s;
  s.materialized = materialize(g, o);
  if (o.max_inputs > 0) detail::cut_to_inputs(g, s.materialized, std::size_t(o.max_inputs));
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!s.materialized[i] || g.nodes[i].op == Op::Buffer) continue;
    Kernel k;
    k.root = int(i);
    k.outputs = {int(i)};
    NodeFlags seen(g.size(), false);
    detail::collect_inputs(g, s.materialized, int(i), int(i), k.inputs, seen);
    s.kernels.push_back(std::move(k));
  }
  return s;
}

} // namespace tg
