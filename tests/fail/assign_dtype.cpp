// Assigning a float expression to an int tensor.
// expect: tg: assign: the expression has another element type
// expect: same_dtype<tg::op::assign, int, float>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<int, 2, 3> c = a * 2.0f;
  (void)c;
}
