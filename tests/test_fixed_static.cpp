// What must work in a constant expression, checked with static_assert only: compile-time shapes,
// constexpr evaluation of expressions, the Graph of an expression, its fused kernel count and the
// kernel source rendered at compile time. Compiling this file is the test.
#include <doctest/doctest.h>

#include <tg/codegen/render_cuda.hpp>
#include <tg/codegen/render_glsl.hpp>
#include <tg/fixed.hpp>

namespace {

constexpr tg::fixed<float, 2, 2> a{{1, 2}, {3, 4}};
constexpr tg::fixed<float, 2, 2> b{{5, 6}, {7, 8}};
constexpr tg::fixed<float, 2> c{1, 1};
constexpr tg::fixed<int, 2, 3> ints{{1, -2, 3}, {-4, 5, -6}};

// ---- shapes and dtypes are types
// ------------------------------------------------------------------
static_assert(std::is_same_v<decltype(a + c)::shape_type, tg::shape<2, 2>>);
static_assert(std::is_same_v<decltype(c.reshape<2, 1>() * c)::shape_type, tg::shape<2, 2>>);
static_assert(std::is_same_v<decltype(a.sum<1>())::shape_type, tg::shape<2>>);
static_assert(std::is_same_v<decltype(a.sum<1>(tg::keepdim))::shape_type, tg::shape<2, 1>>);
static_assert(std::is_same_v<decltype(a.sum())::shape_type, tg::shape<>>);
static_assert(std::is_same_v<decltype(ints.T())::shape_type, tg::shape<3, 2>>);
static_assert(std::is_same_v<decltype(ints.reshape<-1>())::shape_type, tg::shape<6>>);
static_assert(
    std::is_same_v<decltype(ints.slice<1, 0, tg::none, 2>())::shape_type, tg::shape<2, 2>>);
static_assert(std::is_same_v<decltype(ints.matmul(ints.T()))::shape_type, tg::shape<2, 2>>);
static_assert(std::is_same_v<decltype(c.matmul(a))::shape_type, tg::shape<2>>);
static_assert(std::is_same_v<decltype(ints.pad<1, 1>())::shape_type, tg::shape<2, 5>>);
static_assert(std::is_same_v<decltype(ints.repeat<2, 2>())::shape_type, tg::shape<4, 6>>);
static_assert(decltype(ints / 2)::dtype == tg::float32);
static_assert(decltype(ints.sum())::dtype == tg::int64);
static_assert(decltype(ints * 2.5)::dtype == tg::float32);
static_assert(decltype(a < b)::dtype == tg::bool_);

// ---- evaluation in constant expressions
// -----------------------------------------------------------
constexpr auto r = (a * b + c).sum(); // an expression (rank 0), converted when compared
static_assert(r == 74.0f);
static_assert((a * b + c).sum() == 74.0f);
static_assert(float((a * b + c).sum<1>().max()) == 55.0f);
static_assert(a.matmul(b).eval()(1, 1) == 3 * 6 + 4 * 8);
static_assert(ints.abs().sum() == 21);
static_assert(ints.min() == -6 && ints.max() == 5);
static_assert((ints > 0).any() && !(ints > 5).any());
static_assert(a.T().eval()(0, 1) == 3);
static_assert(a.flip<0>().eval()(0, 0) == 3);
static_assert(tg::where(a > 2.0f, a, 0.0f).sum() == 7.0f);
static_assert((a.softmax<1>().sum<1>() - 1.0f).abs().max() < 1e-6f);
static_assert((a.exp().log() - a).abs().max() < 1e-5f);
static_assert((a.sqrt().square() - a).abs().max() < 1e-5f);
static_assert((a.sin().square() + a.cos().square() - 1.0f).abs().max() < 1e-6f);
static_assert((a.pow(2.0f) - a * a).abs().max() < 1e-4f);
static_assert(a.mean() == 2.5f);
static_assert(ints.cast<float>().round().sum() == -3.0f);
static_assert((ints & 3).sum() == 9 && (ints | 1).sum() == 0 && (~ints ^ 2).sum() == -3);
static_assert(a.tril().sum() == 1.0f + 3.0f + 4.0f && a.triu<1>().sum() == 2.0f);
static_assert(a.cumprod<1>().eval()(1, 1) == 12.0f && a.amax<1>().sum() == 6.0f);
static_assert(a.lerp(a * 3.0f, 0.5).sum() == 20.0f && a.masked_fill(a > 2.0f, 0).sum() == 3.0f);
static_assert((a.sinh() - (a.exp() - (-a).exp()) * 0.5f).abs().max() < 1e-4f);
static_assert(a.hypot(a * 0.75f).eval()(1, 1) == 5.0f && a.log1p().expm1().sum() > 9.99f);
static_assert(a.fmod(1.5f).sum() == 2.5f && (-a).remainder(1.5f).sum() == 2.0f &&
              a.floor_divide(1.5f).sum() == 5.0f);
static_assert(ints.bitwise_left_shift(2).sum() == -12 && ints.bitwise_right_shift(1).sum() == -3);
static_assert(ints.fmod(4).sum() == 1 && ints.remainder(4).sum() == 9 &&
              ints.floor_divide(4).sum() == -3);
constexpr float local_sum() {
  constexpr tg::fixed<double, 3> v{1, 2, 3}; // a local constant works too, converted at once
  return float(double(v.square().sum()));
}
static_assert(local_sum() == 14.0f);
constexpr bool heap_in_constexpr() {
  tg::fixed<float, 40, 40> big = tg::fixed<float, 40, 40>::full(1); // heap storage, transient
  return float((big * 2.0f).sum()) == 3200.0f;
}
static_assert(!tg::fixed<float, 40, 40>::is_inline);
static_assert(heap_in_constexpr());

// ---- index ops, cumsum, cat and stack: shapes, dtypes and values at compile time
constexpr tg::fixed<float, 2, 3> f{{1, 5, 3}, {4, 2, 4}};
constexpr tg::fixed<int, 2, 2> gi{{2, 0}, {-1, 1}};
constexpr tg::fixed<int, 3> si{1, 0, -2};
static_assert(std::is_same_v<decltype(f.argmax<1>())::shape_type, tg::shape<2>>);
static_assert(std::is_same_v<decltype(f.argmin<0>(tg::keepdim))::shape_type, tg::shape<1, 3>>);
static_assert(decltype(f.argmax<0>())::dtype == tg::int64);
static_assert(f.argmax<1>().eval()(0) == 1 && f.argmax<1>().eval()(1) == 0); // the first maximum
static_assert(f.argmax() == 1 && f.argmin() == 0 && ints.argmin<1>().eval()(1) == 2);
static_assert(tg::argmax<0>(f).eval()(2) == 1);
static_assert(decltype(ints.cumsum<1>())::dtype == tg::int64);
static_assert(f.cumsum<1>().eval()(1, 2) == 10 && tg::cumsum<0>(f).eval()(1, 1) == 7);
static_assert(std::is_same_v<decltype(f.gather<1>(gi))::shape_type, tg::shape<2, 2>>);
static_assert(f.gather<1>(gi).eval()(0, 0) == 3 && f.gather<1>(gi).eval()(1, 0) == 4);
static_assert(std::is_same_v<decltype(f.index_select<1>(si))::shape_type, tg::shape<2, 3>>);
static_assert(f.index_select<1>(si).eval()(1, 2) == 2);
static_assert(std::is_same_v<decltype(tg::cat<1>(f, ints))::shape_type, tg::shape<2, 6>>);
static_assert(decltype(tg::cat<1>(f, ints))::dtype == tg::float32);
static_assert(tg::cat<1>(f, ints).eval()(1, 5) == -6 && tg::cat<0>(f, f).eval()(3, 1) == 2);
static_assert(std::is_same_v<decltype(tg::stack<1>(f, f))::shape_type, tg::shape<2, 2, 3>>);
static_assert(tg::stack<0>(f, f * 2.0f).eval()(1, 0, 1) == 10);
static_assert(tg::kernel_count(f.cumsum<1>()) == 1);
static_assert(tg::kernel_count(f.argmax<1>()) == 2); // the max, then the countdown's max
static_assert(tg::kernel_count(tg::cat<1>(f, ints)) == 1);
static_assert(tg::graph_of(f.cumsum<1>()).buffers.size() == 2); // f and the arange

// ---- split and chunk: std::tuples of views, as many as Tensor::split and Tensor::chunk make
static_assert(std::tuple_size_v<decltype(f.split<2, 1>())> == 2);
static_assert(std::is_same_v<std::tuple_element_t<1, decltype(f.split<2, 1>())>::shape_type,
                             tg::shape<2, 1>>);
static_assert(std::get<1>(f.split<2, 1>()).eval()(1, 0) == 4); // the last piece is shorter
static_assert(std::get<0>(tg::split<tg::dims<1, 2>, -1>(f)).sum() == 5);
static_assert(std::get<1>(f.split<tg::dims<1, 2>, 1>()).eval()(1, 1) == 4);
static_assert(std::tuple_size_v<decltype(f.split<3, 1>())> == 1);
static_assert(std::tuple_size_v<decltype(ints.chunk<4, 1>())> == 3); // pieces of 1: three
static_assert(std::tuple_size_v<decltype(tg::chunk<2, 1>(ints))> == 2);
static_assert(std::get<1>(f.chunk<2>()).eval()(0, 2) == 4);
constexpr auto rows = f.split<1>(); // views of f (static storage)
static_assert(std::get<1>(rows).sum() == 10 && std::get<0>(rows).max() == 5);
static_assert(tg::kernel_count(std::get<1>(f.split<1, 1>()) * 2.0f) == 1);
static_assert(tg::graph_of(std::get<1>(f.split<1, 1>()) * 2.0f).buffers.size() == 1);

// ---- gather and index_select: an index outside [-n, n) is no constant (a compile error where one
// is needed; tg::index_error on the host)
template <auto F, int = (F(), 0)> constexpr bool is_constant(int) { return true; }
template <auto F> constexpr bool is_constant(long) { return false; }
constexpr tg::fixed<int, 2, 2> gi_high{{3, 0}, {-1, 1}}; // axis 1 of f has 3
constexpr tg::fixed<int, 3> si_low{1, -4, 0};
constexpr float gather_in_range() { return f.gather<1>(gi).sum(); }
constexpr float gather_high() { return f.gather<1>(gi_high).sum(); }
constexpr float gather_computed_high() { return f.gather<1>(gi + 1).sum(); }
constexpr float index_select_low() { return f.index_select<1>(si_low).sum(); }
static_assert(is_constant<gather_in_range>(0));
static_assert(!is_constant<gather_high>(0));
static_assert(!is_constant<gather_computed_high>(0));
static_assert(!is_constant<index_select_low>(0));
static_assert(f.gather<1>(gi - 1).eval()(0, 0) == 5); // computed indices, in range: -1 is the last
static_assert(f.index_select<1>(si * -1).eval()(0, 1) == 1);

// ---- the Graph, the schedule and the source, at compile time
// --------------------------------------
static_assert(tg::graph_of(a * b + c).size() == 6); // 3 buffers, view of c, mul, add
static_assert(tg::graph_of(a * b + c).buffers.size() == 3);
static_assert(tg::graph_of(a * a).buffers.size() == 1); // one leaf, one buffer
static_assert(tg::kernel_count((a * b + c).relu()) == 1);
static_assert(tg::kernel_count((a * b).sum<1>() + c) == 1); // the elementwise epilogue fuses
static_assert(tg::kernel_count(a.matmul(b)) == 1);
static_assert(tg::kernel_count(a.softmax<1>()) == 3);
static_assert(tg::kernel_count(a.sum<1>().sum()) == 2);

constexpr auto elementwise = tg::freeze([] { return tg::kernel_source((a * b + c).relu()); });
static_assert(elementwise.contains("void E_")); // an elementwise kernel
static_assert(elementwise.contains(" * ") && elementwise.contains(" + "));
static_assert(!elementwise.contains(" % ")); // broadcasting without division

static constexpr tg::input<0, float, 2, 6> x; // placeholders: graphs without data
static constexpr tg::input<1, float, 6, 2> w;
static_assert(tg::kernel_count(x.softmax<1>()) == 3);
static_assert(tg::kernel_count(x.softmax<1>(), tg::Target::cpu()) == 1); // row reductions
constexpr auto softmax_exp = tg::freeze([] { return tg::kernel_source(x.softmax<1>(), 2); });
static_assert(softmax_exp.contains("exp2f("));
static_assert(softmax_exp.contains("for (long long"));
constexpr auto mm = tg::freeze([] { return tg::kernel_source((x.matmul(w) + 1.0f).relu()); });
static_assert(mm.contains("void r")); // a reduction kernel
static_assert(mm.contains("acc"));
static_assert(tg::graph_of(x.matmul(w)).buffers.size() == 2);
static_assert(tg::kernel_program(x.sum<1>()).params.size() == 2);

// GPU dialects: the pass list for a GPU target shapes the kernel for a launch (gpu_program) and
// renders it (what tg::Tensor(expr) runs on that device: .planned()).
constexpr auto glsl = tg::freeze(
    [] { return tg::kernel_source((x * 2.0f + 1.0f).relu(), 0, tg::Target::glsl().planned()); });
static_assert(glsl.contains("#version 450"));
static_assert(glsl.contains("layout(local_size_x = 256) in;"));
static_assert(glsl.contains("void main() {"));
static_assert(glsl.contains("if (v")); // the bounds check of a thread's item
constexpr auto cuda = tg::freeze(
    [] { return tg::kernel_source((x * 2.0f + 1.0f).relu(), 0, tg::Target::cuda().planned()); });
static_assert(cuda.contains("extern \"C\" __global__ void __launch_bounds__(256) E_"));
static_assert(cuda.contains("threadIdx.x"));
// one item per work-group: the reduction is split across the lanes and combined in shared memory
// (rows of 32: a sum of at most 9 elements is unrolled, one of 64 or more split)
static constexpr tg::input<2, float, 2, 32> long_rows;
constexpr tg::GpuOptions grouped{.local = 32, .max_local = 1024, .grouped = 1};
constexpr auto glsl_grouped = tg::freeze(
    [] { return tg::kernel_source(long_rows.sum<1>(), 0, tg::Target::glsl(grouped).planned()); });
static_assert(glsl_grouped.contains("one item per work-group"));
static_assert(glsl_grouped.contains("shared float tg_lds") && glsl_grouped.contains("barrier();"));
constexpr auto glsl_subgroups = tg::freeze([] {
  return tg::kernel_source(long_rows.sum<1>(), 0, tg::Target::glsl(grouped, true).planned());
});
static_assert(glsl_subgroups.contains("subgroup"));
constexpr auto cuda_grouped = tg::freeze(
    [] { return tg::kernel_source(long_rows.sum<1>(), 0, tg::Target::cuda(grouped).planned()); });
static_assert(cuda_grouped.contains("__shared__ __align__(16) float tg_lds") &&
              cuda_grouped.contains("__syncthreads();"));

constexpr auto wgsl = tg::freeze(
    [] { return tg::kernel_source((x * 2.0f + 1.0f).relu(), 0, tg::Target::wgsl().planned()); });
static_assert(wgsl.contains("@compute @workgroup_size(256)"));
static_assert(wgsl.contains("var<storage, read_write> v"));
static_assert(wgsl.contains(": i32 = tg_pc.a[0].y;")); // index arithmetic in 32 bits (narrow32)
static_assert(!wgsl.contains("i64"));
constexpr auto wgsl_f16 = tg::freeze([] { // float16 in array<f16> (shader-f16), its bits moved
  return tg::kernel_source((x * 2.0f).cast<tg::half>(), 0, tg::Target::wgsl({}, true).planned());
});
static_assert(wgsl_f16.contains("enable f16;") && wgsl_f16.contains("array<f16>"));
static_assert(wgsl_f16.contains("= bitcast<vec2<f16>>(u32(") && !wgsl_f16.contains("atomic"));
constexpr auto wgsl_grouped = tg::freeze(
    [] { return tg::kernel_source(long_rows.sum<1>(), 0, tg::Target::wgsl(grouped).planned()); });
static_assert(wgsl_grouped.contains("var<workgroup> tg_lds") &&
              wgsl_grouped.contains("workgroupBarrier();"));

} // namespace

TEST_CASE("fixed: constant-expression checks compiled") { CHECK(elementwise.size() > 0); }
