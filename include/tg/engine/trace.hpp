#pragma once
// What the run-time front end reads of the engine's state while tg::jit records a call or
// tg::export_model traces a method (realize.hpp, jit.hpp and export/ set it).
#include <string>
#include <vector>

#include "../util/rc.hpp"

namespace tg {

class Device;
struct LazyNode; // (tensor/lazy.hpp)

namespace detail {
/// While tg::export_model traces a method: the device of its input placeholders (buffers with no
/// data) and the method's name. A realize that reads a placeholder is refused: an exported method
/// is one graph, computed where it runs, with no value read back on the way. tg::assign records
/// its (target, value) pairs in `assigns` instead of running them: the method's state updates.
struct ExportTrace {
  const Device* placeholders = nullptr;
  std::string method;
  struct Assign {
    Rc<LazyNode> target, value;
    int call = 0; // which tg::assign call of the method
  };
  std::vector<Assign> assigns;
  int assign_calls = 0;
};
inline ExportTrace*& active_export() {
  thread_local ExportTrace* t = nullptr;
  return t;
}
/// What a function built, as tg::jit compares calls: each kernel launched (name and source, so
/// constants count) and the content of each host upload, in order.
struct Trace {
  std::vector<std::string> steps;
  std::vector<std::string> sites; // per node of the graph being realized: where a constant was made
};
inline Trace*& active_trace() {
  thread_local Trace* t = nullptr;
  return t;
}
} // namespace detail

} // namespace tg
