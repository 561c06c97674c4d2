// A bitwise op on floats (torch raises: bitwise ops take integers and bool).
// expect: tg: bitwise_and: needs integer or bool tensors
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<int, 2, 3> b;
  auto c = (a & b).eval();
  (void)c;
}
