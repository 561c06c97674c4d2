// The runtime: the on-disk kernel cache across processes, compile errors, TG_DEBUG output,
// device listing and counters. Child processes are this test binary run again with a filter.
#include <doctest/doctest.h>

#include <tg/engine/beam.hpp> // white-box: TG_BEAM's variants
#include <tg/fixed.hpp>
#include <tg/runtime/cpu.hpp> // white-box: the thread pool, the CPU runtime
#include <tg/schedule.hpp>
#include <tg/tg.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

#include "child_process.hpp"

using tg_test::child;
using tg_test::contains;
using tg_test::fresh_dir;
using tg_test::run_child;

namespace {
struct Counted {
  static inline int alive = 0;
  int v;
  explicit Counted(int x) : v(x) { ++alive; }
  virtual ~Counted() { --alive; }
};
struct Derived : Counted {
  using Counted::Counted;
};
struct Throws {
  Throws() { throw std::runtime_error("no"); }
};
} // namespace

TEST_CASE("tg::Rc shares, converts, adopts std::shared_ptr and counts weak references") {
  REQUIRE(Counted::alive == 0);
  {
    tg::Rc<Derived> d = tg::make_rc<Derived>(3);
    tg::Rc<Counted> c = d;       // to a base
    tg::Rc<const Counted> k = c; // to const
    CHECK(d.use_count() == 3);
    CHECK(c == d);
    CHECK(k->v == 3);
    CHECK(tg::dynamic_pointer_cast<Derived>(c) == d);
    CHECK(tg::dynamic_pointer_cast<Derived>(tg::make_rc<Counted>(1)) == nullptr);
    CHECK(Counted::alive == 1);
    tg::WeakRc<Counted> w = c;
    d.reset();
    c = nullptr;
    CHECK(!w.expired());
    CHECK(w.lock()->v == 3);
    k.reset();
    CHECK(w.expired());
    CHECK(w.lock() == nullptr);
    CHECK(Counted::alive == 0);
  }
  { // an adopted std::shared_ptr lives until its last owner of either kind goes
    auto s = std::make_shared<Derived>(5);
    tg::Rc<Counted> r = s;
    CHECK(r.get() == s.get());
    s.reset();
    CHECK(Counted::alive == 1);
    tg::Rc<Counted> r2 = r;
    r.reset();
    CHECK(r2->v == 5);
    r2.reset();
    CHECK(Counted::alive == 0);
    tg::Rc<Counted> owned(new Derived(7)); // as std::shared_ptr(new T)
    CHECK(owned.use_count() == 1);
  }
  CHECK(Counted::alive == 0);
  CHECK_THROWS_AS(tg::make_rc<Throws>(), std::runtime_error); // (ASan: nothing leaks)
  tg::Rc<Counted> empty;
  CHECK(empty.use_count() == 0);
  CHECK(!empty);
  // copies and releases from two threads at once (ThreadSanitizer checks the counts)
  tg::Rc<Counted> shared = tg::make_rc<Counted>(1);
  tg::WeakRc<Counted> weak = shared;
  auto churn = [&](int& lost) {
    for (int i = 0; i < 20000; ++i) {
      tg::Rc<Counted> a = shared, b = weak.lock();
      lost += b == nullptr;
    }
  };
  int lost_there = 0, lost_here = 0;
  std::thread t(churn, std::ref(lost_there));
  churn(lost_here);
  t.join();
  CHECK(lost_there + lost_here == 0);
  CHECK(shared.use_count() == 1);
}

TEST_CASE("child: one kernel") {
  if (!child()) return;
  auto x = tg::arange(0, 100, 1, tg::float32);
  auto y = (x * 0.03f + 0.25f).exp2().sum();
  double value = double(y.item<float>()); // before reading the counters
  std::printf("value=%.3f compiled=%lld hits=%lld\n", value,
              static_cast<long long>(tg::stats().kernels_compiled),
              static_cast<long long>(tg::stats().cache_hits));
}

TEST_CASE("a second process compiles nothing: the disk cache") {
  std::string dir = fresh_dir();
  std::string first = run_child("child: one kernel", "TG_CACHE_DIR=" + dir);
  CHECK(contains(first, "compiled=1 hits=0"));
  std::string second = run_child("child: one kernel", "TG_CACHE_DIR=" + dir);
  CHECK(contains(second, "compiled=0 hits=1"));
  CHECK(second.substr(second.find("value=")).substr(0, 20) ==
        first.substr(first.find("value=")).substr(0, 20));
  // TG_CACHE=0: nothing read, nothing left behind
  std::string off = run_child("child: one kernel", "TG_CACHE=0 TG_CACHE_DIR=" + dir + "/off");
  CHECK(contains(off, "compiled=1 hits=0"));
  CHECK(!std::filesystem::exists(dir + "/off"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("child: a compiler that fails") {
  if (!child()) return;
  try {
    (tg::arange(0, 10, 1, tg::float32) + 1.0f).realize();
    std::printf("no error\n");
  } catch (const tg::compile_error& e) {
    std::printf("compile_error source_has_kernel=%d message=%s\n",
                int(e.source.find("void E_10") != std::string::npos), e.what());
  }
}

TEST_CASE("a compile failure throws tg::compile_error with the compiler's message and the source") {
  std::string dir = fresh_dir();
  std::string script = dir + "/badcc";
  {
    FILE* f = std::fopen(script.c_str(), "w");
    std::fputs("#!/bin/sh\necho 'badcc: simulated failure' >&2\nexit 3\n", f);
    std::fclose(f);
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  std::string out =
      run_child("child: a compiler that fails", "TG_CC=" + script + " TG_CACHE_DIR=" + dir);
  CHECK(contains(out, "compile_error source_has_kernel=1"));
  CHECK(contains(out, "badcc: simulated failure"));
  CHECK(contains(out, "exit 3"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("child: a product under TG_CPU_ISA") {
  if (!child()) return;
  auto a = tg::randn({64, 96}).realize(), b = tg::randn({96, 64}).realize();
  auto y = a.matmul(b).realize();
  auto cpu = tg::dynamic_pointer_cast<tg::CpuDevice>(tg::device("CPU"));
  REQUIRE(cpu);
  std::printf("isa=%s same=%d flags=%s\n", tg::cpu_isa_name(tg::host_cpu().isa),
              int(y.to_vector<float>() == a.to("INTERP").matmul(b.to("INTERP")).to_vector<float>()),
              cpu->flags().c_str());
}

TEST_CASE("child: the CPU device under a TG_CPU_ISA it cannot honour") {
  if (!child()) return;
  for (const tg::DeviceInfo& d : tg::devices())
    if (d.name == "CPU")
      std::printf("available=%d reason=%s\n", int(d.available), d.reason.c_str());
}

TEST_CASE("TG_CPU_ISA: kernels chosen and compiled for a narrower ISA, the same bits") {
  // every ISA up to the host's: its tiles (runtime/cpu_info.hpp), its compiler flags
  for (tg::CpuIsa isa : {tg::CpuIsa::Sse, tg::CpuIsa::Avx2, tg::CpuIsa::Avx512,
                         tg::CpuIsa::Avx512Bf16, tg::CpuIsa::Amx}) {
    if (isa > tg::host_cpu().isa) {
      MESSAGE("skipped: TG_CPU_ISA=" << tg::cpu_isa_name(isa) << " (this CPU has "
                                     << tg::cpu_isa_name(tg::host_cpu().isa) << ")");
      continue;
    }
    std::string dir = fresh_dir();
    std::string out =
        run_child("child: a product under TG_CPU_ISA",
                  std::string("TG_CPU_ISA=") + tg::cpu_isa_name(isa) + " TG_CACHE_DIR=" + dir);
    CHECK(contains(out, std::string("isa=") + tg::cpu_isa_name(isa) + " same=1"));
    const bool narrowed = isa < tg::host_cpu().isa;
    CHECK(contains(out, "-march=native") == (!narrowed || isa >= tg::CpuIsa::Avx512));
    CHECK(contains(out, "-march=x86-64-v3") == (narrowed && isa == tg::CpuIsa::Avx2));
    CHECK(contains(out, "-march=x86-64-v2") == (narrowed && isa == tg::CpuIsa::Sse));
    std::filesystem::remove_all(dir);
  }
  std::string bad =
      run_child("child: the CPU device under a TG_CPU_ISA it cannot honour", "TG_CPU_ISA=avx1024");
  CHECK(contains(bad, "available=0 reason="));
  CHECK(contains(bad, "TG_CPU_ISA=avx1024 is not one of amx, avx512bf16, avx512, avx2, sse"));
  if (tg::host_cpu().isa != tg::CpuIsa::Amx) {
    std::string more =
        run_child("child: the CPU device under a TG_CPU_ISA it cannot honour", "TG_CPU_ISA=amx");
    CHECK(contains(more, "available=0 reason="));
    CHECK(contains(more, "TG_CPU_ISA=amx asks for more than this CPU has"));
  }
}

TEST_CASE("child: debug output") {
  if (!child()) return;
  auto a = tg::arange(0, 64, 1, tg::float32);
  ((a * a).sum() + 1.0f).realize();
}

TEST_CASE("child: debug output of a compiled step") {
  if (!child()) return;
  auto step = tg::jit([](tg::Tensor x) { return (x * x).sum() + 1.0f; });
  auto x = tg::arange(0, 64, 1, tg::float32).realize();
  step(x);
  step(x); // captured
  std::printf("replays:\n");
  std::fflush(stdout);
  step(x);
}

TEST_CASE("TG_DEBUG prints launches, the schedule, sources and the IR") {
  std::string dir = fresh_dir();
  std::string d1 = run_child("child: debug output", "TG_DEBUG=1 TG_CACHE_DIR=" + dir);
  CHECK(contains(d1, "*** CPU"));
  CHECK(contains(d1, " us"));
  CHECK(!contains(d1, "schedule:"));
  std::string d2 = run_child("child: debug output", "TG_DEBUG=2 TG_CACHE_DIR=" + dir);
  CHECK(contains(d2, "schedule: 1 kernel(s)"));
  std::string d3 = run_child("child: debug output", "TG_DEBUG=3 TG_CACHE_DIR=" + dir);
  CHECK(contains(d3, "void rs16_1("));
  std::string d4 = run_child("child: debug output", "TG_DEBUG=4 TG_CACHE_DIR=" + dir);
  CHECK(contains(d4, "graph\n"));
  CHECK(contains(d4, "program rs16_1"));
  CHECK(contains(d4, "accassign add"));
  // a tg::jit replay's launches too, numbered by their place in the step
  std::string replay =
      run_child("child: debug output of a compiled step", "TG_DEBUG=1 TG_CACHE_DIR=" + dir);
  REQUIRE(contains(replay, "replays:\n"));
  std::string after = replay.substr(replay.find("replays:\n"));
  CHECK(contains(after, "*** CPU      0 "));
  CHECK(contains(after, " us (replay)"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("child: default device") {
  if (!child()) return;
  auto t = tg::ones({2});
  std::printf("device=%s value=%.1f\n", t.device().c_str(), double((t * 2.0f).sum().item<float>()));
}

TEST_CASE("TG_DEVICE picks the default device") {
  std::string out = run_child("child: default device", "TG_DEVICE=INTERP");
  CHECK(contains(out, "device=INTERP value=4.0"));
}

TEST_CASE("devices: listing, transfers, and clear errors") {
  auto list = tg::devices();
  bool cpu = false, interp = false;
  for (auto& d : list) {
    cpu |= d.name == "CPU" && d.available;
    interp |= d.name == "INTERP" && d.available;
  }
  CHECK(cpu);
  CHECK(interp);
  auto a = tg::Tensor({1.f, 2.f, 3.f});
  auto b = a.to("INTERP");
  CHECK(b.device() == "INTERP");
  CHECK(b.to("cpu").to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK_THROWS_AS(a + b, tg::device_error);
  CHECK_THROWS_WITH_AS(a.to("NOPE"), doctest::Contains("unknown device"), tg::device_error);
}

TEST_CASE("stats count allocations and launches, and reset") {
  tg::reset_stats();
  auto a = tg::ones({1000}, tg::float64);
  (a + 1.0).realize();
  auto s = tg::stats();
  CHECK(s.kernels_launched == 1);
  CHECK(s.bytes_allocated == 8000);
  CHECK(s.realizes == 1);
  tg::reset_stats();
  CHECK(tg::stats().kernels_launched == 0);
}

TEST_CASE("the thread pool runs every slice once: back to back, after its workers sleep, from "
          "two callers at once") {
  // Workers spin briefly between calls and then block; every path must hand out each slice once.
  auto check = [](tg::ThreadPool& pool, std::int64_t n, int chunks) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    pool.parallel_for(n, chunks, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) hits[std::size_t(i)]++;
    });
    int wrong = 0;
    for (auto& h : hits) wrong += h.load() != 1;
    return wrong;
  };
  {
    tg::ThreadPool pool(3);
    CHECK(pool.size() == 3);
    int wrong = 0;
    for (int i = 0; i < 2000; ++i) wrong += check(pool, 1 + i % 97, 1 + i % 5); // while spinning
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5)); // past the spin: asleep
      wrong += check(pool, 1000, 3);
    }
    std::atomic<int> wrong2{0};
    std::thread other([&] {
      for (int i = 0; i < 500; ++i) wrong2 += check(pool, 64, 3);
    });
    for (int i = 0; i < 500; ++i) wrong += check(pool, 63, 2);
    other.join();
    CHECK(wrong == 0);
    CHECK(wrong2 == 0);
  } // destroyed right after a call, its workers still spinning: joins, does not hang
  tg::ThreadPool idle(2); // and destroyed without ever running anything
}

TEST_CASE("independent kernels of one realize compile in parallel and all run") {
  std::string salt = std::to_string(std::rand());
  std::vector<tg::Tensor> outs;
  for (int i = 0; i < 6; ++i)
    outs.push_back((tg::arange(0, 50 + i, 1, tg::float32) * float(i + 1)).sum());
  tg::realize(outs);
  for (int i = 0; i < 6; ++i) {
    float n = float(50 + i);
    CHECK(outs[std::size_t(i)].item<float>() == doctest::Approx(float(i + 1) * n * (n - 1) / 2));
  }
}

TEST_CASE("child: beam") {
  if (!child()) return;
  tg::manual_seed(3);
  auto a = tg::randn({64, 96}), b = tg::randn({96, 48});
  auto x = tg::randn({32, 256});
  float v1 = (a.matmul(b) * 0.5f).sum().item<float>();
  float v2 = x.softmax(1).max(1).sum().item<float>();
  float v3 = x.sum(0).square().sum().item<float>();
  std::printf("values=%.3f,%.3f,%.3f searched=%lld cached=%lld\n", double(v1), double(v2),
              double(v3), static_cast<long long>(tg::stats().beam_searches),
              static_cast<long long>(tg::stats().beam_cached));
}

TEST_CASE("TG_BEAM times variants of each reduction kernel and caches the choice on disk") {
  std::string dir = fresh_dir();
  std::string plain = run_child("child: beam", "TG_CACHE_DIR=" + dir);
  CHECK(contains(plain, "searched=0 cached=0"));
  std::string first = run_child("child: beam", "TG_BEAM=4 TG_CACHE_DIR=" + dir);
  CHECK(!contains(first, "searched=0"));
  CHECK(contains(first, "cached=0"));
  std::string second = run_child("child: beam", "TG_BEAM=4 TG_CACHE_DIR=" + dir);
  CHECK(contains(second, "searched=0"));
  CHECK(!contains(second, "cached=0"));
  // every variant computes the same function (float sums may round differently)
  auto values = [](const std::string& out) {
    double v[3] = {0, 0, 0};
    std::sscanf(out.c_str() + out.find("values="), "values=%lf,%lf,%lf", &v[0], &v[1], &v[2]);
    return std::vector<double>(v, v + 3);
  };
  std::vector<double> p = values(plain), f = values(first), s = values(second);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(f[i] == doctest::Approx(p[i]).epsilon(1e-4));
    CHECK(s[i] == f[i]);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "TG_BEAM's variants: around the machine's tile, two vectors' columns where it chose three") {
  const tg::LowerOptions avx512 = tg::cpu_target(tg::CpuIsa::Avx512).lower;
  REQUIRE(avx512.tile_lanes == 48);
  auto has = [](const std::vector<tg::LowerOptions>& c, auto pred) {
    return std::any_of(c.begin(), c.end(), pred);
  };
  const std::vector<tg::LowerOptions> c = tg::detail::beam_candidates(avx512);
  CHECK(c.front().tile_lanes == 48); // the heuristics' own choice first
  CHECK(has(c, [](const tg::LowerOptions& o) { return o.tile_lanes == 32; }));
  CHECK(has(c, [](const tg::LowerOptions& o) { return o.upcast_rows == 16; }));
  CHECK(!has(tg::detail::beam_candidates(tg::cpu_target(tg::CpuIsa::Avx2).lower),
             [](const tg::LowerOptions& o) { return o.tile_lanes != 16; }));
}

TEST_CASE("child: realizes from several threads") {
  if (!child()) return;
  // Started at once in a fresh process, so that the first use of the device registry, the CPU
  // device, the thread pool and the environment settings happens on several threads too. Each
  // thread realizes a graph every thread realizes (one plan, shared), graphs of its own (its own
  // kernels, compiled while the others compile theirs), and three independent kernels in one
  // realize (compiled in parallel within it); the large ones run on the thread pool.
  constexpr int threads = 4, rounds = 3;
  std::vector<std::vector<double>> got(threads), want(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([t, &got, &want] {
      for (int r = 0; r < rounds; ++r) {
        auto half = tg::arange(0, 1 << 16, 1, tg::float64) * 0.5; // on the pool: 2^16 outputs
        half.realize();
        auto shared = half.sum();
        double m = 1000 + 10 * t + r;
        auto own = tg::arange(0, std::int64_t(m), 1, tg::float64).square().sum();
        std::vector<tg::Tensor> outs;
        for (int k = 1; k <= 3; ++k)
          outs.push_back((tg::arange(0, 100 * k + t, 1, tg::float64) * double(k + r)).max());
        tg::realize(outs);
        got[std::size_t(t)].push_back(shared.item<double>());
        want[std::size_t(t)].push_back(0.5 * 65536.0 * 65535.0 / 2);
        got[std::size_t(t)].push_back(own.item<double>());
        want[std::size_t(t)].push_back((m - 1) * m * (2 * m - 1) / 6);
        for (int k = 1; k <= 3; ++k) {
          got[std::size_t(t)].push_back(outs[std::size_t(k - 1)].item<double>());
          want[std::size_t(t)].push_back(double(100 * k + t - 1) * double(k + r));
        }
      }
    });
  for (auto& th : pool) th.join();
  int wrong = 0;
  for (int t = 0; t < threads; ++t)
    for (std::size_t i = 0; i < got[std::size_t(t)].size(); ++i)
      if (std::abs(got[std::size_t(t)][i] - want[std::size_t(t)][i]) >
          1e-6 * std::abs(want[std::size_t(t)][i])) {
        std::printf("thread %d value %zu: %.17g, expected %.17g\n", t, i, got[std::size_t(t)][i],
                    want[std::size_t(t)][i]);
        ++wrong;
      }
  std::printf("threads=%d values=%zu wrong=%d\n", threads, got[0].size() * threads, wrong);
}

TEST_CASE("realizes from several threads at once: shared plans, concurrent compiles, one pool") {
  // A data race here is a failure where the suite runs under ThreadSanitizer (the tsan stage of
  // tools/run-tests.sh): the child's report fails its exit status.
  std::string dir = fresh_dir();
  std::string compiling = run_child("child: realizes from several threads", "TG_CACHE_DIR=" + dir);
  CHECK(contains(compiling, "threads=4 values=60 wrong=0"));
  // again, every kernel now loaded from the disk cache by several threads at once
  std::string loading = run_child("child: realizes from several threads", "TG_CACHE_DIR=" + dir);
  CHECK(contains(loading, "threads=4 values=60 wrong=0"));
  std::filesystem::remove_all(dir);
}

#if defined(__SANITIZE_ADDRESS__)
#define TG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TG_TEST_ASAN 1
#endif
#endif

TEST_CASE("child: a kernel reads past its input") {
  if (!child()) return;
  // A tensor of 64 floats over a buffer of 32 (128 bytes: a whole number of the allocator's
  // 64-byte blocks, so the bytes after it are ASan's redzone): the generated kernel of t * 2
  // reads 32 floats past the buffer's end. Nothing else reads t.
  auto dev = tg::device("CPU");
  auto buf = std::make_shared<tg::Buffer>(dev, tg::float32, 32);
  std::vector<float> ones(32, 1.0f);
  dev->copy_in(buf->ptr, ones.data(), ones.size() * sizeof(float));
  tg::Tensor t = tg::Tensor::make(tg::Op::Buffer, tg::float32, tg::Shape{64}, {}, "CPU");
  t.lazy()->buffer = buf;
  auto y = t * 2.0f;
  y.realize();
  std::printf("no report\n");
}

#ifdef TG_TEST_ASAN
namespace {
/// Runs one test case of this binary in a new process, as run_child does, but expects nothing of
/// its exit status: returns the status and the output.
std::pair<int, std::string> run_child_status(const std::string& test_case, const std::string& env) {
  std::string cmd = "env TG_TEST_CHILD=1 " + env + " /proc/" + std::to_string(getpid()) +
                    "/exe --no-version -tc=\"" + test_case + "\" 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  return {pclose(p), out};
}
} // namespace

TEST_CASE("TG_KERNEL_SANITIZE=1: a kernel that reads out of bounds stops with ASan's report") {
  std::string dir = fresh_dir();
  auto [rc, out] = run_child_status("child: a kernel reads past its input",
                                    "TG_KERNEL_SANITIZE=1 TG_CACHE_DIR=" + dir);
  INFO(out);
  CHECK(rc != 0);
  CHECK(contains(out, "ERROR: AddressSanitizer: heap-buffer-overflow"));
  CHECK(contains(out, "READ of size"));
  CHECK(contains(out, dir + "/")); // the faulting frame: a kernel of this cache
  CHECK(!contains(out, "no report"));
  // The same kernel built without it reads past the end unnoticed: the report above is the
  // kernel's own instrumentation, not the test program's.
  auto [plain_rc, plain] = run_child_status("child: a kernel reads past its input",
                                            "TG_KERNEL_SANITIZE=0 TG_CACHE_DIR=" + dir);
  INFO(plain);
  CHECK(plain_rc == 0);
  CHECK(contains(plain, "no report"));
  std::filesystem::remove_all(dir);
}
#endif

TEST_CASE("child: the CPU device under TG_KERNEL_SANITIZE") {
  if (!child()) return;
  try {
    tg::device("CPU");
    std::printf("CPU available\n");
  } catch (const tg::device_error& e) {
    std::printf("unavailable: %s\n", e.what());
  }
}

TEST_CASE("TG_KERNEL_SANITIZE=1 needs a process built with AddressSanitizer") {
  std::string out =
      run_child("child: the CPU device under TG_KERNEL_SANITIZE", "TG_KERNEL_SANITIZE=1");
#ifdef TG_TEST_ASAN
  CHECK(contains(out, "CPU available"));
#else
  CHECK(contains(out, "unavailable: tg: device CPU is unavailable: TG_KERNEL_SANITIZE is set, but "
                      "this process is not built with -fsanitize=address"));
#endif
}

TEST_CASE("slice_bounds: Python's slice semantics, shared by both front ends") {
  // x[start:stop:step] of an axis of size 5, as Python gives it: the kept range, then the count
  constexpr auto none = std::nullopt;
  auto same = [](tg::SliceBounds b, std::int64_t lo, std::int64_t hi, std::int64_t count) {
    return b.lo == lo && b.hi == hi && b.count == count;
  };
  static_assert(same(tg::slice_bounds(5, none, none, 1), 0, 5, 5));  // x[:]
  static_assert(same(tg::slice_bounds(5, 1, 4, 2), 1, 4, 2));        // x[1:4:2]: 1, 3
  static_assert(same(tg::slice_bounds(5, -2, none, 1), 3, 5, 2));    // x[-2:]: 3, 4
  static_assert(same(tg::slice_bounds(5, 10, none, 1), 5, 5, 0));    // x[10:]: empty
  static_assert(same(tg::slice_bounds(5, -10, 2, 1), 0, 2, 2));      // x[-10:2]: 0, 1
  static_assert(same(tg::slice_bounds(5, none, none, -1), 0, 5, 5)); // x[::-1]: 4, 3, 2, 1, 0
  static_assert(same(tg::slice_bounds(5, 4, 0, -2), 2, 5, 2));       // x[4:0:-2]: 4, 2
  static_assert(same(tg::slice_bounds(5, none, -1, -1), 0, 0, 0));   // x[:-1:-1]: empty
  static_assert(same(tg::slice_bounds(5, -10, -20, -1), 0, 0, 0));   // x[-10:-20:-1]: empty
  static_assert(same(tg::slice_bounds(5, 10, none, -3), 1, 5, 2));   // x[10::-3]: 4, 1
  static_assert(same(tg::slice_bounds(0, none, none, 1), 0, 0, 0));  // an empty axis
  // and both front ends cut those elements
  tg::Tensor x = tg::arange(5, tg::TensorOptions(tg::int64, "CPU"));
  tg::fixed<std::int64_t, 5> f{0, 1, 2, 3, 4};
  CHECK(x.slice(0, 4, 0, -2).to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 2});
  CHECK(x.slice(0, 10, none, -3).to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 1});
  auto g = tg::fixed<std::int64_t, 2>(f.slice<0, 10, tg::none, -3>());
  CHECK((g[0] == 4 && g[1] == 1));
}
