// topk of more values than the axis has.
// expect: tg: topk: k is out of range for the axis
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto [v, i] = a.topk<4, 1>();
  (void)v;
  (void)i;
}
