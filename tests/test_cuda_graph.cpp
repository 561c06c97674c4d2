// tg::jit's replays on CUDA as CUDA graphs, without a GPU: CTest points TG_LIBCUDA at
// tests/fake_cuda_driver.cpp, a stand-in driver whose kernels do not run and which logs the calls
// tg makes. The checks are on that log: a replay is one graph launch, the graph holds the kernels
// and copies the capture launched, in order, and new input buffers or sizes record (or update) a
// graph. Kernels are compiled by NVRTC as for a real device; without NVRTC the cases say they are
// skipped.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <tg/tg.hpp>

namespace {

using tg::Tensor;
using Lines = std::vector<std::string>;

const char* (*take_log)() = nullptr;
void (*fail_updates)(int) = nullptr;
void (*reset)() = nullptr;

/// Whether CUDA is the fake driver's device (else why not, for the skip message). Replays are
/// left unchecked: the suite's TG_JIT_VERIFY would run some of them eagerly instead.
bool fake_cuda(std::string& why) {
  setenv("TG_JIT_VERIFY", "0", 1);
  const char* lib = std::getenv("TG_LIBCUDA");
  if (!lib || std::string(lib).find("fake_cuda_driver") == std::string::npos) {
    why = "TG_LIBCUDA does not name tests/fake_cuda_driver's library (run it through CTest)";
    return false;
  }
  try {
    tg::device("CUDA");
  } catch (const std::exception& e) {
    why = e.what();
    // the fake driver always loads: only NVRTC may be missing
    CHECK_MESSAGE(why.find("NVRTC") != std::string::npos, why);
    return false;
  }
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h);
  take_log = reinterpret_cast<const char* (*)()>(dlsym(h, "tg_fake_cuda_take_log"));
  fail_updates = reinterpret_cast<void (*)(int)>(dlsym(h, "tg_fake_cuda_fail_updates"));
  reset = reinterpret_cast<void (*)()>(dlsym(h, "tg_fake_cuda_reset"));
  REQUIRE((take_log && fail_updates && reset));
  reset();
  return true;
}

/// The driver calls logged since the last look, a line each.
Lines calls() {
  Lines out;
  std::istringstream s(take_log());
  for (std::string line; std::getline(s, line);) out.push_back(line);
  return out;
}

/// What a stream capture of these eager launches records.
std::string captured(const Lines& eager) {
  std::string line = "end capture:";
  for (const std::string& l : eager) line += " [" + l + "]";
  return line;
}

Tensor cuda(const Tensor& t) { return t.to("CUDA").contiguous().realize(); }

} // namespace

TEST_CASE("CUDA graphs: a jit replay is one graph launch of the captured kernels, in order") {
  std::string why;
  if (!fake_cuda(why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  Tensor w = cuda(tg::randn({16, 8})), b = cuda(tg::randn({8}));
  auto f = tg::jit([&](const Tensor& x) { return (x.matmul(w) + b).relu().sum(1); });
  Tensor x1 = cuda(tg::randn({4, 16}));
  f(x1); // warm-up
  calls();
  f(x1); // capture: launched one by one
  const Lines eager = calls();
  REQUIRE(!eager.empty());
  for (const std::string& l : eager) CHECK(l.rfind("kernel ", 0) == 0);
  CHECK(f.captured_launches() == eager.size());

  tg::reset_stats();
  f(x1); // the first replay records the graph, then launches it
  CHECK(calls() ==
        Lines{"begin capture (mode 1)", captured(eager), "instantiate 1", "launch graph 1"});
  f(x1);
  CHECK(calls() == Lines{"launch graph 1"});
  CHECK(tg::stats().graphs_launched == 2);
  CHECK(tg::stats().kernels_launched == std::int64_t(2 * eager.size()));
  CHECK(tg::stats().realizes == 0);

  // another input buffer: a graph of its own; both are kept
  Tensor x2 = cuda(tg::randn({4, 16}));
  f(x2);
  CHECK(calls() ==
        Lines{"begin capture (mode 1)", captured(eager), "instantiate 2", "launch graph 2"});
  f(x1);
  CHECK(calls() == Lines{"launch graph 1"});
  f(x2);
  CHECK(calls() == Lines{"launch graph 2"});
  // past four, the least recently used graph is updated in place
  Tensor x3 = cuda(tg::randn({4, 16})), x4 = cuda(tg::randn({4, 16})),
         x5 = cuda(tg::randn({4, 16}));
  f(x3);
  f(x4);
  CHECK(calls().back() == "launch graph 4");
  f(x5);
  CHECK(calls() ==
        Lines{"begin capture (mode 1)", captured(eager), "update 1 ok", "launch graph 1"});
  f(x2);
  CHECK(calls() == Lines{"launch graph 2"});
  // a driver that refuses the update: the graph is recorded anew
  fail_updates(1);
  f(x1);
  fail_updates(0);
  CHECK(calls() == Lines{"begin capture (mode 1)", captured(eager), "update 3 refused",
                         "destroy graph 3", "begin capture (mode 1)", captured(eager),
                         "instantiate 5", "launch graph 5"});
}

TEST_CASE("CUDA graphs: copies are recorded in the graph with the kernels") {
  std::string why;
  if (!fake_cuda(why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  // reading the target at other indices while writing it: computed aside, then copied back
  Tensor r = cuda(tg::arange(4).cast(tg::float32));
  auto f = tg::jit([&](const Tensor& s) { r.assign(r.flip({0}) * s); });
  Tensor s = cuda(tg::Tensor::scalar(2.0f));
  f(s);
  calls();
  f(s);
  const Lines eager = calls();
  REQUIRE(eager.size() >= 2);
  CHECK(eager.back() == "copy 16");
  f(s);
  CHECK(calls() ==
        Lines{"begin capture (mode 1)", captured(eager), "instantiate 1", "launch graph 1"});
  f(s);
  CHECK(calls() == Lines{"launch graph 1"});
}

TEST_CASE("CUDA graphs: a symbolic size's new value records a graph of its own") {
  std::string why;
  if (!fake_cuda(why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  auto f = tg::jit([](const Tensor& a) { return (a * 2.0f).sum(1) + 1.0f; });
  auto input = [&](std::int64_t n) {
    return cuda(tg::ones({n * 3})).reshape({tg::sym("batch", 1, 64, n), 3}).contiguous().realize();
  };
  Tensor four = input(4), seven = input(7);
  f(four);
  f(four);
  calls();
  f(four);
  CHECK(calls().back() == "launch graph 1");
  f(seven);
  Lines now = calls();
  CHECK(now.front() == "begin capture (mode 1)");
  CHECK(now.back() == "launch graph 2");
  f(four);
  CHECK(calls() == Lines{"launch graph 1"});
}

TEST_CASE("CUDA graphs: a jitted training step replays as one graph; TG_JIT_GRAPH=0 launches "
          "kernel by kernel") {
  std::string why;
  if (!fake_cuda(why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  for (std::string graphs : {"1", "0"}) {
    CAPTURE(graphs);
    setenv("TG_JIT_GRAPH", graphs.c_str(), 1);
    reset();
    tg::nn::Linear layer(16, 4, true, tg::TensorOptions(tg::float32, "CUDA"));
    tg::optim::Adam opt(layer.parameters());
    auto step = tg::jit([&](const Tensor& x, const Tensor& y) {
      opt.zero_grad();
      Tensor loss = tg::nn::F::cross_entropy(layer(x), y);
      loss.backward();
      opt.step();
      return loss.detach();
    });
    Tensor x = cuda(tg::randn({8, 16})),
           y = cuda(tg::Tensor({0, 1, 2, 3, 0, 1, 2, 3}).cast(tg::int64));
    step(x, y);
    calls();
    step(x, y);
    const Lines eager = calls();
    std::size_t kernels = 0;
    for (const std::string& l : eager) kernels += l.rfind("kernel ", 0) == 0;
    CHECK(kernels >= 3); // forward, backward and the update at least
    // (call 3 runs the function again: the capture made Adam's moments, the warm-up did not;
    // call 4 records the graph)
    step(x, y);
    step(x, y);
    calls();
    tg::reset_stats();
    step(x, y);
    Lines replay = calls();
    if (graphs == "1") {
      CHECK(replay == Lines{"launch graph 1"});
      CHECK(tg::stats().graphs_launched == 1);
    } else {
      CHECK(replay.size() == step.captured_launches());
      for (const std::string& l : replay) CHECK(l.find("graph") == std::string::npos);
      CHECK(tg::stats().graphs_launched == 0);
    }
    CHECK(tg::stats().kernels_launched == std::int64_t(kernels));
  }
  unsetenv("TG_JIT_GRAPH");
}
