#pragma once
// The first step of an export: each method of an ExportSpec run once on placeholder inputs
// (buffers with no data, their sizes the spec's dims as symbolic sizes), which builds its graph
// as tg builds every computation; nothing is computed. Every buffer the graph reads is then an
// input of the method or a weight: a tensor of the module's state_dict under its name, or a
// constant the method made (tg.constant.K). The targets schedule these graphs with the pass list
// the devices run, so an exported kernel is a kernel tg launches.
#include <map>

#include "../engine/build.hpp"
#include "../graph/sint_text.hpp"
#include "../util/rc.hpp"
#include "spec.hpp"

namespace tg {

/// A buffer a method's graph reads: its input `index`, or weight `index` of the program.
struct ExportedBuffer {
  enum class Kind : std::uint8_t { Input, Weight } kind = Kind::Input;
  int index = 0;
};

/// A method as traced: its graph, what each of its buffers is, and its outputs.
struct ExportedMethod {
  std::string name;
  std::vector<ExportInput> inputs;
  std::vector<Shape> input_shapes; // the inputs' shapes, dims as symbolic sizes
  std::vector<std::string> dims;   // the dims the method takes, in the spec's order
  Graph graph;
  NodeFlags keep;                      // the outputs
  std::vector<ExportedBuffer> buffers; // per graph buffer
  std::vector<int> outputs;            // graph nodes, one per output
  std::vector<std::string> output_names;
  std::vector<std::pair<int, int>> updates; // (weight, graph node): the state it assigns, written
                                            // when the method returns
};

/// A named tensor the exported program reads: a state_dict entry or a constant.
struct ExportedWeight {
  std::string name;
  Tensor tensor; // a realized buffer
  bool used = false;
};

/// Every method of a spec, traced, and the weights they share.
struct ExportedProgram {
  std::vector<ExportDim> dims;
  std::vector<ExportedMethod> methods;
  std::vector<ExportedWeight> weights; // the state_dict's, in its order, then the constants
};

namespace detail {

/// The device of placeholder buffers: host memory that is never read (a read is an export error).
class ExportPlaceholders : public HostDevice {
public:
  std::string name() const override { return "export placeholder"; }
  Target target() const override { return Target::interp(); }
  void copy_out(void*, const void*, std::size_t) override {
    throw export_error("tg.export: a method reads an input's value on the host (item() or "
                       "to_vector() of an input): an exported method is one graph with no host "
                       "read in the middle");
  }
  std::vector<Rc<Runner>> prepare(const std::vector<const KernelCode*>&) override {
    throw export_error("tg.export: a placeholder input cannot run kernels");
  }
};

inline const Rc<ExportPlaceholders>& export_placeholders() {
  static const auto d = make_rc<ExportPlaceholders>();
  return d;
}

/// Whether the graph of `n` reads buffer `b`.
inline bool reads_buffer(const LazyPtr& n, const Buffer* b) {
  std::vector<const LazyNode*> todo = {n.get()}, seen;
  while (!todo.empty()) {
    const LazyNode* x = todo.back();
    todo.pop_back();
    if (std::find(seen.begin(), seen.end(), x) != seen.end()) continue;
    seen.push_back(x);
    if (x->op == Op::Buffer && x->buffer.get() == b) return true;
    for (const LazyPtr& s : x->src) todo.push_back(s.get());
  }
  return false;
}

/// Runs method m on placeholders and builds its graph; each dim is bound to its upper bound,
/// less `below` (within its bounds).
inline ExportedMethod trace_method(const ExportSpec& spec, const ExportMethod& m,
                                   const std::string& device,
                                   std::map<const Buffer*, int>& weight_of,
                                   std::vector<ExportedWeight>& weights, std::int64_t below = 0) {
  const auto& placeholders = export_placeholders();
  ExportedMethod out;
  out.name = m.name;
  out.inputs = m.inputs;
  std::vector<Tensor> args;
  std::vector<const Buffer*> arg_buffers;
  for (const ExportInput& in : m.inputs) {
    Shape shape;
    for (const ExportSize& d : in.shape) {
      if (const auto* n = std::get_if<std::int64_t>(&d)) {
        shape.push_back(*n);
        continue;
      }
      const ExportDim& dim = *spec.find_dim(std::get<std::string>(d));
      shape.push_back(sym(dim.name, dim.lo, dim.hi, std::max(dim.lo, dim.hi - below)));
    }
    Tensor t = Tensor::make(Op::Buffer, in.dtype, shape, {}, device);
    t.lazy()->buffer = make_rc<Buffer>(placeholders, in.dtype, 1);
    arg_buffers.push_back(t.lazy()->buffer.get());
    args.push_back(t);
    out.input_shapes.push_back(shape);
  }
  for (const ExportDim& d : spec.dims())
    for (const ExportInput& in : m.inputs)
      if (std::find(in.shape.begin(), in.shape.end(), ExportSize(d.name)) != in.shape.end()) {
        out.dims.push_back(d.name);
        break;
      }

  ExportTrace trace{placeholders.get(), m.name, {}, 0};
  std::vector<Tensor> results;
  {
    active_export() = &trace;
    struct Reset {
      ~Reset() { active_export() = nullptr; }
    } reset;
    try {
      results = m.fn(args);
    } catch (const export_error& e) { // (thrown where the method read a value: add its place)
      const std::string what = e.what();
      if (what.find(" (at ") != std::string::npos) throw;
      throw export_error(what + " (method declared" + where(m.loc).substr(1));
    } catch (const error& e) { // the model refuses the inputs the spec gives it
      std::string ins;
      for (std::size_t i = 0; i < m.inputs.size(); ++i)
        ins += (i ? ", " : "") + m.inputs[i].name + ": " + dtype_name(m.inputs[i].dtype) +
               shape_str(out.input_shapes[i]);
      fail<export_error>("export", "method '" + m.name + "' (" + ins + "): " + e.what(), m.loc);
    }
  }
  if (results.empty())
    fail<export_error>("export", "method '" + m.name + "' returns no tensor", m.loc);
  if (!m.outputs.empty() && m.outputs.size() != results.size())
    fail<export_error>("export",
                       "method '" + m.name + "' names " + std::to_string(m.outputs.size()) +
                           " outputs and returns " + std::to_string(results.size()),
                       m.loc);
  // every output is computed by a kernel of its own graph node (a copy where the method returns
  // a buffer, or the same tensor twice)
  std::vector<LazyPtr> targets;
  for (std::size_t k = 0; k < results.size(); ++k) {
    const Tensor& r = results[k];
    if (!r.defined())
      fail<export_error>("export",
                         "method '" + m.name + "' returns an undefined tensor (output " +
                             std::to_string(k) + ")",
                         m.loc);
    if (r.device() != device)
      fail<export_error>("export",
                         "method '" + m.name + "' returns a tensor on " + r.device() +
                             ", not on the module's device " + device,
                         m.loc);
    LazyPtr l = r.detach().contiguous().lazy();
    if (l->op == Op::Buffer || std::find(targets.begin(), targets.end(), l) != targets.end())
      l = Tensor::make(Op::Contiguous, r.dtype(), r.sym_shape(), {l}, device).lazy();
    targets.push_back(l);
    out.output_names.push_back(m.outputs.empty() ? "out" + std::to_string(k) : m.outputs[k]);
  }
  // the state it updates (tg::assign): weights, each once; every value is computed from the state
  // as the method found it, so a value may not read a target of an earlier tg::assign call
  std::vector<int> updated;
  for (const ExportTrace::Assign& a : trace.assigns) {
    auto w = weight_of.find(a.target->buffer.get());
    if (w == weight_of.end())
      fail<export_error>("export",
                         "method '" + m.name +
                             "' assigns to a tensor that is neither a weight of the module nor "
                             "state declared with spec.state(name, tensor)",
                         m.loc);
    const std::string& name = weights[std::size_t(w->second)].name;
    if (std::find(updated.begin(), updated.end(), w->second) != updated.end())
      fail<export_error>("export", "method '" + m.name + "' assigns to '" + name + "' twice",
                         m.loc);
    for (const ExportTrace::Assign& before : trace.assigns)
      if (before.call < a.call && reads_buffer(a.value, before.target->buffer.get()))
        fail<export_error>(
            "export",
            "method '" + m.name + "' reads '" +
                weights[std::size_t(weight_of.at(before.target->buffer.get()))].name +
                "' after assigning it: an exported method computes every value "
                "from the state it was called with (assign all state in one "
                "tg::assign, as the optimizers do)",
            m.loc);
    updated.push_back(w->second);
    weights[std::size_t(w->second)].used = true;
    LazyPtr l = a.value;
    if (l->op == Op::Buffer || std::find(targets.begin(), targets.end(), l) != targets.end())
      l = Tensor::make(Op::Contiguous, l->dtype, l->shape, {l}, device).lazy();
    targets.push_back(l);
  }
  GraphBuild b = build_graph(targets);
  out.graph = std::move(b.graph);
  out.keep.assign(out.graph.size(), false);
  for (int o : out.graph.outputs) out.keep[std::size_t(o)] = true;
  out.outputs.assign(out.graph.outputs.begin(),
                     out.graph.outputs.begin() + std::ptrdiff_t(results.size()));
  for (std::size_t i = 0; i < updated.size(); ++i)
    out.updates.emplace_back(updated[i], out.graph.outputs[results.size() + i]);
  for (std::size_t i = 0; i < b.inputs.size(); ++i) {
    const Buffer* buf = b.inputs[i].get();
    auto a = std::find(arg_buffers.begin(), arg_buffers.end(), buf);
    if (a != arg_buffers.end()) {
      out.buffers.push_back({ExportedBuffer::Kind::Input, int(a - arg_buffers.begin())});
      continue;
    }
    auto w = weight_of.find(buf);
    if (w == weight_of.end()) { // a tensor the method made from host data: a constant
      Tensor t = Tensor::make(Op::Buffer, buf->dtype, {buf->numel}, {}, device);
      t.lazy()->buffer = b.inputs[i];
      int k = 0;
      for (const ExportedWeight& x : weights) k += x.name.rfind("tg.constant.", 0) == 0;
      w = weight_of.emplace(buf, int(weights.size())).first;
      weights.push_back({"tg.constant." + std::to_string(k), t, false});
    }
    weights[std::size_t(w->second)].used = true;
    out.buffers.push_back({ExportedBuffer::Kind::Weight, w->second});
  }
  return out;
}

} // namespace detail

/// Traces every method of `spec` over module m's weights (m may be null: a program of free
/// functions, whose weights are the constants they use).
inline ExportedProgram trace_export(const nn::Module* m, const ExportSpec& spec,
                                    std::source_location loc = std::source_location::current()) {
  if (spec.methods().empty()) detail::fail<export_error>("export", "the spec has no method", loc);
  ExportedProgram p;
  p.dims = spec.dims();
  std::map<const Buffer*, int> weight_of;
  std::string device = default_device();
  if (m) {
    bool first = true;
    for (auto& [name, t] : m->state_dict()) {
      Tensor w = t.detach();
      if (w.lazy()->op != Op::Buffer) w.realize(); // (in place: the module sees the buffer)
      if (first) device = w.device();
      first = false;
      if (w.device() != device)
        detail::fail<export_error>("export",
                                   "the module's weights are on two devices (" + device + " and " +
                                       w.device() + "); move the module to one with .to()",
                                   loc);
      if (w.lazy()->op != Op::Buffer) continue; // a view of a buffer: read as a constant
      weight_of.emplace(w.lazy()->buffer.get(), int(p.weights.size()));
      p.weights.push_back({name, w, false});
    }
  }
  for (const auto& [name, t] : spec.states()) {
    for (const ExportedWeight& w : p.weights)
      if (w.name == name)
        detail::fail<export_error>("export", "state '" + name + "' has a weight's name", loc);
    if (weight_of.count(t.lazy()->buffer.get()))
      detail::fail<export_error>("export", "state '" + name + "' is a weight of the module", loc);
    if (t.device() != device)
      detail::fail<export_error>(
          "export",
          "state '" + name + "' is on " + t.device() + ", the module's weights on " + device, loc);
    weight_of.emplace(t.lazy()->buffer.get(), int(p.weights.size()));
    p.weights.push_back({name, t, false});
  }
  // the gradients a method's backward() leaves on the parameters are graphs of its placeholders:
  // after each trace, the parameters get back what they held
  std::vector<std::pair<Tensor, Tensor>> grads;
  if (m)
    for (auto& [name, t] : m->state_dict()) grads.emplace_back(t, t.grad());
  for (const auto& [name, t] : spec.states()) grads.emplace_back(t, t.grad());
  auto trace = [&](const ExportMethod& method, std::map<const Buffer*, int>& wo,
                   std::vector<ExportedWeight>& ws, std::int64_t below) {
    struct Restore {
      std::vector<std::pair<Tensor, Tensor>>& grads;
      ~Restore() {
        for (auto& [t, g] : grads) t.set_grad(g);
      }
    } restore{grads};
    return detail::trace_method(spec, method, device, wo, ws, below);
  };
  for (const ExportMethod& method : spec.methods()) {
    p.methods.push_back(trace(method, weight_of, p.weights, 0));
    // Traced again with every dim one less, the graph must be the same: a method that used a
    // dim's value (x.size(0), x.shape()) would otherwise be exported for that value alone.
    const ExportedMethod& first = p.methods.back();
    bool varies = false;
    for (const std::string& d : first.dims)
      varies = varies || spec.find_dim(d)->lo < spec.find_dim(d)->hi;
    if (!varies) continue;
    std::map<const Buffer*, int> weight_of2 = weight_of;
    std::vector<ExportedWeight> weights2 = p.weights;
    ExportedMethod again = trace(method, weight_of2, weights2, 1);
    const Device& any = *detail::export_placeholders(); // (a plan key names a device)
    if (detail::plan_key(first.graph, first.keep, any) !=
        detail::plan_key(again.graph, again.keep, any)) {
      std::string dims;
      for (const std::string& d : first.dims)
        dims += (dims.empty() ? "" : ", ") + d + " = " + std::to_string(spec.find_dim(d)->hi) +
                " and " + std::to_string(std::max(spec.find_dim(d)->lo, spec.find_dim(d)->hi - 1));
      detail::fail<export_error>(
          "export",
          "method '" + method.name + "' builds a different graph for " + dims +
              ": an op used a dim's value (x.size(0) or x.shape() where x.sym_shape() keeps it "
              "symbolic), so no one export serves every value in the bounds",
          method.loc);
    }
  }
  return p;
}

} // namespace tg
