// cat along axis 1 of [2, 3] and [4, 3]: the sizes differ along axis 0.
// expect: tg: cat: axis out of range, or shapes differ outside it
// expect: concatenable<tg::op::cat, tg::axes<1>, tg::shape<2, 3>, tg::shape<4, 3>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<float, 4, 3> b;
  auto c = tg::cat<1>(a, b) + 1.0f;
  (void)c;
}
