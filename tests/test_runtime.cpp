// The runtime: the on-disk kernel cache across processes, compile errors, TG_DEBUG output,
// device listing and counters. Child processes are this test binary run again with a filter.
#include <doctest/doctest.h>

#include <tg/tg.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace {
/// Runs one test case of this binary in a new process with extra environment; returns its output.
std::string run_child(const std::string& test_case, const std::string& env) {
  std::string cmd = "env TG_TEST_CHILD=1 " + env + " /proc/" + std::to_string(getpid()) +
                    "/exe --no-version -tc=\"" + test_case + "\" 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int rc = pclose(p);
  INFO(out);
  CHECK(rc == 0);
  return out;
}
bool child() { return std::getenv("TG_TEST_CHILD") != nullptr; }
std::string fresh_dir() {
  std::string d = std::filesystem::temp_directory_path().string() + "/tg-test-XXXXXX";
  REQUIRE(mkdtemp(d.data()) != nullptr);
  return d;
}
bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}
} // namespace

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
