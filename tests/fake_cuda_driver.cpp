// A stand-in for the CUDA driver (libcuda.so.1), loaded by tg through TG_LIBCUDA in
// test_cuda_graph: one device of compute capability 9.0 whose memory is host memory and whose
// kernels do not run. It records the calls that matter to tg::jit's CUDA graphs as lines of a log
// (tg_fake_cuda_take_log), so that a test checks what tg would ask of a real driver: what runs
// launch by launch, what a stream capture records, and which graph each replay launches.
// Declarations are this file's own (pointers and ints in the driver's calling convention).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Node {
  std::string text; // "kernel NAME GXxGYxGZ/B" or "copy BYTES"
  void *dst = nullptr, *src = nullptr;
  std::size_t bytes = 0;
};
using Graph = std::vector<Node>;

struct State {
  std::string log;
  bool capturing = false;
  Graph captured;
  std::map<std::uintptr_t, std::unique_ptr<Graph>> execs; // by handle
  std::uintptr_t next_exec = 1;
  bool fail_updates = false;
};
State& state() {
  static State s;
  return s;
}
void note(const std::string& line) { state().log += line + "\n"; }

/// A copy runs now, or becomes a node of the graph being captured.
int copy(void* dst, const void* src, std::size_t bytes) {
  if (state().capturing) {
    state().captured.push_back(
        {"copy " + std::to_string(bytes), dst, const_cast<void*>(src), bytes});
    return 0;
  }
  std::memcpy(dst, src, bytes);
  return 0;
}

} // namespace

#define TG_FAKE extern "C" __attribute__((visibility("default"))) int

// ---- what the test reads and sets
extern "C" __attribute__((visibility("default"))) const char* tg_fake_cuda_take_log() {
  static std::string taken;
  taken = std::move(state().log);
  state().log.clear();
  return taken.c_str();
}
/// Graphs are numbered from 1 again (once the earlier ones are destroyed), the log emptied.
extern "C" __attribute__((visibility("default"))) void tg_fake_cuda_reset() {
  state().next_exec = state().execs.empty() ? 1 : state().execs.rbegin()->first + 1;
  state().log.clear();
}
extern "C" __attribute__((visibility("default"))) void tg_fake_cuda_fail_updates(int on) {
  state().fail_updates = on != 0;
}

// ---- the device
TG_FAKE cuInit(unsigned) { return 0; }
TG_FAKE cuDriverGetVersion(int* v) {
  *v = 13000;
  return 0;
}
TG_FAKE cuGetErrorName(int, const char** s) {
  *s = "CUDA_ERROR_FAKE";
  return 0;
}
TG_FAKE cuGetErrorString(int, const char** s) {
  *s = "an error of the fake driver";
  return 0;
}
TG_FAKE cuDeviceGetCount(int* n) {
  *n = 1;
  return 0;
}
TG_FAKE cuDeviceGet(int* d, int i) {
  *d = i;
  return 0;
}
TG_FAKE cuDeviceGetName(char* name, int n, int) {
  std::strncpy(name, "tg fake CUDA device", std::size_t(n));
  return 0;
}
TG_FAKE cuDeviceGetAttribute(int* v, int attribute, int) {
  switch (attribute) {
  case 1:
    *v = 1024;
    break; // threads a block
  case 5:
    *v = 2147483647;
    break; // grid x
  case 6:
  case 7:
    *v = 65535;
    break; // grid y, z
  case 16:
    *v = 132;
    break; // multiprocessors
  case 75:
    *v = 9;
    break; // compute capability 9.0
  case 76:
    *v = 0;
    break;
  default:
    *v = 0;
  }
  return 0;
}
TG_FAKE cuDevicePrimaryCtxRetain(void** ctx, int) {
  static int context;
  *ctx = &context;
  return 0;
}
TG_FAKE cuDevicePrimaryCtxRelease_v2(int) { return 0; }
TG_FAKE cuCtxSetCurrent(void*) { return 0; }

// ---- memory: host memory
TG_FAKE cuMemAlloc_v2(void** p, std::size_t n) {
  *p = std::aligned_alloc(256, (n + 255) / 256 * 256);
  return *p ? 0 : 2;
}
TG_FAKE cuMemFree_v2(void* p) {
  std::free(p);
  return 0;
}
TG_FAKE cuMemcpyHtoDAsync_v2(void* dst, const void* src, std::size_t n, void*) {
  std::memcpy(dst, src, n);
  return 0;
}
TG_FAKE cuMemcpyDtoHAsync_v2(void* dst, const void* src, std::size_t n, void*) {
  std::memcpy(dst, src, n);
  return 0;
}
TG_FAKE cuMemcpyDtoDAsync_v2(void* dst, const void* src, std::size_t n, void*) {
  if (!state().capturing) note("copy " + std::to_string(n));
  return copy(dst, src, n);
}

// ---- kernels: a function is its name; launches are logged, not run
TG_FAKE cuModuleLoadData(void** m, const void*) {
  static int module;
  *m = &module;
  return 0;
}
TG_FAKE cuModuleUnload(void*) { return 0; }
TG_FAKE cuModuleGetFunction(void** f, void*, const char* name) {
  static std::map<std::string, std::unique_ptr<std::string>> names;
  auto& n = names[name];
  if (!n) n = std::make_unique<std::string>(name);
  *f = n.get();
  return 0;
}
TG_FAKE cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned,
                       unsigned, unsigned, void*, void**, void**) {
  std::string text = "kernel " + *static_cast<std::string*>(f) + " " + std::to_string(gx) + "x" +
                     std::to_string(gy) + "x" + std::to_string(gz) + "/" + std::to_string(bx);
  if (state().capturing)
    state().captured.push_back({text});
  else
    note(text);
  return 0;
}

// ---- streams and events
TG_FAKE cuStreamCreate(void** s, unsigned) {
  static int stream;
  *s = &stream;
  return 0;
}
TG_FAKE cuStreamDestroy_v2(void*) { return 0; }
TG_FAKE cuStreamSynchronize(void*) { return 0; }
TG_FAKE cuEventCreate(void** e, unsigned) {
  static int event;
  *e = &event;
  return 0;
}
TG_FAKE cuEventDestroy_v2(void*) { return 0; }
TG_FAKE cuEventRecord(void*, void*) { return state().capturing ? 900 : 0; }
TG_FAKE cuEventSynchronize(void*) { return 0; }
TG_FAKE cuEventElapsedTime_v2(float* ms, void*, void*) {
  *ms = 0;
  return 0;
}

// ---- graphs: a graph is the list of what was captured, in order
TG_FAKE cuStreamBeginCapture_v2(void*, int mode) {
  if (state().capturing) return 900; // (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
  state().capturing = true;
  state().captured.clear();
  note("begin capture (mode " + std::to_string(mode) + ")");
  return 0;
}
TG_FAKE cuStreamEndCapture(void*, void** graph) {
  if (!state().capturing) return 901;
  state().capturing = false;
  auto* g = new Graph(std::move(state().captured));
  state().captured.clear();
  std::string line = "end capture:";
  for (const Node& n : *g) line += " [" + n.text + "]";
  note(line);
  *graph = g;
  return 0;
}
TG_FAKE cuGraphDestroy(void* graph) {
  delete static_cast<Graph*>(graph);
  return 0;
}
TG_FAKE cuGraphInstantiateWithFlags(std::uintptr_t* exec, void* graph, unsigned long long) {
  *exec = state().next_exec++;
  state().execs[*exec] = std::make_unique<Graph>(*static_cast<Graph*>(graph));
  note("instantiate " + std::to_string(*exec));
  return 0;
}
TG_FAKE cuGraphExecUpdate_v2(std::uintptr_t exec, void* graph, void* info) {
  std::memset(info, 0, 24);
  Graph& old = *state().execs.at(exec);
  const Graph& now = *static_cast<Graph*>(graph);
  bool same = !state().fail_updates && old.size() == now.size();
  for (std::size_t i = 0; same && i < old.size(); ++i)
    same = old[i].text.substr(0, old[i].text.find(' ', 7)) ==
           now[i].text.substr(0, now[i].text.find(' ', 7)); // the same kernel or a copy
  note("update " + std::to_string(exec) + (same ? " ok" : " refused"));
  if (!same) return 910; // CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
  old = now;
  return 0;
}
TG_FAKE cuGraphLaunch(std::uintptr_t exec, void*) {
  note("launch graph " + std::to_string(exec));
  for (const Node& n : *state().execs.at(exec))
    if (n.bytes) std::memcpy(n.dst, n.src, n.bytes);
  return 0;
}
TG_FAKE cuGraphExecDestroy(std::uintptr_t exec) {
  state().execs.erase(exec);
  note("destroy graph " + std::to_string(exec));
  return 0;
}
