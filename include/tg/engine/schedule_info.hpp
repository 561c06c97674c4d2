#pragma once
// tg::schedule: what realizing tensors would do, without running it (<tg/schedule.hpp>).
#include "../codegen/pipeline.hpp"
#include "../schedule/memory.hpp"
#include "../tensor/tensor.hpp"

namespace tg {

/// What realizing these tensors would do, without running it (like tinygrad's
/// Tensor.schedule()): the graph, its kernels and memory plan, and each kernel as the pass list
/// makes it for a target: lowered, then after the device passes (what the device runs), and its
/// source.
struct ScheduleInfo {
  Graph graph;
  Schedule schedule;
  MemoryPlan memory;
  std::vector<Program> lowered;     // per kernel: after lower
  std::vector<Program> programs;    // per kernel: after the device passes
  std::vector<std::string> sources; // per kernel: rendered in the target's dialect
  std::size_t kernels() const { return schedule.kernels.size(); }
};
/// The schedule for a target (without TG_BEAM's search).
TG_API ScheduleInfo schedule(const std::vector<Tensor>& ts, const Target& target);
/// The schedule a device runs: by default the tensors' own (the first one's).
TG_API ScheduleInfo schedule(const std::vector<Tensor>& ts, const std::string& device = "");

} // namespace tg
