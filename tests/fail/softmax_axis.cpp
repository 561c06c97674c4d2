// softmax over an axis the tensor does not have.
// expect: tg: softmax: axis out of range
// expect: axes_in_range<tg::op::softmax, tg::shape<2, 3>, tg::axes<-3>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = a.softmax<-3>();
  (void)c;
}
