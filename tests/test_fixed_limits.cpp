// tg::Tensor(expr) where the compile-time plan does not fit the compiler's constant-evaluation
// limit (lowered here on purpose: tests/CMakeLists.txt): it is not an error, the expression gets
// the run-time front end's schedule instead.
#include <doctest/doctest.h>

#include <tg/fixed.hpp>
#include <tg/tg.hpp>

TEST_CASE("fixed: tg::Tensor(expr) past the constant-evaluation limit is scheduled at run time") {
  tg::fixed<float, 2, 3> a{{1, 2, 3}, {4, 5, 6}};
  auto e = (a * 0.5f).softmax<1>();
  static_assert(!tg::fx::plannable<decltype(e)>);
  tg::reset_stats();
  tg::Tensor t = tg::Tensor(e);
  CHECK(tg::stats().realizes == 1);
  auto got = t.to_vector<float>();
  auto want = e.eval();
  for (std::size_t i = 0; i < want.size; ++i) CHECK(got[i] == doctest::Approx(want[i]));
}
