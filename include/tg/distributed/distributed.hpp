#pragma once
// tg::distributed (torch.distributed's names): a process group over MPI, collectives on tensors,
// nn::DistributedDataParallel and DistributedSampler. Declared here, defined in
// tg/impl/distributed.hpp; docs/distributed.md has the whole story.
#include <cstdint>
#include <string>
#include <vector>

#include "../nn/module.hpp"
#include "../util/rc.hpp"

namespace tg::distributed {

/// A collective or process-group failure: ranks that disagree on a collective (its kind, shape,
/// dtype or order), a rank that does not answer within the group's timeout (TG_DIST_TIMEOUT), an
/// MPI error, or a group used before init_process_group.
struct distributed_error : error {
  using error::error;
};

/// How all_reduce and reduce_scatter combine the ranks' values. Avg is for floating-point dtypes;
/// on bool, Sum and Max are a logical or, Product and Min a logical and.
enum class ReduceOp { Sum, Avg, Product, Min, Max };

/// Whether the "mpi" backend's library (Open MPI's libmpi.so.40, opened with dlopen) loads here.
TG_API bool is_available();
/// Joins the process group of the processes the launcher started (mpirun, srun): every process of
/// the job calls it once before any collective. backend: "mpi" (every device; tensors not in host
/// memory are staged through it). timeout_seconds: how long a collective waits for the other ranks
/// before it throws distributed_error (0: TG_DIST_TIMEOUT, else 600). Where RANK or WORLD_SIZE are
/// set (torchrun's convention) they must agree with the launcher's.
TG_API void init_process_group(const std::string& backend = "mpi", double timeout_seconds = 0,
                               std::source_location loc = std::source_location::current());
TG_API bool is_initialized();
/// Leaves the group (MPI_Finalize). At exit this happens by itself; after a failure it is skipped
/// (the launcher then ends the other ranks).
TG_API void destroy_process_group();
/// This process's rank in [0, world_size()), the number of processes, and its rank among the
/// processes of its machine (which GPU it should use).
TG_API int rank();
TG_API int world_size();
TG_API int local_rank();
TG_API std::string get_backend();
/// Waits until every rank has called it.
TG_API void barrier(std::source_location loc = std::source_location::current());

// Collectives. Every rank calls the same ones in the same order, with tensors of the same shape
// and dtype (checked: a difference is a distributed_error on every rank, naming each rank's call).
// Each returns new tensors on the input's device and is one step of device work, which tg::jit
// captures and replays like a kernel. Inputs are realized first; the results are realized.

/// The element-wise combination of every rank's `t` (torch.distributed.all_reduce, returned
/// rather than written into t: tg::assign(t, all_reduce(t)) writes it).
TG_API Tensor all_reduce(const Tensor& t, ReduceOp op = ReduceOp::Sum,
                         std::source_location loc = std::source_location::current());
/// Rank `src`'s `t`, on every rank (the others' `t` gives the shape and dtype).
TG_API Tensor broadcast(const Tensor& t, int src,
                        std::source_location loc = std::source_location::current());
/// Every rank's `t`, in rank order.
TG_API std::vector<Tensor> all_gather(const Tensor& t,
                                      std::source_location loc = std::source_location::current());
/// Every rank's `t` concatenated along dim 0 (a 0-d t: shape [world_size]).
TG_API Tensor all_gather_into_tensor(const Tensor& t,
                                     std::source_location loc = std::source_location::current());
/// all_reduce's result split along dim 0 into world_size() parts; rank r gets part r
/// (torch.distributed.reduce_scatter_tensor). t.shape(0) must be a multiple of world_size().
TG_API Tensor reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::Sum,
                             std::source_location loc = std::source_location::current());
/// Sends `t` to rank `dst`, which calls recv with a tensor of the same shape and dtype and the
/// same tag. Returns when `t` has been handed over (its memory may be reused).
TG_API void send(const Tensor& t, int dst, int tag = 0,
                 std::source_location loc = std::source_location::current());
/// The tensor rank `src` sends with this tag; `like` gives its shape, dtype and device.
TG_API Tensor recv(const Tensor& like, int src, int tag = 0,
                   std::source_location loc = std::source_location::current());

/// Which samples of a dataset of `size` this rank takes, as torch.utils.data.DistributedSampler:
/// the indices (shuffled with a permutation drawn from seed + epoch, the same on every rank) are
/// padded by repetition to a multiple of the number of ranks (or, with drop_last, cut to one),
/// and rank r takes every num_replicas-th from r. Call set_epoch(e) before each epoch.
class DistributedSampler {
public:
  /// num_replicas and rank: -1 for the process group's.
  TG_API explicit DistributedSampler(std::int64_t size, bool shuffle = true, std::uint64_t seed = 0,
                                     bool drop_last = false, int num_replicas = -1, int rank = -1,
                                     std::source_location loc = std::source_location::current());
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  /// This rank's indices for the current epoch (num_samples() of them).
  TG_API std::vector<std::int64_t> indices() const;
  std::int64_t num_samples() const { return num_samples_; }
  std::int64_t total_size() const { return num_samples_ * replicas_; }

private:
  std::int64_t size_, epoch_ = 0, num_samples_;
  bool shuffle_, drop_last_;
  std::uint64_t seed_;
  int replicas_, rank_;
};

} // namespace tg::distributed

namespace tg::nn {

/// Data-parallel training (torch.nn.parallel.DistributedDataParallel): every rank holds the whole
/// model and trains on its part of each batch. Made once per model, on every rank: it copies rank
/// 0's parameters and buffers to the others, and from then on every backward() that gives the
/// model's parameters gradients ends with their average over the ranks (all_reduce in buckets of
/// up to bucket_cap_mb megabytes), so each rank's optimizer makes the same step. Inside a tg::jit
/// training step the all-reduces are captured with the kernels. The model is used as before
/// (model(x), or this object's operator()); its parameter names do not change.
class DistributedDataParallel {
public:
  TG_API explicit DistributedDataParallel(
      Module& module, double bucket_cap_mb = 25,
      std::source_location loc = std::source_location::current());
  TG_API ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  Tensor operator()(const Tensor& x) { return module_(x); }
  Module& module() { return module_; }
  /// While the returned guard lives, backward() only accumulates gradients locally (PyTorch's
  /// no_sync(), for gradient accumulation): the first backward() after it averages the sum.
  struct NoSync {
    DistributedDataParallel* ddp;
    explicit NoSync(DistributedDataParallel* d) : ddp(d) { ddp->sync_ = false; }
    ~NoSync() { ddp->sync_ = true; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(this); }
  /// Averages the gradients now, unless they are the ones the last average made (what the hook
  /// after backward() does).
  TG_API void average_gradients();
  /// The buckets of the last average: how many all-reduces a backward() makes.
  std::size_t num_buckets() const { return buckets_; }

private:
  Module& module_;
  double bucket_bytes_;
  std::vector<WeakRc<LazyNode>> averaged_; // the gradients the last average set
  std::size_t hook_ = 0, buckets_ = 0;
  bool sync_ = true;
};

} // namespace tg::nn
