// A binary op on shapes that do not broadcast.
// expect: tg: add: shapes cannot be broadcast
// expect: broadcastable<tg::op::add, tg::shape<2, 3>, tg::shape<4>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<float, 4> b;
  tg::fixed<float, 2, 3> c = a + b;
  (void)c;
}
