#pragma once
// The run-time front end's lazy graph: each Tensor points at a LazyNode; realizing turns the
// nodes it needs into a Graph, runs it, and replaces realized nodes by their buffers (so a
// realized tensor is never recomputed and the graph above it can be freed).
#include <unordered_map>
#include <unordered_set>

#include "../engine/realize.hpp"

namespace tg {

struct LazyNode;
/// How a node that requires grad was made (kept apart from `src`, which realize clears).
struct GradRecord {
  Op op;
  std::vector<std::shared_ptr<LazyNode>> parents;
  std::vector<Movement> moves;
  std::vector<int> axes;
};

struct LazyNode {
  Op op = Op::Const;
  DType dtype = DType::Float32;
  Shape shape;
  std::string device;
  std::vector<std::shared_ptr<LazyNode>> src;
  std::vector<Movement> moves;
  std::vector<int> axes;
  Scalar value;
  std::shared_ptr<Buffer> buffer; // set when op == Buffer
  // autograd
  bool requires_grad = false;
  std::shared_ptr<GradRecord> grad_fn; // null for leaves
  std::shared_ptr<LazyNode> grad;      // accumulated by backward() on leaves
};

namespace detail {
inline int& no_grad_depth() {
  thread_local int depth = 0;
  return depth;
}
} // namespace detail

/// Within its scope, ops record nothing for autograd (as torch.no_grad()).
struct no_grad {
  no_grad() { ++detail::no_grad_depth(); }
  ~no_grad() { --detail::no_grad_depth(); }
  no_grad(const no_grad&) = delete;
  no_grad& operator=(const no_grad&) = delete;
};
inline bool grad_enabled() { return detail::no_grad_depth() == 0; }
using LazyPtr = std::shared_ptr<LazyNode>;

namespace detail {

/// True when reading `n` needs no kernel: a buffer, or a view of one.
inline bool is_materialized(const LazyNode& n) {
  return n.op == Op::Buffer || (n.op == Op::View && n.src[0]->op == Op::Buffer);
}

/// The Graph for a set of lazy targets, with what realizing it needs.
struct GraphBuild {
  Graph graph;
  std::vector<LazyPtr> order;                  // graph node i <- order[i]
  std::vector<std::shared_ptr<Buffer>> inputs; // graph buffer i
  NodeFlags keep;                              // results that outlive the realize
  std::string device;
};

inline GraphBuild build_graph(const std::vector<LazyPtr>& targets) {
  GraphBuild b;
  std::vector<LazyPtr> todo;
  for (const LazyPtr& t : targets)
    if (!is_materialized(*t) && std::find(todo.begin(), todo.end(), t) == todo.end())
      todo.push_back(t);
  if (todo.empty()) return b;
  b.device = todo[0]->device;

  // Topological order, iteratively (graphs can be deep).
  std::unordered_map<const LazyNode*, int> index;
  std::unordered_set<const LazyNode*> visiting;
  std::vector<std::pair<LazyPtr, std::size_t>> stack;
  for (const LazyPtr& t : todo) {
    if (index.count(t.get())) continue;
    stack.push_back({t, 0});
    visiting.insert(t.get());
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (n->op != Op::Buffer && next < n->src.size()) {
        LazyPtr c = n->src[next++];
        if (!index.count(c.get()) && visiting.insert(c.get()).second) stack.push_back({c, 0});
        continue;
      }
      LazyPtr done = n;
      stack.pop_back();
      visiting.erase(done.get());
      if (done->device != b.device)
        throw device_error("tg.realize: tensors on different devices (" + done->device + " and " +
                           b.device + ") in one computation; move them with .to()");
      index[done.get()] = int(b.order.size());
      b.order.push_back(std::move(done));
    }
  }

  std::vector<int> refs(b.order.size(), 0);
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
        int s = index.at(n->src[k].get());
        node.src[k] = s;
        refs[std::size_t(s)]++;
      }
    }
    b.graph.add(std::move(node));
  }
  for (const LazyPtr& t : todo) b.graph.outputs.push_back(index.at(t.get()));
  // a symbolic size has one value within a computation
  std::vector<Var> seen;
  auto check = [&](const SInt& d) {
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

/// Realizes every target (on one device) with one schedule.
inline void realize_nodes(const std::vector<LazyPtr>& targets) {
  GraphBuild b = build_graph(targets);
  if (b.order.empty()) return;
  adopt(b, realize_graph(b.graph, b.inputs, b.keep, device(b.device)));
}

} // namespace detail

} // namespace tg
