// a norm of a negative (finite) order, which Tensor::norm refuses too.
// expect: tg: norm: the order must be positive, 0 or +-inf
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto n = a.norm<-1>();
  (void)n;
}
