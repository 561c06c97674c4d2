#pragma once
// The run-time front end's lazy graph: each Tensor points at a LazyNode; realizing turns the
// nodes it needs into a Graph (engine/build.hpp), runs it, and replaces realized nodes by their
// buffers (so a realized tensor is never recomputed and the graph above it can be freed).
#include <source_location>

#include "../engine/trace.hpp"
#include "../graph/movement.hpp"
#include "../graph/op.hpp"
#include "../runtime/device.hpp"
#include "../util/rc.hpp"

namespace tg {

struct LazyNode;
class Tensor;
/// The gradient rule of a composite op whose primitives' rules would make slow kernels (a
/// convolution's: its windows' gradient would be one scattered sum per tap): the gradients of
/// the record's parents, given the output's.
struct CustomGrad {
  virtual ~CustomGrad() = default;
  virtual std::vector<Tensor> operator()(const Tensor& grad) const = 0;
};
/// How a node that requires grad was made (kept apart from `src`, which realize clears).
struct GradRecord {
  Op op;
  std::vector<Rc<LazyNode>> parents;
  std::vector<Movement> moves;
  std::vector<int> axes;
  Rc<const CustomGrad> custom = nullptr; // set: it gives the parents' gradients
};

struct LazyNode {
  Op op = Op::Const;
  DType dtype = DType::Float32;
  Shape shape;
  std::string device;
  std::vector<Rc<LazyNode>> src;
  std::vector<Movement> moves;
  std::vector<int> axes;
  Scalar value;
  Rc<Buffer> buffer; // set when op == Buffer
  // autograd
  bool requires_grad = false;
  Rc<GradRecord> grad_fn; // null for leaves
  Rc<LazyNode> grad;      // accumulated by backward() on leaves
  // a constant made from a C++ number in the user's code: the op and the call site, which
  // tg::jit names when a replay would repeat a value that changed
  const char* made_by = nullptr;
  std::source_location made_at;
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
using LazyPtr = Rc<LazyNode>;

namespace detail {

/// True when reading `n` needs no kernel: a buffer, or a view of one.
inline bool is_materialized(const LazyNode& n) {
  return n.op == Op::Buffer || (n.op == Op::View && n.src[0]->op == Op::Buffer);
}

/// Realizes every target (on one device) with one schedule.
TG_API void realize_nodes(const std::vector<LazyPtr>& targets);
/// What Tensor::realize() and tg::realize do: realize_nodes, except that while tg::export_model
/// traces a method, values of its inputs stay lazy (tg/impl/realize.hpp says why).
TG_API void realize_requested(const std::vector<LazyPtr>& targets);

} // namespace detail

} // namespace tg
