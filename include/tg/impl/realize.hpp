#pragma once
// Realizing lazy tensors, moving their data in and out, printing them (declared in
// tensor/lazy.hpp, tensor/class.hpp, tensor/core.hpp and engine/schedule_info.hpp).
#include "../engine/build.hpp"
#include "../engine/schedule_info.hpp"
#include "../graph/sint_text.hpp"
#include "../runtime/launch.hpp"
#include "../tensor/tensor.hpp"
#include "../util/print.hpp"
#include "../util/rc.hpp"

namespace tg {

namespace detail {

TG_API void realize_nodes(const std::vector<LazyPtr>& targets) {
  GraphBuild b = build_graph(targets);
  if (b.order.empty()) return;
  TraceSites sites(b);
  adopt(b, realize_graph(b.graph, b.inputs, b.keep, device(b.device)));
}

// The exported call computes every value from the state as the call found it, which a realize
// before an update (a training step's loss) is there to fix; a value read on the host (item(),
// to_vector()) is still refused.
TG_API void realize_requested(const std::vector<LazyPtr>& targets) {
  const ExportTrace* e = active_export();
  GraphBuild b = build_graph(targets);
  if (b.order.empty()) return;
  if (e)
    for (const auto& buffer : b.inputs)
      if (buffer && buffer->device.get() == e->placeholders) return;
  TraceSites sites(b);
  adopt(b, realize_graph(b.graph, b.inputs, b.keep, device(b.device)));
}

TG_API bool copy_transposed_operand(const Tensor& a, const Tensor& b) {
  const LazyNode& n = *b.lazy();
  const Shape &as = a.sym_shape(), &bs = b.sym_shape();
  const LowerOptions o = lower_options();
  if (n.op != Op::View || b.ndim() < 2 || o.upcast_rows < 2) return false;
  const SInt &rows = as[as.size() - 2], &k = bs[bs.size() - 2], &m = bs.back();
  if (!rows.is_const() || !k.is_const() || !m.is_const() || rows.constant() < 8 ||
      k.constant() * m.constant() < 4096 ||
      (detail::row_tile(rows, o) > 1 && o.packs_strided(k.constant(), m.constant())))
    return false;
  ShapeTracker st = ShapeTracker::contiguous(n.src[0]->shape).apply(n.moves);
  const View& v = st.views.back();
  return st.views.size() == 1 && v.strides[v.ndim() - 2] == 1 && !(v.strides.back() == 0) &&
         !(v.strides.back() == 1);
}
TG_API bool splits_reductions(const std::string& device) {
  if (device == "CPU" || device == "INTERP") return false;
  return tg::device(device)->target().split_reductions;
}

/// The element count of a new tensor's shape (refusing a negative size).
inline std::int64_t checked_numel(const Shape& shape, std::source_location loc) {
  for (const SInt& d : shape)
    if (d.eval() < 0)
      fail<shape_error>("tensor", "negative size in shape " + shape_str(shape), loc);
  return tg::prod(shape).eval();
}

TG_API void convert_values(const void* in, DType from, void* out, DType to, std::int64_t n) {
  visit_dtype(from, [&](auto s) {
    using S = decltype(s);
    const S* src = static_cast<const S*>(in);
    visit_dtype(to, [&](auto d) {
      using D = decltype(d);
      D* dst = static_cast<D*>(out);
      constexpr bool via_float = std::is_same_v<S, half> || std::is_same_v<S, bfloat16_t> ||
                                 std::is_same_v<D, half> || std::is_same_v<D, bfloat16_t>;
      for (std::int64_t i = 0; i < n; ++i)
        if constexpr (via_float)
          dst[i] = D(static_cast<float>(src[i]));
        else
          dst[i] = static_cast<D>(src[i]);
    });
  });
}

TG_API void fill_shape(Shape& shape, std::size_t count, std::source_location loc) {
  if (shape.empty() && count != 1) shape = {std::int64_t(count)};
  if (tg::prod(shape).eval() != std::int64_t(count))
    fail<shape_error>("tensor",
                      std::to_string(count) + " values do not fill shape " + shape_str(shape), loc);
}

TG_API void check_item(const Tensor& t, std::source_location loc) {
  if (t.numel() != 1)
    fail<shape_error>("item",
                      "a tensor of shape " + shape_of(t) + " has " + std::to_string(t.numel()) +
                          " elements, not 1",
                      loc);
}

TG_API Tensor upload(const void* data, DType from, Shape shape, const TensorOptions& o,
                     std::source_location loc) {
  const DType t = o.dtype.value_or(from);
  const std::int64_t n = checked_numel(shape, loc);
  std::vector<unsigned char> host(std::size_t(n) * std::size_t(itemsize(t)));
  convert_values(data, from, host.data(), t, n);
  const std::string dev = o.device.empty() ? default_device() : canonical_device(o.device);
  auto d = tg::device(dev);
  auto buf = make_rc<Buffer>(d, t, tg::prod(shape).eval());
  d->copy_in(buf->ptr, host.data(), host.size());
  if (Trace* trace = active_trace()) // tg::jit: a host value frozen at capture
    trace->steps.push_back(
        "upload " + shape_str(shape) + " " + dtype_name(t) +
        (user_site(loc)
             ? std::string(" made at ") + loc.file_name() + ":" + std::to_string(loc.line())
             : std::string()) +
        "\n" +
        hex64(fnv1a(std::string_view(reinterpret_cast<const char*>(host.data()), host.size()))));
  Tensor r = Tensor::make(Op::Buffer, t, std::move(shape), {}, dev);
  r.lazy()->buffer = std::move(buf);
  return r;
}

TG_API std::vector<unsigned char> download(const Tensor& tensor, DType to,
                                           std::source_location loc) {
  Tensor t = tensor;
  std::vector<unsigned char> host;
  try {
    realize_nodes({t.lazy()});
    // a view that is not the buffer's own layout is copied out by a kernel first
    if (t.lazy()->op != Op::Buffer) {
      const LazyNode& v = *t.lazy();
      ShapeTracker st = ShapeTracker::contiguous(v.src[0]->shape).apply(v.moves);
      if (!st.is_contiguous()) {
        t = t.contiguous();
        realize_nodes({t.lazy()});
      } else
        t = Tensor(v.src[0]);
    }
    const Buffer& b = *t.lazy()->buffer;
    host.resize(b.nbytes());
    b.device->copy_out(host.data(), b.ptr, host.size());
  } catch (const export_error& e) { // a host read inside an exported method: where it is
    throw export_error(std::string(e.what()) + " The read:" + where(loc));
  }
  // a view at the start of its buffer (a split's first part) reads the buffer's first values
  const std::int64_t n = tensor.numel();
  host.resize(std::size_t(n) * std::size_t(itemsize(tensor.dtype())));
  if (to == tensor.dtype()) return host;
  std::vector<unsigned char> converted(std::size_t(n) * std::size_t(itemsize(to)));
  convert_values(host.data(), tensor.dtype(), converted.data(), to, n);
  return converted;
}

} // namespace detail

TG_API Tensor Tensor::to(const std::string& dev_name, Loc loc) const {
  std::string target = detail::canonical_device(dev_name);
  if (target == device()) return *this;
  Rc<Device> dst;
  try {
    dst = tg::device(target);
  } catch (const device_error& e) {
    std::string why = e.what();
    detail::fail<device_error>("to", why.rfind("tg: ", 0) == 0 ? why.substr(4) : why, loc);
  }
  Tensor src = contiguous();
  detail::realize_nodes({src.lazy()}); // (a host copy: refused while exporting, as to_vector)
  const Buffer& b = *src.node().buffer;
  auto buf = make_rc<Buffer>(dst, b.dtype, b.numel);
  std::vector<unsigned char> host(b.nbytes());
  b.device->copy_out(host.data(), b.ptr, host.size());
  dst->copy_in(buf->ptr, host.data(), host.size());
  Tensor r = make(Op::Buffer, dtype(), sym_shape(), {}, target);
  r.n_->buffer = std::move(buf);
  return r;
}

TG_API std::string Tensor::to_string() const {
  std::vector<double> floats;
  std::vector<std::int64_t> ints;
  if (is_float(dtype()))
    floats = to_vector<double>();
  else if (is_unsigned(dtype()))
    for (auto x : to_vector<std::uint64_t>()) ints.push_back(std::int64_t(x));
  else
    ints = to_vector<std::int64_t>();
  return format_tensor(floats, ints, shape(), dtype(), device());
}

TG_API ScheduleInfo schedule(const std::vector<Tensor>& ts, const Target& target) {
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

TG_API ScheduleInfo schedule(const std::vector<Tensor>& ts, const std::string& device) {
  const std::string name = !device.empty() ? device
                           : ts.empty()    ? default_device()
                                           : ts[0].device();
  return schedule(ts, tg::device(name)->target());
}

} // namespace tg
