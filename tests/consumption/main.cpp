// A consumer of tg, built by each consumption test (tests/consumption/): find_package,
// add_subdirectory, FetchContent and a plain compiler line against single_include/, each with tg's
// machinery compiled once (tg::tg, or TG_IMPLEMENTATION in implementation.cpp) and header-only
// (tg::header_only, TG_HEADER_ONLY). With second.cpp, two translation units use tg. Exit status 0
// when tg works.
#include <tg/tg.hpp>

#include <cstdio>
#include <vector>

float second_sum(); // second.cpp

int main() {
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) std::fprintf(stderr, "consumer: FAILED: %s\n", what);
    failures += ok ? 0 : 1;
  };
  check((tg::ones({2, 2}) * 3.0f).sum().item<float>() == 12.0f, "(ones({2,2}) * 3).sum() == 12");
  tg::Tensor a = tg::arange(0, 6).reshape({2, 3}).cast(tg::float32);
  check(a.sum(1).to_vector<float>() == std::vector<float>{3, 12},
        "arange(6).reshape({2,3}).sum(1)");
  check(a.T().shape() == std::vector<std::int64_t>{3, 2}, "transpose shape");
  tg::Tensor m = a.matmul(tg::ones({3, 1}));
  check(m.to_vector<float>() == std::vector<float>{3, 12}, "matmul with ones({3,1})");
  check(second_sum() == 6.0f, "arange(4).sum() in a second translation unit");
  std::printf("tg %s consumer: %s\n", tg::version, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
