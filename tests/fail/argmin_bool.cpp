// argmin of a bool tensor (as on tg::Tensor: not defined).
// expect: tg: argmin: not defined for bool
// expect: defined_for<tg::op::argmin, bool>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = (a > 0.0f).argmin<1>();
  (void)c;
}
