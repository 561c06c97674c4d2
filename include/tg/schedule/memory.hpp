#pragma once
// memory: [Kernel] -> buffer plan. Intermediate results that nobody keeps share buffers once
// their last reader has run (a buffer is never reused by the kernel that reads it, so a
// kernel's inputs and output never alias).
#include "fuse.hpp"

namespace tg {

struct MemoryPlan {
  std::vector<int> slot;        // per node: temporary slot index, or -1 (input / kept result)
  std::vector<SInt> slot_bytes; // size of each temporary slot
  std::vector<int> free_after;  // per kernel: slots whose last reader is this kernel
};

/// `keep[i]`: node i's buffer outlives the realize (an output, or referenced by the user).
constexpr MemoryPlan plan_memory(const Graph& g, const Schedule& s, const NodeFlags& keep) {
  MemoryPlan p;
  p.slot.assign(g.size(), -1);
  std::vector<int> last_use(g.size(), -1);
  for (std::size_t k = 0; k < s.kernels.size(); ++k)
    for (int in : s.kernels[k].inputs) last_use[std::size_t(in)] = int(k);
  std::vector<int> free_slots;
  std::vector<std::vector<int>> release(s.kernels.size());
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    for (int out : s.kernels[k].outputs) { // (a kernel's outputs take distinct slots)
      if (keep[std::size_t(out)]) continue;
      const Node& n = g[out];
      SInt bytes = prod(n.shape) * SInt(itemsize(n.dtype));
      int chosen = -1;
      for (std::size_t f = 0; f < free_slots.size(); ++f) {
        const SInt& have = p.slot_bytes[std::size_t(free_slots[f])];
        bool fits = have == bytes ||
                    (have.is_const() && bytes.is_const() && have.constant() >= bytes.constant());
        if (fits) {
          chosen = free_slots[f];
          free_slots.erase(free_slots.begin() + std::ptrdiff_t(f));
          break;
        }
      }
      if (chosen < 0) {
        chosen = int(p.slot_bytes.size());
        p.slot_bytes.push_back(bytes);
      }
      p.slot[std::size_t(out)] = chosen;
      int lu = last_use[std::size_t(out)];
      if (lu >= 0)
        release[std::size_t(lu)].push_back(chosen);
      else
        release[k].push_back(chosen); // never read: free at once
    }
    for (int r : release[k]) free_slots.push_back(r);
  }
  p.free_after.assign(s.kernels.size(), 0);
  for (std::size_t k = 0; k < s.kernels.size(); ++k) p.free_after[k] = int(release[k].size());
  return p;
}

} // namespace tg
