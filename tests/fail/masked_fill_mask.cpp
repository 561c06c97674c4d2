// masked_fill with a mask that is not bool.
// expect: tg: masked_fill: the mask must be bool
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<int, 2, 3> m;
  auto c = a.masked_fill(m, 0.0).eval();
  (void)c;
}
