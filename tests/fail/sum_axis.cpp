// A reduction over an axis the tensor does not have.
// expect: tg: sum: axis out of range or repeated
// expect: axes_in_range<tg::op::sum, tg::shape<2, 3>, tg::axes<2>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = (a * 2.0f).sum<2>();
  (void)c;
}
