#pragma once
// Bridges between the static and the run-time front ends:
//   tg::Tensor t = tg::Tensor(expr);          // or tg::to_tensor(expr, "VULKAN")
//   tg::fixed<float, 2, 3> f(t);              // shape and dtype checked at run time
// The tensor is built from the same Graph (graph_of), node for node, on the device asked for; it
// is lazy, and realizes through the device's own compiler like any tg::Tensor.
//
// With the schedule made at compile time:
//   static constexpr tg::input<0, float, 8, 16> x;
//   constexpr auto k = tg::precompile([] { return (x * 2.0f).softmax<1>(); });
//   tg::Tensor y = k.run("CPU", some_fixed_8x16);   // fused, lowered at compile time
// The graph is fused and every kernel lowered in a constant expression; at run time the device
// only renders and compiles (or finds in its cache) the programs, and launches them.
#include <map>
#include <mutex>

#include "../fixed.hpp"
#include "../tensor/print.hpp"

namespace tg {

/// The run-time tensor for a static expression, on `device` ("" = the default device).
template <fx::expr E> Tensor to_tensor(const E& expr, const std::string& device = "") {
  fx::graph_builder b = fx::build_graph(expr);
  const Graph& g = b.g;
  std::string dev = device.empty() ? default_device() : detail::canonical_device(device);
  std::vector<LazyPtr> nodes;
  nodes.reserve(g.size());
  for (const Node& n : g.nodes) {
    if (n.op == Op::Buffer) {
      const void* data = b.leaf_data[std::size_t(n.arg)];
      if (!data) throw error("tg.to_tensor: a tg::input placeholder has no data");
      Tensor t = visit_dtype(n.dtype, [&](auto x) {
        using T = decltype(x);
        return Tensor::from_data(static_cast<const T*>(data), n.shape, TensorOptions(n.dtype, dev));
      });
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
  std::array<int, Z.nodes + 1> leaf_id{}; // the tg::input Id of a Buffer node, else -1
  int output = -1;
};
template <class F> constexpr plan_sizes sizes_of() {
  Graph g = graph_of(F{}());
  Schedule s = fuse(g);
  plan_sizes z;
  z.kernels = s.kernels.size();
  z.nodes = g.size();
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    Program p = lower(g, s, k);
    z.ops += p.ops.size();
    z.params += p.params.size();
    z.names += p.name.size();
    z.inputs += s.kernels[k].inputs.size();
  }
  return z;
}
template <class F> constexpr auto make_plan() {
  constexpr plan_sizes Z = sizes_of<F>();
  plan<Z> r{};
  auto b = build_graph(F{}());
  const Graph& g = b.g;
  Schedule s = fuse(g);
  std::size_t o = 0, pa = 0, na = 0, in = 0;
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    Program p = lower(g, s, k);
    r.op_begin[k] = o;
    for (const UOp& u : p.ops) {
      if (u.kind == UKind::Reduce || !u.ranges.empty())
        throw "tg: precompile: a program with unlinearized ops";
      r.ops[o++] = flat_uop{u.kind,    u.op,      u.dtype, {u.src[0], u.src[1], u.src[2]},
                            u.value.f, u.value.i, u.arg};
    }
    r.param_begin[k] = pa;
    for (DType d : p.params) r.params[pa++] = d;
    r.name_begin[k] = na;
    for (char c : p.name.view()) r.names[na++] = c;
    if (!p.vars.empty() || !p.outer.is_const() || !p.work.is_const())
      throw "tg: precompile: symbolic sizes";
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

} // namespace fx

/// A static expression over tg::input placeholders whose kernels were fused and lowered at compile
/// time (tg::precompile). run() binds input Id i to the i-th argument (a tg::fixed of the input's
/// shape and dtype) on any run-time device.
template <class F> struct precompiled {
  using expr_type = decltype(F{}());
  static constexpr auto plan = fx::make_plan<F>();
  static constexpr std::size_t kernels = plan.root.size() - 1;
  static_assert(kernels >= 1,
                "tg: precompile: the expression computes nothing (a view of an input)");

  /// The lowered programs (what the device renders and compiles).
  static std::vector<Program> programs() {
    std::vector<Program> out;
    for (std::size_t k = 0; k < kernels; ++k) {
      Program p;
      for (std::size_t i = plan.op_begin[k]; i < plan.op_begin[k + 1]; ++i) {
        const fx::flat_uop& f = plan.ops[i];
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

  /// Runs on `device` with the inputs' values; the result is a realized tg::Tensor there.
  template <class... In> Tensor run(const std::string& device, const In&... in) const {
    std::string name = detail::canonical_device(device.empty() ? default_device() : device);
    std::shared_ptr<Device> dev = tg::device(name);
    const std::vector<std::shared_ptr<Runner>>& runners = prepared(name, dev);
    std::vector<const void*> data{static_cast<const void*>(in.data())...};
    std::vector<std::int64_t> bytes{std::int64_t(In::size * sizeof(typename In::value_type))...};
    std::vector<std::shared_ptr<Buffer>> bufs(plan.node_dtype.size());
    for (std::size_t i = 0; i + 1 < plan.node_dtype.size(); ++i) {
      int id = plan.leaf_id[i];
      if (id < 0) continue;
      if (std::size_t(id) >= data.size())
        throw error("tg.precompiled.run: no argument for tg::input " + std::to_string(id));
      bufs[i] = std::make_shared<Buffer>(dev, plan.node_dtype[i], plan.node_numel[i]);
      if (std::int64_t(bufs[i]->nbytes()) != bytes[std::size_t(id)])
        throw shape_error("tg.precompiled.run: argument " + std::to_string(id) +
                          " has the wrong size");
      dev->copy_in(bufs[i]->ptr, data[std::size_t(id)], bufs[i]->nbytes());
    }
    for (std::size_t k = 0; k < kernels; ++k) {
      int root = plan.root[k];
      bufs[std::size_t(root)] = std::make_shared<Buffer>(dev, plan.node_dtype[std::size_t(root)],
                                                         plan.node_numel[std::size_t(root)]);
      std::vector<void*> ptrs{bufs[std::size_t(root)]->ptr};
      for (std::size_t i = plan.input_begin[k]; i < plan.input_begin[k + 1]; ++i)
        ptrs.push_back(bufs[std::size_t(plan.inputs[i])]->ptr);
      if (plan.node_numel[std::size_t(root)] == 0) continue;
      runners[k]->run(ptrs, {});
      detail::stats_storage().kernels_launched++;
    }
    Shape shape;
    for (std::size_t d : expr_type::shape_type::dims) shape.push_back(SInt(std::int64_t(d)));
    Tensor t = Tensor::make(Op::Buffer, expr_type::dtype, shape, {}, name);
    t.lazy()->buffer = bufs[std::size_t(plan.output)];
    return t;
  }

private:
  /// The compiled programs, per device, prepared once per process.
  static const std::vector<std::shared_ptr<Runner>>& prepared(const std::string& name,
                                                              const std::shared_ptr<Device>& dev) {
    static std::mutex m;
    static std::map<std::string, std::vector<std::shared_ptr<Runner>>> cache;
    std::lock_guard<std::mutex> g(m);
    auto it = cache.find(name);
    if (it != cache.end()) return it->second;
    std::vector<Program> ps = programs();
    std::vector<const Program*> ptrs;
    for (const Program& p : ps) ptrs.push_back(&p);
    return cache[name] = dev->prepare(ptrs);
  }
};
/// precompile([] { return expr; }): the expression's kernels, fused and lowered at compile time.
/// The lambda builds the expression from tg::input placeholders (and constants).
template <class F> consteval precompiled<F> precompile(F) { return {}; }

/// A run-time tensor's values as a fixed tensor (the shape and dtype are checked at run time).
template <class F> F to_fixed(const Tensor& t) { return F(t); }

} // namespace tg
