// expand may only grow axes of size 1.
// expect: tg: expand: only size-1 axes can grow
// expect: expandable<tg::shape<2, 3>, tg::dims<4, 3>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = a.expand<4, 3>();
  (void)c;
}
