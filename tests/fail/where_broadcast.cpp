// where() with a condition of another shape.
// expect: tg: where: shapes cannot be broadcast
// expect: tg::shape<3, 2>
// expect: tg::shape<2, 3>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<bool, 3, 2> m;
  auto c = tg::where(m, a, 0.0f);
  (void)c;
}
