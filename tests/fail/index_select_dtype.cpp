// index_select with a float index.
// expect: tg: index_select: the index must have an integer type
// expect: integral<tg::op::index_select, float>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<float, 2> i;
  auto c = a.index_select<0>(i) + 1.0f;
  (void)c;
}
