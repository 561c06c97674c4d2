// Element access with too few indices.
// expect: tg: index: one index per axis is needed
// expect: index_count_matches<tg::shape<2, 3>, tg::rows<1>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  return int(a(1));
}
