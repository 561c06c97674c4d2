// stack of [2, 3] and [3, 2]: the shapes differ.
// expect: tg: stack: axis out of range, or shapes differ
// expect: stackable<tg::op::stack, tg::axes<0>, tg::shape<2, 3>, tg::shape<3, 2>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<float, 3, 2> b;
  auto c = tg::stack<0>(a, b).sum<0>();
  (void)c;
}
