#pragma once
// tg::distributed's process group and collectives over MPI (distributed/mpi.hpp), and
// nn::DistributedDataParallel (declared in distributed/distributed.hpp).
//
// A collective is a Runner: what it does to its buffers is one MPI call, so tg::jit records it
// with the kernels and replays it on the same buffers. Before a collective runs eagerly, every
// rank tells the others what it is about to do (a small all-gather on a communicator of its own),
// so ranks that disagree fail together with each rank's call named rather than corrupting data or
// hanging; a replay repeats checked calls and skips that. Those checks poll non-blocking requests
// against the group's timeout and throw. The data moves through MPI's blocking calls (faster in
// Open MPI), which cannot be abandoned: a watchdog thread ends the process, saying why, when one
// outlasts the timeout.
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "../distributed/distributed.hpp"
#include "../distributed/mpi.hpp"
#include "../engine/realize.hpp"
#include "../util/rc.hpp"

namespace tg::distributed {
namespace detail {

enum class Kind : std::int64_t { AllReduce = 1, Broadcast, AllGather, ReduceScatter, Send, Recv };

inline const char* kind_name(Kind k) {
  constexpr const char* names[] = {
      "", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "send", "recv"};
  return names[static_cast<int>(k)];
}
inline const char* reduce_name(ReduceOp op) {
  constexpr const char* names[] = {"sum", "avg", "product", "min", "max"};
  return names[static_cast<int>(op)];
}

/// What a rank is about to do: the header ranks compare before a collective.
struct Call {
  Kind kind;
  DType dtype;
  ReduceOp op = ReduceOp::Sum;
  int peer = -1; // broadcast's source, send's destination, recv's source
  int tag = 0;
  std::vector<std::int64_t> shape = {};
};

inline constexpr std::size_t kHeaderWords = 16, kHeaderDims = 9;
using Header = std::array<std::int64_t, kHeaderWords>;

inline Header encode(const Call& c, std::int64_t seq) {
  Header h{};
  h[0] = seq;
  h[1] = static_cast<std::int64_t>(c.kind);
  h[2] = static_cast<std::int64_t>(c.op);
  h[3] = static_cast<std::int64_t>(c.dtype);
  h[4] = c.peer;
  h[5] = c.tag;
  h[6] = std::int64_t(c.shape.size());
  // dimensions beyond the ninth: folded into the last word (a difference is still seen)
  for (std::size_t d = 0; d < c.shape.size(); ++d) {
    std::size_t w = 7 + std::min(d, kHeaderDims - 1);
    h[w] = d < kHeaderDims - 1 ? c.shape[d] : h[w] * 1000003 + c.shape[d];
  }
  return h;
}

inline std::string describe(const Header& h) {
  const auto kind = static_cast<Kind>(h[1]);
  if (h[1] < 1 || h[1] > 6) return "an unknown call";
  std::string s = kind_name(kind);
  if (kind == Kind::AllReduce || kind == Kind::ReduceScatter)
    s += std::string("(") + reduce_name(static_cast<ReduceOp>(h[2])) + ")";
  s += std::string(" of ") + dtype_name(static_cast<DType>(h[3])) + " [";
  for (std::int64_t d = 0; d < h[6]; ++d)
    s += (d ? ", " : "") + (d < std::int64_t(kHeaderDims) ? std::to_string(h[std::size_t(7 + d)])
                                                          : std::string("..."));
  s += "]";
  if (kind == Kind::Broadcast) s += " from rank " + std::to_string(h[4]);
  if (kind == Kind::Send) s += " to rank " + std::to_string(h[4]);
  if (kind == Kind::Recv) s += " from rank " + std::to_string(h[4]);
  if (kind == Kind::Send || kind == Kind::Recv) s += " with tag " + std::to_string(h[5]);
  return s;
}

struct Group {
  Mpi* mpi = nullptr;
  Handle comm = nullptr;  // the collectives' data
  Handle check = nullptr; // the headers compared before them
  int rank = 0, size = 1, local_rank = 0;
  double timeout = 600;
  std::string backend;
  std::int64_t seq = 0; // collectives checked so far
  std::string failed;   // why the group can no longer be used ("" while it can)
  bool initialized_mpi = false;
  Handle half_ops[2][4] = {}; // [float16, bfloat16][sum, product, min, max]
};

/// Why a wait ended: the same words from a check's exception and from the watchdog.
inline std::string timeout_message(int rank, double timeout, const std::string& what) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", timeout);
  return "rank " + std::to_string(rank) + " waited " + secs +
         " s (the group's timeout, TG_DIST_TIMEOUT) for the other ranks in " + what +
         ": a rank died, is stuck, or called other collectives";
}

/// Watches the blocking call in progress: past the timeout it prints why and ends the process
/// (exit status 1), so that a stuck collective never hangs the job; the launcher then ends the
/// other ranks. Arming costs two atomic stores; the thread wakes every timeout / 20.
struct Watchdog {
  std::atomic<std::int64_t> since{0}; // steady-clock nanoseconds the call began; 0: none
  std::atomic<const char*> what{nullptr};
  std::atomic<bool> stop{false};
  double timeout = 600;
  int rank = 0;
  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void watch() {
    const auto period = std::chrono::duration<double>(std::min(timeout / 20, 1.0));
    while (!stop.load()) {
      std::this_thread::sleep_for(period);
      const std::int64_t t = since.load();
      if (t && double(now_ns() - t) * 1e-9 > timeout && since.load() == t) {
        std::fprintf(stderr,
                     "tg.distributed.%s: %s. A blocking MPI call cannot be abandoned: ending "
                     "this process.\n",
                     what.load(), timeout_message(rank, timeout, what.load()).c_str());
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }
};
inline Watchdog& watchdog() {
  static Watchdog* w = new Watchdog; // outlives exit: its detached thread may still read it
  return *w;
}
struct Watched {
  explicit Watched(const char* what) {
    watchdog().what.store(what);
    watchdog().since.store(Watchdog::now_ns());
  }
  ~Watched() { watchdog().since.store(0); }
  Watched(const Watched&) = delete;
  Watched& operator=(const Watched&) = delete;
};

inline std::mutex& group_mutex() {
  static std::mutex m;
  return m;
}
inline std::unique_ptr<Group>& group_slot() {
  static std::unique_ptr<Group> g;
  return g;
}
inline bool& mpi_finalized() {
  static bool f = false;
  return f;
}

[[noreturn]] inline void fail(const std::string& op, const std::string& msg,
                              const std::source_location& loc) {
  tg::detail::fail<distributed_error>("distributed." + op, msg, loc);
}

/// The group, which must exist and (unless only its description is read) not have failed.
inline Group& group(const std::string& op, const std::source_location& loc,
                    bool failed_too = false) {
  Group* g = group_slot().get();
  if (!g)
    fail(op, "no process group: call tg::distributed::init_process_group() first (on every rank)",
         loc);
  if (!failed_too && !g->failed.empty())
    fail(op, "the process group failed earlier and can no longer be used: " + g->failed, loc);
  return *g;
}

inline void check_rc(Group& g, int rc, const std::string& op, const std::string& what,
                     const std::source_location& loc) {
  if (rc == 0) return;
  g.failed = "rank " + std::to_string(g.rank) + "'s " + what + " failed: " + g.mpi->describe(rc);
  fail(op, g.failed, loc);
}

/// Waits for MPI requests, polling, until the group's timeout: then the group is failed.
inline void wait(Group& g, Handle* reqs, int n, const std::string& op, const std::string& what,
                 const std::source_location& loc) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (int i = 0; i < n; ++i) {
    int done = 0;
    for (long polls = 0;; ++polls) {
      check_rc(g, g.mpi->Test(&reqs[i], &done, nullptr), op, what, loc);
      if (done) break;
      if (polls < 256) continue;
      const double waited = std::chrono::duration<double>(clock::now() - start).count();
      if (waited > g.timeout) {
        g.failed = timeout_message(g.rank, g.timeout, what);
        fail(op, g.failed + ". The process group can no longer be used", loc);
      }
      // a short wait is spun (latency); a long one sleeps, leaving the core to the other ranks
      if (waited < 0.002)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

/// Every rank's header, compared: a difference fails every rank, naming each rank's call.
inline void check_collective(Group& g, const Call& c, const std::source_location& loc) {
  const std::string op = kind_name(c.kind);
  const Header mine = encode(c, g.seq++);
  std::vector<std::int64_t> all(kHeaderWords * std::size_t(g.size));
  Handle req = nullptr;
  const Handle i64 = g.mpi->types[static_cast<int>(DType::Int64)];
  check_rc(g,
           g.mpi->Iallgather(mine.data(), int(kHeaderWords), i64, all.data(), int(kHeaderWords),
                             i64, g.check, &req),
           op, op, loc);
  wait(g, &req, 1, op, "the check before collective " + std::to_string(mine[0]) + " (" + op + ")",
       loc);
  bool same = true;
  for (int r = 1; r < g.size && same; ++r)
    same = std::equal(all.begin(), all.begin() + kHeaderWords, all.begin() + r * kHeaderWords);
  if (same) return;
  std::string msg = "the ranks called different collectives:";
  for (int r = 0; r < g.size; ++r) {
    Header h;
    std::copy_n(all.begin() + r * kHeaderWords, kHeaderWords, h.begin());
    msg += (r ? "; " : " ") + std::string("rank ") + std::to_string(r) + ": " + describe(h) +
           " (its collective " + std::to_string(h[0]) + ")";
  }
  fail(op,
       msg + ". Every rank must call the same collectives, in the same order, on tensors of "
             "the same shape and dtype",
       loc);
}

/// A send's and its recv's headers, exchanged: a difference fails both.
inline void check_p2p(Group& g, const Call& c, const std::source_location& loc) {
  const std::string op = kind_name(c.kind);
  const Header mine = encode(c, 0);
  Header theirs{};
  const Handle i64 = g.mpi->types[static_cast<int>(DType::Int64)];
  Handle reqs[2] = {nullptr, nullptr};
  const std::string what = op + " with rank " + std::to_string(c.peer);
  if (c.kind == Kind::Send) { // the header, then the receiver's answer
    check_rc(g, g.mpi->Isend(mine.data(), int(kHeaderWords), i64, c.peer, c.tag, g.check, &reqs[0]),
             op, what, loc);
    check_rc(g,
             g.mpi->Irecv(theirs.data(), int(kHeaderWords), i64, c.peer, c.tag, g.check, &reqs[1]),
             op, what, loc);
    wait(g, reqs, 2, op, what, loc);
  } else {
    check_rc(g,
             g.mpi->Irecv(theirs.data(), int(kHeaderWords), i64, c.peer, c.tag, g.check, &reqs[0]),
             op, what, loc);
    wait(g, reqs, 1, op, what, loc);
    check_rc(g, g.mpi->Isend(mine.data(), int(kHeaderWords), i64, c.peer, c.tag, g.check, &reqs[1]),
             op, what, loc);
    wait(g, reqs + 1, 1, op, what, loc);
  }
  // the same dtype and shape, and each the other's peer
  const bool match = theirs[1] == std::int64_t(c.kind == Kind::Send ? Kind::Recv : Kind::Send) &&
                     theirs[3] == mine[3] && theirs[4] == g.rank &&
                     std::equal(mine.begin() + 6, mine.end(), theirs.begin() + 6);
  if (!match)
    fail(op,
         "rank " + std::to_string(g.rank) + " calls " + describe(mine) + ", and rank " +
             std::to_string(c.peer) + " calls " + describe(theirs),
         loc);
}

template <class H, int K> void half_reduce(void* in, void* inout, int* len, Handle*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = H::to_float(a[i]), y = H::to_float(b[i]);
    const float r = K == 0 ? x + y : K == 1 ? x * y : K == 2 ? (y < x ? y : x) : (y > x ? y : x);
    b[i] = H::from_float(r);
  }
}

inline Handle mpi_op(const Group& g, ReduceOp op, DType t) {
  const Mpi& m = *g.mpi;
  if (is_half(t)) {
    const int k = op == ReduceOp::Product ? 1
                  : op == ReduceOp::Min   ? 2
                  : op == ReduceOp::Max   ? 3
                                          : 0;
    return g.half_ops[t == DType::BFloat16][k];
  }
  if (is_bool(t)) return op == ReduceOp::Product || op == ReduceOp::Min ? m.op_land : m.op_lor;
  switch (op) {
  case ReduceOp::Product:
    return m.op_prod;
  case ReduceOp::Min:
    return m.op_min;
  case ReduceOp::Max:
    return m.op_max;
  default:
    return m.op_sum; // Sum, and Avg's sum (divided afterwards)
  }
}

/// One collective as device work: what tg::jit records and replays.
class CollectiveRunner : public Runner {
public:
  CollectiveRunner(Call c, SInt count, std::vector<Var> vars, Rc<Device> dev)
      : call_(std::move(c)), count_(std::move(count)), vars_(std::move(vars)),
        dev_(std::move(dev)) {
    name = kind_name(call_.kind);
    if (call_.kind == Kind::AllReduce || call_.kind == Kind::ReduceScatter)
      name += std::string("_") + reduce_name(call_.op);
  }
  /// buffers: the output, then the input (send: the input; recv: the output).
  void run(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars) override {
    execute(buffers, vars, std::source_location::current());
  }
  void execute(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars,
               const std::source_location& loc) {
    const std::string op = kind_name(call_.kind);
    Group& g = group(op, loc);
    const std::int64_t n = vars_.empty() ? count_.eval() : eval_sint(count_, vars_, vars);
    if (n == 0) return;
    if (n > INT_MAX)
      fail(op,
           "a tensor of " + std::to_string(n) +
               " elements: MPI counts are int; split it into parts of at most 2^31 - 1",
           loc);
    const int count = int(n), world = g.size;
    const std::size_t item = std::size_t(itemsize(call_.dtype));
    const bool has_out = call_.kind != Kind::Send, has_in = call_.kind != Kind::Recv;
    const std::int64_t out_n = call_.kind == Kind::AllGather       ? n * world
                               : call_.kind == Kind::ReduceScatter ? n / world
                                                                   : n;
    void* out = has_out ? buffers[0] : nullptr;
    const void* in = call_.kind == Kind::Send ? buffers[0] : has_in ? buffers[1] : nullptr;
    // tensors outside host memory go through it (a copy each way)
    std::vector<unsigned char> host_in, host_out;
    const bool staged = !dev_->host_memory();
    if (staged) {
      if (has_in) {
        host_in.resize(std::size_t(n) * item);
        dev_->copy_out(host_in.data(), in, host_in.size());
        in = host_in.data();
      }
      if (has_out) {
        host_out.resize(std::size_t(out_n) * item);
        out = host_out.data();
      }
    }
    const Mpi& m = *g.mpi;
    const Handle type = m.types[static_cast<int>(call_.dtype)];
    const Handle reduce = mpi_op(g, call_.op, call_.dtype);
    int rc = 0;
    {
      Watched watched(kind_name(call_.kind));
      switch (call_.kind) {
      case Kind::AllReduce:
        rc = m.Allreduce(in, out, count, type, reduce, g.comm);
        break;
      case Kind::Broadcast:
        if (g.rank == call_.peer) std::memcpy(out, in, std::size_t(n) * item);
        rc = m.Bcast(out, count, type, call_.peer, g.comm);
        break;
      case Kind::AllGather:
        rc = m.Allgather(in, count, type, out, count, type, g.comm);
        break;
      case Kind::ReduceScatter:
        rc = m.Reduce_scatter_block(in, out, int(out_n), type, reduce, g.comm);
        break;
      case Kind::Send:
        rc = m.Send(in, count, type, call_.peer, call_.tag, g.comm);
        break;
      case Kind::Recv:
        rc = m.Recv(out, count, type, call_.peer, call_.tag, g.comm, nullptr);
        break;
      }
    }
    if (rc != 0)
      check_rc(g, rc, op, op + " (" + name + " of " + std::to_string(n) + " elements)", loc);
    if (staged && has_out) dev_->copy_in(buffers[0], host_out.data(), host_out.size());
  }

private:
  Call call_;
  SInt count_;
  std::vector<Var> vars_;
  Rc<Device> dev_;
};

/// t as a realized buffer of its own layout.
inline Tensor realized(const Tensor& t) {
  Tensor r = t;
  if (r.lazy()->op != Op::Buffer) r = r.contiguous().realize();
  return r;
}

/// Checks the call with the other ranks (eagerly; a replay repeats checked calls), runs it, and
/// records it for tg::jit. Returns the output tensor (undefined for send).
inline Tensor run_collective(Call c, const Tensor& input, const Shape& out_shape,
                             const std::source_location& loc) {
  const std::string op = kind_name(c.kind);
  if (tg::detail::active_export())
    throw export_error("tg.export: " + op +
                       " in an exported method: collectives run in the process group of a live "
                       "program and cannot be exported" +
                       tg::detail::where(loc));
  Group& g = group(op, loc);
  Tensor in = c.kind == Kind::Recv ? input : realized(input); // (recv's: only its shape and dtype)
  for (const SInt& d : in.sym_shape()) c.shape.push_back(d.eval());
  if (c.kind == Kind::Send || c.kind == Kind::Recv)
    check_p2p(g, c, loc);
  else
    check_collective(g, c, loc);
  tg::detail::Capture* capture = tg::detail::active_capture();
  const SInt count = prod(in.sym_shape());
  std::vector<Var> vars;
  count.collect_vars(vars);
  std::vector<std::int64_t> values;
  for (const Var& v : vars) values.push_back(v.value);
  auto dev = tg::device(in.device());
  auto runner = make_rc<CollectiveRunner>(c, count, vars, dev);
  Rc<Buffer> out;
  std::vector<Rc<Buffer>> buffers;
  if (c.kind != Kind::Send) {
    const SInt n = prod(out_shape);
    out = make_rc<Buffer>(dev, in.dtype(), capture ? n.max_value() : n.eval());
    buffers.push_back(out);
  }
  if (c.kind != Kind::Recv) buffers.push_back(in.lazy()->buffer);
  std::vector<void*> ptrs;
  for (const auto& b : buffers) ptrs.push_back(b->ptr);
  runner->execute(ptrs, values, loc);
  if (tg::detail::Trace* trace = tg::detail::active_trace())
    trace->steps.push_back("collective " + describe(encode(c, 0)));
  if (capture) capture->launches.push_back(tg::detail::Launch{runner, buffers, vars, 0});
  if (!out) return Tensor();
  Tensor r = Tensor::make(Op::Buffer, in.dtype(), out_shape, {}, in.device());
  r.lazy()->buffer = std::move(out);
  return r;
}

inline void check_reduce_op(ReduceOp op, DType t, const char* name,
                            const std::source_location& loc) {
  if (op == ReduceOp::Avg && !is_float(t))
    fail(name,
         std::string("ReduceOp::Avg needs a floating-point tensor, got ") + dtype_name(t) +
             " (use Sum and divide)",
         loc);
}

inline void check_rank(const Group& g, int r, const char* op, const char* what,
                       const std::source_location& loc) {
  if (r < 0 || r >= g.size)
    fail(op,
         std::string(what) + " " + std::to_string(r) + " is not a rank of this group of " +
             std::to_string(g.size),
         loc);
}

inline void finalize_at_exit() {
  std::lock_guard<std::mutex> lock(group_mutex());
  std::unique_ptr<Group>& g = group_slot();
  // a failed group may have requests that never finish: MPI_Finalize could wait for them forever,
  // so the process exits without it (the launcher then ends the other ranks)
  if (!g || !g->failed.empty()) return;
  if (g->initialized_mpi && !mpi_finalized()) {
    g->mpi->Finalize();
    mpi_finalized() = true;
  }
  g.reset();
}

} // namespace detail

TG_API bool is_available() { return detail::mpi().ok(); }

TG_API void init_process_group(const std::string& backend, double timeout_seconds,
                               std::source_location loc) {
  using detail::fail;
  std::lock_guard<std::mutex> lock(detail::group_mutex());
  if (detail::group_slot())
    fail("init_process_group", "the process group is already initialized", loc);
  if (backend == "nccl")
    fail("init_process_group",
         "the nccl backend is not part of tg yet; the mpi backend takes CUDA tensors too "
         "(through host memory)",
         loc);
  if (backend != "mpi")
    fail("init_process_group", "unknown backend '" + backend + "' (tg has: mpi)", loc);
  if (detail::mpi_finalized())
    fail("init_process_group",
         "MPI was finalized (destroy_process_group) and cannot start again in this process", loc);
  detail::Mpi& m = detail::mpi();
  if (!m.ok()) fail("init_process_group", m.error, loc);
  auto g = std::make_unique<detail::Group>();
  g->mpi = &m;
  g->backend = backend;
  int initialized = 0;
  m.Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (int rc = m.Init_thread(nullptr, nullptr, detail::kThreadSerialized, &provided); rc != 0)
      fail("init_process_group", "MPI_Init_thread failed: " + m.describe(rc), loc);
    g->initialized_mpi = true;
  }
  // communicators of tg's own: the program's own MPI messages never meet tg's
  if (m.Comm_dup(m.comm_world, &g->comm) != 0 || m.Comm_dup(m.comm_world, &g->check) != 0)
    fail("init_process_group", "MPI_Comm_dup failed", loc);
  m.Comm_set_errhandler(g->comm, m.errors_return);
  m.Comm_set_errhandler(g->check, m.errors_return);
  m.Comm_rank(g->comm, &g->rank);
  m.Comm_size(g->comm, &g->size);
  for (const char* var : {"RANK", "WORLD_SIZE"})
    if (std::string v = env::get(var); !v.empty()) {
      const int want = var[0] == 'R' ? g->rank : g->size;
      if (v != std::to_string(want))
        fail("init_process_group",
             std::string(var) + "=" + v + " but MPI " +
                 (var[0] == 'R' ? "gave this process rank " : "started ") + std::to_string(want) +
                 (var[0] == 'R' ? "" : " process(es)") +
                 ": the mpi backend's processes are started by mpirun (or srun), which sets both",
             loc);
    }
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID"})
    if (std::string v = env::get(var); !v.empty()) {
      g->local_rank = std::atoi(v.c_str());
      break;
    }
  g->timeout = timeout_seconds > 0 ? timeout_seconds : 600;
  if (timeout_seconds <= 0)
    if (std::string v = env::get("TG_DIST_TIMEOUT"); !v.empty()) {
      char* end = nullptr;
      const double s = std::strtod(v.c_str(), &end);
      if (!end || *end || !(s > 0))
        fail("init_process_group", "TG_DIST_TIMEOUT=" + v + " is not a positive number of seconds",
             loc);
      g->timeout = s;
    }
  using detail::half_reduce;
  const detail::UserFn fns[2][4] = {
      {half_reduce<half, 0>, half_reduce<half, 1>, half_reduce<half, 2>, half_reduce<half, 3>},
      {half_reduce<bfloat16_t, 0>, half_reduce<bfloat16_t, 1>, half_reduce<bfloat16_t, 2>,
       half_reduce<bfloat16_t, 3>}};
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < 4; ++k) m.Op_create(fns[t][k], 1, &g->half_ops[t][k]);
  static const bool at_exit = (std::atexit(detail::finalize_at_exit), true);
  (void)at_exit;
  detail::Watchdog& w = detail::watchdog();
  w.timeout = g->timeout;
  w.rank = g->rank;
  w.stop = false;
  std::thread([&w] { w.watch(); }).detach();
  detail::group_slot() = std::move(g);
}

TG_API bool is_initialized() { return detail::group_slot() != nullptr; }

TG_API void destroy_process_group() {
  std::lock_guard<std::mutex> lock(detail::group_mutex());
  std::unique_ptr<detail::Group>& g = detail::group_slot();
  if (!g) return;
  detail::watchdog().stop = true;
  if (g->failed.empty()) {
    g->mpi->Comm_free(&g->comm);
    g->mpi->Comm_free(&g->check);
    if (g->initialized_mpi) {
      g->mpi->Finalize();
      detail::mpi_finalized() = true;
    }
  }
  g.reset();
}

TG_API int rank() { return detail::group("rank", std::source_location::current(), true).rank; }
TG_API int world_size() {
  return detail::group("world_size", std::source_location::current(), true).size;
}
TG_API int local_rank() {
  return detail::group("local_rank", std::source_location::current(), true).local_rank;
}
TG_API std::string get_backend() {
  return detail::group("get_backend", std::source_location::current(), true).backend;
}

TG_API void barrier(std::source_location loc) {
  detail::Group& g = detail::group("barrier", loc);
  detail::Handle req = nullptr;
  detail::check_rc(g, g.mpi->Ibarrier(g.comm, &req), "barrier", "barrier", loc);
  detail::wait(g, &req, 1, "barrier", "barrier", loc);
}

TG_API Tensor all_reduce(const Tensor& t, ReduceOp op, std::source_location loc) {
  detail::check_reduce_op(op, t.dtype(), "all_reduce", loc);
  detail::Call c{detail::Kind::AllReduce, t.dtype(), op};
  Tensor r = detail::run_collective(c, t, t.sym_shape(), loc);
  if (op == ReduceOp::Avg) return r / double(detail::group("all_reduce", loc).size);
  return r;
}

TG_API Tensor broadcast(const Tensor& t, int src, std::source_location loc) {
  detail::check_rank(detail::group("broadcast", loc), src, "broadcast", "src", loc);
  detail::Call c{detail::Kind::Broadcast, t.dtype(), ReduceOp::Sum, src};
  return detail::run_collective(c, t, t.sym_shape(), loc);
}

TG_API Tensor all_gather_into_tensor(const Tensor& t, std::source_location loc) {
  const int world = detail::group("all_gather", loc).size;
  Shape out = t.sym_shape();
  if (out.empty())
    out.push_back(SInt(world));
  else
    out[0] = out[0] * SInt(world);
  detail::Call c{detail::Kind::AllGather, t.dtype()};
  return detail::run_collective(c, t, out, loc);
}

TG_API std::vector<Tensor> all_gather(const Tensor& t, std::source_location loc) {
  Tensor all = all_gather_into_tensor(t, loc);
  const int world = detail::group("all_gather", loc).size;
  Shape parts = t.sym_shape();
  parts.insert(parts.begin(), SInt(world));
  std::vector<Tensor> out;
  Tensor stacked = all.reshape(parts);
  for (int r = 0; r < world; ++r) out.push_back(stacked[r]);
  return out;
}

TG_API Tensor reduce_scatter(const Tensor& t, ReduceOp op, std::source_location loc) {
  detail::check_reduce_op(op, t.dtype(), "reduce_scatter", loc);
  const int world = detail::group("reduce_scatter", loc).size;
  if (t.ndim() == 0 || !t.sym_shape()[0].is_const() || t.shape()[0] % world != 0)
    detail::fail("reduce_scatter",
                 "the input's dim 0 must be a multiple of the number of ranks (" +
                     std::to_string(world) + "), got a tensor of shape " + tg::detail::shape_of(t),
                 loc);
  Shape out = t.sym_shape();
  out[0] = SInt(t.shape()[0] / world);
  detail::Call c{detail::Kind::ReduceScatter, t.dtype(), op};
  Tensor r = detail::run_collective(c, t, out, loc);
  if (op == ReduceOp::Avg) return r / double(world);
  return r;
}

TG_API void send(const Tensor& t, int dst, int tag, std::source_location loc) {
  detail::Group& g = detail::group("send", loc);
  detail::check_rank(g, dst, "send", "dst", loc);
  if (dst == g.rank) detail::fail("send", "a rank cannot send to itself", loc);
  detail::Call c{detail::Kind::Send, t.dtype(), ReduceOp::Sum, dst, tag};
  detail::run_collective(c, t, {}, loc);
}

TG_API Tensor recv(const Tensor& like, int src, int tag, std::source_location loc) {
  detail::Group& g = detail::group("recv", loc);
  detail::check_rank(g, src, "recv", "src", loc);
  if (src == g.rank) detail::fail("recv", "a rank cannot receive from itself", loc);
  detail::Call c{detail::Kind::Recv, like.dtype(), ReduceOp::Sum, src, tag};
  return detail::run_collective(c, like, like.sym_shape(), loc);
}

TG_API DistributedSampler::DistributedSampler(std::int64_t size, bool shuffle, std::uint64_t seed,
                                              bool drop_last, int num_replicas, int at,
                                              std::source_location loc)
    : size_(size), shuffle_(shuffle), drop_last_(drop_last), seed_(seed),
      replicas_(num_replicas >= 0 ? num_replicas : detail::group("DistributedSampler", loc).size),
      rank_(at >= 0 ? at : detail::group("DistributedSampler", loc).rank) {
  if (size < 0) detail::fail("DistributedSampler", "a negative dataset size", loc);
  if (replicas_ < 1 || rank_ < 0 || rank_ >= replicas_)
    detail::fail("DistributedSampler",
                 "rank " + std::to_string(rank_) + " of " + std::to_string(replicas_) + " replicas",
                 loc);
  num_samples_ = drop_last ? size / replicas_ : (size + replicas_ - 1) / replicas_;
}

TG_API std::vector<std::int64_t> DistributedSampler::indices() const {
  std::vector<std::int64_t> all(static_cast<std::size_t>(size_));
  for (std::int64_t i = 0; i < size_; ++i) all[std::size_t(i)] = i;
  if (shuffle_) { // Fisher-Yates over mt19937_64 (its outputs are standard): the same on every rank
    std::mt19937_64 gen(seed_ + std::uint64_t(epoch_));
    for (std::size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[gen() % i]);
  }
  const std::size_t total = std::size_t(total_size());
  for (std::size_t i = 0; all.size() < total && size_ > 0; ++i) all.push_back(all[i]); // pad
  all.resize(total);
  std::vector<std::int64_t> mine;
  mine.reserve(std::size_t(num_samples_));
  for (std::size_t i = std::size_t(rank_); i < total; i += std::size_t(replicas_))
    mine.push_back(all[i]);
  return mine;
}

} // namespace tg::distributed

namespace tg::nn {

TG_API DistributedDataParallel::DistributedDataParallel(Module& module, double bucket_cap_mb,
                                                        std::source_location loc)
    : module_(module), bucket_bytes_(bucket_cap_mb * 1024 * 1024) {
  distributed::detail::group("DistributedDataParallel", loc);
  if (!(bucket_cap_mb > 0))
    distributed::detail::fail("DistributedDataParallel", "bucket_cap_mb must be positive", loc);
  // every rank starts from rank 0's parameters and buffers
  std::vector<std::pair<Tensor, Tensor>> writes;
  {
    no_grad guard;
    for (const Tensor& p : module_.parameters())
      writes.push_back({p, distributed::broadcast(p.detach(), 0, loc)});
    for (const Tensor& b : module_.buffers())
      writes.push_back({b, distributed::broadcast(b, 0, loc)});
    if (!writes.empty()) tg::assign(writes);
  }
  hook_ = tg::detail::add_backward_hook([this] {
    if (sync_) average_gradients();
  });
}

TG_API DistributedDataParallel::~DistributedDataParallel() {
  tg::detail::remove_backward_hook(hook_);
}

TG_API void DistributedDataParallel::average_gradients() {
  const auto loc = std::source_location::current();
  const int world = distributed::detail::group("DistributedDataParallel", loc).size;
  if (world == 1) return;
  no_grad guard;
  std::vector<Tensor> params;
  for (const Tensor& p : module_.parameters())
    if (p.grad().defined()) params.push_back(p);
  // a backward() that gave this model no new gradient (another model's) averages nothing again
  bool changed = params.size() != averaged_.size();
  for (std::size_t i = 0; i < params.size() && !changed; ++i)
    changed = averaged_[i].lock() != params[i].grad().lazy();
  if (!changed) return;
  // buckets of one dtype and device, in parameter order, each closed past bucket_bytes_
  struct Bucket {
    std::vector<Tensor> params;
    double bytes = 0;
  };
  std::vector<Bucket> buckets;
  std::vector<std::size_t> open; // per (dtype, device) seen: the bucket being filled
  for (const Tensor& p : params) {
    std::size_t b = buckets.size();
    for (std::size_t o : open)
      if (buckets[o].params[0].dtype() == p.dtype() && buckets[o].params[0].device() == p.device())
        b = o;
    if (b == buckets.size() || buckets[b].bytes >= bucket_bytes_) {
      std::erase(open, b);
      b = buckets.size();
      buckets.emplace_back();
      open.push_back(b);
    }
    buckets[b].params.push_back(p);
    buckets[b].bytes += double(p.numel()) * itemsize(p.dtype());
  }
  for (Bucket& b : buckets) {
    std::vector<Tensor> flat;
    std::vector<std::int64_t> sizes;
    for (const Tensor& p : b.params) {
      flat.push_back(p.grad().reshape({-1}));
      sizes.push_back(p.numel());
    }
    Tensor all = flat.size() == 1 ? flat[0] : tg::cat(flat);
    Tensor avg = distributed::all_reduce(all, distributed::ReduceOp::Avg, loc);
    std::vector<Tensor> parts = avg.split(sizes);
    for (std::size_t i = 0; i < b.params.size(); ++i)
      b.params[i].set_grad(parts[i].reshape(b.params[i].sym_shape()));
  }
  buckets_ = buckets.size();
  averaged_.clear();
  for (const Tensor& p : params) averaged_.push_back(p.grad().lazy());
}

} // namespace tg::nn
