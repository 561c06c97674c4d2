#pragma once
// The `cuda` export target: <prefix>.cu, the CUDA device's kernels for every method (one
// `extern "C" __global__` function each, <prefix>_k<N>), and a host in C, <prefix>.h and
// <prefix>.c, with the c target's API. The host opens the driver (libcuda.so.1) with dlopen, as
// tg's CUDA runtime does, loads the module (the PTX NVRTC made of <prefix>.cu at export, embedded
// in <prefix>.c, or a CUBIN or PTX file the user built with nvcc), copies the weights to device
// memory, and runs each method over an arena planned once: inputs copied in, the kernels launched
// in order on the default stream, outputs copied out.
#include "../runtime/cuda.hpp"
#include "c.hpp"

namespace tg {

namespace detail {

/// The driver API the host calls, declared in it (no cuda.h).
inline const char* cuda_host_driver = R"C(
/* ---- the CUDA driver, opened with dlopen (types and calls declared here: no cuda.h) ---- */
#include <dlfcn.h>
typedef unsigned long long tg_ptr; /* CUdeviceptr */
static struct {
  void* lib;
  char error[200];
  int (*cuInit)(unsigned);
  int (*cuGetErrorString)(int, const char**);
  int (*cuDeviceGet)(int*, int);
  int (*cuDeviceGetAttribute)(int*, int, int);
  int (*cuDevicePrimaryCtxRetain)(void**, int);
  int (*cuDevicePrimaryCtxRelease)(int);
  int (*cuCtxSetCurrent)(void*);
  int (*cuModuleLoadData)(void**, const void*);
  int (*cuModuleUnload)(void*);
  int (*cuModuleGetFunction)(void**, void*, const char*);
  int (*cuMemAlloc)(tg_ptr*, size_t);
  int (*cuMemFree)(tg_ptr);
  int (*cuMemcpyHtoD)(tg_ptr, const void*, size_t);
  int (*cuMemcpyDtoH)(void*, tg_ptr, size_t);
  int (*cuMemcpyDtoD)(tg_ptr, tg_ptr, size_t);
  int (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void*, void**, void**);
} tg_cu;

/* Opens the driver once: 0, or 1 with the reason in tg_cu.error. */
static int tg_cu_open(void) {
  int r;
  if (tg_cu.lib) return 0;
  if (tg_cu.error[0]) return 1;
  tg_cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!tg_cu.lib) {
    snprintf(tg_cu.error, sizeof tg_cu.error,
             "no CUDA driver: could not open libcuda.so.1 (install the NVIDIA driver)");
    return 1;
  }
#define TG_CU_LOAD(field, name)                                                                   \
  if (!(*(void**)(&tg_cu.field) = dlsym(tg_cu.lib, name))) {                                     \
    snprintf(tg_cu.error, sizeof tg_cu.error, "libcuda.so.1 lacks %s (driver too old?)", name); \
    tg_cu.lib = 0;                                                                                \
    return 1;                                                                                     \
  }
  TG_CU_LOAD(cuInit, "cuInit")
  TG_CU_LOAD(cuGetErrorString, "cuGetErrorString")
  TG_CU_LOAD(cuDeviceGet, "cuDeviceGet")
  TG_CU_LOAD(cuDeviceGetAttribute, "cuDeviceGetAttribute")
  TG_CU_LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
  TG_CU_LOAD(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
  TG_CU_LOAD(cuCtxSetCurrent, "cuCtxSetCurrent")
  TG_CU_LOAD(cuModuleLoadData, "cuModuleLoadData")
  TG_CU_LOAD(cuModuleUnload, "cuModuleUnload")
  TG_CU_LOAD(cuModuleGetFunction, "cuModuleGetFunction")
  TG_CU_LOAD(cuMemAlloc, "cuMemAlloc_v2")
  TG_CU_LOAD(cuMemFree, "cuMemFree_v2")
  TG_CU_LOAD(cuMemcpyHtoD, "cuMemcpyHtoD_v2")
  TG_CU_LOAD(cuMemcpyDtoH, "cuMemcpyDtoH_v2")
  TG_CU_LOAD(cuMemcpyDtoD, "cuMemcpyDtoD_v2")
  TG_CU_LOAD(cuLaunchKernel, "cuLaunchKernel")
#undef TG_CU_LOAD
  r = tg_cu.cuInit(0);
  if (r != 0) {
    snprintf(tg_cu.error, sizeof tg_cu.error,
             r == 34 ? "libcuda.so.1 is the CUDA toolkit's stub, not a driver (cuInit: %d)"
             : r == 100 ? "no CUDA-capable device (cuInit: %d)"
                        : "cuInit failed with CUDA error %d",
             r);
    tg_cu.lib = 0;
    return 1;
  }
  return 0;
}

/* "what failed: the driver's description" into out; 1 (or 0 where r is success). */
static int tg_cu_fail(int r, const char* what, char* out, size_t n) {
  const char* text = 0;
  if (r == 0) return 0;
  if (tg_cu.cuGetErrorString) tg_cu.cuGetErrorString(r, &text);
  snprintf(out, n, "%s failed: CUDA error %d (%s)%s", what, r, text ? text : "unknown",
           r == 218 || r == 222 || r == 209
               ? "; the module was built for another GPU or by a newer CUDA than the driver "
                 "(build the .cu with nvcc for this GPU and pass its path)"
               : "");
  return 1;
}
)C";

} // namespace detail

/// The cuda target's files: the kernels' source, and the host's header and source.
struct ExportedCuda {
  std::string cu, header, source;
};

/// The cuda target. `ptx_arch`: the virtual architecture NVRTC compiles the PTX embedded in the
/// host for ("compute_75"; "" for the oldest it knows; "none": no PTX, the host then loads a
/// module file).
inline ExportedCuda export_cuda(const ExportedProgram& prog, const ExportCOptions& o,
                                std::string ptx_arch = "") {
  const std::string& P = o.prefix;
  const ExportPlan plan = plan_export(prog, Target::cuda(export_gpu_launch()));
  ExportedCuda out;

  // the kernels, renamed <P>_k<N> (names are unique in one module)
  out.cu = "// " + P +
           ".cu: generated by tg::export_model (target cuda): the kernels tg's CUDA device runs, "
           "launched by\n// " +
           P + ".c. Build a module for your GPU with `nvcc -cubin -arch=sm_XX " + P +
           ".cu` (or -ptx), or NVRTC.\n";
  std::size_t most_args = 1;
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const Program& p = plan.kernels[k].program;
    std::string src(plan.kernels[k].source.view());
    const std::string from = ") " + std::string(p.name.view()) + "(";
    const std::size_t at = src.find(from);
    if (at == std::string::npos)
      throw export_error("tg.export: kernel " + std::string(p.name.view()) +
                         " has no CUDA function of its name (an internal error)");
    src.replace(at, from.size(), ") " + P + "_k" + std::to_string(k) + "(");
    out.cu +=
        "\n// " + P + "_k" + std::to_string(k) + ": " + std::string(p.name.view()) + "\n" + src;
    most_args = std::max(most_args, p.params.size() + 3 + p.vars.size());
  }

  std::string ptx;
  if (ptx_arch != "none") {
    cuda::Nvrtc& nv = cuda::Nvrtc::get();
    if (!nv.error.empty())
      throw export_error("tg.export: cuda: the PTX is compiled at export by NVRTC, and " +
                         nv.error +
                         " (or export with cuda_arch = \"none\": the host then loads a "
                         "module you build with nvcc)");
    if (ptx_arch.empty())
      ptx_arch = nv.archs.empty() ? "compute_75" : "compute_" + std::to_string(nv.archs.front());
    try {
      ptx = cuda::nvrtc_compile(out.cu, P, ptx_arch).binary;
    } catch (const error& e) {
      throw export_error(std::string("tg.export: cuda: ") + e.what());
    }
  }

  // the arena: each method's inputs, outputs and temporaries at their largest, 256-byte aligned
  std::int64_t arena = 0;
  std::string methods;
  for (std::size_t mi = 0; mi < prog.methods.size(); ++mi) {
    const ExportedMethod& m = prog.methods[mi];
    const ExportMethodPlan& mp = plan.methods[mi];
    std::int64_t used = 0;
    auto place = [&](const SInt& bytes) {
      const std::int64_t at = used;
      used += (bytes.max_value() + 255) / 256 * 256;
      return "m->arena + " + std::to_string(at);
    };
    const std::vector<SInt> in_bytes = export_input_bytes(m), out_bytes = export_output_bytes(m);
    std::vector<std::string> in, outs, temps;
    for (const SInt& b : in_bytes) in.push_back(place(b));
    for (const SInt& b : out_bytes) outs.push_back(place(b));
    for (const SInt& t : mp.temp_bytes) temps.push_back(place(t));
    arena = std::max(arena, used);

    const detail::CMethodApi api = detail::c_method_api(m, P);
    std::string body = api.signature + " {\n" + detail::c_method_checks(prog, m);
    body += "  if (tg_cu_fail(tg_cu.cuCtxSetCurrent(m->context), \"cuCtxSetCurrent\", m->error, "
            "sizeof m->error)) return 1;\n";
    for (std::size_t i = 0; i < m.inputs.size(); ++i)
      body += "  if (tg_put(m, " + in[i] + ", " + m.inputs[i].name + ", (size_t)" +
              detail::c_size(in_bytes[i]) + ", \"" + m.name + ": copying " + m.inputs[i].name +
              " to the GPU\")) return 1;\n";
    for (const ExportLaunch& l : mp.launches) {
      const Program& p = plan.kernels[std::size_t(l.kernel)].program;
      body += "  { /* " + std::string(p.name.view()) + " */\n    tg_ptr b[] = {";
      for (std::size_t i = 0; i < l.buffers.size(); ++i) {
        const ExportRef& r = l.buffers[i];
        const std::size_t x = std::size_t(r.index);
        body += i ? ", " : "";
        body += r.kind == ExportRef::Kind::Input    ? in[x]
                : r.kind == ExportRef::Kind::Output ? outs[x]
                : r.kind == ExportRef::Kind::Temp   ? temps[x]
                                                    : "m->w[" + std::to_string(x) + "]";
      }
      body += "};\n    long long v[] = {";
      for (std::size_t i = 0; i < p.vars.size(); ++i)
        body += (i ? ", " : "") + std::string(p.vars[i].name.view());
      if (p.vars.empty()) body += "0";
      body += "};\n    if (" + detail::c_size(l.numel) + " > 0 && tg_launch(m, " +
              std::to_string(l.kernel) + ", b, " + std::to_string(l.buffers.size()) + ", v, " +
              std::to_string(p.vars.size()) + ", " + detail::c_size(p.outer) + ", " +
              std::to_string(p.items_per_outer) + ", " +
              std::to_string(p.grouped ? 1 : p.local * p.per_thread) + ", " +
              std::to_string(p.local) + ")) return 1;\n  }\n";
    }
    for (const ExportUpdate& u : mp.updates) // the new state, once every launch has read the old
      body += "  if (tg_cu_fail(tg_cu.cuMemcpyDtoD(m->w[" + std::to_string(u.weight) + "], " +
              temps[std::size_t(u.temp)] + ", " + std::to_string(u.bytes) + "), \"" + m.name +
              ": updating its state\", m->error, sizeof m->error)) return 1;\n";
    for (std::size_t k = 0; k < m.outputs.size(); ++k)
      body += "  if (tg_get(m, " + m.output_names[k] + ", " + outs[k] + ", (size_t)" +
              detail::c_size(out_bytes[k]) + ", \"" + m.name +
              ": running the kernels and copying " + m.output_names[k] +
              " from the GPU\")) return 1;\n";
    body += "  return 0;\n}\n\n";
    methods += body;
  }

  out.header = detail::c_header(
      prog, P,
      "/* " + P +
          ".h: generated by tg::export_model (target cuda). The model runs on an NVIDIA GPU "
          "through the CUDA\n   driver (libcuda.so.1, opened at run time), its weights read from "
          "a .safetensors file" +
          (o.weights_file.empty() ? "" : " (" + o.weights_file + ")") +
          ".\n   Inputs and outputs are host memory. A model object runs one method at a time.\n"
          "   Build: cc -O2 -c " +
          P + ".c (link with -ldl where dlopen is not in libc). */\n",
      "/* The same on CUDA device `device`, loading the kernels from module_path (a CUBIN or PTX "
      "built\n   from " +
          P + ".cu; NULL: the PTX embedded in " + P + ".c). */\n" + P + "_model* " + P +
          "_create_on(int device, const char* module_path, const char* weights_path, char* "
          "error,\n" +
          std::string(P.size() + 20, ' ') + "size_t error_size);\n");

  std::string& c = out.source;
  c += "/* " + P + ".c: generated by tg::export_model (target cuda): loads the kernels of " + P +
       ".cu and the weights onto\n   a GPU and launches the kernels of each method. Build: cc "
       "-O2 -c " +
       P + ".c */\n";
  c += "#include \"" + P + ".h\"\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n";
  c += detail::cuda_host_driver;
  c += detail::c_loader;
  c += detail::c_read_file;
  c += "\n/* ---- the model ---- */\n";
  c += detail::c_weight_table(prog, plan);
  c += "#define TG_KERNELS " + std::to_string(plan.kernels.size()) + "\n#define TG_ARENA " +
       std::to_string(std::max<std::int64_t>(arena, 256)) + "ULL\n";
  // the PTX, a string a line (ISO C's limit on one string's length is 4095 bytes)
  c += "/* the PTX NVRTC compiled of " + P + ".cu" +
       (ptx.empty() ? " (none: the export had cuda_arch = \"none\")" : " for " + ptx_arch) +
       " */\nstatic const char* const tg_ptx[] = {";
  for (std::size_t at = 0; at < ptx.size();) {
    std::size_t nl = ptx.find('\n', at);
    nl = nl == std::string::npos ? ptx.size() : nl + 1;
    c += "\n  \"";
    for (std::size_t i = at; i < nl; ++i) {
      const char ch = ptx[i];
      if (ch == '\n')
        c += "\\n";
      else if (ch == '\t')
        c += "\\t";
      else if (ch == '"' || ch == '\\')
        c += std::string("\\") + ch;
      else
        c += ch;
    }
    c += "\",";
    at = nl;
  }
  c += "\n  0};\n";
  c += "/* The PTX as one string (malloc'd; NULL without PTX or memory). */\n"
       "static char* tg_ptx_text(void) {\n  size_t n = 1, k;\n  char* text;\n"
       "  for (k = 0; tg_ptx[k]; ++k) n += strlen(tg_ptx[k]);\n"
       "  if (n == 1 || !(text = (char*)malloc(n))) return 0;\n  text[0] = 0;\n"
       "  for (k = 0, n = 0; tg_ptx[k]; n += strlen(tg_ptx[k]), ++k) strcpy(text + n, tg_ptx[k]);\n"
       "  return text;\n}\n";
  c +=
      "struct " + P +
      "_model {\n  int device;\n  void* context;\n  void* module;\n  void* fn[TG_KERNELS + "
      "1];\n  tg_ptr w[TG_WEIGHTS + 1];\n  tg_ptr arena;\n  int grid[3];\n  char error[256];\n};\n";
  c += detail::c_fail(P);
  c += "static int tg_put(" + P +
       "_model* m, tg_ptr to, const void* from, size_t n, const char* what) {\n"
       "  return n && tg_cu_fail(tg_cu.cuMemcpyHtoD(to, from, n), what, m->error, sizeof "
       "m->error);\n}\n";
  c += "static int tg_get(" + P +
       "_model* m, void* to, tg_ptr from, size_t n, const char* what) {\n"
       "  return n && tg_cu_fail(tg_cu.cuMemcpyDtoH(to, from, n), what, m->error, sizeof "
       "m->error);\n}\n";
  // the launches that cover every item, within the grid's limits (tg's gpu_dispatches)
  c += "static int tg_launch(" + P +
       "_model* m, int k, tg_ptr* b, int nb, long long* v, int nv, long long outer,\n"
       "                     long long items_per_outer, long long per_group, unsigned local) {\n"
       "  void* args[" +
       std::to_string(most_args) +
       "];\n"
       "  long long base = 0, start = 0, end = outer, first, groups;\n"
       "  int n = 0, i;\n"
       "  for (i = 0; i < nb; ++i) args[n++] = &b[i];\n"
       "  args[n++] = &base;\n  args[n++] = &start;\n  args[n++] = &end;\n"
       "  for (i = 0; i < nv; ++i) args[n++] = &v[i];\n"
       "  groups = (outer * items_per_outer + per_group - 1) / per_group;\n"
       "  for (first = 0; first < groups;) {\n"
       "    long long left = groups - first, x, y, z;\n"
       "    x = left < m->grid[0] ? left : m->grid[0];\n"
       "    y = (left + x - 1) / x;\n    y = y < m->grid[1] ? y : m->grid[1];\n"
       "    z = (left + x * y - 1) / (x * y);\n    z = z < m->grid[2] ? z : m->grid[2];\n"
       "    base = first * per_group;\n"
       "    if (tg_cu_fail(tg_cu.cuLaunchKernel(m->fn[k], (unsigned)x, (unsigned)y, (unsigned)z, "
       "local, 1, 1, 0, 0, args, 0),\n"
       "                   \"cuLaunchKernel\", m->error, sizeof m->error))\n"
       "      return 1;\n"
       "    first += x * y * z;\n  }\n  return 0;\n}\n";
  c += "void " + P + "_destroy(" + P +
       "_model* m) {\n  int k;\n  if (!m) return;\n"
       "  if (m->context) {\n    tg_cu.cuCtxSetCurrent(m->context);\n"
       "    for (k = 0; k < TG_WEIGHTS; ++k)\n      if (m->w[k]) tg_cu.cuMemFree(m->w[k]);\n"
       "    if (m->arena) tg_cu.cuMemFree(m->arena);\n"
       "    if (m->module) tg_cu.cuModuleUnload(m->module);\n"
       "    tg_cu.cuDevicePrimaryCtxRelease(m->device);\n  }\n  free(m);\n}\n";
  // creating: the context, the module, the weights, the arena
  c += "static " + P + "_model* tg_create(int device, const void* module, const void* bytes, " +
       "size_t size, char* error,\n" + std::string(P.size() + 18, ' ') +
       "size_t error_size) {\n"
       "  char scratch[256];\n  void* host[TG_WEIGHTS + 1] = {0};\n  int k, failed = 0, dev = 0;\n"
       "  " +
       P +
       "_model* m;\n"
       "  if (!error) {\n    error = scratch;\n    error_size = sizeof scratch;\n  }\n"
       "  if (tg_cu_open()) {\n    snprintf(error, error_size, \"%s\", tg_cu.error);\n"
       "    return 0;\n  }\n"
       "  if (!module) {\n    snprintf(error, error_size, \"" +
       P +
       ".c has no PTX (exported with cuda_arch = \\\"none\\\"): pass the path of a module built "
       "from " +
       P + ".cu to " + P +
       "_create_on\");\n    return 0;\n  }\n"
       "  m = (" +
       P + "_model*)calloc(1, sizeof(" + P +
       "_model));\n"
       "  if (!m) {\n    snprintf(error, error_size, \"out of memory\");\n    return 0;\n  }\n"
       "  m->device = device;\n"
       "  if (tg_cu_fail(tg_cu.cuDeviceGet(&dev, device), \"cuDeviceGet\", error, error_size) ||\n"
       "      tg_cu_fail(tg_cu.cuDevicePrimaryCtxRetain(&m->context, dev), "
       "\"cuDevicePrimaryCtxRetain\", error,\n                 error_size)) {\n"
       "    m->context = 0;\n    free(m);\n    return 0;\n  }\n"
       "  m->device = dev;\n"
       "  for (k = 0; k < 3; ++k) /* CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, _Y, _Z */\n"
       "    if (tg_cu.cuDeviceGetAttribute(&m->grid[k], 5 + k, dev) != 0 || m->grid[k] < 1) "
       "m->grid[k] = 65535;\n"
       "  failed = tg_cu_fail(tg_cu.cuCtxSetCurrent(m->context), \"cuCtxSetCurrent\", error, "
       "error_size) ||\n"
       "           tg_cu_fail(tg_cu.cuModuleLoadData(&m->module, module), \"loading the "
       "kernels' module (cuModuleLoadData)\",\n"
       "                      error, error_size);\n"
       "  for (k = 0; k < TG_KERNELS && !failed; ++k) {\n"
       "    char name[64];\n"
       "    snprintf(name, sizeof name, \"" +
       P +
       "_k%d\", k);\n"
       "    failed = tg_cu_fail(tg_cu.cuModuleGetFunction(&m->fn[k], m->module, name), name, "
       "error, error_size);\n  }\n"
       "  if (!failed) failed = tg_load_weights((const unsigned char*)bytes, size, tg_weights, "
       "TG_WEIGHTS, host, error,\n                                   error_size);\n"
       "  for (k = 0; k < TG_WEIGHTS && !failed; ++k)\n"
       "    failed = tg_cu_fail(tg_cu.cuMemAlloc(&m->w[k], tg_weights[k].bytes ? "
       "(size_t)tg_weights[k].bytes : 1),\n"
       "                        \"allocating a weight (cuMemAlloc)\", error, error_size) ||\n"
       "             (tg_weights[k].bytes &&\n"
       "              tg_cu_fail(tg_cu.cuMemcpyHtoD(m->w[k], host[k], "
       "(size_t)tg_weights[k].bytes),\n"
       "                         \"copying a weight to the GPU\", error, error_size));\n"
       "  if (!failed)\n"
       "    failed = tg_cu_fail(tg_cu.cuMemAlloc(&m->arena, (size_t)TG_ARENA), \"allocating the "
       "arena (cuMemAlloc)\", error,\n                        error_size);\n"
       "  for (k = 0; k < TG_WEIGHTS; ++k) free(host[k]);\n"
       "  if (failed) {\n    " +
       P + "_destroy(m);\n    return 0;\n  }\n  return m;\n}\n";
  c += P + "_model* " + P +
       "_create_from_memory(const void* bytes, size_t size, char* error, size_t error_size) {\n"
       "  char* ptx = tg_ptx_text();\n"
       "  " +
       P +
       "_model* m = tg_create(0, ptx, bytes, size, error, error_size);\n"
       "  free(ptx);\n  return m;\n}\n";
  c += P + "_model* " + P +
       "_create_on(int device, const char* module_path, const char* weights_path, char* "
       "error,\n" +
       std::string(P.size() + 20, ' ') +
       "size_t error_size) {\n"
       "  char scratch[256];\n  size_t size = 0, module_size = 0;\n"
       "  unsigned char *bytes, *module = 0;\n  " +
       P +
       "_model* m;\n"
       "  if (!error) {\n    error = scratch;\n    error_size = sizeof scratch;\n  }\n"
       "  if (module_path && !(module = tg_read_file(\"module\", module_path, &module_size, "
       "error, error_size))) return 0;\n"
       "  bytes = tg_read_file(\"weights file\", weights_path, &size, error, error_size);\n"
       "  if (!module_path) module = (unsigned char*)tg_ptx_text();\n"
       "  m = bytes ? tg_create(device, module, bytes, size, error, error_size) : 0;\n"
       "  free(bytes);\n  free(module);\n  return m;\n}\n";
  c += detail::c_create_and_error(P);
  c += "static int tg_weight_read(" + P +
       "_model* m, int k, void* to) {\n"
       "  return tg_cu_fail(tg_cu.cuCtxSetCurrent(m->context), \"cuCtxSetCurrent\", m->error, "
       "sizeof m->error) ||\n"
       "         tg_get(m, to, m->w[k], (size_t)tg_weights[k].bytes, \"reading a weight "
       "(cuMemcpyDtoH)\");\n}\n"
       "static int tg_weight_write(" +
       P +
       "_model* m, int k, const void* from) {\n"
       "  return tg_cu_fail(tg_cu.cuCtxSetCurrent(m->context), \"cuCtxSetCurrent\", m->error, "
       "sizeof m->error) ||\n"
       "         tg_put(m, m->w[k], from, (size_t)tg_weights[k].bytes, \"writing a weight "
       "(cuMemcpyHtoD)\");\n}\n";
  c += detail::c_weights_api(P);
  c += methods;
  return out;
}

} // namespace tg
