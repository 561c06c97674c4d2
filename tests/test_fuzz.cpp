// Randomized differential test: random graphs of tg ops (random shapes, broadcasting, movement,
// dtypes, reductions, matmul, softmax, ...) evaluated several ways and compared element by element:
//   1. fused on CPU: the whole expression is built lazily and realized once;
//   2. unfused on CPU: the same ops, each realized on its own (every op is its own kernel);
//   3. the whole expression on the reference interpreter (device INTERP);
//   4. fused on every other test device (tests/devices.hpp: VULKAN, NVRTC or CUDA), against INTERP;
//   5. for one graph in five, on CPU with a random subset of the values realized on the way.
//
// Graphs are evaluated in waves (TG_FUZZ_WAVE, default 40): the graphs of a wave are built in lock
// step and realized together, so that their kernels compile in batches (a cold run is dominated by
// kernel compiles); the graphs share no tensors, so each still gets its own kernels.
//
// Environment: TG_FUZZ_SEED (default fixed), TG_FUZZ_GRAPHS (default 1000), TG_FUZZ_ONLY=<i>
// (run only graph i and print its op sequence), TG_FUZZ_VERBOSE=1 (print every graph),
// TG_FUZZ_WAVE=<n> (graphs per wave).
// A failure prints the seed, the graph index and the op sequence with every value's shape.
#include <doctest/doctest.h>
#include <tg/tg.hpp>

#include "devices.hpp" // the other available devices (VULKAN, CUDA or NVRTC checks), against INTERP

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using tg::DType;
using tg::Tensor;
using Dims = std::vector<std::int64_t>;

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtoull(v, nullptr, 0);
}

std::int64_t numel_of(const Dims& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) n *= d;
  return n;
}
tg::Shape to_shape(const Dims& s) { return tg::Shape(s.begin(), s.end()); }

template <class T> std::string list_str(const std::vector<T>& v) {
  std::string r = "{";
  for (std::size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "}";
}
std::string num_str(double x) {
  std::ostringstream o;
  o.precision(9);
  o << x;
  return o.str();
}
std::string type_str(const Tensor& t) {
  return std::string(tg::dtype_name(t.dtype())) + list_str(t.shape());
}
std::string opt_str(std::optional<std::int64_t> v) {
  return v ? std::to_string(*v) : std::string("None");
}
/// `pattern` with every free-standing "x" replaced by `name`.
std::string subst_x(const std::string& pattern, const std::string& name) {
  std::string r;
  auto alpha = [&](std::size_t i) {
    return i < pattern.size() && std::isalpha(static_cast<unsigned char>(pattern[i]));
  };
  for (std::size_t i = 0; i < pattern.size(); ++i)
    r += pattern[i] == 'x' && (i == 0 || !alpha(i - 1)) && !alpha(i + 1)
             ? name
             : std::string(1, pattern[i]);
  return r;
}

// ---- a graph: a sequence of steps, each building one value from earlier ones ----------------

struct Ctx {
  std::string device;
  std::vector<Tensor> v;
  std::vector<int>* reads = nullptr; // when set, records the values a step reads
  const Tensor& at(int i) {
    if (reads) reads->push_back(i);
    return v[std::size_t(i)];
  }
};
using StepFn = std::function<Tensor(Ctx&)>;
struct Step {
  std::string desc;
  StepFn fn;
};
struct Case {
  std::vector<Step> steps;
  std::vector<int> outputs;
  std::string mode;          // "standard", "large", "float16" or "bfloat16" (", 32-bit": narrow)
  bool narrow = false;       // no 64-bit values: every device computes it (WEBGPU too)
  std::vector<bool> mixed;   // when not empty: a fourth evaluation realizes just these steps
  double rtol = 0, atol = 0; // float tolerances (atol scaled by max(1, max |value|))
  std::string describe() const {
    std::string r = "  mode " + mode + "; outputs";
    for (int o : outputs) r += " v" + std::to_string(o);
    r += "\n";
    for (const Step& s : steps) r += "  " + s.desc + "\n";
    return r;
  }
};

enum class Eval { Fused, Unfused, Mixed };
/// Runs the cases of a wave in lock step on `device` and returns each case's outputs, realized and
/// contiguous. Step i of every case is built, then the values this evaluation realizes at that step
/// (unfused: every value; mixed: those in c.mixed) are realized by one tg::realize, as are the
/// outputs at the end (fused: nothing earlier). The cases share no tensors, so each keeps its own
/// kernels; batching them lets the runtimes compile a wave's kernels together.
std::vector<std::vector<Tensor>> run_wave(const std::vector<const Case*>& cs,
                                          const std::string& device, Eval how) {
  std::vector<Ctx> ctx(cs.size(), Ctx{device, {}, nullptr});
  std::size_t most = 0;
  for (const Case* c : cs) most = std::max(most, c->steps.size());
  for (std::size_t i = 0; i < most; ++i) {
    std::vector<Tensor> now;
    for (std::size_t k = 0; k < cs.size(); ++k) {
      const Case& c = *cs[k];
      if (i >= c.steps.size()) continue;
      Tensor t = c.steps[i].fn(ctx[k]);
      if (how == Eval::Unfused || (how == Eval::Mixed && c.mixed[i])) now.push_back(t);
      ctx[k].v.push_back(t);
    }
    if (!now.empty()) tg::realize(now);
  }
  std::vector<std::vector<Tensor>> outs(cs.size());
  std::vector<Tensor> all;
  for (std::size_t k = 0; k < cs.size(); ++k)
    for (int o : cs[k]->outputs) {
      outs[k].push_back(ctx[k].v[std::size_t(o)]);
      all.push_back(outs[k].back());
    }
  tg::realize(all);
  // an output that is a view of a buffer is copied out (as to_vector would, one by one)
  all.clear();
  for (auto& o : outs)
    for (Tensor& t : o)
      if (t.lazy()->op != tg::Op::Buffer) all.push_back(t = t.contiguous());
  if (!all.empty()) tg::realize(all);
  return outs;
}

struct Values {
  Dims shape;
  DType dtype = DType::Float32;
  std::vector<double> f;       // float outputs
  std::vector<std::int64_t> i; // integer and bool outputs (compared exactly)
};
Values read(const Tensor& t) {
  Values r;
  r.shape = t.shape();
  r.dtype = t.dtype();
  if (tg::is_float(t.dtype()))
    r.f = t.to_vector<double>();
  else
    r.i = t.to_vector<std::int64_t>();
  return r;
}

/// "" when `got` matches `ref`, else a description of the first mismatches.
std::string compare(const Values& ref, const Values& got, double rtol, double atol) {
  if (ref.shape != got.shape || ref.dtype != got.dtype)
    return "type differs: " + std::string(tg::dtype_name(ref.dtype)) + list_str(ref.shape) +
           " vs " + tg::dtype_name(got.dtype) + list_str(got.shape);
  std::string out;
  int shown = 0, bad = 0;
  if (!ref.i.empty() || !got.i.empty()) {
    for (std::size_t k = 0; k < ref.i.size(); ++k)
      if (ref.i[k] != got.i[k] && ++bad && shown++ < 8)
        out += "    [" + std::to_string(k) + "] " + std::to_string(ref.i[k]) + " vs " +
               std::to_string(got.i[k]) + "\n";
  } else {
    double scale = 1;
    for (double x : ref.f)
      if (std::isfinite(x)) scale = std::max(scale, std::fabs(x));
    for (std::size_t k = 0; k < ref.f.size(); ++k) {
      double a = ref.f[k], b = got.f[k];
      bool ok = (std::isnan(a) && std::isnan(b)) || a == b ||
                (std::isfinite(a) && std::isfinite(b) &&
                 std::fabs(a - b) <= atol * scale + rtol * std::fabs(a));
      if (!ok && ++bad && shown++ < 8)
        out += "    [" + std::to_string(k) + "] " + num_str(a) + " vs " + num_str(b) + "\n";
    }
  }
  if (!bad) return "";
  return std::to_string(bad) + " of " + std::to_string(std::max(ref.i.size(), ref.f.size())) +
         " elements differ (reference vs other):\n" + out;
}

// ---- the generator ---------------------------------------------------------------------------

struct UnaryOp {
  const char* name;
  Tensor (*f)(const Tensor&);
  bool bool_ok, half_ok;
};
const UnaryOp kUnary[] = {
    {"exp(clamp(x, -8, 8))", [](const Tensor& x) { return x.clamp(-8.0, 8.0).exp(); }, false,
     false},
    {"exp(clamp(x, -4, 4))", [](const Tensor& x) { return x.clamp(-4.0, 4.0).exp(); }, false, true},
    {"exp2(clamp(x, -10, 10))", [](const Tensor& x) { return x.clamp(-10.0, 10.0).exp2(); }, false,
     true},
    {"log(abs(x) + 1)", [](const Tensor& x) { return (x.abs() + 1).log(); }, false, true},
    {"log2(abs(x) + 1)", [](const Tensor& x) { return (x.abs() + 1).log2(); }, false, true},
    {"sqrt(abs(x))", [](const Tensor& x) { return x.abs().sqrt(); }, false, false},
    {"sqrt(abs(x) + 1)", [](const Tensor& x) { return (x.abs() + 1).sqrt(); }, false, true},
    {"rsqrt(abs(x) + 1)", [](const Tensor& x) { return (x.abs() + 1).rsqrt(); }, false, true},
    {"reciprocal(x)", [](const Tensor& x) { return x.reciprocal(); }, true, false},
    {"sin(x)", [](const Tensor& x) { return x.sin(); }, true, true},
    {"cos(x)", [](const Tensor& x) { return x.cos(); }, true, true},
    {"tanh(x)", [](const Tensor& x) { return x.tanh(); }, true, true},
    {"sigmoid(x)", [](const Tensor& x) { return x.sigmoid(); }, true, true},
    {"relu(x)", [](const Tensor& x) { return x.relu(); }, false, true},
    {"abs(x)", [](const Tensor& x) { return x.abs(); }, false, true},
    {"-x", [](const Tensor& x) { return -x; }, false, true},
    {"floor(x)", [](const Tensor& x) { return x.floor(); }, true, false},
    {"ceil(x)", [](const Tensor& x) { return x.ceil(); }, true, false},
    {"round(x)", [](const Tensor& x) { return x.round(); }, true, false},
    {"trunc(x)", [](const Tensor& x) { return x.trunc(); }, true, false},
    {"square(x)", [](const Tensor& x) { return x.square(); }, true, false},
    {"square(clamp(x, -3, 3))", [](const Tensor& x) { return x.clamp(-3.0, 3.0).square(); }, false,
     true},
    {"sign(x)", [](const Tensor& x) { return x.sign(); }, false, false},
    {"gelu(x)", [](const Tensor& x) { return x.gelu(); }, true, true},
    {"gelu(x, tanh)", [](const Tensor& x) { return x.gelu("tanh"); }, true, true},
    {"silu(x)", [](const Tensor& x) { return x.silu(); }, true, true},
    {"softplus(x)", [](const Tensor& x) { return x.softplus(); }, true, true},
    {"leaky_relu(x, 0.1)", [](const Tensor& x) { return x.leaky_relu(0.1); }, true, true},
    {"isnan(x)", [](const Tensor& x) { return x.isnan(); }, true, false},
    {"isinf(x)", [](const Tensor& x) { return x.isinf(); }, true, false},
    {"logical_not(x)", [](const Tensor& x) { return x.logical_not(); }, true, false},
    {"pow(abs(x) + 0.5, 1.5)", [](const Tensor& x) { return (x.abs() + 0.5).pow(1.5); }, false,
     false},
    {"pow(x, 3)", [](const Tensor& x) { return x.pow(3.0); }, false, false},
    {"clamp(x, -1.5, 2)", [](const Tensor& x) { return x.clamp(-1.5, 2.0); }, false, true},
    {"contiguous(x)", [](const Tensor& x) { return x.contiguous(); }, true, true},
};

enum BinOp {
  Add,
  Sub,
  Mul,
  Div,
  Lt,
  Gt,
  Le,
  Ge,
  Eq,
  Ne,
  Maximum,
  Minimum,
  And,
  Or,
  Xor,
  Pow,
  NumBinOps
};
const char* const kBinName[] = {
    "+",  "-",  "*",       "/",       "<",           ">",          "<=",          ">=",
    "==", "!=", "maximum", "minimum", "logical_and", "logical_or", "logical_xor", "pow"};

template <class A, class B> Tensor arith(BinOp op, const A& a, const B& b) {
  switch (op) {
  case Add:
    return a + b;
  case Sub:
    return a - b;
  case Mul:
    return a * b;
  case Div:
    return a / b;
  case Lt:
    return a < b;
  case Gt:
    return a > b;
  case Le:
    return a <= b;
  case Ge:
    return a >= b;
  case Eq:
    return a == b;
  default:
    return a != b;
  }
}
Tensor binary_tt(BinOp op, const Tensor& a, const Tensor& b) {
  switch (op) {
  case Maximum:
    return a.maximum(b);
  case Minimum:
    return a.minimum(b);
  case And:
    return a.logical_and(b);
  case Or:
    return a.logical_or(b);
  case Xor:
    return a.logical_xor(b);
  case Pow:
    return (a.abs() + 0.5).pow(b.clamp(-2.0, 2.0));
  default:
    return arith(op, a, b);
  }
}

class Gen {
public:
  Gen(std::uint64_t seed, std::uint64_t index) {
    std::seed_seq sq{std::uint32_t(seed), std::uint32_t(seed >> 32), std::uint32_t(index),
                     std::uint32_t(index >> 32)};
    rng_.seed(sq);
    narrow_ = index % 3 == 2;
  }

  Case make() {
    int m = uniform(0, 99);
    half_ = m < 8 ? DType::Float16 : m < 15 ? DType::BFloat16 : DType::Float32;
    half_mode_ = half_ != DType::Float32;
    large_ = m >= 15 && m < 17; // big enough for the CPU runtime to split kernels over threads
    if (large_) max_numel_ = 40000, leaf_cap_ = 20000, matmul_cap_ = 1 << 17;
    c_.mode = half_mode_ ? tg::dtype_name(half_) : large_ ? "large" : "standard";
    c_.narrow = narrow_;
    if (narrow_) c_.mode += ", 32-bit";
    int inputs = uniform(1, 3);
    for (int k = 0; k < inputs; ++k) leaf(rand_shape(rand_rank(), leaf_cap_), rand_dtype());
    int target = uniform(3, 12), done = 0;
    for (int tries = 0; done < target && tries < 400; ++tries) {
      int before = nvals();
      int r = half_mode_ ? half_step() : step();
      if (r >= 0 && r >= before) ++done;
    }
    int last = -1;
    for (int i = 0; i < nvals(); ++i)
      if (!is_leaf_[std::size_t(i)]) last = i;
    if (last < 0) last = nvals() - 1;
    c_.outputs.push_back(last);
    // more outputs: values nothing else reads (several outputs share one schedule)
    for (int i = last - 1; i >= 0 && c_.outputs.size() < 3; --i)
      if (!is_leaf_[std::size_t(i)] && !used_[std::size_t(i)] && coin(0.7)) c_.outputs.push_back(i);
    if (!large_ && coin(0.2)) { // also evaluate with a random subset of the values realized
      c_.mixed.assign(c_.steps.size(), false);
      for (int i = 0; i < nvals(); ++i)
        c_.mixed[std::size_t(i)] = !is_leaf_[std::size_t(i)] && coin(0.35);
    }
    // tolerances from the least precise float dtype of the graph
    bool f32 = false;
    for (const Tensor& t : probe_.v)
      f32 = f32 || t.dtype() == DType::Float32 || tg::is_half(t.dtype());
    if (half_ == DType::BFloat16)
      c_.rtol = 5e-2, c_.atol = 5e-2;
    else if (half_ == DType::Float16)
      c_.rtol = 1e-2, c_.atol = 1e-2;
    else if (f32)
      c_.rtol = 1e-4, c_.atol = 1e-5;
    else
      c_.rtol = 1e-9, c_.atol = 1e-11;
    return std::move(c_);
  }
  const Case& partial() const { return c_; }

private:
  std::int64_t max_numel_ = 512, leaf_cap_ = 256, matmul_cap_ = 2048; // elements

  std::mt19937 rng_;
  Ctx probe_{
      "CPU", {}, nullptr}; // the graph built lazily on CPU while generating: shapes and dtypes
  Case c_;
  std::vector<bool> is_leaf_, used_; // per value: an input; read by a later step
  std::vector<int> reads_;
  DType half_ = DType::Float32;
  bool half_mode_ = false, large_ = false;
  bool narrow_ = false; // every third graph: no 64-bit values, for devices without them (WGSL)
  bool newest_ = false; // pick the newest value (a burst of movement ops on one value)

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <class T> T choose(const std::vector<T>& v) {
    return v[std::size_t(uniform(0, int(v.size()) - 1))];
  }

  int nvals() const { return int(probe_.v.size()); }
  const Tensor& val(int i) const { return probe_.v[std::size_t(i)]; }
  Dims shape(int i) const { return val(i).shape(); }
  DType dtype(int i) const { return val(i).dtype(); }
  int rank(int i) const { return val(i).ndim(); }
  bool is_fl(int i) const { return tg::is_float(dtype(i)); }
  bool is_b(int i) const { return dtype(i) == DType::Bool; }
  static std::string nm(int i) { return std::string(1, 'v').append(std::to_string(i)); }

  /// Appends a step (building it on the probe graph); -1 when its value is empty or too big.
  int add(const std::string& desc, StepFn fn, bool leaf = false) {
    Tensor t;
    reads_.clear();
    probe_.reads = &reads_;
    try {
      t = fn(probe_);
      probe_.reads = nullptr;
    } catch (const std::exception& e) {
      probe_.reads = nullptr;
      throw std::runtime_error("building '" + desc + "': " + e.what());
    }
    if (t.numel() == 0 || t.numel() > max_numel_) return -1;
    if (narrow_ && tg::itemsize(t.dtype()) == 8) return -1;
    int id = nvals();
    probe_.v.push_back(t);
    is_leaf_.push_back(leaf);
    used_.push_back(false);
    for (int r : reads_) used_[std::size_t(r)] = true;
    c_.steps.push_back({nm(id) + " = " + desc + "  -> " + type_str(t), std::move(fn)});
    return id;
  }

  // ---- shapes, dtypes, data ----
  std::int64_t rand_dim() {
    static const std::vector<std::int64_t> vocab{1, 1, 2, 3, 3, 5}, big{1, 2, 8, 16, 33, 64, 128};
    return choose(large_ ? big : vocab);
  }
  int rand_rank() {
    static const std::vector<int> ranks{0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4};
    return choose(ranks);
  }
  Dims rand_shape(int r, std::int64_t cap) {
    for (;;) {
      Dims s;
      for (int k = 0; k < r; ++k) s.push_back(rand_dim());
      if (numel_of(s) <= cap) return s;
    }
  }
  DType rand_dtype() {
    if (half_mode_) return coin(0.8) ? half_ : DType::Float32;
    int k = uniform(0, 99);
    if (narrow_ && k >= 45 && k < 63) return DType::Float32;
    return k < 45 ? DType::Float32 : k < 63 ? DType::Float64 : k < 85 ? DType::Int32 : DType::Bool;
  }
  double rand_value(DType t) {
    if (t == DType::Bool) return coin(0.5);
    if (!tg::is_float(t)) return uniform(-5, 5);
    int k = uniform(0, 3);
    if (k == 0) return uniform(-3, 3);                              // ties for max / argmax / ==
    if (k == 1 || tg::is_half(t)) return uniform(-192, 192) / 64.0; // exact in every float type
    return std::uniform_real_distribution<double>(-3, 3)(rng_);
  }
  int leaf_data(const Dims& s, DType t, std::vector<double> data) {
    std::string desc = std::string("input ") + tg::dtype_name(t) + list_str(s);
    if (data.size() <= 8) {
      desc += " [";
      for (std::size_t k = 0; k < data.size(); ++k) desc += (k ? ", " : "") + num_str(data[k]);
      desc += "]";
    }
    return add(
        desc,
        [data, s, t](Ctx& c) {
          return Tensor::from_data(data, to_shape(s), tg::TensorOptions(t, c.device));
        },
        true);
  }
  int leaf(const Dims& s, DType t) {
    std::vector<double> data(std::size_t(numel_of(s)));
    for (double& x : data) x = rand_value(t);
    return leaf_data(s, t, std::move(data));
  }

  // ---- picking operands ----
  int pick(const std::function<bool(int)>& ok) {
    std::vector<int> c;
    for (int i = 0; i < nvals(); ++i)
      if (ok(i)) c.push_back(i);
    if (c.empty()) return -1;
    if (newest_ || coin(0.55)) return c.back(); // mostly the newest value: deep chains
    return choose(c);
  }
  int pick_any() {
    return pick([](int) { return true; });
  }
  /// Any value; in 16-bit graphs, a float one (bool inputs there are only where's conditions).
  int pick_val() {
    return half_mode_ ? pick([&](int i) { return is_fl(i); }) : pick_any();
  }
  static bool broadcastable(const Dims& a, const Dims& b) {
    for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
      std::int64_t x = a[a.size() - 1 - k], y = b[b.size() - 1 - k];
      if (x != y && x != 1 && y != 1) return false;
    }
    return true;
  }
  static Dims bshape(const Dims& a, const Dims& b) {
    Dims r(std::max(a.size(), b.size()), 1);
    for (std::size_t k = 0; k < r.size(); ++k) {
      std::int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1,
                   y = k < b.size() ? b[b.size() - 1 - k] : 1;
      r[r.size() - 1 - k] = x == 1 ? y : x;
    }
    return r;
  }
  Dims bcast_partner(const Dims& s) {
    Dims r = s;
    for (std::int64_t& d : r) {
      if (coin(0.25))
        d = 1;
      else if (d == 1 && coin(0.3))
        d = rand_dim();
    }
    if (coin(0.3) && !r.empty())
      r.erase(r.begin(), r.begin() + uniform(1, int(r.size())));
    else if (coin(0.15) && r.size() < 4)
      r.insert(r.begin(), rand_dim()); // a new leading dim
    return r;
  }
  /// A partner for a binary op with value a: an existing value that broadcasts, or a new input.
  int partner(int a, bool want_float = false) {
    int b = -1;
    if (coin(0.6))
      b = pick(
          [&](int i) { return broadcastable(shape(i), shape(a)) && (!want_float || is_fl(i)); });
    if (b < 0)
      b = leaf(bcast_partner(shape(a)),
               want_float ? (half_mode_ ? half_ : DType::Float32) : rand_dtype());
    return b;
  }
  /// An axis of a rank-r tensor, maybe negative (0-d: 0 or -1).
  int rand_axis(int r) { return r == 0 ? uniform(-1, 0) : uniform(-r, r - 1); }
  std::vector<int> rand_axes(int r, bool allow_all) {
    std::vector<int> axes;
    if (r == 0) { // a 0-d tensor takes axis 0 and -1
      if (coin(0.4)) axes.push_back(uniform(-1, 0));
      return axes;
    }
    if (allow_all && coin(0.2)) return axes;
    for (int k = 0; k < r; ++k)
      if (coin(0.4)) axes.push_back(coin(0.25) ? k - r : k);
    if (axes.empty()) axes.push_back(uniform(0, r - 1));
    std::shuffle(axes.begin(), axes.end(), rng_);
    return axes;
  }

  // ---- standard graphs: float32 / float64 / int32 / bool ----
  int step() {
    int w = uniform(0, 99);
    if (w < 18) return unary();
    if (w < 40) return binary();
    if (w < 52) return reduction();
    if (w < 74) return coin(0.3) ? movement_burst() : movement();
    if (w < 79) return cast();
    if (w < 83) return where_op();
    if (w < 87) return cat_op();
    if (w < 90) return matmul_op();
    if (w < 93) return softmax_op();
    if (w < 96) return composite_reduction();
    return index_op();
  }

  int unary() {
    int a = pick_val();
    std::vector<int> ok;
    for (int k = 0; k < int(std::size(kUnary)); ++k)
      if ((!is_b(a) || kUnary[k].bool_ok) && (!half_mode_ || kUnary[k].half_ok)) ok.push_back(k);
    const UnaryOp& u = kUnary[choose(ok)];
    std::string desc = subst_x(u.name, nm(a));
    auto f = u.f;
    return add(desc, [a, f](Ctx& c) { return f(c.at(a)); });
  }

  int binary() {
    int a = pick_any();
    BinOp op = BinOp(uniform(0, NumBinOps - 1));
    if (coin(0.2) && op <= Ne) { // with a scalar
      bool as_int = coin(0.4);
      double s = as_int ? double(uniform(-3, 3)) : uniform(-40, 40) / 8.0;
      if (op == Sub && is_b(a)) op = Add;
      bool left = coin(0.3);
      std::string desc = left ? num_str(s) + " " + kBinName[op] + " " + nm(a)
                              : nm(a) + " " + kBinName[op] + " " + num_str(s);
      if (as_int) {
        auto si = std::int64_t(s);
        return add(desc + (as_int ? " (int)" : ""), [a, op, si, left](Ctx& c) {
          return left ? arith(op, si, c.at(a)) : arith(op, c.at(a), si);
        });
      }
      return add(desc, [a, op, s, left](Ctx& c) {
        return left ? arith(op, s, c.at(a)) : arith(op, c.at(a), s);
      });
    }
    int b = partner(a);
    if (b < 0) return -1;
    if (op == Sub && (is_b(a) || is_b(b))) op = Add;
    if (op == Pow && (is_b(a) || is_b(b))) op = Mul;
    std::string desc = op <= Ne ? nm(a) + " " + kBinName[op] + " " + nm(b)
                                : std::string(kBinName[op]) + "(" + nm(a) + ", " + nm(b) + ")";
    if (op == Pow) desc = "pow(abs(" + nm(a) + ") + 0.5, clamp(" + nm(b) + ", -2, 2))";
    return add(desc, [a, b, op](Ctx& c) { return binary_tt(op, c.at(a), c.at(b)); });
  }

  int where_op() {
    int a = pick_any();
    int cond =
        coin(0.6) ? pick([&](int i) { return is_b(i) && broadcastable(shape(i), shape(a)); }) : -1;
    if (cond < 0) {
      if (coin(0.5))
        cond = leaf(bcast_partner(shape(a)), DType::Bool);
      else {
        int x = partner(a);
        if (is_b(x))
          cond = x;
        else
          cond = add(nm(x) + " > 0", [x](Ctx& c) { return c.at(x) > 0; });
      }
    }
    if (cond < 0) return -1;
    if (coin(0.25)) {
      double s = uniform(-4, 4) / 2.0;
      bool left = coin(0.5);
      std::string desc = "where(" + nm(cond) + ", " +
                         (left ? num_str(s) + ", " + nm(a) : nm(a) + ", " + num_str(s)) + ")";
      return add(desc, [cond, a, s, left](Ctx& c) {
        return left ? tg::where(c.at(cond), s, c.at(a)) : tg::where(c.at(cond), c.at(a), s);
      });
    }
    int b = partner(a);
    if (b < 0 || !broadcastable(shape(b), bshape(shape(cond), shape(a)))) return -1;
    return add("where(" + nm(cond) + ", " + nm(a) + ", " + nm(b) + ")",
               [cond, a, b](Ctx& c) { return tg::where(c.at(cond), c.at(a), c.at(b)); });
  }

  int cast() {
    int a = pick_any();
    DType from = dtype(a);
    int k = uniform(0, 99);
    if (k < 8 && from == DType::Float32) // bit patterns: float32 <-> int32
      return add("bitcast(" + nm(a) + ", int32)",
                 [a](Ctx& c) { return c.at(a).bitcast(DType::Int32); });
    if (k < 12 && from == DType::Int32) // small ints: normal, subnormal or zero floats, never NaN
      return add("bitcast(maximum(" + nm(a) + ", 0), float32)", [a](Ctx& c) {
        return c.at(a).maximum(c.at(a).const_like(0)).bitcast(DType::Float32);
      });
    if (k < 20 && tg::is_float(from)) { // through a 16-bit float and back
      DType h = coin(0.5) ? DType::Float16 : DType::BFloat16;
      std::string desc = "cast(cast(clamp(" + nm(a) + ", -60000, 60000), " + tg::dtype_name(h) +
                         "), " + tg::dtype_name(from) + ")";
      return add(desc,
                 [a, h, from](Ctx& c) { return c.at(a).clamp(-6e4, 6e4).cast(h).cast(from); });
    }
    static const std::vector<DType> targets{DType::Float32, DType::Float64, DType::Int32,
                                            DType::Bool,    DType::Float32, DType::Int32,
                                            DType::Int64,   DType::Int8,    DType::UInt8};
    DType to = choose(targets);
    if (tg::is_float(from) && !tg::is_float(to) && to != DType::Bool &&
        coin(0.7)) { // float -> int: values in range
      double lo = to == DType::UInt8  ? 0
                  : to == DType::Int8 ? -100
                                      : -1e4,
             hi = to == DType::UInt8  ? 200
                  : to == DType::Int8 ? 100
                                      : 1e4;
      std::string desc = "cast(clamp(nan_to_0(" + nm(a) + "), " + num_str(lo) + ", " + num_str(hi) +
                         "), " + tg::dtype_name(to) + ")";
      return add(desc, [a, lo, hi, to](Ctx& c) {
        const Tensor& x = c.at(a);
        return tg::where(x.isnan(), 0.0, x).clamp(lo, hi).cast(to);
      });
    }
    return add("cast(" + nm(a) + ", " + tg::dtype_name(to) + ")",
               [a, to](Ctx& c) { return c.at(a).cast(to); });
  }

  int reduction() {
    int a = pick_any();
    int r = rank(a);
    std::vector<int> axes = rand_axes(r, true);
    bool keep = coin(0.5);
    static const char* const names[] = {"sum", "max", "min", "prod", "mean", "any", "all"};
    int k = uniform(0, 6);
    if (k == 4 && !is_fl(a)) k = 0;
    if (k == 3) { // products of few elements only
      std::int64_t count = 1;
      Dims s = shape(a);
      if (axes.empty()) count = numel_of(s);
      for (int ax : axes) count *= r == 0 ? 1 : s[std::size_t(ax < 0 ? ax + r : ax)];
      if (count > 8) k = 0;
    }
    bool one = axes.size() == 1 && coin(0.5); // the single-axis overload
    std::string desc = std::string(names[k]) + "(" + nm(a) + ", axes=" + list_str(axes) +
                       ", keepdim=" + (keep ? "1" : "0") + ")";
    return add(desc, [a, axes, keep, k, one](Ctx& c) {
      const Tensor& x = c.at(a);
      if (one) {
        int ax = axes[0];
        switch (k) {
        case 0:
          return x.sum(ax, keep);
        case 1:
          return x.max(ax, keep);
        case 2:
          return x.min(ax, keep);
        case 3:
          return x.prod(ax, keep);
        case 4:
          return x.mean(ax, keep);
        case 5:
          return x.any(ax, keep);
        default:
          return x.all(ax, keep);
        }
      }
      switch (k) {
      case 0:
        return x.sum(axes, keep);
      case 1:
        return x.max(axes, keep);
      case 2:
        return x.min(axes, keep);
      case 3:
        return x.prod(axes, keep);
      case 4:
        return x.mean(axes, keep);
      case 5:
        return x.any(axes, keep);
      default:
        return x.all(axes, keep);
      }
    });
  }

  int composite_reduction() {
    int a = pick_any();
    int r = rank(a);
    int k = uniform(0, 5);
    bool keep = coin(0.5);
    if (k == 0) { // var / std
      std::vector<int> axes = rand_axes(r, true);
      double corr = uniform(0, 1);
      bool sd = coin(0.5);
      std::string desc = std::string(sd ? "std" : "var") + "(" + nm(a) +
                         ", axes=" + list_str(axes) + ", correction=" + num_str(corr) +
                         ", keepdim=" + (keep ? "1" : "0") + ")";
      return add(desc, [a, axes, corr, keep, sd](Ctx& c) {
        const Tensor& x = c.at(a);
        return sd ? x.std(axes, corr, keep) : x.var(axes, corr, keep);
      });
    }
    if (k == 1) {
      std::vector<int> axes = rand_axes(r, false);
      if (axes.empty()) return -1;
      return add("logsumexp(" + nm(a) + ", axes=" + list_str(axes) +
                     ", keepdim=" + (keep ? "1" : "0") + ")",
                 [a, axes, keep](Ctx& c) { return c.at(a).logsumexp(axes, keep); });
    }
    if (k == 2) {
      int d = rand_axis(r);
      return add("cumsum(" + nm(a) + ", " + std::to_string(d) + ")",
                 [a, d](Ctx& c) { return c.at(a).cumsum(d); });
    }
    // argmax / argmin
    bool mx = k != 3 || is_b(a);
    std::optional<int> axis;
    if (coin(0.7)) axis = rand_axis(r);
    std::string desc = std::string(mx ? "argmax" : "argmin") + "(" + nm(a) +
                       ", axis=" + (axis ? std::to_string(*axis) : "None") +
                       ", keepdim=" + (keep ? "1" : "0") + ")";
    return add(desc, [a, axis, keep, mx](Ctx& c) {
      const Tensor& x = c.at(a);
      return mx ? x.argmax(axis, keep) : x.argmin(axis, keep);
    });
  }

  int softmax_op() {
    int a = pick_any();
    int r = rank(a), d = rand_axis(r);
    bool lg = coin(0.4);
    return add(std::string(lg ? "log_softmax(" : "softmax(") + nm(a) + ", " + std::to_string(d) +
                   ")",
               [a, d, lg](Ctx& c) { return lg ? c.at(a).log_softmax(d) : c.at(a).softmax(d); });
  }

  int matmul_op() {
    int a = pick([&](int i) { return rank(i) > 0 && !is_b(i); });
    if (a < 0) return -1;
    Dims sa = shape(a);
    int r = int(sa.size());
    if (r >= 2 && coin(0.25)) // a @ a^T
      return add("matmul(" + nm(a) + ", transpose(" + nm(a) + ", -1, -2))",
                 [a](Ctx& c) { return c.at(a).matmul(c.at(a).transpose(-1, -2)); });
    std::int64_t k = sa.back();
    Dims sb;
    int form = uniform(0, 2);
    if (form == 0)
      sb = {k};
    else {
      Dims batch;
      if (form == 2 && r > 2)
        for (int i = std::max(0, r - 4); i < r - 2; ++i)
          batch.push_back(coin(0.3) ? 1 : sa[std::size_t(i)]);
      else if (form == 2 && r <= 2)
        batch.push_back(rand_dim());
      sb = batch;
      sb.push_back(k);
      sb.push_back(rand_dim());
    }
    // the broadcast product must stay small
    std::int64_t full = numel_of(sa) * (sb.size() >= 2 ? sb.back() : 1);
    if (sb.size() > 2) full *= numel_of(Dims(sb.begin(), sb.end() - 2));
    if (full > matmul_cap_) return -1;
    int b = pick([&](int i) { return shape(i) == sb && !is_b(i); });
    if (b < 0) {
      DType t = rand_dtype();
      if (t == DType::Bool) t = DType::Float32;
      b = leaf(sb, t);
    }
    if (b < 0) return -1;
    return add("matmul(" + nm(a) + ", " + nm(b) + ")",
               [a, b](Ctx& c) { return c.at(a).matmul(c.at(b)); });
  }

  int index_op() {
    int a = pick([&](int i) { return rank(i) > 0; });
    if (a < 0) return -1;
    Dims s = shape(a);
    int r = int(s.size()), d = uniform(0, r - 1);
    std::int64_t n = s[std::size_t(d)];
    DType it = coin(0.5) || narrow_ ? DType::Int32 : DType::Int64;
    if (coin(0.5)) { // index_select with a 1-D index
      int m = uniform(1, 5);
      std::vector<double> idx;
      for (int k = 0; k < m; ++k) idx.push_back(double(uniform(int(-n), int(n - 1))));
      int ix = leaf_data({m}, it, idx);
      if (ix < 0) return -1;
      return add("index_select(" + nm(a) + ", " + std::to_string(d) + ", " + nm(ix) + ")",
                 [a, d, ix](Ctx& c) { return c.at(a).index_select(d, c.at(ix)); });
    }
    Dims is = s;
    for (int k = 0; k < r; ++k)
      is[std::size_t(k)] = k == d ? uniform(1, 4) : uniform(1, int(s[std::size_t(k)]));
    std::vector<double> idx;
    for (std::int64_t k = 0; k < numel_of(is); ++k)
      idx.push_back(double(uniform(int(-n), int(n - 1))));
    int ix = leaf_data(is, it, idx);
    if (ix < 0) return -1;
    return add("gather(" + nm(a) + ", " + std::to_string(d) + ", " + nm(ix) + ")",
               [a, d, ix](Ctx& c) { return c.at(a).gather(d, c.at(ix)); });
  }

  int cat_op() {
    int a = pick([&](int i) { return rank(i) > 0; });
    if (a < 0) return -1;
    Dims s = shape(a);
    int r = int(s.size()), d = uniform(-r, r - 1);
    std::size_t du = std::size_t(d < 0 ? d + r : d);
    bool stack = coin(0.25);
    std::vector<int> parts{a};
    int extra = uniform(1, 2);
    for (int k = 0; k < extra; ++k) {
      int b = -1;
      if (coin(0.3))
        b = a;
      else if (coin(0.5))
        b = pick([&](int i) {
          Dims t = shape(i);
          if (t.size() != s.size()) return false;
          for (std::size_t j = 0; j < t.size(); ++j)
            if (t[j] != s[j] && (stack || j != du)) return false;
          return true;
        });
      if (b < 0) {
        Dims t = s;
        if (!stack) t[du] = rand_dim();
        b = leaf(t, rand_dtype());
      }
      if (b < 0) return -1;
      parts.push_back(b);
    }
    if (stack) d = uniform(-r - 1, r);
    std::string desc = std::string(stack ? "stack({" : "cat({");
    for (std::size_t k = 0; k < parts.size(); ++k) desc += (k ? ", " : "") + nm(parts[k]);
    desc += "}, " + std::to_string(d) + ")";
    return add(desc, [parts, d, stack](Ctx& c) {
      std::vector<Tensor> ts;
      for (int p : parts) ts.push_back(c.at(p));
      return stack ? tg::stack(ts, d) : tg::cat(ts, d);
    });
  }

  int movement() {
    int a = pick_any();
    Dims s = shape(a);
    int r = int(s.size());
    // cases below: 0-1 reshape, 2 permute, 3 transpose, 4 expand, 5 pad, 6-7 slice, 8 flip,
    // 9 (un)squeeze, 10 flatten, 11 index, 12 repeat, 13 split, 14 contiguous, 15 a view chain
    static const std::vector<int> kinds{0, 1, 2, 3, 4,  4,  5,  5,  5,  6,
                                        7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    int k = choose(kinds);
    auto A = [a](Ctx& c) -> const Tensor& { return c.at(a); };
    switch (k) {
    case 0:
    case 1: { // reshape into a random factorization
      std::int64_t n = numel_of(s);
      std::vector<std::int64_t> primes;
      for (std::int64_t p = 2, m = n; m > 1; ++p)
        while (m % p == 0) primes.push_back(p), m /= p;
      int nr = uniform(primes.empty() ? 0 : 1, 4);
      Dims to(std::size_t(nr), 1);
      for (std::int64_t p : primes) to[std::size_t(uniform(0, nr - 1))] *= p;
      bool infer = nr > 0 && coin(0.3);
      std::vector<std::int64_t> arg = to;
      if (infer) arg[std::size_t(uniform(0, nr - 1))] = -1;
      return add("reshape(" + nm(a) + ", " + list_str(arg) + ")",
                 [A, arg](Ctx& c) { return A(c).reshape(to_shape(arg)); });
    }
    case 2: { // permute
      if (r < 2) return -1;
      std::vector<int> p(static_cast<std::size_t>(r));
      for (int i = 0; i < r; ++i) p[std::size_t(i)] = i;
      std::shuffle(p.begin(), p.end(), rng_);
      for (int& x : p)
        if (coin(0.2)) x -= r;
      return add("permute(" + nm(a) + ", " + list_str(p) + ")",
                 [A, p](Ctx& c) { return A(c).permute(p); });
    }
    case 3: { // transpose
      int d0 = rand_axis(r), d1 = rand_axis(r);
      if (r <= 2 && coin(0.3)) return add("T(" + nm(a) + ")", [A](Ctx& c) { return A(c).T(); });
      return add("transpose(" + nm(a) + ", " + std::to_string(d0) + ", " + std::to_string(d1) + ")",
                 [A, d0, d1](Ctx& c) { return A(c).transpose(d0, d1); });
    }
    case 4: { // expand size-1 dims (and maybe a new leading dim)
      Dims to = s;
      bool changed = false;
      for (std::int64_t& x : to) {
        if (x == 1 && coin(0.7))
          x = rand_dim(), changed = true;
        else if (coin(0.3))
          x = -1;
      }
      if ((!changed || coin(0.3)) && to.size() < 4) to.insert(to.begin(), rand_dim());
      return add("expand(" + nm(a) + ", " + list_str(to) + ")",
                 [A, to](Ctx& c) { return A(c).expand(to_shape(to)); });
    }
    case 5: { // pad / crop
      if (r < 1) return -1;
      int pairs = uniform(1, r);
      std::vector<std::int64_t> pads;
      for (int p = 0; p < pairs; ++p) {
        std::int64_t size = s[std::size_t(r - 1 - p)];
        std::int64_t b = uniform(size > 1 ? -1 : 0, 2), e = uniform(size > 1 ? -1 : 0, 2);
        if (size + b + e < 1) b = 0;
        pads.push_back(b);
        pads.push_back(e);
      }
      double value = 0;
      if (coin(0.4))
        value = is_b(a) ? 1.0 : is_fl(a) ? uniform(-8, 8) / 4.0 : double(uniform(-3, 3));
      return add("pad(" + nm(a) + ", " + list_str(pads) + ", value=" + num_str(value) + ")",
                 [A, pads, value](Ctx& c) { return A(c).pad(pads, value); });
    }
    case 6:
    case 7: { // slice with steps
      if (r < 1) return -1;
      int d = uniform(-r, r - 1);
      std::int64_t n = s[std::size_t(d < 0 ? d + r : d)];
      static const std::vector<std::int64_t> steps{1, 1, 2, 3, -1, -2};
      std::int64_t st = choose(steps);
      std::optional<std::int64_t> b, e;
      if (coin(0.7)) b = uniform(int(-n - 1), int(n));
      if (coin(0.7)) e = uniform(int(-n - 1), int(n));
      return add("slice(" + nm(a) + ", dim=" + std::to_string(d) + ", " + opt_str(b) + ":" +
                     opt_str(e) + ":" + std::to_string(st) + ")",
                 [A, d, b, e, st](Ctx& c) { return A(c).slice(d, b, e, st); });
    }
    case 8: { // flip
      std::vector<int> dims = rand_axes(r, false);
      return add("flip(" + nm(a) + ", " + list_str(dims) + ")",
                 [A, dims](Ctx& c) { return A(c).flip(dims); });
    }
    case 9: { // unsqueeze / squeeze
      if (r < 4 && coin(0.5)) {
        int d = uniform(-r - 1, r);
        return add("unsqueeze(" + nm(a) + ", " + std::to_string(d) + ")",
                   [A, d](Ctx& c) { return A(c).unsqueeze(d); });
      }
      if (coin(0.4)) return add("squeeze(" + nm(a) + ")", [A](Ctx& c) { return A(c).squeeze(); });
      int d = rand_axis(r);
      return add("squeeze(" + nm(a) + ", " + std::to_string(d) + ")",
                 [A, d](Ctx& c) { return A(c).squeeze(d); });
    }
    case 10: { // flatten
      if (r < 1) return add("flatten(" + nm(a) + ")", [A](Ctx& c) { return A(c).flatten(); });
      int x = uniform(0, r - 1), y = uniform(x, r - 1);
      return add("flatten(" + nm(a) + ", " + std::to_string(x) + ", " + std::to_string(y) + ")",
                 [A, x, y](Ctx& c) { return A(c).flatten(x, y); });
    }
    case 11: { // integer / slice indexing
      if (r < 1) return -1;
      std::int64_t n0 = s[0];
      std::int64_t i0 = uniform(int(-n0), int(n0 - 1));
      if (r >= 2 && coin(0.5)) {
        std::int64_t n1 = s[1], i1 = uniform(int(-n1), int(n1 - 1));
        std::int64_t st = coin(0.5) ? 1 : -1;
        return add(nm(a) + "[::" + std::to_string(st) + ", " + std::to_string(i1) + "]",
                   [A, st, i1](Ctx& c) {
                     return A(c).index(
                         {tg::Index(tg::Slice{std::nullopt, std::nullopt, st}), tg::Index(i1)});
                   });
      }
      return add(nm(a) + "[" + std::to_string(i0) + "]", [A, i0](Ctx& c) { return A(c)[i0]; });
    }
    case 12: { // repeat
      std::vector<std::int64_t> reps;
      int extra = r < 4 ? uniform(0, 1) : 0;
      for (int i = 0; i < r + extra; ++i) reps.push_back(coin(0.6) ? 1 : uniform(2, 3));
      return add("repeat(" + nm(a) + ", " + list_str(reps) + ")",
                 [A, reps](Ctx& c) { return A(c).repeat(reps); });
    }
    case 13: { // one piece of a split / chunk
      if (r < 1) return -1;
      int d = uniform(-r, r - 1);
      std::int64_t n = s[std::size_t(d < 0 ? d + r : d)];
      std::int64_t size = uniform(1, int(n));
      std::int64_t pieces = (n + size - 1) / size;
      int which = uniform(0, int(pieces) - 1);
      if (coin(0.5))
        return add("split(" + nm(a) + ", " + std::to_string(size) + ", " + std::to_string(d) +
                       ")[" + std::to_string(which) + "]",
                   [A, size, d, which](Ctx& c) { return A(c).split(size, d)[std::size_t(which)]; });
      std::int64_t chunks = uniform(1, int(n));
      auto nchunks = std::int64_t(A(probe_).chunk(chunks, d).size());
      which = uniform(0, int(nchunks) - 1);
      return add(
          "chunk(" + nm(a) + ", " + std::to_string(chunks) + ", " + std::to_string(d) + ")[" +
              std::to_string(which) + "]",
          [A, chunks, d, which](Ctx& c) { return A(c).chunk(chunks, d)[std::size_t(which)]; });
    }
    case 14:
      return add("contiguous(" + nm(a) + ")", [A](Ctx& c) { return A(c).contiguous(); });
    default: { // a chain of views in one step
      if (r < 2) return -1;
      return add("flip(permute(" + nm(a) + ", reversed), 0)[::2 on dim -1]", [A, r](Ctx& c) {
        std::vector<int> p;
        for (int i = r - 1; i >= 0; --i) p.push_back(i);
        return A(c).permute(p).flip({0}).slice(-1, std::nullopt, std::nullopt, 2);
      });
    }
    }
  }

  // ---- 16-bit float graphs: continuous elementwise ops (and exact movement) only ----
  int half_step() {
    int w = uniform(0, 99);
    if (w < 35) return unary();
    if (w < 65) return half_binary();
    if (w < 88) return half_movement();
    if (w < 93) { // where with a condition read straight from an input
      int a = pick_val();
      int cond = leaf(bcast_partner(shape(a)), DType::Bool);
      int b = partner(a, true);
      if (cond < 0 || b < 0 || !broadcastable(shape(b), bshape(shape(cond), shape(a)))) return -1;
      return add("where(" + nm(cond) + ", " + nm(a) + ", " + nm(b) + ")",
                 [cond, a, b](Ctx& c) { return tg::where(c.at(cond), c.at(a), c.at(b)); });
    }
    if (w < 97) {
      int a = pick_val();
      static const std::vector<DType> to{DType::Float32, DType::Float64, DType::Float16,
                                         DType::BFloat16};
      DType t = choose(to);
      return add("cast(" + nm(a) + ", " + tg::dtype_name(t) + ")",
                 [a, t](Ctx& c) { return c.at(a).cast(t); });
    }
    int a = pick_val();
    std::vector<int> axes = rand_axes(rank(a), true);
    bool keep = coin(0.5), mx = coin(0.5);
    return add(std::string(mx ? "max(" : "sum(") + nm(a) + ", axes=" + list_str(axes) +
                   ", keepdim=" + (keep ? "1" : "0") + ")",
               [a, axes, keep, mx](Ctx& c) {
                 return mx ? c.at(a).max(axes, keep) : c.at(a).sum(axes, keep);
               });
  }
  int half_binary() {
    int a = pick_val();
    int k = uniform(0, 5);
    if (k == 2 && coin(0.3)) {
      double s = uniform(-12, 12) / 8.0;
      return add(nm(a) + " * " + num_str(s), [a, s](Ctx& c) { return c.at(a) * s; });
    }
    int b = partner(a, true);
    if (b < 0) return -1;
    switch (k) {
    case 0:
      return add(nm(a) + " + " + nm(b), [a, b](Ctx& c) { return c.at(a) + c.at(b); });
    case 1:
      return add(nm(a) + " - " + nm(b), [a, b](Ctx& c) { return c.at(a) - c.at(b); });
    case 2: // bounded factors keep 16-bit values far from overflow
      return add(nm(a) + " * tanh(" + nm(b) + ")",
                 [a, b](Ctx& c) { return c.at(a) * c.at(b).tanh(); });
    case 3:
      return add(nm(a) + " / (abs(" + nm(b) + ") + 1)",
                 [a, b](Ctx& c) { return c.at(a) / (c.at(b).abs() + 1); });
    case 4:
      return add("maximum(" + nm(a) + ", " + nm(b) + ")",
                 [a, b](Ctx& c) { return c.at(a).maximum(c.at(b)); });
    default:
      return add("minimum(" + nm(a) + ", " + nm(b) + ")",
                 [a, b](Ctx& c) { return c.at(a).minimum(c.at(b)); });
    }
  }
  /// Several movement ops in a row on the newest value: views composed over views.
  int movement_burst() {
    int last = -1;
    newest_ = true;
    for (int k = uniform(2, 4); k > 0; --k)
      if (int r = movement(); r >= 0) last = r;
    newest_ = false;
    return last;
  }
  int half_movement() {
    if (coin(0.3)) return movement_burst();
    for (;;) {
      int r = movement();
      if (r >= 0 || coin(0.3)) return r;
    }
  }
};

// ---- running and checking one graph ----------------------------------------------------------

struct Outcome {
  bool ok = true;
  std::string message;
};

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

std::int64_t compiled_fused = 0, compiled_unfused = 0; // kernels compiled, per evaluation

/// Evaluates a wave of cases every way and compares each case's outputs. When an evaluation of the
/// wave throws, each case is checked on its own, so that the error names its graph.
std::vector<Outcome> check_wave(const std::vector<const Case*>& cs) {
  using Wave = std::vector<std::vector<Values>>; // [case][output]
  auto read_all = [](const std::vector<std::vector<Tensor>>& outs) {
    Wave w;
    for (const auto& o : outs) {
      w.emplace_back();
      for (const Tensor& t : o) w.back().push_back(read(t));
    }
    return w;
  };
  std::vector<const Case*> partly; // the cases with a mixed evaluation
  for (const Case* c : cs)
    if (!c->mixed.empty()) partly.push_back(c);
  Wave fused, unfused, interp, mixed;
  std::vector<std::pair<std::string, Wave>> others; // tg_test::test_devices() beyond CPU, INTERP
  const char* stage = "fused CPU";
  try {
    std::int64_t n0 = tg::stats().kernels_compiled;
    fused = read_all(run_wave(cs, "CPU", Eval::Fused));
    std::int64_t n1 = tg::stats().kernels_compiled;
    stage = "unfused CPU";
    unfused = read_all(run_wave(cs, "CPU", Eval::Unfused));
    compiled_fused += n1 - n0;
    compiled_unfused += tg::stats().kernels_compiled - n1;
    stage = "INTERP";
    interp = read_all(run_wave(cs, "INTERP", Eval::Fused));
    for (const std::string& dev : tg_test::test_devices()) {
      if (dev == "CPU" || dev == "INTERP") continue;
      stage = dev.c_str();
      try {
        others.push_back({dev, read_all(run_wave(cs, dev, Eval::Fused))});
      } catch (const std::exception&) {
        if (!tg_test::lacks_64bit(dev)) throw;
        // a device without 64-bit types: each case on its own, those refused as needing them
        // left out
        Wave w;
        for (const Case* c : cs) {
          try {
            w.push_back(read_all(run_wave({c}, dev, Eval::Fused))[0]);
          } catch (const std::exception& e) {
            if (c->narrow || !tg_test::refused_64bit(dev, e)) throw;
            w.emplace_back();
          }
        }
        others.push_back({dev, std::move(w)});
      }
    }
    stage = "partly realized CPU";
    if (!partly.empty()) mixed = read_all(run_wave(partly, "CPU", Eval::Mixed));
  } catch (...) {
    if (cs.size() > 1) {
      std::vector<Outcome> r;
      for (const Case* c : cs) r.push_back(check_wave({c})[0]);
      return r;
    }
    return {{false, std::string(stage) + " threw: " + what_of(std::current_exception()) + "\n"}};
  }
  std::vector<Outcome> result;
  for (std::size_t k = 0, m = 0; k < cs.size(); ++k) {
    const Case& c = *cs[k];
    std::string msg;
    auto differ = [&](const char* what, const std::string& d, std::size_t o) {
      if (!d.empty()) msg += "output v" + std::to_string(c.outputs[o]) + ": " + what + ": " + d;
    };
    for (std::size_t o = 0; o < c.outputs.size(); ++o) {
      differ("fused CPU vs unfused CPU", compare(fused[k][o], unfused[k][o], c.rtol, c.atol), o);
      differ("fused CPU vs INTERP", compare(fused[k][o], interp[k][o], c.rtol, c.atol), o);
      for (const auto& [dev, values] : others)
        if (!values[k].empty()) // (empty: refused, needing 64-bit types)
          differ(("INTERP vs " + dev).c_str(), compare(interp[k][o], values[k][o], c.rtol, c.atol),
                 o);
      if (c.mixed.empty()) continue;
      std::string what = "fused CPU vs partly realized CPU (realized:";
      for (std::size_t i = 0; i < c.mixed.size(); ++i)
        if (c.mixed[i]) what += " v" + std::to_string(i);
      differ((what + ")").c_str(), compare(fused[k][o], mixed[m][o], c.rtol, c.atol), o);
    }
    if (!c.mixed.empty()) ++m;
    result.push_back({msg.empty(), msg});
  }
  return result;
}

/// Checks a hand-written graph three ways (for the regression cases below).
void check_fixed(const std::function<Tensor(const std::string& device)>& build) {
  Case c;
  c.mode = "fixed";
  c.rtol = 1e-5;
  c.atol = 1e-6;
  c.steps.push_back({"fixed graph", [build](Ctx& ctx) { return build(ctx.device); }});
  c.outputs = {0};
  Outcome r = check_wave({&c})[0];
  INFO(r.message);
  CHECK(r.ok);
}

} // namespace

TEST_CASE("fuzz: random graphs, fused CPU vs unfused CPU vs INTERP") {
  const std::uint64_t seed = env_u64("TG_FUZZ_SEED", 20240611);
  const std::uint64_t graphs = env_u64("TG_FUZZ_GRAPHS", 1000);
  const bool only = std::getenv("TG_FUZZ_ONLY") && *std::getenv("TG_FUZZ_ONLY");
  const std::uint64_t only_index = env_u64("TG_FUZZ_ONLY", 0);
  const bool verbose = env_u64("TG_FUZZ_VERBOSE", 0) != 0;
  // graphs are checked in waves of this many (see run_wave); 1 checks each graph on its own
  const std::uint64_t wave_size = std::max<std::uint64_t>(1, env_u64("TG_FUZZ_WAVE", 40));
  auto t0 = std::chrono::steady_clock::now();
  tg::Stats s0 = tg::stats();
  int failures = 0;
  std::size_t steps = 0;
  const std::uint64_t first = only ? only_index : 0, end = only ? only_index + 1 : graphs;
  for (std::uint64_t w = first; w < end && failures < 20; w += wave_size) {
    std::vector<Case> cases;
    std::vector<std::uint64_t> index;
    auto head = [&](std::uint64_t g) {
      return "TG_FUZZ_SEED=" + std::to_string(seed) + " TG_FUZZ_ONLY=" + std::to_string(g);
    };
    for (std::uint64_t g = w; g < std::min(end, w + wave_size); ++g) {
      Gen gen(seed, g);
      try {
        cases.push_back(gen.make());
        index.push_back(g);
      } catch (...) {
        ++failures;
        FAIL_CHECK(head(g) << ": building the graph threw: " << what_of(std::current_exception())
                           << "\n"
                           << gen.partial().describe());
        continue;
      }
      steps += cases.back().steps.size();
      if (verbose || only) std::cout << head(g) << "\n" << cases.back().describe() << std::flush;
    }
    std::vector<const Case*> wave;
    for (const Case& c : cases) wave.push_back(&c);
    std::vector<Outcome> r = check_wave(wave);
    for (std::size_t k = 0; k < r.size(); ++k)
      if (!r[k].ok) {
        ++failures;
        FAIL_CHECK(head(index[k]) << " (graph " << index[k] << ", checked in a wave of "
                                  << wave.size() << " graphs from " << w
                                  << "; TG_FUZZ_WAVE=1 checks it alone):\n"
                                  << cases[k].describe() << r[k].message);
      }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  tg::Stats s1 = tg::stats();
  MESSAGE("fuzz: seed " << seed << ", " << (only ? 1 : graphs) << " graphs (" << steps
                        << " steps) in " << secs << " s; "
                        << (s1.kernels_compiled - s0.kernels_compiled)
                        << " kernels compiled (fused " << compiled_fused << ", unfused "
                        << compiled_unfused << "), " << (s1.kernels_launched - s0.kernels_launched)
                        << " launched, " << failures << " failing graphs");
}

// ---- regressions: library bugs the fuzzer found, as small deterministic graphs ----------------

TEST_CASE("fuzz regression: float to uint8 cast of a negative constant (pad value) wraps on CPU as "
          "on INTERP") {
  // The C renderer cast a constant -3.0f with (unsigned char), undefined behaviour that gcc folds
  // to 0 while the interpreter (and x86 at run time) give 253.
  auto build = [](const std::string& dev) {
    Tensor x = Tensor::from_data(std::vector<int>{1, 2}, {2}, tg::TensorOptions(DType::UInt8, dev));
    return x.pad({1, 1}, -3);
  };
  check_fixed(build);
  CHECK(build("CPU").to_vector<int>() == std::vector<int>{253, 1, 2, 253});
  CHECK(tg::full({2}, -3.0).cast(DType::Int8).to_vector<int>() == std::vector<int>{-3, -3});
}

TEST_CASE("fuzz regression: axis 0 and -1 of a 0-d tensor (reductions, argmax, views) as PyTorch") {
  // Reductions over axis 0 of a 0-d tensor wrote past the end of its (empty) shape, argmax read
  // past it, flip / transpose / squeeze / size / slice / cat indexed it; axis -1 was refused.
  auto x = [](const std::string& dev) {
    return Tensor::from_data(std::vector<float>{2.5f}, tg::Shape{},
                             tg::TensorOptions(DType::Float32, dev));
  };
  check_fixed([&](const std::string& dev) {
    return x(dev).sum(0) + x(dev).max(-1, true) + x(dev).min(0) + x(dev).mean(-1);
  });
  check_fixed([&](const std::string& dev) {
    return x(dev).softmax(0) + x(dev).log_softmax(-1) + x(dev).logsumexp(0);
  });
  check_fixed([&](const std::string& dev) { return x(dev).argmax(0) + x(dev).argmin(-1, true); });
  check_fixed([&](const std::string& dev) {
    return x(dev).flip({0}).transpose(0, -1).squeeze(0).squeeze(-1).cumsum(-1);
  });
  Tensor t = x("CPU");
  CHECK(t.sum(0).ndim() == 0);
  CHECK(t.sum(-1, true).item<float>() == 2.5f);
  CHECK(t.argmax(0).item<std::int64_t>() == 0);
  CHECK(t.softmax(-1).item<float>() == 1.0f);
  CHECK(t.flip({0}).item<float>() == 2.5f);
  CHECK(t.unsqueeze(-1).shape() == std::vector<std::int64_t>{1});
  CHECK_THROWS_AS(t.sum(1), tg::shape_error);
  CHECK_THROWS_AS((void)t.size(0), tg::shape_error);
  CHECK_THROWS_AS(t.slice(0, 0, 1), tg::shape_error);
  CHECK_THROWS_AS(tg::cat({t, t}, 0), tg::shape_error);
  CHECK(tg::stack({t, t}, -1).shape() == std::vector<std::int64_t>{2});
}

TEST_CASE("fuzz regression: log_softmax of inf is NaN on every device (no driver reassociation)") {
  // lavapipe simplified the GLSL of log_softmax([inf]) (inf - inf - log(exp(nan))) to 0; computed
  // floats are now `precise` in GLSL.
  check_fixed([](const std::string& dev) {
    Tensor b =
        Tensor::from_data(std::vector<int>{0, 2}, {2, 1, 1}, tg::TensorOptions(DType::Int32, dev));
    return (b > 1.5).reciprocal().log_softmax(2);
  });
}

TEST_CASE("fuzz regression: a read that is never valid is no load (GLSL rejects a negative "
          "constant index)") {
  // cat + gather over a size-1 axis lowered to a load at the constant index -3 under a constant
  // false gate; glslc refused the shader.
  check_fixed([](const std::string& dev) {
    Tensor v0 =
        Tensor::from_data(std::vector<int>{0, 1, 1}, {3, 1}, tg::TensorOptions(DType::Bool, dev));
    Tensor v2 = v0.tanh().sum(1, true);
    Tensor v5 = tg::cat({v2, v2}, -2).log_softmax(1).trunc();
    Tensor idx = Tensor::from_data(std::vector<std::int64_t>{-1, -1, -1}, {1, 3},
                                   tg::TensorOptions(DType::Int64, dev));
    Tensor v7 = v5.gather(1, idx);
    return tg::where(v0, v7, v7).pow(3);
  });
}
