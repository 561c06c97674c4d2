// cumsum over an axis the tensor does not have.
// expect: tg: cumsum: axis out of range
// expect: axes_in_range<tg::op::cumsum, tg::shape<2, 3>, tg::axes<-3>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = a.cumsum<-3>() + 1.0f;
  (void)c;
}
