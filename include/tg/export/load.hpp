#pragma once
// tg::load_exported: a program the json target wrote, run by tg again on one of its devices:
// the kernels of the dialect the device compiles (c on CPU, wgsl on WEBGPU, glsl on VULKAN, cuda
// on CUDA), launched in the document's order over the weights of its .safetensors file. It checks
// what a runtime of the user's own would have to: the inputs' dtypes and shapes against each
// method's, the dims against their bounds, the weights' names, dtypes and shapes.
#include <filesystem>
#include <fstream>

#include "../graph/sint_text.hpp"
#include "../util/rc.hpp"
#include "json.hpp"

namespace tg {

namespace detail {

/// A size of the document ("10*batch+-3", or a number) as a symbolic size over `dims`.
inline SInt parse_export_size(const std::string& expr, const std::vector<ExportDim>& dims) {
  const std::string bad = "tg.load_exported: malformed size '" + expr + "'";
  SInt sum = 0;
  for (std::size_t at = 0; at <= expr.size();) {
    const std::size_t plus = std::min(expr.find('+', at), expr.size());
    SInt term = 1;
    for (std::size_t f = at; f <= plus;) {
      const std::size_t star = std::min(expr.find('*', f), plus);
      const std::string factor = expr.substr(f, star - f);
      auto d = std::find_if(dims.begin(), dims.end(),
                            [&](const ExportDim& x) { return x.name == factor; });
      if (d != dims.end()) {
        term = term * sym(d->name, d->lo, d->hi, d->hi);
      } else {
        std::size_t used = 0;
        std::int64_t v = 0;
        try {
          v = std::stoll(factor, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (factor.empty() || used != factor.size())
          throw export_error(bad +
                             (factor.empty() || !std::isalpha(static_cast<unsigned char>(factor[0]))
                                  ? ""
                                  : ": '" + factor + "' is not a dim of the program"));
        term = term * SInt(v);
      }
      f = star + 1;
    }
    sum = sum + term;
    at = plus + 1;
  }
  return sum;
}

/// The same size's value for the given dim values.
inline std::int64_t eval_export_size(const std::string& expr,
                                     const std::map<std::string, std::int64_t>& values) {
  std::vector<ExportDim> dims;
  for (const auto& [name, v] : values) dims.push_back({name, v, v});
  return parse_export_size(expr, dims).max_value(); // (each dim's bounds are its value)
}

/// t as a tensor of its own contiguous buffer on its device.
inline Tensor as_buffer(Tensor t) {
  t = t.contiguous();
  t.realize();
  if (t.lazy()->op != Op::Buffer) {
    t = Tensor::make(Op::Contiguous, t.dtype(), t.sym_shape(), {t.lazy()}, t.device());
    t.realize();
  }
  return t;
}

inline DType dtype_named(const std::string& name) {
  for (int i = 0; i < dtype_count; ++i)
    if (name == dtype_name(DType(i))) return DType(i);
  throw export_error("tg.load_exported: unknown dtype '" + name + "'");
}

} // namespace detail

/// An exported program loaded by tg (tg::load_exported): call its methods with run().
class ExportedModel {
public:
  struct IO {
    std::string name;
    DType dtype = DType::Float32;
    std::vector<std::string> shape; // sizes: integers or expressions of the dims
  };
  struct Method {
    std::string name;
    std::vector<IO> inputs, outputs;
    std::vector<std::string> temporaries; // bytes
    std::vector<ExportLaunch> launches;   // (numel unused: numel_expr)
    std::vector<std::string> numel_expr;
    std::vector<std::pair<int, int>> updates; // (weight, temporary): the state it writes
  };

  /// The methods' names, in the document's order.
  std::vector<std::string> methods() const {
    std::vector<std::string> out;
    for (const Method& m : methods_) out.push_back(m.name);
    return out;
  }
  const std::string& device() const { return device_; }

  /// Runs `method` on `inputs` (in the method's order; moved to the model's device): its outputs.
  std::vector<Tensor> run(const std::string& method, const std::vector<Tensor>& inputs) const {
    auto mi = std::find_if(methods_.begin(), methods_.end(),
                           [&](const Method& m) { return m.name == method; });
    if (mi == methods_.end()) {
      std::string names;
      for (const Method& m : methods_) names += (names.empty() ? "" : ", ") + m.name;
      throw export_error("tg.load_exported: no method '" + method + "' (methods: " + names + ")");
    }
    const Method& m = *mi;
    const std::string where = "tg.load_exported: " + m.name + ": ";
    if (inputs.size() != m.inputs.size())
      throw export_error(where + "takes " + std::to_string(m.inputs.size()) + " inputs, got " +
                         std::to_string(inputs.size()));
    // the dims, from the inputs' shapes
    std::map<std::string, std::int64_t> dims;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const IO& io = m.inputs[i];
      const Tensor& x = inputs[i];
      const std::string what = where + "input '" + io.name + "' ";
      if (x.dtype() != io.dtype)
        throw export_error(what + "is " + dtype_name(x.dtype()) + "; the method takes " +
                           dtype_name(io.dtype));
      if (std::size_t(x.ndim()) != io.shape.size())
        throw export_error(what + "has " + std::to_string(x.ndim()) + " dimensions; the method " +
                           "takes " + std::to_string(io.shape.size()));
      for (std::size_t d = 0; d < io.shape.size(); ++d) {
        const std::string& s = io.shape[d];
        const std::int64_t n = x.shape()[d];
        if (std::isdigit(static_cast<unsigned char>(s[0]))) {
          if (n != detail::eval_export_size(s, {}))
            throw export_error(what + "has size " + std::to_string(n) + " in dimension " +
                               std::to_string(d) + "; the method takes " + s);
          continue;
        }
        auto [it, fresh] = dims.emplace(s, n);
        if (!fresh && it->second != n)
          throw export_error(what + "has " + s + " = " + std::to_string(n) + " in dimension " +
                             std::to_string(d) + ", where an earlier one has " + s + " = " +
                             std::to_string(it->second));
      }
    }
    for (const ExportDim& d : dims_) {
      auto it = dims.find(d.name);
      if (it != dims.end() && (it->second < d.lo || it->second > d.hi))
        throw export_error(where + d.name + " = " + std::to_string(it->second) + " is outside [" +
                           std::to_string(d.lo) + ", " + std::to_string(d.hi) + "]");
    }
    const Rc<Device> dev = tg::device(device_);
    std::vector<Tensor> in, out;
    for (const Tensor& x : inputs) in.push_back(detail::as_buffer(x.to(device_)));
    for (const IO& io : m.outputs) {
      Shape shape;
      for (const std::string& s : io.shape) shape.push_back(detail::eval_export_size(s, dims));
      out.push_back(detail::as_buffer(Tensor::full_on(shape, 0, io.dtype, device_)));
    }
    std::vector<Rc<Buffer>> temps;
    for (const std::string& bytes : m.temporaries)
      temps.push_back(make_rc<Buffer>(
          dev, DType::UInt8, std::max<std::int64_t>(detail::eval_export_size(bytes, dims), 1)));
    for (std::size_t li = 0; li < m.launches.size(); ++li) {
      const ExportLaunch& l = m.launches[li];
      if (detail::eval_export_size(m.numel_expr[li], dims) <= 0) continue;
      std::vector<void*> bufs;
      for (const ExportRef& r : l.buffers) {
        const std::size_t k = std::size_t(r.index);
        switch (r.kind) {
        case ExportRef::Kind::Input:
          bufs.push_back(in.at(k).lazy()->buffer->ptr);
          break;
        case ExportRef::Kind::Output:
          bufs.push_back(out.at(k).lazy()->buffer->ptr);
          break;
        case ExportRef::Kind::Weight:
          bufs.push_back(weights_.at(k).lazy()->buffer->ptr);
          break;
        case ExportRef::Kind::Temp:
          bufs.push_back(temps.at(k)->ptr);
          break;
        }
      }
      const Program& p = kernels_.at(std::size_t(l.kernel)).program;
      std::vector<std::int64_t> vars;
      for (const Var& v : p.vars) vars.push_back(dims.at(std::string(v.name.view())));
      runners_.at(std::size_t(l.kernel))->run(bufs, vars);
    }
    for (const auto& [w, t] : m.updates) { // the new state, once every launch has read the old
      const Tensor& target = weights_[std::size_t(w)];
      dev->copy(target.lazy()->buffer->ptr, temps[std::size_t(t)]->ptr,
                std::size_t(target.numel()) * itemsize(target.dtype()));
    }
    return out;
  }

private:
  friend ExportedModel load_exported(const std::string&, const std::string&, const std::string&);
  std::string device_;
  std::vector<ExportDim> dims_;
  std::vector<Tensor> weights_;
  std::vector<KernelCode> kernels_;
  std::vector<Rc<Runner>> runners_;
  std::vector<Method> methods_;
};

/// Loads a program the json target wrote (`json_path`), to run on `device` (by default tg's
/// default device), with its weights from `weights_path` (by default the document's weights_file,
/// beside it).
inline ExportedModel load_exported(const std::string& json_path, const std::string& device = "",
                                   const std::string& weights_path = "") {
  namespace fs = std::filesystem;
  const std::string where = "tg.load_exported: " + json_path + ": ";
  std::ifstream f(json_path, std::ios::binary);
  if (!f) throw export_error(where + "cannot open the file");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());

  ExportedModel model;
  model.device_ = device.empty() ? default_device() : device;
  const Rc<Device> dev = tg::device(model.device_);
  const Dialect want = dev->target().dialect;
  const char* dialect = want == Dialect::C      ? "c"
                        : want == Dialect::Wgsl ? "wgsl"
                        : want == Dialect::Glsl ? "glsl"
                        : want == Dialect::Cuda ? "cuda"
                                                : "";
  if (!*dialect)
    throw export_error(where + "device " + model.device_ +
                       " runs tg's own IR, which the document does not hold; load it on a device "
                       "that compiles source (CPU, WEBGPU, VULKAN, CUDA)");

  std::string format, weights_file;
  std::vector<std::pair<std::string, ExportedModel::IO>> weights; // (file name, expected)
  std::vector<std::string> found_dialects;
  bool have_program = false;
  try {
    using safetensors::json::Parser;
    Parser p(text);
    auto number = [&] { return std::stoll(std::string(p.number())); };
    auto strings = [&](std::vector<std::string>& out, int depth) {
      p.array(depth, [&] {
        if (p.at_number())
          out.push_back(std::string(p.number()));
        else
          out.push_back(p.string());
      });
    };
    auto io = [&](ExportedModel::IO& x, int depth) {
      p.object(depth, [&](const std::string& k) {
        if (k == "name")
          x.name = p.string();
        else if (k == "dtype")
          x.dtype = detail::dtype_named(p.string());
        else if (k == "shape")
          strings(x.shape, depth + 1);
        else
          p.skip(depth + 1);
      });
    };
    auto ios = [&](std::vector<ExportedModel::IO>& out, int depth) {
      p.array(depth, [&] {
        out.emplace_back();
        io(out.back(), depth + 1);
      });
    };
    p.object(0, [&](const std::string& key) {
      if (key == "format")
        format = p.string();
      else if (key == "weights_file")
        weights_file = p.string();
      else if (key == "dims")
        p.array(1, [&] {
          ExportDim d;
          p.object(2, [&](const std::string& k) {
            if (k == "name")
              d.name = p.string();
            else if (k == "lo")
              d.lo = number();
            else if (k == "hi")
              d.hi = number();
            else
              p.skip(3);
          });
          model.dims_.push_back(d);
        });
      else if (key == "weights")
        p.array(1, [&] {
          ExportedModel::IO w;
          io(w, 2);
          weights.emplace_back(w.name, w);
        });
      else if (key == "methods")
        p.array(1, [&] {
          ExportedModel::Method m;
          p.object(2, [&](const std::string& k) {
            if (k == "name")
              m.name = p.string();
            else if (k == "inputs")
              ios(m.inputs, 3);
            else if (k == "outputs")
              ios(m.outputs, 3);
            else
              p.skip(3);
          });
          model.methods_.push_back(std::move(m));
        });
      else if (key == "programs")
        p.array(1, [&] {
          std::string d;
          std::vector<KernelCode> kernels;
          std::vector<ExportedModel::Method> plans;
          p.object(2, [&](const std::string& k) {
            if (k == "dialect")
              d = p.string();
            else if (k == "kernels")
              p.array(3, [&] {
                KernelCode c;
                Program& q = c.program;
                std::vector<std::string> vars;
                p.object(4, [&](const std::string& f) {
                  if (f == "name")
                    q.name << p.string();
                  else if (f == "params")
                    p.array(5, [&] { q.params.push_back(detail::dtype_named(p.string())); });
                  else if (f == "outputs")
                    q.outputs = int(number());
                  else if (f == "vars")
                    strings(vars, 5);
                  else if (f == "outer" || f == "work") {
                    const std::string s = p.at_number() ? std::string(p.number()) : p.string();
                    (f == "outer" ? q.outer : q.work) = detail::parse_export_size(s, model.dims_);
                  } else if (f == "local")
                    q.local = int(number());
                  else if (f == "grouped") {
                    q.grouped = p.peek() == 't';
                    p.skip(5);
                  } else if (f == "items_per_outer")
                    q.items_per_outer = number();
                  else if (f == "per_thread")
                    q.per_thread = number();
                  else if (f == "source")
                    c.source << p.string();
                  else
                    p.skip(5);
                });
                for (const std::string& v : vars) {
                  const SInt s = detail::parse_export_size(v, model.dims_);
                  if (s.is_const() || s.terms().size() != 1)
                    throw export_error("tg.load_exported: kernel var '" + v +
                                       "' is not a dim of the program");
                  q.vars.push_back(s.terms()[0].vars[0]);
                }
                if (q.outputs < 1 || std::size_t(q.outputs) > q.params.size())
                  throw export_error("tg.load_exported: kernel '" + std::string(q.name.view()) +
                                     "' writes " + std::to_string(q.outputs) + " of its " +
                                     std::to_string(q.params.size()) + " buffers");
                kernels.push_back(std::move(c));
              });
            else if (k == "methods")
              p.array(3, [&] {
                ExportedModel::Method m;
                p.object(4, [&](const std::string& f) {
                  if (f == "name")
                    m.name = p.string();
                  else if (f == "temporaries")
                    strings(m.temporaries, 5);
                  else if (f == "updates")
                    p.array(5, [&] {
                      std::vector<std::string> pair;
                      strings(pair, 6);
                      if (pair.size() != 2)
                        throw export_error("tg.load_exported: an update is not [weight, temp]");
                      m.updates.emplace_back(std::stoi(pair[0]), std::stoi(pair[1]));
                    });
                  else if (f == "launches")
                    p.array(5, [&] {
                      ExportLaunch l;
                      std::string numel;
                      p.object(6, [&](const std::string& g) {
                        if (g == "kernel")
                          l.kernel = int(number());
                        else if (g == "numel")
                          numel = p.at_number() ? std::string(p.number()) : p.string();
                        else if (g == "buffers")
                          p.array(7, [&] {
                            ExportRef r;
                            std::string kind;
                            p.array(8, [&] {
                              if (p.at_number())
                                r.index = int(number());
                              else
                                kind = p.string();
                            });
                            constexpr const char* kinds[] = {"input", "output", "weight", "temp"};
                            auto at = std::find(std::begin(kinds), std::end(kinds), kind);
                            if (at == std::end(kinds))
                              throw export_error("tg.load_exported: unknown buffer kind '" + kind +
                                                 "'");
                            r.kind = ExportRef::Kind(at - std::begin(kinds));
                            l.buffers.push_back(r);
                          });
                        else
                          p.skip(7);
                      });
                      m.launches.push_back(std::move(l));
                      m.numel_expr.push_back(numel);
                    });
                  else
                    p.skip(5);
                });
                plans.push_back(std::move(m));
              });
            else
              p.skip(3);
          });
          found_dialects.push_back(d);
          if (d != dialect) return;
          have_program = true;
          model.kernels_ = std::move(kernels);
          for (ExportedModel::Method& m : model.methods_)
            for (ExportedModel::Method& plan : plans)
              if (plan.name == m.name) {
                m.temporaries = std::move(plan.temporaries);
                m.launches = std::move(plan.launches);
                m.numel_expr = std::move(plan.numel_expr);
                m.updates = std::move(plan.updates);
              }
        });
      else
        p.skip(1);
    });
    p.finish();
  } catch (const safetensors::format_error& e) {
    throw export_error(where + e.what());
  } catch (const std::logic_error& e) { // std::stoll
    throw export_error(where + "a malformed number (" + e.what() + ")");
  }
  if (format != "tg.export.v1")
    throw export_error(where + "not a document of tg's json export target (format '" + format +
                       "', expected tg.export.v1)");
  if (!have_program) {
    std::string list;
    for (const std::string& d : found_dialects) list += (list.empty() ? "" : ", ") + d;
    throw export_error(where + "device " + model.device_ + " compiles " + dialect +
                       " and the document holds the program in " +
                       (list.empty() ? "no dialect" : list) +
                       " (export with that dialect in ExportOptions::json_dialects)");
  }
  // every index the launches use must name a kernel, input, output, weight or temporary
  for (const ExportedModel::Method& m : model.methods_)
    for (const ExportLaunch& l : m.launches) {
      bool ok = l.kernel >= 0 && std::size_t(l.kernel) < model.kernels_.size();
      for (const ExportRef& r : l.buffers) {
        const std::size_t n = r.kind == ExportRef::Kind::Input    ? m.inputs.size()
                              : r.kind == ExportRef::Kind::Output ? m.outputs.size()
                              : r.kind == ExportRef::Kind::Weight ? weights.size()
                                                                  : m.temporaries.size();
        ok = ok && r.index >= 0 && std::size_t(r.index) < n;
      }
      if (!ok)
        throw export_error(where + "method '" + m.name +
                           "' launches a kernel or binds a buffer the document does not define");
    }
  for (const ExportedModel::Method& m : model.methods_)
    for (const auto& [w, t] : m.updates)
      if (w < 0 || std::size_t(w) >= weights.size() || t < 0 ||
          std::size_t(t) >= m.temporaries.size())
        throw export_error(where + "method '" + m.name +
                           "' updates a weight or from a temporary the document does not define");

  // the weights, checked against what the document says the kernels read
  const fs::path path = weights_path.empty() ? fs::path(json_path).parent_path() / weights_file
                                             : fs::path(weights_path);
  StateDict file = safetensors::load_file(path.string(), {.device = model.device_});
  for (auto& [name, want_io] : weights) {
    const Tensor* t = file.find(name);
    if (!t)
      throw export_error("tg.load_exported: " + path.string() + ": weight '" + name +
                         "' is not in the file");
    Shape shape;
    for (const std::string& s : want_io.shape) shape.push_back(detail::eval_export_size(s, {}));
    if (t->dtype() != want_io.dtype || t->sym_shape() != shape)
      throw export_error("tg.load_exported: " + path.string() + ": weight '" + name + "' is " +
                         dtype_name(t->dtype()) + detail::shape_str(t->sym_shape()) +
                         " in the file; the program reads " + dtype_name(want_io.dtype) +
                         detail::shape_str(shape));
    model.weights_.push_back(detail::as_buffer(*t));
  }
  std::vector<const KernelCode*> codes;
  for (const KernelCode& k : model.kernels_) codes.push_back(&k);
  model.runners_ = dev->prepare(codes);
  return model;
}

} // namespace tg
