// Fusion is a feature: these tests count kernels (tg::schedule inspects, tg::stats counts
// launches).
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <unistd.h>

#include <tg/runtime/cpu.hpp> // white-box: the pass list, renderers and runtimes
#include <tg/runtime/interp.hpp>
#include <tg/schedule.hpp>
#include <tg/tg.hpp>

namespace {
tg::Tensor randn(tg::Shape s) { return tg::randn(std::move(s)).realize(); }
std::int64_t launches(const std::function<void()>& f) {
  tg::reset_stats();
  f();
  return tg::stats().kernels_launched;
}
bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}
/// A pass log that keeps each pass's result as text (tg::device_passes).
struct DumpLog {
  std::map<std::string, std::string>* dumps;
  int start() const { return 0; }
  template <class F> void done(const char* pass, int, F&& describe) const {
    (*dumps)[pass] = std::string(describe().view());
  }
};
/// The CPU devices that make cpu_target's choices for each ISA this host has (TG_CPU_ISA forces
/// one for the whole process), registered as CPU_TILES_<ISA>, the narrowest first.
const std::vector<std::string>& isa_devices() {
  struct IsaTiles : tg::CpuDevice {
    tg::CpuIsa isa;
    explicit IsaTiles(tg::CpuIsa i) : isa(i) {}
    tg::Target target() const override { return tg::with_env(tg::cpu_target(isa)); }
  };
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (tg::CpuIsa isa : {tg::CpuIsa::Sse, tg::CpuIsa::Avx2, tg::CpuIsa::Avx512,
                           tg::CpuIsa::Avx512Bf16, tg::CpuIsa::Amx}) {
      if (isa > tg::host_cpu().isa) continue;
      v.push_back(std::string("CPU_TILES_") + tg::cpu_isa_name(isa));
      for (char& ch : v.back()) ch = char(std::toupper(ch));
      tg::register_device(v.back(), [isa] { return std::make_shared<IsaTiles>(isa); });
    }
    if (tg::host_cpu().isa != tg::CpuIsa::Amx)
      MESSAGE("skipped: the tiles of ISAs beyond this CPU's ("
              << tg::cpu_isa_name(tg::host_cpu().isa) << ")");
    return v;
  }();
  return names;
}
} // namespace

TEST_CASE("elementwise chains fuse into one kernel") {
  auto a = randn({64, 32}), b = randn({64, 32}), c = randn({64, 32});
  auto y = (a * b + c).relu();
  CHECK(tg::schedule({y}).kernels() == 1);
  CHECK(launches([&] { y.realize(); }) == 1);

  auto z = a;
  for (int i = 0; i < 20; ++i) z = (i % 2 ? z * 1.01f : z + 0.5f);
  CHECK(tg::schedule({z}).kernels() == 1);
  CHECK(launches([&] { z.realize(); }) == 1);
}

TEST_CASE("a contiguous elementwise kernel is one loop with no division or modulo") {
  auto a = randn({8, 16, 4}), b = randn({8, 16, 4});
  auto info = tg::schedule({(a * b + 1.0f).relu()});
  REQUIRE(info.kernels() == 1);
  std::string src(tg::render_c(info.lowered[0]).view());
  CHECK(contains(src, "E_512"));
  CHECK(!contains(src, " / "));
  CHECK(!contains(src, " % "));
  // broadcasting keeps two loops, still without division
  auto bias = randn({4});
  std::string src2(tg::render_c(tg::schedule({a + bias}).lowered[0]).view());
  CHECK(!contains(src2, " / "));
  CHECK(!contains(src2, " % "));
}

TEST_CASE("im2col columns: loops over the window axes, taps unrolled, one load per element") {
  // conv2d's columns [N * OH * OW, C * KH * KW] read a padded 3x3 window view through a reshape
  // that no single view expresses: the kernel loops over [N, OH, OW, C, KH, KW] (no division),
  // and unrolls KH x KW so every tap's mask is a constant (9 loads, not 9 gated loads per lane)
  const std::int64_t N = 2, C = 3, H = 5, W = 6;
  auto x = randn({N, C, H, W});
  auto xp = x.pad({1, 1, 1, 1}); // [N, C, H + 2, W + 2]
  std::vector<tg::Tensor> along_w, along_h;
  for (std::int64_t t = 0; t < 3; ++t) along_w.push_back(xp.slice(-1, t, t + W));
  auto taps_w = tg::stack(along_w, -1).permute({0, 1, 3, 4, 2}); // [N, C, OW, KW, H + 2]
  for (std::int64_t t = 0; t < 3; ++t) along_h.push_back(taps_w.slice(-1, t, t + H));
  auto win = tg::stack(along_h, -1).permute({0, 1, 4, 2, 5, 3}); // [N, C, OH, OW, KH, KW]
  auto col = win.permute({0, 2, 3, 1, 4, 5}).reshape({N * H * W, C * 9}).contiguous();
  auto info = tg::schedule({col});
  REQUIRE(info.kernels() == 1);
  auto count = [](const tg::Program& p, tg::UKind kind, tg::Op op) {
    int n = 0;
    for (const tg::UOp& u : p.ops) n += u.kind == kind && (kind != tg::UKind::Alu || u.op == op);
    return n;
  };
  const tg::Program& p = info.lowered[0];
  CHECK_MESSAGE(contains(p.name.view(), "Eu3x3_"), p.name.view());
  CHECK(count(p, tg::UKind::Alu, tg::Op::Div) == 0);
  CHECK(count(p, tg::UKind::Alu, tg::Op::Mod) == 0);
  CHECK(count(p, tg::UKind::Load, tg::Op::Add) == 9);
  // without the optimizations: one flat loop, an index divided per element, 9 loads per element
  tg::Program plain = tg::lower(info.graph, info.schedule, 0, tg::LowerOptions::off());
  CHECK(count(plain, tg::UKind::Alu, tg::Op::Div) > 0);
  CHECK(count(plain, tg::UKind::Load, tg::Op::Add) == 9);
  auto xv = x.to_vector<float>();
  std::vector<float> expect(std::size_t(N * H * W * C * 9)), out(expect.size());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oh = 0; oh < H; ++oh)
      for (std::int64_t ow = 0; ow < W; ++ow)
        for (std::int64_t c = 0; c < C; ++c)
          for (std::int64_t kh = 0; kh < 3; ++kh)
            for (std::int64_t kw = 0; kw < 3; ++kw) {
              std::int64_t ih = oh + kh - 1, iw = ow + kw - 1;
              bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
              expect[std::size_t((((n * H + oh) * W + ow) * C + c) * 9 + kh * 3 + kw)] =
                  inside ? xv[std::size_t(((n * C + c) * H + ih) * W + iw)] : 0.0f;
            }
  std::vector<void*> bufs{out.data(), xv.data()};
  tg::interpret(plain, bufs, {}, 0, tg::eval_sint(plain.outer, plain.vars, {}));
  CHECK(out == expect);
  CHECK(col.to_vector<float>() == expect);              // the compiled kernel on the CPU device
  CHECK(col.to("INTERP").to_vector<float>() == expect); // the optimized program, interpreted
}

TEST_CASE("conv2d: one reduction over a strided window view, forward and backward, no columns") {
  namespace F = tg::nn::functional;
  const std::int64_t N = 2, C = 16, H = 10, W = 12, O = 16;
  auto x = randn({N, C, H, W}).realize(), w = randn({O, C, 3, 3}).realize();
  auto b = randn({O}).realize();
  const tg::Target avx512 = tg::cpu_target(tg::CpuIsa::Avx512);
  auto divides = [](const tg::Program& p) {
    for (const tg::UOp& u : p.ops)
      if (u.kind == tg::UKind::Alu && (u.op == tg::Op::Div || u.op == tg::Op::Mod)) return true;
    return false;
  };
  // A realized input without padding: one kernel with the bias and the activation; its register
  // tile runs along the output channels (8 rows, which share each window load) and the columns.
  auto unpadded = tg::schedule({F::conv2d(x, w, b).relu()}, avx512);
  REQUIRE(unpadded.kernels() == 1);
  CHECK_MESSAGE(contains(unpadded.lowered[0].name.view(), "ru8x10_"),
                unpadded.lowered[0].name.view());
  CHECK_FALSE(divides(unpadded.lowered[0]));
  // With padding, the padded input is materialized first (a copy whose unpadded axes N and C
  // merge into one loop: no division either).
  auto padded = tg::schedule({F::conv2d(x, w, b, 1, 1).relu()}, avx512);
  REQUIRE(padded.kernels() == 2);
  CHECK_MESSAGE(contains(padded.lowered[0].name.view(), "E_32_12_14"),
                padded.lowered[0].name.view());
  // (12 columns: two tiles of 8, the second shifted back)
  CHECK_MESSAGE(contains(padded.lowered[1].name.view(), "ru8x8t_"), padded.lowered[1].name.view());
  for (const tg::Program& p : padded.lowered) CHECK_FALSE(divides(p));
  // (28 columns: one tile of two vectors, the second from column 12; the same bits as INTERP)
  auto x28 = randn({N, C, 5, 28}).realize();
  auto wide = tg::schedule({F::conv2d(x28, w, b, 1, 1)}, avx512);
  CHECK_MESSAGE(contains(wide.lowered.back().name.view(), "ru8x32t_"),
                wide.lowered.back().name.view());
  CHECK(F::conv2d(x28, w, b, 1, 1).to_vector<float>() ==
        F::conv2d(x28.to("INTERP"), w.to("INTERP"), b.to("INTERP"), 1, 1).to_vector<float>());
  // Backward (F::detail::ConvGrad): the padded input; dX, a convolution of the padded output
  // gradient; dW over groups of images from a channels-last copy of the output gradient, summed
  // over the images, and its view as [O, C, KH, KW] copied out (a step's optimizer reads it in
  // place). No kernel writes as many elements as the columns [N * H * W, C * 9] hold. (C == O
  // here: the padded input and the padded output gradient are one kernel with two outputs.)
  auto xr = x.detach().requires_grad_(), wr = w.detach().requires_grad_();
  auto y = F::conv2d(xr, wr, b, 1, 1);
  tg::Tensor gy = randn({N, O, H, W});
  auto bwd = tg::schedule(tg::grad({y}, {xr, wr}, std::vector<tg::Tensor>{gy}), avx512);
  CHECK(bwd.kernels() == 6);
  for (std::size_t k = 0; k < bwd.kernels(); ++k) {
    CAPTURE(bwd.lowered[k].name.view());
    CHECK(tg::prod(bwd.graph[bwd.schedule.kernels[k].root].shape).constant() < N * H * W * C * 9);
    CHECK_FALSE(divides(bwd.lowered[k]));
  }
}

TEST_CASE("a short reduction (a 2 x 2 pooling window) is unrolled: no accumulator, same bits") {
  auto x = randn({2, 3, 8, 6});
  auto pooled = x.reshape({2, 3, 4, 2, 3, 2}).max({3, 5}); // max_pool2d(x, 2)
  auto sums = x.reshape({2, 3, 4, 2, 3, 2}).sum({3, 5});
  for (const tg::Tensor& y : {pooled, sums}) {
    auto info = tg::schedule({y});
    REQUIRE(info.kernels() == 1);
    auto accumulators = [](const tg::Program& p) {
      int n = 0;
      for (const tg::UOp& u : p.ops) n += u.kind == tg::UKind::DefineAcc;
      return n;
    };
    tg::Program plain = tg::lower(info.graph, info.schedule, 0, tg::LowerOptions::off());
    CHECK(accumulators(info.lowered[0]) == 0);
    CHECK(accumulators(plain) > 0);
    auto xv = x.to_vector<float>();
    std::vector<float> looped(std::size_t(y.numel()));
    std::vector<void*> bufs{looped.data(), xv.data()};
    tg::interpret(plain, bufs, {}, 0, tg::eval_sint(plain.outer, plain.vars, {}));
    CHECK(y.to_vector<float>() == looped); // folded in the loop's order: the same bits
    CHECK(y.to("INTERP").to_vector<float>() == looped);
  }
}

TEST_CASE("producers and an elementwise epilogue fuse into the reduction") {
  auto a = randn({16, 8}), b = randn({16, 8}), d = randn({16});
  auto y = (a * b).sum(1) + d;
  CHECK(tg::schedule({y}).kernels() == 1);
  CHECK(launches([&] { y.realize(); }) == 1);
  auto expect_a = a.to_vector<float>(), expect_b = b.to_vector<float>(),
       expect_d = d.to_vector<float>();
  auto got = y.to_vector<float>();
  for (int i = 0; i < 16; ++i) {
    float s = expect_d[std::size_t(i)];
    for (int k = 0; k < 8; ++k)
      s += expect_a[std::size_t(i * 8 + k)] * expect_b[std::size_t(i * 8 + k)];
    CHECK(got[std::size_t(i)] == doctest::Approx(s).epsilon(1e-5));
  }
}

TEST_CASE("matmul is one kernel; softmax is one (three without row reductions)") {
  auto a = randn({32, 16}), b = randn({16, 24});
  CHECK(tg::schedule({a.matmul(b)}).kernels() == 1);
  CHECK(tg::schedule({randn({4, 32, 16}).matmul(randn({16, 8}))}).kernels() == 1);
  auto x = randn({8, 100});
  CHECK(tg::schedule({x.softmax(-1)}).kernels() == 1);
  CHECK(tg::schedule({x.log_softmax(-1)}).kernels() == 1);
  CHECK(tg::schedule({x.softmax(-1)}, tg::Target::portable()).kernels() == 3);
  CHECK(tg::schedule({x.log_softmax(-1)}, tg::Target::portable()).kernels() == 3);
}

TEST_CASE("F::linear's activation or cast runs in the product's kernel under no_grad") {
  namespace F = tg::nn::functional;
  auto x = randn({16, 24}), w = randn({8, 24}), b = randn({8});
  std::vector<tg::Tensor> outs;
  {
    tg::no_grad guard;
    for (const tg::Tensor& y : {F::linear(x, w, b).relu(), F::linear(x, w, b).sigmoid(),
                                F::linear(x, w).tanh(), F::linear(x, w, b).cast(tg::float16)}) {
      CHECK(tg::schedule({y}).kernels() == 1);
      outs.push_back(y);
    }
    // gelu reads the product twice: a kernel of its own (an erf per element in the product's
    // tile is slower than a pass over the output)
    CHECK(tg::schedule({F::linear(x, w, b).gelu()}).kernels() == 2);
  }
  // the same values as the product materialized first
  auto ref = (x.matmul(w.T()) + b).contiguous().realize();
  CHECK((outs[0] - ref.relu()).abs().max().item<float>() < 1e-5f);
  CHECK((outs[3].cast(tg::float32) - ref.cast(tg::float16).cast(tg::float32))
            .abs()
            .max()
            .item<float>() == 0);
  // training: the output is materialized (its gradient feeds two products), the activation after
  // (on a GPU, FuseOptions::merge_epilogues, by the product's kernel too)
  w.requires_grad_();
  CHECK(tg::schedule({F::linear(x, w, b).relu()}).kernels() == 2);
  CHECK(tg::schedule({F::linear(x, w, b).relu()}, tg::Target::glsl()).kernels() == 1);
}

TEST_CASE("results of one shape share one kernel: a product and its activation, Adam's update, "
          "a row's reductions") {
  auto a = randn({16, 24}), b = randn({16, 24}), w = randn({24, 8}), bias = randn({8});
  auto av = a.to_vector<float>(), bv = b.to_vector<float>(), wv = w.to_vector<float>(),
       biasv = bias.to_vector<float>();
  // independent elementwise results of one shape: one loop writes both
  {
    auto s = a + b, p = a * b;
    CHECK(tg::schedule({s, p}).kernels() == 1);
    CHECK(launches([&] { tg::realize({s, p}); }) == 1);
    auto sv = s.to_vector<float>(), pv = p.to_vector<float>();
    for (std::size_t i = 0; i < av.size(); ++i) {
      CHECK(sv[i] == av[i] + bv[i]);
      CHECK(pv[i] == av[i] * bv[i]);
    }
  }
  // a product's pre-activation and its activation (FuseOptions::merge_epilogues: GPUs; here the
  // CPU's target with it, the same C a CPU would run): the activation is computed from the sum in
  // registers, not read back
  {
    auto z = a.matmul(w) + bias, y = z.relu();
    tg::Target epilogues = tg::Target::cpu();
    epilogues.fuse.merge_epilogues = true;
    auto info = tg::schedule({z, y}, epilogues);
    REQUIRE(info.kernels() == 1);
    // two outputs; three inputs (a, w, bias: not z)
    CHECK(info.lowered[0].outputs == 2);
    CHECK(info.lowered[0].params.size() == 5);
    CHECK(tg::schedule({z, y}).kernels() == 2); // (the CPU device's own target)
    CHECK(launches([&] { tg::realize({z, y}); }) == 2);
    auto zv = z.to_vector<float>(), yv = y.to_vector<float>();
    for (std::size_t i = 0; i < 16; ++i)
      for (std::size_t j = 0; j < 8; ++j) {
        double s = biasv[j];
        for (std::size_t k = 0; k < 24; ++k) s += double(av[i * 24 + k]) * wv[k * 8 + j];
        CHECK(zv[i * 8 + j] == doctest::Approx(s).epsilon(1e-5));
        CHECK(yv[i * 8 + j] == std::max(zv[i * 8 + j], 0.0f));
      }
  }
  // not joined: a result that reads the other through a view (another thread's element), and
  // a product with an unrelated result (its register tiles would carry the other's loads)
  {
    auto sq = randn({16, 16});
    auto t = sq * 2.0f, u = t.T() + sq;
    CHECK(tg::schedule({t, u}).kernels() == 2);
    tg::realize({t, u});
    auto sqv = sq.to_vector<float>(), uv = u.to_vector<float>();
    for (std::size_t i = 0; i < 16; ++i)
      for (std::size_t j = 0; j < 16; ++j)
        CHECK(uv[i * 16 + j] == sqv[j * 16 + i] * 2.0f + sqv[i * 16 + j]);
    CHECK(tg::schedule({a.matmul(w), randn({16, 8}) * 2.0f}).kernels() == 2);
  }
  // Adam: the step counts and per-step scalars of every parameter in one kernel, then each
  // parameter's moments and update in one (three kernels for a linear layer, was eight)
  {
    tg::nn::Linear layer(24, 8);
    tg::optim::Adam opt(layer.parameters(), {});
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      layer(a).square().mean().backward();
      for (const tg::Tensor& p : layer.parameters()) p.grad().realize();
      CHECK(launches([&] { opt.step(); }) == 3);
    }
  }
  // a row's reductions (FuseOptions::merge_reductions: GPUs; here the CPU's target with it): the
  // max and the sum in one loop over the row; a variance after its mean in the kernel that
  // writes both; products and reductions of unrelated tensors stay apart
  {
    auto mx = a.max(1), sm = a.sum(1), mu = a.mean(1, true), var = (a - mu).square().mean(1, true);
    tg::Target rows = tg::Target::cpu();
    rows.fuse.merge_reductions = true;
    auto info = tg::schedule({mx, sm}, rows);
    REQUIRE(info.kernels() == 1);
    std::int64_t loops = 0;
    for (const tg::UOp& u : info.lowered[0].ops) loops += u.kind == tg::UKind::Range;
    CHECK(loops == 2); // the rows, and one loop along them
    CHECK(tg::schedule({mu, var}, rows).kernels() == 1);
    CHECK(tg::schedule({a.matmul(w), b.matmul(w)}, rows).kernels() == 2);
    CHECK(tg::schedule({a.sum(1), b.sum(1)}, rows).kernels() == 2);
    CHECK(tg::schedule({mx, sm}).kernels() == 2); // (the CPU device's own target)
    // one kernel with two reductions over the same loops: one loop (the CPU's too)
    auto both = tg::schedule({mx + sm});
    loops = 0;
    for (const tg::UOp& u : both.lowered[0].ops) loops += u.kind == tg::UKind::Range;
    CHECK(loops == 2);
    tg::realize({mx, sm});
    tg::realize({mu, var});
    auto mxv = mx.to_vector<float>(), smv = sm.to_vector<float>(), varv = var.to_vector<float>();
    for (std::size_t i = 0; i < 16; ++i) {
      double m = -INFINITY, s = 0, v = 0;
      for (std::size_t k = 0; k < 24; ++k) {
        m = std::max(m, double(av[i * 24 + k]));
        s += av[i * 24 + k];
      }
      for (std::size_t k = 0; k < 24; ++k)
        v += (av[i * 24 + k] - s / 24) * (av[i * 24 + k] - s / 24);
      CHECK(mxv[i] == float(m));
      CHECK(smv[i] == doctest::Approx(s).epsilon(1e-5).scale(1));
      CHECK(varv[i] == doctest::Approx(v / 24).epsilon(1e-5));
    }
  }
  // TG_OPT=0 (Target::unoptimized) and the static front end's plans keep one result per kernel
  CHECK(tg::schedule({a + b, a * b}, tg::Target::cpu().unoptimized()).kernels() == 2);
}

TEST_CASE("an elementwise operand that a reduction reads broadcast gets a kernel of its own") {
  auto a = randn({32, 64}), b = randn({64, 48});
  // relu(a) is read once per output column of the product: computed once, by a kernel of its own
  tg::Tensor y = a.relu().matmul(b);
  CHECK(tg::schedule({y}).kernels() == 2);
  CHECK(launches([&] { y.realize(); }) == 2);
  tg::Target never = tg::Target::cpu();
  never.fuse.broadcast_operand_min = 0;
  CHECK(tg::schedule({a.relu().matmul(b)}, never).kernels() == 1);
  // Not when fewer output elements than broadcast_operand_min (8) read it alike, nor for a value
  // that is the same along the reduced axis (a row's scale), nor for one read at its own index.
  CHECK(tg::schedule({a.relu().matmul(randn({64, 4}))}).kernels() == 1);
  CHECK(tg::schedule({(a * (randn({32, 1}) * 2.0)).sum(1)}).kernels() == 1);
  CHECK(tg::schedule({(a.relu() * 2.0).sum(1)}).kernels() == 1);
  auto av = a.to_vector<float>(), bv = b.to_vector<float>(), got = y.to_vector<float>();
  for (std::size_t i = 0; i < 32; i += 3)
    for (std::size_t j = 0; j < 48; j += 5) {
      double s = 0;
      for (std::size_t k = 0; k < 64; ++k) s += std::max(av[i * 64 + k], 0.0f) * bv[k * 48 + j];
      CHECK(got[i * 48 + j] == doctest::Approx(s).epsilon(1e-5));
    }
}

TEST_CASE("row reductions: computed once per row inside the kernel that reads them") {
  auto x = randn({6, 200}), w = randn({200}), b = randn({200});
  auto xs = x.to_vector<float>();
  auto mean_of = [&](std::int64_t r) {
    double s = 0;
    for (std::int64_t k = 0; k < 200; ++k) s += xs[std::size_t(r * 200 + k)];
    return s / 200;
  };
  struct Case {
    const char* name;
    tg::Tensor y;
    std::int64_t fused, plain; // kernels with and without row reductions
  };
  auto centered = x - x.mean(1, true);
  std::vector<Case> cases{
      {"softmax", x.softmax(1), 1, 3},
      {"log_softmax", x.log_softmax(1), 1, 3},
      {"logsumexp (the max inside the sum's kernel)", x.logsumexp(1), 1, 2},
      {"layer norm", tg::nn::functional::layer_norm(x, {200}, w, b), 1, 3},
      {"centered", centered, 1, 2},
      // a column reduction is broadcast along the outer loop: recomputing it per row would
      // multiply its work, so it keeps its buffer
      {"softmax over axis 0", x.softmax(0), 3, 3},
      // read at its own index by one kernel and broadcast by another: a buffer
      {"a reduction that is also an output", x.sum(1, true), 1, 1},
      // rows split 16 ways, not split (30 < 64), read with a stride (transposed), and in
      // double (the vector max of tg_f64x4)
      {"softmax of [2, 3, 96]", randn({2, 3, 96}).softmax(-1), 1, 3},
      {"softmax of rows of 30", randn({5, 30}).softmax(1), 1, 3},
      {"softmax of a transposed view", randn({96, 5}).transpose(0, 1).softmax(1), 1, 3},
      {"double softmax", randn({3, 256}).cast(tg::DType::Float64).realize().softmax(1), 1, 3},
  };
  for (Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    CHECK(tg::schedule({c.y}).kernels() == c.fused);
    CHECK(tg::schedule({c.y}, tg::Target::portable()).kernels() == c.plain);
    // the same program on CPU and INTERP: the same bits
    if (c.y.dtype() == tg::DType::Float64)
      CHECK(c.y.to_vector<double>() == c.y.to("INTERP").to_vector<double>());
    else
      CHECK(c.y.to_vector<float>() == c.y.to("INTERP").to_vector<float>());
  }
  // against a plain loop
  auto got = cases[0].y.to_vector<float>(), centered_got = centered.to_vector<float>();
  for (std::int64_t r = 0; r < 6; ++r) {
    double mx = -INFINITY, sum = 0;
    for (std::int64_t k = 0; k < 200; ++k) mx = std::max(mx, double(xs[std::size_t(r * 200 + k)]));
    for (std::int64_t k = 0; k < 200; ++k) sum += std::exp(xs[std::size_t(r * 200 + k)] - mx);
    for (std::int64_t k = 0; k < 200; ++k) {
      std::size_t i = std::size_t(r * 200 + k);
      CHECK(got[i] == doctest::Approx(std::exp(xs[i] - mx) / sum).epsilon(1e-5));
      CHECK(centered_got[i] == doctest::Approx(xs[i] - mean_of(r)).epsilon(1e-4));
    }
  }
  // the kernel computes the max and the sum before its row loop: no buffer between them
  auto info = tg::schedule({x.softmax(1)});
  CHECK(info.memory.slot_bytes.empty());
  CHECK(contains(info.lowered[0].name.view(), "Eh"));
  // the CPU device's reuse_values: the sum's loop keeps its exponentials in a local array of the
  // row, and the output loop reads them there (8 calls of exp2 in the sum's loop, split 8 ways,
  // and none left in the output loop); the softmax's bits above are the CPU's with it
  auto count = [](std::string_view s, std::string_view what) {
    std::size_t k = 0;
    for (std::size_t at = s.find(what); at != std::string_view::npos; at = s.find(what, at + 1))
      ++k;
    return k;
  };
  const tg::Program& sm = info.lowered[0];
  tg::Program kept = tg::reuse_values(sm);
  std::string before(tg::render_c(sm).view()), after(tg::render_c(kept).view());
  CHECK(count(before, "= exp2f(") == 9); // (decompose, not run here, would write polynomials)
  CHECK(count(after, "= exp2f(") == 8);
  CHECK(contains(after, "[200] __attribute__((aligned(64)))"));
  CHECK(!contains(before, "__attribute__((aligned(64)))"));
  // log_softmax computes no costly value twice (its log is of the sum): unchanged
  auto lsm = tg::schedule({x.log_softmax(1)}).lowered[0];
  CHECK(tg::reuse_values(lsm).ops.size() == lsm.ops.size());
  // symbolic sizes: a batch of rows, and a row length (neither split nor kept then); one kernel
  // per shape serves every value
  std::vector<float> data(64 * 100);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = float(int(i * 37 % 101)) / 17.0f;
  for (int shape = 0; shape < 2; ++shape)
    for (std::int64_t n : {5, 37}) {
      CAPTURE(shape);
      CAPTURE(n);
      tg::Tensor t = tg::Tensor::from_data(data.data(), {n * (shape == 0 ? 100 : 4)});
      t = shape == 0 ? t.reshape({tg::sym("batch", 1, 64, n), 100})
                     : t.reshape({4, tg::sym("len", 1, 64, n)});
      tg::reset_stats();
      auto y = t.softmax(1);
      CHECK(tg::schedule({y}).kernels() == 1);
      auto on_cpu = y.to_vector<float>();
      if (n == 37) CHECK(tg::stats().kernels_compiled == 0);
      CHECK(on_cpu == y.to("INTERP").to_vector<float>());
      const std::int64_t cols = t.shape()[1];
      for (std::size_t r = 0; r < on_cpu.size() / std::size_t(cols); ++r) {
        double sum = 0;
        for (std::int64_t k = 0; k < cols; ++k)
          sum += on_cpu[r * std::size_t(cols) + std::size_t(k)];
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
      }
    }
  // a row with a NaN: the vector max propagates it, like the scalar one
  std::vector<float> v(3 * 64, 1.0f);
  v[70] = NAN;
  auto with_nan = tg::Tensor::from_data(v, {3, 64}).softmax(1).to_vector<float>();
  for (std::size_t i = 0; i < v.size(); ++i) CHECK((i / 64 == 1) == std::isnan(with_nan[i]));
}

TEST_CASE("movement of a realized tensor launches nothing") {
  auto a = randn({6, 4});
  CHECK(launches([&] { a.reshape({4, 6}).realize(); }) == 0);
  CHECK(launches([&] { a.permute({1, 0}).realize(); }) == 0);
  CHECK(launches([&] { a.slice(0, 1, 5, 2).flip({1}).realize(); }) == 0);
  CHECK(launches([&] { a.reshape({24}).to_vector<float>(); }) == 0);
  // reading a permuted view needs one copy kernel
  CHECK(launches([&] { a.permute({1, 0}).to_vector<float>(); }) == 1);
}

TEST_CASE("realized tensors are never recomputed") {
  auto a = randn({32, 32});
  auto m = (a * 2.0f).sum(1, true); // a reduction that two consumers need
  m.realize();
  auto y1 = a - m, y2 = a + m;
  CHECK(launches([&] { tg::realize({y1, y2}); }) == 1); // (one kernel, two outputs)
  CHECK(launches([&] {
          y1.realize();
          y2.realize();
        }) == 0);
}

TEST_CASE("an intermediate held by the user is kept; an unheld one is a reused temporary") {
  auto x = randn({64, 64});
  // three reductions in a chain: each one's buffer is free once the next has read it
  auto y = (((x.sum(1, true) + 1.0f).exp().sum(0, true) * 2.0f).sqrt() + x).max(1, true).sum();
  auto info = tg::schedule({y});
  CHECK(info.kernels() >= 3);
  std::size_t temps = 0;
  for (int s : info.memory.slot) temps += s >= 0;
  CHECK(info.memory.slot_bytes.size() < temps); // fewer buffers than temporaries: reuse
  // the same value, held by the user, gets its own buffer and stays realized
  auto held = x.sum(1, true);
  auto z = (held + 1.0f).max();
  z.realize();
  CHECK(held.is_realized());
}

TEST_CASE("symbolic sizes: one compiled kernel serves every bound value") {
  std::vector<float> data(64 * 4);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = float(i % 7);
  auto run = [&](std::int64_t batch) {
    auto x = tg::Tensor::from_data(data.data(), {batch * 4})
                 .reshape({tg::sym("batch", 1, 64, batch), 4});
    return ((x * 2.0f).sum(1) + 1.0f).to_vector<float>();
  };
  auto r16 = run(16);
  tg::reset_stats();
  auto r32 = run(32);
  CHECK(tg::stats().kernels_compiled == 0);
  REQUIRE(r16.size() == 16);
  REQUIRE(r32.size() == 32);
  for (std::size_t i = 0; i < 32; ++i) {
    float expect = 1.0f;
    for (std::size_t k = 0; k < 4; ++k) expect += 2.0f * data[i * 4 + k];
    CHECK(r32[i] == expect);
    if (i < 16) CHECK(r16[i] == expect);
  }
  // a symbolic inner size is a kernel argument, not a constant in the source
  auto x = tg::zeros({3, tg::sym("n", 1, 100, 5)});
  std::string src(tg::render_c(tg::schedule({x + randn({3, 1})}).lowered[0]).view());
  CHECK(contains(src, "vars[0]"));
  CHECK(contains(src, "/* n */"));
  CHECK_THROWS_AS(tg::sym("n", 1, 10, 11), tg::shape_error);
}

TEST_CASE("a realize of the same computation reuses its plan, with this realize's values") {
  auto run = [](std::int64_t n) {
    auto x = tg::ones({3, tg::sym("n", 1, 100, n)}) * 2.0f;
    return (x.exp().sum(1) + 1.0f).to_vector<float>();
  };
  run(5);
  tg::reset_stats();
  auto r = run(7); // another value of n: the same plan
  CHECK(tg::stats().plans_reused == 1);
  CHECK(tg::stats().kernels_compiled == 0);
  REQUIRE(r.size() == 3);
  for (float v : r) CHECK(v == doctest::Approx(7 * std::exp(2.0f) + 1));

  // other data, same structure: reused; a held intermediate changes what is kept: planned anew
  auto a = randn({4, 8}), b = randn({4, 8});
  auto f = [](const tg::Tensor& x, const tg::Tensor& y) { return (x * y + 1.0f).relu(); };
  auto first = f(a, b).to_vector<float>();
  tg::reset_stats();
  auto second = f(b, a * 2.0f).to_vector<float>();
  CHECK(tg::stats().plans_reused == 0); // a * 2 is one more node
  auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  auto c = randn({4, 8}), d = randn({4, 8});
  tg::reset_stats();
  auto third = f(c, d).to_vector<float>();
  CHECK(tg::stats().plans_reused == 1);
  auto cv = c.to_vector<float>(), dv = d.to_vector<float>();
  for (std::size_t i = 0; i < third.size(); ++i) {
    CHECK(first[i] == std::max(av[i] * bv[i] + 1.0f, 0.0f));
    CHECK(second[i] == std::max(bv[i] * (av[i] * 2.0f) + 1.0f, 0.0f));
    CHECK(third[i] == std::max(cv[i] * dv[i] + 1.0f, 0.0f));
  }
  // what the user holds is part of the plan (a held value may need its own buffer): planned anew
  auto inlined = ((a * b).sum(1, true) + 1.0f).to_vector<float>();
  auto held = (a * b).sum(1, true);
  auto y = held + 1.0f;
  tg::reset_stats();
  y.realize();
  CHECK(tg::stats().plans_reused == 0);
  CHECK(y.to_vector<float>() == inlined);
}

TEST_CASE("pipeline functions run in constant expressions") {
  constexpr auto kernels = [] {
    tg::Graph g;
    g.buffers.push_back({tg::float32, 48});
    tg::Node in{tg::Op::Buffer, tg::float32, {-1, -1, -1}, {3, 16}, {}, {}, {}, 0};
    int a = g.add(in);
    tg::Node mul{tg::Op::Mul, tg::float32, {a, a, -1}, {3, 16}, {}, {}, {}, -1};
    int m = g.add(mul);
    tg::Node sum{tg::Op::ReduceSum, tg::float32, {m, -1, -1}, {3, 1}, {}, {1}, {}, -1};
    g.outputs.push_back(g.add(sum));
    auto s = tg::fuse(g);
    auto p = tg::lower(g, s, 0);
    auto src = tg::render_c(p);
    return std::pair{s.kernels.size(), src.view().find("acc") != std::string_view::npos};
  }();
  static_assert(kernels.first == 1);
  static_assert(kernels.second);
  CHECK(kernels.first == 1);
}

TEST_CASE("upcast reductions compute the same values as plain ones") {
  // (a @ b) * 2 + bias: a reduction with an epilogue, upcast along its last axis (32 = 2 x 16),
  // and with rows n divisible by 2 or 4 also along the axis before it (a register tile)
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{5, 32},
                      {5, 24},
                      {5, 7},
                      {7, 255}, // 16 tiles of 16 columns, the last one from column 239
                      {3, 48},
                      {9, 17},
                      {8, 32},
                      {6, 16},
                      {12, 8},
                      {8, 4},
                      {8, 128}}) {
    CAPTURE(n);
    CAPTURE(m);
    auto a = randn({n, 9}), b = randn({9, m}), bias = randn({m});
    auto y = a.matmul(b) * 2.0f + bias;
    auto info = tg::schedule({y});
    REQUIRE(info.kernels() == 1);
    tg::Program plain = tg::lower(info.graph, info.schedule, 0, tg::LowerOptions{1, 1});
    tg::Program up = tg::lower(info.graph, info.schedule, 0, tg::LowerOptions{16, 4});
    auto pow2_divisor = [](std::int64_t d, std::int64_t most) {
      std::int64_t w = most;
      while (w > 1 && d % w) w /= 2;
      return w;
    };
    // a tile that does not divide its axis when it computes at most a quarter more outputs, or
    // when no power of two at least a quarter of it does (LowerOptions::tile_tails)
    auto tile = [&](std::int64_t d, std::int64_t most) {
      const std::int64_t w = pow2_divisor(d, most), extra = (d + most - 1) / most * most - d;
      return w == most || d <= most ? w : 4 * extra <= d || 4 * w <= most ? most : w;
    };
    std::int64_t lanes = tile(m, 16), rows = 1;
    if (lanes < 4) lanes = m <= 16 ? m : 1;        // a short axis whole
    if (lanes >= 8) rows = n < 4 ? n : tile(n, 4); // (rows shorter than the tile: whole)
    if (rows == 1 && lanes == 16) lanes = std::max(lanes, pow2_divisor(m, 64)); // wide lanes
    const std::string tail = m % lanes || n % rows ? "t_" : "_";
    std::string name = rows > 1    ? "u" + std::to_string(rows) + "x" + std::to_string(lanes) + tail
                       : lanes > 1 ? "u" + std::to_string(lanes) + tail
                                   : "r_";
    CHECK_MESSAGE(contains(up.name.view(), name), up.name.view());
    auto av = a.to_vector<float>(), bv = b.to_vector<float>(), cv = bias.to_vector<float>();
    std::vector<float> out1(std::size_t(n * m)), out2(out1.size()), expect(out1.size());
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < m; ++j) {
        float s = 0;
        for (std::int64_t k = 0; k < 9; ++k)
          s += av[std::size_t(i * 9 + k)] * bv[std::size_t(k * m + j)];
        expect[std::size_t(i * m + j)] = s * 2.0f + cv[std::size_t(j)];
      }
    // kernel parameters: output, then inputs in the kernel's order (graph buffers a, b, bias)
    std::vector<void*> in;
    for (int node : info.schedule.kernels[0].inputs) {
      const tg::Node& nd = info.graph[node];
      in.push_back(nd.arg == 0   ? (void*)av.data()
                   : nd.arg == 1 ? (void*)bv.data()
                                 : (void*)cv.data());
    }
    auto run = [&](const tg::Program& lowered, std::vector<float>& out) {
      std::vector<void*> bufs{out.data()};
      bufs.insert(bufs.end(), in.begin(), in.end());
      const tg::Program p = tg::contract(lowered); // as INTERP and the CPU device run it
      tg::interpret(p, bufs, {}, 0, tg::eval_sint(p.outer, p.vars, {}));
    };
    // the same tile with its column tiles in the outer loop (as for an operand past the caches)
    tg::Program panel =
        tg::lower(info.graph, info.schedule, 0, tg::LowerOptions{16, 4, 16, /*panel_bytes=*/64});
    CHECK(contains(panel.name.view(), "p" + tail) ==
          (rows > 1 && (m + lanes - 1) / lanes >= 8)); // 8 column tiles
    std::vector<float> out3(out1.size());
    run(plain, out1);
    run(up, out2);
    run(panel, out3);
    for (std::size_t i = 0; i < expect.size(); ++i) {
      CHECK(out1[i] == doctest::Approx(expect[i]).epsilon(1e-5));
      CHECK(out2[i] == out1[i]);
      CHECK(out3[i] == out1[i]);
    }
    // and the compiled kernel on the CPU device, same bits
    CHECK(y.to_vector<float>() == out1);
  }
}

TEST_CASE("register tiles as C vectors, with packed panels: the same bits on CPU and INTERP") {
  // (rows, reduce length, columns, dtype): a tile of 4 x 16 when rows divide by 4 and columns by
  // 16; its column tiles outermost (and its right operand's panel copied) past 128 KiB
  struct Case {
    std::int64_t n, k, m;
    tg::DType dtype;
    bool panel;
  };
  for (Case c :
       {Case{8, 1100, 512, tg::DType::Float32, true}, Case{32, 20, 64, tg::DType::Float32, false},
        Case{8, 600, 1024, tg::DType::Float64, true}, Case{12, 2100, 256, tg::DType::Float32, true},
        Case{12, 3200, 256, tg::DType::Float32, true},   // a transposed operand's panel too large
        Case{8, 784, 256, tg::DType::Float32, true},     // the MLP's first layer: 784 KiB
        Case{8, 256, 256, tg::DType::Float32, true},     // 256 KiB
        Case{8, 128, 256, tg::DType::Float32, false}}) { // 128 KiB
    for (bool transposed : {false, true}) { // b, or the transpose of a [m, k] tensor (nn::Linear)
      CAPTURE(c.n);
      CAPTURE(c.k);
      CAPTURE(c.m);
      CAPTURE(transposed);
      auto a = tg::randn({c.n, c.k}, c.dtype).realize();
      auto b = transposed ? tg::randn({c.m, c.k}, c.dtype).realize().T()
                          : tg::randn({c.k, c.m}, c.dtype).realize();
      auto bias = tg::randn({c.m}, c.dtype).realize();
      tg::Tensor y = (a.matmul(b) + bias).relu();
      auto info = tg::schedule({y});
      // a transposed operand is copied first (a kernel of its own) unless the tile packs its
      // panels itself, reading it in place: large operands (panel order), panels of up to two
      // vectors' columns within tg::kPanelBytes
      const bool in_place = transposed && c.panel && c.k * 32 * 4 <= tg::kPanelBytes;
      const bool copied = transposed && !in_place && c.k * c.m >= 4096;
      REQUIRE(info.kernels() == (copied ? 2 : 1));
      tg::Program p = tg::lower(info.graph, info.schedule, info.kernels() - 1);
      tg::Program v = tg::vectorize(tg::contract(p)), packed = tg::pack_panels(v);
      std::string src(tg::render_c(packed).view());
      if (!transposed || in_place || copied) { // (a small transposed operand has no tile)
        CHECK_MESSAGE(contains(p.name.view(), c.panel ? "u4x16p_" : "u4x16_"), p.name.view());
        CHECK(contains(src, c.dtype == tg::DType::Float64 ? "tg_f64x4 " : "tg_f32x8 "));
        CHECK(contains(src, "__attribute__((aligned(64)))") == c.panel); // the panel's array
        CHECK(contains(src, "); TG_IN_REG(v")); // each vector load kept in a register
      }
      CHECK(!contains(tg::render_c(p).view(), "tg_f32x8 v")); // a pass of the CPU device only
      // in place: the copy into the panel reads b's rows (a vector of elements k apart)
      CHECK(contains(src, " + " + std::to_string(c.k) + "], ") == in_place);
      // the CPU device runs the vectorized program; INTERP the lowered one
      auto check = [&]<class T>(T tolerance) {
        std::vector<T> cpu = y.to_vector<T>(), interp = y.to("INTERP").to_vector<T>();
        CHECK(cpu == interp);
        auto av = a.to_vector<T>(), bv = b.to_vector<T>(), cv = bias.to_vector<T>();
        for (std::int64_t i = 0; i < c.n; i += 5)
          for (std::int64_t j = 0; j < c.m; j += 3) {
            double s = 0;
            for (std::int64_t k = 0; k < c.k; ++k)
              s += double(av[std::size_t(i * c.k + k)]) * bv[std::size_t(k * c.m + j)];
            CHECK(cpu[std::size_t(i * c.m + j)] ==
                  doctest::Approx(std::max(0.0, s + cv[std::size_t(j)])).epsilon(tolerance));
          }
      };
      if (c.dtype == tg::DType::Float64)
        check(double(std::numeric_limits<float>::epsilon()) * 100); // doctest's default
      else
        check(1e-4f);
    }
  }
}

TEST_CASE("products in each ISA's register tiles (runtime/cpu_info.hpp): the same bits as INTERP") {
  // (one device per ISA the host has: its tiles, vectors and compile flags)
  struct Case {
    std::int64_t n, k, m;
    tg::DType dtype;
    int epilogue;     // 0: a @ b; 1: (a @ b + bias).relu(); 2: (a @ b).contiguous(), as conv2d's;
                      // 3: (a @ b) * (z > 0), a relu's gradient mask
    bool transposed;  // b is the transpose of a [m, k] tensor (nn::Linear), read in place
    const char* name; // of the kernel lowered with tile_lanes = 32
  };
  const auto f32 = tg::DType::Float32;
  for (Case c : {Case{8, 1100, 512, f32, 0, false, "u4x32p_"}, // panel order, 16 column tiles
                 Case{8, 784, 256, f32, 0, false, "u4x32p_"},  // 8 column tiles
                 Case{12, 64, 96, f32, 0, false, "u4x32_"},
                 Case{8, 256, 48, f32, 0, false, "u4x16_"},      // 48 = 3 x 16
                 Case{8, 256, 24, f32, 0, false, "u4x8_"},       // 8 lanes: half vectors on AVX-512
                 Case{8, 256, 40, f32, 0, false, "u4x16t_"},     // 3 tiles, the last from column 24
                 Case{255, 255, 255, f32, 0, false, "u4x16pt_"}, // no tile divides either axis
                 Case{97, 131, 1009, f32, 1, true, "u4x32pt_"},  // nn::Linear, odd sizes
                 Case{13, 300, 100, f32, 3, false, "u4x16t_"},
                 Case{3, 784, 1000, f32, 1, true, "u3x32pt_"}, // a batch shorter than the tile
                 Case{8, 1100, 128, f32, 0, false, "u4x16p_"}, // 32 lanes: 4 column tiles
                 Case{8, 784, 256, f32, 1, false, "u4x32p_"},  // a bias: one load per column
                 Case{8, 784, 256, f32, 3, false, "u4x16p_"},  // a load per element: 16 lanes
                 Case{8, 784, 256, f32, 1, true, "u4x32p_"},   // nn::Linear's x @ W1.t() + b
                 Case{8, 256, 256, f32, 0, true, "u4x32p_"},
                 Case{12, 144, 32, f32, 2, false, "u4x32_"}, // a 3x3 conv's columns by 32 filters
                 Case{8, 600, 1024, tg::DType::Float64, 0, false, "u4x16p_"}}) { // 4 vectors
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.m);
    CAPTURE(c.epilogue);
    CAPTURE(c.transposed);
    auto a = tg::randn({c.n, c.k}, c.dtype).realize();
    auto b = c.transposed ? tg::randn({c.m, c.k}, c.dtype).realize().T()
                          : tg::randn({c.k, c.m}, c.dtype).realize();
    auto bias = tg::randn({c.m}, c.dtype).realize(), z = tg::randn({c.n, c.m}, c.dtype).realize();
    auto product = [&](const std::string& dev) {
      tg::Tensor y = a.to(dev).matmul(b.to(dev));
      switch (c.epilogue) {
      case 1:
        return (y + bias.to(dev)).relu();
      case 2:
        return y.contiguous();
      case 3:
        return y * (z.to(dev) > 0.0f).cast(c.dtype);
      default:
        return y;
      }
    };
    auto info = tg::schedule({product("CPU")});
    REQUIRE(info.kernels() == 1);
    tg::LowerOptions wide;
    wide.tile_lanes = 32;
    tg::Program p = tg::lower(info.graph, info.schedule, 0, wide);
    CHECK_MESSAGE(contains(p.name.view(), c.name), p.name.view());
    auto same = [&]<class T>(T) {
      const std::vector<T> interp = product("INTERP").to_vector<T>();
      for (const std::string& dev : isa_devices()) {
        CAPTURE(dev);
        CHECK(product(dev).to_vector<T>() == interp);
      }
      CHECK(product("CPU").to_vector<T>() == interp);
      if (c.epilogue != 0) return;
      // each output is the sum of its products by fused multiply-add, in k's order (contract)
      const std::vector<T> av = a.to_vector<T>(), bv = b.contiguous().to_vector<T>();
      bool fused = true;
      for (std::int64_t i = 0; i < c.n; ++i)
        for (std::int64_t j = 0; j < c.m; ++j) {
          T acc = 0;
          for (std::int64_t k = 0; k < c.k; ++k)
            acc = std::fma(av[std::size_t(i * c.k + k)], bv[std::size_t(k * c.m + j)], acc);
          fused = fused && std::memcmp(&acc, &interp[std::size_t(i * c.m + j)], sizeof acc) == 0;
        }
      CHECK(fused);
    };
    if (c.dtype == tg::DType::Float64)
      same(0.0);
    else
      same(0.0f);
  }
}

TEST_CASE("AVX-512's tiles of three vectors where 48 columns fit the output, else two") {
  // (runtime/cpu_info.hpp, LowerOptions::tile_lanes): 8 x 48 where the last tile, shifted back,
  // computes at most a sixteenth more columns; the panel of 2048 x 48 float32s still packed. An
  // output of two or three vectors' columns is one tile, its last vector shifted back.
  struct Case {
    std::int64_t n, k, m;
    const char* name;
    bool packed;
  };
  const tg::Target avx512 = tg::cpu_target(tg::CpuIsa::Avx512);
  for (Case c : {Case{16, 1100, 1000, "u8x48pt_", true}, // 21 tiles: 1008 columns computed
                 Case{16, 1100, 768, "u8x48p_", true},   // 16 tiles
                 Case{16, 2048, 1000, "u8x48pt_", true}, // a panel of tg::kPanelBytes
                 Case{16, 512, 96, "u8x48_", false},     // row order
                 Case{16, 784, 256, "u8x32p_", true},    // 48s would compute 288 columns
                 Case{16, 300, 56, "u8x32t_", false},    // 48s would compute 96
                 Case{16, 144, 28, "u8x32t_", false},    // one tile: columns 0-15 and 12-27
                 Case{16, 144, 20, "u8x32t_", false},    // 0-15 and 4-19
                 Case{16, 144, 40, "u8x48t_", false},    // 0-15, 16-31 and 24-39
                 Case{16, 144, 64, "u8x32_", false}}) {  // two tiles of 32
    CAPTURE(c.k);
    CAPTURE(c.m);
    auto a = tg::randn({c.n, c.k}).realize(), b = tg::randn({c.k, c.m}).realize();
    auto info = tg::schedule({a.matmul(b)});
    REQUIRE(info.kernels() == 1);
    std::map<std::string, std::string> dumps;
    const tg::Program p = tg::lower_kernel(info.graph, info.schedule, 0, avx512);
    CHECK_MESSAGE(contains(p.name.view(), c.name), p.name.view());
    tg::device_passes(p, avx512, DumpLog{&dumps});
    CHECK((dumps.at("pack_panels") != dumps.at("vectorize")) == c.packed);
    const std::vector<float> interp = a.to("INTERP").matmul(b.to("INTERP")).to_vector<float>();
    for (const std::string& dev : isa_devices()) {
      CAPTURE(dev);
      CHECK(a.to(dev).matmul(b.to(dev)).to_vector<float>() == interp);
    }
  }
}

TEST_CASE("a tile of 8 float32 columns is a tile of 32-byte vectors with 64-byte ones") {
  auto a = randn({64, 256}), b = randn({256, 24}); // 24 = 8 x 3
  const tg::ScheduleInfo info = tg::schedule({a.matmul(b)}, tg::cpu_target(tg::CpuIsa::Avx512));
  REQUIRE(info.kernels() == 1);
  const std::string& src = info.sources[0];
  const std::string body = src.substr(src.find("(void** bufs")); // (after the prelude)
  CHECK_MESSAGE(contains(body, "tg_fma_f32x8(("), body);
  CHECK_FALSE(contains(body, "fmaf("));
}

TEST_CASE("a product whose sizes no tile divides keeps whole tiles, the last ones shifted back") {
  // 255 x 255 on AVX-512: 32 tiles of 8 rows and 16 of 16 columns, the last of each starting at
  // row 247 and column 239 (LowerOptions::tile_tails), all of them vectors
  auto a = randn({255, 300}), b = randn({300, 255});
  const tg::ScheduleInfo info = tg::schedule({a.matmul(b)}, tg::cpu_target(tg::CpuIsa::Avx512));
  REQUIRE(info.kernels() == 1);
  const std::string& src = info.sources[0];
  const std::string body = src.substr(src.find("(void** bufs"));
  CHECK_MESSAGE(contains(src, "ru8x16pt_32_16"), src);
  CHECK_MESSAGE(contains(body, "tg_fma_f32x16(("), body);
  CHECK_FALSE(contains(body, "fmaf("));
  // each tile's first row and column: min(tile * size, extent - size), written as a minimum that
  // the C compiler recognizes (it kept the tile's stores scalar where it did not)
  const std::regex min(R"(\(\(v(\d+) < v(\d+)\) \? v\1 : v\2\))");
  CHECK_MESSAGE(std::distance(std::sregex_iterator(body.begin(), body.end(), min),
                              std::sregex_iterator()) == 2,
                body);
  CHECK(a.matmul(b).to_vector<float>() == a.to("INTERP").matmul(b.to("INTERP")).to_vector<float>());
  // Such a kernel writes the overlapped outputs twice, so it never writes into a buffer it reads:
  // in place, acc += a @ b would add those outputs' products twice.
  auto acc = randn({255, 255}).realize();
  const std::vector<float> want = (acc + a.matmul(b)).to_vector<float>();
  acc.assign(acc + a.matmul(b));
  CHECK(acc.to_vector<float>() == want);
}

TEST_CASE("bfloat16 products two steps at a time (AVX512_BF16's vdpbf16ps, pair_products.hpp)") {
  // Every shape of product the pass takes, on a device with the AVX512_BF16 target: with and
  // without pack_panels' panel, an odd K (its last pair holds a zero), a transposed left operand
  // (its pairs joined from two loads), a transposed right one, an epilogue, a batch. Where the host
  // has the instruction, the results are those of a plain loop that adds each pair's products as
  // the instruction does (element k + 1 first, each sum rounded: exact products), bit for bit.
  struct Pairs : tg::CpuDevice {
    tg::Target target() const override {
      return tg::with_env(tg::cpu_target(tg::CpuIsa::Avx512Bf16));
    }
  };
  // The same kernels compiled without the instruction (its emulation in the C prelude) run on
  // every host: a C compiler that appends -mno-avx512bf16 to the device's flags.
  static const std::string no_bf16 = [] {
    const char* cc = std::getenv("TG_CC");
    std::string path =
        std::filesystem::temp_directory_path() / ("tg-cc-no-bf16-" + std::to_string(::getpid()));
    std::ofstream(path) << "#!/bin/sh\nexec " << (cc && *cc ? cc : "cc")
                        << " \"$@\" -mno-avx512bf16\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }();
  static const bool registered =
      (tg::register_device("CPU_BF16_PAIRS", [] { return std::make_shared<Pairs>(); }),
       tg::register_device("CPU_BF16_PAIRS_C",
                           [] {
                             const char* cc = std::getenv("TG_CC");
                             const std::string was = cc ? cc : "";
                             ::setenv("TG_CC", no_bf16.c_str(), 1);
                             auto d = std::make_shared<Pairs>(); // (reads TG_CC)
                             if (cc)
                               ::setenv("TG_CC", was.c_str(), 1);
                             else
                               ::unsetenv("TG_CC");
                             return d;
                           }),
       true);
  CHECK(registered);
  std::vector<std::string> runs{"CPU_BF16_PAIRS_C"};
  if (tg::host_cpu().isa >= tg::CpuIsa::Avx512Bf16)
    runs.push_back("CPU_BF16_PAIRS");
  else
    MESSAGE("skipped: running vdpbf16ps (this CPU has " << tg::cpu_isa_name(tg::host_cpu().isa)
                                                        << "); its kernels and their emulation "
                                                           "are still checked");
  struct Case {
    std::int64_t batch, n, k, m;
    int form;         // 0: a @ b; 1: a.T() @ b; 2: a @ b.T(); 3: (a @ b + bias).relu()
    const char* step; // the kernel's step: "tg_dot2m" (a word read in place) or "tg_dot2_"
  };
  for (Case c : {Case{1, 512, 512, 512, 0, "tg_dot2m_bf16x16(v"}, // pack_panels' panel
                 Case{1, 64, 256, 96, 0, "tg_dot2m_bf16x16(v"},   // rows paired in the loop
                 Case{1, 64, 255, 96, 0, "tg_dot2m_bf16x16(v"},   // odd K
                 Case{1, 512, 511, 512, 0, "tg_dot2m_bf16x16(v"}, // odd K and a panel
                 Case{1, 64, 3, 64, 0, "tg_dot2m_bf16x16(v"},
                 Case{1, 64, 255, 64, 1, "tg_dot2_bf16x16(v"}, // a's pairs from two loads
                 Case{1, 64, 256, 80, 2, "tg_dot2m_bf16x16(v"},
                 Case{1, 64, 256, 96, 3, "tg_dot2m_bf16x16(v"}, // an epilogue
                 Case{3, 16, 64, 32, 0, "tg_dot2m_bf16x16(v"},  // a batch
                 // sizes no tile divides: the last row and column tiles shifted back
                 Case{1, 97, 131, 1009, 0, "tg_dot2m_bf16x16(v"},
                 Case{1, 255, 255, 255, 2, "tg_dot2m_bf16x16(v"},
                 Case{1, 100, 255, 100, 1, "tg_dot2_bf16x16(v"},
                 Case{3, 13, 64, 40, 3, "tg_dot2m_bf16x16(v"}}) {
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.m);
    CAPTURE(c.form);
    const tg::DType bf16 = tg::bfloat16;
    tg::Shape as = c.form == 1 ? tg::Shape{c.k, c.n} : tg::Shape{c.batch, c.n, c.k};
    tg::Shape bs = c.form == 2 ? tg::Shape{c.m, c.k} : tg::Shape{c.batch, c.k, c.m};
    auto a = tg::randn(as).cast(bf16).realize(), b = tg::randn(bs).cast(bf16).realize();
    auto bias = tg::randn({c.m}).cast(bf16).realize();
    auto product = [&](const std::string& dev, tg::DType t) {
      tg::Tensor x = a.to(dev).cast(t), y = b.to(dev).cast(t);
      switch (c.form) {
      case 1:
        return x.T().matmul(y[0]);
      case 2:
        return x[0].matmul(y.T());
      case 3:
        return (x.matmul(y) + bias.to(dev).cast(t)).relu();
      default:
        return x.matmul(y);
      }
    };
    std::string all; // (b.T()'s copy is a kernel of its own)
    for (const std::string& src : tg::schedule({product("CPU_BF16_PAIRS", bf16)}).sources)
      all += src;
    CHECK_MESSAGE(contains(all, c.step), all);
    // (float32 and float16 products keep their tiles)
    for (tg::DType t : {tg::float32, tg::float16})
      for (const std::string& src : tg::schedule({product("CPU_BF16_PAIRS", t)}).sources)
        CHECK_FALSE(contains(src, "_bf16x16(v"));
    // the plain loop: [batch, n, k] @ [batch, k, m] of the operands as float32s
    const std::vector<float>
        av = (c.form == 1 ? a.T() : a).contiguous().cast(tg::float32).to_vector<float>(),
        bv = (c.form == 2 ? b.T() : b).contiguous().cast(tg::float32).to_vector<float>(),
        biv = bias.cast(tg::float32).to_vector<float>();
    std::vector<float> want;
    for (std::int64_t q = 0; q < c.batch; ++q)
      for (std::int64_t i = 0; i < c.n; ++i)
        for (std::int64_t j = 0; j < c.m; ++j) {
          auto at = [&](std::int64_t kk) {
            return std::pair{av[std::size_t((q * c.n + i) * c.k + kk)],
                             bv[std::size_t((q * c.k + kk) * c.m + j)]};
          };
          float acc = 0;
          for (std::int64_t kk = 0; kk < c.k; kk += 2) {
            if (kk + 1 < c.k) acc = std::fma(at(kk + 1).first, at(kk + 1).second, acc);
            acc = std::fma(at(kk).first, at(kk).second, acc);
          }
          if (c.form == 3) // the sum and the bias rounded once each, as the kernel computes
            acc = std::max(acc + biv[std::size_t(j)], 0.0f);
          want.push_back(acc);
        }
    const std::vector<std::int16_t> bits =
        tg::Tensor::from_data(want, product("INTERP", bf16).sym_shape())
            .cast(bf16)
            .bitcast(tg::int16)
            .to_vector<std::int16_t>();
    for (const std::string& dev : runs) {
      CAPTURE(dev);
      CHECK(product(dev, bf16).bitcast(tg::int16).to_vector<std::int16_t>() == bits);
    }
  }
}

TEST_CASE("bfloat16 products on AMX's tiles, 32 steps at a time (amx_products.hpp)") {
  // Every shape of product the pass takes on a device with the AMX target: K a multiple of 32
  // (the loop gone), K with steps left for the loop after the tiles and an odd K, sizes no tile
  // divides, a transposed right operand, an epilogue, a batch; and one it leaves to vdpbf16ps
  // (K under 32). Compiled without AMX (the C prelude's fused multiply-adds, on every host) the
  // results are those of a plain loop that sums each pair as vdpbf16ps does, bit for bit; with
  // AMX (this host's), AMX rounds its sums in its own way: within a bfloat16 step of that loop.
  struct Amx : tg::CpuDevice {
    tg::Target target() const override { return tg::with_env(tg::cpu_target(tg::CpuIsa::Amx)); }
  };
  static const std::string no_amx = [] {
    const char* cc = std::getenv("TG_CC");
    std::string path =
        std::filesystem::temp_directory_path() / ("tg-cc-no-amx-" + std::to_string(::getpid()));
    std::ofstream(path) << "#!/bin/sh\nexec " << (cc && *cc ? cc : "cc")
                        << " \"$@\" -mno-amx-tile -mno-amx-bf16 -mno-avx512bf16\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }();
  static const bool registered =
      (tg::register_device("CPU_AMX", [] { return std::make_shared<Amx>(); }),
       tg::register_device("CPU_AMX_C",
                           [] {
                             const char* cc = std::getenv("TG_CC");
                             const std::string was = cc ? cc : "";
                             ::setenv("TG_CC", no_amx.c_str(), 1);
                             auto d = std::make_shared<Amx>(); // (reads TG_CC)
                             if (cc)
                               ::setenv("TG_CC", was.c_str(), 1);
                             else
                               ::unsetenv("TG_CC");
                             return d;
                           }),
       true);
  CHECK(registered);
  const bool amx = tg::host_cpu().isa == tg::CpuIsa::Amx;
  if (!amx)
    MESSAGE("skipped: running AMX (this CPU has " << tg::cpu_isa_name(tg::host_cpu().isa)
                                                  << "); its kernels and their emulation are "
                                                     "still checked");
  struct Case {
    std::int64_t batch, n, k, m;
    int form;   // 0: a @ b; 2: a @ b.T(); 3: (a @ b + bias).relu()
    bool tiles; // the kernel runs AMX's tiles
  };
  for (Case c : {Case{1, 512, 512, 512, 0, true},   // 16 steps of 32, no loop left
                 Case{1, 512, 511, 512, 0, true},   // 15 steps, 15 pairs, the odd k
                 Case{1, 97, 131, 1009, 0, true},   // tails: tiles shifted back
                 Case{1, 255, 255, 255, 2, true},   // b.T() copied into the panel
                 Case{1, 64, 256, 512, 3, true},    // an epilogue
                 Case{3, 40, 96, 512, 0, true},     // a batch
                 Case{1, 24, 256, 512, 0, true},    // tiles of 8 rows (24 = 3 x 8)
                 Case{1, 5, 256, 512, 0, false},    // one row tile: no panel to reuse
                 Case{1, 64, 30, 512, 0, false}}) { // K under 32: vdpbf16ps only
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.m);
    CAPTURE(c.form);
    const tg::DType bf16 = tg::bfloat16;
    tg::Shape as{c.batch, c.n, c.k},
        bs = c.form == 2 ? tg::Shape{c.m, c.k} : tg::Shape{c.batch, c.k, c.m};
    auto a = tg::randn(as).cast(bf16).realize(), b = tg::randn(bs).cast(bf16).realize();
    auto bias = tg::randn({c.m}).cast(bf16).realize();
    auto product = [&](const std::string& dev) {
      tg::Tensor x = a.to(dev), y = b.to(dev);
      if (c.form == 2) return x.matmul(y.T());
      if (c.form == 3) return (x.matmul(y) + bias.to(dev)).relu();
      return x.matmul(y);
    };
    std::string all;
    for (const std::string& src : tg::schedule({product("CPU_AMX")}).sources) all += src;
    CHECK_MESSAGE(contains(all, "tg_amx_bf16(") == c.tiles, all);
    const std::vector<float>
        av = a.cast(tg::float32).to_vector<float>(),
        bv = (c.form == 2 ? b.T() : b).contiguous().cast(tg::float32).to_vector<float>(),
        biv = bias.cast(tg::float32).to_vector<float>();
    std::vector<float> want, sizes;
    for (std::int64_t q = 0; q < c.batch; ++q)
      for (std::int64_t i = 0; i < c.n; ++i)
        for (std::int64_t j = 0; j < c.m; ++j) {
          auto at = [&](std::int64_t kk) {
            return std::pair{av[std::size_t((q * c.n + i) * c.k + kk)],
                             bv[std::size_t(((c.form == 2 ? 0 : q) * c.k + kk) * c.m + j)]};
          };
          float acc = 0, size = 0; // size: the sum of the products' magnitudes
          for (std::int64_t kk = 0; kk < c.k; kk += 2) {
            if (kk + 1 < c.k) acc = std::fma(at(kk + 1).first, at(kk + 1).second, acc);
            acc = std::fma(at(kk).first, at(kk).second, acc);
            size += std::fabs(at(kk).first * at(kk).second) +
                    (kk + 1 < c.k ? std::fabs(at(kk + 1).first * at(kk + 1).second) : 0.0f);
          }
          if (c.form == 3) acc = std::max(acc + biv[std::size_t(j)], 0.0f);
          want.push_back(acc);
          sizes.push_back(size);
        }
    const tg::Tensor want_bf16 =
        tg::Tensor::from_data(want, product("INTERP").sym_shape()).cast(bf16).realize();
    const std::vector<std::int16_t> bits = want_bf16.bitcast(tg::int16).to_vector<std::int16_t>();
    CHECK(product("CPU_AMX_C").bitcast(tg::int16).to_vector<std::int16_t>() == bits);
    if (!amx) continue;
    const tg::Tensor got = product("CPU_AMX");
    const auto g = got.cast(tg::float32).to_vector<float>(),
               w = want_bf16.cast(tg::float32).to_vector<float>();
    const auto got_bits = got.bitcast(tg::int16).to_vector<std::int16_t>();
    // a bfloat16 step of the result, and a few float32 steps of the products' magnitudes (where
    // the sum cancels, those decide its last bfloat16 bit)
    std::size_t off = 0, same = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      same += got_bits[i] == bits[i];
      off += !(std::fabs(g[i] - w[i]) <= std::fabs(w[i]) * 0x1p-7f + sizes[i] * 0x1p-20f);
    }
    CHECK_MESSAGE(off == 0, off << " elements further from the plain loop's");
    CHECK(same * 10 >= g.size() * 9); // (most round alike)
  }
}

TEST_CASE("a sum over a strided axis: 64 contiguous lanes, 256 with 32 vector registers") {
  struct WideTiles : tg::CpuDevice {
    tg::Target target() const override { return tg::with_env(tg::Target::cpu(32)); }
  };
  static const bool registered =
      (tg::register_device("CPU_WIDE_SUMS", [] { return std::make_shared<WideTiles>(); }), true);
  CHECK(registered);
  struct Case {
    std::int64_t rows, cols;
    tg::DType dtype;
    const char *name, *wide; // the kernel's name with tile_lanes 16 and 32
  };
  for (Case c : {Case{300, 4096, tg::DType::Float32, "ru64_64", "ru256_16"},
                 Case{300, 1024, tg::DType::Float32, "ru64_16", "ru64_16"}, // 4 blocks of 256
                 Case{300, 4096, tg::DType::Float64, "ru64_64", "ru64_64"}}) {
    CAPTURE(c.cols);
    auto x = tg::randn({c.rows, c.cols}, c.dtype).realize();
    auto info = tg::schedule({x.sum(0)});
    REQUIRE(info.kernels() == 1);
    tg::LowerOptions wide;
    wide.tile_lanes = 32;
    std::string name(tg::lower(info.graph, info.schedule, 0).name.view()),
        wide_name(tg::lower(info.graph, info.schedule, 0, wide).name.view());
    CHECK_MESSAGE(contains(name, c.name), name);
    CHECK_MESSAGE(contains(wide_name, c.wide), wide_name);
    auto same = [&]<class T>(T) {
      std::vector<T> interp = x.to("INTERP").sum(0).to_vector<T>();
      CHECK(x.to("CPU_WIDE_SUMS").sum(0).to_vector<T>() == interp);
      CHECK(x.sum(0).to_vector<T>() == interp);
      auto xv = x.to_vector<T>();
      for (std::int64_t j = 0; j < c.cols; j += 97) {
        double s = 0;
        for (std::int64_t i = 0; i < c.rows; ++i) s += double(xv[std::size_t(i * c.cols + j)]);
        CHECK(interp[std::size_t(j)] == doctest::Approx(s).epsilon(1e-4));
      }
    };
    if (c.dtype == tg::DType::Float64)
      same(0.0);
    else
      same(0.0f);
  }
}

TEST_CASE("a transposed left operand: the tile's rows copied once, k by k, the same bits") {
  // a.t() @ b, as a weight gradient computes (dy.t() @ x): the tile reads 4 floats from each of
  // k rows of `a` 4 n bytes apart. pack_rows copies them into a local array once per call (every
  // row tile, in panel order) or once per row tile (before its column tiles).
  struct Case {
    std::int64_t n, k, m;
    tg::DType dtype;
    bool transposed, copied;
  };
  const auto f32 = tg::DType::Float32, f64 = tg::DType::Float64;
  for (Case c : {Case{256, 128, 784, f32, true, true},    // the MLP's dW1: panel order
                 Case{256, 128, 256, f32, true, true},    // dW2: row order, a copy per row tile
                 Case{64, 100, 512, f64, true, true},     // float64
                 Case{256, 128, 784, f32, false, false},  // a contiguous operand is read in place
                 Case{30, 50, 64, f32, true, true},       // rows not in tiles of 4: one by one
                 Case{256, 128, 16, f32, true, false}}) { // one column tile: nothing to reuse
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.m);
    CAPTURE(c.transposed);
    auto a = c.transposed ? tg::randn({c.k, c.n}, c.dtype).realize().T()
                          : tg::randn({c.n, c.k}, c.dtype).realize();
    auto b = tg::randn({c.k, c.m}, c.dtype).realize();
    tg::Tensor y = a.matmul(b);
    auto info = tg::schedule({y});
    REQUIRE(info.kernels() == 1);
    tg::Program packed =
        tg::pack_panels(tg::vectorize(tg::contract(tg::lower(info.graph, info.schedule, 0))));
    std::string before(tg::render_c(packed).view()),
        after(tg::render_c(tg::pack_rows(packed)).view());
    auto locals = [](const std::string& src) {
      std::size_t n = 0;
      for (std::size_t at = 0; (at = src.find("aligned(64)", at)) != std::string::npos; ++at) ++n;
      return n;
    };
    CHECK(locals(after) == locals(before) + (c.copied ? 1 : 0));
    auto check = [&]<class T>(T tolerance) {
      std::vector<T> cpu = y.to_vector<T>(), interp = y.to("INTERP").to_vector<T>();
      CHECK(cpu == interp);
      auto av = a.contiguous().to_vector<T>(), bv = b.to_vector<T>();
      for (std::int64_t i = 0; i < c.n; i += 3)
        for (std::int64_t j = 0; j < c.m; j += 7) {
          double s = 0;
          for (std::int64_t k = 0; k < c.k; ++k)
            s += double(av[std::size_t(i * c.k + k)]) * bv[std::size_t(k * c.m + j)];
          CHECK(cpu[std::size_t(i * c.m + j)] == doctest::Approx(s).epsilon(tolerance));
        }
    };
    if (c.dtype == f64)
      check(1e-9);
    else
      check(1e-4f);
  }
  // batched: the operand's index moves with the batch loop too
  auto a = tg::randn({3, 64, 48}).realize().transpose(1, 2), b = tg::randn({3, 64, 128}).realize();
  tg::Tensor y = a.matmul(b);
  CHECK(y.to_vector<float>() == y.to("INTERP").to_vector<float>());
}

TEST_CASE("a 16-bit product's rows widened to float32 once per tile (widen_rows), the same bits") {
  // A float16 product (and a bfloat16 one without vdpbf16ps) on each ISA's device: the tile's rows
  // of the left operand are converted before its reduction loop, a vector at a time (the last
  // step shifted back where the vectors do not divide K), and the loop multiplies float32s; a
  // reduction shorter than a vector converts element by element, and a transposed left operand
  // goes through pack_rows' copy. Results equal INTERP's bit for bit.
  struct Case {
    std::int64_t batch, n, k, m;
    bool transposed, widened;
  };
  for (Case c : {Case{1, 64, 256, 96, false, true},
                 Case{1, 37, 70, 53, false, true},    // K = 4 x 16 + 6, tails of rows and columns
                 Case{1, 16, 1000, 512, false, true}, // pack_panels' panel
                 Case{2, 24, 40, 48, false, true},    // a batch
                 Case{1, 64, 6, 64, false, false},    // K shorter than a vector
                 Case{1, 64, 128, 784, true, false}}) {
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.m);
    CAPTURE(c.transposed);
    for (tg::DType t : {tg::float16, tg::bfloat16}) {
      CAPTURE(tg::dtype_name(t));
      // (a transposed operand is a view on its device: a copy to another device is contiguous)
      auto a = c.transposed ? tg::randn({c.k, c.n}).cast(t).realize()
                            : tg::randn({c.batch, c.n, c.k}).cast(t).realize();
      auto b = tg::randn({c.batch, c.k, c.m}).cast(t).realize();
      auto y = [&](const std::string& dev) {
        return (c.transposed ? a.to(dev).T() : a.to(dev)).matmul(b.to(dev));
      };
      auto product = [&](const std::string& dev) {
        return y(dev).bitcast(tg::int16).to_vector<std::int16_t>();
      };
      const std::vector<std::int16_t> interp = product("INTERP");
      for (const std::string& dev : isa_devices()) {
        CAPTURE(dev);
        const tg::Target target = tg::device(dev)->target();
        if (t == tg::bfloat16 && target.bf16_pairs) continue; // (pair_products' test)
        // the program after widen_rows differs from the one before where the pass took it
        auto info = tg::schedule({y(dev)});
        bool widened = false;
        for (std::size_t k = 0; k < info.schedule.kernels.size(); ++k) {
          std::map<std::string, std::string> dumps;
          tg::device_passes(tg::lower_kernel(info.graph, info.schedule, k, target), target,
                            DumpLog{&dumps});
          widened = widened || dumps.at("widen_rows") != dumps.at("pack_rows");
        }
        CHECK(widened == c.widened);
        CHECK(product(dev) == interp);
      }
    }
  }
}

TEST_CASE("a loop that compares its index with constants runs in parts, its gates folded") {
  // partition_loops: a padded copy's rows and columns each run [0, 1), [1, 29), [29, 30); the inner
  // part of a row is a plain copy and the borders store zeros, with no gated load left. cat of 5
  // tensors runs 5 loops; of 9 (9 parts, more than the pass cuts a loop into) it keeps its gates.
  auto gated = [](const std::string& src) { // a load under a condition: (g ? v[i] : 0.0f)
    return std::regex_search(src, std::regex(R"(\? v\d+\[v\d+\] :)"));
  };
  auto loops = [](const std::string& src) { // (in the kernel, not the prelude)
    std::size_t k = 0;
    for (std::size_t at = src.find("(void** bufs");
         (at = src.find("for (", at)) != std::string::npos; ++at)
      ++k;
    return k;
  };
  auto x = randn({2, 3, 28, 28});
  tg::Tensor padded = x.pad({1, 1, 1, 1}).contiguous();
  std::vector<tg::Tensor> five, nine;
  for (int i = 0; i < 9; ++i) (i < 5 ? five : nine).push_back(randn({4, 3}));
  for (int i = 0; i < 5; ++i) nine.push_back(five[std::size_t(i)]);
  struct Case {
    tg::Tensor y;
    bool gates;
    std::size_t loops; // the outer loop and the parts
  };
  for (const Case& c : {Case{padded, false, 1 + 3 + 1 + 3 + 1}, Case{tg::cat(five, 1), false, 6},
                        Case{tg::cat(nine, 1), true, 2}}) {
    auto info = tg::schedule({c.y});
    REQUIRE(info.kernels() == 1);
    const std::string& src = info.sources[0];
    CHECK_MESSAGE(gated(src) == c.gates, src);
    CHECK_MESSAGE(loops(src) == c.loops, src);
    CHECK(c.y.to_vector<float>() == c.y.to("INTERP").to_vector<float>());
  }
}

TEST_CASE(
    "a register tile's loop of at most 4 steps is written out (unroll_loops), the same bits") {
  // A 3x3 convolution's tile steps through each row of its window in a loop of 3: written out,
  // its index a constant in each copy, as is a product's over K = 3. A 5x5 one's loop of 5 and a
  // product's loop over K = 100 stay.
  namespace F = tg::nn::functional;
  auto x = randn({2, 16, 12, 12}), w3 = randn({16, 16, 3, 3}), w5 = randn({16, 16, 5, 5});
  auto a = randn({64, 3}), b = randn({3, 64}), c = randn({64, 100}), d = randn({100, 64});
  struct Case {
    tg::Tensor y;
    bool unrolled;
  };
  for (const Case& k :
       {Case{F::conv2d(x, w3, {}, 1, 1), true}, Case{F::conv2d(x, w5, {}, 1, 2), false},
        Case{a.matmul(b), true}, Case{c.matmul(d), false}}) {
    const tg::Target target = tg::device("CPU")->target();
    auto info = tg::schedule({k.y});
    bool unrolled = false;
    for (std::size_t i = 0; i < info.schedule.kernels.size(); ++i) {
      std::map<std::string, std::string> dumps;
      tg::device_passes(tg::lower_kernel(info.graph, info.schedule, i, target), target,
                        DumpLog{&dumps});
      unrolled = unrolled || dumps.at("unroll_loops") != dumps.at("partition_loops");
    }
    CHECK(unrolled == k.unrolled);
    CHECK(k.y.to_vector<float>() == k.y.to("INTERP").to_vector<float>());
  }
}

TEST_CASE("a transposing copy runs in 8 x 8 tiles, with the values of the plain loop") {
  for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{784, 256}, {24, 40}, {12, 20}}) {
    CAPTURE(r);
    CAPTURE(c);
    auto a = randn({r, c});
    tg::Tensor y = a.transpose(0, 1) * 2.0f;
    auto info = tg::schedule({y});
    REQUIRE(info.kernels() == 1);
    tg::Program p = tg::lower(info.graph, info.schedule, 0);
    bool tiled = r % 8 == 0 && c % 8 == 0;
    CHECK_MESSAGE(contains(p.name.view(), "Eu8x8_") == tiled, p.name.view());
    CHECK(!contains(tg::lower(info.graph, info.schedule, 0, tg::LowerOptions::off()).name.view(),
                    "u8x8"));
    auto av = a.to_vector<float>();
    std::vector<float> expect(av.size());
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < c; ++j)
        expect[std::size_t(j * r + i)] = av[std::size_t(i * c + j)] * 2.0f;
    CHECK(y.to_vector<float>() == expect);
    CHECK(y.to("INTERP").to_vector<float>() == expect);
  }
}

TEST_CASE("split reductions: vectorizable partial sums, the same bits on CPU and INTERP") {
  // (rows, length, expected split): the reduced axis is contiguous; a split needs at least 64
  // elements and a power-of-two divisor of at least 4
  struct Case {
    std::int64_t rows, len, split;
  };
  for (Case c : {Case{3, 4096, 16}, Case{5, 72, 8}, Case{2, 64, 16}, Case{4, 100, 4},
                 Case{3, 48, 1}, Case{3, 90, 1}}) {
    CAPTURE(c.rows);
    CAPTURE(c.len);
    auto x = randn({c.rows, c.len});
    auto xs = x.to_vector<float>();
    for (int which = 0; which < 3; ++which) {
      CAPTURE(which);
      tg::Tensor y = which == 0   ? x.sum(1)
                     : which == 1 ? x.max(1)
                                  : (x - x.max(1, true).detach()).exp().sum(1);
      auto info = tg::schedule({y});
      std::size_t last = std::size_t(info.kernels()) - 1;
      tg::Program split = tg::lower(info.graph, info.schedule, last);
      tg::Program plain = tg::lower(info.graph, info.schedule, last, tg::LowerOptions{1, 1, 1});
      CHECK(split.reduce_split == c.split);
      // (the row max under the exponentials is computed in the sum's kernel: "h")
      if (c.split > 1)
        CHECK_MESSAGE(contains(split.name.view(), std::string(which == 2 ? "rhs" : "rs") +
                                                      std::to_string(c.split) + "_"),
                      split.name.view());
      std::vector<float> on_cpu = y.to_vector<float>();
      std::vector<float> on_interp = y.to("INTERP").to_vector<float>();
      CHECK(on_cpu == on_interp); // one program, one order of operations
      for (std::int64_t r = 0; r < c.rows; ++r) {
        // (size: the terms' magnitudes, which bound a float32 sum's error where it cancels)
        double expect = which == 1 ? -INFINITY : 0, mx = -INFINITY, size = 0;
        for (std::int64_t k = 0; k < c.len; ++k)
          mx = std::max(mx, double(xs[std::size_t(r * c.len + k)]));
        for (std::int64_t k = 0; k < c.len; ++k) {
          double v = xs[std::size_t(r * c.len + k)];
          expect = which == 0   ? expect + v
                   : which == 1 ? std::max(expect, v)
                                : expect + std::exp(v - mx);
          size += which == 0 ? std::fabs(v) : which == 1 ? 0 : std::exp(v - mx);
        }
        CHECK(on_cpu[std::size_t(r)] == doctest::Approx(expect).epsilon(1e-5).scale(size));
      }
    }
  }
  // a sum over the first axis reads the reduced axis with a stride: not split
  auto x = randn({64, 32});
  auto info = tg::schedule({x.sum(0)});
  CHECK(tg::lower(info.graph, info.schedule, 0).reduce_split == 1);
}

TEST_CASE("exp2 on float: the C kernels' polynomial is within 2 ulp of libm, the same on INTERP") {
  std::vector<float> v;
  for (float f = -160.0f; f <= 140.0f; f += 0.37f) v.push_back(f);
  for (float f : {0.0f, -0.0f, 1.0f, 3.0f, -149.0f, -150.0f, -126.0f, 127.0f, 127.99f, 128.0f,
                  1e-30f, -1e-30f, 0.5f, -0.5f, 0.49999997f, INFINITY, -INFINITY, NAN})
    v.push_back(f);
  auto x = tg::Tensor::from_data(v, {std::int64_t(v.size())});
  std::vector<float> cpu = x.exp2().to_vector<float>();
  std::vector<float> interp = x.to("INTERP").exp2().to_vector<float>();
  for (std::size_t i = 0; i < v.size(); ++i) {
    CAPTURE(v[i]);
    float want = float(std::exp2(double(v[i])));
    if (std::isnan(want)) {
      CHECK(std::isnan(cpu[i]));
      CHECK(std::isnan(interp[i]));
      continue;
    }
    CHECK(std::bit_cast<std::uint32_t>(cpu[i]) == std::bit_cast<std::uint32_t>(interp[i]));
    if (std::isinf(want) || want == 0 || v[i] == std::trunc(v[i])) {
      CHECK(cpu[i] == want); // exact: powers of two, overflow, underflow
      continue;
    }
    float ulp = std::nextafter(want, INFINITY) - want;
    CHECK(std::fabs(cpu[i] - want) <= 2 * ulp);
  }
}

TEST_CASE(
    "the torch.* compositions fuse: elementwise math one kernel, running ops and einsum one") {
  auto x = randn({8, 16}), y = randn({8, 16}) + 4.0f;
  for (const tg::Tensor& e : {x.erf(),         x.erfc(),
                              x.log1p(),       x.expm1(),
                              x.atan(),        x.asin(),
                              x.acos(),        x.sinh(),
                              x.cosh(),        x.asinh(),
                              x.atanh(),       tg::atan2(x, y),
                              tg::hypot(x, y), x % y,
                              tg::fmod(x, y),  tg::floor_divide(x, y),
                              x.lerp(y, 0.3),  x.masked_fill(x > 0.0f, 1),
                              x.tril(),        x.triu(1)})
    CHECK(tg::schedule({e}).kernels() == 1);
  auto i = tg::randint(-50, 50, {8, 16}), j = tg::randint(1, 9, {8, 16});
  for (const tg::Tensor& e : {i % j, i & j, i | j, i ^ j, ~i, i << j, i >> j})
    CHECK(tg::schedule({e}).kernels() == 1);
  // the running ops and sort: a few kernels each, not one per element (counts as of now, bounds)
  CHECK(tg::schedule({x.cumprod(1)}).kernels() <= 2);
  CHECK(tg::schedule({x.cummax(1).first}).kernels() <= 4);
  CHECK(tg::schedule({x.logcumsumexp(1)}).kernels() <= 3);
  CHECK(tg::schedule({x.sort(1).first}).kernels() <= 5);
  // einsum's broadcast product and sum: two kernels where matmul's node is one
  CHECK(tg::schedule({tg::einsum("ij,kj->ik", {x, y})}).kernels() <= 2);
  CHECK(tg::schedule({x.norm()}).kernels() == 1);
}
