#pragma once
// The GLSL dialect of the C-style renderer: a Vulkan compute shader (#version 450) per kernel,
// for programs shaped by gpu_program. Buffers are std430 storage buffers (binding = parameter
// index), the launch values (item base, outer start/end, symbolic sizes) are int64 push
// constants, and the shader asks for the extensions its dtypes need: 64-bit ints (always: index
// arithmetic), float64, and 8-/16-bit storage with their arithmetic types. bool is stored as a
// byte, float16/bfloat16 as 16 bits (decompose converts them); what GLSL lacks or Mesa computes
// differently from INTERP (float64 exp2/log2/sin/trunc, an exact float fma) comes from the
// prelude; the rest (division by zero, pow, float exp2) from decompose.
#include "../graph/sint_text.hpp"
#include "gpu_program.hpp"
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

/// 2^x and log2(x) in float64 (GLSL has neither for doubles), with tg_d(bits) to spell constants.
inline constexpr std::string_view kGlslExp2Log2d =
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
/// The GLSL dialect. `Subgroups`: the device has subgroup arithmetic in compute shaders (a
/// work-group reduction of a 32-bit sum, product or integer maximum is first reduced within each
/// subgroup); `Exact`: it has float64 and its fma, exp2 and log2 round differently from INTERP's
/// (lavapipe computes fma() as a multiply and an add): the float exp2 polynomial calls tg_fma, an
/// exact one in float64 (the product of two floats is exact there, the sum is rounded to odd:
/// TwoSum tells whether it was exact, and an inexact even result moves one ulp toward the exact
/// value; rounding that to float is then the fused result), and decompose computes pow's general
/// case in float64 (Target::glsl).
template <bool Subgroups, bool Exact> struct GlslDialect : CStyle<GlslDialect<Subgroups, Exact>> {
  using Base = CStyle<GlslDialect>;
  /// Computed floats are `precise`: without it the driver may reassociate and simplify float
  /// math as if it were exact (lavapipe turns log_softmax of [inf] into 0, not NaN).
  static constexpr const char* qualifier(DType t) { return is_float(t) ? "precise " : ""; }
  static constexpr bool own_group_reduce = Subgroups;
  static constexpr bool mod_by_div = true; // `%` of negative operands is undefined
  static constexpr const char* fma(DType d) {
    return Exact && d != DType::Float64 ? "tg_fma" : "fma";
  }
  static constexpr const char* type(DType t) {
    constexpr const char* names[dtype_count] = {
        "bool", "int8_t",   "int16_t",  "int",      "int64_t", "uint8_t", "uint16_t",
        "uint", "uint64_t", "uint16_t", "uint16_t", "float",   "double"};
    return names[int(t)];
  }
  static constexpr DType storage(DType t) { return t == DType::Bool ? DType::UInt8 : t; }
  static constexpr void convert(Text& t, DType to, std::string_view a) {
    t << type(to) << '(' << a << ')';
  }
  static constexpr const char* fsuffix(DType d) { return d == DType::Float64 ? "LF" : ""; }
  static constexpr const char* int_suffix(DType d) { return d == DType::UInt64 ? "UL" : "L"; }
  static constexpr const char* boolean(bool b) { return b ? "true" : "false"; }
  /// Integral values as decimals, others as their bits (exact whatever the compiler's parser).
  static constexpr void float_constant(Text& t, DType d, double x) {
    const bool f64 = d == DType::Float64;
    const double big = f64 ? 9007199254740992.0 : 16777216.0;
    if (x == x && x >= -big && x <= big && x == double(std::int64_t(x)) &&
        !(x == 0 && std::bit_cast<std::uint64_t>(x) >> 63))
      t << std::int64_t(x) << (f64 ? ".0LF" : ".0");
    else if (f64)
      t << "int64BitsToDouble(0x" << Text().hex(std::bit_cast<std::uint64_t>(x)).view() << "L)";
    else
      t << "uintBitsToFloat(0x" << Text().hex(std::bit_cast<std::uint32_t>(float(x))).view()
        << "u)";
  }
  static constexpr void is_nan(Text& t, std::string_view a) { t << "isnan(" << a << ')'; }
  static constexpr const char* math(Op op, DType d) {
    // (pow: decompose writes it as the others, Target::glsl)
    constexpr const char* f[] = {"sqrt", "exp2", "log2", "sin", "trunc", "pow"};
    constexpr const char* g[] = {"sqrt", "tg_exp2d", "tg_log2d", "tg_sind", "tg_truncd", "pow"};
    return (d == DType::Float64 ? g : f)[Base::math_index(op)];
  }
  static constexpr void reinterpret(Text& t, DType from, DType to, std::string_view a) {
    const bool u = from == DType::UInt32 || from == DType::UInt64 || to == DType::UInt32 ||
                   to == DType::UInt64;
    if (from == DType::Float32)
      t << (u ? "floatBitsToUint(" : "floatBitsToInt(");
    else if (to == DType::Float32)
      t << (u ? "uintBitsToFloat(" : "intBitsToFloat(");
    else if (from == DType::Float64)
      t << (u ? "doubleBitsToUint64(" : "doubleBitsToInt64(");
    else
      t << (u ? "uint64BitsToDouble(" : "int64BitsToDouble(");
    t << a << ')';
  }
  static constexpr void cast(Text& t, DType from, DType to, std::string_view a) {
    if (from == DType::Int32 && itemsize(to) == 8 && is_int(to)) {
      // sign extension spelled out: Mesa 22 (lavapipe) miscompiles comparisons of int64(int32)
      // with constants
      Text x;
      x << "((int64_t(uint(" << a << ")) ^ 0x80000000L) - 0x80000000L)";
      if (to == DType::UInt64) return convert(t, to, x.view());
      return void(t << x.view());
    }
    Base::cast(t, from, to, a);
  }
  static constexpr void element(Text& t, int buf, int idx) {
    t << 'v' << std::int64_t(buf) << ".d[uint(v" << std::int64_t(idx) << ")]";
  }
  static constexpr void shared_element(Text& t, int buf, int idx) {
    t << 'v' << std::int64_t(buf) << "[uint(v" << std::int64_t(idx) << ")]";
  }

  static constexpr bool fits_subgroup(const UOp& u) {
    if (u.dtype == DType::Float32) return u.op == Op::Add || u.op == Op::Mul;
    if (u.dtype == DType::Int32 || u.dtype == DType::UInt32)
      return u.op == Op::Add || u.op == Op::Mul || u.op == Op::Max;
    return false;
  }
  static constexpr void prelude(Text& t, const Program& p) {
    const GlslNeeds n = glsl_needs(p);
    bool p8 = false, p16 = false, fma32 = false, sub = false;
    for (const UOp& u : p.ops) {
      if (u.kind == UKind::Param) {
        p8 = p8 || itemsize(u.dtype) == 1;
        p16 = p16 || itemsize(u.dtype) == 2;
      }
      fma32 = fma32 || (u.kind == UKind::Alu && u.op == Op::MulAdd && u.dtype != DType::Float64);
      sub = sub || (Subgroups && u.kind == UKind::GroupReduce && fits_subgroup(u));
    }
    t << "#version 450\n";
    if (sub)
      t << "#extension GL_KHR_shader_subgroup_basic : require\n"
           "#extension GL_KHR_shader_subgroup_arithmetic : require\n";
    t << "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
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
        << (u.arg < p.outputs ? "writeonly" : "readonly") << " restrict buffer tg_B"
        << std::int64_t(i) << " { " << type(storage(u.dtype)) << " d[]; } v" << std::int64_t(i)
        << "; // " << dtype_name(u.dtype) << '\n';
    }
    t << "layout(push_constant) uniform tg_Launch { int64_t a[" << std::int64_t(3 + p.vars.size())
      << "]; } pc; // item base, outer start, outer end, sizes\n";
    for (std::size_t i = 0; i < p.ops.size(); ++i)
      if (p.ops[i].kind == UKind::GroupReduce)
        t << "shared " << type(compute_dtype(p.ops[i].dtype)) << " tg_lds" << std::int64_t(i) << '['
          << std::int64_t(p.local) << "];\n";
      else if (p.ops[i].kind == UKind::Shared)
        t << "shared " << type(compute_dtype(p.ops[i].dtype)) << " v" << std::int64_t(i) << '['
          << std::int64_t(p.ops[i].arg) << "];\n";
    t << "uint64_t tg_group() { return uint64_t(gl_WorkGroupID.x) + uint64_t(gl_NumWorkGroups.x) * "
         "(uint64_t(gl_WorkGroupID.y) + uint64_t(gl_NumWorkGroups.y) * "
         "uint64_t(gl_WorkGroupID.z)); }\n";
    if (n.float64) {
      t << kGlslExp2Log2d;
      // Mesa's trunc(double) (lavapipe) returns 2^52 - 0.5 unchanged, and so does a round trip
      // through int64 there: the fraction bits are cleared by hand.
      t << "double tg_truncd(double x) {\n"
           "  int64_t b = doubleBitsToInt64(x);\n"
           "  int e = int((b >> 52) & 0x7ffL) - 1023;\n"
           "  if (e >= 52) return x;\n"
           "  if (e < 0) return int64BitsToDouble(b & (-9223372036854775807L - 1L));\n"
           "  return int64BitsToDouble(b & ~((1L << (52 - e)) - 1L)); }\n";
      t << "double tg_sind(double x) {\n"
           "  if (isnan(x) || isinf(x)) return tg_d(0x7ff8000000000000L);\n"
           "  double k = floor(x * tg_d(0x3fe45f306dc9c883L) + 0.5LF);\n"
           "  double r = ((x - k * tg_d(0x3ff921fb54400000L)) - k * tg_d(0x3dd0b4611a600000L)) - k "
           "* tg_d(0x3ba3198a2e037073L);\n"
           "  double q = k - 4.0LF * floor(k * 0.25LF), r2 = r * r, s = 1.0LF, c = 1.0LF;\n"
           "  for (int j = 11; j >= 1; --j) { s = 1.0LF - s * r2 / double((2 * j) * (2 * j + 1)); "
           "c = 1.0LF - c * r2 / double((2 * j - 1) * (2 * j)); }\n"
           "  s *= r;\n"
           "  return q == 0.0LF ? s : q == 1.0LF ? c : q == 2.0LF ? -s : -c; }\n";
    }
    // an exact float fma (the exp2 polynomial's, decompose.hpp)
    if (Exact && fma32)
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
  }
  static constexpr void signature(Text& t, const Program&) { t << "void main() {\n"; }
  static constexpr const char* lane_id = "gl_LocalInvocationID.x";
  static constexpr void launch_arg(Text& t, int k) { t << "pc.a[" << std::int64_t(k) << ']'; }
  static constexpr void comment(Text& t, std::string_view s) { t << " // " << s; }
  static constexpr void barrier(Text& t) { t << "barrier();\n"; }
  /// Subgroups: within each subgroup (GL_KHR_shader_subgroup_arithmetic), then across the
  /// subgroups through local memory. Other reductions (float max, which must propagate NaN;
  /// 8/16/64-bit and bool) use the shared tree.
  static constexpr void group_reduce(Text& t, const Program& p, const UOp& u, int i, int depth) {
    if (!fits_subgroup(u)) return CStyleRenderer::group_reduce<GlslDialect>(t, p, u, i, depth);
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
    Base::binary(t, u.op, u.dtype, a.view(), b.view());
    t << ";\n";
    indent(1) << "barrier();\n";
    indent(1) << acc.view() << " = " << a.view() << ";\n";
    indent(1) << "barrier();\n";
    indent(0) << "}\n";
  }
};

/// The GLSL compute shader of a program shaped by gpu_program and decomposed (the pass list's
/// Target::glsl(); `subgroups`: the device has subgroup arithmetic in compute shaders;
/// `exact_float`: it has float64 and its fma, exp2 and log2 round differently, see GlslDialect).
constexpr Text render_glsl(const Program& p, bool subgroups = false, bool exact_float = false) {
  // if, not ?: (GCC 12 destroys a ?: class prvalue twice in constant evaluation)
  if (exact_float) {
    if (subgroups) return CStyleRenderer::render<GlslDialect<true, true>>(p);
    return CStyleRenderer::render<GlslDialect<false, true>>(p);
  }
  if (subgroups) return CStyleRenderer::render<GlslDialect<true, false>>(p);
  return CStyleRenderer::render<GlslDialect<false, false>>(p);
}

} // namespace tg
