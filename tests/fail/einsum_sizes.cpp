// einsum over a letter whose sizes differ between operands.
// expect: tg: einsum: the equation does not fit the operands
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<float, 4, 5> b;
  auto c = tg::einsum<"ij,jk->ik">(a, b);
  (void)c;
}
