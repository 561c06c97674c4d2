// mean of an integer tensor.
// expect: tg: mean: needs a floating point tensor
// expect: floating<tg::op::mean, int>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<int, 2, 3> a;
  auto c = a.mean<1>();
  (void)c;
}
