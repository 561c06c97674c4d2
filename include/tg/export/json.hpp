#pragma once
// The `json` export target: the whole program as one JSON document, for a runtime of the user's
// own or for tg::load_exported. It names the dims with their bounds, the weights (read from the
// .safetensors file beside it), each method's inputs and outputs with dtypes and shapes, and, per
// dialect, the compiled program: the kernels (source, parameter dtypes, launch sizes) and each
// method's temporaries and launches. A size is an integer or an expression of the dims: terms
// joined by '+', each an integer and dim names joined by '*' ("10*batch", "batch*batch+-1").
#include "../graph/sint_text.hpp"
#include "../state/safetensors_format.hpp"
#include "plan.hpp"

namespace tg {

namespace detail {

/// The export targets of each dialect the json target writes.
inline Target export_dialect_target(const std::string& dialect) {
  if (dialect == "c") return Target::cpu();
  if (dialect == "wgsl") return export_wgsl_target();
  if (dialect == "glsl") return export_glsl_target();
  if (dialect == "cuda") return Target::cuda(export_gpu_launch());
  throw export_error("tg.export: no dialect '" + dialect + "' (dialects: c, wgsl, glsl, cuda)");
}

inline void json_size(std::string& out, const SInt& s) {
  Text t;
  write_sint(t, s);
  if (s.is_const())
    out += t.view();
  else
    safetensors::json::quote(out, t.view());
}

inline void json_shape(std::string& out, const Shape& shape) {
  out += '[';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    json_size(out, shape[i]);
  }
  out += ']';
}

inline void json_field(std::string& out, const char* key, std::string_view value) {
  out += '"';
  out += key;
  out += "\": ";
  safetensors::json::quote(out, value);
}

} // namespace detail

namespace detail {
/// The document over the program compiled as each of `programs` (dialect, plan). `files`: the
/// prefix of each kernel's source and SPIR-V files where a target writes them (<files>_k<N>.comp
/// and .spv), named in the document.
inline std::string json_document(const ExportedProgram& prog, const std::string& weights_file,
                                 const std::vector<std::pair<std::string, ExportPlan>>& programs,
                                 const std::string& files = "") {
  using safetensors::json::quote;
  std::string j = "{\n  \"format\": \"tg.export.v1\",\n  ";
  json_field(j, "weights_file", weights_file);
  j += ",\n  \"dims\": [";
  for (std::size_t i = 0; i < prog.dims.size(); ++i) {
    const ExportDim& d = prog.dims[i];
    j += std::string(i ? ", " : "") + "{";
    json_field(j, "name", d.name);
    j += ", \"lo\": " + std::to_string(d.lo) + ", \"hi\": " + std::to_string(d.hi) + "}";
  }
  j += "],\n  \"weights\": [";
  bool first = true;
  for (const ExportedWeight& w : prog.weights) {
    if (!w.used) continue;
    j += std::string(first ? "\n    {" : ",\n    {");
    first = false;
    json_field(j, "name", w.name);
    j += ", ";
    json_field(j, "dtype", dtype_name(w.tensor.dtype()));
    j += ", \"shape\": ";
    json_shape(j, w.tensor.sym_shape());
    j += "}";
  }
  j += "],\n  \"methods\": [";
  for (std::size_t mi = 0; mi < prog.methods.size(); ++mi) {
    const ExportedMethod& m = prog.methods[mi];
    j += std::string(mi ? ",\n    {" : "\n    {");
    json_field(j, "name", m.name);
    j += ", \"dims\": [";
    for (std::size_t i = 0; i < m.dims.size(); ++i) {
      if (i) j += ", ";
      quote(j, m.dims[i]);
    }
    j += "],\n     \"inputs\": [";
    for (std::size_t i = 0; i < m.inputs.size(); ++i) {
      j += std::string(i ? ", " : "") + "{";
      json_field(j, "name", m.inputs[i].name);
      j += ", ";
      json_field(j, "dtype", dtype_name(m.inputs[i].dtype));
      j += ", \"shape\": ";
      json_shape(j, m.input_shapes[i]);
      j += "}";
    }
    j += "],\n     \"outputs\": [";
    for (std::size_t k = 0; k < m.outputs.size(); ++k) {
      const Node& n = m.graph[m.outputs[k]];
      j += std::string(k ? ", " : "") + "{";
      json_field(j, "name", m.output_names[k]);
      j += ", ";
      json_field(j, "dtype", dtype_name(n.dtype));
      j += ", \"shape\": ";
      json_shape(j, n.shape);
      j += "}";
    }
    j += "]}";
  }
  j += "],\n  \"programs\": [";
  for (std::size_t di = 0; di < programs.size(); ++di) {
    const ExportPlan& plan = programs[di].second;
    j += std::string(di ? ",\n    {" : "\n    {");
    json_field(j, "dialect", programs[di].first);
    j += ",\n     \"kernels\": [";
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
      const Program& p = plan.kernels[k].program;
      j += std::string(k ? ",\n      {" : "\n      {");
      json_field(j, "name", p.name.view());
      j += ", \"params\": [";
      for (std::size_t i = 0; i < p.params.size(); ++i) {
        if (i) j += ", ";
        quote(j, dtype_name(p.params[i]));
      }
      j += "], \"outputs\": " + std::to_string(p.outputs) + ", \"vars\": [";
      for (std::size_t i = 0; i < p.vars.size(); ++i) {
        if (i) j += ", ";
        quote(j, p.vars[i].name.view());
      }
      j += "], \"outer\": ";
      json_size(j, p.outer);
      j += ", \"work\": ";
      json_size(j, p.work);
      j += ", \"local\": " + std::to_string(p.local) +
           ", \"grouped\": " + (p.grouped ? "true" : "false") +
           ", \"items_per_outer\": " + std::to_string(p.items_per_outer) +
           ", \"per_thread\": " + std::to_string(p.per_thread) + ",\n       ";
      if (!files.empty()) {
        const std::string file = files + "_k" + std::to_string(k);
        json_field(j, "source_file", file + ".comp");
        j += ", ";
        json_field(j, "spirv_file", file + ".spv");
        j += ",\n       ";
      }
      json_field(j, "source", plan.kernels[k].source.view());
      j += "}";
    }
    j += "],\n     \"methods\": [";
    for (std::size_t mi = 0; mi < plan.methods.size(); ++mi) {
      const ExportMethodPlan& mp = plan.methods[mi];
      j += std::string(mi ? ",\n      {" : "\n      {");
      json_field(j, "name", prog.methods[mi].name);
      j += ", \"temporaries\": [";
      for (std::size_t t = 0; t < mp.temp_bytes.size(); ++t) {
        if (t) j += ", ";
        json_size(j, mp.temp_bytes[t]);
      }
      j += "],\n       \"launches\": [";
      for (std::size_t li = 0; li < mp.launches.size(); ++li) {
        const ExportLaunch& l = mp.launches[li];
        j += std::string(li ? ",\n        " : "\n        ") +
             "{\"kernel\": " + std::to_string(l.kernel) + ", \"buffers\": [";
        for (std::size_t b = 0; b < l.buffers.size(); ++b) {
          constexpr const char* kinds[] = {"input", "output", "weight", "temp"};
          j += std::string(b ? ", " : "") + "[\"" + kinds[int(l.buffers[b].kind)] + "\", " +
               std::to_string(l.buffers[b].index) + "]";
        }
        j += "], \"numel\": ";
        json_size(j, l.numel);
        j += "}";
      }
      j += "],\n       \"updates\": [";
      for (std::size_t u = 0; u < mp.updates.size(); ++u)
        j += std::string(u ? ", " : "") + "[" + std::to_string(mp.updates[u].weight) + ", " +
             std::to_string(mp.updates[u].temp) + "]";
      j += "]}";
    }
    j += "]}";
  }
  j += "]\n}\n";
  return j;
}
} // namespace detail

/// The program as a JSON document, with its compiled form in each of `dialects` ("c", "wgsl",
/// "glsl", "cuda").
inline std::string export_json(const ExportedProgram& prog, const std::string& weights_file,
                               const std::vector<std::string>& dialects) {
  std::vector<std::pair<std::string, ExportPlan>> programs;
  for (const std::string& d : dialects) try {
      programs.emplace_back(d, plan_export(prog, detail::export_dialect_target(d)));
    } catch (const export_error&) {
      throw;
    } catch (const error& e) { // a kernel the dialect cannot express (float64 in WGSL)
      throw export_error("tg.export: json: dialect " + d + ": " + e.what() +
                         " (leave it out of ExportOptions::json_dialects)");
    }
  return detail::json_document(prog, weights_file, programs);
}

} // namespace tg
