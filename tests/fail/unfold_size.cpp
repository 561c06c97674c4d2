// Windows longer than the axis.
// expect: tg: unfold: axis out of range, or not 1 <= size <= its length and step >= 1
// expect: unfold_fits<tg::shape<2, 3>, tg::axes<1>, tg::dims<4, 1>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = a.unfold<1, 4, 1>();
  (void)c;
}
