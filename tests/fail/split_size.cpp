// split along axis 1 of [2, 3] in pieces of size 0.
// expect: tg: split: axis out of range, or the split size is not positive
// expect: splittable<tg::op::split, tg::axes<1>, tg::shape<2, 3>, tg::dims<0>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto parts = a.split<0, 1>();
  auto c = std::get<0>(parts) * 2.0f;
  (void)c;
}
