// matmul of [2, 3] by [4, 5]: the inner dimensions differ.
// expect: tg: matmul: inner dimensions differ
// expect: multipliable<tg::op::matmul, tg::shape<2, 3>, tg::shape<4, 5>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<float, 4, 5> b;
  auto c = a.matmul(b);
  (void)c;
}
