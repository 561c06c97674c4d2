#pragma once
// The WGSL dialect of the C-style renderer: a WebGPU compute shader per kernel, for programs
// shaped by gpu_program, decomposed and narrowed to 32-bit integers (narrow32: WGSL has no 8-,
// 16- or 64-bit integers). Buffers are storage buffers (binding = parameter index); bool, 8- and
// 16-bit tensors are packed four or two to a 32-bit word: loads unpack, and a packed output is
// written with atomicAnd/atomicOr on its word, so threads storing neighbouring elements never
// race. On a device with shader-f16 (F16), float16 buffers are array<f16> instead: elements move
// in and out as bits (decompose has rounded them exactly; WGSL leaves the rounding of an f32 ->
// f16 conversion to the implementation), and a store needs no atomics. The launch values (item
// base, outer start/end, symbolic sizes) are int32 in a uniform buffer bound after the storage
// buffers. Float constants that are not finite cannot be constant expressions in WGSL: they come
// from a function call.
#include "../graph/sint_text.hpp"
#include "gpu_program.hpp"
#include "render.hpp"

namespace tg {

template <bool F16 = false> struct WgslDialect : CStyle<WgslDialect<F16>> {
  using Base = CStyle<WgslDialect<F16>>;
  static constexpr const char* group_id = "tg_group";
  static constexpr const char* lane_id = "tg_lid.x";
  /// Value types (after narrow32 only bool, i32, u32 and f32 remain; 16-bit floats are words).
  static constexpr const char* type(DType t) {
    constexpr const char* names[dtype_count] = {"bool", "i32", "i32", "i32", "i64", "u32", "u32",
                                                "u32",  "u64", "u32", "u32", "f32", "f64"};
    return names[int(t)];
  }
  /// Whether a buffer of dtype d is packed into 32-bit words.
  static constexpr bool packed(DType d) { return itemsize(d) < 4 && !native(d); }
  /// Whether a buffer of dtype d is an array<f16>.
  static constexpr bool native(DType d) { return F16 && d == DType::Float16; }
  static constexpr void declare(Text& t, Decl k, DType d, std::string_view name) {
    t << (k == Decl::Mutable ? "var " : "let ") << name << ": " << type(d) << " = ";
  }
  static constexpr void convert(Text& t, DType to, std::string_view a) {
    t << type(to) << '(' << a << ')';
  }
  static constexpr void select(Text& t, std::string_view c, std::string_view a,
                               std::string_view b) {
    t << "select(" << b << ", " << a << ", " << c << ')';
  }
  static constexpr const char* fsuffix(DType) { return "f"; }
  static constexpr const char* int_suffix(DType) { return ""; }
  static constexpr const char* boolean(bool b) { return b ? "true" : "false"; }
  /// Integral values as decimals, other finite ones as their bits (exact whatever the parser);
  /// infinities and NaN through tg_f, as a constant expression may not evaluate to them.
  static constexpr void float_constant(Text& t, DType, double x) {
    const float f = float(x);
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
    Text hex;
    hex.hex(bits);
    if (f == f && f >= -16777216.0f && f <= 16777216.0f && f == float(std::int64_t(f)) &&
        !(f == 0 && (bits >> 31)))
      t << std::int64_t(f) << ".0f";
    else if ((bits & 0x7f800000u) == 0x7f800000u)
      t << "tg_f(0x" << hex.view() << "u)";
    else
      t << "bitcast<f32>(0x" << hex.view() << "u)";
  }
  /// By the bits, which no compiler folds (WGSL lets an implementation assume no NaN in floats).
  static constexpr void is_nan(Text& t, std::string_view a) {
    t << "((bitcast<u32>(" << a << ") & 0x7fffffffu) > 0x7f800000u)";
  }
  /// A float `!=` true for NaN by the bits: WGSL lets a compiler assume no NaN, and Dawn's Vulkan
  /// backend over Mesa 25 then folds `x != x` to false and `NaN != 1` likewise.
  static constexpr void binary(Text& t, Op op, DType d, std::string_view a, std::string_view b) {
    if (op != Op::CmpNe || !is_float(d)) return Base::binary(t, op, d, a, b);
    Text nan_a, nan_b;
    is_nan(nan_a, a);
    if (a == b) return void(t << nan_a.view());
    is_nan(nan_b, b);
    t << "(!(" << a << " == " << b << ") || " << nan_a.view() << " || " << nan_b.view() << ')';
  }
  /// A float is true where it is not +-0, NaN included (by the bits, as for `!=`).
  static constexpr void cast(Text& t, DType from, DType to, std::string_view a) {
    if (to != DType::Bool || !is_float(compute_dtype(from))) return Base::cast(t, from, to, a);
    t << "((bitcast<u32>(" << a << ") & 0x7fffffffu) != 0u)";
  }
  static constexpr const char* math(Op op, DType) {
    constexpr const char* f[] = {"sqrt", "exp2", "log2", "sin", "trunc", "pow"};
    return f[Base::math_index(op)];
  }
  static constexpr const char* fma(DType) { return "fma"; }
  static constexpr void reinterpret(Text& t, DType, DType to, std::string_view a) {
    t << "bitcast<" << type(to) << ">(" << a << ')';
  }
  static constexpr void unary(Text& t, Op op, DType d, std::string_view a) {
    if (op == Op::Neg && is_unsigned(d)) return void(t << "(0u - " << a << ')');
    Base::unary(t, op, d, a);
  }
  static constexpr void increment(Text& t, std::string_view var) { t << var << "++"; }
  static constexpr void open_for(Text& t, DType d, std::string_view var, std::string_view init,
                                 std::string_view cond, std::string_view step) {
    t << "for (var " << var << ": " << type(d) << " = " << init << "; " << cond << "; " << step
      << ") {\n";
  }
  /// The word holding element idx of packed buffer buf, and the bit where the element starts.
  static constexpr void word(Text& t, DType d, int buf, int idx) {
    t << 'v' << std::int64_t(buf) << "[v" << std::int64_t(idx)
      << (itemsize(d) == 1 ? " >> 2u]" : " >> 1u]");
  }
  static constexpr void shift(Text& t, DType d, int idx) {
    t << "((u32(v" << std::int64_t(idx) << (itemsize(d) == 1 ? ") & 3u) * 8u)" : ") & 1u) * 16u)");
  }
  static constexpr void load(Text& t, DType stored, DType value, int buf, int idx) {
    if (native(stored)) { // the bits, in the low half of a u32 (decompose decodes them)
      t << "bitcast<u32>(vec2<f16>(";
      Base::element(t, buf, idx);
      return void(t << ", 0.0h))");
    }
    if (!packed(stored)) return Base::load(t, stored, value, buf, idx);
    Text raw;
    raw << "((";
    word(raw, stored, buf, idx);
    raw << " >> ";
    shift(raw, stored, idx);
    raw << (itemsize(stored) == 1 ? ") & 0xffu)" : ") & 0xffffu)");
    if (stored == DType::Bool)
      t << '(' << raw.view() << " != 0u)";
    else if (stored == DType::Int8 || stored == DType::Int16) // sign-extended
      t << "(bitcast<i32>(" << raw.view()
        << (stored == DType::Int8 ? " << 24u) >> 24u)" : " << 16u) >> 16u)");
    else
      t << raw.view();
  }
  static constexpr void store(Text& t, DType stored, DType value, int buf, int idx,
                              std::string_view val) {
    if (native(stored)) {
      Base::element(t, buf, idx);
      return void(t << " = bitcast<vec2<f16>>(u32(" << val << ")).x;\n");
    }
    if (!packed(stored)) return Base::store(t, stored, value, buf, idx, val);
    Text w, s;
    w << '&';
    word(w, stored, buf, idx);
    shift(s, stored, idx);
    const char* mask = itemsize(stored) == 1 ? "0xffu" : "0xffffu";
    t << "atomicAnd(" << w.view() << ", ~(" << mask << " << " << s.view() << ")); atomicOr("
      << w.view() << ", (u32(" << val << ") & " << mask << ") << " << s.view() << ");\n";
  }

  /// Parameter k's buffer: named after its Param op, or tg_unusedK where the kernel reads none
  /// (it is bound all the same).
  static constexpr void buffer(Text& t, const Program& p, std::int64_t k) {
    for (std::size_t i = 0; i < p.ops.size(); ++i)
      if (p.ops[i].kind == UKind::Param && p.ops[i].arg == k)
        return void(t << 'v' << std::int64_t(i));
    t << "tg_unused" << k;
  }
  static constexpr void prelude(Text& t, const Program& p) {
    t << "// " << p.name.view()
      << (p.grouped ? ": one item per work-group" : ": one item per thread") << '\n';
    const std::int64_t n = std::int64_t(p.params.size());
    for (std::int64_t k = 0; k < n; ++k)
      if (native(p.params[std::size_t(k)])) {
        t << "enable f16;\n";
        break;
      }
    t << "fn tg_f(b: u32) -> f32 { return bitcast<f32>(b); }\n";
    for (std::int64_t k = 0; k < n; ++k) {
      const DType d = p.params[std::size_t(k)];
      const bool out = k < p.outputs;
      t << "@group(0) @binding(" << k << ") var<storage, " << (out ? "read_write" : "read") << "> ";
      buffer(t, p, k);
      t << ": array<"
        << (native(d)    ? "f16"
            : !packed(d) ? type(d)
            : out        ? "atomic<u32>"
                         : "u32")
        << ">; // " << dtype_name(d) << '\n';
    }
    const std::int64_t launch = 3 + std::int64_t(p.vars.size());
    t << "struct tg_Launch { a: array<vec4<i32>, " << (launch + 3) / 4
      << "> } // item base, outer start, outer end, sizes\n"
      << "@group(0) @binding(" << n << ") var<uniform> tg_pc: tg_Launch;\n";
    for (std::size_t i = 0; i < p.ops.size(); ++i)
      if (p.ops[i].kind == UKind::GroupReduce || p.ops[i].kind == UKind::Shared)
        t << "var<workgroup> " << (p.ops[i].kind == UKind::Shared ? "v" : "tg_lds")
          << std::int64_t(i) << ": array<" << type(compute_dtype(p.ops[i].dtype)) << ", "
          << std::int64_t(p.ops[i].kind == UKind::Shared ? p.ops[i].arg : p.local) << ">;\n";
  }
  /// The work-group's index from the built-ins (uniform values, so barriers under its tests pass
  /// WGSL's uniformity analysis). Every binding is used (`_ = &v;`): a pipeline's derived layout
  /// holds only the ones its shader uses, and the runtime binds them all.
  static constexpr void signature(Text& t, const Program& p) {
    t << "@compute @workgroup_size(" << std::int64_t(p.local) << ")\nfn " << p.name.view()
      << "(@builtin(workgroup_id) tg_wid: vec3<u32>, @builtin(num_workgroups) tg_nwg: vec3<u32>, "
         "@builtin(local_invocation_id) tg_lid: vec3<u32>) {\n"
         "  let tg_group = tg_wid.x + tg_nwg.x * (tg_wid.y + tg_nwg.y * tg_wid.z);\n ";
    for (std::int64_t k = 0; k < std::int64_t(p.params.size()); ++k) {
      t << " _ = &";
      buffer(t, p, k);
      t << ';';
    }
    t << " _ = &tg_pc;\n";
  }
  static constexpr void launch_arg(Text& t, int k) {
    const char lane[] = {'x', 'y', 'z', 'w'};
    t << "tg_pc.a[" << std::int64_t(k / 4) << "]." << lane[k % 4];
  }
  static constexpr void comment(Text& t, std::string_view s) { t << " // " << s; }
  static constexpr void barrier(Text& t) { t << "workgroupBarrier();\n"; }
};

/// The WGSL compute shader of a program shaped by gpu_program, decomposed and narrowed (the pass
/// list's Target::wgsl()); `f16`: float16 buffers are array<f16> (the device has shader-f16).
constexpr Text render_wgsl(const Program& p, bool f16 = false) {
  if (f16) return CStyleRenderer::render<WgslDialect<true>>(p); // (not ?:, which GCC 12's
  return CStyleRenderer::render<WgslDialect<false>>(p);         // constant evaluation rejects)
}

} // namespace tg
