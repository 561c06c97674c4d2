#pragma once
// The Graph of a static expression built from its type alone, for the plan that tg::Tensor(expr)
// fuses and lowers at compile time (bridge.hpp).
//
// graph_of(expr) tells leaves apart by address and puts the scalars' values in Const nodes; neither
// is known from the type. So the graph here is built from a default-constructed stand-in of the
// expression (every node type has one; it holds no data):
// - every leaf and every scalar it meets is an occurrence: a Buffer node of its own, in the order
//   emit() meets them (the same order in which collect_builder meets them in the real expression
//   at run time). A scalar's value is uploaded at run time, never written into a kernel's source.
// - a sub-expression that repeats one emitted before it, over leaves and scalars of the same dtypes
//   and shapes, is that node: the copies the builders make (of x in softmax, gelu or abs) are one
//   node, as in graph_of (left apart, copies of copies grow the graph exponentially: 535 nodes for
//   where(a > b, a.tanh(), b.gelu()), 83 merged). The plan is then valid only for data where the
//   occurrences so merged are equal; `checks` lists those pairs, and the bridge checks them at run
//   time, falling back to the run-time front end where one fails: where the user wrote one op on
//   two different tensors or scalars of one shape, exp(a) + exp(b) or a * 2 + a * 3.
#include "graph.hpp"

namespace tg::fx {

struct proto_builder {
  Graph g;
  std::vector<int> occurrence_node;       // per occurrence: its Buffer node
  std::vector<int> leaf_id;               // per buffer: the occurrence that supplies its data
  std::vector<std::uint8_t> scalar;       // per node: whether it is a scalar's Buffer
  std::vector<std::array<int, 2>> checks; // occurrences whose data must be equal

  constexpr int mark() const { return int(g.nodes.size()); }
  constexpr int occurrence(DType t, Shape shape, bool is_scalar) {
    leaf_id.push_back(int(occurrence_node.size()));
    occurrence_node.push_back(int(g.nodes.size()));
    scalar.push_back(is_scalar);
    return g.add_buffer(t, std::move(shape));
  }
  constexpr int buffer(const void*, int, DType t, Shape shape, const void*) {
    return occurrence(t, std::move(shape), false);
  }
  constexpr int kept_buffer(std::vector<std::int64_t>, DType t, Shape shape, const void*) {
    return occurrence(t, std::move(shape), false);
  }
  constexpr int add(Node n, int mark, int = 0, int = 0) {
    if (n.op == Op::Const) return occurrence(n.dtype, {}, true);
    // a view or cast is n only if its source is (a view of b is not one of a just because a and
    // b are both [4, 5] floats: an assumption that would rarely hold, for nothing saved)
    const bool pairing = n.op != Op::View && n.op != Op::Cast && n.op != Op::Bitcast;
    for (int i = 0; i < mark; ++i) {
      const Node& o = g[i];
      if (o.op == Op::Buffer || (!pairing && o.src != n.src) || !graph_builder::same_fields(o, n))
        continue;
      std::vector<std::array<int, 2>> pairs; // (node of n's copy, node of i's)
      bool same = true;
      for (int k = 0; k < n.nsrc() && same; ++k)
        same = equal(o.src[std::size_t(k)], n.src[std::size_t(k)], pairs);
      if (same) {
        drop_copy(mark, pairs);
        return i;
      }
    }
    scalar.push_back(0);
    return g.add(std::move(n));
  }
  /// Whether node a (emitted before the copy) and node b compute one value, given that occurrences
  /// of one kind, dtype and shape are equal; the occurrences paired so are added to `pairs`.
  constexpr bool equal(int a, int b, std::vector<std::array<int, 2>>& pairs) const {
    if (a == b) return true;
    const Node &x = g[a], &y = g[b];
    if (x.op == Op::Buffer || y.op == Op::Buffer) {
      if (x.op != y.op || scalar[std::size_t(a)] != scalar[std::size_t(b)] || x.dtype != y.dtype ||
          !(x.shape == y.shape))
        return false;
      pairs.push_back({b, a});
      return true;
    }
    if (!graph_builder::same_fields(x, y)) return false;
    for (int k = 0; k < x.nsrc(); ++k)
      if (!equal(x.src[std::size_t(k)], y.src[std::size_t(k)], pairs)) return false;
    return true;
  }
  /// Drops the nodes emitted for a copy (from `mark` on): its occurrences become the ones they were
  /// paired with, on the condition (checks) that they are equal.
  constexpr void drop_copy(int mark, const std::vector<std::array<int, 2>>& pairs) {
    auto rep = [&](int node) { return leaf_id[std::size_t(g[node].arg)]; };
    for (const auto& [b, a] : pairs) {
      checks.push_back({rep(b), rep(a)});
      if (b < mark) continue;
      for (int& node : occurrence_node)
        if (node == b) node = a;
    }
    for (int node : occurrence_node)
      if (node >= mark) throw "tg: proto_builder: an occurrence in a merged copy was not paired";
    std::size_t buffers = 0;
    for (int i = 0; i < mark; ++i) buffers += g[i].op == Op::Buffer;
    g.nodes.resize(std::size_t(mark));
    g.buffers.resize(buffers);
    leaf_id.resize(buffers);
    scalar.resize(std::size_t(mark));
  }
};

/// The stand-in graph of expression type E (its root is the output).
template <class E> constexpr proto_builder proto_graph() {
  proto_builder b;
  b.g.outputs.push_back(E{}.emit(b));
  return b;
}

} // namespace tg::fx
