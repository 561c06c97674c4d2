// split axis 1 of [2, 3] into sizes 1 and 1: they do not add up to 3.
// expect: tg: split: axis out of range, or the sizes do not add up to its size
// expect: sizes_add_up<tg::op::split, tg::axes<1>, tg::shape<2, 3>, tg::dims<1, 1>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto [p, q] = a.split<tg::dims<1, 1>, 1>();
  auto c = p + q.sum<1>();
  (void)c;
}
