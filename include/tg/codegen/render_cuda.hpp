#pragma once
// The CUDA dialect of the C-style renderer: one `extern "C" __global__` function per kernel, for
// programs shaped by gpu_program, compiled by NVRTC without any CUDA header. It spells values as
// the C dialect does; what differs is the launch (buffers, then item base, outer start/end and
// the symbolic sizes as kernel arguments), bool as C++ bool, float16 conversions in hardware
// (cvt.f16.f32; bfloat16 is decompose's), IEEE division intrinsics, and local memory (__shared__)
// for group reductions.
#include "../graph/sint_text.hpp"
#include "gpu_program.hpp"
#include "render.hpp"

namespace tg {

struct CudaDialect : CFamily<CudaDialect> {
  /// Sums of products accumulate by fused multiply-add, as cuBLAS does: NVRTC contracts nothing
  /// else (--fmad=false), and a product and an add each issued make a matmul two instructions a
  /// term. Their last bits can differ from INTERP's.
  static constexpr const char* mul_acc(DType t) {
    // (16-bit floats compute in float32)
    return t == DType::Float64 ? "__fma_rn" : is_float(t) ? "__fmaf_rn" : nullptr;
  }
  static constexpr const char* type(DType t) {
    return t == DType::Bool ? "bool" : CFamily::type(t);
  }
  static constexpr const char* fma(DType d) {
    return d == DType::Float64 ? "__fma_rn" : "__fmaf_rn";
  }
  /// Float division and reciprocal through the IEEE intrinsics, which are what `/` compiles to
  /// anyway (div.rn): NVRTC 13 folds `d != d` to false for `d = a / a` with a constant a, so
  /// isnan(0 / 0) was false on an H200. (exp2 is CUDA's own exp2f: the pass list leaves it.)
  static constexpr const char* fdiv(DType d) {
    return d == DType::Float64 ? "__ddiv_rn" : "__fdiv_rn";
  }
  static constexpr const char* recip(DType d) {
    return !is_float(d) ? nullptr : d == DType::Float64 ? "__drcp_rn" : "__frcp_rn";
  }
  static constexpr void reinterpret(Text& t, DType, DType to, std::string_view a) {
    t << "tg_bits<" << type(to) << ">(" << a << ')';
  }

  static constexpr void prelude(Text& t, const Program& p) {
    // guarded, as the C prelude: several kernels can share one NVRTC program
    t << "// tg CUDA kernel (NVRTC, no headers)\n"
         "#ifndef TG_PRELUDE\n#define TG_PRELUDE\n"
         "#define INFINITY __int_as_float(0x7f800000)\n"
         "#define NAN __int_as_float(0x7fffffff)\n"
         "typedef unsigned short tg_u16;\n"
         // NaNs as INTERP's codec (decompose.hpp) keeps them, where cvt makes every NaN 0x7fff
         // and 0x7fffffff: decoded with sign and payload, encoded as a quiet NaN with its sign
         "__device__ __forceinline__ float tg_h2f(tg_u16 h) {\n"
         "  if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) return __uint_as_float(((unsigned)(h & "
         "0x8000u) << 16) | 0x7f800000u | ((unsigned)(h & 0x3ffu) << 13));\n"
         "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
         "__device__ __forceinline__ tg_u16 tg_f2h(float f) {\n"
         "  const unsigned u = __float_as_uint(f);\n"
         "  if ((u & 0x7fffffffu) > 0x7f800000u) return (tg_u16)(((u >> 16) & 0x8000u) | "
         "0x7e00u);\n"
         "  tg_u16 h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
         "template <class T, class F> __device__ __forceinline__ T tg_bits(F f) { union { F f; T "
         "t; } u; u.f = f; return u.t; }\n"
         "__device__ __forceinline__ unsigned long long tg_group() {\n"
         "  return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long "
         "long)gridDim.y * blockIdx.z); }\n"
         "#endif\n";
    bool mma = false;
    for (const UOp& u : p.ops) mma = mma || u.kind == UKind::Mma;
    if (mma) t << kMmaHelpers;
  }

  /// A warp's step over 16 of the reduction: tiles of 16 x 8 outputs by mma.sync m16n8k16 (f32
  /// accumulators). A and B are in shared memory as rows of 16-bit words, S apart, the reduction
  /// along each row (A: [rows][k], B: [columns][k]), so a fragment register is one 32-bit load.
  /// Fragment layouts: the PTX ISA's for mma.m16n8k16 with .f16/.bf16 multiplicands (and for
  /// m16n8k8 with .tf32 ones, whose A and B are rows of floats).
  static constexpr const char* kMmaHelpers =
      "#ifndef TG_MMA\n#define TG_MMA\n"
      "template <bool BF> __device__ __forceinline__ void tg_mma16816(float* c, const unsigned* "
      "a, const unsigned* b) {\n"
      "  if (BF) asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(c[0]), \"+f\"(c[1]), "
      "\"+f\"(c[2]), \"+f\"(c[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), "
      "\"r\"(b[0]), \"r\"(b[1]));\n"
      "  else asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(c[0]), \"+f\"(c[1]), "
      "\"+f\"(c[2]), \"+f\"(c[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), "
      "\"r\"(b[0]), \"r\"(b[1]));\n}\n"
      "template <int S, int TM, int TN, bool BF> __device__ __forceinline__ void tg_mma_tile(const "
      "unsigned short* As, const unsigned short* Bs, long long kk, float* acc, long long wm, long "
      "long wn) {\n"
      "  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;\n"
      "  unsigned a[TM][4], b[TN][2];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < TM; ++i) {\n"
      "    const unsigned short* p = As + (wm + i * 16 + g) * S + kk + t * 2;\n"
      "    a[i][0] = *(const unsigned*)p; a[i][1] = *(const unsigned*)(p + 8 * S);\n"
      "    a[i][2] = *(const unsigned*)(p + 8); a[i][3] = *(const unsigned*)(p + 8 * S + 8);\n"
      "  }\n"
      "#pragma unroll\n"
      "  for (int j = 0; j < TN; ++j) {\n"
      "    const unsigned short* q = Bs + (wn + j * 8 + g) * S + kk + t * 2;\n"
      "    b[j][0] = *(const unsigned*)q; b[j][1] = *(const unsigned*)(q + 8);\n"
      "  }\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < TM; ++i)\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < TN; ++j) tg_mma16816<BF>(acc + (i * TN + j) * 4, a[i], b[j]);\n"
      "}\n"
      // TF32: float32 operands rounded to nearest (ties away, as cuBLAS rounds them), m16n8k8;
      // a fragment register is one float of a row of A (column of B), 4 columns apart
      "__device__ __forceinline__ unsigned tg_tf32(float f) {\n"
      "  unsigned r; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(f)); return r; }\n"
      "template <int S, int TM, int TN> __device__ __forceinline__ void tg_mma_tile_tf32(const "
      "float* As, const float* Bs, long long kk, float* acc, long long wm, long long wn) {\n"
      "  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;\n"
      "  unsigned a[TM][4], b[TN][2];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < TM; ++i) {\n"
      "    const float* p = As + (wm + i * 16 + g) * S + kk + t;\n"
      "    a[i][0] = tg_tf32(p[0]); a[i][1] = tg_tf32(p[8 * S]);\n"
      "    a[i][2] = tg_tf32(p[4]); a[i][3] = tg_tf32(p[8 * S + 4]);\n"
      "  }\n"
      "#pragma unroll\n"
      "  for (int j = 0; j < TN; ++j) {\n"
      "    const float* q = Bs + (wn + j * 8 + g) * S + kk + t;\n"
      "    b[j][0] = tg_tf32(q[0]); b[j][1] = tg_tf32(q[4]);\n"
      "  }\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < TM; ++i)\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < TN; ++j) {\n"
      "      float* c = acc + (i * TN + j) * 4;\n"
      "      asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
      "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), "
      "\"+f\"(c[3]) : \"r\"(a[i][0]), \"r\"(a[i][1]), \"r\"(a[i][2]), \"r\"(a[i][3]), "
      "\"r\"(b[j][0]), \"r\"(b[j][1]));\n"
      "    }\n"
      "}\n#endif\n";
  static constexpr bool tensor_cores = true;
  /// Private arrays and tensor-core steps (UKind::Private, UKind::Mma).
  static constexpr void warp_op(Text& t, const Program& p, const UOp& u, int i) {
    if (u.kind == UKind::Private) {
      t << type(compute_dtype(u.dtype)) << " v" << std::int64_t(i) << '[' << std::int64_t(u.arg)
        << "] = {};\n";
      return;
    }
    (void)p;
    t << "tg_mma_tile";
    if (u.dtype == DType::Float32)
      t << "_tf32<" << u.value.i << ", " << std::int64_t(u.arg / 256) << ", "
        << std::int64_t(u.arg % 256);
    else
      t << '<' << u.value.i << ", " << std::int64_t(u.arg / 256) << ", "
        << std::int64_t(u.arg % 256) << ", " << (u.dtype == DType::BFloat16 ? "true" : "false");
    t << ">(v" << std::int64_t(u.src[0]) << ", v" << std::int64_t(u.src[1]) << ", v"
      << std::int64_t(u.ranges.at(0)) << ", v" << std::int64_t(u.src[2]) << ", v"
      << std::int64_t(u.ranges.at(1)) << ", v" << std::int64_t(u.ranges.at(2)) << ");\n";
  }
  static constexpr void signature(Text& t, const Program& p) {
    t << "extern \"C\" __global__ void __launch_bounds__(" << std::int64_t(p.local) << ") "
      << p.name.view() << '(';
    for (std::size_t k = 0; k < p.params.size(); ++k) {
      t << (k == 0 ? "" : ", ") << (int(k) < p.outputs ? "" : "const ") << type(p.params[k])
        << "* __restrict__ b" << k;
    }
    t << ", long long tg_base, long long tg_start, long long tg_end";
    for (std::size_t k = 0; k < p.vars.size(); ++k) t << ", long long tg_var" << k;
    t << ") {\n";
  }
  static constexpr const char* lane_id = "threadIdx.x";
  static constexpr void launch_arg(Text& t, int k) {
    const char* names[] = {"tg_base", "tg_start", "tg_end"};
    if (k < 3)
      t << names[k];
    else
      t << "tg_var" << std::int64_t(k - 3);
  }
  static constexpr void comment(Text& t, std::string_view s) { t << " /* " << s << " */"; }
  static constexpr void declare_param(Text& t, const UOp& u, const Program& p, int i) {
    if (u.kind == UKind::Param)
      t << (u.arg < p.outputs ? "" : "const ") << type(u.dtype) << "* __restrict__ v"
        << std::int64_t(i) << " = b" << std::int64_t(u.arg) << ";\n";
    else
      declare_launch(t, u, p, i);
  }
  static constexpr void local_array(Text& t, DType d, std::string_view name, int size) {
    t << "__shared__ __align__(16) " << type(d) << ' ' << name << '[' << std::int64_t(size)
      << "];\n";
  }
  static constexpr void barrier(Text& t) { t << "__syncthreads();\n"; }
};

/// The CUDA source of a program shaped by gpu_program and decomposed (the pass list's
/// Target::cuda()).
constexpr Text render_cuda(const Program& gpu) { return CStyleRenderer::render<CudaDialect>(gpu); }

} // namespace tg
