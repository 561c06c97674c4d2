// A program of one source file that defines TG_IMPLEMENTATION and includes only <tg/tg.hpp>: it
// must build and link with nothing but -pthread and -ldl (every function the headers declare is
// defined by the implementation they include) and run. Built and run by the header_tg test
// (tests/CMakeLists.txt, headers/check.cmake).
#define TG_IMPLEMENTATION
#include <tg/tg.hpp>

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
