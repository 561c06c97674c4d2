// tg::distributed against Open MPI itself, under mpirun (tools/run-bench.sh runs it on 2 ranks):
// all_reduce's bus bandwidth for 1 KiB to 256 MiB of float32, tg's (a tg::jit replay, and the
// eager call with its cross-rank check and fresh output) against MPI_Allreduce called directly on
// the same buffers, in the same run; then the time of a data-parallel MLP training step.
//   mpirun -np 2 bench_distributed            both parts
//   bench_distributed --step                  the step alone, on one process (the baseline)
// Not Google Benchmark: every rank must run the same number of iterations, in step.
#include <tg/distributed.hpp>
#include <tg/distributed/mpi.hpp> // (white-box: the MPI library, for the peer's direct call)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace dist = tg::distributed;
using tg::Tensor;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Seconds per call of f, the best of 5 blocks of `iters` calls, each block started together.
template <class F> double time_per_call(int iters, F&& f) {
  double best = 1e30;
  for (int block = 0; block < 5; ++block) {
    dist::barrier();
    const double t0 = now();
    for (int i = 0; i < iters; ++i) f();
    // the slowest rank's time: a collective ends when every rank has done its part
    const double mine = now() - t0;
    const double slowest =
        dist::all_reduce(Tensor::scalar(mine), dist::ReduceOp::Max).item<double>();
    best = std::min(best, slowest / iters);
  }
  return best;
}

void bench_all_reduce() {
  const int world = dist::world_size();
  const auto& mpi = dist::detail::mpi();
  if (dist::rank() == 0)
    std::printf("all_reduce(sum) of float32 on %d ranks: bus bandwidth 2(n-1)/n * bytes / time, "
                "GB/s\n%10s %12s %12s %12s %10s %10s\n",
                world, "bytes", "MPI direct", "tg replay", "tg eager", "replay/MPI", "eager/MPI");
  for (std::int64_t bytes = 1024; bytes <= (256ll << 20); bytes *= 4) {
    const std::int64_t n = bytes / 4;
    Tensor x = tg::full({n}, 1.0f).contiguous().realize();
    auto replayed = tg::jit([](Tensor t) { return dist::all_reduce(t); });
    for (int i = 0; i < 3; ++i) replayed(x); // warm-up, capture, a replay
    Tensor out = dist::all_reduce(x);
    void* in_ptr = x.lazy()->buffer->ptr;
    void* out_ptr = out.lazy()->buffer->ptr;
    const int iters = int(std::clamp<std::int64_t>((64ll << 20) / bytes, 3, 2000));
    const double t_mpi = time_per_call(iters, [&] {
      mpi.Allreduce(in_ptr, out_ptr, int(n), mpi.types[int(tg::float32)], mpi.op_sum,
                    mpi.comm_world);
    });
    const double t_replay = time_per_call(iters, [&] { replayed(x); });
    const double t_eager = time_per_call(iters, [&] { dist::all_reduce(x); });
    const double factor = 2.0 * (world - 1) / world * double(bytes) / 1e9;
    if (dist::rank() == 0)
      std::printf("%10lld %12.2f %12.2f %12.2f %10.2f %10.2f\n", (long long)bytes, factor / t_mpi,
                  factor / t_replay, factor / t_eager, t_mpi / t_replay, t_mpi / t_eager);
  }
}

/// The Fashion-MNIST MLP's compiled training step (784-256-128-10, Adam), with a global batch of
/// 128 split over the ranks: milliseconds per step.
void bench_step(bool distributed) {
  const int world = distributed ? dist::world_size() : 1;
  tg::manual_seed(0);
  tg::nn::Sequential mlp(tg::nn::Linear(784, 256), tg::nn::ReLU(), tg::nn::Linear(256, 128),
                         tg::nn::ReLU(), tg::nn::Linear(128, 10));
  std::optional<tg::nn::DistributedDataParallel> ddp;
  if (distributed) ddp.emplace(mlp);
  tg::optim::Adam opt(mlp.parameters(), tg::optim::AdamOptions{.lr = 1e-3});
  auto step = tg::jit([&](Tensor x, Tensor y) {
    opt.zero_grad();
    Tensor loss = tg::nn::functional::cross_entropy(mlp(x), y);
    loss.realize();
    loss.backward();
    opt.step();
    return loss;
  });
  const std::int64_t local = 128 / world;
  Tensor x = tg::randn({local, 784}).realize();
  Tensor y = tg::randint(0, 10, {local}).realize();
  for (int i = 0; i < 5; ++i) step(x, y).realize();
  auto run = [&] { step(x, y).realize(); };
  const int iters = 100;
  const double t = distributed ? time_per_call(iters, run) : [&] {
    double best = 1e30;
    for (int block = 0; block < 5; ++block) {
      const double t0 = now();
      for (int i = 0; i < iters; ++i) run();
      best = std::min(best, (now() - t0) / iters);
    }
    return best;
  }();
  if (!distributed || dist::rank() == 0)
    std::printf("MLP training step, global batch 128: %.3f ms on %d process(es) x %d kernel "
                "thread(s)\n",
                1e3 * t, world, tg::env::threads());
}

} // namespace

int main(int argc, char** argv) {
  const bool step_only = argc > 1 && std::strcmp(argv[1], "--step") == 0;
  if (step_only) {
    bench_step(false);
    return 0;
  }
  dist::init_process_group("mpi");
  bench_all_reduce();
  bench_step(true);
  return 0;
}
