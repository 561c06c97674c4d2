#pragma once
// The mechanics every op is built from: node creation, broadcasting, views, reductions, casts,
// and moving data in and out.
#include "class.hpp"

namespace tg {

inline std::vector<std::int64_t> Tensor::shape() const {
  std::vector<std::int64_t> r;
  for (const SInt& d : node().shape) r.push_back(d.eval());
  return r;
}
inline std::int64_t Tensor::size(int dim, Loc loc) const {
  if (ndim() == 0) detail::fail<shape_error>("size", "a 0-d tensor has no dimensions", loc);
  return node().shape[std::size_t(normalize_axis(dim, "size", loc))].eval();
}

inline int Tensor::normalize_axis(int axis, const char* op, Loc loc, int extra) const {
  int n = std::max(ndim() + extra, 1); // a 0-d tensor takes axis 0 and -1, as PyTorch
  int a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n)
    detail::fail<shape_error>(op,
                              "axis " + std::to_string(axis) +
                                  " is out of range for a tensor of shape " +
                                  detail::shape_of(*this),
                              loc);
  return a;
}

inline Tensor Tensor::make(Op op, DType t, Shape shape, std::vector<LazyPtr> src,
                           const std::string& device) {
  auto n = std::make_shared<LazyNode>();
  n->op = op;
  n->dtype = t;
  n->shape = std::move(shape);
  n->src = std::move(src);
  n->device = device;
  if (grad_enabled() && std::any_of(n->src.begin(), n->src.end(),
                                    [](const LazyPtr& s) { return s->requires_grad; })) {
    n->requires_grad = true;
    n->grad_fn = std::make_shared<GradRecord>(GradRecord{op, n->src, {}, {}});
  }
  return Tensor(std::move(n));
}

namespace detail {
/// Whether a call site is in the user's code rather than in tg's headers (where composite ops
/// call other ops): tg's root is the directory of this header's `tg/`.
inline bool user_site(const std::source_location& loc) {
  static const std::string root = [] {
    std::string f = __FILE__;
    std::size_t p = f.rfind("/tg/");
    return p == std::string::npos ? std::string() : f.substr(0, p + 4);
  }();
  return root.empty() || std::string_view(loc.file_name()).substr(0, root.size()) != root;
}
/// Marks a constant made from a C++ number at the user's call `loc` of `op` while tg::jit records
/// a call (it names the constant when that number changes between calls; nothing is done
/// outside a jitted function).
inline const Tensor& made_at(const Tensor& c, const char* op, const std::source_location& loc) {
  if (!active_trace()) return c;
  LazyNode& n = *c.lazy();
  if (n.op == Op::Const && !n.made_by && user_site(loc)) {
    n.made_by = op;
    n.made_at = loc;
  }
  return c;
}
} // namespace detail

inline Tensor Tensor::full_on(const Shape& shape, double v, DType t, const std::string& device) {
  return full_on(shape, Scalar::of(t, v), t, device);
}
inline Tensor Tensor::full_on(const Shape& shape, Scalar v, DType t, const std::string& device) {
  Tensor c = make(Op::Const, t, {}, {}, device);
  c.n_->value = v;
  if (shape.empty()) return c;
  // reshape to 1s, then expand: one View node, as c.move(reshape).move(expand) would leave
  Movement moves[] = {{MoveOp::Reshape, Shape(shape.size(), SInt(1)), {}},
                      {MoveOp::Expand, shape, {}}};
  return c.append_moves(shape, moves);
}

inline Tensor Tensor::move(Movement m) const {
  const LazyNode& n = node();
  Shape out = moved_shape(n.shape, m);
  if (m.op == MoveOp::Reshape && out == n.shape) return *this;
  return append_moves(std::move(out), {&m, 1});
}

inline Tensor Tensor::append_moves(Shape out, std::span<Movement> moves) const {
  const LazyNode& n = node();
  const bool compose = n.op == Op::View; // compose with the view below: one View node per chain
  Tensor r = make(Op::View, n.dtype, std::move(out), {compose ? n.src[0] : n_}, n.device);
  std::vector<Movement>& all = r.n_->moves;
  all.reserve((compose ? n.moves.size() : 0) + moves.size()); // one allocation for them all
  if (compose) all.assign(n.moves.begin(), n.moves.end());
  for (Movement& m : moves) all.push_back(std::move(m));
  if (r.n_->grad_fn) r.n_->grad_fn->moves = all;
  return r;
}

inline Tensor Tensor::alu(Op op, Loc) const {
  return make(op, dtype(), sym_shape(), {n_}, device());
}

inline Tensor Tensor::alu(Op op, const Tensor& a0, const Tensor& b0, const char* name, Loc loc) {
  if (a0.device() != b0.device())
    detail::fail<device_error>(
        name, "tensors are on different devices (" + a0.device() + " and " + b0.device() + ")",
        loc);
  Shape out;
  if (!detail::broadcast_shapes(a0.sym_shape(), b0.sym_shape(), out))
    detail::fail<shape_error>(name,
                              "shapes " + detail::shape_of(a0) + " and " + detail::shape_of(b0) +
                                  " cannot be broadcast",
                              loc);
  detail::made_at(a0, name, loc);
  detail::made_at(b0, name, loc);
  DType t = detail::promote(a0, b0);
  // expand takes its shape by value: skip the copy where the operand has that shape already
  auto widen = [&](const Tensor& x) {
    Tensor c = x.cast(t);
    return c.sym_shape() == out ? c : c.expand(out);
  };
  Tensor a = widen(a0), b = widen(b0);
  DType rt = is_compare(op) ? DType::Bool : t;
  return make(op, rt, std::move(out), {a.n_, b.n_}, a.device());
}

inline Tensor Tensor::cast(DType t, Loc) const {
  if (t == dtype()) return *this;
  return make(Op::Cast, t, sym_shape(), {n_}, device());
}
inline Tensor Tensor::bitcast(DType t, Loc loc) const {
  if (itemsize(t) != itemsize(dtype()))
    detail::fail<dtype_error>("bitcast",
                              std::string("cannot reinterpret ") + dtype_name(dtype()) + " as " +
                                  dtype_name(t) + " (different sizes)",
                              loc);
  if (t == dtype()) return *this;
  return make(Op::Bitcast, t, sym_shape(), {n_}, device());
}

namespace detail {

/// How a GPU reduction is split into two (a reduced axis cut into [k, extent / k]: the first
/// kernel reduces the inner part, the second the k partial results), or k = 0 to keep it whole.
/// gpu_program gives each output of a reduction with fewer than 16,384 outputs a work-group of
/// its own: that runs too few groups when the outputs are fewer still (a full sum was two orders
/// of magnitude slower than PyTorch's, docs/performance.md; on lavapipe it passed llvmpipe's
/// loop limit), and when the last axis is kept, a group's lanes read one column, each lane a
/// different row. So: a reduction over the last axis gets about 4,096 groups of at least 1,024
/// elements each; a reduction over other axes gets at least 262,144 outputs in its first kernel
/// (one thread each, neighbouring threads reading neighbouring columns), each still reducing at
/// least 16 elements (the fastest of the shapes measured for a column sum: docs/performance.md).
/// Where no divisor of a reduced axis comes within 16 times of the k wanted (a prime length),
/// the axis is padded with the reduction's identity to a multiple of a k that does (`pad`
/// elements more): lavapipe refused a sum of a prime 16,777,259 floats in one work-group.
struct ReduceSplit {
  int axis = -1;
  std::int64_t k = 0;
  std::int64_t pad = 0;
};
constexpr ReduceSplit gpu_reduce_split(const std::vector<std::int64_t>& shape,
                                       const std::vector<int>& axes) {
  if (shape.empty() || axes.empty()) return {};
  std::int64_t items = 1, len = 1;
  for (std::size_t i = 0; i < shape.size(); ++i)
    (std::find(axes.begin(), axes.end(), int(i)) == axes.end() ? items : len) *= shape[i];
  // over the last axis, or over the last one longer than 1: each output's elements lie together
  bool last = true;
  for (std::size_t i = std::size_t(axes.back()) + 1; i < shape.size(); ++i)
    last = last && shape[i] == 1;
  const std::int64_t min_part = last ? 1024 : 16;
  if (items == 0 || len < (last ? 65536 : 256) || items >= (last ? 1024 : 16384)) return {};
  const std::int64_t want = last ? (4096 + items - 1) / items : (262144 + items - 1) / items;
  // over the last axis: the largest k up to `want`; else the smallest from `want` up (the
  // largest below it when there is none). Divisors in pairs, up to the square root.
  ReduceSplit best;
  auto consider = [&](int a, std::int64_t k) {
    if (k < 2 || len / k < min_part) return;
    if (last ? (k <= want && k > best.k) : (best.k < want ? k > best.k : k >= want && k < best.k))
      best = {a, k};
  };
  int longest = axes[0];
  for (int a : axes) {
    const std::int64_t d = shape[std::size_t(a)];
    if (d > shape[std::size_t(longest)]) longest = a;
    for (std::int64_t i = 1; i * i <= d; ++i)
      if (d % i == 0) {
        consider(a, i);
        consider(a, d / i);
      }
  }
  if (best.k * 16 >= want) return best;
  // no divisor near `want`: pad the longest reduced axis to a multiple of one that is
  const std::int64_t d = shape[std::size_t(longest)];
  const std::int64_t k = std::min(want, d / min_part);
  if (k < 2 || k <= best.k) return best;
  return {longest, k, (k - d % k) % k};
}

/// Whether reductions on `device` are split for a GPU launch (Target::split_reductions).
inline bool splits_reductions(const std::string& device) {
  if (device == "CPU" || device == "INTERP") return false;
  return tg::device(device)->target().split_reductions;
}

} // namespace detail

inline Tensor Tensor::reduce(Op op, std::vector<int> axes, bool keepdim, const char* name,
                             Loc loc) const {
  if (axes.empty())
    for (int i = 0; i < ndim(); ++i) axes.push_back(i);
  for (int& a : axes) a = normalize_axis(a, name, loc);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    detail::fail<shape_error>(name, "an axis is repeated", loc);
  if (ndim() == 0) axes.clear(); // axis 0 (or -1) of a 0-d tensor, as PyTorch: nothing to reduce
  Shape s = sym_shape();
  for (int a : axes) s[std::size_t(a)] = 1;
  Tensor r = *this;
  // On a GPU, a long reduction into few outputs runs as two (detail::gpu_reduce_split); not a
  // max that records its gradient, whose ties would no longer share it evenly.
  static thread_local bool splitting = false; // (the two parts are not split again)
  bool split = false;
  const Shape& in = sym_shape();
  if (!splitting && !axes.empty() && !(op == Op::ReduceMax && requires_grad()) &&
      std::all_of(in.begin(), in.end(), [](const SInt& d) { return d.is_const(); }) &&
      detail::splits_reductions(device())) {
    std::vector<std::int64_t> dims;
    for (const SInt& d : in) dims.push_back(d.constant());
    if (detail::ReduceSplit sp = detail::gpu_reduce_split(dims, axes); sp.k > 1) {
      Tensor src = *this;
      if (sp.pad > 0) { // with the reduction's identity
        std::vector<std::int64_t> pads(2 * (dims.size() - std::size_t(sp.axis)), 0);
        pads.back() = sp.pad;
        src = pad(pads, reduce_identity(op, dtype()).as_double(dtype()), loc);
        dims[std::size_t(sp.axis)] += sp.pad;
      }
      Shape cut;
      std::vector<int> inner; // the reduced axes of the cut shape, but its k axis
      for (std::size_t i = 0; i < dims.size(); ++i) {
        if (int(i) == sp.axis) cut.push_back(sp.k);
        cut.push_back(int(i) == sp.axis ? dims[i] / sp.k : dims[i]);
        if (std::find(axes.begin(), axes.end(), int(i)) != axes.end())
          inner.push_back(int(i) < sp.axis ? int(i) : int(i) + 1);
      }
      struct Reset {
        bool& flag;
        ~Reset() { flag = false; }
      } reset{splitting = true};
      r = src.reshape(cut)
              .reduce(op, inner, true, name, loc)
              .reduce(op, {sp.axis}, true, name, loc)
              .reshape(s);
      split = true;
    }
  }
  if (!axes.empty() && !split) {
    r = make(op, dtype(), s, {n_}, device());
    r.n_->axes = axes;
    if (r.n_->grad_fn) r.n_->grad_fn->axes = axes;
  }
  if (keepdim) return r;
  Shape squeezed;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (std::find(axes.begin(), axes.end(), int(i)) == axes.end()) squeezed.push_back(s[i]);
  return r.reshape(squeezed);
}

inline Tensor Tensor::contiguous(Loc) const {
  if (node().op == Op::Buffer) return *this;
  return make(Op::Contiguous, dtype(), sym_shape(), {n_}, device());
}

template <Arithmetic E>
Tensor Tensor::from_data(const E* data, Shape shape, TensorOptions o, Loc loc) {
  DType t = o.dtype.value_or(dtype_of<E>);
  std::string dev = o.device.empty() ? default_device() : detail::canonical_device(o.device);
  std::int64_t n = tg::prod(shape).eval();
  for (const SInt& d : shape)
    if (d.eval() < 0)
      detail::fail<shape_error>("tensor", "negative size in shape " + detail::shape_str(shape),
                                loc);
  auto d = tg::device(dev);
  auto buf = std::make_shared<Buffer>(d, t, n);
  std::vector<unsigned char> host(buf->nbytes());
  visit_dtype(t, [&](auto x) {
    using D = decltype(x);
    D* out = reinterpret_cast<D*>(host.data());
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16_t>)
        out[i] = D(static_cast<float>(data[i]));
      else if constexpr (std::is_same_v<E, half> || std::is_same_v<E, bfloat16_t>)
        out[i] = static_cast<D>(static_cast<float>(data[i]));
      else
        out[i] = static_cast<D>(data[i]);
    }
  });
  d->copy_in(buf->ptr, host.data(), host.size());
  if (detail::Trace* trace = detail::active_trace()) // tg::jit: a host value frozen at capture
    trace->steps.push_back("upload " + detail::shape_str(shape) + " " + dtype_name(t) +
                           (detail::user_site(loc) ? std::string(" made at ") + loc.file_name() +
                                                         ":" + std::to_string(loc.line())
                                                   : std::string()) +
                           "\n" +
                           detail::hex64(fnv1a(std::string_view(
                               reinterpret_cast<const char*>(host.data()), host.size()))));
  Tensor r = make(Op::Buffer, t, std::move(shape), {}, dev);
  r.n_->buffer = std::move(buf);
  return r;
}
template <Arithmetic E>
Tensor Tensor::from_data(const std::vector<E>& data, Shape shape, TensorOptions o, Loc loc) {
  if (shape.empty() && data.size() != 1) shape = {std::int64_t(data.size())};
  if (tg::prod(shape).eval() != std::int64_t(data.size()))
    detail::fail<shape_error>(
        "tensor",
        std::to_string(data.size()) + " values do not fill shape " + detail::shape_str(shape), loc);
  if constexpr (std::is_same_v<E, bool>) { // std::vector<bool> is packed: it has no data()
    std::unique_ptr<bool[]> flat(new bool[data.size()]);
    std::copy(data.begin(), data.end(), flat.get());
    return from_data(static_cast<const bool*>(flat.get()), std::move(shape), o, loc);
  } else {
    return from_data(data.data(), std::move(shape), o, loc);
  }
}

template <Arithmetic E> std::vector<E> Tensor::to_vector(Loc loc) const {
  Tensor t = *this;
  std::vector<unsigned char> host;
  try {
    detail::realize_nodes({t.lazy()});
    // a view that is not the buffer's own layout is copied out by a kernel first
    if (t.node().op != Op::Buffer) {
      const LazyNode& v = t.node();
      ShapeTracker st = ShapeTracker::contiguous(v.src[0]->shape).apply(v.moves);
      if (!st.is_contiguous()) {
        t = t.contiguous();
        detail::realize_nodes({t.lazy()});
      } else
        t = Tensor(v.src[0]);
    }
    const Buffer& b = *t.node().buffer;
    host.resize(b.nbytes());
    b.device->copy_out(host.data(), b.ptr, host.size());
  } catch (const export_error& e) { // a host read inside an exported method: where it is
    throw export_error(std::string(e.what()) + " The read:" + detail::where(loc));
  }
  std::int64_t n = numel();
  const Buffer& b = *t.node().buffer;
  std::vector<E> out(static_cast<std::size_t>(n));
  visit_dtype(b.dtype, [&](auto x) {
    using D = decltype(x);
    const D* in = reinterpret_cast<const D*>(host.data());
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16_t>)
        out[std::size_t(i)] = static_cast<E>(static_cast<float>(in[i]));
      else
        out[std::size_t(i)] = static_cast<E>(in[i]);
    }
  });
  return out;
}

template <Arithmetic E> E Tensor::item(Loc loc) const {
  if (numel() != 1)
    detail::fail<shape_error>("item",
                              "a tensor of shape " + detail::shape_of(*this) + " has " +
                                  std::to_string(numel()) + " elements, not 1",
                              loc);
  return to_vector<E>(loc)[0];
}

inline Tensor Tensor::to(const std::string& dev_name, Loc loc) const {
  std::string target = detail::canonical_device(dev_name);
  if (target == device()) return *this;
  std::shared_ptr<Device> dst;
  try {
    dst = tg::device(target);
  } catch (const device_error& e) {
    std::string why = e.what();
    detail::fail<device_error>("to", why.rfind("tg: ", 0) == 0 ? why.substr(4) : why, loc);
  }
  Tensor src = contiguous();
  detail::realize_nodes({src.lazy()}); // (a host copy: refused while exporting, as to_vector)
  const Buffer& b = *src.node().buffer;
  auto buf = std::make_shared<Buffer>(dst, b.dtype, b.numel);
  std::vector<unsigned char> host(b.nbytes());
  b.device->copy_out(host.data(), b.ptr, host.size());
  dst->copy_in(buf->ptr, host.data(), host.size());
  Tensor r = make(Op::Buffer, dtype(), sym_shape(), {}, target);
  r.n_->buffer = std::move(buf);
  return r;
}

/// What realizing these tensors would do, without running it (like tinygrad's
/// Tensor.schedule()): the graph, its kernels and memory plan, and each kernel as the pass list
/// makes it for a target: lowered, then after the device passes (what the device runs), and its
/// source.
struct ScheduleInfo {
  Graph graph;
  Schedule schedule;
  MemoryPlan memory;
  std::vector<Program> lowered;     // per kernel: after lower
  std::vector<Program> programs;    // per kernel: after the device passes
  std::vector<std::string> sources; // per kernel: rendered in the target's dialect
  std::size_t kernels() const { return schedule.kernels.size(); }
};
/// The schedule for a target (without TG_BEAM's search).
inline ScheduleInfo schedule(const std::vector<Tensor>& ts, const Target& target) {
  std::vector<LazyPtr> nodes;
  for (const Tensor& t : ts) nodes.push_back(t.lazy());
  detail::GraphBuild b = detail::build_graph(nodes);
  ScheduleInfo info;
  info.graph = std::move(b.graph);
  info.schedule = schedule_graph(info.graph, target);
  info.memory = plan_buffers(info.graph, info.schedule, b.keep);
  for (std::size_t k = 0; k < info.schedule.kernels.size(); ++k) {
    info.lowered.push_back(lower_kernel(info.graph, info.schedule, k, target));
    KernelCode c = finish_kernel(info.lowered.back(), target);
    info.programs.push_back(std::move(c.program));
    info.sources.emplace_back(c.source.view());
  }
  return info;
}
/// The schedule a device runs: by default the tensors' own (the first one's).
inline ScheduleInfo schedule(const std::vector<Tensor>& ts, const std::string& device = "") {
  const std::string name = !device.empty() ? device
                           : ts.empty()    ? default_device()
                                           : ts[0].device();
  return schedule(ts, tg::device(name)->target());
}

/// Realizes several tensors with one schedule (as Tensor::realize).
inline void realize(std::vector<Tensor> ts) {
  std::vector<LazyPtr> nodes;
  for (const Tensor& t : ts) nodes.push_back(t.lazy());
  detail::realize_requested(nodes);
}

} // namespace tg
