#pragma once
// The second step of an export, shared by every target: each traced method scheduled, planned and
// compiled for one Target by the pass list the devices run (schedule_graph, plan_buffers,
// compile_kernel), as a list of launches over named buffers. Kernels with the same source are
// kept once. A target then writes this plan in its own language: C calls, a JSON document, a
// JavaScript host.
#include <map>

#include "../engine/schedule_info.hpp"
#include "../graph/sint_text.hpp"
#include "../runtime/launch.hpp"
#include "trace.hpp"

namespace tg {

/// A buffer a launch binds: input or output `index` of its method, weight `index` of the plan's
/// weight table, or temporary `index` of its method.
struct ExportRef {
  enum class Kind : std::uint8_t { Input, Output, Weight, Temp } kind = Kind::Input;
  int index = 0;
};

/// One launch of a method: kernel `kernel` of the plan over `buffers` (its output first, as the
/// kernel's parameters), skipped where its output has no element (`numel` is 0).
struct ExportLaunch {
  int kernel = 0;
  std::vector<ExportRef> buffers;
  SInt numel;
};

/// State a method updates: when its launches are done, temporary `temp` is copied into weight
/// `weight` (`bytes`, the weight's size). Every launch reads the state the method was called with.
struct ExportUpdate {
  int weight = 0, temp = 0;
  std::int64_t bytes = 0;
};

/// A method as a target runs it: its temporaries (bytes, expressions of the dims), launches and
/// state updates.
struct ExportMethodPlan {
  std::vector<SInt> temp_bytes;
  std::vector<ExportLaunch> launches;
  std::vector<ExportUpdate> updates;
};

/// A traced program compiled for one target.
struct ExportPlan {
  Target target;
  std::vector<KernelCode> kernels;       // distinct sources, in first-use order
  std::vector<ExportMethodPlan> methods; // per method of the program
  std::vector<int> weights;              // the program's weights the kernels read, in its order
};

/// The GPU launch shape every GPU export writes for: 256 threads a work-group, which every CUDA,
/// Vulkan and WebGPU device runs (WebGPU's default limit), not this machine's device's.
inline GpuOptions export_gpu_launch() {
  GpuOptions launch;
  launch.local = launch.max_local = 256;
  return launch;
}
/// The WebGPU target every export writes for: 8 storage buffers a kernel, WebGPU's default limit.
inline Target export_wgsl_target(bool f16 = false) {
  Target t = Target::wgsl(export_gpu_launch(), f16);
  t.fuse.max_inputs = 7;
  return t;
}
/// The Vulkan target: portable GLSL (no subgroup operations, the driver's own fma), and 8 storage
/// buffers a kernel, as many as most devices' limits allow.
inline Target export_glsl_target() {
  Target t = Target::glsl(export_gpu_launch());
  t.fuse.max_inputs = 7;
  return t;
}

/// The bytes of each input and each output of method m, expressions of its dims.
inline std::vector<SInt> export_input_bytes(const ExportedMethod& m) {
  std::vector<SInt> out;
  for (std::size_t i = 0; i < m.inputs.size(); ++i)
    out.push_back(prod(m.input_shapes[i]) * SInt(itemsize(m.inputs[i].dtype)));
  return out;
}
inline std::vector<SInt> export_output_bytes(const ExportedMethod& m) {
  std::vector<SInt> out;
  for (int o : m.outputs) out.push_back(prod(m.graph[o].shape) * SInt(itemsize(m.graph[o].dtype)));
  return out;
}

/// The largest buffer a call binds (weights, inputs, outputs, temporaries; the dims at their upper
/// bounds), at least 4 bytes: what a GPU host checks against its device's limits.
inline std::int64_t export_largest_buffer(const ExportedProgram& prog, const ExportPlan& plan) {
  std::int64_t largest = 4;
  for (int k : plan.weights) {
    const Tensor& t = prog.weights[std::size_t(k)].tensor;
    largest = std::max(largest, t.numel() * std::int64_t(itemsize(t.dtype())));
  }
  for (std::size_t mi = 0; mi < prog.methods.size(); ++mi) {
    std::vector<SInt> all = export_input_bytes(prog.methods[mi]);
    for (const SInt& b : export_output_bytes(prog.methods[mi])) all.push_back(b);
    for (const SInt& b : plan.methods[mi].temp_bytes) all.push_back(b);
    for (const SInt& b : all) largest = std::max(largest, b.max_value());
  }
  return largest;
}

/// Compiles every method of `prog` for `target`.
inline ExportPlan plan_export(const ExportedProgram& prog, const Target& target) {
  ExportPlan plan;
  plan.target = target;
  std::vector<int> table(prog.weights.size(), -1);
  for (std::size_t k = 0; k < prog.weights.size(); ++k)
    if (prog.weights[k].used) {
      table[k] = int(plan.weights.size());
      plan.weights.push_back(int(k));
    }
  std::map<std::string, int> kernel_of; // source and sizes -> its index
  for (const ExportedMethod& m : prog.methods) {
    const Graph& g = m.graph;
    const Schedule s = schedule_graph(g, target);
    const MemoryPlan mem = plan_buffers(g, s, m.keep);
    ExportMethodPlan mp;
    mp.temp_bytes = mem.slot_bytes;
    std::map<int, int> update_temp; // the new state's values: temporaries of their own
    for (const auto& [w, node] : m.updates) {
      const int temp = int(mp.temp_bytes.size());
      const SInt bytes = prod(g[node].shape) * SInt(itemsize(g[node].dtype));
      update_temp[node] = temp;
      mp.temp_bytes.push_back(bytes);
      if (bytes.max_value() > 0)
        mp.updates.push_back({table[std::size_t(w)], temp, bytes.max_value()});
    }
    auto ref = [&](int node) -> ExportRef {
      const Node& n = g[node];
      if (n.op == Op::Buffer) {
        const ExportedBuffer& b = m.buffers[std::size_t(n.arg)];
        if (b.kind == ExportedBuffer::Kind::Input) return {ExportRef::Kind::Input, b.index};
        return {ExportRef::Kind::Weight, table[std::size_t(b.index)]};
      }
      for (std::size_t k = 0; k < m.outputs.size(); ++k)
        if (m.outputs[k] == node) return {ExportRef::Kind::Output, int(k)};
      if (auto u = update_temp.find(node); u != update_temp.end())
        return {ExportRef::Kind::Temp, u->second};
      const int slot = mem.slot[std::size_t(node)];
      if (slot < 0)
        throw export_error("tg.export: method '" + m.name + "': node %" + std::to_string(node) +
                           " has no buffer (an internal error of the export)");
      return {ExportRef::Kind::Temp, slot};
    };
    for (std::size_t k = 0; k < s.kernels.size(); ++k) {
      const Kernel& kern = s.kernels[k];
      KernelCode code = compile_kernel(g, s, k, target);
      Text key; // (the launch sizes too: a C kernel's outer loop bound is its caller's)
      key << code.source.view() << '\n';
      detail::write_sint(key, code.program.outer);
      key << ' ';
      detail::write_sint(key, code.program.work);
      auto [it, fresh] = kernel_of.emplace(std::string(key.view()), int(kernel_of.size()));
      if (fresh) plan.kernels.push_back(std::move(code));
      ExportLaunch l{it->second, {}, prod(g[kern.root].shape)};
      for (int o : kern.outputs) l.buffers.push_back(ref(o));
      for (int in : kern.inputs) l.buffers.push_back(ref(in));
      mp.launches.push_back(std::move(l));
    }
    plan.methods.push_back(std::move(mp));
  }
  return plan;
}

} // namespace tg
