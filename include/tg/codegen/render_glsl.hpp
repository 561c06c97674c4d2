#pragma once
// The GLSL dialect of the C-style renderer: a Vulkan compute shader (#version 450) per kernel,
// for programs shaped by gpu_program. Buffers are std430 storage buffers (binding = parameter
// index), the launch values (item base, outer start/end, symbolic sizes) are int64 push
// constants, and the shader asks for the extensions its dtypes need: 64-bit ints (always: index
// arithmetic), float64, and 8-/16-bit storage with their arithmetic types. bool is stored as a
// byte, float16/bfloat16 as 16 bits converted in software (round to nearest even, exact like the
// CPU), and float64 exp2/log2/sin/pow, which GLSL lacks, and float exp2 (the C kernels' own, for
// subnormal results) come from the prelude. Integer division,
// remainder and float-to-integer casts follow the reference interpreter (no undefined results).
#include "gpu.hpp"
#include "render.hpp"

namespace tg {

/// What a GLSL program needs from the device.
struct GlslNeeds {
  bool int8 = false, int16 = false, float64 = false;
};
constexpr GlslNeeds glsl_needs(const Program& p) {
  GlslNeeds n;
  auto see = [&](DType d) {
    if (itemsize(d) == 1) n.int8 = true;
    if (itemsize(d) == 2) n.int16 = true;
    if (d == DType::Float64) n.float64 = true;
  };
  for (const UOp& u : p.ops) {
    if (u.kind == UKind::Param)
      see(u.dtype);
    else if (u.dtype != DType::Bool && !is_half(u.dtype))
      see(u.dtype);
  }
  return n;
}

struct GlslDialect {
  /// Computed floats are `precise`: without it the driver may reassociate and simplify float
  /// math as if it were exact (lavapipe turns log_softmax of [inf] into 0, not NaN).
  static constexpr const char* qualifier(DType t) { return is_float(t) ? "precise " : ""; }
  static constexpr bool own_group_reduce = false; // the shared tree (subgroups: below)
  static constexpr bool vectors = false;
  static constexpr const char* mul_acc(DType) { return nullptr; }
  static constexpr const char* type(DType t) {
    switch (t) {
    case DType::Bool:
      return "bool";
    case DType::Int8:
      return "int8_t";
    case DType::Int16:
      return "int16_t";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "int64_t";
    case DType::UInt8:
      return "uint8_t";
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16:
      return "uint16_t";
    case DType::UInt32:
      return "uint";
    case DType::UInt64:
      return "uint64_t";
    case DType::Float32:
      return "float";
    default:
      return "double";
    }
  }
  static constexpr const char* storage(DType t) { return t == DType::Bool ? "uint8_t" : type(t); }

  /// 2^x and log2(x) in float64 (GLSL has neither for doubles), with tg_d(bits) to spell constants.
  static constexpr const char* float64_exp2_log2 =
      "double tg_d(int64_t b) { return int64BitsToDouble(b); }\n"
      "double tg_exp2d(double x) {\n"
      "  if (isnan(x)) return x;\n"
      "  if (x >= 1024.0LF) return tg_d(0x7ff0000000000000L);\n"
      "  if (x < -1080.0LF) return 0.0LF;\n"
      "  double n = floor(x + 0.5LF), f = (x - n) * tg_d(0x3fe62e42fefa39efL), r = 1.0LF;\n"
      "  for (int k = 18; k >= 1; --k) r = 1.0LF + r * f / double(k);\n"
      "  int e = int(n);\n"
      "  return ldexp(ldexp(r, e / 2), e - e / 2); }\n"
      "double tg_log2d(double x) {\n"
      "  if (isnan(x) || x < 0.0LF) return tg_d(0x7ff8000000000000L);\n"
      "  if (x == 0.0LF) return tg_d(int64_t(0xfff0000000000000UL));\n"
      "  if (isinf(x)) return x;\n"
      "  int e; double m = frexp(x, e);\n"
      "  if (m < tg_d(0x3fe6a09e667f3bcdL)) { m *= 2.0LF; e -= 1; }\n"
      "  double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s, r = 0.0LF;\n"
      "  for (int k = 25; k >= 1; k -= 2) r = r * s2 + 1.0LF / double(k);\n"
      "  return double(e) + 2.0LF * s * r * tg_d(0x3ff71547652b82feL); }\n";
  static constexpr void prelude(Text& t, const Program& p) {
    GlslNeeds n = glsl_needs(p);
    bool p8 = false, p16 = false;
    for (const UOp& u : p.ops)
      if (u.kind == UKind::Param) {
        if (itemsize(u.dtype) == 1) p8 = true;
        if (itemsize(u.dtype) == 2) p16 = true;
      }
    t << "#version 450\n"
         "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (n.int8) t << "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
    if (p8) t << "#extension GL_EXT_shader_8bit_storage : require\n";
    if (n.int16) t << "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
    if (p16) t << "#extension GL_EXT_shader_16bit_storage : require\n";
    t << "// " << p.name.view()
      << (p.grouped ? ": one item per work-group" : ": one item per thread") << '\n';
    t << "layout(local_size_x = " << std::int64_t(p.local) << ") in;\n";
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const UOp& u = p.ops[i];
      if (u.kind != UKind::Param) continue;
      t << "layout(std430, set = 0, binding = " << std::int64_t(u.arg) << ") "
        << (u.arg == 0 ? "writeonly" : "readonly") << " restrict buffer tg_B" << std::int64_t(i)
        << " { " << storage(u.dtype) << " d[]; } v" << std::int64_t(i) << "; // "
        << dtype_name(u.dtype) << '\n';
    }
    t << "layout(push_constant) uniform tg_Launch { int64_t a[" << std::int64_t(3 + p.vars.size())
      << "]; } pc; // item base, outer start, outer end, sizes\n";
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const UOp& u = p.ops[i];
      if (u.kind == UKind::GroupReduce)
        t << "shared " << type(compute_dtype(u.dtype)) << " tg_lds" << std::int64_t(i) << '['
          << std::int64_t(p.local) << "];\n";
    }
    t << "uint64_t tg_group() { return uint64_t(gl_WorkGroupID.x) + uint64_t(gl_NumWorkGroups.x) * "
         "(uint64_t(gl_WorkGroupID.y)"
         " + uint64_t(gl_NumWorkGroups.y) * uint64_t(gl_WorkGroupID.z)); }\n";
    bool half = false;
    for (const UOp& u : p.ops)
      if (is_half(u.dtype)) half = true;
    if (half)
      t << "float tg_b2f(uint b) { return uintBitsToFloat(b << 16); }\n"
           "uint tg_f2b(float f) { uint x = floatBitsToUint(f);\n"
           "  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0u) return (x >> 16) | "
           "0x40u;\n"
           "  x += 0x7fffu + ((x >> 16) & 1u); return x >> 16; }\n"
           "float tg_h2f(uint h) { uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & "
           "0x3ffu;\n"
           "  if (e == 0u) { if (m == 0u) return uintBitsToFloat(s); int k = -1; do { m <<= 1; "
           "++k; } while ((m & 0x400u) == 0u);\n"
           "    return uintBitsToFloat(s | (uint(112 - k) << 23) | ((m & 0x3ffu) << 13)); }\n"
           "  if (e == 31u) return uintBitsToFloat(s | 0x7f800000u | (m << 13));\n"
           "  return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13)); }\n"
           "uint tg_f2h(float f) { uint x = floatBitsToUint(f), s = (x >> 16) & 0x8000u, m = x & "
           "0x7fffffu;\n"
           "  int e = int((x >> 23) & 0xffu);\n"
           "  if (e == 255) return s | 0x7c00u | (m != 0u ? 0x200u : 0u);\n"
           "  e = e - 127 + 15; if (e >= 31) return s | 0x7c00u;\n"
           "  if (e <= 0) { if (e < -10) return s; m |= 0x800000u; int sh = 14 - e;\n"
           "    uint h = m >> sh, r = m & ((1u << sh) - 1u), hw = 1u << (sh - 1);\n"
           "    if (r > hw || (r == hw && (h & 1u) != 0u)) ++h; return s | h; }\n"
           "  uint h = (uint(e) << 10) | (m >> 13), r = m & 0x1fffu;\n"
           "  if (r > 0x1000u || (r == 0x1000u && (h & 1u) != 0u)) ++h; return s | h; }\n";
    // Division by zero is undefined in Vulkan (and Mesa folds x / 0.0 to 0): spelled out here.
    t << "float tg_fdiv(float a, float b) {\n"
         "  if (b != 0.0) return a / b;\n"
         "  if (isnan(a) || a == 0.0) return uintBitsToFloat(0x7fc00000u);\n"
         "  return uintBitsToFloat(((floatBitsToUint(a) ^ floatBitsToUint(b)) & 0x80000000u) | "
         "0x7f800000u); }\n";
    if (n.float64) {
      t << "double tg_ddiv(double a, double b) {\n"
           "  if (b != 0.0LF) return a / b;\n"
           "  if (isnan(a) || a == 0.0LF) return int64BitsToDouble(0x7ff8000000000000L);\n"
           "  return int64BitsToDouble(((doubleBitsToInt64(a) ^ doubleBitsToInt64(b)) & "
           "(-9223372036854775807L - 1L)) | 0x7ff0000000000000L); }\n";
      // Mesa's trunc(double) (lavapipe) returns 2^52 - 0.5 unchanged, and so does a round trip
      // through int64 there: the fraction bits are cleared by hand.
      t << "double tg_truncd(double x) {\n"
           "  int64_t b = doubleBitsToInt64(x);\n"
           "  int e = int((b >> 52) & 0x7ffL) - 1023;\n"
           "  if (e >= 52) return x;\n"
           "  if (e < 0) return int64BitsToDouble(b & (-9223372036854775807L - 1L));\n"
           "  return int64BitsToDouble(b & ~((1L << (52 - e)) - 1L)); }\n";
    }
    bool pow32 = false, exp32 = false;
    for (const UOp& u : p.ops) {
      if (u.kind == UKind::Alu && u.op == Op::Pow && u.dtype != DType::Float64) pow32 = true;
      if (u.kind == UKind::Alu && u.op == Op::Exp2 && u.dtype != DType::Float64) exp32 = true;
    }
    // 2^x for float: the C kernels' tg_exp2f (codegen/render.hpp), the same operations. GLSL's
    // exp2 returned 0 below 2^-126 on lavapipe (exp(-90)); this keeps the subnormal. Lavapipe
    // computes fma() unfused (about 6% of results were 1 ulp from INTERP's): GlslExactFloat.
    if (exp32)
      t << "float tg_exp2f(float x) {\n"
           "  x = x < -151.0 ? -151.0 : (x > 129.0 ? 129.0 : x);\n"
           "  precise float t = x + 12582912.0, f = x - (t - 12582912.0);\n"
           "  int n = int(floatBitsToUint(t) - 0x4b400000u), n1 = n >> 1;\n"
           "  precise float p = fma(1.5252734e-5, f, 1.5403530e-4);\n"
           "  p = fma(p, f, 1.3333558e-3); p = fma(p, f, 9.6181291e-3);\n"
           "  p = fma(p, f, 5.5504109e-2); p = fma(p, f, 2.4022651e-1);\n"
           "  p = fma(p, f, 6.9314718e-1); p = fma(p, f, 1.0);\n"
           "  precise float r = p * uintBitsToFloat(uint(n1 + 127) << 23);\n"
           "  precise float s = r * uintBitsToFloat(uint(n - n1 + 127) << 23);\n"
           "  return s; }\n";
    if (pow32)
      t << "float tg_powf(float a, float b) {\n"
           "  const float inf = uintBitsToFloat(0x7f800000u);\n"
           "  if (b == 0.0 || a == 1.0) return 1.0;\n"
           "  if (isnan(a) || isnan(b)) return uintBitsToFloat(0x7fc00000u);\n"
           "  bool bi = b == trunc(b), odd = bi && abs(b) < 16777216.0 && b - 2.0 * floor(b * 0.5) "
           "== 1.0;\n"
           "  if (a == 0.0) return b < 0.0 ? (odd ? sign(1.0 / a) * inf : inf) : (odd ? a : 0.0);\n"
           "  if (isinf(b)) { float m = abs(a); return m == 1.0 ? 1.0 : ((m > 1.0) == (b > 0.0) ? "
           "inf : 0.0); }\n"
           "  if (isinf(a)) return a > 0.0 ? (b > 0.0 ? inf : 0.0) : (b > 0.0 ? (odd ? -inf : inf) "
           ": (odd ? -0.0 : 0.0));\n"
           "  if (a < 0.0 && !bi) return uintBitsToFloat(0x7fc00000u);\n"
           "  float r = 1.0, x = abs(a);\n"
           "  if (bi && abs(b) < 16777216.0) {\n"
           "    for (uint n = uint(abs(b)); n != 0u; n >>= 1u) { if ((n & 1u) != 0u) r *= x; "
           "if (n > 1u) x *= x; }\n"
           "    if (b < 0.0) r = isinf(r) ? exp2(b * log2(abs(a))) : 1.0 / r;\n"
           "  } else r = exp2(b * log2(abs(a)));\n"
           "  return a < 0.0 && odd ? -r : r; }\n";
    if (n.float64)
      t << float64_exp2_log2
        << "double tg_sind(double x) {\n"
           "  if (isnan(x) || isinf(x)) return tg_d(0x7ff8000000000000L);\n"
           "  double k = floor(x * tg_d(0x3fe45f306dc9c883L) + 0.5LF);\n"
           "  double r = ((x - k * tg_d(0x3ff921fb54400000L)) - k * tg_d(0x3dd0b4611a600000L)) - k "
           "* tg_d(0x3ba3198a2e037073L);\n"
           "  double q = k - 4.0LF * floor(k * 0.25LF), r2 = r * r, s = 1.0LF, c = 1.0LF;\n"
           "  for (int j = 11; j >= 1; --j) { s = 1.0LF - s * r2 / double((2 * j) * (2 * j + 1)); "
           "c = 1.0LF - c * r2 / double((2 * j - 1) * (2 * j)); }\n"
           "  s *= r;\n"
           "  return q == 0.0LF ? s : q == 1.0LF ? c : q == 2.0LF ? -s : -c; }\n"
           "double tg_powd(double a, double b) {\n"
           "  const double inf = tg_d(0x7ff0000000000000L);\n"
           "  if (b == 0.0LF || a == 1.0LF) return 1.0LF;\n"
           "  if (isnan(a) || isnan(b)) return tg_d(0x7ff8000000000000L);\n"
           "  bool bi = b == tg_truncd(b), odd = bi && abs(b) < 9007199254740992.0LF && b - 2.0LF "
           "* "
           "floor(b * 0.5LF) == 1.0LF;\n"
           "  if (a == 0.0LF) return b < 0.0LF ? (odd ? sign(1.0LF / a) * inf : inf) : (odd ? a : "
           "0.0LF);\n"
           "  if (isinf(b)) { double m = abs(a); return m == 1.0LF ? 1.0LF : ((m > 1.0LF) == (b > "
           "0.0LF) ? inf : 0.0LF); }\n"
           "  if (isinf(a)) return a > 0.0LF ? (b > 0.0LF ? inf : 0.0LF) : (b > 0.0LF ? (odd ? "
           "-inf : inf) : (odd ? -0.0LF : 0.0LF));\n"
           "  if (a < 0.0LF && !bi) return tg_d(0x7ff8000000000000L);\n"
           "  double r = 1.0LF, x = abs(a);\n"
           "  if (bi && abs(b) < 9007199254740992.0LF) {\n"
           "    for (uint64_t n = uint64_t(abs(b)); n != 0UL; n >>= 1UL) { if ((n & 1UL) != 0UL) r "
           "*= x; if (n > 1UL) x *= x; }\n"
           "    if (b < 0.0LF) r = isinf(r) ? tg_exp2d(b * tg_log2d(abs(a))) : 1.0LF / r;\n"
           "  } else r = tg_exp2d(b * tg_log2d(abs(a)));\n"
           "  return a < 0.0LF && odd ? -r : r; }\n";
  }
  static constexpr void signature(Text& t, const Program&) { t << "void main() {\n"; }
  static constexpr void declare_param(Text& t, const UOp& u, const Program& p, int i) {
    const std::int64_t v = i;
    switch (u.kind) {
    case UKind::Param:
      t << "// v" << v << ": buffer " << std::int64_t(u.arg) << '\n';
      break;
    case UKind::Bound:
      t << "const int64_t v" << v << " = pc.a[" << std::int64_t(u.arg == 0 ? 1 : 2) << "];\n";
      break;
    case UKind::VarParam:
      t << "const int64_t v" << v << " = pc.a[" << std::int64_t(3 + u.arg) << "]; // "
        << p.vars[std::size_t(u.arg)].name.view() << '\n';
      break;
    default:
      if (u.arg == int(GpuIndex::Lane))
        t << "const int64_t v" << v << " = int64_t(gl_LocalInvocationID.x);\n";
      else if (p.grouped)
        t << "const int64_t v" << v << " = pc.a[0] + int64_t(tg_group());\n";
      else
        t << "const int64_t v" << v << " = pc.a[0] + int64_t(tg_group()) * "
          << std::int64_t(p.local) * p.per_thread << "L + int64_t(gl_LocalInvocationID.x);\n";
    }
  }
  static constexpr void open_range(Text& t, const UOp& u, int i, int start, int end) {
    t << "for (int64_t v" << std::int64_t(i) << " = v" << std::int64_t(start) << "; v"
      << std::int64_t(i) << " < v" << std::int64_t(end) << "; ";
    if (u.src[2] >= 0)
      t << 'v' << std::int64_t(i) << " += v" << std::int64_t(u.src[2]) << ") {\n";
    else
      t << "++v" << std::int64_t(i) << ") {\n";
  }
  static constexpr void load(Text& t, DType stored, int buf, int idx) {
    Text a;
    a << 'v' << std::int64_t(buf) << ".d[uint(v" << std::int64_t(idx) << ")]";
    if (stored == DType::Bool)
      t << '(' << a.view() << " != uint8_t(0))";
    else if (stored == DType::Float16)
      t << "tg_h2f(uint(" << a.view() << "))";
    else if (stored == DType::BFloat16)
      t << "tg_b2f(uint(" << a.view() << "))";
    else
      t << a.view();
  }
  static constexpr void store(Text& t, DType stored, int buf, int idx, std::string_view val) {
    t << 'v' << std::int64_t(buf) << ".d[uint(v" << std::int64_t(idx) << ")] = ";
    if (stored == DType::Bool)
      t << "uint8_t(" << val << ");\n";
    else if (stored == DType::Float16)
      t << "uint16_t(tg_f2h(" << val << "));\n";
    else if (stored == DType::BFloat16)
      t << "uint16_t(tg_f2b(" << val << "));\n";
    else
      t << val << ";\n";
  }
  static constexpr void constant(Text& t, DType d, Scalar v) {
    if (d == DType::Float64) {
      double x = v.f;
      if (x == x && x >= -9007199254740992.0 && x <= 9007199254740992.0 &&
          x == double(std::int64_t(x)) && !(x == 0 && std::bit_cast<std::uint64_t>(x) >> 63))
        t << std::int64_t(x) << ".0LF";
      else
        t << "int64BitsToDouble(0x" << Text().hex(std::bit_cast<std::uint64_t>(x)).view() << "L)";
    } else if (is_float(d)) {
      float x = float(v.f);
      if (x == x && x >= -16777216.0f && x <= 16777216.0f && x == float(std::int64_t(x)) &&
          !(x == 0 && std::bit_cast<std::uint32_t>(x) >> 31))
        t << std::int64_t(x) << ".0";
      else
        t << "uintBitsToFloat(0x" << Text().hex(std::bit_cast<std::uint32_t>(x)).view() << "u)";
    } else if (d == DType::Bool)
      t << (v.i ? "true" : "false");
    else if (d == DType::UInt64)
      t.write_unsigned(std::uint64_t(v.i)) << "UL";
    else if (d == DType::Int64) {
      if (v.i == std::numeric_limits<std::int64_t>::min())
        t << "(-9223372036854775807L - 1L)";
      else if (v.i < 0)
        t << '(' << v.i << "L)";
      else
        t << v.i << 'L';
    } else if (d == DType::Int32) {
      if (v.i == -2147483648ll)
        t << "(-2147483647 - 1)";
      else if (v.i < 0)
        t << '(' << v.i << ')';
      else
        t << v.i;
    } else if (d == DType::UInt32)
      t.write_unsigned(std::uint64_t(v.i) & 0xffffffffu) << 'u';
    else
      t << type(d) << '(' << v.i << ')';
  }
  static constexpr void typed_int(Text& t, DType d, std::int64_t v) {
    constant(t, d, Scalar::of_int(d, v));
  }
  static constexpr void unary(Text& t, Op op, DType d, std::string_view a) {
    const bool f64 = d == DType::Float64;
    switch (op) {
    case Op::Neg:
      t << (d == DType::Bool ? "!" : "-") << a;
      break;
    case Op::Recip:
      t << (f64 ? "tg_ddiv(1.0LF, " : "tg_fdiv(1.0, ") << a << ')';
      break;
    case Op::Sqrt:
      t << "sqrt(" << a << ')';
      break;
    case Op::Exp2:
      t << (f64 ? "tg_exp2d(" : "tg_exp2f(") << a << ')';
      break;
    case Op::Log2:
      t << (f64 ? "tg_log2d(" : "log2(") << a << ')';
      break;
    case Op::Sin:
      t << (f64 ? "tg_sind(" : "sin(") << a << ')';
      break;
    case Op::Trunc:
      t << (f64 ? "tg_truncd(" : "trunc(") << a << ')';
      break;
    default:
      t << a;
    }
  }
  static constexpr void binary(Text& t, Op op, DType d, std::string_view a, std::string_view b) {
    if (d == DType::Bool) {
      switch (op) {
      case Op::Add:
      case Op::Or:
      case Op::Max:
        t << '(' << a << " || " << b << ')';
        return;
      case Op::Mul:
      case Op::And:
        t << '(' << a << " && " << b << ')';
        return;
      case Op::Xor:
      case Op::CmpNe:
        t << '(' << a << " != " << b << ')';
        return;
      case Op::CmpEq:
        t << '(' << a << " == " << b << ')';
        return;
      case Op::CmpLt:
        t << "(!" << a << " && " << b << ')';
        return;
      default:
        break;
      }
    }
    if (is_int(d) && (op == Op::Div || op == Op::Mod)) {
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
        t << " : -" << a << ')';
      }
      if (op == Op::Div)
        t << " : " << a << " / " << b << ')';
      else if (is_unsigned(d))
        t << " : " << a << " % " << b << ')';
      else
        t << " : " << a << " - (" << a << " / " << b << ") * " << b << ')';
      return;
    }
    if (op == Op::Div && is_float(d)) {
      t << (d == DType::Float64 ? "tg_ddiv(" : "tg_fdiv(") << a << ", " << b << ')';
      return;
    }
    const char* sym = nullptr;
    switch (op) {
    case Op::Add:
      sym = " + ";
      break;
    case Op::Mul:
      sym = " * ";
      break;
    case Op::Div:
      sym = " / ";
      break;
    case Op::Mod:
      sym = " % ";
      break;
    case Op::CmpLt:
      sym = " < ";
      break;
    case Op::CmpEq:
      sym = " == ";
      break;
    case Op::CmpNe:
      sym = " != ";
      break;
    case Op::And:
      sym = " & ";
      break;
    case Op::Or:
      sym = " | ";
      break;
    case Op::Xor:
      sym = " ^ ";
      break;
    case Op::Max:
      if (is_float(d))
        t << "((" << a << " > " << b << " || isnan(" << a << ")) ? " << a << " : " << b << ')';
      else
        t << '(' << a << " > " << b << " ? " << a << " : " << b << ')';
      return;
    case Op::Pow:
      t << (d == DType::Float64 ? "tg_powd(" : "tg_powf(") << a << ", " << b << ')';
      return;
    default:
      break;
    }
    t << '(' << a << sym << b << ')';
  }
  /// Float to integer as the reference interpreter does it (x86: out of range and NaN give the
  /// "integer indefinite", unsigned 64-bit gives 0).
  static constexpr void float_to_int(Text& t, DType from, DType to, std::string_view a) {
    const char* s = from == DType::Float64 ? "LF" : "";
    if (to == DType::UInt64) {
      t << "((" << a << " >= 0.0" << s << " && " << a << " < 18446744073709551616.0" << s
        << ") ? uint64_t(" << a << ") : 0UL)";
      return;
    }
    if (to == DType::Int64 || to == DType::UInt32) {
      if (to == DType::UInt32) t << "uint(";
      t << "((" << a << " >= -9223372036854775808.0" << s << " && " << a
        << " < 9223372036854775808.0" << s << ") ? int64_t(" << a
        << ") : (-9223372036854775807L - 1L))";
      if (to == DType::UInt32) t << ')';
      return;
    }
    if (to != DType::Int32) t << type(to) << '(';
    t << "((" << a << " >= -2147483648.0" << s << " && " << a << " < 2147483648.0" << s
      << ") ? int(" << a << ") : (-2147483647 - 1))";
    if (to != DType::Int32) t << ')';
  }
  static constexpr void cast(Text& t, DType from, DType to, std::string_view a) {
    DType cf = compute_dtype(from);
    if (to == DType::Bool) {
      if (from == DType::Bool)
        t << a;
      else {
        t << '(' << a << " != ";
        typed_zero(t, cf);
        t << ')';
      }
    } else if (to == DType::Float16)
      t << "tg_h2f(tg_f2h(float(" << a << ")))";
    else if (to == DType::BFloat16)
      t << "tg_b2f(tg_f2b(float(" << a << ")))";
    else if (is_half(from) && to == DType::Float32)
      t << a;
    else if (is_float(cf) && is_int(to))
      float_to_int(t, cf, to, a);
    else if (from == DType::Int32 && itemsize(to) == 8 && is_int(to)) {
      // sign extension spelled out: Mesa 22 (lavapipe) miscompiles comparisons of int64(int32) with
      // constants
      if (to == DType::UInt64) t << "uint64_t(";
      t << "((int64_t(uint(" << a << ")) ^ 0x80000000L) - 0x80000000L)";
      if (to == DType::UInt64) t << ')';
    } else
      t << type(to) << '(' << a << ')';
  }
  static constexpr void typed_zero(Text& t, DType d) {
    if (is_float(d))
      t << (d == DType::Float64 ? "0.0LF" : "0.0");
    else
      typed_int(t, d, 0);
  }
  static constexpr void bitcast(Text& t, DType from, DType to, std::string_view a) {
    if (is_half(from) && is_half(to)) {
      t << (to == DType::Float16 ? "tg_h2f(" : "tg_b2f(")
        << (from == DType::Float16 ? "tg_f2h(" : "tg_f2b(") << a << "))";
    } else if (is_half(from)) {
      t << type(to) << '(' << (from == DType::Float16 ? "tg_f2h(" : "tg_f2b(") << a << "))";
    } else if (is_half(to)) {
      t << (to == DType::Float16 ? "tg_h2f(uint(uint16_t(" : "tg_b2f(uint(uint16_t(") << a << ")))";
    } else if (from == DType::Float32) {
      t << (to == DType::UInt32 ? "floatBitsToUint(" : "floatBitsToInt(") << a << ')';
    } else if (to == DType::Float32) {
      t << (from == DType::UInt32 ? "uintBitsToFloat(" : "intBitsToFloat(") << a << ')';
    } else if (from == DType::Float64) {
      t << (to == DType::UInt64 ? "doubleBitsToUint64(" : "doubleBitsToInt64(") << a << ')';
    } else if (to == DType::Float64) {
      t << (from == DType::UInt64 ? "uint64BitsToDouble(" : "int64BitsToDouble(") << a << ')';
    } else if (to == DType::Bool) {
      t << '(' << a << " != ";
      typed_int(t, from, 0);
      t << ')';
    } else
      t << type(to) << '(' << a << ')'; // same-size integers (and bool): the same bits
  }
  static constexpr void local_array(Text& t, DType, std::string_view name, int) {
    t << "// " << name << ": shared, declared above\n";
  }
  static constexpr void barrier(Text& t) { t << "barrier();\n"; }
};

/// GLSL for devices with subgroup arithmetic in compute shaders: a work-group reduction of a
/// 32-bit sum, product or integer maximum is first reduced within each subgroup
/// (GL_KHR_shader_subgroup_arithmetic), then across the subgroups through local memory. Other
/// reductions (float max, which must propagate NaN; 8/16/64-bit and bool) use the tree.
struct GlslSubgroupDialect : GlslDialect {
  static constexpr bool own_group_reduce = true; // subgroup operations
  static constexpr bool fits(const UOp& u) {
    if (u.dtype == DType::Float32) return u.op == Op::Add || u.op == Op::Mul;
    if (u.dtype == DType::Int32 || u.dtype == DType::UInt32)
      return u.op == Op::Add || u.op == Op::Mul || u.op == Op::Max;
    return false;
  }
  static constexpr void prelude(Text& t, const Program& p) {
    Text base;
    GlslDialect::prelude(base, p);
    std::string_view b = base.view();
    bool any = false;
    for (const UOp& u : p.ops) any = any || (u.kind == UKind::GroupReduce && fits(u));
    std::size_t eol = b.find('\n') + 1;
    t << b.substr(0, eol);
    if (any)
      t << "#extension GL_KHR_shader_subgroup_basic : require\n"
           "#extension GL_KHR_shader_subgroup_arithmetic : require\n";
    t << b.substr(eol);
  }
  static constexpr void group_reduce(Text& t, const Program& p, const UOp& u, int i, int depth) {
    if (!fits(u)) return CStyleRenderer::group_reduce<GlslSubgroupDialect>(t, p, u, i, depth);
    auto indent = [&](int extra) -> Text& {
      for (int k = 0; k < depth + extra; ++k) t << "  ";
      return t;
    };
    Text acc, lds, a, b;
    CStyleRenderer::name(acc, p, u.src[0]);
    lds << "tg_lds" << std::int64_t(i);
    a << lds.view() << "[0]";
    b << lds.view() << "[tg_k]";
    const char* fn = u.op == Op::Add   ? "subgroupAdd("
                     : u.op == Op::Mul ? "subgroupMul("
                                       : "subgroupMax(";
    indent(0) << "{ // " << lds.view() << ": shared, declared above; one value per subgroup\n";
    indent(1) << acc.view() << " = " << fn << acc.view() << ");\n";
    indent(1) << "if (subgroupElect()) " << lds.view() << "[gl_SubgroupID] = " << acc.view()
              << ";\n";
    indent(1) << "barrier();\n";
    indent(1) << "if (gl_LocalInvocationIndex == 0u)\n";
    indent(2) << "for (uint tg_k = 1u; tg_k < gl_NumSubgroups; ++tg_k) " << a.view() << " = ";
    binary(t, u.op, u.dtype, a.view(), b.view());
    t << ";\n";
    indent(1) << "barrier();\n";
    indent(1) << acc.view() << " = " << a.view() << ";\n";
    indent(1) << "barrier();\n";
    indent(0) << "}\n";
  }
};

/// GLSL for a device with float64 whose float math rounds differently from the CPU's and INTERP's
/// (lavapipe), so that float results are their bits:
/// - its fma() rounds twice, as a multiply and an add: the float exp2 polynomial, which the CPU and
///   INTERP compute with fused multiply-adds, calls tg_fma instead, an exact one in float64 (the
///   product of two floats is exact there, the sum is rounded to odd: TwoSum tells whether it was
///   exact, and an inexact even result moves one ulp toward the exact value; rounding that to
///   float is then the fused result);
/// - its exp2 and log2 are a few ulp off: pow's general case, 2^(b log2 |a|), is computed in
///   float64 (tg_exp2d, tg_log2d) and rounded once, as glibc's powf does.
template <class Base> struct GlslExactFloat : Base {
  static constexpr void prelude(Text& t, const Program& p) {
    Text base;
    Base::prelude(base, p);
    std::string_view b = base.view();
    const std::size_t exp2 = b.find("float tg_exp2f("), pow = b.find("float tg_powf(");
    std::size_t first = std::min(exp2, pow);
    if (first == std::string_view::npos) {
      t << b;
      return;
    }
    t << b.substr(0, first);
    if (exp2 != std::string_view::npos)
      t << "float tg_fma(float a, float b, float c) {\n"
           "  precise double p = double(a) * double(b), s = p + double(c), z = s - p;\n"
           "  precise double e = (p - (s - z)) + (double(c) - z);\n"
           "  uvec2 w = unpackDouble2x32(s);\n"
           "  if (e != 0.0 && (w.x & 1u) == 0u) {\n"
           "    if ((e > 0.0) == (s > 0.0)) w.x += 1u;\n"
           "    else if (w.x == 0u) { w.x = 0xffffffffu; w.y -= 1u; } else w.x -= 1u;\n"
           "    s = packDouble2x32(w);\n"
           "  }\n"
           "  return float(s); }\n";
    if (pow != std::string_view::npos) {
      if (b.find("double tg_exp2d(") == std::string_view::npos)
        t << Base::float64_exp2_log2;
      else // defined further down (a float64 program's)
        t << "double tg_exp2d(double x);\ndouble tg_log2d(double x);\n";
      t << "float tg_pow2f(float b, float x) { return float(tg_exp2d(double(b) * "
           "tg_log2d(double(x)))); }\n";
    }
    // the rest, with those calls replaced
    Text fused;
    replace(fused, b.substr(first), " fma(", " tg_fma(");
    replace(t, fused.view(), "exp2(b * log2(abs(a)))", "tg_pow2f(b, abs(a))");
  }
  static constexpr void replace(Text& t, std::string_view s, std::string_view from,
                                std::string_view to) {
    for (std::size_t k; (k = s.find(from)) != std::string_view::npos;) {
      t << s.substr(0, k) << to;
      s = s.substr(k + from.size());
    }
    t << s;
  }
};

/// The GLSL compute shader of a program shaped by gpu_program (`subgroups`: the device has
/// subgroup arithmetic in compute shaders; `exact_float`: it has float64 and its fma, exp2 and log2
/// round differently, GlslExactFloat).
constexpr Text render_glsl(const Program& gpu, bool subgroups = false, bool exact_float = false) {
  // if, not ?: (GCC 12 destroys a ?: class prvalue twice in constant evaluation)
  if (exact_float) {
    if (subgroups) return CStyleRenderer::render<GlslExactFloat<GlslSubgroupDialect>>(gpu);
    return CStyleRenderer::render<GlslExactFloat<GlslDialect>>(gpu);
  }
  if (subgroups) return CStyleRenderer::render<GlslSubgroupDialect>(gpu);
  return CStyleRenderer::render<GlslDialect>(gpu);
}

} // namespace tg
