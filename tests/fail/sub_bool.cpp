// Subtracting bool tensors.
// expect: tg: sub: not defined for bool
// expect: defined_for<tg::op::sub, bool>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<bool, 2, 3> a, b;
  auto c = a - b;
  (void)c;
}
