#pragma once
// The `c` export target: a traced program as <prefix>.h and <prefix>.c, C11 that builds with
// `cc -O2 -c <prefix>.c` alone: the CPU device's kernels, with the GNU C vector types GCC and
// Clang have, or (iso_c) the same schedule in plain loops of ISO C11 for any C compiler. The
// kernels are the CPU device's (Target::cpu(): the same schedule, passes and C), each method calls
// them in order over buffers planned once: inputs and outputs are the caller's pointers, weights
// are read from the .safetensors file by a loader in the same file (or embedded), and intermediates
// share one arena allocated by <prefix>_create. Symbolic dims are integer arguments checked against
// their bounds. Single-threaded unless compiled with -D<PREFIX>_THREADS=N (pthreads), which splits
// large kernels as the CPU device does.
#include <set>

#include "../graph/sint_text.hpp"
#include "../state/safetensors_format.hpp"
#include "plan.hpp"

namespace tg {

namespace detail {

/// The C type of a dtype in the exported API (16-bit floats as their bits).
inline const char* export_c_type(DType t) {
  constexpr const char* names[dtype_count] = {
      "bool",     "int8_t",   "int16_t",  "int32_t",  "int64_t", "uint8_t", "uint16_t",
      "uint32_t", "uint64_t", "uint16_t", "uint16_t", "float",   "double"};
  return names[int(t)];
}

/// A size as a C expression of the dims (long long).
inline std::string c_size(const SInt& d) {
  Text t;
  write_sint(t, d);
  return d.is_const() ? std::string(t.view()) + "LL" : "(" + std::string(t.view()) + ")";
}

/// The safetensors loader of every exported C file: parses the header (JSON), checks each
/// expected weight's dtype, shape and extent, and copies it into memory of its own.
inline const char* c_loader = R"C(
/* ---- weights: a .safetensors file, checked against what the kernels expect ---- */
typedef struct {
  const char* name;
  const char* dtype;
  int ndim;
  long long shape[8];
  unsigned long long bytes;
} tg_weight_info;

typedef struct {
  const unsigned char* p;
  const unsigned char* end;
} tg_json;

static void tg_ws(tg_json* j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) ++j->p;
}
static int tg_eat(tg_json* j, char c) {
  tg_ws(j);
  if (j->p < j->end && *j->p == (unsigned char)c) {
    ++j->p;
    return 1;
  }
  return 0;
}
/* A string into out (at most n - 1 bytes kept; escapes of ASCII decoded); 0 if malformed. */
static int tg_string(tg_json* j, char* out, size_t n) {
  size_t k = 0;
  if (!tg_eat(j, '"')) return 0;
  while (j->p < j->end && *j->p != '"') {
    unsigned c = *j->p++;
    if (c == '\\') {
      if (j->p >= j->end) return 0;
      c = *j->p++;
      if (c == 'n') c = '\n';
      else if (c == 't') c = '\t';
      else if (c == 'r') c = '\r';
      else if (c == 'b') c = '\b';
      else if (c == 'f') c = '\f';
      else if (c == 'u') {
        unsigned v = 0;
        int i;
        if (j->end - j->p < 4) return 0;
        for (i = 0; i < 4; ++i) {
          unsigned h = *j->p++;
          v = v * 16 + (h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 99);
          if (v > 0xffff) return 0;
        }
        c = v < 0x80 ? v : '?';
      }
    }
    if (k + 1 < n) out[k++] = (char)c;
  }
  if (n) out[k] = 0;
  return j->p < j->end && *j->p++ == '"';
}
static int tg_number(tg_json* j, unsigned long long* v) {
  int digits = 0;
  tg_ws(j);
  *v = 0;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
    if (*v > 1844674407370955160ULL) return 0;
    *v = *v * 10 + (unsigned)(*j->p++ - '0');
    ++digits;
  }
  return digits > 0;
}
/* Skips any value (nesting up to 64). */
static int tg_skip(tg_json* j, int depth) {
  char tmp[2];
  tg_ws(j);
  if (depth > 64 || j->p >= j->end) return 0;
  if (*j->p == '"') return tg_string(j, tmp, sizeof tmp);
  if (*j->p == '{' || *j->p == '[') {
    char close = *j->p == '{' ? '}' : ']';
    ++j->p;
    if (tg_eat(j, close)) return 1;
    do {
      if (close == '}' && (!tg_string(j, tmp, sizeof tmp) || !tg_eat(j, ':'))) return 0;
      if (!tg_skip(j, depth + 1)) return 0;
    } while (tg_eat(j, ','));
    return tg_eat(j, close);
  }
  while (j->p < j->end && *j->p != ',' && *j->p != '}' && *j->p != ']') ++j->p;
  return 1;
}

/* Copies each weight of `info` from the file's bytes into memory of its own (w[k]), checked;
   0 on success, else a message in err. */
static int tg_load_weights(const unsigned char* file, unsigned long long size,
                           const tg_weight_info* info, int count, void** w, char* err,
                           size_t err_size) {
  unsigned long long header = 0, data_size;
  const unsigned char* data;
  tg_json j;
  int k, found = 0;
  char key[512], field[32], dtype[16];
  if (size < 8) {
    snprintf(err, err_size, "the weights are %llu bytes, too short for a safetensors file", size);
    return 1;
  }
  for (k = 7; k >= 0; --k) header = header * 256 + file[k];
  if (header > size - 8) {
    snprintf(err, err_size, "the safetensors header claims %llu bytes; the file has %llu",
             header, size - 8);
    return 1;
  }
  data = file + 8 + header;
  data_size = size - 8 - header;
  j.p = file + 8;
  j.end = data;
  if (!tg_eat(&j, '{')) goto malformed;
  if (!tg_eat(&j, '}')) {
    do {
      unsigned long long begin = 0, end = 0, dims[8];
      int ndim = 0, have_offsets = 0, target = -1, i;
      if (!tg_string(&j, key, sizeof key) || !tg_eat(&j, ':')) goto malformed;
      for (i = 0; i < count; ++i)
        if (strcmp(info[i].name, key) == 0) target = i;
      if (target < 0) { /* __metadata__, or a tensor no kernel reads */
        if (!tg_skip(&j, 0)) goto malformed;
        continue;
      }
      dtype[0] = 0;
      if (!tg_eat(&j, '{')) goto malformed;
      if (!tg_eat(&j, '}')) {
        do {
          if (!tg_string(&j, field, sizeof field) || !tg_eat(&j, ':')) goto malformed;
          if (strcmp(field, "dtype") == 0) {
            if (!tg_string(&j, dtype, sizeof dtype)) goto malformed;
          } else if (strcmp(field, "shape") == 0) {
            if (!tg_eat(&j, '[')) goto malformed;
            if (!tg_eat(&j, ']')) {
              do {
                if (ndim == 8 || !tg_number(&j, &dims[ndim++])) goto malformed;
              } while (tg_eat(&j, ','));
              if (!tg_eat(&j, ']')) goto malformed;
            }
          } else if (strcmp(field, "data_offsets") == 0) {
            if (!tg_eat(&j, '[') || !tg_number(&j, &begin) || !tg_eat(&j, ',') ||
                !tg_number(&j, &end) || !tg_eat(&j, ']'))
              goto malformed;
            have_offsets = 1;
          } else if (!tg_skip(&j, 0))
            goto malformed;
        } while (tg_eat(&j, ','));
        if (!tg_eat(&j, '}')) goto malformed;
      }
      if (strcmp(dtype, info[target].dtype) != 0) {
        snprintf(err, err_size, "weight '%s' is %s in the file; the model reads %s", key, dtype,
                 info[target].dtype);
        return 1;
      }
      if (ndim != info[target].ndim) {
        snprintf(err, err_size, "weight '%s' has %d dimensions in the file; the model reads %d",
                 key, ndim, info[target].ndim);
        return 1;
      }
      for (i = 0; i < ndim; ++i)
        if (dims[i] != (unsigned long long)info[target].shape[i]) {
          snprintf(err, err_size,
                   "weight '%s' has size %llu in dimension %d in the file; the model reads %lld",
                   key, dims[i], i, info[target].shape[i]);
          return 1;
        }
      if (!have_offsets || begin > end || end > data_size ||
          end - begin != info[target].bytes) {
        snprintf(err, err_size,
                 "weight '%s' spans bytes [%llu, %llu) of %llu data bytes; the model reads %llu "
                 "(a truncated or damaged file)",
                 key, begin, end, data_size, info[target].bytes);
        return 1;
      }
      if (w[target]) {
        snprintf(err, err_size, "weight '%s' appears twice in the file", key);
        return 1;
      }
      w[target] = malloc(info[target].bytes ? (size_t)info[target].bytes : 1);
      if (!w[target]) {
        snprintf(err, err_size, "out of memory for weight '%s' (%llu bytes)", key,
                 info[target].bytes);
        return 1;
      }
      memcpy(w[target], data + begin, (size_t)info[target].bytes);
      ++found;
    } while (tg_eat(&j, ','));
    if (!tg_eat(&j, '}')) goto malformed;
  }
  if (found < count)
    for (k = 0; k < count; ++k)
      if (!w[k]) {
        snprintf(err, err_size, "weight '%s' is not in the file", info[k].name);
        return 1;
      }
  return 0;
malformed:
  snprintf(err, err_size, "the safetensors header is malformed near byte %ld",
           (long)(j.p - file));
  return 1;
}
)C";

/// The libm functions a kernel's C calls (none where its math is all decomposed): the exported
/// file then needs -lm.
inline void libm_calls(const std::string& src, std::set<std::string>& out) {
  // a vector fused multiply-add runs lane by lane through libm where the build has no FMA
  for (auto [vec, f] : {std::pair{"tg_fma_f32x", "fmaf"}, std::pair{"tg_fma_f64x", "fma"}})
    for (std::size_t at = src.find(vec); at != std::string::npos; at = src.find(vec, at + 1))
      if (src.find("(((", at) == src.find_first_of("( ", at)) out.insert(f);
  for (const char* f : {"sqrtf", "sqrt", "exp2f", "exp2", "log2f", "log2", "sinf", "sin", "truncf",
                        "trunc", "powf", "pow", "fmaf", "fma"}) {
    const std::string call = std::string(f) + "(";
    for (std::size_t at = src.find(call); at != std::string::npos; at = src.find(call, at + 1)) {
      const bool word =
          at == 0 || !(std::isalnum(static_cast<unsigned char>(src[at - 1])) || src[at - 1] == '_');
      const std::string_view rest = std::string_view(src).substr(at + call.size());
      if (word && !rest.starts_with("float") && !rest.starts_with("double")) { // not the prelude
        out.insert(f);
        break;
      }
    }
  }
}

/// The launcher: a kernel over [0, outer), split over threads where -D<PREFIX>_THREADS=N asks
/// and the kernel is large (as the CPU device splits it).
inline std::string c_launcher(const std::string& threads) {
  return "\n/* ---- launches ---- */\n"
         "typedef void (*tg_kernel)(void**, const long long*, long long, long long);\n"
         "#if defined(" +
         threads + ") && " + threads +
         " > 1\n"
         "#include <pthread.h>\n"
         "typedef struct { tg_kernel fn; void** bufs; const long long* vars; long long start, "
         "end; } tg_slice;\n"
         "static void* tg_run_slice(void* a) {\n"
         "  tg_slice* s = (tg_slice*)a;\n"
         "  s->fn(s->bufs, s->vars, s->start, s->end);\n"
         "  return 0;\n"
         "}\n"
         "#endif\n"
         "static void tg_launch(tg_kernel fn, void** bufs, const long long* vars, long long "
         "outer, long long work) {\n"
         "#if defined(" +
         threads + ") && " + threads +
         " > 1\n"
         "  if (work >= 32768 && outer > 1) {\n"
         "    tg_slice s[" +
         threads +
         "];\n"
         "    pthread_t t[" +
         threads +
         "];\n"
         "    int n = outer < " +
         threads + " ? (int)outer : " + threads + ", k, started[" + threads +
         "];\n"
         "    for (k = 0; k < n; ++k) {\n"
         "      s[k].fn = fn; s[k].bufs = bufs; s[k].vars = vars;\n"
         "      s[k].start = outer * k / n; s[k].end = outer * (k + 1) / n;\n"
         "      started[k] = k > 0 && pthread_create(&t[k], 0, tg_run_slice, &s[k]) == 0;\n"
         "      if (k > 0 && !started[k]) tg_run_slice(&s[k]);\n"
         "    }\n"
         "    tg_run_slice(&s[0]);\n"
         "    for (k = 1; k < n; ++k)\n"
         "      if (started[k]) pthread_join(t[k], 0);\n"
         "    return;\n"
         "  }\n"
         "#endif\n"
         "  (void)work;\n"
         "  fn(bufs, vars, 0, outer);\n"
         "}\n";
}

inline std::string upper_case(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

/// A method's C function: its prototype and the comment that documents it.
struct CMethodApi {
  std::string signature, doc;
};
inline CMethodApi c_method_api(const ExportedMethod& m, const std::string& P) {
  CMethodApi a;
  a.signature = "int " + P + "_" + m.name + "(" + P + "_model* m";
  a.doc = "/* " + m.name + "(";
  for (const std::string& d : m.dims) a.signature += ", long long " + d;
  for (std::size_t i = 0; i < m.inputs.size(); ++i) {
    a.signature +=
        ", const " + std::string(export_c_type(m.inputs[i].dtype)) + "* " + m.inputs[i].name;
    a.doc += (i ? ", " : "") + m.inputs[i].name + ": " + dtype_name(m.inputs[i].dtype) +
             shape_str(m.input_shapes[i]);
  }
  a.doc += ") -> ";
  for (std::size_t k = 0; k < m.outputs.size(); ++k) {
    const Node& n = m.graph[m.outputs[k]];
    a.signature += ", " + std::string(export_c_type(n.dtype)) + "* " + m.output_names[k];
    a.doc += (k ? ", " : "") + m.output_names[k] + ": " + dtype_name(n.dtype) + shape_str(n.shape);
  }
  a.signature += ")";
  a.doc += "\n   Returns 0, or 1 with the reason in " + P + "_error(m) (a dim out of bounds, a " +
           "null pointer). */\n";
  return a;
}

/// The statements a method's C function starts with: each dim within its bounds, no null
/// pointer (tg_fail records the reason).
inline std::string c_method_checks(const ExportedProgram& prog, const ExportedMethod& m) {
  std::string body;
  for (const std::string& d : m.dims) {
    const ExportDim* dim = nullptr;
    for (const ExportDim& x : prog.dims)
      if (x.name == d) dim = &x;
    body += "  if (" + d + " < " + std::to_string(dim->lo) + "LL || " + d + " > " +
            std::to_string(dim->hi) + "LL) return tg_fail(m, \"" + m.name + ": " + d +
            " = %lld is outside [" + std::to_string(dim->lo) + ", " + std::to_string(dim->hi) +
            "]\", " + d + ");\n";
  }
  for (const ExportInput& in : m.inputs)
    body += "  if (!" + in.name + ") return tg_fail(m, \"" + m.name + ": input " + in.name +
            " is null\", 0);\n";
  for (const std::string& name : m.output_names)
    body += "  if (!" + name + ") return tg_fail(m, \"" + m.name + ": output " + name +
            " is null\", 0);\n";
  return body;
}

/// The weights the loader expects (tg_weights, TG_WEIGHTS of them).
inline std::string c_weight_table(const ExportedProgram& prog, const ExportPlan& plan) {
  std::string c = "static const tg_weight_info tg_weights[" +
                  std::to_string(std::max<std::size_t>(plan.weights.size(), 1)) + "] = {\n";
  for (int k : plan.weights) {
    const ExportedWeight* w = &prog.weights[std::size_t(k)];
    const Tensor& t = w->tensor;
    if (t.ndim() > 8)
      throw export_error("tg.export: weight '" + w->name + "' has " + std::to_string(t.ndim()) +
                         " dimensions; the C loader reads at most 8");
    c += "  {\"" + w->name + "\", \"" + safetensors::dtype_code(t.dtype()) + "\", " +
         std::to_string(t.ndim()) + ", {";
    for (int d = 0; d < t.ndim(); ++d)
      c += (d ? ", " : "") + std::to_string(t.shape()[std::size_t(d)]);
    if (t.ndim() == 0) c += "0";
    c += "}, " + std::to_string(std::uint64_t(t.numel()) * std::uint64_t(itemsize(t.dtype()))) +
         "ULL},\n";
  }
  if (plan.weights.empty()) c += "  {\"\", \"\", 0, {0}, 0}\n";
  return c + "};\n#define TG_WEIGHTS " + std::to_string(plan.weights.size()) + "\n";
}

/// A file's bytes (malloc'd, NUL-terminated; NULL with the reason in error).
inline const char* c_read_file = R"C(
static unsigned char* tg_read_file(const char* what, const char* path, size_t* size, char* error,
                                   size_t error_size) {
  FILE* f = path ? fopen(path, "rb") : 0;
  long n;
  unsigned char* bytes;
  if (!f) {
    snprintf(error, error_size, "cannot open the %s %s", what, path ? path : "(null)");
    return 0;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    snprintf(error, error_size, "cannot read %s", path);
    return 0;
  }
  bytes = (unsigned char*)malloc((size_t)n + 1); /* (+1: a NUL after text) */
  if (!bytes || fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(bytes);
    snprintf(error, error_size, "cannot read %s", path);
    return 0;
  }
  fclose(f);
  bytes[n] = 0;
  *size = (size_t)n;
  return bytes;
}
)C";

/// The functions every target with the C API defines alike: <P>_create(weights_path, ...), the
/// file's bytes given to <P>_create_from_memory, and <P>_error.
inline std::string c_create_and_error(const std::string& P) {
  return P + "_model* " + P +
         "_create(const char* weights_path, char* error, size_t error_size) {\n"
         "  char scratch[256];\n  size_t size = 0;\n  unsigned char* bytes;\n  " +
         P +
         "_model* m;\n"
         "  if (!error) {\n    error = scratch;\n    error_size = sizeof scratch;\n  }\n"
         "  bytes = tg_read_file(\"weights file\", weights_path, &size, error, error_size);\n"
         "  if (!bytes) return 0;\n  m = " +
         P +
         "_create_from_memory(bytes, size, error, error_size);\n  free(bytes);\n  return m;\n}\n"
         "const char* " +
         P + "_error(const " + P + "_model* m) { return m ? m->error : \"\"; }\n\n";
}

/// The header of every target with this C API (c, cuda, vulkan): `intro` says what the model runs
/// on, `creates` declares the target's own constructors beside <P>_create and
/// <P>_create_from_memory.
inline std::string c_header(const ExportedProgram& prog, const std::string& P,
                            const std::string& intro, const std::string& creates) {
  const std::string upper = upper_case(P);
  std::string h = intro;
  h += "#ifndef " + upper + "_H\n#define " + upper +
       "_H\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n"
       "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  h += "typedef struct " + P + "_model " + P + "_model;\n\n";
  h += "/* Loads the weights from a .safetensors file: the model, or NULL with the reason in "
       "error\n   (error_size bytes; error may be NULL). */\n";
  h += P + "_model* " + P + "_create(const char* weights_path, char* error, size_t error_size);\n";
  h += "/* The same from the file's bytes in memory (copied: they may be freed after). */\n";
  h += P + "_model* " + P +
       "_create_from_memory(const void* bytes, size_t size, char* error, size_t error_size);\n";
  h += creates;
  h += "void " + P + "_destroy(" + P + "_model* m);\n";
  h += "/* Why the last call that returned 1 (or NULL) failed. */\nconst char* " + P +
       "_error(const " + P + "_model* m);\n\n";
  const std::string M = P + "_model* m";
  h += "/* A weight (or state) by name: copies its bytes out of or into the model; `bytes` must "
       "be its\n   size. Returns 0, or 1 with the reason in " +
       P +
       "_error(m). Setting a training step's learning rate\n   (\"optim.param_groups.0.lr\" "
       "where the export declared spec.state(opt.state_dict(), \"optim.\"))\n   takes effect "
       "at the next call. */\n";
  h += "int " + P + "_get_weight(" + M + ", const char* name, void* data, size_t bytes);\n";
  h += "int " + P + "_set_weight(" + M + ", const char* name, const void* data, size_t bytes);\n";
  h += "/* Every weight and state as a .safetensors file (what _create reads; "
       "tg::safetensors::load_file\n   too), or in memory: malloc'd bytes (free them), their "
       "count in *size; NULL on failure. */\n";
  h += "int " + P + "_save_weights(" + M + ", const char* path);\n";
  h += "void* " + P + "_save_weights_to_memory(" + M + ", size_t* size);\n";
  h += "/* Replaces the weights with a .safetensors file's, checked as _create checks them (each "
       "name,\n   dtype and shape); a file that does not match leaves the model as it was. */\n";
  h += "int " + P + "_load_weights(" + M + ", const char* path);\n";
  h += "int " + P + "_load_weights_from_memory(" + M + ", const void* bytes, size_t size);\n\n";
  for (const ExportedMethod& m : prog.methods) {
    const CMethodApi a = c_method_api(m, P);
    h += a.doc + a.signature + ";\n";
  }
  h += "\n#ifdef __cplusplus\n}\n#endif\n#endif\n";
  return h;
}

/// The weights by name and as a .safetensors file, for every target with the C API: written over
/// the target's tg_weight_read(m, k, to) and tg_weight_write(m, k, from) (weight k's bytes out of
/// and into the model; 0, or 1 with the reason in m->error), tg_weights and tg_load_weights.
inline std::string c_weights_api(const std::string& P) {
  std::string c = R"C(
/* ---- the weights by name, and as a .safetensors file ---- */
/* The index of weight `name` if `bytes` is its size and `data` is not null; else -1 with the
   reason in m->error. */
static int tg_weight_find(P_model* m, const char* name, const void* data, size_t bytes) {
  int k;
  for (k = 0; name && k < TG_WEIGHTS; ++k)
    if (strcmp(tg_weights[k].name, name) == 0) {
      if (!data) {
        snprintf(m->error, sizeof m->error, "weight '%s': the data pointer is null", name);
        return -1;
      }
      if ((unsigned long long)bytes != tg_weights[k].bytes) {
        snprintf(m->error, sizeof m->error, "weight '%s' is %llu bytes (%s); got %llu", name,
                 tg_weights[k].bytes, tg_weights[k].dtype, (unsigned long long)bytes);
        return -1;
      }
      return k;
    }
  snprintf(m->error, sizeof m->error, "the model has no weight '%s'", name ? name : "(null)");
  return -1;
}
int P_get_weight(P_model* m, const char* name, void* data, size_t bytes) {
  int k = tg_weight_find(m, name, data, bytes);
  return k < 0 || tg_weight_read(m, k, data);
}
int P_set_weight(P_model* m, const char* name, const void* data, size_t bytes) {
  int k = tg_weight_find(m, name, data, bytes);
  return k < 0 || tg_weight_write(m, k, data);
}
/* Weight k's entry in a safetensors header (written to out where n > 0); its length. */
static size_t tg_entry(char* out, size_t n, int k, unsigned long long begin) {
  char shape[8 * 24];
  size_t at = 0;
  int d;
  shape[0] = 0;
  for (d = 0; d < tg_weights[k].ndim; ++d)
    at += (size_t)snprintf(shape + at, sizeof shape - at, d ? ",%lld" : "%lld",
                           tg_weights[k].shape[d]);
  return (size_t)snprintf(out, n, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%llu,%llu]}",
                          k ? "," : "", tg_weights[k].name, tg_weights[k].dtype, shape, begin,
                          begin + tg_weights[k].bytes);
}
void* P_save_weights_to_memory(P_model* m, size_t* size) {
  unsigned long long header = 2, data = 0, total;
  size_t at = 8;
  unsigned char* file;
  int k;
  for (k = 0; k < TG_WEIGHTS; data += tg_weights[k].bytes, ++k) header += tg_entry(0, 0, k, data);
  header = (header + 7) / 8 * 8; /* (the data 8-byte aligned, as safetensors writers do) */
  total = 8 + header + data;
  file = (unsigned char*)(total == (size_t)total ? malloc((size_t)total + 1) : 0);
  if (!file) {
    snprintf(m->error, sizeof m->error, "out of memory for the weights (%llu bytes)", total);
    return 0;
  }
  for (k = 0; k < 8; ++k) file[k] = (unsigned char)(header >> (8 * k));
  file[at++] = '{';
  for (k = 0, data = 0; k < TG_WEIGHTS; data += tg_weights[k].bytes, ++k)
    at += tg_entry((char*)file + at, (size_t)total + 1 - at, k, data);
  file[at++] = '}';
  while (at < 8 + header) file[at++] = ' ';
  for (k = 0; k < TG_WEIGHTS; at += (size_t)tg_weights[k].bytes, ++k)
    if (tg_weights[k].bytes && tg_weight_read(m, k, file + at)) {
      free(file);
      return 0;
    }
  if (size) *size = at;
  return file;
}
int P_save_weights(P_model* m, const char* path) {
  size_t size = 0;
  void* bytes = P_save_weights_to_memory(m, &size);
  FILE* f;
  int failed;
  if (!bytes) return 1;
  f = path ? fopen(path, "wb") : 0;
  failed = !f || fwrite(bytes, 1, size, f) != size;
  if (f && fclose(f) != 0) failed = 1;
  free(bytes);
  if (failed)
    snprintf(m->error, sizeof m->error, "cannot write the weights to %s", path ? path : "(null)");
  return failed;
}
int P_load_weights_from_memory(P_model* m, const void* bytes, size_t size) {
  void* host[TG_WEIGHTS + 1] = {0};
  int k, failed = !bytes;
  if (failed) snprintf(m->error, sizeof m->error, "the weights' bytes are null");
  if (!failed)
    failed = tg_load_weights((const unsigned char*)bytes, size, tg_weights, TG_WEIGHTS, host,
                             m->error, sizeof m->error);
  for (k = 0; k < TG_WEIGHTS && !failed; ++k)
    failed = tg_weights[k].bytes && tg_weight_write(m, k, host[k]);
  for (k = 0; k < TG_WEIGHTS; ++k) free(host[k]);
  return failed;
}
int P_load_weights(P_model* m, const char* path) {
  size_t size = 0;
  unsigned char* bytes = tg_read_file("weights file", path, &size, m->error, sizeof m->error);
  int failed = !bytes || P_load_weights_from_memory(m, bytes, size);
  free(bytes);
  return failed;
}
)C";
  for (std::size_t at = c.find("P_"); at != std::string::npos; at = c.find("P_", at + P.size()))
    c.replace(at, 1, P);
  return c;
}

/// tg_fail: the reason of a method's failure, in m->error.
inline std::string c_fail(const std::string& P) {
  return "static int tg_fail(" + P +
         "_model* m, const char* format, long long value) {\n"
         "  snprintf(m->error, sizeof m->error, format, value);\n  return 1;\n}\n";
}

} // namespace detail

/// Options of the `c` target (and of the targets built on its C).
struct ExportCOptions {
  std::string prefix = "model"; // names of the functions, the files and the model type
  std::string weights_file;     // the .safetensors file the loader is documented to read
  bool embed_weights = false;   // the weights' bytes in the source: <prefix>_create_embedded
  bool iso_c = false; // plain loops in ISO C11 for any C compiler, not the CPU device's kernels
                      // with GNU C vector types (GCC and Clang)
};

/// The exported C: the header's text and the source's.
struct ExportedC {
  std::string header, source;
  std::vector<int> weights; // the program's weights the model holds, in the C's order
};

/// The `c` target: the program's methods over the CPU device's kernels. `weights`: the bytes of
/// the .safetensors file (embedded where the options ask).
inline ExportedC export_c(const ExportedProgram& prog, const ExportCOptions& o,
                          const std::vector<unsigned char>& weights) {
  const std::string& P = o.prefix;
  const std::string upper = detail::upper_case(P);
  Target target = Target::cpu();
  target.cpu_passes = !o.iso_c;
  const ExportPlan plan = plan_export(prog, target);
  ExportedC out;
  out.weights = plan.weights;

  std::string kernels, methods;
  std::set<std::string> libm;
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const std::string src(plan.kernels[k].source.view()), name(plan.kernels[k].program.name.view());
    detail::libm_calls(src, libm);
    const std::string from = "void " + name + "(";
    const std::size_t at = src.find(from);
    if (at == std::string::npos)
      throw export_error("tg.export: kernel " + name +
                         " has no C function of its name (an internal error)");
    kernels += "/* " + P + "_k" + std::to_string(k) + ": " + name + " */\n" + src.substr(0, at) +
               "static void " + P + "_k" + std::to_string(k) + "(" + src.substr(at + from.size()) +
               "\n";
  }
  std::int64_t arena = 0;
  for (std::size_t mi = 0; mi < prog.methods.size(); ++mi) {
    const ExportedMethod& m = prog.methods[mi];
    const ExportMethodPlan& mp = plan.methods[mi];
    // the arena: each temporary at its largest, 64-byte aligned
    std::vector<std::int64_t> offset(mp.temp_bytes.size());
    std::int64_t used = 0;
    for (std::size_t k = 0; k < mp.temp_bytes.size(); ++k) {
      offset[k] = used;
      used += (mp.temp_bytes[k].max_value() + 63) / 64 * 64;
    }
    arena = std::max(arena, used);

    const detail::CMethodApi api = detail::c_method_api(m, P);
    std::string body = api.signature + " {\n" + detail::c_method_checks(prog, m);
    auto pointer = [&](const ExportRef& r) -> std::string {
      switch (r.kind) {
      case ExportRef::Kind::Input:
        return "(void*)" + m.inputs[std::size_t(r.index)].name;
      case ExportRef::Kind::Output:
        return "(void*)" + m.output_names[std::size_t(r.index)];
      case ExportRef::Kind::Weight:
        return "m->w[" + std::to_string(r.index) + "]";
      case ExportRef::Kind::Temp:
        break;
      }
      return "(void*)(m->arena + " + std::to_string(offset[std::size_t(r.index)]) + ")";
    };
    for (const ExportLaunch& l : mp.launches) {
      const Program& p = plan.kernels[std::size_t(l.kernel)].program;
      body += "  { /* " + std::string(p.name.view()) + " */\n    void* b[] = {";
      for (std::size_t i = 0; i < l.buffers.size(); ++i)
        body += (i ? ", " : "") + pointer(l.buffers[i]);
      body += "};\n    const long long v[] = {";
      for (std::size_t i = 0; i < p.vars.size(); ++i)
        body += (i ? ", " : "") + std::string(p.vars[i].name.view());
      if (p.vars.empty()) body += "0";
      body += "};\n";
      body += "    if (" + detail::c_size(l.numel) + " > 0) tg_launch(" + P + "_k" +
              std::to_string(l.kernel) + ", b, v, " + detail::c_size(p.outer) + ", " +
              detail::c_size(p.work) + ");\n  }\n";
    }
    for (const ExportUpdate& u : mp.updates) // the new state, once every launch has read the old
      body += "  memcpy(m->w[" + std::to_string(u.weight) + "], m->arena + " +
              std::to_string(offset[std::size_t(u.temp)]) + ", " + std::to_string(u.bytes) + ");\n";
    body += "  return 0;\n}\n\n";
    methods += body;
  }

  std::string needs;
  for (const std::string& f : libm) needs += (needs.empty() ? "" : ", ") + f;
  const std::string link = needs.empty() ? "no libm" : "link with -lm: the kernels call " + needs;

  out.header = detail::c_header(
      prog, P,
      "/* " + P +
          ".h: generated by tg::export_model (target c). The model's weights are read from a "
          ".safetensors file" +
          (o.weights_file.empty() ? "" : " (" + o.weights_file + ")") +
          (o.embed_weights ? " or from the bytes embedded in " + P + ".c" : "") +
          ".\n   A model object runs one method at a time; create one per thread.\n   Build: cc "
          "-O2 -c " +
          P + ".c (" + link + "). */\n",
      o.embed_weights ? "/* The same from the weights embedded in " + P + ".c. */\n" + P +
                            "_model* " + P + "_create_embedded(char* error, size_t error_size);\n"
                      : "");

  // ---- the source ----
  std::string& c = out.source;
  c += "/* " + P +
       ".c: generated by tg::export_model (target c): the kernels tg's CPU device runs for each "
       "method,\n   and the code that loads the weights and calls them. Build: cc -O2 -c " +
       P + ".c (" + link + "; -D" + upper +
       "_THREADS=N -pthread: large kernels split over N threads). */\n";
  c += "#include \"" + P +
       ".h\"\n#include <stdarg.h>\n#include <stdio.h>\n#include "
       "<stdlib.h>\n#include <string.h>\n";
  c += "/* Float arithmetic as tg computes it (sums of products by fused multiply-add, fmaf,\n"
       "   nothing else contracted; -mfma or -march=native makes fmaf one instruction),\n"
       "   integers that wrap, and GCC's vectorizer as the CPU device asks for it (its -O2 cost\n"
       "   model gives up on loops that need a run-time alias check): */\n"
       "#if defined(__clang__)\n#pragma clang fp contract(off)\n"
       "#elif defined(__GNUC__)\n#pragma GCC optimize(\"fp-contract=off\", \"wrapv\", "
       "\"no-math-errno\", \"no-trapping-math\", \"vect-cost-model=dynamic\")\n"
       "/* and libm without errno, which tg's kernels never read (the pragma's no-math-errno does\n"
       "   not reach these builtins, and a loop that may set errno does not vectorize): */\n"
       "#define TG_NO_ERRNO __attribute__((const))\n"
       "float sqrtf(float) TG_NO_ERRNO; double sqrt(double) TG_NO_ERRNO;\n"
       "float exp2f(float) TG_NO_ERRNO; double exp2(double) TG_NO_ERRNO;\n"
       "float log2f(float) TG_NO_ERRNO; double log2(double) TG_NO_ERRNO;\n"
       "float sinf(float) TG_NO_ERRNO; double sin(double) TG_NO_ERRNO;\n"
       "float powf(float, float) TG_NO_ERRNO; double pow(double, double) TG_NO_ERRNO;\n"
       "#endif\n\n";
  c += kernels;
  c += detail::c_loader;
  c += detail::c_read_file;
  c += detail::c_launcher(upper + "_THREADS");
  c += "\n/* ---- the model ---- */\n";
  c += detail::c_weight_table(prog, plan);
  c += "struct " + P +
       "_model {\n  void* w[TG_WEIGHTS + 1];\n  unsigned char* arena;\n"
       "  char error[256];\n};\n";
  c += detail::c_fail(P);
  c += P + "_model* " + P +
       "_create_from_memory(const void* bytes, size_t size, char* error, size_t error_size) {\n"
       "  char scratch[256];\n"
       "  " +
       P + "_model* m = (" + P + "_model*)calloc(1, sizeof(" + P +
       "_model));\n"
       "  if (!error) {\n    error = scratch;\n    error_size = sizeof scratch;\n  }\n"
       "  if (!m) {\n    snprintf(error, error_size, \"out of memory\");\n    return 0;\n  }\n"
       "  if (tg_load_weights((const unsigned char*)bytes, size, tg_weights, TG_WEIGHTS, m->w, "
       "error, error_size)) {\n    " +
       P +
       "_destroy(m);\n    return 0;\n  }\n"
       "  m->arena = (unsigned char*)malloc(" +
       std::to_string(std::max<std::int64_t>(arena, 64)) +
       ");\n"
       "  if (!m->arena) {\n    snprintf(error, error_size, \"out of memory for the arena (" +
       std::to_string(arena) + " bytes)\");\n    " + P +
       "_destroy(m);\n    return 0;\n  }\n"
       "  return m;\n}\n";
  c += detail::c_create_and_error(P);
  c += "static int tg_weight_read(" + P +
       "_model* m, int k, void* to) {\n"
       "  memcpy(to, m->w[k], (size_t)tg_weights[k].bytes);\n  return 0;\n}\n"
       "static int tg_weight_write(" +
       P +
       "_model* m, int k, const void* from) {\n"
       "  memcpy(m->w[k], from, (size_t)tg_weights[k].bytes);\n  return 0;\n}\n";
  c += detail::c_weights_api(P);
  if (o.embed_weights) {
    c += "static const unsigned char tg_embedded[" +
         std::to_string(std::max<std::size_t>(weights.size(), 1)) + "] = {";
    for (std::size_t i = 0; i < weights.size(); ++i)
      c += (i % 24 == 0 ? "\n  " : "") + std::to_string(int(weights[i])) + ",";
    if (weights.empty()) c += "0";
    c += "\n};\n" + P + "_model* " + P + "_create_embedded(char* error, size_t error_size) {\n" +
         "  return " + P + "_create_from_memory(tg_embedded, " + std::to_string(weights.size()) +
         ", error, error_size);\n}\n";
  }
  c += "void " + P + "_destroy(" + P +
       "_model* m) {\n  int k;\n  if (!m) return;\n"
       "  for (k = 0; k < TG_WEIGHTS; ++k) free(m->w[k]);\n  free(m->arena);\n  free(m);\n}\n";
  c += methods;
  return out;
}

} // namespace tg
