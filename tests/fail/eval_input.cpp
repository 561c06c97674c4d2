// Evaluating an expression over a placeholder input.
// expect: tg: eval: a tg::input placeholder has no data
#include <tg/fixed.hpp>
int main() {
  tg::input<0, float, 2, 3> x;
  auto c = (x * 2.0f).eval();
  (void)c;
}
