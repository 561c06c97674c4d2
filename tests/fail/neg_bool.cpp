// Negating a bool tensor.
// expect: tg: neg: not defined for bool
// expect: defined_for<tg::op::neg, bool>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = -(a > 0.0f);
  (void)c;
}
