// split along axis 2 of [2, 3]: out of range.
// expect: tg: split: axis out of range, or the split size is not positive
// expect: splittable<tg::op::split, tg::axes<2>, tg::shape<2, 3>, tg::dims<2>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = std::get<0>(tg::split<2, 2>(a)).relu();
  (void)c;
}
