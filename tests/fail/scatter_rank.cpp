// scatter with an index of another rank than the tensor.
// expect: tg: scatter: axis out of range, or index, src and the tensor of different ranks
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  tg::fixed<int, 3> i;
  auto c = a.scatter<0>(i, a);
  (void)c;
}
