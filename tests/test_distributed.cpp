// tg::distributed over MPI. CTest runs this program alone (one rank) and under mpirun with 2 and 3
// ranks (tests/CMakeLists.txt): every collective against the same computation done locally, for
// every dtype and op, empty, odd-sized and 0-d tensors, on CPU, INTERP and (staged through host
// memory) VULKAN, inside tg::jit replays; ranks that disagree; data-parallel training against one
// process with the whole batch. Every rank runs every case; each checks its own results.
#include <doctest/doctest.h>
#include <tg/distributed.hpp>
#include <tg/export.hpp>
#include <tg/vulkan.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace dist = tg::distributed;
using tg::Tensor;

namespace {

/// Joins the group on first use; false (with the reason printed once) where MPI cannot load.
bool group() {
  static const bool ok = [] {
    if (!dist::is_available()) {
      try { // init_process_group says why
        dist::init_process_group("mpi");
      } catch (const dist::distributed_error& e) {
        std::printf("test_distributed: skipped: %s\n", e.what());
      }
      return false;
    }
    // before the group: every call says what is missing; bad backends are named
    CHECK_THROWS_WITH_AS(dist::all_reduce(tg::ones({2})), doctest::Contains("no process group"),
                         dist::distributed_error);
    CHECK_THROWS_WITH_AS(dist::rank(), doctest::Contains("init_process_group"),
                         dist::distributed_error);
    CHECK(!dist::is_initialized());
    CHECK_THROWS_WITH_AS(dist::init_process_group("gloo"), doctest::Contains("unknown backend"),
                         dist::distributed_error);
    CHECK_THROWS_WITH_AS(dist::init_process_group("nccl"), doctest::Contains("not part of tg"),
                         dist::distributed_error);
    dist::init_process_group("mpi");
    CHECK(dist::is_initialized());
    CHECK(dist::get_backend() == "mpi");
    CHECK_THROWS_WITH_AS(dist::init_process_group("mpi"), doctest::Contains("already"),
                         dist::distributed_error);
    std::printf("test_distributed: rank %d of %d\n", dist::rank(), dist::world_size());
    return true;
  }();
  return ok;
}

/// Rank r's value at element i: small integers, so every dtype and every reduction is exact.
double value(tg::DType t, int r, std::int64_t i) {
  if (tg::is_bool(t)) return (i + r) % 3 == 0;
  if (tg::is_unsigned(t)) return double((i * 3 + r * 5) % 7);
  return double((i * 3 + r * 5) % 7 - 2);
}
Tensor input(tg::DType t, const tg::Shape& shape, int r, const std::string& device = "CPU") {
  std::int64_t n = 1;
  for (const auto& d : shape) n *= d.eval();
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = value(t, r, i);
  return Tensor::from_data(v, shape, {t, device});
}
double combine(dist::ReduceOp op, tg::DType t, double a, double b) {
  if (tg::is_bool(t))
    return op == dist::ReduceOp::Product || op == dist::ReduceOp::Min ? double(a && b)
                                                                      : double(a || b);
  switch (op) {
  case dist::ReduceOp::Product:
    return a * b;
  case dist::ReduceOp::Min:
    return std::min(a, b);
  case dist::ReduceOp::Max:
    return std::max(a, b);
  default:
    return a + b;
  }
}
/// What all_reduce must give at element i.
double reduced(dist::ReduceOp op, tg::DType t, std::int64_t i, int world) {
  double acc = value(t, 0, i);
  for (int r = 1; r < world; ++r) acc = combine(op, t, acc, value(t, r, i));
  if (op == dist::ReduceOp::Avg) acc /= world;
  return acc;
}

const tg::DType all_dtypes[] = {tg::bool_,    tg::int8,    tg::int16,  tg::int32,  tg::int64,
                                tg::uint8,    tg::uint16,  tg::uint32, tg::uint64, tg::float16,
                                tg::bfloat16, tg::float32, tg::float64};

} // namespace

TEST_CASE("distributed: all_reduce of every dtype and op, empty, odd-sized and 0-d tensors") {
  if (!group()) return;
  const int me = dist::rank(), world = dist::world_size();
  const std::vector<tg::Shape> shapes = {{7}, {3, 5}, {}, {0}, {2, 0, 3}};
  for (tg::DType t : all_dtypes)
    for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Product,
                              dist::ReduceOp::Min, dist::ReduceOp::Max}) {
      if (op == dist::ReduceOp::Avg && !tg::is_float(t)) {
        CHECK_THROWS_WITH_AS(dist::all_reduce(input(t, {3}, me), op),
                             doctest::Contains("floating-point"), dist::distributed_error);
        continue;
      }
      for (const tg::Shape& shape : shapes) {
        const std::string dtype = tg::dtype_name(t);
        CAPTURE(dtype);
        CAPTURE(int(op));
        CAPTURE(shape.size());
        Tensor r = dist::all_reduce(input(t, shape, me), op);
        CHECK(r.dtype() == t);
        CHECK(r.sym_shape() == shape);
        std::vector<double> got = r.to_vector<double>();
        // exact but for Avg's division, rounded to 16-bit floats
        const double eps = tg::is_half(t) ? 1e-2 : 1e-6;
        for (std::size_t i = 0; i < got.size(); ++i)
          CHECK(got[i] == doctest::Approx(reduced(op, t, std::int64_t(i), world)).epsilon(eps));
      }
    }
}

TEST_CASE("distributed: broadcast, all_gather and reduce_scatter") {
  if (!group()) return;
  const int me = dist::rank(), world = dist::world_size();
  for (tg::DType t : {tg::float32, tg::int64, tg::float16, tg::bool_, tg::uint8})
    for (int src = 0; src < world; ++src) {
      std::vector<double> got = dist::broadcast(input(t, {2, 3}, me), src).to_vector<double>();
      REQUIRE(got.size() == 6);
      for (std::size_t i = 0; i < 6; ++i) CHECK(got[i] == value(t, src, std::int64_t(i)));
    }
  // all_gather: every rank's tensor in rank order, as a list and concatenated along dim 0
  for (tg::DType t : {tg::float32, tg::int16, tg::bfloat16}) {
    Tensor mine = input(t, {3, 2}, me);
    std::vector<Tensor> parts = dist::all_gather(mine);
    REQUIRE(parts.size() == std::size_t(world));
    Tensor cat = dist::all_gather_into_tensor(mine);
    CHECK(cat.shape() == std::vector<std::int64_t>{3 * world, 2});
    std::vector<double> all = cat.to_vector<double>();
    for (int r = 0; r < world; ++r) {
      CHECK(parts[std::size_t(r)].shape() == std::vector<std::int64_t>{3, 2});
      std::vector<double> p = parts[std::size_t(r)].to_vector<double>();
      for (std::size_t i = 0; i < 6; ++i) {
        CHECK(p[i] == value(t, r, std::int64_t(i)));
        CHECK(all[std::size_t(r) * 6 + i] == value(t, r, std::int64_t(i)));
      }
    }
  }
  CHECK(dist::all_gather_into_tensor(Tensor::scalar(double(me))).to_vector<double>().size() ==
        std::size_t(world));
  // reduce_scatter: rank r gets part r of the sum
  for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Max, dist::ReduceOp::Avg}) {
    Tensor x = input(tg::float32, {2 * world, 3}, me);
    Tensor part = dist::reduce_scatter(x, op);
    CHECK(part.shape() == std::vector<std::int64_t>{2, 3});
    std::vector<double> got = part.to_vector<double>();
    for (std::size_t i = 0; i < 6; ++i)
      CHECK(got[i] == doctest::Approx(
                          reduced(op, tg::float32, std::int64_t(me * 6) + std::int64_t(i), world)));
  }
  if (world > 1)
    CHECK_THROWS_WITH_AS(dist::reduce_scatter(tg::ones({2 * world + 1})),
                         doctest::Contains("multiple of the number of ranks"),
                         dist::distributed_error);
  CHECK_THROWS_AS(dist::broadcast(tg::ones({2}), world), dist::distributed_error);
}

TEST_CASE("distributed: send and recv along a chain, and their checks") {
  if (!group()) return;
  const int me = dist::rank(), world = dist::world_size();
  CHECK_THROWS_WITH_AS(dist::send(tg::ones({2}), me), doctest::Contains("itself"),
                       dist::distributed_error);
  if (world == 1) return;
  // 0 -> 1 -> ... -> world-1 -> 0: each rank but 0 receives first, so nobody waits in a cycle
  const int next = (me + 1) % world, prev = (me + world - 1) % world;
  Tensor mine = input(tg::float64, {5}, me);
  Tensor got;
  if (me == 0) {
    dist::send(mine, next, 7);
    got = dist::recv(mine, prev, 7);
  } else {
    got = dist::recv(mine, prev, 7);
    dist::send(mine * 1, next, 7); // a lazy tensor: realized first
  }
  std::vector<double> v = got.to_vector<double>();
  for (std::size_t i = 0; i < 5; ++i) CHECK(v[i] == value(tg::float64, prev, std::int64_t(i)));
  // a recv of another shape: both sides fail, naming both calls
  if (me == 0) {
    CHECK_THROWS_WITH_AS(dist::send(tg::ones({4}), 1), doctest::Contains("[3]"),
                         dist::distributed_error);
  } else if (me == 1) {
    CHECK_THROWS_WITH_AS(dist::recv(tg::ones({3}), 0), doctest::Contains("[4]"),
                         dist::distributed_error);
  }
}

TEST_CASE("distributed: ranks that call different collectives fail together, naming each call") {
  if (!group()) return;
  const int me = dist::rank(), world = dist::world_size();
  if (world == 1) return;
  // shapes that differ
  CHECK_THROWS_WITH_AS(dist::all_reduce(tg::ones({me + 1})),
                       doctest::Contains("rank 1: all_reduce(sum) of float32 [2]"),
                       dist::distributed_error);
  // dtypes that differ
  CHECK_THROWS_WITH_AS(dist::all_reduce(tg::ones({3}, me == 0 ? tg::float32 : tg::float64)),
                       doctest::Contains("rank 0: all_reduce(sum) of float32 [3]"),
                       dist::distributed_error);
  // another collective
  if (me == 0)
    CHECK_THROWS_WITH_AS(dist::all_reduce(tg::ones({3})), doctest::Contains("broadcast"),
                         dist::distributed_error);
  else
    CHECK_THROWS_WITH_AS(dist::broadcast(tg::ones({3}), 0), doctest::Contains("all_reduce"),
                         dist::distributed_error);
  // the group is still usable
  CHECK(dist::all_reduce(tg::ones({2})).to_vector<float>() ==
        std::vector<float>{float(world), float(world)});
}

TEST_CASE("distributed: collectives are captured and replayed by tg::jit") {
  if (!group()) return;
  const int me = dist::rank(), world = dist::world_size();
  auto f = tg::jit([](Tensor x) {
    Tensor s = dist::all_reduce(x * 2);
    Tensor g = dist::all_gather_into_tensor(s + 1);
    return dist::broadcast(g.sum(0, true), 0) + x;
  });
  for (int call = 0; call < 5; ++call) {
    const float base = float(call * 10 + me);
    Tensor x = Tensor::from_data(std::vector<float>{base, base + 1, base + 2}, {1, 3});
    std::vector<float> got = f(x).to_vector<float>();
    for (int i = 0; i < 3; ++i) {
      float sum = 0;
      for (int r = 0; r < world; ++r) sum += 2 * float(call * 10 + r + i);
      CHECK(got[std::size_t(i)] == doctest::Approx(world * (sum + 1) + base + float(i)));
    }
  }
  CHECK(f.captured_launches() >= 3); // the collectives (and the kernels around them)
}

TEST_CASE("distributed: a collective in an exported method is refused") {
  if (!group()) return;
  tg::nn::Linear lin(3, 2);
  tg::ExportSpec spec;
  spec.method("forward", {{"x", tg::float32, {2, 3}}},
              [&](const std::vector<Tensor>& in) { return dist::all_reduce(lin(in[0])); });
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tg_dist_export_" + std::to_string(dist::rank())))
          .string();
  CHECK_THROWS_WITH_AS(tg::export_model(lin, spec, "json", dir),
                       doctest::Contains("collectives run in the process group"), tg::export_error);
}

TEST_CASE("distributed: tensors outside host memory are staged (INTERP, VULKAN)") {
  if (!group()) return;
  const int me = dist::rank(), world = dist::world_size();
  for (const std::string device : {"INTERP", "VULKAN"}) {
    bool available = false;
    for (const tg::DeviceInfo& d : tg::devices())
      if (d.name == device && d.available) available = true;
    if (!available) {
      std::printf("test_distributed: %s not available here: not tested\n", device.c_str());
      continue;
    }
    Tensor r = dist::all_reduce(input(tg::float32, {9}, me, device), dist::ReduceOp::Max);
    CHECK(r.device() == device);
    std::vector<float> got = r.to_vector<float>();
    for (std::size_t i = 0; i < 9; ++i)
      CHECK(got[i] == float(reduced(dist::ReduceOp::Max, tg::float32, std::int64_t(i), world)));
  }
}

TEST_CASE("distributed: DistributedSampler splits an epoch's permutation, the same on every rank") {
  if (!group()) return;
  const int world = dist::world_size();
  for (bool drop_last : {false, true}) {
    dist::DistributedSampler s(11, true, 5, drop_last);
    s.set_epoch(3);
    std::vector<std::int64_t> mine = s.indices();
    CHECK(std::int64_t(mine.size()) == s.num_samples());
    CHECK(s.num_samples() == (drop_last ? 11 / world : (11 + world - 1) / world));
    // every rank's part, gathered: distinct indices (padding repeats the first few)
    std::vector<std::int64_t> all =
        dist::all_gather_into_tensor(Tensor::from_data(mine, {s.num_samples()}))
            .to_vector<std::int64_t>();
    std::vector<int> seen(11, 0);
    for (std::int64_t i : all) {
      REQUIRE(i >= 0);
      REQUIRE(i < 11);
      ++seen[std::size_t(i)];
    }
    int missing = 0, repeated = 0;
    for (int c : seen) {
      missing += c == 0;
      repeated += c > 1 ? c - 1 : 0;
    }
    CHECK(repeated == (drop_last ? 0 : int(s.total_size()) - 11));
    CHECK(missing == (drop_last ? 11 - int(s.total_size()) : 0));
  }
  // another epoch, another order; no shuffle: rank r takes r, r + world, ...
  dist::DistributedSampler a(20, true, 1, false, 2, 0);
  std::vector<std::int64_t> e0 = a.indices();
  a.set_epoch(1);
  CHECK(a.indices() != e0);
  CHECK(dist::DistributedSampler(5, false, 0, false, 2, 1).indices() ==
        std::vector<std::int64_t>{1, 3, 0});
}

namespace {
struct Net : tg::nn::Module {
  tg::nn::Linear a{5, 8}, b{8, 3};
  Net() {
    register_module("a", a);
    register_module("b", b);
  }
  Tensor forward(const Tensor& x) override { return b(a(x).tanh()); }
};

/// 20 steps on a batch of `per_rank` samples per rank (`ranks` of them: 1 takes the whole batch),
/// the step compiled by tg::jit or not; the parameters after.
std::vector<std::vector<float>> train(bool adam, bool distributed, bool compiled) {
  const int world = dist::world_size(), me = dist::rank();
  const std::int64_t per_rank = 4, total = per_rank * world;
  tg::manual_seed(distributed ? std::uint64_t(100 + me) : 100); // DDP copies rank 0's
  Net net;
  std::unique_ptr<tg::nn::DistributedDataParallel> ddp;
  if (distributed) ddp = std::make_unique<tg::nn::DistributedDataParallel>(net);
  std::unique_ptr<tg::optim::Optimizer> opt;
  if (adam)
    opt = std::make_unique<tg::optim::Adam>(net.parameters(), tg::optim::AdamOptions{.lr = 0.01});
  else
    opt = std::make_unique<tg::optim::SGD>(net.parameters(),
                                           tg::optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
  auto step = [&](Tensor x, Tensor y) {
    opt->zero_grad();
    Tensor loss = tg::nn::functional::mse_loss(net(x), y);
    loss.realize();
    loss.backward();
    opt->step();
    return loss;
  };
  auto jitted = tg::jit(step);
  for (int s = 0; s < 20; ++s) {
    // the whole batch of this step; a rank takes its consecutive part
    std::vector<float> xs, ys;
    for (std::int64_t i = 0; i < total * 5; ++i) xs.push_back(float((i * 7 + s * 3) % 11) / 5 - 1);
    for (std::int64_t i = 0; i < total * 3; ++i) ys.push_back(float((i * 5 + s) % 7) / 3 - 1);
    Tensor x = Tensor::from_data(xs, {total, 5}), y = Tensor::from_data(ys, {total, 3});
    if (distributed) {
      x = x.slice(0, me * per_rank, (me + 1) * per_rank);
      y = y.slice(0, me * per_rank, (me + 1) * per_rank);
    }
    if (compiled)
      jitted(x.contiguous(), y.contiguous());
    else
      step(x, y);
  }
  if (distributed) CHECK(ddp->num_buckets() == (world > 1 ? 1u : 0u));
  std::vector<std::vector<float>> out;
  for (const Tensor& p : net.parameters()) out.push_back(p.to_vector<float>());
  return out;
}
} // namespace

TEST_CASE("distributed: DistributedDataParallel on N ranks equals one process with the whole "
          "batch (SGD and Adam, eager and compiled)") {
  if (!group()) return;
  for (bool adam : {false, true})
    for (bool compiled : {false, true}) {
      CAPTURE(adam);
      CAPTURE(compiled);
      std::vector<std::vector<float>> ref = train(adam, false, compiled);
      std::vector<std::vector<float>> got = train(adam, true, compiled);
      REQUIRE(got.size() == ref.size());
      for (std::size_t p = 0; p < ref.size(); ++p)
        for (std::size_t i = 0; i < ref[p].size(); ++i)
          CHECK(got[p][i] == doctest::Approx(ref[p][i]).epsilon(1e-4));
      // every rank holds the same parameters
      for (std::size_t p = 0; p < got.size(); ++p) {
        Tensor mine = Tensor::from_data(got[p], {std::int64_t(got[p].size())});
        CHECK((dist::all_reduce(mine, dist::ReduceOp::Max) -
               dist::all_reduce(mine, dist::ReduceOp::Min))
                  .abs()
                  .max()
                  .item<float>() == 0);
      }
    }
}

TEST_CASE("distributed: no_sync accumulates locally; the next backward averages the sum") {
  if (!group()) return;
  const int me = dist::rank(), world = dist::world_size();
  tg::manual_seed(7);
  Net net;
  tg::nn::DistributedDataParallel ddp(net);
  auto loss_on = [&](float v) {
    Tensor x = tg::full({2, 5}, double(v)), y = tg::zeros({2, 3});
    return tg::nn::functional::mse_loss(ddp(x), y);
  };
  // the spread of a gradient over the ranks (0: every rank holds the same)
  auto spread = [](const Tensor& g) {
    return (dist::all_reduce(g, dist::ReduceOp::Max) - dist::all_reduce(g, dist::ReduceOp::Min))
        .abs()
        .max()
        .item<float>();
  };
  {
    auto guard = ddp.no_sync();
    loss_on(float(me + 1)).backward();
  }
  const Tensor& w = net.a.weight;
  Tensor local1 = w.grad().contiguous().realize();
  if (world > 1) CHECK(spread(local1) > 0);
  // what the synced backward must give: the average over ranks of both backwards' sum
  Tensor local2;
  {
    tg::manual_seed(7);
    Net plain;
    tg::nn::functional::mse_loss(plain(tg::full({2, 5}, 0.5)), tg::zeros({2, 3})).backward();
    local2 = plain.a.weight.grad();
  }
  Tensor want = dist::all_reduce(local1 + local2, dist::ReduceOp::Avg);
  loss_on(0.5f).backward();
  CHECK(ddp.num_buckets() == (world > 1 ? 1u : 0u));
  CHECK(spread(w.grad()) == 0);
  CHECK((w.grad() - want).abs().max().item<float>() < 1e-5f);
  // nothing new: averaging again changes nothing
  tg::LazyPtr before = w.grad().lazy();
  ddp.average_gradients();
  CHECK(w.grad().lazy() == before);
}
