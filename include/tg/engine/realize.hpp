#pragma once
// realize: run a Graph on a device: the pass list (codegen/pipeline.hpp) for the device's target,
// the device's compiler, then the launches. TG_DEBUG=2 prints the schedule, 3 the sources too, 4
// the graph and the IR after each pass.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <unordered_map>

#include "../runtime/host.hpp"
#include "../runtime/launch.hpp"
#include "../runtime/precision.hpp"
#include "../schedule/memory.hpp"
#include "../util/rc.hpp"
#include "beam.hpp"
#include "trace.hpp"

namespace tg {

struct LazyNode; // (tensor/lazy.hpp)

/// What a realize produces: a buffer for every node the caller asked to keep.
struct Realized {
  std::vector<Rc<Buffer>> buffers; // per node (null where not kept)
};

namespace detail {
/// One step of device work, as the JIT records it: a kernel launch, or a buffer copy.
struct Launch {
  Rc<Runner> runner; // null: copy buffers[1] into buffers[0]
  std::vector<Rc<Buffer>> buffers;
  std::vector<Var> vars; // the program's symbolic sizes, with their values at capture
  std::size_t copy_bytes = 0;
};
/// Launches recorded while a JIT captures (allocations are sized for the largest bound of
/// every symbolic size, so a replay may use any value within bounds).
struct Capture {
  std::vector<Launch> launches;
};
inline Capture*& active_capture() {
  thread_local Capture* c = nullptr;
  return c;
}
/// The constants a kernel computes with that the user's code made, one line each ("constant 2
/// (`*` at main.cpp:12)"): a step of the trace starts with them, so a changed host value is named
/// with its call site.
inline std::string constant_sites(const Graph& g, const NodeFlags& materialized, const Kernel& k,
                                  const std::vector<std::string>& sites) {
  std::string out;
  std::vector<std::uint8_t> seen(g.size(), 0);
  std::vector<int> stack = k.outputs;
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (seen[std::size_t(n)]) continue;
    seen[std::size_t(n)] = 1;
    const Node& node = g[n];
    if (node.op == Op::Const && !sites[std::size_t(n)].empty()) {
      char v[32];
      if (is_float(node.dtype))
        std::snprintf(v, sizeof v, "%.9g", node.value.f);
      else
        std::snprintf(v, sizeof v, "%lld", static_cast<long long>(node.value.i));
      out += "constant " + std::string(v) + " (" + sites[std::size_t(n)] + ")\n";
    }
    for (int src : node.src)
      if (src >= 0 && !materialized[std::size_t(src)]) stack.push_back(src);
  }
  return out;
}

/// Whether kernel `k` reads buffer node `b` only at the index it writes (elementwise paths, no
/// views or reductions in between), so it may write its results into b's memory.
inline bool reads_in_place(const Graph& g, const NodeFlags& mat, const Kernel& k, int b) {
  const int root = k.root;
  auto output = [&](int n) {
    return std::find(k.outputs.begin(), k.outputs.end(), n) != k.outputs.end();
  };
  // (node, whether a view or a reduction lies between it and the output)
  std::vector<std::pair<int, bool>> stack;
  for (int o : k.outputs) stack.push_back({o, false});
  std::vector<std::uint8_t> seen(2 * g.size(), 0);
  while (!stack.empty()) {
    auto [n, moved] = stack.back();
    stack.pop_back();
    if (n == b) {
      if (moved) return false;
      continue;
    }
    if ((mat[std::size_t(n)] && !output(n)) || seen[2 * std::size_t(n) + moved]++) continue;
    const Node& node = g[n];
    bool m = moved || node.op == Op::View || is_reduce(node.op) || !(node.shape == g[root].shape);
    for (int k = 0; k < node.nsrc(); ++k) stack.push_back({node.src[std::size_t(k)], m});
  }
  return true;
}
} // namespace detail

namespace detail {
/// What a realize derives from a graph's structure alone: its kernels, their memory plan and
/// their compiled runners.
struct Plan {
  Schedule schedule;
  MemoryPlan memory;
  std::vector<std::vector<Var>> vars;    // per kernel: the symbolic sizes it takes at launch
  std::vector<std::uint8_t> overlapping; // per kernel: Program::overlapping (never in place)
  std::vector<Rc<Runner>> runners;
  Rc<Device> device; // kept open while its runners may run (and its address unique)
};
} // namespace detail

/// A pass log that writes the IR after each pass of the pass list as text, each pass named, with
/// its time (unless `times` is off), or "unchanged" where it left its input as it was. TG_DEBUG=4
/// prints one to stderr; the golden tests compare one with tests/golden/.
class PassDump {
public:
  /// To `out` as it goes, or (out == nullptr) into text.
  explicit PassDump(std::FILE* out = nullptr, bool times = true) : out_(out), times_(times) {}
  std::string text;
  std::size_t kernel = std::size_t(-1); // the kernel being compiled (-1: the graph passes)
  std::chrono::steady_clock::time_point start() const { return std::chrono::steady_clock::now(); }
  template <class F>
  void done(const char* pass, std::chrono::steady_clock::time_point t0, F&& describe) {
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::string ir(describe().view());
    std::string line = "=== ";
    if (kernel != std::size_t(-1)) line += "kernel " + std::to_string(kernel) + ": ";
    line += std::string("after ") + pass;
    if (times_) {
      char t[32];
      std::snprintf(t, sizeof t, " (%.1f us)", us);
      line += t;
    }
    const bool same = ir == last_;
    line += same ? ": unchanged\n" : "\n";
    if (!same) line += ir;
    last_ = std::move(ir);
    if (out_)
      std::fputs(line.c_str(), out_);
    else
      text += line;
  }

private:
  std::FILE* out_;
  bool times_;
  std::string last_;
};

namespace detail {
/// The kernels of a plan: the pass list for the device's target, with TG_BEAM's search.
template <class Log>
std::vector<KernelCode> compile_kernels(const Graph& g, const Schedule& s, const Target& target,
                                        Device& dev, Log& log) {
  std::vector<KernelCode> kernels;
  kernels.reserve(s.kernels.size());
  static const int beam = int(env::get_int("TG_BEAM", 0));
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    log.kernel = k;
    kernels.push_back(beam > 1 ? beam_compile(g, s, k, target, dev, beam, log)
                               : compile_kernel(g, s, k, target, log));
  }
  return kernels;
}

inline Rc<const Plan> make_plan(const Graph& g, const NodeFlags& keep, const Rc<Device>& dev,
                                int debug) {
  auto made = make_rc<Plan>();
  made->device = dev;
  const Target target = dev->target();
  auto plan = [&](auto& log) {
    made->schedule = schedule_graph(g, target, log);
    made->memory = plan_buffers(g, made->schedule, keep, log);
    return compile_kernels(g, made->schedule, target, *dev, log);
  };
  std::vector<KernelCode> kernels;
  if (debug >= 4) {
    PassDump log(stderr);
    kernels = plan(log);
  } else {
    struct : NoPassLog {
      std::size_t kernel = 0;
    } log;
    kernels = plan(log);
  }
  if (debug == 2 || debug == 3) std::cerr << dump(g, made->schedule).view();
  std::vector<const KernelCode*> ptrs;
  for (const KernelCode& c : kernels) ptrs.push_back(&c);
  made->runners = dev->prepare(ptrs);
  for (const KernelCode& c : kernels) {
    made->vars.push_back(c.program.vars);
    made->overlapping.push_back(c.program.overlapping);
  }
  if (debug == 3)
    for (auto& r : made->runners)
      if (!r->source.empty()) std::cerr << r->source << "\n";
  return made;
}

/// A key for everything a Plan depends on: the graph's nodes, buffers and outputs, with symbolic
/// sizes by name and bounds (their values are launch arguments), which nodes are kept, the device.
/// Words, not a string: appending them is what a realize of a small cached graph spent most on.
using PlanKey = std::vector<std::int64_t>;

/// Writes a PlanKey. Words go through a small block: a push_back per word (not inlined) cost more
/// than the rest of building a key.
class PlanKeyWriter {
public:
  explicit PlanKeyWriter(PlanKey& key) : key_(key) { key_.clear(); }
  void put(std::int64_t v) {
    if (n_ == block_.size()) flush();
    block_[n_++] = v;
  }
  void put_sint(const SInt& d) {
    put(d.constant());
    put(std::int64_t(d.terms().size()));
    for (const Term& t : d.terms()) {
      put(t.coef);
      put(std::int64_t(t.vars.size()));
      for (const Var& v : t.vars) {
        // the whole zero-padded name, as Name's operator== compares it
        std::int64_t name[sizeof v.name.chars / sizeof(std::int64_t)] = {};
        static_assert(sizeof name == sizeof v.name.chars);
        std::memcpy(name, v.name.chars.data(), sizeof name);
        for (std::int64_t word : name) put(word);
        put(v.lo);
        put(v.hi);
      }
    }
  }
  void put_shape(const Shape& sh) {
    put(std::int64_t(sh.size()));
    for (const SInt& d : sh) put_sint(d);
  }
  void flush() {
    key_.insert(key_.end(), block_.begin(), block_.begin() + std::ptrdiff_t(n_));
    n_ = 0;
  }

private:
  PlanKey& key_;
  std::array<std::int64_t, 64> block_;
  std::size_t n_ = 0;
};

inline void plan_key(const Graph& g, const NodeFlags& keep, const Device& device, PlanKey& k) {
  PlanKeyWriter w(k);
  // the device object itself: runners belong to the device that prepared them (two devices of
  // one kind, each opened under its own name, share no plans)
  w.put(std::int64_t(reinterpret_cast<std::uintptr_t>(&device)));
  w.put(detail::matmul_precision()); // (the target's choices depend on it)
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    w.put(std::int64_t(n.op) << 8 | std::int64_t(n.dtype));
    for (int src : n.src) w.put(src);
    w.put_shape(n.shape);
    w.put(std::int64_t(n.moves.size()));
    for (const Movement& m : n.moves) {
      w.put(std::int64_t(m.op));
      w.put_shape(m.a);
      w.put_shape(m.b);
    }
    w.put(std::int64_t(n.axes.size()));
    for (int a : n.axes) w.put(a);
    std::int64_t f = 0;
    std::memcpy(&f, &n.value.f, sizeof f);
    w.put(f);
    w.put(n.value.i);
    w.put(n.arg);
    w.put(keep[i]);
  }
  for (const BufferInfo& b : g.buffers) {
    w.put(std::int64_t(b.dtype));
    w.put_sint(b.numel);
  }
  for (int o : g.outputs) w.put(o);
  w.flush();
}
inline PlanKey plan_key(const Graph& g, const NodeFlags& keep, const Device& device) {
  PlanKey k;
  plan_key(g, keep, device, k);
  return k;
}
struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const {
    // four independent multiply chains (one chain's latency was most of a lookup), then a final
    // mix so that every word reaches every bit
    constexpr std::uint64_t mul = 0x9E3779B97F4A7C15ull;
    std::uint64_t h[4] = {k.size(), 1, 2, 3};
    std::size_t i = 0;
    for (; i + 4 <= k.size(); i += 4)
      for (std::size_t lane = 0; lane < 4; ++lane)
        h[lane] = (h[lane] ^ std::uint64_t(k[i + lane])) * mul;
    for (; i < k.size(); ++i) h[0] = (h[0] ^ std::uint64_t(k[i])) * mul;
    std::uint64_t r = h[0];
    for (std::size_t lane = 1; lane < 4; ++lane) r = (r ^ (r >> 29) ^ h[lane]) * mul;
    return std::size_t(r ^ (r >> 32));
  }
};

/// The plan for `g`, from the plans of earlier realizes with the same structure when there is
/// one: realizing the same computation again (an eager training loop, a model called once per
/// token) then skips fuse, lower, render and the kernel cache. TG_DEBUG >= 2 plans every realize
/// afresh, so that each prints its schedule and programs.
inline Rc<const Plan> plan_for(const Graph& g, const NodeFlags& keep, const Rc<Device>& dev,
                               int debug) {
  static std::mutex m;
  static std::unordered_map<PlanKey, Rc<const Plan>, PlanKeyHash> plans;
  if (debug >= 2) return make_plan(g, keep, dev, debug);
  thread_local PlanKey key; // reused: a lookup that finds its plan allocates nothing
  plan_key(g, keep, *dev, key);
  {
    std::lock_guard<std::mutex> lock(m);
    if (auto it = plans.find(key); it != plans.end()) {
      stats_storage().plans_reused++;
      return it->second;
    }
  }
  PlanKey missed = key; // a copy: make_plan may realize on this thread, reusing `key`
  auto made = make_plan(g, keep, dev, debug);
  std::lock_guard<std::mutex> lock(m);
  if (plans.size() >= 4096) plans.clear(); // a bound, for programs that make endless shapes
  plans.emplace(std::move(missed), made);
  return made;
}
} // namespace detail

/// Runs `g` on `dev`. `inputs[i]` backs graph buffer i; `keep[n]` marks results to return;
/// `targets[n]`, when given and set, is the existing buffer node n's result must end up in.
inline Realized realize_graph(const Graph& g, const std::vector<Rc<Buffer>>& inputs,
                              const NodeFlags& keep, const Rc<Device>& dev,
                              const std::vector<Rc<Buffer>>* targets = nullptr) {
  if (const detail::ExportTrace* e = detail::active_export())
    for (const auto& b : inputs)
      if (b && b->device.get() == e->placeholders) {
        std::string ops;
        for (int o : g.outputs) ops += (ops.empty() ? "" : ", ") + std::string(op_name(g[o].op));
        throw export_error("tg.export: method '" + e->method +
                           "' computes a value from its inputs before it returns (" + ops +
                           "): an item(), to_vector() or a branch on a tensor's value inside the "
                           "method. An exported method is one graph with no host read "
                           "in the middle: move that read out of the method.");
      }
  const int debug = env::debug();
  detail::Capture* capture = detail::active_capture();
  detail::stats_storage().realizes++;
  if (debug >= 4) std::cerr << dump(g).view();
  auto cached = detail::plan_for(g, keep, dev, debug);
  const Schedule& s = cached->schedule;
  const MemoryPlan& plan = cached->memory;
  const auto& runners = cached->runners;
  // symbolic sizes take this realize's values (the plan may have been made by another)
  std::vector<Var> bound = g.vars();
  std::vector<std::int64_t> values;
  for (const Var& v : bound) values.push_back(v.value);

  Realized out;
  out.buffers.assign(g.size(), nullptr);
  std::vector<Rc<Buffer>> temps(plan.slot_bytes.size());
  // sizes: the bound values, or under capture the largest values the bounds allow
  auto size_of = [&](const SInt& s) {
    return capture ? s.max_value() : eval_sint(s, bound, values);
  };
  // a target is written in place unless a later kernel still reads its old value
  std::vector<int> last_reader(g.size(), -1);
  for (std::size_t k = 0; k < s.kernels.size(); ++k)
    for (int in : s.kernels[k].inputs) last_reader[std::size_t(in)] = int(k);
  std::vector<std::pair<Rc<Buffer>, Rc<Buffer>>> copies; // (target, fresh)
  auto in_place = [&](std::size_t k, const Rc<Buffer>& target) {
    for (std::size_t i = 0; i < g.size(); ++i) {
      const Node& n = g.nodes[i];
      if (n.op != Op::Buffer || inputs[std::size_t(n.arg)] != target) continue;
      if (last_reader[i] > int(k)) return false;
      if (std::find(s.kernels[k].inputs.begin(), s.kernels[k].inputs.end(), int(i)) !=
              s.kernels[k].inputs.end() &&
          (cached->overlapping[k] ||
           !detail::reads_in_place(g, s.materialized, s.kernels[k], int(i))))
        return false;
    }
    return true;
  };
  auto buffer_of = [&](int node) -> Rc<Buffer> {
    const Node& n = g[node];
    if (n.op == Op::Buffer) return inputs[std::size_t(n.arg)];
    if (plan.slot[std::size_t(node)] >= 0) return temps[std::size_t(plan.slot[std::size_t(node)])];
    return out.buffers[std::size_t(node)];
  };
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    const Kernel& kern = s.kernels[k];
    for (int o : kern.outputs) {
      const Node& n = g[o];
      int slot = plan.slot[std::size_t(o)];
      const Rc<Buffer>* target = targets ? &(*targets)[std::size_t(o)] : nullptr;
      if (target && *target) {
        if (in_place(k, *target)) {
          out.buffers[std::size_t(o)] = *target;
        } else {
          out.buffers[std::size_t(o)] = make_rc<Buffer>(dev, n.dtype, size_of(prod(n.shape)));
          copies.push_back({*target, out.buffers[std::size_t(o)]});
        }
      } else if (slot >= 0) {
        auto& t = temps[std::size_t(slot)];
        if (!t) t = make_rc<Buffer>(dev, DType::UInt8, size_of(plan.slot_bytes[std::size_t(slot)]));
      } else {
        out.buffers[std::size_t(o)] = make_rc<Buffer>(dev, n.dtype, size_of(prod(n.shape)));
      }
    }
    if (prod(g[kern.root].shape).eval() == 0) continue;
    std::vector<void*> ptrs_k;
    for (int o : kern.outputs) ptrs_k.push_back(buffer_of(o)->ptr);
    for (int in : kern.inputs) ptrs_k.push_back(buffer_of(in)->ptr);
    std::vector<std::int64_t> vars;
    std::vector<Var> kernel_vars = cached->vars[k];
    for (Var& v : kernel_vars) {
      v.value = eval_sint(SInt(v), bound, values);
      vars.push_back(v.value);
    }
    auto t0 = std::chrono::steady_clock::now();
    runners[k]->run(ptrs_k, vars);
    detail::stats_storage().kernels_launched++;
    if (detail::Trace* trace = detail::active_trace())
      trace->steps.push_back("kernel " + runners[k]->name + "\n" +
                             (trace->sites.size() == g.size()
                                  ? detail::constant_sites(g, s.materialized, kern, trace->sites)
                                  : std::string()) +
                             runners[k]->source);
    if (capture) {
      detail::Launch l{runners[k], {}, kernel_vars, 0};
      for (int o : kern.outputs) l.buffers.push_back(buffer_of(o));
      for (int in : kern.inputs) l.buffers.push_back(buffer_of(in));
      capture->launches.push_back(std::move(l));
    }
    if (debug >= 1) {
      double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "*** %-6s %3zu %-28s %10.1f us\n", dev->name().c_str(), k,
                   runners[k]->name.c_str(), us);
    }
  }
  for (auto& [target, fresh] : copies) {
    std::size_t bytes = std::min(target->nbytes(), fresh->nbytes());
    dev->copy(target->ptr, fresh->ptr, bytes);
    if (capture) capture->launches.push_back(detail::Launch{nullptr, {target, fresh}, {}, bytes});
  }
  if (targets)
    for (std::size_t i = 0; i < g.size(); ++i)
      if ((*targets)[i] && out.buffers[i]) out.buffers[i] = (*targets)[i];
  return out;
}

} // namespace tg
