// A reshape that changes the number of elements.
// expect: tg: reshape: the sizes do not match
// expect: reshapeable<tg::shape<2, 3>, tg::dims<4, 2>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = a.reshape<4, 2>();
  (void)c;
}
