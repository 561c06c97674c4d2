// A slice with step 0.
// expect: tg: slice: axis out of range or step 0
// expect: slice_fits<tg::shape<2, 3>, tg::axes<1>, tg::dims<0>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = a.slice<1, 0, 3, 0>();
  (void)c;
}
