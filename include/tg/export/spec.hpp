#pragma once
// What tg::export_model exports: an ExportSpec names the symbolic sizes (dims) shared across
// methods, and each method with its inputs (name, dtype, shape of integers and dim names) and the
// function that computes its outputs from them (TVM Relax's export_tvm spec, tinygrad's
// export_model). The spec is checked as it is built: each mistake is a tg::export_error naming
// the method or input and the call site.
#include <cctype>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "../nn/module.hpp"

namespace tg {

/// A size of an exported input: a fixed integer, or the name of one of the spec's dims.
using ExportSize = std::variant<std::int64_t, std::string>;

/// One input of an exported method.
struct ExportInput {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<ExportSize> shape;
};

/// A symbolic size of the exported program, in [lo, hi], shared by every method that names it.
struct ExportDim {
  std::string name;
  std::int64_t lo = 1, hi = 1;
};

/// One exported method: its inputs, the function from their tensors to its outputs (a Tensor or
/// a std::vector<Tensor>), and the outputs' names (out0, out1, ... by default).
struct ExportMethod {
  std::string name;
  std::vector<ExportInput> inputs;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
  std::vector<std::string> outputs;
  std::source_location loc;
};

namespace detail {
/// Whether s can name a C function, argument or JavaScript property (and a safetensors entry).
inline bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}
} // namespace detail

class ExportSpec {
public:
  using Loc = std::source_location;
  /// A symbolic size `name` in [lo, hi] (lo >= 0).
  ExportSpec& dim(const std::string& name, std::int64_t lo, std::int64_t hi,
                  Loc loc = Loc::current()) {
    if (!detail::is_identifier(name) || name.size() > 23)
      fail("dim",
           "'" + name +
               "' is not an identifier of at most 23 characters (letters, digits "
               "and _)",
           loc);
    if (find_dim(name)) fail("dim", "'" + name + "' is declared twice", loc);
    if (lo < 0 || hi < lo || hi >= (std::int64_t(1) << 31))
      fail("dim",
           "'" + name + "' has bounds [" + std::to_string(lo) + ", " + std::to_string(hi) +
               "]; they must satisfy 0 <= lo <= hi < 2^31",
           loc);
    dims_.push_back({name, lo, hi});
    return *this;
  }
  /// A method `name` over `inputs`: fn takes a const std::vector<tg::Tensor>& (the inputs in
  /// order) and returns a tg::Tensor or a std::vector<tg::Tensor>.
  template <class F>
  ExportSpec& method(const std::string& name, std::vector<ExportInput> inputs, F fn,
                     std::vector<std::string> outputs = {}, Loc loc = Loc::current()) {
    if (!detail::is_identifier(name))
      fail("method", "'" + name + "' is not an identifier (letters, digits and _)", loc);
    for (const ExportMethod& m : methods_)
      if (m.name == name) fail("method", "'" + name + "' is declared twice", loc);
    for (const char* own :
         {"create", "create_from_memory", "create_on", "create_embedded", "destroy", "error",
          "get_weight", "set_weight", "save_weights", "save_weights_to_memory", "load_weights",
          "load_weights_from_memory", "run", "getWeight", "setWeight", "saveWeights", "loadWeights",
          "constructor"})
      if (name == own)
        fail("method", "'" + name + "' names a function of the exported API itself", loc);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const ExportInput& in = inputs[i];
      const std::string where = "method '" + name + "', input '" + in.name + "'";
      if (!detail::is_identifier(in.name))
        fail("method", where + ": the name is not an identifier (letters, digits and _)", loc);
      for (std::size_t j = 0; j < i; ++j)
        if (inputs[j].name == in.name) fail("method", where + ": the name is used twice", loc);
      if (find_dim(in.name)) // (the JavaScript targets take dims and inputs by name)
        fail("method", where + ": the name is a dim's", loc);
      for (const ExportSize& d : in.shape) {
        if (const auto* n = std::get_if<std::int64_t>(&d); n && *n < 0)
          fail("method", where + ": size " + std::to_string(*n) + " is negative", loc);
        if (const auto* s = std::get_if<std::string>(&d); s && !find_dim(*s))
          fail("method",
               where + ": size '" + *s + "' is not a dim of the spec (declare it with dim())", loc);
      }
    }
    for (const std::string& o : outputs)
      if (!detail::is_identifier(o))
        fail("method", "method '" + name + "': output name '" + o + "' is not an identifier", loc);
    ExportMethod m{name, std::move(inputs), {}, std::move(outputs), loc};
    m.fn = [f = std::move(fn)](const std::vector<Tensor>& in) -> std::vector<Tensor> {
      using R = std::invoke_result_t<const F&, const std::vector<Tensor>&>;
      if constexpr (std::is_same_v<std::decay_t<R>, Tensor>)
        return {f(in)};
      else {
        static_assert(std::is_same_v<std::decay_t<R>, std::vector<Tensor>>,
                      "tg::ExportSpec::method: the function must return a tg::Tensor or a "
                      "std::vector<tg::Tensor>");
        return f(in);
      }
    };
    methods_.push_back(std::move(m));
    return *this;
  }

  /// Persistent state beside the module's weights: a tensor the methods read and update with
  /// tg::assign (an optimizer's moments, a counter), saved in the .safetensors file as `name`.
  /// It must be a realized tensor that owns its buffer, the one tg::assign writes.
  ExportSpec& state(const std::string& name, const Tensor& t, Loc loc = Loc::current()) {
    if (name.empty()) fail("state", "the name is empty", loc);
    for (const auto& [n, x] : states_)
      if (n == name) fail("state", "'" + name + "' is declared twice", loc);
    if (!t.defined() || !t.is_realized() || t.lazy()->op != Op::Buffer)
      fail("state",
           "'" + name +
               "' must be a realized tensor that owns its buffer (call contiguous().realize() "
               "first)",
           loc);
    states_.emplace_back(name, t);
    return *this;
  }

  /// Every tensor of a state dict as state, named prefix + its key: an optimizer's moments, step
  /// counts and learning rates (`spec.state(opt.state_dict(), "optim.")`).
  ExportSpec& state(const StateDict& sd, const std::string& prefix, Loc loc = Loc::current()) {
    for (const auto& [name, t] : sd) state(prefix + name, t, loc);
    return *this;
  }

  const std::vector<ExportDim>& dims() const { return dims_; }
  const std::vector<std::pair<std::string, Tensor>>& states() const { return states_; }
  const std::vector<ExportMethod>& methods() const { return methods_; }
  const ExportDim* find_dim(const std::string& name) const {
    for (const ExportDim& d : dims_)
      if (d.name == name) return &d;
    return nullptr;
  }

private:
  [[noreturn]] static void fail(const char* op, const std::string& msg, const Loc& loc) {
    detail::fail<export_error>(std::string("ExportSpec.") + op, msg, loc);
  }
  std::vector<ExportDim> dims_;
  std::vector<ExportMethod> methods_;
  std::vector<std::pair<std::string, Tensor>> states_;
};

} // namespace tg
