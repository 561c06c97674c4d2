// A consumer of tg, built by each consumption test (tests/consumption/): find_package,
// add_subdirectory, FetchContent and a plain compiler line against single_include/. Exit status 0
// when tg works.
#include <tg/tg.hpp>

#include <cstdio>
#include <vector>

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
  std::printf("tg %s consumer: %s\n", tg::version, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
