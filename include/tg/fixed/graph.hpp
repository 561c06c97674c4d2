#pragma once
// The static front end meets the run-time one in tg::Graph. graph_of(expr) is a constexpr function
// that builds, from a static expression, the Graph tg::schedule() shows for the same computation on
// tg::Tensor: the same nodes in the same (depth-first, sources in order) order. The fuser, the
// lowerer and the renderers then run on it in a constant expression:
//
//   static constexpr tg::input<0, float, 8, 100> x;
//   constexpr auto src = tg::freeze([] { return tg::kernel_source(x.softmax<1>(), 2); });
//   static_assert(src.contains("exp2f"));
//
// Leaves are told apart by identity: a tg::input by its Id, a tg::fixed by its address (so an
// expression over fixed tensors is a constant expression when they have static storage).
// Identical sub-expressions over the same leaves become one node (as one Tensor variable used twice
// is one node in the run-time graph).
#include <string_view>

#include "../codegen/pipeline.hpp"
#include "../graph/sint_text.hpp"
#include "ops.hpp"

namespace tg {

namespace fx {

/// Two nodes that compute the same value from the same sources.
constexpr bool same_node(const Node& a, const Node& b) {
  return a.op == b.op && a.dtype == b.dtype && a.src == b.src && a.shape == b.shape &&
         a.moves == b.moves && a.axes == b.axes && a.value == b.value && a.arg == b.arg;
}

/// Builds a Graph as expression nodes emit themselves (sources first, depth first, as the run-time
/// front end orders its graph).
///
/// Which occurrences are one node: the run-time graph shares a node where one Tensor is used twice.
/// Here a reused sub-expression appears as identical copies, so identical sub-expressions over the
/// same leaves are one node. Constants need care: two scalars with one value are two Const nodes in
/// the run-time graph. So a sub-expression of constants only is not merged on its own (unless its
/// builder marked it as one value used twice, ops::share); it is merged as part of a larger copy
/// that reads a leaf: then the nodes just emitted for the copy are dropped again. Casts carry the
/// place they were made at, as each Tensor::cast call makes a node of its own.
struct graph_builder {
  Graph g;
  std::vector<const void*> leaf_ptr, leaf_data; // per graph buffer
  std::vector<int> leaf_id, leaf_node;
  std::vector<std::vector<std::int64_t>> leaf_values; // per graph buffer: a kept index's values
  std::vector<std::uint8_t> const_only, shared;       // per node
  std::vector<int> salt;                              // per node

  bool composed = false; // a composite op emitted nodes statement by statement (composite.hpp)
  /// The statement of a composite being emitted (0 outside), a salt of the nodes it adds: the
  /// run-time front end makes a node per call, so equal nodes of two statements are two nodes
  /// (but the copies of one composite, statement for statement, are one).
  int statement = 0, statements = 0;

  constexpr int mark() const { return int(g.nodes.size()); }

  /// A Buffer node for a leaf: a fixed tensor (by address) or a tg::input (by id).
  constexpr int buffer(const void* p, int id, DType t, Shape shape, const void* data) {
    for (std::size_t i = 0; i < leaf_node.size(); ++i)
      if (leaf_ptr[i] == p && leaf_id[i] == id) return leaf_node[i];
    int idx = g.add_buffer(t, std::move(shape));
    const_only.push_back(0);
    shared.push_back(0);
    salt.push_back(0);
    leaf_ptr.push_back(p);
    leaf_data.push_back(data);
    leaf_id.push_back(id);
    leaf_node.push_back(idx);
    leaf_values.emplace_back();
    return idx;
  }
  /// A Buffer node for an index kept by value (fx::kept): one node per dtype, shape and values.
  constexpr int kept_buffer(std::vector<std::int64_t> values, DType t, Shape shape,
                            const void* data) {
    for (std::size_t i = 0; i < leaf_node.size(); ++i) {
      const Node& n = g[leaf_node[i]];
      if (leaf_id[i] == kKept && n.dtype == t && n.shape == shape && leaf_values[i] == values)
        return leaf_node[i];
    }
    int idx = buffer(data, kKept, t, std::move(shape), data);
    leaf_values.back() = std::move(values);
    return idx;
  }
  /// The id of kept indices' buffers (tg::input ids are not negative, fixed tensors' are -1).
  static constexpr int kKept = -2;
  static constexpr bool same_fields(const Node& a, const Node& b) {
    return a.op == b.op && a.dtype == b.dtype && a.shape == b.shape && a.moves == b.moves &&
           a.axes == b.axes && a.value == b.value && a.arg == b.arg;
  }
  /// Nodes a and b compute one value: the same node, or constants only and structurally equal.
  constexpr bool same_value(int a, int b) const {
    if (a == b) return true;
    if (a < 0 || b < 0 || !const_only[std::size_t(a)] || !const_only[std::size_t(b)]) return false;
    const Node &x = g[a], &y = g[b];
    if (!same_fields(x, y) || salt[std::size_t(a)] != salt[std::size_t(b)]) return false;
    for (int k = 0; k < x.nsrc(); ++k)
      if (!same_value(x.src[std::size_t(k)], y.src[std::size_t(k)])) return false;
    return true;
  }
  /// Adds n (its sources were emitted after `mark` or before), or finds the node it duplicates.
  constexpr int add(Node n, int mark, int share = 0, int site = 0) {
    site += statement;
    bool co = true, sh = share != 0;
    for (int k = 0; k < n.nsrc(); ++k) {
      co = co && const_only[std::size_t(n.src[std::size_t(k)])];
      sh = sh && shared[std::size_t(n.src[std::size_t(k)])];
    }
    if (!co || sh) {
      for (std::size_t i = 0; i < std::size_t(mark); ++i) {
        const Node& o = g.nodes[i];
        if (o.op == Op::Buffer || !same_fields(o, n) || salt[i] != site) continue;
        bool same = true;
        for (int k = 0; k < n.nsrc() && same; ++k)
          same = same_value(o.src[std::size_t(k)], n.src[std::size_t(k)]);
        if (!same) continue;
        // a copy of node i: drop what was emitted for it
        g.nodes.resize(std::size_t(mark));
        const_only.resize(std::size_t(mark));
        shared.resize(std::size_t(mark));
        salt.resize(std::size_t(mark));
        return int(i);
      }
    }
    const_only.push_back(co);
    shared.push_back(co && sh);
    salt.push_back(site);
    return g.add(std::move(n));
  }
  /// Puts the nodes in the run-time front end's order: depth first from `root`, sources in order,
  /// each after its sources; nodes root does not use are dropped (a composite's statements emit
  /// in the order they are written). Returns root's new index.
  constexpr int order_from(int root) {
    const std::size_t n = g.nodes.size();
    // a view of a bound view is one View node, as Tensor::move composes views
    for (Node& node : g.nodes) {
      if (node.op != Op::View) continue;
      const Node& s = g.nodes[std::size_t(node.src[0])];
      if (s.op != Op::View) continue;
      std::vector<Movement> moves = s.moves;
      moves.insert(moves.end(), node.moves.begin(), node.moves.end());
      node.moves = std::move(moves);
      node.src[0] = s.src[0];
    }
    std::vector<int> order, at(n, -1), stack{root};
    std::vector<int> next(n, 0);
    std::vector<std::uint8_t> seen(n, 0);
    seen[std::size_t(root)] = 1;
    while (!stack.empty()) {
      const int i = stack.back();
      const Node& node = g.nodes[std::size_t(i)];
      int& k = next[std::size_t(i)];
      if (node.op != Op::Buffer && k < node.nsrc()) {
        const int s = node.src[std::size_t(k++)];
        if (!seen[std::size_t(s)]) {
          seen[std::size_t(s)] = 1;
          stack.push_back(s);
        }
        continue;
      }
      stack.pop_back();
      at[std::size_t(i)] = int(order.size());
      order.push_back(i);
    }
    graph_builder r;
    r.composed = true;
    r.g.outputs = g.outputs;
    for (int i : order) {
      Node node = g.nodes[std::size_t(i)];
      if (node.op == Op::Buffer) {
        const std::size_t l = std::size_t(node.arg);
        node.arg = int(r.g.buffers.size());
        r.g.buffers.push_back(g.buffers[l]);
        r.leaf_ptr.push_back(leaf_ptr[l]);
        r.leaf_data.push_back(leaf_data[l]);
        r.leaf_id.push_back(leaf_id[l]);
        r.leaf_node.push_back(int(r.g.nodes.size()));
        r.leaf_values.push_back(leaf_values[l]);
      } else {
        for (int k = 0; k < node.nsrc(); ++k)
          node.src[std::size_t(k)] = at[std::size_t(node.src[std::size_t(k)])];
      }
      r.const_only.push_back(const_only[std::size_t(i)]);
      r.shared.push_back(shared[std::size_t(i)]);
      r.salt.push_back(salt[std::size_t(i)]);
      r.g.nodes.push_back(std::move(node));
    }
    *this = std::move(r);
    return at[std::size_t(root)];
  }
};

} // namespace fx

namespace fx {
/// The builder after emitting e (its leaf_data point into e's leaves: keep e alive).
template <class E> constexpr graph_builder build_graph(const E& e) {
  graph_builder b;
  int root = -1;
  if constexpr (is_fixed<E>)
    root = leaf<E>(e).emit(b);
  else
    root = e.emit(b);
  if (b.composed) root = b.order_from(root);
  b.g.outputs.push_back(root);
  return b;
}
} // namespace fx

/// The Graph the run-time front end builds for the same computation (one output: the root).
template <fx::expr E> constexpr Graph graph_of(const E& e) {
  return std::move(fx::build_graph(e).g);
}
/// The kernels the pass list makes of it for a target; by default what tg::Tensor(expr) runs on the
/// CPU device (the portable plan, bridge.hpp; the run-time front end's CPU schedule is
/// Target::cpu(), which computes a softmax's row reductions inside one kernel).
template <fx::expr E>
constexpr Schedule schedule_of(const E& e, const Target& t = Target::cpu().planned()) {
  return schedule_graph(graph_of(e), t);
}
template <fx::expr E>
constexpr std::size_t kernel_count(const E& e, const Target& t = Target::cpu().planned()) {
  return schedule_of(e, t).kernels.size();
}
/// Kernel k through the pass list for a target: the program its device runs.
template <fx::expr E>
constexpr KernelCode kernel_code(const E& e, std::size_t k = 0,
                                 const Target& t = Target::cpu().planned()) {
  Graph g = graph_of(e);
  Schedule s = schedule_graph(g, t);
  return compile_kernel(g, s, k, t);
}
template <fx::expr E>
constexpr Program kernel_program(const E& e, std::size_t k = 0,
                                 const Target& t = Target::cpu().planned()) {
  return kernel_code(e, k, t).program;
}
/// Kernel k's source in the target's dialect (by default the C that tg::Tensor(expr) compiles on
/// the CPU device).
template <fx::expr E>
constexpr Text kernel_source(const E& e, std::size_t k = 0,
                             const Target& t = Target::cpu().planned()) {
  return kernel_code(e, k, t).source;
}

/// Text frozen into a constant: the result of a constant expression that builds a tg::Text.
template <std::size_t N> struct static_text {
  std::array<char, N == 0 ? 1 : N> chars{};
  constexpr std::string_view view() const { return {chars.data(), N}; }
  constexpr std::size_t size() const { return N; }
  constexpr bool contains(std::string_view s) const {
    return view().find(s) != std::string_view::npos;
  }
  constexpr operator std::string_view() const { return view(); }
};
/// freeze([] { return tg::kernel_source(expr); }): the text as a compile-time constant (the lambda
/// runs twice: once for the length, once for the characters).
template <class F> consteval auto freeze(F) {
  constexpr std::size_t n = F{}().size();
  static_text<n> r{};
  const Text t = F{}();
  for (std::size_t i = 0; i < n; ++i) r.chars[i] = t.view()[i];
  return r;
}

} // namespace tg
