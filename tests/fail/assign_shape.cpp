// Assigning an expression of another shape (a rank mismatch).
// expect: tg: assign: the expression has another shape
// expect: same_shape<tg::op::assign, tg::shape<6>, tg::shape<2, 3>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<float, 6> c = a * 2.0f;
  (void)c;
}
