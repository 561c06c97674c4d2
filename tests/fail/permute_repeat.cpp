// permute with a repeated axis.
// expect: tg: permute: not a permutation of the axes
// expect: is_permutation<tg::shape<2, 3, 4>, tg::axes<0, 0, 1>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3, 4> a;
  auto c = a.permute<0, 0, 1>();
  (void)c;
}
