// chunk axis 0 of [2, 3] into 0 chunks.
// expect: tg: chunk: axis out of range, or the number of chunks is not positive
// expect: chunkable<tg::op::chunk, tg::axes<0>, tg::shape<2, 3>, tg::dims<0>
#include <tg/fixed.hpp>
int main() {
  tg::fixed<float, 2, 3> a;
  auto c = std::get<0>(a.chunk<0>()) + 1.0f;
  (void)c;
}
