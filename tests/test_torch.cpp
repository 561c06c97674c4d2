// tg against PyTorch itself: replays the cases tests/torch/make_cases.py wrote with PyTorch
// (inputs, PyTorch's outputs and gradients, or the error it raised) on every test device, and
// reports each disagreement: a different dtype, shape or value (per-dtype tolerances), a
// gradient, an op tg accepts that PyTorch refuses, or the reverse. A disagreement fails the test
// unless it is one of the documented differences below (docs/pytorch.md). Ops of the file that tg
// does not have are listed, never skipped silently.
//
// TG_TORCH_CASES names the case file (CTest makes it with the fixture torch_cases); without it
// the test says why and does nothing, except under CI=true, where it fails.
#include <doctest/doctest.h>

#include "devices.hpp"
#include <tg/graph/sint_text.hpp>
#include <tg/tg.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace {
namespace F = tg::nn::F;
using tg::DType;
using tg::Tensor;

struct Value { // a tensor of the case file
  DType dtype = DType::Float32;
  tg::Shape shape;
  std::vector<double> f;       // floating dtypes
  std::vector<std::int64_t> i; // integers and bool
};

struct Case {
  int line = 0;
  std::string op;
  double tol = 1;
  std::vector<Value> in;
  std::map<std::string, std::string> kw;
  bool has_out = false;
  Value out;
  std::string err;
  Value cot;
  std::map<int, Value> grads;
};

/// The keyword arguments of a case: i:<int> f:<hex float> b:<0|1> s:<text> l:<ints,>.
struct Kw {
  const std::map<std::string, std::string>& m;
  std::string raw(const std::string& k) const {
    auto it = m.find(k);
    if (it == m.end()) throw std::runtime_error("case has no keyword " + k);
    return it->second.substr(2);
  }
  char kind(const std::string& k) const { return m.at(k)[0]; }
  std::int64_t i(const std::string& k) const { return std::stoll(raw(k)); }
  double f(const std::string& k) const {
    return kind(k) == 'f' ? std::strtod(raw(k).c_str(), nullptr) : double(i(k));
  }
  bool b(const std::string& k) const { return raw(k) == "1"; }
  std::string s(const std::string& k) const { return raw(k); }
  std::vector<std::int64_t> l(const std::string& k) const {
    std::vector<std::int64_t> v;
    std::stringstream ss(raw(k));
    for (std::string t; std::getline(ss, t, ',');) v.push_back(std::stoll(t));
    return v;
  }
  std::vector<int> axes(const std::string& k) const {
    std::vector<int> v;
    for (auto x : l(k)) v.push_back(int(x));
    return v;
  }
};

DType dtype_named(const std::string& s) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int8,
                  DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::Bool})
    if (s == tg::dtype_name(t)) return t;
  throw std::runtime_error("unknown dtype " + s);
}

Value read_value(std::istream& in) {
  Value v;
  std::string dt;
  int nd = 0;
  in >> dt >> nd;
  v.dtype = dtype_named(dt);
  std::int64_t n = 1;
  for (int k = 0; k < nd; ++k) {
    std::int64_t d = 0;
    in >> d;
    v.shape.push_back(d);
    n *= d;
  }
  for (std::int64_t k = 0; k < n; ++k) {
    std::string t;
    in >> t;
    if (tg::is_float(v.dtype))
      v.f.push_back(std::strtod(t.c_str(), nullptr)); // hex floats, inf, nan
    else
      v.i.push_back(std::stoll(t));
  }
  return v;
}

std::vector<Case> read_cases(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<Case> cases;
  std::string line;
  int no = 0;
  while (std::getline(f, line)) {
    ++no;
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag.empty() || tag[0] == '#') continue;
    if (tag == "case") {
      cases.emplace_back();
      cases.back().line = no;
      in >> cases.back().op;
      continue;
    }
    Case& c = cases.back();
    if (tag == "tol") {
      in >> c.tol;
    } else if (tag == "in") {
      c.in.push_back(read_value(in));
    } else if (tag == "kw") {
      std::string k, v;
      in >> k;
      std::getline(in >> std::ws, v);
      c.kw[k] = v;
    } else if (tag == "out") {
      c.out = read_value(in);
      c.has_out = true;
    } else if (tag == "err") {
      std::getline(in >> std::ws, c.err);
    } else if (tag == "cot") {
      c.cot = read_value(in);
    } else if (tag == "grad") {
      int k = 0;
      in >> k;
      c.grads[k] = read_value(in);
    }
  }
  return cases;
}

Tensor make(const Value& v, const std::string& dev) {
  tg::TensorOptions o(v.dtype, dev);
  if (tg::is_float(v.dtype)) return Tensor::from_data(v.f, v.shape, o);
  return Tensor::from_data(v.i, v.shape, o);
}

using Args = std::vector<Tensor>;
using Fn = std::function<Tensor(const Args&, const Kw&)>;

/// tg's spelling of each op of the case file.
const std::map<std::string, Fn>& ops() {
  static const std::map<std::string, Fn> table = [] {
    std::map<std::string, Fn> m;
#define TG_UNARY(name) m[#name] = [](const Args& a, const Kw&) { return a[0].name(); };
    TG_UNARY(neg)
    TG_UNARY(abs)
    TG_UNARY(sign)
    TG_UNARY(exp)
    TG_UNARY(exp2)
    TG_UNARY(log)
    TG_UNARY(log2)
    TG_UNARY(sqrt)
    TG_UNARY(rsqrt)
    TG_UNARY(reciprocal)
    TG_UNARY(sin)
    TG_UNARY(cos)
    TG_UNARY(tan)
    TG_UNARY(tanh)
    TG_UNARY(sigmoid)
    TG_UNARY(relu)
    TG_UNARY(gelu)
    TG_UNARY(silu)
    TG_UNARY(softplus)
    TG_UNARY(square)
    TG_UNARY(floor)
    TG_UNARY(ceil)
    TG_UNARY(round)
    TG_UNARY(trunc)
    TG_UNARY(isnan)
    TG_UNARY(isinf)
    TG_UNARY(logical_not)
#undef TG_UNARY
    m["leaky_relu"] = [](const Args& a, const Kw&) { return a[0].leaky_relu(0.1); };
    m["gelu_tanh"] = [](const Args& a, const Kw&) { return a[0].gelu("tanh"); };
    m["cast"] = [](const Args& a, const Kw& k) { return a[0].cast(dtype_named(k.s("dtype"))); };

    m["add"] = [](const Args& a, const Kw&) { return a[0] + a[1]; };
    m["sub"] = [](const Args& a, const Kw&) { return a[0] - a[1]; };
    m["mul"] = [](const Args& a, const Kw&) { return a[0] * a[1]; };
    m["div"] = [](const Args& a, const Kw&) { return a[0] / a[1]; };
    m["pow"] = [](const Args& a, const Kw&) { return a[0].pow(a[1]); };
    m["maximum"] = [](const Args& a, const Kw&) { return a[0].maximum(a[1]); };
    m["minimum"] = [](const Args& a, const Kw&) { return a[0].minimum(a[1]); };
    m["lt"] = [](const Args& a, const Kw&) { return a[0] < a[1]; };
    m["gt"] = [](const Args& a, const Kw&) { return a[0] > a[1]; };
    m["le"] = [](const Args& a, const Kw&) { return a[0] <= a[1]; };
    m["ge"] = [](const Args& a, const Kw&) { return a[0] >= a[1]; };
    m["eq"] = [](const Args& a, const Kw&) { return a[0] == a[1]; };
    m["ne"] = [](const Args& a, const Kw&) { return a[0] != a[1]; };
    m["logical_and"] = [](const Args& a, const Kw&) { return a[0].logical_and(a[1]); };
    m["logical_or"] = [](const Args& a, const Kw&) { return a[0].logical_or(a[1]); };
    m["logical_xor"] = [](const Args& a, const Kw&) { return a[0].logical_xor(a[1]); };
    m["where"] = [](const Args& a, const Kw&) { return tg::where(a[0], a[1], a[2]); };
    // a C++ scalar of the case's kind (int, float or bool), as PyTorch's Python scalars
    auto with_scalar = [](const Tensor& x, const Kw& k, const std::string& name, auto f) {
      if (k.kind(name) == 'b') return f(x, k.b(name));
      if (k.kind(name) == 'i') return f(x, k.i(name));
      return f(x, k.f(name));
    };
    m["add_scalar"] = [=](const Args& a, const Kw& k) {
      return with_scalar(a[0], k, "s", [](const Tensor& x, auto s) { return x + s; });
    };
    m["mul_scalar"] = [=](const Args& a, const Kw& k) {
      return with_scalar(a[0], k, "s", [](const Tensor& x, auto s) { return x * s; });
    };
    m["div_scalar"] = [=](const Args& a, const Kw& k) {
      return with_scalar(a[0], k, "s", [](const Tensor& x, auto s) { return x / s; });
    };
    m["pow_scalar"] = [](const Args& a, const Kw& k) { return a[0].pow(k.f("e")); };
    m["clamp"] = [](const Args& a, const Kw& k) { return a[0].clamp(k.f("lo"), k.f("hi")); };

    m["sum"] = [](const Args& a, const Kw& k) { return a[0].sum(k.axes("dim"), k.b("keepdim")); };
    m["mean"] = [](const Args& a, const Kw& k) { return a[0].mean(k.axes("dim"), k.b("keepdim")); };
    m["max"] = [](const Args& a, const Kw& k) { return a[0].max(k.axes("dim"), k.b("keepdim")); };
    m["min"] = [](const Args& a, const Kw& k) { return a[0].min(k.axes("dim"), k.b("keepdim")); };
    m["prod"] = [](const Args& a, const Kw& k) { return a[0].prod(k.axes("dim"), k.b("keepdim")); };
    m["any"] = [](const Args& a, const Kw& k) { return a[0].any(k.axes("dim"), k.b("keepdim")); };
    m["all"] = [](const Args& a, const Kw& k) { return a[0].all(k.axes("dim"), k.b("keepdim")); };
    m["logsumexp"] = [](const Args& a, const Kw& k) {
      return a[0].logsumexp(k.axes("dim"), k.b("keepdim"));
    };
    m["var"] = [](const Args& a, const Kw& k) {
      return a[0].var(k.axes("dim"), 1, k.b("keepdim"));
    };
    m["std"] = [](const Args& a, const Kw& k) {
      return a[0].std(k.axes("dim"), 1, k.b("keepdim"));
    };
    m["sum_all"] = [](const Args& a, const Kw&) { return a[0].sum(); };
    m["mean_all"] = [](const Args& a, const Kw&) { return a[0].mean(); };
    m["max_all"] = [](const Args& a, const Kw&) { return a[0].max(); };
    m["min_all"] = [](const Args& a, const Kw&) { return a[0].min(); };
    m["argmax"] = [](const Args& a, const Kw& k) {
      return a[0].argmax(int(k.i("dim")), k.b("keepdim"));
    };
    m["argmin"] = [](const Args& a, const Kw& k) {
      return a[0].argmin(int(k.i("dim")), k.b("keepdim"));
    };
    m["cumsum"] = [](const Args& a, const Kw& k) { return a[0].cumsum(int(k.i("dim"))); };

    auto shape = [](const std::vector<std::int64_t>& v) {
      tg::Shape s;
      for (auto x : v) s.push_back(x);
      return s;
    };
    m["reshape"] = [=](const Args& a, const Kw& k) { return a[0].reshape(shape(k.l("shape"))); };
    m["permute"] = [](const Args& a, const Kw& k) { return a[0].permute(k.axes("dims")); };
    m["transpose"] = [](const Args& a, const Kw& k) {
      return a[0].transpose(int(k.i("d0")), int(k.i("d1")));
    };
    m["flip"] = [](const Args& a, const Kw& k) { return a[0].flip(k.axes("dims")); };
    m["flatten"] = [](const Args& a, const Kw& k) {
      return a[0].flatten(int(k.i("start")), int(k.i("end")));
    };
    m["unsqueeze"] = [](const Args& a, const Kw& k) { return a[0].unsqueeze(int(k.i("dim"))); };
    m["squeeze"] = [](const Args& a, const Kw& k) { return a[0].squeeze(int(k.i("dim"))); };
    m["expand"] = [=](const Args& a, const Kw& k) { return a[0].expand(shape(k.l("shape"))); };
    m["repeat"] = [](const Args& a, const Kw& k) { return a[0].repeat(k.l("r")); };
    m["pad"] = [](const Args& a, const Kw& k) { return a[0].pad(k.l("p"), k.f("v")); };
    m["slice"] = [](const Args& a, const Kw& k) {
      return a[0].slice(int(k.i("dim")), k.i("start"), k.i("stop"), k.i("step"));
    };
    m["unfold"] = [](const Args& a, const Kw& k) {
      return a[0].unfold(int(k.i("dim")), k.i("size"), k.i("step"));
    };
    m["gather"] = [](const Args& a, const Kw& k) { return a[0].gather(int(k.i("dim")), a[1]); };
    m["index_select"] = [](const Args& a, const Kw& k) {
      return a[0].index_select(int(k.i("dim")), a[1]);
    };
    m["cat"] = [](const Args& a, const Kw& k) { return tg::cat({a[0], a[1]}, int(k.i("dim"))); };
    m["stack"] = [](const Args& a, const Kw& k) {
      return tg::stack({a[0], a[1]}, int(k.i("dim")));
    };

    m["matmul"] = [](const Args& a, const Kw&) { return a[0].matmul(a[1]); };
    m["dot"] = [](const Args& a, const Kw&) { return a[0].dot(a[1]); };
    m["softmax"] = [](const Args& a, const Kw& k) { return a[0].softmax(int(k.i("dim"))); };
    m["log_softmax"] = [](const Args& a, const Kw& k) { return a[0].log_softmax(int(k.i("dim"))); };

    m["linear"] = [](const Args& a, const Kw&) { return F::linear(a[0], a[1], a[2]); };
    m["conv2d"] = [](const Args& a, const Kw& k) {
      return F::conv2d(a[0], a[1], a[2], k.i("stride"), k.i("padding"), k.i("dilation"),
                       k.i("groups"));
    };
    m["max_pool2d"] = [](const Args& a, const Kw& k) {
      return F::max_pool2d(a[0], k.i("k"), F::Pair(k.i("s")), k.i("p"));
    };
    m["avg_pool2d"] = [](const Args& a, const Kw& k) {
      return F::avg_pool2d(a[0], k.i("k"), F::Pair(k.i("s")), k.i("p"));
    };
    m["max_pool2d_ceil"] = [](const Args& a, const Kw& k) {
      return F::max_pool2d(a[0], k.i("k"), F::Pair(k.i("s")), k.i("p"), 1, k.b("ceil"));
    };
    m["max_pool2d_indices"] = [](const Args& a, const Kw& k) {
      return F::max_pool2d_with_indices(a[0], k.i("k"), F::Pair(k.i("s")), k.i("p"), k.i("d"),
                                        k.b("ceil"))
          .second;
    };
    m["avg_pool2d_ceil"] = [](const Args& a, const Kw& k) {
      return F::avg_pool2d(a[0], k.i("k"), F::Pair(k.i("s")), k.i("p"), k.b("ceil"), k.b("inc"));
    };
    m["avg_pool2d_divisor"] = [](const Args& a, const Kw& k) {
      return F::avg_pool2d(a[0], k.i("k"), std::nullopt, 0, false, true, k.i("d"));
    };
    m["batch_norm"] = [](const Args& a, const Kw& k) {
      // in training the running statistics are updated in place: copies, as the case's PyTorch
      Tensor rm = k.b("training") ? a[1].detach().contiguous().realize() : a[1],
             rv = k.b("training") ? a[2].detach().contiguous().realize() : a[2];
      return F::batch_norm(a[0], rm, rv, a[3], a[4], k.b("training"));
    };
    m["batch_norm_running"] = [](const Args& a, const Kw& k) {
      tg::TensorOptions o(a[0].dtype(), a[0].device());
      Tensor rm = tg::zeros({a[0].size(1)}, o).realize(),
             rv = tg::ones({a[0].size(1)}, o).realize();
      F::batch_norm(a[0], rm, rv, Tensor(), Tensor(), true, k.f("momentum"));
      return tg::stack({rm, rv});
    };
    m["layer_norm"] = [](const Args& a, const Kw&) {
      return F::layer_norm(a[0], {a[0].size(-1)}, a[1], a[2], 1e-5);
    };
    m["embedding"] = [](const Args& a, const Kw&) { return F::embedding(a[0], a[1]); };
    m["mse_loss"] = [](const Args& a, const Kw& k) {
      return F::mse_loss(a[0], a[1], k.s("reduction"));
    };
    m["l1_loss"] = [](const Args& a, const Kw& k) {
      return F::l1_loss(a[0], a[1], k.s("reduction"));
    };
    m["binary_cross_entropy"] = [](const Args& a, const Kw& k) {
      return F::binary_cross_entropy(a[0], a[1], Tensor(), k.s("reduction"));
    };
    m["binary_cross_entropy_with_logits"] = [](const Args& a, const Kw& k) {
      return F::binary_cross_entropy_with_logits(a[0], a[1], Tensor(), k.s("reduction"));
    };
    m["cross_entropy"] = [](const Args& a, const Kw& k) {
      return F::cross_entropy(a[0], a[1], Tensor(), -100, k.s("reduction"));
    };
    m["nll_loss"] = [](const Args& a, const Kw& k) {
      return F::nll_loss(a[0], a[1], Tensor(), -100, k.s("reduction"));
    };

    m["cross_entropy_opts"] = [](const Args& a, const Kw& k) {
      return F::cross_entropy(a[0], a[1], a[2], k.i("ign"), k.s("reduction"), k.f("ls"));
    };
    m["nll_loss_opts"] = [](const Args& a, const Kw& k) {
      return F::nll_loss(a[0], a[1], a[2], k.i("ign"), k.s("reduction"));
    };
    m["cross_entropy_probs"] = [](const Args& a, const Kw& k) {
      return F::cross_entropy(a[0], a[1], Tensor(), -100, k.s("reduction"), k.f("ls"));
    };
    m["binary_cross_entropy_weight"] = [](const Args& a, const Kw& k) {
      return F::binary_cross_entropy(a[0], a[1], a[2], k.s("reduction"));
    };
    m["bce_with_logits_pos_weight"] = [](const Args& a, const Kw& k) {
      return F::binary_cross_entropy_with_logits(a[0], a[1], a[2], k.s("reduction"), a[3]);
    };
    auto part = [](const std::vector<Tensor>& parts, const Kw& k) {
      return parts.at(std::size_t(k.i("part")));
    };
    m["split"] = [=](const Args& a, const Kw& k) {
      return part(a[0].split(k.i("size"), int(k.i("dim"))), k);
    };
    m["split_sizes"] = [=](const Args& a, const Kw& k) {
      return part(a[0].split(k.l("sizes"), int(k.i("dim"))), k);
    };
    m["chunk"] = [=](const Args& a, const Kw& k) {
      return part(a[0].chunk(k.i("n"), int(k.i("dim"))), k);
    };
    m["chunk_count"] = [](const Args& a, const Kw& k) {
      return Tensor::scalar(std::int64_t(a[0].chunk(k.i("n"), int(k.i("dim"))).size()));
    };
    m["index"] = [](const Args& a, const Kw& k) { // make_cases.py's INDEX_FORMS
      using S = tg::Slice;
      const Tensor& x = a[0];
      switch (k.i("which")) {
      case 0:
        return x.index({1});
      case 1:
        return x.index({-1, S{1, 3}});
      case 2:
        return x.index({S{}, S{std::nullopt, std::nullopt, 2}, 1});
      case 3:
        return x.index({S{1, 0}});
      case 4:
        return x.index({S{}, S{-100, 100}, -1});
      case 5:
        return x.index({0, 0, 0});
      case 6:
        return x.index({3});
      case 7:
        return x.index({0, 0, 0, 0});
      case 8:
        return x.index({S{}, S{}, 5});
      }
      throw std::runtime_error("unknown index form");
    };
    m["cat3"] = [](const Args& a, const Kw& k) {
      return tg::cat({a[0], a[1], a[2]}, int(k.i("dim")));
    };
    // three steps of fixed gradients g (the gradient of sum(p * g))
    auto optimize = [](const std::string& kind, const Args& a, const Kw& k) {
      Tensor p = a[0].detach().contiguous().realize().requires_grad_();
      std::unique_ptr<tg::optim::Optimizer> opt;
      if (kind == "sgd")
        opt = std::make_unique<tg::optim::SGD>(
            std::vector<Tensor>{p},
            tg::optim::SGDOptions{k.f("lr"), k.f("momentum"), k.f("dampening"), k.f("wd"),
                                  k.b("nesterov"), k.b("maximize")});
      else {
        tg::optim::AdamOptions o{k.f("lr"), {k.f("b1"), k.f("b2")}, k.f("eps"),
                                 k.f("wd"), k.b("amsgrad"),         k.b("maximize")};
        if (kind == "adam")
          opt = std::make_unique<tg::optim::Adam>(std::vector<Tensor>{p}, o);
        else
          opt = std::make_unique<tg::optim::AdamW>(
              std::vector<Tensor>{p},
              tg::optim::AdamWOptions{o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad, o.maximize});
      }
      for (int s = 1; s <= 3; ++s) {
        opt->zero_grad();
        (p * a[std::size_t(s)]).sum().backward();
        opt->step();
      }
      return p.detach();
    };
    for (std::string kind : {"sgd", "adam", "adamw"}) {
      Fn step = [=](const Args& a, const Kw& k) { return optimize(kind, a, k); };
      m["optim_" + kind] = step;
    }

    // math.hpp
#define TG_UNARY(name) m[#name] = [](const Args& a, const Kw&) { return a[0].name(); };
    TG_UNARY(erf)
    TG_UNARY(erfc)
    TG_UNARY(log1p)
    TG_UNARY(expm1)
    TG_UNARY(asin)
    TG_UNARY(acos)
    TG_UNARY(atan)
    TG_UNARY(sinh)
    TG_UNARY(cosh)
    TG_UNARY(asinh)
    TG_UNARY(acosh)
    TG_UNARY(atanh)
    TG_UNARY(bitwise_not)
#undef TG_UNARY
    m["atan2"] = [](const Args& a, const Kw&) { return tg::atan2(a[0], a[1]); };
    m["hypot"] = [](const Args& a, const Kw&) { return tg::hypot(a[0], a[1]); };
    m["remainder"] = [](const Args& a, const Kw&) { return a[0] % a[1]; };
    m["fmod"] = [](const Args& a, const Kw&) { return tg::fmod(a[0], a[1]); };
    m["floor_divide"] = [](const Args& a, const Kw&) { return tg::floor_divide(a[0], a[1]); };
    m["bitwise_and"] = [](const Args& a, const Kw&) { return a[0] & a[1]; };
    m["bitwise_or"] = [](const Args& a, const Kw&) { return a[0] | a[1]; };
    m["bitwise_xor"] = [](const Args& a, const Kw&) { return a[0] ^ a[1]; };
    m["bitwise_left_shift"] = [](const Args& a, const Kw&) { return a[0] << a[1]; };
    m["bitwise_right_shift"] = [](const Args& a, const Kw&) { return a[0] >> a[1]; };
    m["lerp"] = [](const Args& a, const Kw&) { return a[0].lerp(a[1], a[2]); };
    m["norm"] = [](const Args& a, const Kw& k) {
      return tg::linalg::vector_norm(a[0], k.f("p"), k.axes("dim"), k.b("keepdim"));
    };
    // indexing.hpp
    m["amax"] = [](const Args& a, const Kw& k) { return a[0].amax(k.axes("dim"), k.b("keepdim")); };
    m["amin"] = [](const Args& a, const Kw& k) { return a[0].amin(k.axes("dim"), k.b("keepdim")); };
    m["cumprod"] = [](const Args& a, const Kw& k) { return a[0].cumprod(int(k.i("dim"))); };
    m["cummax"] = [](const Args& a, const Kw& k) { return a[0].cummax(int(k.i("dim"))).first; };
    m["cummax_indices"] = [](const Args& a, const Kw& k) {
      return a[0].cummax(int(k.i("dim"))).second;
    };
    m["cummin"] = [](const Args& a, const Kw& k) { return a[0].cummin(int(k.i("dim"))).first; };
    m["logcumsumexp"] = [](const Args& a, const Kw& k) {
      return a[0].logcumsumexp(int(k.i("dim")));
    };
    m["masked_fill"] = [](const Args& a, const Kw& k) { return a[0].masked_fill(a[1], k.f("v")); };
    m["tril"] = [](const Args& a, const Kw& k) { return a[0].tril(k.i("k")); };
    m["triu"] = [](const Args& a, const Kw& k) { return a[0].triu(k.i("k")); };
    m["sort"] = [](const Args& a, const Kw& k) {
      return a[0].sort(int(k.i("dim")), k.b("descending")).first;
    };
    m["argsort"] = [](const Args& a, const Kw& k) {
      return a[0].argsort(int(k.i("dim")), k.b("descending"));
    };
    m["topk"] = [](const Args& a, const Kw& k) {
      return a[0].topk(k.i("k"), int(k.i("dim")), k.b("largest")).first;
    };
    m["scatter"] = [](const Args& a, const Kw& k) {
      return a[0].scatter(int(k.i("dim")), a[1], a[2]);
    };
    m["scatter_add"] = [](const Args& a, const Kw& k) {
      return a[0].scatter_add(int(k.i("dim")), a[1], a[2]);
    };
    m["index_add"] = [](const Args& a, const Kw& k) {
      return a[0].index_add(int(k.i("dim")), a[1], a[2]);
    };
    m["outer"] = [](const Args& a, const Kw&) { return tg::outer(a[0], a[1]); };
    m["einsum1"] = [](const Args& a, const Kw& k) { return tg::einsum(k.s("eq"), a); };
    m["einsum2"] = m["einsum1"];
    m["one_hot"] = [](const Args& a, const Kw& k) { return F::one_hot(a[0], k.i("n")); };
    m["interpolate_nearest"] = [](const Args& a, const Kw& k) {
      auto s = k.l("size");
      return F::interpolate(a[0], F::Pair(s[0], s[1]), std::nullopt, "nearest");
    };
    m["interpolate_bilinear"] = [](const Args& a, const Kw& k) {
      auto s = k.l("size");
      return F::interpolate(a[0], F::Pair(s[0], s[1]), std::nullopt, "bilinear", k.b("align"));
    };
    m["adaptive_avg_pool2d"] = [](const Args& a, const Kw& k) {
      auto s = k.l("s");
      return F::adaptive_avg_pool2d(a[0], F::Pair(s[0], s[1]));
    };
    m["conv1d"] = [](const Args& a, const Kw& k) {
      return F::conv1d(a[0], a[1], a[2], k.i("stride"), k.i("padding"), k.i("dilation"),
                       k.i("groups"));
    };
    m["conv_transpose2d"] = [](const Args& a, const Kw& k) {
      return F::conv_transpose2d(a[0], a[1], a[2], k.i("stride"), k.i("padding"), k.i("outpad"),
                                 k.i("groups"), k.i("dilation"));
    };
    m["group_norm"] = [](const Args& a, const Kw& k) {
      return F::group_norm(a[0], k.i("n"), a[1], a[2]);
    };
    m["instance_norm"] = [](const Args& a, const Kw&) { return F::instance_norm(a[0]); };
    // the module's parameters are the case's inputs after x, in PyTorch's order
    auto rnn = [](auto module, const Args& a) {
      for (std::size_t k = 1; k < a.size(); ++k) module.flat_weights[k - 1] = a[k];
      return module.forward(a[0]);
    };
    m["lstm"] = [=](const Args& a, const Kw& k) {
      return rnn(tg::nn::LSTM(3, 4, k.i("layers"), true, k.b("bf"), 0, k.b("bidir")), a);
    };
    m["gru"] = [=](const Args& a, const Kw& k) {
      return rnn(tg::nn::GRU(3, 4, k.i("layers"), true, k.b("bf"), 0, k.b("bidir")), a);
    };
    return m;
  }();
  return table;
}

/// Where tg differs from PyTorch (docs/pytorch.md): an op and the kind of disagreement ("value",
/// "dtype", "shape", "grad", "accepts", "refuses"), on every device and dtype, or on one device
/// or output dtype ("op kind DEVICE", "op kind DTYPE").
const std::set<std::string>& documented() {
  static const std::set<std::string> s = {
      // indices are not read back to the host: out-of-range rows read as zeros
      "embedding accepts",
      // integers divided by zero give 0 on the device (no host check), as / does
      "floor_divide accepts",
      "fmod accepts",
      "remainder accepts",
      // float fmod is a - b trunc(a / b) in float64: 0 where the quotient passes 2^53
      "fmod value",
      "remainder value",
      // hypot takes integers (as float32, like tg's other float math); its gradient at (0, 0)
      // is 0 (PyTorch: NaN)
      "hypot accepts",
      "hypot grad",
      // PyTorch 1.13's CPU log1p gives inf for float32 arguments above about 1e38
      "log1p value float32",
      // tg's where takes any condition dtype as truth values; PyTorch wants bool
      "where accepts",
  };
  return s;
}

struct Tol {
  double rtol, atol;
};
Tol tolerance(DType t, double scale) {
  Tol b = t == DType::Float64    ? Tol{1e-9, 1e-12}
          : t == DType::Float16  ? Tol{2e-3, 1e-4}
          : t == DType::BFloat16 ? Tol{1.6e-2, 1e-3}
                                 : Tol{1e-5, 1e-6};
  return {b.rtol * scale, b.atol * scale};
}

/// "" when got (realized) matches want, else what differs.
std::string compare(const Tensor& got, const Value& want, double scale,
                    std::optional<DType> precision = std::nullopt) {
  if (got.dtype() != want.dtype)
    return std::string("dtype ") + tg::dtype_name(got.dtype()) + ", PyTorch " +
           tg::dtype_name(want.dtype);
  if (got.sym_shape() != want.shape)
    return "shape " + tg::detail::shape_of(got) + ", PyTorch " + tg::detail::shape_str(want.shape);
  if (got.numel() == 0) return "";
  if (tg::is_float(want.dtype)) {
    std::vector<double> g = got.to_vector<double>();
    Tol t = tolerance(precision.value_or(want.dtype), scale);
    for (std::size_t k = 0; k < g.size(); ++k) {
      double a = g[k], b = want.f[k];
      bool ok = (std::isnan(a) && std::isnan(b)) || a == b ||
                (std::isfinite(b) && std::fabs(a - b) <= t.atol + t.rtol * std::fabs(b));
      if (!ok) {
        std::ostringstream o;
        o.precision(9);
        o << "value [" << k << "] " << a << ", PyTorch " << b;
        return o.str();
      }
    }
  } else {
    std::vector<std::int64_t> g = got.to_vector<std::int64_t>();
    for (std::size_t k = 0; k < g.size(); ++k)
      if (g[k] != want.i[k])
        return "value [" + std::to_string(k) + "] " + std::to_string(g[k]) + ", PyTorch " +
               std::to_string(want.i[k]);
  }
  return "";
}

struct Report {
  std::map<std::string, int> lacking; // op -> cases
  std::vector<std::string> failures, known;
  // on a device without 64-bit types (WEBGPU): cases refused as their kernels need them, and
  // cases left out as an input or the result is 64-bit
  int cases = 0, agreed = 0, refused = 0, left_out = 0;
  void disagree(const Case& c, const std::string& dev, const std::string& kind,
                const std::string& what) {
    std::string line = c.op + " (" + dev + ", cases line " + std::to_string(c.line) + "): " + what;
    const std::string key = c.op + " " + kind, dt = tg::dtype_name(c.out.dtype);
    if (documented().count(key) || documented().count(key + " " + dev) ||
        documented().count(key + " " + dt))
      known.push_back(line);
    else
      failures.push_back(line);
  }
};

struct Live { // a case on one device, waiting for its realize
  const Case* c;
  Args in;
  Tensor out;
  std::map<int, Tensor> grads;
};

/// Realizes the results of live[lo, hi) together (one schedule: the kernels compile in parallel
/// batches). On a device without 64-bit types a batch that throws is halved until each case is
/// realized or throws on its own: `why` gets its error ("64": refused as needing 64-bit types).
void realize_cases(std::vector<Live>& live, std::size_t lo, std::size_t hi, const std::string& dev,
                   std::vector<std::string>& why) {
  std::vector<Tensor> ts;
  for (std::size_t k = lo; k < hi; ++k) {
    ts.push_back(live[k].out);
    for (auto& [i, g] : live[k].grads) ts.push_back(g);
  }
  try {
    tg::realize(ts);
  } catch (const std::exception& e) {
    if (!tg_test::lacks_64bit(dev)) throw;
    if (hi - lo == 1) {
      why[lo] =
          tg_test::refused_64bit(dev, e) ? "64" : std::string("realizing throws: ") + e.what();
      return;
    }
    realize_cases(live, lo, (lo + hi) / 2, dev, why);
    realize_cases(live, (lo + hi) / 2, hi, dev, why);
  }
}

void run_device(const std::vector<Case>& cases, const std::string& dev, Report& r) {
  std::vector<Live> live;
  for (const Case& c : cases) {
    auto fn = ops().find(c.op);
    if (fn == ops().end()) {
      r.lacking[c.op]++;
      continue;
    }
    ++r.cases;
    // left out on a device without 64-bit types: a result or an input in them
    bool wide = tg::itemsize(c.out.dtype) == 8;
    for (const Value& v : c.in) wide = wide || tg::itemsize(v.dtype) == 8;
    if (wide && c.has_out && tg_test::lacks_64bit(dev)) {
      ++r.left_out;
      continue;
    }
    Live l{&c, {}, {}, {}};
    for (std::size_t k = 0; k < c.in.size(); ++k) {
      l.in.push_back(make(c.in[k], dev));
      if (c.grads.count(int(k))) l.in.back().requires_grad_();
    }
    try {
      l.out = fn->second(l.in, Kw{c.kw});
    } catch (const tg::error& e) {
      if (tg_test::refused_64bit(dev, e))
        ++r.refused;
      else if (c.has_out)
        r.disagree(c, dev, "refuses", std::string("tg refuses: ") + e.what());
      else
        ++r.agreed;
      continue;
    }
    if (!c.has_out) {
      r.disagree(c, dev, "accepts", "tg accepts what PyTorch refuses: " + c.err);
      continue;
    }
    if (!c.grads.empty() && l.out.requires_grad()) {
      try {
        (l.out * make(c.cot, dev)).sum().backward();
        for (auto& [k, g] : c.grads)
          if (l.in[std::size_t(k)].grad().defined())
            l.grads[k] = l.in[std::size_t(k)].grad().contiguous();
      } catch (const tg::error& e) {
        r.disagree(c, dev, "grad", std::string("backward throws: ") + e.what());
      }
    }
    l.out = l.out.detach().contiguous();
    live.push_back(std::move(l));
  }
  std::vector<std::string> why(live.size());
  realize_cases(live, 0, live.size(), dev, why);
  for (std::size_t k = 0; k < live.size(); ++k) {
    Live& l = live[k];
    const Case& c = *l.c;
    if (why[k] == "64") {
      ++r.refused;
      continue;
    }
    if (!why[k].empty()) {
      r.disagree(c, dev, "throws", why[k]);
      continue;
    }
    std::string d = compare(l.out, c.out, c.tol);
    if (!d.empty()) {
      r.disagree(c, dev, d.substr(0, d.find(' ')), d);
      continue;
    }
    bool ok = true;
    for (auto& [k, want] : c.grads) {
      auto it = l.grads.find(k);
      // no gradient (no differentiable path, as through sign) is PyTorch's zeros
      bool zeros = std::all_of(want.f.begin(), want.f.end(), [](double v) { return v == 0; });
      // a gradient is only as precise as the op's computation (a float64 0-d operand of a
      // float32 op gets a float32-grade gradient, in PyTorch too)
      const DType precision =
          tg::is_float(c.out.dtype) && tg::itemsize(c.out.dtype) < tg::itemsize(want.dtype)
              ? c.out.dtype
              : want.dtype;
      std::string gd = it != l.grads.end() ? compare(it->second, want, 4 * c.tol, precision)
                       : zeros             ? ""
                                           : "no gradient for input " + std::to_string(k);
      if (!gd.empty()) {
        r.disagree(c, dev, "grad", "gradient of input " + std::to_string(k) + ": " + gd);
        ok = false;
      }
    }
    if (ok) ++r.agreed;
  }
}

} // namespace

TEST_CASE("tg agrees with PyTorch on every case of the case file, on every device") {
  const char* path = std::getenv("TG_TORCH_CASES");
  const char* ci = std::getenv("CI");
  if (!path || !*path) {
    std::string why = "TG_TORCH_CASES is not set (CTest sets it when CMake found Python with "
                      "PyTorch: install python3-torch)";
    if (ci && std::string(ci) == "true") FAIL(why.c_str());
    MESSAGE("skipped: " << why);
    return;
  }
  std::vector<Case> cases = read_cases(path);
  REQUIRE(!cases.empty());
  // TG_TORCH_EVERY=N: every Nth case only (test_torch_vulkan: lavapipe makes pipelines slowly, and
  // test_ops checks every op on VULKAN)
  if (const char* every = std::getenv("TG_TORCH_EVERY"); every && std::atoi(every) > 1) {
    const std::size_t n = std::size_t(std::atoi(every));
    std::vector<Case> some;
    for (std::size_t i = 0; i < cases.size(); i += n) some.push_back(cases[i]);
    MESSAGE("every " << n << "th case of " << cases.size() << " (TG_TORCH_EVERY)");
    cases = std::move(some);
  }
  for (const std::string& dev : tg_test::test_devices()) {
    if (dev == "NVRTC") { // results from INTERP: its kernels' compile checks are test_ops'
      MESSAGE("NVRTC skipped: its results are INTERP's (test_ops and test_fuzz check that the "
              "CUDA kernels compile)");
      continue;
    }
    CAPTURE(dev);
    Report r;
    tg::reset_stats();
    run_device(cases, dev, r);
    MESSAGE(dev << ": " << tg::stats().kernels_compiled << " kernels compiled, "
                << tg::stats().kernels_launched << " launched");
    MESSAGE(dev << ": " << r.agreed << " of " << r.cases << " cases agree with PyTorch; "
                << r.known.size() << " documented differences, " << r.failures.size() << " others; "
                << r.refused << " refused as needing 64-bit types, " << r.left_out
                << " left out as 64-bit");
    for (const std::string& k : r.known) MESSAGE("documented difference: " << k);
    for (const std::string& f : r.failures)
      ADD_FAIL_CHECK_AT(__FILE__, __LINE__, ("disagrees with PyTorch: " + f));
    if (dev == "CPU") {
      std::string list;
      for (auto& [op, n] : r.lacking) list += (list.empty() ? "" : ", ") + op;
      MESSAGE("ops of the case file that tg lacks (" << r.lacking.size() << "): " << list);
    }
  }
}
