// chunk along axis -3 of [2, 3]: out of range (the two pieces asked for are stand-ins).
// expect: tg: chunk: axis out of range, or the number of chunks is not positive
// expect: chunkable<tg::op::chunk, tg::axes<-3>, tg::shape<2, 3>, tg::dims<2>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto [p, q] = tg::chunk<2, -3>(a);
  auto c = p * q;
  (void)c;
}
