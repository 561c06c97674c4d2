// gather in a constant expression with an index outside [-3, 3): no constant.
// expect: index_out_of_range
// expect: tg::op::gather
#include <tg/fixed.hpp>
constexpr tg::fixed<float, 2, 3> a{{1, 2, 3}, {4, 5, 6}};
constexpr tg::fixed<int, 2, 2> i{{0, 3}, {1, 0}};
int main() {
  constexpr float c = a.gather<1>(i).sum();
  (void)c;
}
