// A program that includes only <tg/tensor/tensor.hpp>, the header of the tg::Tensor class: it must
// build and link alone (every member the class declares is defined by what the header includes)
// and run. Built and run by the header_tensor_tensor test (tests/CMakeLists.txt,
// headers/check.cmake).
#include <tg/tensor/tensor.hpp>

#include <cstdio>

int main() {
  tg::Tensor x = tg::Tensor({1.0f, 2.0f, 3.0f}).requires_grad_(); // autograd/backward.hpp
  tg::Tensor y = (x * x + 1).sum();                               // ops.hpp
  y.backward();
  tg::Tensor z = tg::zeros({3}).contiguous().realize(); // creation.hpp
  z.assign(x.detach().reshape({3, 1}).squeeze(1));      // engine/jit.hpp, movement.hpp
  std::string text = z.to_string();                     // print.hpp
  std::printf("y = %g, x.grad = %s, z = %s\n", y.item<float>(), x.grad().to_string().c_str(),
              text.c_str());
  std::vector<float> g = x.grad().to_vector<float>();
  bool ok = y.item<float>() == 17.0f && g == std::vector<float>{2, 4, 6} &&
            z.to_vector<float>() == std::vector<float>{1, 2, 3};
  return ok ? 0 : 1;
}
