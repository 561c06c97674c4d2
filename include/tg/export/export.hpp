#pragma once
// tg::export_model: a module (or free functions) and an ExportSpec become files that run the
// methods where tg is not: the weights in one .safetensors file (the module's state_dict names,
// and tg.constant.K for constants the methods make), beside each target's artifact. Exports are
// deterministic: the same model and spec give byte-identical files.
#include <filesystem>
#include <fstream>

#include "cuda.hpp"
#include "load.hpp"
#include "vulkan.hpp"
#include "webgpu.hpp"

namespace tg {

/// Options of tg::export_model.
struct ExportOptions {
  std::string prefix = "model"; // the artifact's files and function names (<prefix>_<method>)
  bool embed_weights = false;   // the weights also in the source (small models)
  bool iso_c = false;      // c: plain ISO C11 loops for any C compiler (default: the CPU device's
                           // kernels, GNU C vector types, for GCC and Clang)
  bool webgpu_f16 = false; // webgpu: float16 tensors in array<f16>, for devices with shader-f16
                           // (default: packed in u32 words, for every device)
  std::vector<std::string> json_dialects = {"c", "wgsl"}; // json: the program compiled for each
                                                          // (c, wgsl, glsl, cuda)
  std::string cuda_arch = {}; // cuda: the virtual architecture of the PTX embedded in the host
                              // ("compute_80"; default: the oldest NVRTC compiles for; "none": no
                              // PTX, the host loads a module built from the .cu)
};

/// What an export wrote: the paths of its files.
struct ExportResult {
  std::vector<std::string> files;
};

namespace detail {
inline void write_export_file(const std::filesystem::path& path, std::string_view bytes,
                              ExportResult& r) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  if (!f) throw export_error("tg.export: cannot write " + path.string());
  r.files.push_back(path.string());
}

/// The target and options, checked before anything is traced.
inline void check_export(const std::string& target, const ExportOptions& o,
                         const std::source_location& loc) {
  if (!is_identifier(o.prefix))
    fail<export_error>("export", "prefix '" + o.prefix + "' is not an identifier", loc);
  if (target != "c" && target != "cuda" && target != "json" && target != "vulkan" &&
      target != "wasm" && target != "webgpu")
    fail<export_error>(
        "export",
        "no export target '" + target + "' (targets: c, cuda, json, vulkan, wasm, webgpu)", loc);
  if (!o.cuda_arch.empty() && target != "cuda")
    fail<export_error>("export", "cuda_arch is an option of the cuda target", loc);
  if (!o.cuda_arch.empty() && o.cuda_arch != "none" && !o.cuda_arch.starts_with("compute_"))
    fail<export_error>("export",
                       "cuda_arch '" + o.cuda_arch +
                           "' is not a virtual architecture (compute_75, compute_90, ...) or none",
                       loc);
  if (o.embed_weights && target != "c")
    fail<export_error>("export",
                       "embed_weights is an option of the c target (" + target +
                           " loads the .safetensors file)",
                       loc);
  for (const std::string& d : o.json_dialects)
    if (d != "c" && d != "wgsl" && d != "glsl" && d != "cuda")
      fail<export_error>("export", "no json dialect '" + d + "' (dialects: c, wgsl, glsl, cuda)",
                         loc);
}

inline ExportResult export_traced(const ExportedProgram& prog, const std::string& target,
                                  const std::string& out_dir, const ExportOptions& o,
                                  const std::source_location& loc) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec)
    fail<export_error>("export", "cannot create the folder " + out_dir + ": " + ec.message(), loc);
  StateDict named;
  for (const ExportedWeight& w : prog.weights) named.insert(w.name, w.tensor);
  const std::vector<unsigned char> weights =
      safetensors::save(named, {{"format", "pt"}, {"producer", "tg::export_model"}});
  ExportResult r;
  const std::filesystem::path dir(out_dir);
  const std::string weights_name = o.prefix + ".safetensors";
  write_export_file(dir / weights_name,
                    {reinterpret_cast<const char*>(weights.data()), weights.size()}, r);
  if (target == "webgpu") {
    write_export_file(dir / (o.prefix + ".js"), export_webgpu(prog, o.prefix, o.webgpu_f16), r);
    return r;
  }
  if (target == "json") {
    write_export_file(dir / (o.prefix + ".json"), export_json(prog, weights_name, o.json_dialects),
                      r);
    return r;
  }
  ExportCOptions c{o.prefix, weights_name, o.embed_weights, o.iso_c};
  if (target == "cuda") {
    ExportedCuda code = export_cuda(prog, c, o.cuda_arch);
    write_export_file(dir / (o.prefix + ".cu"), code.cu, r);
    write_export_file(dir / (o.prefix + ".h"), code.header, r);
    write_export_file(dir / (o.prefix + ".c"), code.source, r);
    return r;
  }
  if (target == "vulkan") {
    ExportedVulkan code = export_vulkan(prog, c);
    write_export_file(dir / (o.prefix + ".h"), code.header, r);
    write_export_file(dir / (o.prefix + ".cpp"), code.source, r);
    write_export_file(dir / (o.prefix + ".json"), code.manifest, r);
    for (std::size_t k = 0; k < code.glsl.size(); ++k) {
      const std::string file = o.prefix + "_k" + std::to_string(k);
      write_export_file(dir / (file + ".comp"), code.glsl[k], r);
      write_export_file(dir / (file + ".spv"), code.spirv[k], r);
    }
    return r;
  }
  if (target == "wasm") {
    ExportedWasm w = export_wasm(prog, c, weights);
    write_export_file(dir / (o.prefix + ".wasm"), w.wasm, r);
    write_export_file(dir / (o.prefix + ".js"), w.js, r);
    return r;
  }
  ExportedC code = export_c(prog, c, weights);
  write_export_file(dir / (o.prefix + ".h"), code.header, r);
  write_export_file(dir / (o.prefix + ".c"), code.source, r);
  return r;
}
} // namespace detail

/// Exports the methods of `spec` over module m's weights as `target` ("c", "cuda", "vulkan",
/// "wasm", "webgpu", "json") into out_dir.
inline ExportResult export_model(const nn::Module& m, const ExportSpec& spec,
                                 const std::string& target, const std::string& out_dir,
                                 const ExportOptions& o = {},
                                 std::source_location loc = std::source_location::current()) {
  detail::check_export(target, o, loc);
  return detail::export_traced(trace_export(&m, spec, loc), target, out_dir, o, loc);
}
/// The same for methods that are free functions (their weights: the constants they use).
inline ExportResult export_model(const ExportSpec& spec, const std::string& target,
                                 const std::string& out_dir, const ExportOptions& o = {},
                                 std::source_location loc = std::source_location::current()) {
  detail::check_export(target, o, loc);
  return detail::export_traced(trace_export(nullptr, spec, loc), target, out_dir, o, loc);
}

} // namespace tg
