// gather along axis 1 of [2, 3] with an index of shape [4, 2]: larger than the input in axis 0.
// expect: tg: gather: axis out of range, or the index's shape does not fit
// expect: gatherable<tg::op::gather, tg::axes<1>, tg::shape<2, 3>, tg::shape<4, 2>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<int, 4, 2> i;
  auto c = a.gather<1>(i) * 2.0f;
  (void)c;
}
