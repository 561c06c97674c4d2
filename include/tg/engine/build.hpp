#pragma once
// From the run-time front end's lazy nodes to a Graph, and back: build_graph collects what a
// realize needs, adopt makes the realized nodes buffers.
#include "../tensor/lazy.hpp"
#include "../util/rc.hpp"
#include "realize.hpp"

namespace tg::detail {

/// The Graph for a set of lazy targets, with what realizing it needs.
struct GraphBuild {
  Graph graph;
  std::vector<LazyPtr> order;     // graph node i <- order[i]
  std::vector<Rc<Buffer>> inputs; // graph buffer i
  NodeFlags keep;                 // results that outlive the realize
  std::string device;
};

/// Graph node index by lazy node, for build_graph: open addressing in one flat array (a
/// std::unordered_map allocates for every entry, which dominated building small graphs).
class NodeIndex {
public:
  static constexpr int absent = -1, in_progress = -2;
  int get(const LazyNode* n) const { return slots_[find(n)].second; }
  void set(const LazyNode* n, int index) {
    std::size_t at = find(n);
    if (!slots_[at].first) {
      if (2 * (used_ + 1) > slots_.size()) { // at most half full: probes stay short
        grow();
        at = find(n);
      }
      slots_[at].first = n;
      used_++;
    }
    slots_[at].second = index;
  }

private:
  std::size_t find(const LazyNode* n) const {
    const std::size_t mask = slots_.size() - 1;
    // Fibonacci hashing: nodes are heap blocks, so the low bits of their addresses are alike
    std::size_t at = std::size_t(std::uint64_t(std::uintptr_t(n)) * 0x9E3779B97F4A7C15ull >> 32);
    at &= mask;
    while (slots_[at].first && slots_[at].first != n) at = (at + 1) & mask;
    return at;
  }
  void grow() {
    std::vector<std::pair<const LazyNode*, int>> old(2 * slots_.size(), {nullptr, absent});
    old.swap(slots_);
    for (const auto& [n, index] : old)
      if (n) slots_[find(n)] = {n, index};
  }
  std::vector<std::pair<const LazyNode*, int>> slots_ =
      std::vector<std::pair<const LazyNode*, int>>(64, {nullptr, absent}); // a power of 2
  std::size_t used_ = 0;
};

inline GraphBuild build_graph(const std::vector<LazyPtr>& targets) {
  GraphBuild b;
  std::vector<LazyPtr> todo;
  for (const LazyPtr& t : targets)
    if (!is_materialized(*t) && std::find(todo.begin(), todo.end(), t) == todo.end())
      todo.push_back(t);
  if (todo.empty()) return b;
  b.device = todo[0]->device;

  // Topological order, iteratively (graphs can be deep). The stack points at the Rcs in
  // `todo` and in the nodes' `src`, which stay put while the graph is built.
  NodeIndex index;
  std::vector<std::pair<const LazyPtr*, std::size_t>> stack;
  for (const LazyPtr& t : todo) {
    if (index.get(t.get()) != NodeIndex::absent) continue;
    stack.push_back({&t, 0});
    index.set(t.get(), NodeIndex::in_progress);
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const LazyNode& node = **n;
      if (node.op != Op::Buffer && next < node.src.size()) {
        const LazyPtr& c = node.src[next++];
        if (index.get(c.get()) == NodeIndex::absent) {
          index.set(c.get(), NodeIndex::in_progress);
          stack.push_back({&c, 0});
        }
        continue;
      }
      const LazyPtr& done = *n;
      stack.pop_back();
      if (done->device != b.device)
        throw device_error("tg.realize: tensors on different devices (" + done->device + " and " +
                           b.device + ") in one computation; move them with .to()");
      index.set(done.get(), int(b.order.size()));
      b.order.push_back(done);
    }
  }

  std::vector<int> refs(b.order.size(), 0);
  b.graph.nodes.reserve(b.order.size());
  for (const LazyPtr& n : b.order) {
    Node node;
    node.op = n->op;
    node.dtype = n->dtype;
    node.shape = n->shape;
    node.moves = n->moves;
    node.axes = n->axes;
    node.value = n->value;
    if (n->op == Op::Buffer) {
      node.arg = int(b.inputs.size());
      b.inputs.push_back(n->buffer);
      b.graph.buffers.push_back(BufferInfo{n->dtype, prod(n->shape)});
    } else {
      for (std::size_t k = 0; k < n->src.size(); ++k) {
        int s = index.get(n->src[k].get());
        node.src[k] = s;
        refs[std::size_t(s)]++;
      }
    }
    b.graph.add(std::move(node));
  }
  for (const LazyPtr& t : todo) b.graph.outputs.push_back(index.get(t.get()));
  // a symbolic size has one value within a computation
  std::vector<Var> seen;
  auto check = [&](const SInt& d) {
    if (d.is_const()) return;
    std::vector<Var> vs;
    d.collect_vars(vs);
    for (const Var& v : vs) {
      auto it = std::find(seen.begin(), seen.end(), v);
      if (it == seen.end())
        seen.push_back(v);
      else if (it->value != v.value || it->lo != v.lo || it->hi != v.hi)
        throw shape_error("tg.realize: symbolic size '" + std::string(v.name.view()) +
                          "' is bound to both " + std::to_string(it->value) + " and " +
                          std::to_string(v.value) + " (bounds [" + std::to_string(it->lo) + ", " +
                          std::to_string(it->hi) + "] and [" + std::to_string(v.lo) + ", " +
                          std::to_string(v.hi) + "]) in one computation");
    }
  };
  for (const Node& n : b.graph.nodes) {
    for (const SInt& d : n.shape) check(d);
    for (const Movement& m : n.moves) {
      for (const SInt& d : m.a) check(d);
      for (const SInt& d : m.b) check(d);
    }
  }

  // Keep a result beyond this realize when a user (or a node outside this graph) holds it:
  // references beyond those of this graph's nodes, `order`, and the caller's `targets`.
  b.keep.assign(b.order.size(), false);
  for (int o : b.graph.outputs) b.keep[std::size_t(o)] = true;
  for (std::size_t i = 0; i < b.order.size(); ++i)
    if (b.order[i].use_count() > long(refs[i]) + 1) b.keep[i] = true;
  return b;
}

/// Realized nodes become buffers: never recomputed, and the graph above them can be freed.
inline void adopt(const GraphBuild& b, const Realized& r) {
  for (std::size_t i = 0; i < b.order.size(); ++i) {
    if (!r.buffers[i]) continue;
    LazyNode& n = *b.order[i];
    n.op = Op::Buffer;
    n.buffer = r.buffers[i];
    n.src.clear();
    n.moves.clear();
    n.axes.clear();
  }
}

/// While tg::jit records a call: where each constant of the graph was made (Trace::sites).
struct TraceSites {
  Trace* trace = active_trace();
  explicit TraceSites(const GraphBuild& b) {
    if (!trace) return;
    trace->sites.assign(b.order.size(), std::string());
    for (std::size_t i = 0; i < b.order.size(); ++i)
      if (const LazyNode& n = *b.order[i]; n.op == Op::Const && n.made_by)
        trace->sites[i] = "`" + std::string(n.made_by) + "` at " + n.made_at.file_name() + ":" +
                          std::to_string(n.made_at.line());
  }
  ~TraceSites() {
    if (trace) trace->sites.clear();
  }
  TraceSites(const TraceSites&) = delete;
  TraceSites& operator=(const TraceSites&) = delete;
};

} // namespace tg::detail
