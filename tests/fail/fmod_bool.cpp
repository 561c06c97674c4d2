// A remainder of bool tensors (torch raises: remainder is not implemented for bool).
// expect: tg: fmod: is not defined for bool tensors
#include <tg/fixed.hpp>
int main() {
  tg::fixed<bool, 2, 3> a;
  tg::fixed<int, 2, 3> b;
  auto c = a.fmod(b).eval();
  (void)c;
}
