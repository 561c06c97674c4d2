// Reinterpreting float32 bits as int64.
// expect: tg: bitcast: element sizes differ
// expect: same_itemsize<tg::op::bitcast, float, long
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = a.bitcast<std::int64_t>();
  (void)c;
}
