#pragma once
// tg::assign and tg::jit's capture and replay (declared in engine/jit.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "../engine/build.hpp"
#include "../engine/jit.hpp"
#include "../graph/sint_text.hpp"
#include "../util/rc.hpp"

namespace tg {

TG_API void assign(const std::vector<std::pair<Tensor, Tensor>>& pairs,
                   const std::vector<Tensor>& realize_too, std::source_location loc) {
  std::vector<LazyPtr> nodes;
  std::vector<Rc<Buffer>> buffers;
  for (const auto& [target, value0] : pairs) {
    const LazyPtr& t = target.lazy();
    if (!t || t->op != Op::Buffer)
      detail::fail<error>(
          "assign",
          "the target must be a realized tensor that owns its buffer (not a view; call "
          "contiguous().realize() first)",
          loc);
    if (!(target.sym_shape() == value0.sym_shape()) && target.shape() != value0.shape())
      detail::fail<shape_error>("assign",
                                "value of shape " + detail::shape_of(value0) +
                                    " for a target of shape " + detail::shape_of(target),
                                loc);
    if (target.device() != value0.device())
      detail::fail<device_error>(
          "assign", "value on " + value0.device() + " for a target on " + target.device(), loc);
    Tensor v = value0.cast(target.dtype());
    if (v.is_realized() || v.lazy() == t) // already in memory: a copy kernel
      v = Tensor::make(Op::Contiguous, v.dtype(), v.sym_shape(), {v.lazy()}, v.device());
    if (std::find(nodes.begin(), nodes.end(), v.lazy()) != nodes.end())
      detail::fail<error>("assign", "one value is assigned to two targets", loc);
    nodes.push_back(v.lazy());
    buffers.push_back(t->buffer);
  }
  if (detail::ExportTrace* e = detail::active_export()) { // an exported method's state update
    for (std::size_t i = 0; i < nodes.size(); ++i)
      e->assigns.push_back({pairs[i].first.lazy(), nodes[i], e->assign_calls});
    ++e->assign_calls;
    return;
  }
  for (const Tensor& t : realize_too)
    if (std::find(nodes.begin(), nodes.end(), t.lazy()) == nodes.end()) {
      nodes.push_back(t.lazy());
      buffers.push_back(nullptr); // a fresh buffer
    }
  detail::GraphBuild b = detail::build_graph(nodes);
  if (b.order.empty()) return;
  std::vector<Rc<Buffer>> targets(b.order.size());
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (std::size_t j = 0; j < b.order.size(); ++j)
      if (b.order[j] == nodes[i]) targets[j] = buffers[i];
  Realized r = realize_graph(b.graph, b.inputs, b.keep, device(b.device), &targets);
  detail::adopt(b, r);
}

namespace detail {

struct JitCore::State {
  /// Records what runs while alive (nested: the outer trace is restored after).
  struct Tracing {
    detail::Trace* saved;
    explicit Tracing(detail::Trace& t) : saved(detail::active_trace()) {
      detail::active_trace() = &t;
    }
    ~Tracing() { detail::active_trace() = saved; }
  };

  /// A capture that built what the warm-up built is replayed. One that built something else may
  /// have met a one-time effect of the warm-up (optimizer state made on the first step), or a
  /// value read on the host that changes every call: the next call runs the function again and
  /// must build what the capture did.
  void captured(const detail::Trace& trace) {
    check_next_ = trace.steps != trace_;
    trace_ = trace.steps; // what replays must repeat
    replays_ = 0;
  }
  /// On a difference, throws and forgets the capture (the next call warms up again).
  void verify_or_forget(const detail::Trace& trace, const std::string& which) {
    try {
      verify(trace, which);
      check_next_ = false;
    } catch (...) {
      calls_ = 0;
      check_next_ = false;
      launches_.clear();
      outputs_.clear();
      input_buffers_.clear();
      input_shapes_.clear();
      input_dtypes_.clear();
      input_devices_.clear();
      slots_.clear();
      ptrs_.clear();
      segments_.clear();
      throw;
    }
  }
  void verify(const detail::Trace& trace, const std::string& which) const {
    const std::vector<std::string>& now = trace.steps;
    if (now == trace_) return;
    std::size_t k = 0;
    while (k < now.size() && k < trace_.size() && now[k] == trace_[k]) ++k;
    auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
    std::string what;
    if (k == now.size() || k == trace_.size()) {
      what = "it ran " + std::to_string(now.size()) + " steps where the earlier call ran " +
             std::to_string(trace_.size());
    } else if (first_line(now[k]) != first_line(trace_[k])) {
      what = "step " + std::to_string(k) + " is " + first_line(now[k]) + " where it was " +
             first_line(trace_[k]);
    } else { // the same kernel or upload with other code or data: show the first changed line
      std::istringstream a(now[k]), b(trace_[k]);
      std::string la, lb;
      while (std::getline(a, la) && std::getline(b, lb) && la == lb) {
      }
      auto trim = [](std::string x) {
        x.erase(0, x.find_first_not_of(" \t"));
        return x.size() > 100 ? x.substr(0, 100) + "..." : x;
      };
      what =
          "step " + std::to_string(k) + " (" + first_line(now[k]) + ") differs" +
          (now[k].rfind("upload", 0) == 0 ? " in its data"
                                          : ": `" + trim(la) + "` where it was `" + trim(lb) + "`");
    }
    throw error("tg.jit: " + which +
                " of the function built other device work than the "
                "captured call 2: " +
                what +
                ". A value read on the host inside the function (a C++ number in an op, a vector "
                "made into a tensor, an item()) changed between calls, and replays would repeat "
                "the captured one. Pass such values as tensor arguments, or keep them in a "
                "tensor changed with tg::assign.");
  }

  void check(const std::vector<Tensor>& inputs) const {
    if (inputs.size() != input_shapes_.size())
      throw error("tg.jit: called with " + std::to_string(inputs.size()) +
                  " tensors, captured with " + std::to_string(input_shapes_.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      bool same = t.dtype() == input_dtypes_[i] && t.device() == input_devices_[i] &&
                  t.ndim() == int(input_shapes_[i].size());
      for (std::size_t d = 0; same && d < input_shapes_[i].size(); ++d) {
        const SInt& cap = input_shapes_[i][d];
        const SInt& now = t.sym_shape()[d];
        if (cap.is_const())
          same = now.is_const() && now.constant() == cap.constant();
        else
          same =
              now == cap && now.eval() <= cap.max_value(); // same variable, any value within bounds
      }
      if (!same)
        throw error("tg.jit: input " + std::to_string(i) + " is " + detail::shape_of(t) + " " +
                    dtype_name(t.dtype()) + " on " + t.device() +
                    ", but the function was captured with " + detail::shape_str(input_shapes_[i]) +
                    " " + dtype_name(input_dtypes_[i]) + " on " + input_devices_[i] +
                    " (make a new tg::jit for new shapes)");
    }
  }

  void prepare_replay() {
    // per launch, which argument slots hold a captured input buffer
    for (std::size_t l = 0; l < launches_.size(); ++l)
      for (std::size_t k = 0; k < launches_[l].buffers.size(); ++k)
        for (std::size_t i = 0; i < input_buffers_.size(); ++i)
          if (launches_[l].buffers[k] == input_buffers_[i]) slots_.push_back({l, k, i});
    ptrs_.resize(launches_.size());
    for (std::size_t l = 0; l < launches_.size(); ++l)
      for (auto& b : launches_[l].buffers) ptrs_[l].push_back(b->ptr);
    // stretches of launches one device may record as a graph (TG_DEBUG's per-launch times need
    // them launched one by one)
    const bool graphs = env::get_int("TG_JIT_GRAPH", 1) != 0 && env::debug() < 1;
    for (std::size_t l = 0; l < launches_.size(); ++l) {
      const detail::Launch& launch = launches_[l];
      Rc<Device> dev;
      if (graphs && (!launch.runner || launch.runner->recordable)) dev = launch.buffers[0]->device;
      if (segments_.empty() || segments_.back().device != dev)
        segments_.push_back({l, l, dev, 0, {}});
      segments_.back().end = l + 1;
      if (launch.runner) ++segments_.back().kernels;
    }
  }

  /// Launches [begin, end) one by one; `recording`: into a LaunchGraph, so they are not counted.
  void run_launches(std::size_t begin, std::size_t end, const std::vector<Var>& bound,
                    bool recording) {
    static const int debug = env::debug();
    for (std::size_t l = begin; l < end; ++l) {
      const detail::Launch& launch = launches_[l];
      if (!launch.runner) {
        launch.buffers[0]->device->copy(ptrs_[l][0], ptrs_[l][1], launch.copy_bytes);
        continue;
      }
      std::vector<std::int64_t> vars;
      for (const Var& v : launch.vars) {
        std::int64_t value = v.value;
        for (const Var& b : bound)
          if (b == v) value = b.value;
        vars.push_back(value);
      }
      auto t0 = std::chrono::steady_clock::now();
      launch.runner->run(ptrs_[l], vars);
      if (recording) continue;
      detail::stats_storage().kernels_launched++;
      if (debug >= 1) // as realize prints them, numbered by the launch's place in the replay
        std::fprintf(
            stderr, "*** %-6s %3zu %-28s %10.1f us (replay)\n",
            launch.buffers[0]->device->name().c_str(), l, launch.runner->name.c_str(),
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
    }
  }

  /// A stretch of the replay that one device records as a LaunchGraph, with the graphs recorded
  /// for the input buffers and sizes met so far (the most recently used last).
  struct Segment {
    std::size_t begin, end;
    Rc<Device> device; // null: launched one by one
    std::size_t kernels = 0;
    std::vector<std::pair<std::vector<std::int64_t>, Rc<LaunchGraph>>> graphs;
  };
  /// Graphs kept per stretch: inputs made fresh each call mostly come back in the buffers the
  /// allocator hands out again (two alternate), so a few graphs cover them without re-recording.
  static constexpr std::size_t kGraphsPerSegment = 4;

  /// Launches a stretch as its graph for these inputs, recording (or updating) one first when
  /// the inputs' buffers or sizes are new; launch by launch where the device has no graphs.
  void run_segment(Segment& seg, const std::vector<std::int64_t>& key,
                   const std::vector<Var>& bound) {
    auto steps = [&] { run_launches(seg.begin, seg.end, bound, true); };
    auto it = std::find_if(seg.graphs.begin(), seg.graphs.end(),
                           [&](const auto& g) { return g.first == key; });
    Rc<LaunchGraph> graph;
    if (it != seg.graphs.end()) {
      graph = it->second;
      seg.graphs.erase(it);
    } else {
      if (seg.graphs.size() >= kGraphsPerSegment) { // the least recently used, updated in place
        Rc<LaunchGraph> oldest = seg.graphs.front().second;
        seg.graphs.erase(seg.graphs.begin());
        if (oldest->update(steps)) graph = oldest;
      }
      if (!graph) graph = seg.device->record(steps);
      if (!graph) { // the device has no graphs
        seg.device = nullptr;
        run_launches(seg.begin, seg.end, bound, false);
        return;
      }
    }
    seg.graphs.push_back({key, graph});
    graph->launch();
    detail::stats_storage().kernels_launched += std::int64_t(seg.kernels);
    detail::stats_storage().graphs_launched++;
  }

  std::vector<Tensor> replay(const std::vector<Tensor>& inputs) {
    for (auto [l, k, i] : slots_) ptrs_[l][k] = inputs[i].lazy()->buffer->ptr;
    // symbolic sizes take their values from the inputs
    std::vector<Var> bound;
    for (const Tensor& t : inputs)
      for (const SInt& d : t.sym_shape()) d.collect_vars(bound);
    std::vector<std::int64_t> key; // what a recorded graph depends on: input buffers, sizes
    for (Segment& seg : segments_) {
      if (!seg.device) {
        run_launches(seg.begin, seg.end, bound, false);
        continue;
      }
      if (key.empty()) { // (only where a device records graphs)
        for (const Tensor& t : inputs)
          key.push_back(std::int64_t(reinterpret_cast<std::uintptr_t>(t.lazy()->buffer->ptr)));
        for (const Var& v : bound) key.push_back(v.value);
      }
      run_segment(seg, key, bound);
    }
    std::vector<Tensor> outs;
    for (const LazyPtr& o : outputs_) {
      Shape s = o->shape;
      for (SInt& d : s) d = substitute(d, bound);
      Tensor t = Tensor::make(Op::Buffer, o->dtype, s, {}, o->device);
      t.lazy()->buffer = o->buffer;
      outs.push_back(t);
    }
    return outs;
  }
  static SInt substitute(const SInt& d, const std::vector<Var>& bound) {
    if (d.is_const()) return d;
    SInt r = d.constant();
    for (const Term& t : d.terms()) {
      SInt p = t.coef;
      for (Var v : t.vars) {
        for (const Var& b : bound)
          if (b == v) v.value = b.value;
        p = p * SInt(v);
      }
      r = r + p;
    }
    return r;
  }

  int calls_ = 0;
  std::int64_t replays_ = 0;
  bool check_next_ = false; // the capture differs from the warm-up: check the next call
  /// TG_JIT_VERIFY=N: every Nth replay runs the function instead and compares what it builds.
  std::int64_t verify_every_ = std::max<std::int64_t>(0, env::get_int("TG_JIT_VERIFY", 0));
  std::vector<std::string> trace_; // what the last checked call built
  std::vector<detail::Launch> launches_;
  std::vector<std::vector<void*>> ptrs_;
  std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> slots_;
  std::vector<Segment> segments_;
  std::vector<Rc<Buffer>> input_buffers_;
  std::vector<Shape> input_shapes_;
  std::vector<DType> input_dtypes_;
  std::vector<std::string> input_devices_;
  std::vector<LazyPtr> outputs_;
};

TG_API JitCore::JitCore() : s_(make_rc<State>()) {}

TG_API std::size_t JitCore::captured_launches() const { return s_->launches_.size(); }

TG_API std::vector<Tensor>
JitCore::call(std::vector<Tensor> inputs,
              detail::FunctionRef<std::vector<Tensor>(const std::vector<Tensor>&)> run) {
  State& s = *s_;
  for (Tensor& t : inputs) { // inputs become plain buffers, outside any capture
    if (t.lazy()->op != Op::Buffer) t = t.contiguous().realize();
  }
  if (s.calls_ >= 2) {
    s.check(inputs);
    ++s.replays_;
    // the first replay after a capture unlike its warm-up, and with TG_JIT_VERIFY=N every Nth,
    // runs the function instead and compares what it builds with the capture
    if (s.check_next_ || (s.verify_every_ > 0 && s.replays_ % s.verify_every_ == 0)) {
      Trace trace;
      State::Tracing on(trace);
      std::vector<Tensor> outs = run(inputs);
      s.verify_or_forget(trace, "call " + std::to_string(s.replays_ + 2));
      return outs;
    }
    return s.replay(inputs);
  }
  if (s.calls_++ == 0) { // warm-up: compiles everything
    Trace trace;
    State::Tracing on(trace);
    std::vector<Tensor> outs = run(inputs);
    s.trace_ = std::move(trace.steps);
    return outs;
  }
  // capture
  Capture cap;
  active_capture() = &cap;
  Trace trace;
  State::Tracing on(trace);
  struct Reset {
    ~Reset() { active_capture() = nullptr; }
  } reset;
  for (const Tensor& t : inputs) {
    s.input_buffers_.push_back(t.lazy()->buffer);
    s.input_shapes_.push_back(t.sym_shape());
    s.input_dtypes_.push_back(t.dtype());
    s.input_devices_.push_back(t.device());
  }
  std::vector<Tensor> outs = run(inputs);
  for (const Tensor& o : outs) s.outputs_.push_back(o.lazy());
  s.launches_ = std::move(cap.launches);
  s.captured(trace);
  s.prepare_replay();
  return outs;
}

} // namespace detail

} // namespace tg
