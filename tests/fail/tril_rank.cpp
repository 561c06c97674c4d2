// tril of a 1-D tensor (it takes the last two axes).
// expect: tg: tril: needs at least 2 dims
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 5> a;
  auto c = a.tril<1>().eval();
  (void)c;
}
