// Fashion-MNIST: an MLP and a small CNN trained with a compiled training step (tg::jit) on the
// default device, test accuracy after every epoch, the model saved as safetensors and reloaded.
//
// Usage (the data: Debian's dataset-fashion-mnist, /usr/share/datasets/fashion-mnist/*-ubyte.gz):
//   example_fashion_mnist                            MLP 2 epochs (>= 85%), CNN 3 epochs (>= 89%)
//   example_fashion_mnist --model cnn --epochs 5 --data DIR
//   TG_QUICK=1 example_fashion_mnist                 CI: a few hundred steps on a subset
//   mpirun -np 2 example_fashion_mnist --distributed data-parallel on 2 processes
//   (docs/distributed.md)
//
// Options: --data DIR (or TG_FASHION_MNIST), --model mlp|cnn|both, --epochs N, --batch N, --lr X,
// --out DIR (where the .safetensors go), --quick, --distributed (one process per rank, started by
// mpirun or srun: each trains on its share of every batch of --batch samples, and rank 0 alone
// prints, evaluates and saves). Exit status: 0 when every model reaches its
// target (in quick mode: its loss falls), 1 otherwise, 77 when the data set is missing.
// The data is read by examples/fashion_mnist_data.hpp.
#include <tg/distributed.hpp>

#include "fashion_mnist_data.hpp"
#include "fashion_mnist_models.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace nn = tg::nn;
namespace F = tg::nn::functional;
using tg::Tensor;

namespace {

// ---- the data: examples/fashion_mnist_data.hpp -------------------------------------------------
using fashion_mnist::Dataset;
using fashion_mnist::load_split;

// ---- models: examples/fashion_mnist_models.hpp -------------------------------------------------
using fashion_mnist::CNN;
using fashion_mnist::MLP;

// ---- training --------------------------------------------------------------------------------
struct Options {
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string model = "both";
  std::string out = ".";
  int epochs = 0; // 0: the model's default
  std::int64_t batch = 128;
  double lr = 1e-3;
  bool quick = false;
  bool distributed = false;
};

Tensor batch_images(const Dataset& d, const std::vector<std::int64_t>& order, std::int64_t first,
                    std::int64_t count) {
  std::vector<float> x(std::size_t(count * 784));
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(&x[std::size_t(i * 784)],
                &d.images[std::size_t(order[std::size_t(first + i)] * 784)], 784 * sizeof(float));
  return Tensor::from_data(x, {count, 1, 28, 28});
}
Tensor batch_labels(const Dataset& d, const std::vector<std::int64_t>& order, std::int64_t first,
                    std::int64_t count) {
  std::vector<std::int64_t> y(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    y[std::size_t(i)] = d.labels[std::size_t(order[std::size_t(first + i)])];
  return Tensor::from_data(y, {count});
}

double accuracy(nn::Module& model, const Dataset& test, std::int64_t limit) {
  tg::no_grad guard;
  model.eval();
  std::int64_t n = std::min(limit, test.n), bs = 1000, correct = 0;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (std::int64_t b = 0; b < n; b += bs) {
    std::int64_t c = std::min(bs, n - b);
    auto pred = model(batch_images(test, order, b, c)).argmax(1).to_vector<std::int64_t>();
    for (std::int64_t i = 0; i < c; ++i)
      correct += pred[std::size_t(i)] == test.labels[std::size_t(b + i)];
  }
  model.train();
  return double(correct) / double(n);
}

void progress(int epoch, int epochs, std::int64_t done, std::int64_t total, float loss, double rate,
              bool tty) {
  if (!tty) return;
  const int width = 30;
  int filled = int(double(width) * double(done) / double(total));
  std::printf("\r  epoch %d/%d [%s%s] %lld/%lld  loss %.4f  %.0f samples/s ", epoch, epochs,
              std::string(std::size_t(filled), '=').c_str(),
              std::string(std::size_t(width - filled), ' ').c_str(), (long long)done,
              (long long)total, double(loss), rate);
  std::fflush(stdout);
}

/// Trains one model; returns whether it met its target.
bool run(const std::string& name, nn::Module& model, const Dataset& train, const Dataset& test,
         const Options& o, int default_epochs, double target,
         const std::function<std::unique_ptr<nn::Module>()>& fresh) {
  const bool tty = isatty(1);
  int epochs = o.quick ? 1 : (o.epochs ? o.epochs : default_epochs);
  std::int64_t bs = o.quick ? 64 : o.batch;
  std::int64_t steps_per_epoch =
      o.quick ? (name == "mlp" ? 300 : 120) : train.n / bs; // the last partial batch is dropped
  // data parallel: every rank starts from rank 0's parameters and takes bs / ranks samples of each
  // batch; backward() averages the gradients over the ranks, so each makes the same step
  const int ranks = o.distributed ? tg::distributed::world_size() : 1;
  const bool lead = !o.distributed || tg::distributed::rank() == 0;
  const std::int64_t local_bs = bs / ranks;
  std::optional<nn::DistributedDataParallel> ddp;
  if (o.distributed) ddp.emplace(model);
  std::printf("%s: %s, %lld parameters, %d epoch(s) of %lld steps, batch %lld, Adam lr %g with "
              "cosine decay, device %s\n",
              name.c_str(), model.type_name().c_str(), (long long)model.num_parameters(), epochs,
              (long long)steps_per_epoch, (long long)bs, o.lr, tg::default_device().c_str());

  tg::optim::Adam opt(model.parameters(), {.lr = o.lr});
  // cosine decay of the learning rate over the run, per step: the compiled step reads the rate
  // from the optimizer's lr tensor, so the schedule needs no recapture
  tg::optim::CosineAnnealingLR schedule(opt, std::max<std::int64_t>(1, epochs * steps_per_epoch));
  auto step = tg::jit([&](Tensor x, Tensor y) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model(x), y);
    loss.realize(); // read before the parameters change
    loss.backward();
    opt.step();
    return loss;
  });

  // this rank's share of each epoch's shuffled order (all of it on one process)
  tg::distributed::DistributedSampler sampler(train.n, true, 42, false, ranks,
                                              o.distributed ? tg::distributed::rank() : 0);
  std::vector<float> losses;
  double acc = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    sampler.set_epoch(epoch);
    const std::vector<std::int64_t> order = sampler.indices();
    auto t0 = std::chrono::steady_clock::now();
    std::int64_t timed_from = 0; // the first epoch's first two steps compile and capture: not timed
    double loss_sum = 0;
    for (std::int64_t s = 0; s < steps_per_epoch; ++s) {
      Tensor x = batch_images(train, order, s * local_bs, local_bs),
             y = batch_labels(train, order, s * local_bs, local_bs);
      float loss = step(x, y).item<float>();
      schedule.step();
      losses.push_back(loss);
      loss_sum += loss;
      if (epoch == 1 && s == 1 && steps_per_epoch > 2) {
        std::printf("  first two steps (compiling and capturing the step): %.1f s\n",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        t0 = std::chrono::steady_clock::now();
        timed_from = 2;
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s % 5 == 0 || s + 1 == steps_per_epoch)
        progress(epoch, epochs, (s + 1) * bs, steps_per_epoch * bs, float(loss_sum / double(s + 1)),
                 double((s + 1 - timed_from) * bs) / std::max(secs, 1e-9), tty);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::int64_t timed = steps_per_epoch - timed_from;
    if (lead) acc = accuracy(model, test, o.quick ? 2000 : test.n);
    if (tty) std::printf("\n");
    std::printf(
        "  epoch %d/%d: train loss %.4f, %.0f samples/s (%.1f ms/step), test accuracy %.2f%%\n",
        epoch, epochs, loss_sum / double(steps_per_epoch), double(timed * bs) / secs,
        1e3 * secs / double(timed), 100 * acc);
    std::fflush(stdout);
  }

  if (!lead) return true; // rank 0 checks, saves and answers for the job
  // save, reload into a fresh model, check the accuracy is the same
  std::string path = o.out + "/fashion_mnist_" + name + ".safetensors";
  tg::safetensors::save_file(model, path,
                             {{"model", name}, {"test_accuracy", std::to_string(acc)}});
  std::unique_ptr<nn::Module> again = fresh();
  tg::safetensors::load_file(*again, path);
  double acc2 = accuracy(*again, test, o.quick ? 2000 : test.n);
  std::printf("  saved %s; reloaded: test accuracy %.2f%% (%s)\n", path.c_str(), 100 * acc2,
              acc2 == acc ? "same" : "DIFFERENT");
  bool ok = acc2 == acc;
  if (o.quick) {
    auto mean = [&](std::size_t b, std::size_t e) {
      return std::accumulate(losses.begin() + std::ptrdiff_t(b), losses.begin() + std::ptrdiff_t(e),
                             0.0) /
             double(e - b);
    };
    double first = mean(0, 20), last = mean(losses.size() - 20, losses.size());
    bool falls = last < 0.6 * first && acc > 0.6;
    std::printf("  quick check: mean loss of the first 20 steps %.3f, of the last 20 %.3f, "
                "accuracy %.1f%%: %s\n",
                first, last, 100 * acc, falls ? "ok" : "FAILED");
    return ok && falls;
  }
  bool reached = acc >= target;
  std::printf("  target %.0f%% after %d epoch(s): %s\n", 100 * target, epochs,
              reached ? "reached" : "NOT reached");
  return ok && reached;
}

} // namespace

int main(int argc, char** argv) {
  Options o;
  if (const char* d = std::getenv("TG_FASHION_MNIST")) o.data = d;
  if (const char* q = std::getenv("TG_QUICK"))
    o.quick = std::string(q) != "0" && std::string(q) != "";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data")
      o.data = next();
    else if (a == "--model")
      o.model = next();
    else if (a == "--epochs")
      o.epochs = std::stoi(next());
    else if (a == "--batch")
      o.batch = std::stoll(next());
    else if (a == "--lr")
      o.lr = std::stod(next());
    else if (a == "--out")
      o.out = next();
    else if (a == "--quick")
      o.quick = true;
    else if (a == "--distributed")
      o.distributed = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--data DIR] [--model mlp|cnn|both] [--epochs N] [--batch N] [--lr "
                   "X] [--out DIR] [--quick] [--distributed]\n",
                   argv[0]);
      return 2;
    }
  }
  if (o.model != "mlp" && o.model != "cnn" && o.model != "both") {
    std::fprintf(stderr, "--model must be mlp, cnn or both\n");
    return 2;
  }
  if (access((o.data + "/train-images-idx3-ubyte.gz").c_str(), R_OK) != 0) {
    std::printf("Fashion-MNIST not found in %s.\nInstall Debian's package dataset-fashion-mnist "
                "(sudo apt-get install "
                "dataset-fashion-mnist), or point --data / TG_FASHION_MNIST at a directory with "
                "the four *-ubyte.gz "
                "files.\n",
                o.data.c_str());
    return 77;
  }
  try {
    if (o.distributed) {
      tg::distributed::init_process_group("mpi");
      const int ranks = tg::distributed::world_size();
      if ((o.quick ? 64 : o.batch) % ranks != 0) {
        std::fprintf(stderr, "--batch must be a multiple of the number of processes (%d)\n", ranks);
        return 2;
      }
      // one voice: the other ranks' reports would repeat rank 0's
      if (tg::distributed::rank() != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;
      std::printf("data parallel: %d processes (mpi), each taking 1/%d of every batch\n", ranks,
                  ranks);
    }
    auto t0 = std::chrono::steady_clock::now();
    Dataset train = load_split(o.data, "train"), test = load_split(o.data, "t10k");
    std::printf("Fashion-MNIST: %lld training and %lld test images from %s (%.1f s)%s\n",
                (long long)train.n, (long long)test.n, o.data.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                o.quick ? "; quick mode (TG_QUICK): a subset, a few hundred steps" : "");
    bool ok = true;
    if (o.model != "cnn") {
      tg::manual_seed(0);
      MLP mlp;
      ok &= run("mlp", mlp, train, test, o, 2, 0.85, [] { return std::make_unique<MLP>(); });
    }
    if (o.model != "mlp") {
      tg::manual_seed(0);
      CNN cnn;
      ok &= run("cnn", cnn, train, test, o, 3, 0.89, [] { return std::make_unique<CNN>(); });
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
