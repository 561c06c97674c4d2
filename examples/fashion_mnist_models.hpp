#pragma once
// The Fashion-MNIST demo's models (examples/fashion_mnist.cpp), which the export test and
// benchmark export too.
#include <tg/tg.hpp>

#include <string>

namespace fashion_mnist {

struct MLP : tg::nn::Module {
  tg::nn::Linear fc1{784, 256}, fc2{256, 128}, fc3{128, 10};
  MLP() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }
  tg::Tensor forward(const tg::Tensor& x) override {
    return fc3(fc2(fc1(x.flatten(1)).relu()).relu());
  }
  std::string type_name() const override { return "MLP"; }
};

struct CNN : tg::nn::Module {
  tg::nn::Conv2d conv1{1, 16, 3, 1, 1}, conv2{16, 32, 3, 1, 1};
  tg::nn::BatchNorm2d bn1{16}, bn2{32};
  tg::nn::Linear fc1{32 * 7 * 7, 128}, fc2{128, 10};
  CNN() {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  tg::Tensor forward(const tg::Tensor& x) override {
    tg::Tensor h = tg::nn::F::max_pool2d(bn1(conv1(x)).relu(), 2); // [N, 16, 14, 14]
    h = tg::nn::F::max_pool2d(bn2(conv2(h)).relu(), 2);            // [N, 32, 7, 7]
    return fc2(fc1(h.flatten(1)).relu());
  }
  std::string type_name() const override { return "CNN"; }
};

} // namespace fashion_mnist
