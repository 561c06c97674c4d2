#pragma once
// The CUDA dialect of the C-style renderer: one `extern "C" __global__` function per kernel, for
// programs shaped by gpu_program, compiled by NVRTC without any CUDA header. It shares the C
// dialect's arithmetic; what differs is the launch (buffers, then item base, outer start/end and
// the symbolic sizes as kernel arguments), bool as C++ bool, float16 conversions in hardware
// (cvt.f16.f32; bfloat16 too from sm_80), integer division and float-to-integer casts defined as
// the reference interpreter defines them, and local memory (__shared__) for group reductions.
#include "gpu.hpp"
#include "render.hpp"

namespace tg {

struct CudaDialect : CDialect {
  static constexpr bool vectors = false;
  /// Sums of products accumulate by fused multiply-add, as cuBLAS does: NVRTC contracts nothing
  /// else (--fmad=false), and a product and an add each issued took sgemm 4096² on an H200 to
  /// 8.9 ms (two instructions a term). Their last bits can differ from INTERP's.
  static constexpr const char* mul_acc(DType t) {
    // (16-bit floats compute in float32)
    return t == DType::Float64 ? "__fma_rn" : is_float(t) ? "__fmaf_rn" : nullptr;
  }
  static constexpr const char* type(DType t) {
    return t == DType::Bool ? "bool" : CDialect::type(t);
  }

  static constexpr void prelude(Text& t, const Program&) {
    // guarded, as the C prelude: several kernels can share one NVRTC program
    t << "// tg CUDA kernel (NVRTC, no headers)\n"
         "#ifndef TG_PRELUDE\n#define TG_PRELUDE\n"
         "#define INFINITY __int_as_float(0x7f800000)\n"
         "#define NAN __int_as_float(0x7fffffff)\n"
         "typedef unsigned short tg_u16; typedef unsigned int tg_u32;\n"
         "__device__ __forceinline__ float tg_h2f(tg_u16 h) { float f; asm(\"cvt.f32.f16 %0, %1;\" "
         ": \"=f\"(f) : \"h\"(h)); return f; }\n"
         "__device__ __forceinline__ tg_u16 tg_f2h(float f) { tg_u16 h; asm(\"cvt.rn.f16.f32 %0, "
         "%1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
         "__device__ __forceinline__ float tg_b2f(tg_u16 b) { return __uint_as_float((tg_u32)b << "
         "16); }\n"
         "#if __CUDA_ARCH__ >= 800\n"
         "__device__ __forceinline__ tg_u16 tg_f2b(float f) { tg_u16 h; asm(\"cvt.rn.bf16.f32 %0, "
         "%1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
         "#else\n"
         "__device__ __forceinline__ tg_u16 tg_f2b(float f) { tg_u32 x = __float_as_uint(f);\n"
         "  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return (tg_u16)((x >> 16) | "
         "0x40u);\n"
         "  x += 0x7fffu + ((x >> 16) & 1u); return (tg_u16)(x >> 16); }\n"
         "#endif\n"
         "template <class T, class F> __device__ __forceinline__ T tg_bits(F f) { union { F f; T "
         "t; } u; u.f = f; return u.t; }\n"
         "__device__ __forceinline__ unsigned long long tg_group() {\n"
         "  return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long "
         "long)gridDim.y * blockIdx.z); }\n"
         "#endif\n";
  }
  static constexpr void signature(Text& t, const Program& p) {
    t << "extern \"C\" __global__ void __launch_bounds__(" << std::int64_t(p.local) << ") "
      << p.name.view() << '(';
    for (std::size_t k = 0; k < p.params.size(); ++k) {
      if (k == 0)
        t << type(p.params[k]) << "* __restrict__ b0";
      else
        t << ", const " << type(p.params[k]) << "* __restrict__ b" << k;
    }
    t << ", long long tg_base, long long tg_start, long long tg_end";
    for (std::size_t k = 0; k < p.vars.size(); ++k) t << ", long long tg_var" << k;
    t << ") {\n";
  }
  static constexpr void declare_param(Text& t, const UOp& u, const Program& p, int i) {
    const std::int64_t v = i;
    switch (u.kind) {
    case UKind::Param:
      t << (u.arg == 0 ? "" : "const ") << type(u.dtype) << "* __restrict__ v" << v << " = b"
        << std::int64_t(u.arg) << ";\n";
      break;
    case UKind::Bound:
      t << "const long long v" << v << " = " << (u.arg == 0 ? "tg_start" : "tg_end") << ";\n";
      break;
    case UKind::VarParam:
      t << "const long long v" << v << " = tg_var" << std::int64_t(u.arg) << "; /* "
        << p.vars[std::size_t(u.arg)].name.view() << " */\n";
      break;
    default:
      if (u.arg == int(GpuIndex::Lane))
        t << "const long long v" << v << " = (long long)threadIdx.x;\n";
      else if (p.grouped)
        t << "const long long v" << v << " = tg_base + (long long)tg_group();\n";
      else
        t << "const long long v" << v << " = tg_base + (long long)tg_group() * "
          << std::int64_t(p.local) * p.per_thread << "ll + (long long)threadIdx.x;\n";
    }
  }
  static constexpr void typed_int(Text& t, DType d, std::int64_t v) {
    constant(t, d, Scalar::of_int(d, v));
  }
  /// CUDA's own exp2f (the C prelude's tg_exp2f is for CPU vector units). Float division and
  /// reciprocal through the IEEE intrinsics, which are what `/` compiles to anyway (div.rn): NVRTC
  /// 13 folds `d != d` to false for `d = a / a` with a constant a, so isnan(0 / 0) was false on
  /// an H200.
  static constexpr void unary(Text& t, Op op, DType d, std::string_view a) {
    if (op == Op::Exp2 && d != DType::Float64)
      t << "exp2f(" << a << ')';
    else if (op == Op::Recip && is_float(d))
      t << (d == DType::Float64 ? "__drcp_rn(" : "__frcp_rn(") << a << ')';
    else
      CDialect::unary(t, op, d, a);
  }
  static constexpr void binary(Text& t, Op op, DType d, std::string_view a, std::string_view b) {
    if (op == Op::Div && is_float(d)) {
      t << (d == DType::Float64 ? "__ddiv_rn(" : "__fdiv_rn(") << a << ", " << b << ')';
      return;
    }
    if (!is_int(d) || (op != Op::Div && op != Op::Mod)) return CDialect::binary(t, op, d, a, b);
    // as the reference interpreter: x / 0 == 0, x % 0 == 0, x / -1 == -x (wrapping), x % -1 == 0
    t << "((" << b << " == ";
    typed_int(t, d, 0);
    if (!is_unsigned(d)) {
      t << " || " << b << " == ";
      typed_int(t, d, -1);
    }
    t << ") ? ";
    if (op == Op::Mod || is_unsigned(d))
      typed_int(t, d, 0);
    else {
      t << '(' << b << " == ";
      typed_int(t, d, 0);
      t << " ? ";
      typed_int(t, d, 0);
      t << " : (" << type(d) << ")(0ull - (unsigned long long)" << a << "))";
    }
    t << " : (" << type(d) << ")(" << a << (op == Op::Div ? " / " : " % ") << b << "))";
  }
  static constexpr void cast(Text& t, DType from, DType to, std::string_view a) {
    DType cf = compute_dtype(from);
    if (!is_float(cf) || !is_int(to)) return CDialect::cast(t, from, to, a);
    // Float to integer as the reference interpreter (x86): out of range and NaN give the
    // "integer indefinite", unsigned 64-bit gives 0.
    if (to == DType::UInt64) {
      t << "((" << a << " >= 0.0 && " << a << " < 18446744073709551616.0) ? (unsigned long long)"
        << a << " : 0ull)";
      return;
    }
    if (to == DType::Int64 || to == DType::UInt32) {
      t << '(' << type(to) << ")((" << a << " >= -9223372036854775808.0 && " << a
        << " < 9223372036854775808.0) ? (long long)" << a << " : (-9223372036854775807ll - 1))";
      return;
    }
    t << '(' << type(to) << ")((" << a << " >= -2147483648.0 && " << a << " < 2147483648.0) ? (int)"
      << a << " : (-2147483647 - 1))";
  }
  static constexpr void bitcast(Text& t, DType from, DType to, std::string_view a) {
    if (is_half(from) || is_half(to)) return CDialect::bitcast(t, from, to, a);
    t << "tg_bits<" << type(to) << ">(" << a << ')';
  }
  static constexpr void local_array(Text& t, DType d, std::string_view name, int size) {
    t << "__shared__ " << type(d) << ' ' << name << '[' << std::int64_t(size) << "];\n";
  }
  static constexpr void barrier(Text& t) { t << "__syncthreads();\n"; }
};

/// The CUDA source of a program shaped by gpu_program.
constexpr Text render_cuda(const Program& gpu) { return CStyleRenderer::render<CudaDialect>(gpu); }

} // namespace tg
