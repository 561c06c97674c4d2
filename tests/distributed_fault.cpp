// The faults tests/distributed_fault.sh starts under mpirun with 2 ranks: data-parallel training
// in which rank 1, at step 5, stops answering ("hang": it sleeps) or dies ("kill": SIGKILL). Rank 0
// must not wait forever: it fails with tg::distributed_error after TG_DIST_TIMEOUT seconds (hang),
// or the launcher ends the job (kill).
#include <tg/distributed.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

namespace dist = tg::distributed;
using tg::Tensor;

int main(int argc, char** argv) {
  const bool kill = argc > 1 && std::strcmp(argv[1], "kill") == 0;
  dist::init_process_group("mpi");
  tg::nn::Sequential net(tg::nn::Linear(4, 8), tg::nn::ReLU(), tg::nn::Linear(8, 2));
  tg::nn::DistributedDataParallel ddp(net);
  tg::optim::SGD opt(net.parameters(), tg::optim::SGDOptions{.lr = 0.1});
  auto step = tg::jit([&](Tensor x, Tensor y) {
    opt.zero_grad();
    Tensor loss = tg::nn::functional::mse_loss(ddp(x), y);
    loss.realize();
    loss.backward();
    opt.step();
    return loss;
  });
  try {
    for (int s = 0; s < 20; ++s) {
      if (s == 5 && dist::rank() == 1) {
        std::fprintf(stderr, "rank 1: %s at step %d\n", kill ? "dies" : "stops answering", s);
        if (kill) std::raise(SIGKILL);
        sleep(600);
      }
      float loss = step(tg::ones({3, 4}), tg::zeros({3, 2})).item<float>();
      std::printf("rank %d: step %d, loss %.4f\n", dist::rank(), s, double(loss));
    }
  } catch (const dist::distributed_error& e) {
    std::fprintf(stderr, "rank %d: %s\n", dist::rank(), e.what());
    return 3;
  }
  std::fprintf(stderr, "rank %d: trained 20 steps: the fault went unnoticed\n", dist::rank());
  return 0;
}
