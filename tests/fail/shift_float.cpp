// A shift of a float tensor (torch raises: shifts take integers).
// expect: tg: bitwise_left_shift: needs integer or bool tensors
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = a.bitwise_left_shift(2).eval();
  (void)c;
}
