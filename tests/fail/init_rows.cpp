// Nested lists that do not match the shape.
// expect: tg: init: the nested lists do not match the shape
// expect: initializer_fits<tg::shape<2, 3>, tg::rows<3, 2>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a{{1, 2, 3}, {4, 5}};
  (void)a;
}
