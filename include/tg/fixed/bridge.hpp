#pragma once
// Bridges between the static and the run-time front ends:
//   tg::Tensor t = tg::Tensor(expr);          // or tg::to_tensor(expr, "VULKAN")
//   tg::fixed<float, 2, 3> f(t);              // shape and dtype checked at run time
//
// tg::Tensor(expr) runs kernels fused and lowered at compile time: the plan is made from the
// expression's type (proto.hpp), so at run time the device only compiles (or finds in its cache)
// the programs, uploads the leaves and scalars, and launches; the tensor it returns is realized.
// It gets lazy_tensor(expr).realize() instead where no plan can be made at compile time (a bare
// tg::fixed; an expression past the compiler's constant-evaluation limit) or where the plan does
// not hold for the data (it merged copies whose leaves or scalars differ, proto.hpp).
//
// tg::lazy_tensor(expr, device) is the run-time front end's lazy tensor of the same Graph
// (graph_of), node for node: fused and lowered when realized, together with what uses it.
//
// With the leaves' identity in the type (tg::input placeholders), a plan can be named:
//   static constexpr tg::input<0, float, 8, 16> x;
//   constexpr auto k = tg::precompile([] { return (x * 2.0f).softmax<1>(); });
//   tg::Tensor y = k.run("CPU", some_fixed_8x16);   // fused, lowered at compile time
#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <tuple>

#include "../graph/sint_text.hpp"
#include "../runtime/host.hpp"
#include "../tg.hpp"
#include "../util/rc.hpp"
#include "graph.hpp"
#include "print.hpp"
#include "proto.hpp"

namespace tg {

/// The run-time front end's lazy tensor for a static expression, on `device` ("" = the default
/// device): built from graph_of(expr), fused and lowered when realized.
template <fx::expr E> Tensor lazy_tensor(const E& expr, const std::string& device = "") {
  fx::graph_builder b = fx::build_graph(expr);
  const Graph& g = b.g;
  std::string dev = device.empty() ? default_device() : detail::canonical_device(device);
  std::vector<LazyPtr> nodes;
  nodes.reserve(g.size());
  for (const Node& n : g.nodes) {
    if (n.op == Op::Buffer) {
      const void* data = b.leaf_data[std::size_t(n.arg)];
      if (!data) throw error("tg.lazy_tensor: a tg::input placeholder has no data");
      Tensor t = detail::upload(data, n.dtype, n.shape, TensorOptions(n.dtype, dev),
                                std::source_location::current());
      nodes.push_back(t.lazy());
      continue;
    }
    std::vector<LazyPtr> src;
    for (int k = 0; k < n.nsrc(); ++k) src.push_back(nodes[std::size_t(n.src[std::size_t(k)])]);
    Tensor t = Tensor::make(n.op, n.dtype, n.shape, std::move(src), dev);
    t.lazy()->moves = n.moves;
    t.lazy()->axes = n.axes;
    t.lazy()->value = n.value;
    nodes.push_back(t.lazy());
  }
  return Tensor(nodes[std::size_t(g.outputs[0])]);
}

namespace fx {

/// A lowered program as plain constants (a Program has vectors, which cannot outlive a constant
/// expression).
struct flat_uop {
  UKind kind = UKind::Const;
  Op op = Op::Add;
  DType dtype = DType::Int64;
  int src[3] = {-1, -1, -1};
  double f = 0;
  std::int64_t i = 0;
  int arg = -1;
};
struct plan_sizes {
  std::size_t ops = 0, params = 0, names = 0, kernels = 0, inputs = 0, nodes = 0;
};
template <plan_sizes Z> struct plan {
  std::array<flat_uop, Z.ops + 1> ops{};
  std::array<DType, Z.params + 1> params{};
  std::array<char, Z.names + 1> names{};
  std::array<std::size_t, Z.kernels + 1> op_begin{}, param_begin{}, name_begin{}, input_begin{};
  std::array<std::int64_t, Z.kernels + 1> outer{}, work{}, items_per_outer{};
  std::array<int, Z.kernels + 1> local{}, root{}, reduce_split{};
  std::array<bool, Z.kernels + 1> grouped{};
  std::array<int, Z.inputs + 1> inputs{};
  std::array<DType, Z.nodes + 1> node_dtype{};
  std::array<std::int64_t, Z.nodes + 1> node_numel{};
  std::array<int, Z.nodes + 1> leaf_id{}; // a Buffer node's leaf (a tg::input's Id), else -1
  int output = -1;
};
/// The sizes of the plan for the graph G{}() builds (a builder with .g and .leaf_id per buffer).
template <class G> constexpr plan_sizes sizes_of() {
  const Graph g = G{}().g;
  Schedule s = schedule_graph(g, Target::portable());
  plan_sizes z;
  z.kernels = s.kernels.size();
  z.nodes = g.size();
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    Program p = lower_kernel(g, s, k, Target::portable());
    z.ops += p.ops.size();
    z.params += p.params.size();
    z.names += p.name.size();
    z.inputs += s.kernels[k].inputs.size();
  }
  return z;
}
/// The graph G{}() builds, fused and every kernel lowered, as constants.
template <class G> constexpr auto make_plan() {
  constexpr plan_sizes Z = sizes_of<G>();
  plan<Z> r{};
  const auto b = G{}();
  const Graph& g = b.g;
  Schedule s = schedule_graph(g, Target::portable());
  std::size_t o = 0, pa = 0, na = 0, in = 0;
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    Program p = lower_kernel(g, s, k, Target::portable());
    r.op_begin[k] = o;
    for (const UOp& u : p.ops) {
      if (u.kind == UKind::Reduce || !u.ranges.empty())
        throw "tg: make_plan: a program with unlinearized ops";
      r.ops[o++] = flat_uop{u.kind,    u.op,      u.dtype, {u.src[0], u.src[1], u.src[2]},
                            u.value.f, u.value.i, u.arg};
    }
    r.param_begin[k] = pa;
    for (DType d : p.params) r.params[pa++] = d;
    r.name_begin[k] = na;
    for (char c : p.name.view()) r.names[na++] = c;
    if (!p.vars.empty() || !p.outer.is_const() || !p.work.is_const())
      throw "tg: make_plan: symbolic sizes";
    r.outer[k] = p.outer.constant();
    r.work[k] = p.work.constant();
    r.local[k] = p.local;
    r.grouped[k] = p.grouped;
    r.reduce_split[k] = p.reduce_split;
    r.items_per_outer[k] = p.items_per_outer;
    r.root[k] = s.kernels[k].root;
    r.input_begin[k] = in;
    for (int x : s.kernels[k].inputs) r.inputs[in++] = x;
  }
  r.op_begin[Z.kernels] = o;
  r.param_begin[Z.kernels] = pa;
  r.name_begin[Z.kernels] = na;
  r.input_begin[Z.kernels] = in;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    r.node_dtype[i] = n.dtype;
    r.node_numel[i] = prod(n.shape).constant();
    r.leaf_id[i] = n.op == Op::Buffer ? b.leaf_id[std::size_t(n.arg)] : -1;
    if (n.op == Op::Buffer && r.leaf_id[i] < 0)
      throw "tg: precompile: leaves must be tg::input placeholders";
  }
  r.output = g.outputs[0];
  return r;
}

/// A plan's lowered programs (the rest of the pass list, finish_kernel, runs for the device).
template <class P> std::vector<Program> programs_of(const P& plan) {
  std::vector<Program> out;
  for (std::size_t k = 0; k + 1 < plan.root.size(); ++k) {
    Program p;
    for (std::size_t i = plan.op_begin[k]; i < plan.op_begin[k + 1]; ++i) {
      const flat_uop& f = plan.ops[i];
      Scalar v;
      v.f = f.f;
      v.i = f.i;
      p.ops.push_back(UOp{f.kind, f.op, f.dtype, {f.src[0], f.src[1], f.src[2]}, v, f.arg, {}});
    }
    for (std::size_t i = plan.param_begin[k]; i < plan.param_begin[k + 1]; ++i)
      p.params.push_back(plan.params[i]);
    p.name << std::string_view(plan.names.data() + plan.name_begin[k],
                               plan.name_begin[k + 1] - plan.name_begin[k]);
    p.outer = plan.outer[k];
    p.work = plan.work[k];
    p.local = plan.local[k];
    p.grouped = plan.grouped[k];
    p.reduce_split = plan.reduce_split[k];
    p.items_per_outer = plan.items_per_outer[k];
    out.push_back(std::move(p));
  }
  return out;
}

/// Plan's programs compiled for device `name`, once per process.
template <const auto& Plan>
const std::vector<Rc<Runner>>& runners_for(const std::string& name, const Rc<Device>& dev) {
  static std::mutex m;
  static std::map<std::string, std::vector<Rc<Runner>>> cache;
  std::lock_guard<std::mutex> g(m);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const Target target = dev->target();
  std::vector<KernelCode> kernels;
  for (Program& p : programs_of(Plan)) kernels.push_back(finish_kernel(std::move(p), target));
  std::vector<const KernelCode*> ptrs;
  for (const KernelCode& c : kernels) ptrs.push_back(&c);
  return cache[name] = dev->prepare(ptrs);
}

/// Runs Plan's kernels on device `name`; leaf(id, node, device) gives the Buffer of Buffer node
/// `node`, whose leaf has that id. The result (dtype, shape) is a realized tensor there.
template <const auto& Plan, class Leaf>
Tensor launch(const std::string& name, DType dtype, Shape shape, Leaf&& leaf) {
  Rc<Device> dev = tg::device(name);
  const std::vector<Rc<Runner>>& runners = runners_for<Plan>(name, dev);
  std::vector<Rc<Buffer>> bufs(Plan.node_dtype.size());
  for (std::size_t i = 0; i + 1 < Plan.node_dtype.size(); ++i)
    if (Plan.leaf_id[i] >= 0) bufs[i] = leaf(Plan.leaf_id[i], i, dev);
  for (std::size_t k = 0; k + 1 < Plan.root.size(); ++k) {
    auto root = std::size_t(Plan.root[k]);
    bufs[root] = make_rc<Buffer>(dev, Plan.node_dtype[root], Plan.node_numel[root]);
    std::vector<void*> ptrs{bufs[root]->ptr};
    for (std::size_t i = Plan.input_begin[k]; i < Plan.input_begin[k + 1]; ++i)
      ptrs.push_back(bufs[std::size_t(Plan.inputs[i])]->ptr);
    if (Plan.node_numel[root] == 0) continue;
    runners[k]->run(ptrs, {});
    detail::stats_storage().kernels_launched++;
  }
  Tensor t = Tensor::make(Op::Buffer, dtype, std::move(shape), {}, name);
  t.lazy()->buffer = bufs[std::size_t(Plan.output)];
  return t;
}

// ---- tg::Tensor(expr): the plans made from the expression's type ------------------------------
/// What emit() meets in a real expression, in order: the leaves' data and the scalars' values (the
/// occurrences of proto.hpp).
struct collect_builder {
  struct occurrence {
    const void* data = nullptr; // a leaf's; null for a scalar
    std::size_t bytes = 0;
    DType dtype = DType::Float32;
    Scalar value{};
  };
  std::vector<occurrence> seen;
  int count = 0;
  int mark() const { return count; }
  int buffer(const void*, int, DType t, const Shape& shape, const void* data) {
    if (!data) throw error("tg.to_tensor: a tg::input placeholder has no data");
    seen.push_back({data, std::size_t(prod(shape).constant()) * std::size_t(itemsize(t)), t, {}});
    return count++;
  }
  int kept_buffer(const std::vector<std::int64_t>&, DType t, const Shape& shape, const void* data) {
    return buffer(nullptr, -1, t, shape, data);
  }
  int add(const Node& n, int, int = 0, int = 0) {
    if (n.op == Op::Const) seen.push_back({nullptr, 0, n.dtype, n.value});
    return count++;
  }
};
template <class E> struct proto_source {
  constexpr proto_builder operator()() const { return proto_graph<E>(); }
};
template <class E> constexpr auto checks_of() {
  constexpr std::size_t n = proto_graph<E>().checks.size();
  std::array<std::array<int, 2>, n> r{};
  const proto_builder b = proto_graph<E>();
  for (std::size_t i = 0; i < n; ++i) r[i] = b.checks[i];
  return r;
}
template <std::size_t> struct constant_tag {};
/// Whether E's plan can be made in a constant expression. Failing there (passing the compiler's
/// evaluation limit) is a substitution failure here, not an error. The requirements are checked in
/// order: make_plan only once its sizes are known (their failure inside it would be an error), and
/// make_plan itself because it costs a little more than sizes_of.
template <class G>
concept plan_fits = requires {
  typename constant_tag<sizes_of<G>().kernels>;
  typename constant_tag<std::size_t(make_plan<G>().output)>;
};
template <class E>
concept plannable = !is_fixed<E> && std::is_default_constructible_v<E> &&
                    plan_fits<proto_source<E>> && (sizes_of<proto_source<E>>().kernels > 0);

/// E's plan, valid for data where `checks` hold.
template <class E> struct type_plan {
  static constexpr auto plan = make_plan<proto_source<E>>();
  static constexpr auto checks = checks_of<E>();
  static constexpr std::size_t occurrences = proto_graph<E>().occurrence_node.size();
};

template <class E> Tensor run_type_plan(const E& expr, const std::string& device) {
  using P = type_plan<E>;
  collect_builder c;
  expr.emit(c);
  if (c.seen.size() != P::occurrences)
    throw error("tg.to_tensor: the expression met " + std::to_string(c.seen.size()) +
                " leaves and scalars, its plan " + std::to_string(P::occurrences));
  auto same_data = [&](const std::array<int, 2>& pair) {
    const collect_builder::occurrence &a = c.seen[std::size_t(pair[0])],
                                      &b = c.seen[std::size_t(pair[1])];
    if (!a.data || !b.data) return std::memcmp(&a.value, &b.value, sizeof(Scalar)) == 0;
    return a.data == b.data || (a.bytes == b.bytes && std::memcmp(a.data, b.data, a.bytes) == 0);
  };
  std::string name = detail::canonical_device(device.empty() ? default_device() : device);
  if (!std::all_of(P::checks.begin(), P::checks.end(), same_data)) {
    if (env::debug() >= 1)
      std::cerr << "tg.to_tensor: the compile-time plan merged copies whose leaves or scalars "
                   "differ here; scheduled at run time\n";
    return lazy_tensor(expr, name).realize();
  }
  // one upload per leaf tensor and per scalar value
  std::map<std::pair<const void*, std::size_t>, Rc<Buffer>> leaves;
  std::map<std::tuple<DType, double, std::int64_t>, Rc<Buffer>> scalars;
  auto leaf = [&](int id, std::size_t, const Rc<Device>& dev) {
    const collect_builder::occurrence& o = c.seen[std::size_t(id)];
    if (o.data) {
      Rc<Buffer>& b = leaves[{o.data, o.bytes}];
      if (!b) {
        b = make_rc<Buffer>(dev, o.dtype, std::int64_t(o.bytes) / itemsize(o.dtype));
        dev->copy_in(b->ptr, o.data, o.bytes);
      }
      return b;
    }
    Rc<Buffer>& b = scalars[{o.dtype, o.value.f, o.value.i}];
    if (!b) {
      b = make_rc<Buffer>(dev, o.dtype, 1);
      unsigned char v[8];
      if (is_float(o.dtype))
        detail::convert_values(&o.value.f, DType::Float64, v, o.dtype, 1);
      else
        detail::convert_values(&o.value.i, DType::Int64, v, o.dtype, 1);
      dev->copy_in(b->ptr, v, std::size_t(itemsize(o.dtype)));
    }
    return b;
  };
  return launch<P::plan>(name, E::dtype, sym<typename E::shape_type>(), leaf);
}
} // namespace fx

/// The run-time tensor for a static expression, computed on `device` ("" = the default device) by
/// kernels fused and lowered at compile time (see the top of this file); realized.
template <fx::expr E> Tensor to_tensor(const E& expr, const std::string& device = "") {
  if constexpr (fx::plannable<E>) {
    return fx::run_type_plan(expr, device);
  } else {
    if (env::debug() >= 1 && !fx::is_fixed<E>)
      std::cerr << "tg.to_tensor: no compile-time plan for this expression (past the compiler's "
                   "constant-evaluation limit); scheduled at run time\n";
    return lazy_tensor(expr, device).realize();
  }
}

/// A static expression over tg::input placeholders whose kernels were fused and lowered at compile
/// time (tg::precompile). run() binds input Id i to the i-th argument (a tg::fixed of the input's
/// shape and dtype) on any run-time device.
template <class F> struct precompiled {
  using expr_type = decltype(F{}());
  struct source {
    constexpr fx::graph_builder operator()() const { return fx::build_graph(F{}()); }
  };
  static constexpr auto plan = fx::make_plan<source>();
  static constexpr std::size_t kernels = plan.root.size() - 1;
  static_assert(kernels >= 1,
                "tg: precompile: the expression computes nothing (a view of an input)");

  /// The lowered programs (what the device renders and compiles).
  static std::vector<Program> programs() { return fx::programs_of(plan); }

  /// Runs on `device` with the inputs' values; the result is a realized tg::Tensor there.
  template <class... In> Tensor run(const std::string& device, const In&... in) const {
    std::string name = detail::canonical_device(device.empty() ? default_device() : device);
    std::vector<const void*> data{static_cast<const void*>(in.data())...};
    std::vector<std::int64_t> bytes{std::int64_t(In::size * sizeof(typename In::value_type))...};
    auto leaf = [&](int id, std::size_t node, const Rc<Device>& dev) {
      if (std::size_t(id) >= data.size())
        throw error("tg.precompiled.run: no argument for tg::input " + std::to_string(id));
      auto b = make_rc<Buffer>(dev, plan.node_dtype[node], plan.node_numel[node]);
      if (std::int64_t(b->nbytes()) != bytes[std::size_t(id)])
        throw shape_error("tg.precompiled.run: argument " + std::to_string(id) +
                          " has the wrong size");
      dev->copy_in(b->ptr, data[std::size_t(id)], b->nbytes());
      return b;
    };
    return fx::launch<plan>(name, expr_type::dtype, fx::sym<typename expr_type::shape_type>(),
                            leaf);
  }
};

namespace fx {
template <> struct bridge<Tensor> {
  static constexpr bool enabled = true;
  template <class E> static Tensor from_expr(const E& e, const std::string& device) {
    return to_tensor(e, device);
  }
  template <class T, std::size_t N>
  static void copy_to(const Tensor& t, T* out, DType dtype,
                      const std::array<std::int64_t, N>& dims) {
    std::vector<std::int64_t> want(dims.begin(), dims.end());
    if (t.shape() != want) {
      Shape s;
      for (std::int64_t d : want) s.push_back(d);
      throw shape_error("tg.fixed: a tensor of shape " + detail::shape_of(t) +
                        " does not fit a fixed tensor of shape " + detail::shape_str(s));
    }
    if (t.dtype() != dtype)
      throw dtype_error(std::string("tg.fixed: a tensor of dtype ") + dtype_name(t.dtype()) +
                        " does not fit a fixed tensor of dtype " + dtype_name(dtype) +
                        " (cast it first)");
    std::vector<T> v = t.to_vector<T>();
    std::copy(v.begin(), v.end(), out);
  }
};
} // namespace fx

/// precompile([] { return expr; }): the expression's kernels, fused and lowered at compile time.
/// The lambda builds the expression from tg::input placeholders (and constants).
template <class F> consteval precompiled<F> precompile(F) { return {}; }

/// A run-time tensor's values as a fixed tensor (the shape and dtype are checked at run time).
template <class F> F to_fixed(const Tensor& t) { return F(t); }

} // namespace tg
