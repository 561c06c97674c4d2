// argmax over an axis the tensor does not have.
// expect: tg: argmax: axis out of range
// expect: axes_in_range<tg::op::argmax, tg::shape<2, 3>, tg::axes<2>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = (a * 2.0f).argmax<2>(tg::keepdim);
  (void)c;
}
