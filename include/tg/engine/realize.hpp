#pragma once
// realize: run a Graph on a device. The pass list, top to bottom: fuse -> plan_memory -> lower
// -> (the device) render + compile -> launch. TG_DEBUG=2 prints the schedule, 3 the sources,
// 4 the graph and the IR after each pass.
#include <cstdio>
#include <iostream>

#include "../codegen/lower.hpp"
#include "../runtime/devices.hpp"
#include "../schedule/memory.hpp"

namespace tg {

namespace detail {
inline std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) r.append(", ");
    if (s[i].is_const()) {
      r.append(std::to_string(s[i].constant()));
      continue;
    }
    bool first = true;
    for (const Term& t : s[i].terms()) {
      if (!first) r.push_back('+');
      first = false;
      if (t.coef != 1) r.append(std::to_string(t.coef)).push_back('*');
      for (std::size_t k = 0; k < t.vars.size(); ++k) {
        if (k) r.push_back('*');
        r.append(t.vars[k].name.view());
      }
    }
    if (s[i].constant()) r.append("+").append(std::to_string(s[i].constant()));
  }
  r.push_back(']');
  return r;
}
inline std::string dump_graph(const Graph& g) {
  std::string out = "graph\n";
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    out += "  %" + std::to_string(i) + " = " + op_name(n.op) + " " + dtype_name(n.dtype) + " " + shape_str(n.shape);
    for (int k = 0; k < n.nsrc(); ++k) out += " %" + std::to_string(n.src[std::size_t(k)]);
    for (const Movement& m : n.moves) out += std::string(" ") + move_name(m.op) + shape_str(m.a);
    if (!n.axes.empty()) {
      out += " axes=";
      for (int a : n.axes) out += std::to_string(a) + ",";
    }
    out += "\n";
  }
  return out;
}
} // namespace detail

/// What a realize produces: a buffer for every node the caller asked to keep.
struct Realized {
  std::vector<std::shared_ptr<Buffer>> buffers; // per node (null where not kept)
};

/// Runs `g` on `dev`. `inputs[i]` backs graph buffer i; `keep[n]` marks results to return.
inline Realized realize_graph(const Graph& g, const std::vector<std::shared_ptr<Buffer>>& inputs,
                              const std::vector<bool>& keep, const std::shared_ptr<Device>& dev) {
  const int debug = env::debug();
  detail::stats_storage().realizes++;
  if (debug >= 4) std::cerr << detail::dump_graph(g);
  Schedule s = fuse(g);
  MemoryPlan plan = plan_memory(g, s, keep);
  if (debug >= 2) {
    std::cerr << "schedule: " << s.kernels.size() << " kernel(s), " << plan.slot_bytes.size() << " temporary buffer(s)\n";
    for (const Kernel& k : s.kernels) {
      std::cerr << "  kernel %" << k.root << " " << op_name(g[k.root].op) << " " << detail::shape_str(g[k.root].shape)
                << " <-";
      for (int in : k.inputs) std::cerr << " %" << in;
      std::cerr << "\n";
    }
  }
  std::vector<Program> programs;
  programs.reserve(s.kernels.size());
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    programs.push_back(lower(g, s, k));
    if (debug >= 4) std::cerr << dump(programs.back()).view();
  }
  std::vector<const Program*> ptrs;
  for (const Program& p : programs) ptrs.push_back(&p);
  auto runners = dev->prepare(ptrs);
  if (debug >= 3)
    for (auto& r : runners)
      if (!r->source.empty()) std::cerr << r->source << "\n";

  Realized out;
  out.buffers.assign(g.size(), nullptr);
  std::vector<std::shared_ptr<Buffer>> temps(plan.slot_bytes.size());
  auto buffer_of = [&](int node) -> std::shared_ptr<Buffer> {
    const Node& n = g[node];
    if (n.op == Op::Buffer) return inputs[std::size_t(n.arg)];
    if (plan.slot[std::size_t(node)] >= 0) return temps[std::size_t(plan.slot[std::size_t(node)])];
    return out.buffers[std::size_t(node)];
  };
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    const Kernel& kern = s.kernels[k];
    const Node& root = g[kern.root];
    std::int64_t numel = prod(root.shape).eval();
    int slot = plan.slot[std::size_t(kern.root)];
    if (slot >= 0) {
      auto& t = temps[std::size_t(slot)];
      if (!t) t = std::make_shared<Buffer>(dev, DType::UInt8, plan.slot_bytes[std::size_t(slot)].eval());
    } else {
      out.buffers[std::size_t(kern.root)] = std::make_shared<Buffer>(dev, root.dtype, numel);
    }
    if (numel == 0) continue;
    std::vector<void*> ptrs_k{buffer_of(kern.root)->ptr};
    for (int in : kern.inputs) ptrs_k.push_back(buffer_of(in)->ptr);
    std::vector<std::int64_t> vars;
    for (const Var& v : programs[k].vars) vars.push_back(v.value);
    auto t0 = std::chrono::steady_clock::now();
    runners[k]->run(ptrs_k, vars);
    detail::stats_storage().kernels_launched++;
    if (debug >= 1) {
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "*** %-6s %-28s %10.1f us\n", dev->name().c_str(), runners[k]->name.c_str(), us);
    }
  }
  return out;
}

} // namespace tg
