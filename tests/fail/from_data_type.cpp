// Tensor data of an element type no dtype stores (plain char is neither int8 nor uint8).
// expect: tg::Tensor::from_data: no tg dtype has this element type
#include <tg/tg.hpp>
int main() {
  const char data[] = {1, 2};
  tg::Tensor t = tg::Tensor::from_data(data, {2});
  (void)t;
}
