#pragma once
// The Graph: a flat, topologically ordered array of nodes over a small set of primitive ops.
// Both front ends build it; everything below (fuse, lower, render) reads only this.
#include <algorithm>

#include "op.hpp"
#include "view.hpp"

namespace tg {

struct Node {
  Op op = Op::Const;
  DType dtype = DType::Float32;
  std::array<int, 3> src{-1, -1, -1};
  Shape shape;
  std::vector<Movement> moves; // View
  std::vector<int> axes;       // reductions
  Scalar value;                // Const
  int arg = -1;                // Buffer: index into Graph::buffers

  constexpr int nsrc() const { return arity(op); }
};

/// A materialized input buffer: its dtype and number of elements (the data lives in a runtime).
struct BufferInfo {
  DType dtype;
  SInt numel;
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<BufferInfo> buffers;
  std::vector<int> outputs; // nodes whose values the caller wants materialized

  constexpr int add(Node n) {
    nodes.push_back(std::move(n));
    return int(nodes.size()) - 1;
  }
  /// A Buffer node for a new input buffer of that dtype and shape.
  constexpr int add_buffer(DType t, Shape shape) {
    Node n;
    n.op = Op::Buffer;
    n.dtype = t;
    n.arg = int(buffers.size());
    buffers.push_back(BufferInfo{t, prod(shape)});
    n.shape = std::move(shape);
    return add(std::move(n));
  }
  constexpr const Node& operator[](int i) const { return nodes[std::size_t(i)]; }
  constexpr std::size_t size() const { return nodes.size(); }
  /// consumers[i]: nodes that use node i as a source (with repetition).
  constexpr std::vector<std::vector<int>> consumers() const {
    std::vector<std::vector<int>> c(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i)
      for (int k = 0; k < nodes[i].nsrc(); ++k)
        c[std::size_t(nodes[i].src[std::size_t(k)])].push_back(int(i));
    return c;
  }
  constexpr std::vector<Var> vars() const {
    std::vector<Var> v;
    for (const Node& n : nodes)
      for (const SInt& d : n.shape) d.collect_vars(v);
    for (const BufferInfo& b : buffers) b.numel.collect_vars(v);
    std::sort(v.begin(), v.end());
    return v;
  }
};

/// One flag per node. Not std::vector<bool>: libstdc++ 12's vector<bool> cannot be allocated in a
/// constant expression under Clang.
using NodeFlags = std::vector<std::uint8_t>;

} // namespace tg
