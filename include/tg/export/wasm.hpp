#pragma once
// The `wasm` export target: the `c` target's C compiled for WebAssembly (clang
// --target=wasm32-wasi against wasi-libc, no emscripten) as <prefix>.wasm, and <prefix>.js, an ES
// module that instantiates it, loads the weights into it and runs each method on typed arrays:
// for browsers without WebGPU, and node. The module needs no WASI host: the few WASI calls
// wasi-libc links (for stdio the methods never use) are answered "not supported".
#include <filesystem>
#include <fstream>

#include "c.hpp"
#include "json.hpp"

namespace tg {

namespace detail {

/// The typed array of a dtype in JavaScript.
inline const char* js_array(DType t) {
  constexpr const char* names[dtype_count] = {
      "Uint8Array",  "Int8Array",    "Int16Array",  "Int32Array",     "BigInt64Array",
      "Uint8Array",  "Uint16Array",  "Uint32Array", "BigUint64Array", "Uint16Array",
      "Uint16Array", "Float32Array", "Float64Array"};
  return names[int(t)];
}

/// The program's methods as a JavaScript object literal: dims with bounds, inputs and outputs
/// with dtypes and shapes (sizes as numbers or expressions of the dims).
inline std::string js_methods(const ExportedProgram& prog) {
  auto shape = [](const Shape& sh) { // (JSON is JavaScript)
    std::string out;
    json_shape(out, sh);
    return out;
  };
  std::string js = "{\n";
  for (const ExportedMethod& m : prog.methods) {
    js += "  " + m.name + ": {\n    dims: [";
    for (std::size_t i = 0; i < m.dims.size(); ++i) {
      const ExportDim* d = nullptr;
      for (const ExportDim& x : prog.dims)
        if (x.name == m.dims[i]) d = &x;
      js += std::string(i ? ", " : "") + "[\"" + d->name + "\", " + std::to_string(d->lo) + ", " +
            std::to_string(d->hi) + "]";
    }
    js += "],\n    inputs: [";
    for (std::size_t i = 0; i < m.inputs.size(); ++i)
      js += std::string(i ? ", " : "") + "[\"" + m.inputs[i].name + "\", \"" +
            dtype_name(m.inputs[i].dtype) + "\", " + shape(m.input_shapes[i]) + "]";
    js += "],\n    outputs: [";
    for (std::size_t k = 0; k < m.outputs.size(); ++k) {
      const Node& n = m.graph[m.outputs[k]];
      js += std::string(k ? ", " : "") + "[\"" + m.output_names[k] + "\", \"" +
            dtype_name(n.dtype) + "\", " + shape(n.shape) + "]";
    }
    js += "],\n  },\n";
  }
  return js + "}";
}

/// The rest of an exported module's opening comment (each method's arguments and results), and
/// its constants PREFIX and METHODS.
inline std::string js_api(const ExportedProgram& prog, const std::string& P) {
  std::string js;
  for (const ExportedMethod& m : prog.methods) {
    js += "//   await model." + m.name + "({";
    for (std::size_t i = 0; i < m.inputs.size(); ++i)
      js += (i ? ", " : "") + m.inputs[i].name + ": " + js_array(m.inputs[i].dtype);
    js += "}) -> {";
    for (std::size_t k = 0; k < m.output_names.size(); ++k)
      js += (k ? ", " : "") + m.output_names[k] + ": " + js_array(m.graph[m.outputs[k]].dtype);
    js += "}\n";
  }
  js += "// Dims are read from the inputs' lengths, or given by name ({batch: 7, ...}). float16 "
        "and bfloat16\n// travel as their bits in Uint16Array.\n";
  return js + "const PREFIX = \"" + P +
         "\";\n// Each method's dims [name, lo, hi], inputs and outputs [name, dtype, shape].\n"
         "export const METHODS = " +
         js_methods(prog) + ";\n";
}

/// WEIGHTS: the weights a module's model holds, [name, safetensors dtype, shape, bytes] each.
inline std::string js_weights(const ExportedProgram& prog, const std::vector<int>& weights) {
  std::string js = "const WEIGHTS = [\n";
  for (int k : weights) {
    const Tensor& t = prog.weights[std::size_t(k)].tensor;
    js += "  [\"" + prog.weights[std::size_t(k)].name + "\", \"" +
          safetensors::dtype_code(t.dtype()) + "\", [";
    for (int d = 0; d < t.ndim(); ++d)
      js += (d ? ", " : "") + std::to_string(t.shape()[std::size_t(d)]);
    js += "], " + std::to_string(t.numel() * std::int64_t(itemsize(t.dtype()))) + "],\n";
  }
  return js + "];\n";
}

/// What every exported ES module shares: typed arrays per dtype, sizes of the dims, reading a
/// file or URL, and checking a method's arguments (dims given or read from the inputs' lengths).
inline const char* js_common = R"JS(
const ARRAYS = {
  bool: Uint8Array, int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array,
  uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  float16: Uint16Array, bfloat16: Uint16Array, float32: Float32Array, float64: Float64Array,
};

// A size: a number, or an expression of the dims ("10*batch+-1").
function size(e, dims) {
  if (typeof e === "number") return e;
  let sum = 0;
  for (const term of e.split("+")) {
    let p = 1;
    for (const f of term.split("*")) p *= /^-?[0-9]/.test(f) ? Number(f) : dims[f];
    sum += p;
  }
  return sum;
}
const count = (shape, dims) => shape.reduce((n, e) => n * size(e, dims), 1);

// The typed array of each safetensors dtype.
const CODES = {
  BOOL: Uint8Array, U8: Uint8Array, I8: Int8Array, I16: Int16Array, U16: Uint16Array,
  I32: Int32Array, U32: Uint32Array, I64: BigInt64Array, U64: BigUint64Array, F16: Uint16Array,
  BF16: Uint16Array, F32: Float32Array, F64: Float64Array,
};
// The index in WEIGHTS of weight `name`.
function weightAt(name, where) {
  const k = WEIGHTS.findIndex((w) => w[0] === name);
  if (k < 0) throw new Error(`${PREFIX}.${where}: the model has no weight '${name}' (it has ${WEIGHTS.map((w) => w[0]).join(", ")})`);
  return k;
}
// The bytes of `array` as weight k's new value, checked: its typed array and length.
function weightBytes(k, array) {
  const [name, dtype, shape, bytes] = WEIGHTS[k];
  const T = CODES[dtype];
  if (!(array instanceof T))
    throw new TypeError(`${PREFIX}.setWeight: weight '${name}' is ${dtype}: pass a ${T.name}, got ${array?.constructor?.name ?? typeof array}`);
  if (array.byteLength !== bytes)
    throw new RangeError(`${PREFIX}.setWeight: weight '${name}' has ${bytes / T.BYTES_PER_ELEMENT} elements ([${shape.join(", ")}]); got ${array.length}`);
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

// The bytes of an ArrayBuffer, a typed array, a URL or a path (relative to this module).
async function bytesOf(source, what) {
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source))
    return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  const url = new URL(source, import.meta.url);
  if (url.protocol === "file:") {
    if (typeof process !== "undefined" && process.versions && process.versions.node) {
      const fs = await import("node:fs/promises");
      return new Uint8Array(await fs.readFile(url));
    }
    return new Promise((resolve, reject) => { // fetch() refuses file: URLs; XHR reads them
      const r = new XMLHttpRequest();
      r.open("GET", url.href);
      r.responseType = "arraybuffer";
      r.onload = () => r.response ? resolve(new Uint8Array(r.response))
                                  : reject(new Error(`${PREFIX}: cannot read ${what} ${url.href}`));
      r.onerror = () => reject(new Error(`${PREFIX}: cannot read ${what} ${url.href}`));
      r.send();
    });
  }
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${PREFIX}: cannot fetch ${what} ${url.href}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

// A method's arguments ({dim: n, input: typedArray, ...}) checked: its dims (given, or read from
// the inputs' lengths) and each input's array type and length.
function bind(name, args) {
  const m = METHODS[name];
  const where = `${PREFIX}.${name}`;
  if (typeof args !== "object" || args === null)
    throw new TypeError(`${where}: pass an object of the inputs ({${m.inputs.map((i) => i[0]).join(", ")}})`);
  const dims = {};
  for (const [d] of m.dims) if (args[d] !== undefined) dims[d] = args[d];
  for (const [input, dtype, shape] of m.inputs) {
    const a = args[input];
    if (!(a instanceof ARRAYS[dtype]))
      throw new TypeError(`${where}: input ${input} must be a ${ARRAYS[dtype].name} (${dtype}), got ${a === undefined ? "nothing" : a?.constructor?.name ?? typeof a}`);
    const unknown = shape.filter((e) => typeof e === "string" && e.split(/[+*]/).some((f) => !/^-?[0-9]/.test(f) && dims[f] === undefined));
    if (unknown.length === 1 && /^[A-Za-z_]\w*$/.test(unknown[0])) {
      const rest = count(shape.filter((e) => e !== unknown[0]), dims);
      if (rest > 0 && a.length % rest !== 0)
        throw new RangeError(`${where}: input ${input} has ${a.length} elements, not a multiple of ${rest} ([${shape.join(", ")}])`);
      if (rest > 0) dims[unknown[0]] = a.length / rest;
    }
  }
  for (const [d, lo, hi] of m.dims) {
    const v = dims[d];
    if (v === undefined) throw new TypeError(`${where}: dim ${d} is not given and no input's length tells it (pass {${d}: n})`);
    if (!Number.isInteger(v) || v < lo || v > hi) throw new RangeError(`${where}: ${d} = ${v} is outside [${lo}, ${hi}]`);
  }
  for (const [input, dtype, shape] of m.inputs) {
    const n = count(shape, dims);
    if (args[input].length !== n)
      throw new RangeError(`${where}: input ${input} has ${args[input].length} elements; [${shape.join(", ")}] with ${m.dims.map(([d]) => `${d} = ${dims[d]}`).join(", ")} is ${n}`);
  }
  return { m, dims };
}
)JS";

/// The ES module of the wasm target.
inline std::string wasm_module_js(const ExportedProgram& prog, const std::string& P,
                                  const std::vector<int>& weights) {
  std::string js =
      "// " + P +
      ".js: generated by tg::export_model (target wasm). The model's methods in WebAssembly\n"
      "// (" +
      P + ".wasm) over the weights of " + P +
      ".safetensors:\n"
      "//   import { create } from \"./" +
      P +
      ".js\";\n"
      "//   const model = await create();     // or create({ wasm: bytes|url, weights: "
      "bytes|url })\n";
  js += js_api(prog, P) + js_weights(prog, weights) + js_common;
  js += R"JS(
// The C string at address p.
function cstring(x, p) {
  const bytes = new Uint8Array(x.memory.buffer, p);
  return new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0)));
}
// `s` as a C string in memory from alloc.
function text(x, alloc, s) {
  const bytes = new TextEncoder().encode(s);
  const p = alloc(bytes.length + 1);
  new Uint8Array(x.memory.buffer, p, bytes.length + 1).set([...bytes, 0]);
  return p;
}

class Model {
  #x;
  #handle;
  constructor(x, handle) {
    this.#x = x;
    this.#handle = handle;
  }
  // Frees the model's memory in the module; the model cannot run after.
  destroy() {
    if (this.#handle) this.#x[`${PREFIX}_destroy`](this.#handle);
    this.#handle = 0;
  }
  // Calls f(x, handle, alloc) with memory from alloc freed after; a C function's failure (a
  // nonzero result) is an Error with the reason the model gives.
  #call(where, f) {
    const x = this.#x;
    if (!this.#handle) throw new Error(`${PREFIX}.${where}: the model was destroyed`);
    const held = [];
    const alloc = (bytes) => {
      const p = x.tg_malloc(Math.max(bytes, 1));
      if (!p) throw new RangeError(`${PREFIX}.${where}: out of WebAssembly memory (${bytes} bytes)`);
      held.push(p);
      return p;
    };
    try {
      return f(x, this.#handle, alloc, () => new Error(`${PREFIX}.${where}: ${cstring(x, x[`${PREFIX}_error`](this.#handle))}`));
    } finally {
      for (const p of held) x.tg_free(p);
    }
  }
  // A weight (or state) by name, as a typed array of its dtype.
  async getWeight(name) {
    const k = weightAt(name, "getWeight");
    const [, dtype, , bytes] = WEIGHTS[k];
    return this.#call("getWeight", (x, h, alloc, failed) => {
      const p = alloc(bytes);
      if (x[`${PREFIX}_get_weight`](h, text(x, alloc, name), p, bytes)) throw failed();
      return new CODES[dtype](x.memory.buffer.slice(p, p + bytes));
    });
  }
  // Sets a weight (or state) by name from a typed array of its dtype and size: a training step's
  // learning rate ("optim.param_groups.0.lr") takes effect at the next call.
  async setWeight(name, array) {
    const bytes = weightBytes(weightAt(name, "setWeight"), array);
    this.#call("setWeight", (x, h, alloc, failed) => {
      const p = alloc(bytes.length);
      new Uint8Array(x.memory.buffer, p, bytes.length).set(bytes);
      if (x[`${PREFIX}_set_weight`](h, text(x, alloc, name), p, bytes.length)) throw failed();
    });
  }
  // Every weight and state as the bytes of a .safetensors file.
  async saveWeights() {
    return this.#call("saveWeights", (x, h, alloc, failed) => {
      const size = alloc(4);
      const p = x[`${PREFIX}_save_weights_to_memory`](h, size);
      if (!p) throw failed();
      const file = new Uint8Array(x.memory.buffer, p, new Uint32Array(x.memory.buffer, size, 1)[0]).slice();
      x.tg_free(p);
      return file;
    });
  }
  // Replaces the weights with a .safetensors file's (bytes, a URL or a path), checked as create
  // checks them; a file that does not match leaves the model as it was.
  async loadWeights(source) {
    const file = await bytesOf(source, "the weights");
    this.#call("loadWeights", (x, h, alloc, failed) => {
      const p = alloc(file.length);
      new Uint8Array(x.memory.buffer, p, file.length).set(file);
      if (x[`${PREFIX}_load_weights_from_memory`](h, p, file.length)) throw failed();
    });
  }
  async run(name, args) {
    const { m, dims } = bind(name, args);
    return this.#call(name, (x, h, alloc, failed) => {
      const ins = m.inputs.map(([input]) => {
        const a = args[input];
        const p = alloc(a.byteLength);
        new Uint8Array(x.memory.buffer, p, a.byteLength).set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
        return p;
      });
      const outs = m.outputs.map(([, dtype, shape]) => {
        const n = count(shape, dims);
        return [alloc(n * ARRAYS[dtype].BYTES_PER_ELEMENT), ARRAYS[dtype], n];
      });
      if (x[`${PREFIX}_${name}`](h, ...m.dims.map(([d]) => BigInt(dims[d])), ...ins, ...outs.map((o) => o[0]))) throw failed();
      const result = {};
      m.outputs.forEach(([output], k) => {
        const [p, T, n] = outs[k];
        result[output] = new T(x.memory.buffer, p, n).slice();
      });
      return result;
    });
  }
)JS";
  for (const ExportedMethod& m : prog.methods)
    js += "  " + m.name + "(args) {\n    return this.run(\"" + m.name + "\", args);\n  }\n";
  js += R"JS(}

// Instantiates the module and loads the weights: `wasm` and `weights` are bytes, URLs or paths
// (default: the files beside this module). Rejects with the loader's reason where the weights
// do not match the model (a missing weight, another dtype or shape, a truncated file).
export async function create({ wasm, weights } = {}) {
  const [code, file] = await Promise.all([
    bytesOf(wasm ?? `./${PREFIX}.wasm`, "the module"),
    bytesOf(weights ?? `./${PREFIX}.safetensors`, "the weights"),
  ]);
  const module = await WebAssembly.compile(code);
  const imports = {};
  for (const i of WebAssembly.Module.imports(module))
    (imports[i.module] ??= {})[i.name] = () => 52; // WASI's ENOSYS: stdio the methods never use
  const x = (await WebAssembly.instantiate(module, imports)).exports;
  x._initialize?.();
  const err = x.tg_malloc(256), at = x.tg_malloc(file.length);
  if (!err || !at) throw new RangeError(`${PREFIX}: out of WebAssembly memory for the weights (${file.length} bytes)`);
  new Uint8Array(x.memory.buffer, at, file.length).set(file);
  const handle = x[`${PREFIX}_create_from_memory`](at, file.length, err, 256);
  x.tg_free(at);
  const why = cstring(x, err);
  x.tg_free(err);
  if (!handle) throw new Error(`${PREFIX}: ${why}`);
  return new Model(x, handle);
}
)JS";
  return js;
}

/// The C that exports the module's allocator to its JavaScript host.
inline const char* wasm_glue = R"C(#include <stdlib.h>
__attribute__((export_name("tg_malloc"))) void* tg_malloc(size_t n) { return malloc(n); }
__attribute__((export_name("tg_free"))) void tg_free(void* p) { free(p); }
)C";

inline void write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary);
  f.write(text.data(), std::streamsize(text.size()));
  if (!f) throw export_error("tg.export: cannot write " + path.string());
}

/// A clang that builds for wasm32-wasi here (TG_WASM_CC, else clang, clang-19, clang-14), or ""
/// with the reason in `why`.
inline std::string wasm_compiler(const std::filesystem::path& scratch, std::string& why) {
  const std::string requested = env::get("TG_WASM_CC");
  std::vector<std::string> candidates =
      requested.empty() ? std::vector<std::string>{"clang", "clang-19", "clang-14"}
                        : std::vector<std::string>{requested};
  write_text(scratch / "probe.c", "#include <stdlib.h>\nint f(void) { return 0; }\n");
  for (const std::string& c : candidates) {
    const std::string path = find_in_path(c);
    if (path.empty()) continue;
    const int rc = run_process({path, "--target=wasm32-wasi", "-O2", "-mexec-model=reactor",
                                "probe.c", "-o", "probe.wasm"},
                               (scratch / "probe.log").string(), scratch.string());
    if (rc == 0) return path;
    why += "\n  " + path + ": " + read_file((scratch / "probe.log").string());
  }
  if (why.empty())
    why = "\n  no " + (requested.empty() ? std::string("clang, clang-19 or clang-14") : requested) +
          " on PATH";
  return "";
}

} // namespace detail

/// The wasm target's files: the module's bytes and its JavaScript host.
struct ExportedWasm {
  std::string wasm, js;
};

/// Compiles the program's C (the `c` target's, threads off) for wasm32-wasi with clang, in a
/// scratch folder of its own.
inline ExportedWasm export_wasm(const ExportedProgram& prog, const ExportCOptions& o,
                                const std::vector<unsigned char>& weights) {
  namespace fs = std::filesystem;
  const ExportedC c = export_c(prog, o, weights);
  std::string tmpl = (fs::temp_directory_path() / "tg-export-wasm-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    throw export_error("tg.export: wasm: cannot make a scratch folder under " +
                       fs::temp_directory_path().string());
  const fs::path dir(tmpl);
  struct Remove {
    fs::path d;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } remove{dir};
  std::string why;
  const std::string cc = detail::wasm_compiler(dir, why);
  if (cc.empty())
    throw export_error("tg.export: wasm: no clang that builds for wasm32-wasi (it needs clang, "
                       "wasm-ld and wasi-libc: Debian's clang, lld, wasi-libc and "
                       "libclang-rt-14-dev-wasm32; or set TG_WASM_CC):" +
                       why);
  const std::string& P = o.prefix;
  detail::write_text(dir / (P + ".h"), c.header);
  detail::write_text(dir / (P + ".c"), c.source);
  detail::write_text(dir / "glue.c", detail::wasm_glue);
  // The CPU device's kernels keep packed panels on the stack (64 KiB and more): a 1 MiB stack
  // (wasm-ld's default is 64 KiB), placed first so that an overflow traps instead of writing
  // over the heap.
  std::vector<std::string> argv = {cc,
                                   "--target=wasm32-wasi",
                                   "-O2",
                                   "-msimd128",
                                   "-mexec-model=reactor",
                                   "-Wl,--stack-first",
                                   "-Wl,-z,stack-size=1048576"};
  for (const char* f : {"create_from_memory", "destroy", "error", "get_weight", "set_weight",
                        "save_weights_to_memory", "load_weights_from_memory"})
    argv.push_back("-Wl,--export=" + P + "_" + f);
  for (const ExportedMethod& m : prog.methods) argv.push_back("-Wl,--export=" + P + "_" + m.name);
  for (const std::string& f :
       {P + ".c", std::string("glue.c"), std::string("-lm"), std::string("-o"), P + ".wasm"})
    argv.push_back(f);
  const int rc = detail::run_process(argv, (dir / "build.log").string(), dir.string());
  if (rc != 0)
    throw export_error("tg.export: wasm: " + cc + " failed (" + detail::process_status(rc) +
                       "):\n" + detail::read_file((dir / "build.log").string()));
  return {detail::read_file((dir / (P + ".wasm")).string()),
          detail::wasm_module_js(prog, P, c.weights)};
}

} // namespace tg
