#pragma once
// render: linear program -> source text. One C-style renderer; a dialect supplies the
// differences (type names, the kernel signature, how the parallel loop is written, math names).
// Every value is its own named variable, so operands are never evaluated twice.
#include <limits>

#include "ir.hpp"

namespace tg {

struct CStyleRenderer {
  template <class D> static constexpr Text render(const Program& p) {
    Text t;
    D::prelude(t, p);
    D::signature(t, p);
    int depth = 1;
    auto indent = [&] {
      for (int i = 0; i < depth; ++i) t << "  ";
    };
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const UOp& u = p.ops[i];
      auto v = [&](int k) -> Text& { return t << 'v' << k; };
      auto ctype = [&](DType d) { return D::type(is_half(d) ? DType::Float32 : d); };
      switch (u.kind) {
      case UKind::Param:
      case UKind::Bound:
      case UKind::VarParam:
      case UKind::Special:
        indent();
        D::declare_param(t, u, p, int(i));
        break;
      case UKind::Const:
        indent();
        t << "const " << ctype(u.dtype) << ' ';
        v(int(i)) << " = ";
        D::constant(t, u.dtype, u.value);
        t << ";\n";
        break;
      case UKind::Range:
        indent();
        D::open_range(t, u, int(i), u.src[0], u.src[1]);
        ++depth;
        break;
      case UKind::EndRange:
        --depth;
        indent();
        t << "}\n";
        break;
      case UKind::Load: {
        indent();
        t << ctype(u.dtype) << ' ';
        v(int(i)) << " = ";
        const DType stored = p.ops[std::size_t(u.src[0])].dtype;
        if (u.src[2] >= 0) v(u.src[2]) << " ? ";
        D::load(t, stored, u.src[0], u.src[1]);
        if (u.src[2] >= 0) {
          t << " : ";
          D::constant(t, u.dtype, Scalar{});
        }
        t << ";\n";
        break;
      }
      case UKind::Store: {
        indent();
        Text val;
        name(val, p, u.src[2]);
        D::store(t, p.ops[std::size_t(u.src[0])].dtype, u.src[0], u.src[1], val.view());
        break;
      }
      case UKind::DefineAcc:
        indent();
        t << D::qualifier(u.dtype) << ctype(u.dtype) << " acc" << std::int64_t(i) << " = ";
        D::constant(t, u.dtype, u.value);
        t << ";\n";
        break;
      case UKind::AccAssign: {
        indent();
        Text a, b;
        a << "acc" << std::int64_t(u.src[0]);
        name(b, p, u.src[1]);
        t << a.view() << " = ";
        const UOp& x = p.ops[std::size_t(u.src[1])];
        if (const char* fma = D::mul_acc(u.dtype); fma && u.op == Op::Add && x.kind == UKind::Alu &&
                                                   x.op == Op::Mul && x.dtype == u.dtype) {
          Text l, r;
          name(l, p, x.src[0]);
          name(r, p, x.src[1]);
          t << fma << '(' << l.view() << ", " << r.view() << ", " << a.view() << ')';
        } else {
          D::binary(t, u.op, u.dtype, a.view(), b.view());
        }
        t << ";\n";
        break;
      }
      case UKind::Alu: {
        indent();
        t << D::qualifier(u.dtype) << ctype(u.dtype) << ' ';
        v(int(i)) << " = ";
        Text s[3];
        for (int k = 0; k < 3; ++k)
          if (u.src[std::size_t(k)] >= 0) name(s[k], p, u.src[std::size_t(k)]);
        DType in = u.src[0] >= 0 ? p.ops[std::size_t(u.src[0])].dtype : u.dtype;
        if (u.op == Op::Where)
          t << '(' << s[0].view() << " ? " << s[1].view() << " : " << s[2].view() << ')';
        else if (u.op == Op::Cast)
          D::cast(t, in, u.dtype, s[0].view());
        else if (u.op == Op::Bitcast)
          D::bitcast(t, in, u.dtype, s[0].view());
        else if (is_unary(u.op))
          D::unary(t, u.op, u.dtype, s[0].view());
        else
          D::binary(t, u.op, is_compare(u.op) || u.op == Op::Div || u.op == Op::Mod ? in : u.dtype,
                    s[0].view(), s[1].view());
        t << ";\n";
        break;
      }
      case UKind::Reduce:
        break;
      case UKind::If:
        indent();
        t << "if (";
        name(t, p, u.src[0]) << ") {\n";
        ++depth;
        break;
      case UKind::EndIf:
        --depth;
        indent();
        t << "}\n";
        break;
      case UKind::GroupReduce: // the dialect's own (GLSL subgroups) or the shared tree
        if constexpr (D::own_group_reduce)
          D::group_reduce(t, p, u, int(i), depth);
        else
          group_reduce<D>(t, p, u, int(i), depth);
        break;
      case UKind::VecAcc:
      case UKind::VecLoad:
      case UKind::VecMac:
      case UKind::VecLane:
      case UKind::VecStore:
      case UKind::Local:
      case UKind::VecFold:
        indent();
        if constexpr (D::vectors)
          D::vector_op(t, u, int(i));
        else
          throw graph_error(std::string("tg: this renderer has no ") + ukind_name(u.kind));
        break;
      }
    }
    t << "}\n";
    return t;
  }
  static constexpr Text& name(Text& t, const Program& p, int k) {
    return t << (p.ops[std::size_t(k)].kind == UKind::DefineAcc ? "acc" : "v") << std::int64_t(k);
  }
  /// GPU dialects: a work-group reduction of an accumulator through local memory, a tree of
  /// p.local lanes (D::local_array declares the array, D::barrier synchronizes the group).
  template <class D>
  static constexpr void group_reduce(Text& t, const Program& p, const UOp& u, int i, int depth) {
    auto indent = [&](int extra) -> Text& {
      for (int k = 0; k < depth + extra; ++k) t << "  ";
      return t;
    };
    int lane = -1;
    for (std::size_t k = 0; k < p.ops.size(); ++k)
      if (p.ops[k].kind == UKind::Special && p.ops[k].arg == int(GpuIndex::Lane)) lane = int(k);
    Text acc, lds, a, b;
    name(acc, p, u.src[0]);
    lds << "tg_lds" << std::int64_t(i);
    a << lds.view() << "[tg_l]";
    b << lds.view() << "[tg_l + tg_s]";
    D::local_array(indent(0), is_half(u.dtype) ? DType::Float32 : u.dtype, lds.view(), p.local);
    indent(0) << "{\n";
    indent(1) << "const int tg_l = int(v" << std::int64_t(lane) << ");\n";
    indent(1) << a.view() << " = " << acc.view() << ";\n";
    D::barrier(indent(1));
    indent(1) << "for (int tg_s = " << std::int64_t(p.local / 2) << "; tg_s > 0; tg_s >>= 1) {\n";
    indent(2) << "if (tg_l < tg_s) " << a.view() << " = ";
    D::binary(t, u.op, u.dtype, a.view(), b.view());
    t << ";\n";
    D::barrier(indent(2));
    indent(1) << "}\n";
    indent(1) << acc.view() << " = " << lds.view() << "[0];\n";
    D::barrier(indent(1));
    indent(0) << "}\n";
  }
};

/// The C dialect: one function per kernel, run by the CPU runtime on a slice of its outer loop.
struct CDialect {
  /// Before the type of a computed value: the C compilers are told exact IEEE math by their flags.
  static constexpr const char* qualifier(DType) { return ""; }
  /// Whether the dialect writes group reductions itself (D::group_reduce), else the shared tree.
  static constexpr bool own_group_reduce = false;
  /// The fused multiply-add a sum of products of dtype t accumulates with (acc = f(a, b, acc)), or
  /// null: a product and a sum, each rounded, as INTERP computes them.
  static constexpr const char* mul_acc(DType) { return nullptr; }
  /// Whether it renders the vector ops of codegen/vectorize.hpp (GNU C vector extensions, which
  /// GCC and Clang have: only the CPU device runs that pass, exported C stays ISO C).
  static constexpr bool vectors = true;
  static constexpr void vector_op(Text& t, const UOp& u, int i) {
    const char* vt = u.dtype == DType::Float64 ? "tg_f64x4" : "tg_f32x8";
    auto v = [&](int k) -> Text& { return t << 'v' << std::int64_t(k); };
    if (u.kind == UKind::VecAcc) {
      t << vt << ' ';
      v(i) << " = {0}";
      if (u.value.f != 0) {
        t << "; ";
        v(i) << " += ";
        constant(t, u.dtype, u.value);
      }
      t << ";\n";
    } else if (u.kind == UKind::VecLoad && u.value.i > 1) { // elements a stride apart
      t << vt << ' ';
      v(i) << " = {";
      for (int k = 0; k < u.arg; ++k) {
        v(u.src[0]) << "[v" << std::int64_t(u.src[1]);
        if (k > 0) t << " + " << u.value.i * k;
        t << (k + 1 < u.arg ? "], " : "]");
      }
      t << "};\n";
    } else if (u.kind == UKind::VecLoad) { // memcpy: an unaligned load, GCC's vmovups
      t << vt << ' ';
      v(i) << "; __builtin_memcpy(&";
      v(i) << ", &";
      v(u.src[0]) << "[v" << std::int64_t(u.src[1]) << "], sizeof ";
      v(i) << "); TG_IN_REG(";
      v(i) << ");\n";
    } else if (u.kind == UKind::VecStore) {
      t << "__builtin_memcpy(&";
      v(u.src[0]) << "[v" << std::int64_t(u.src[1]) << "], &";
      v(u.src[2]) << ", sizeof ";
      v(u.src[2]) << ");\n";
    } else if (u.kind == UKind::Local) {
      t << type(u.dtype) << ' ';
      v(i) << '[' << std::int64_t(u.arg) << "] __attribute__((aligned(64)));\n";
    } else if (u.kind == UKind::VecFold && u.op == Op::Max) {
      // NaN-propagating, as the scalar max: a lane keeps acc where acc > x or acc is NaN
      const char* it = u.dtype == DType::Float64 ? "tg_i64x4" : "tg_i32x8";
      t << "{ " << it << " m = (" << it << ")(";
      v(u.src[0]) << " > ";
      v(u.src[1]) << ") | (" << it << ")(";
      v(u.src[0]) << " != ";
      v(u.src[0]) << "); ";
      v(u.src[0]) << " = (" << vt << ")(((" << it << ")";
      v(u.src[0]) << " & m) | ((" << it << ")";
      v(u.src[1]) << " & ~m)); }\n";
    } else if (u.kind == UKind::VecFold) {
      v(u.src[0]) << " = ";
      v(u.src[0]) << " + ";
      v(u.src[1]) << ";\n";
    } else if (u.kind == UKind::VecMac) {
      v(u.src[0]) << " = ";
      v(u.src[0]) << " + ";
      v(u.src[1]) << " * ";
      v(u.src[2]) << ";\n";
    } else {
      t << type(u.dtype) << ' ';
      v(i) << " = ";
      v(u.src[0]) << '[' << std::int64_t(u.arg) << "];\n";
    }
  }
  static constexpr const char* type(DType t) {
    switch (t) {
    case DType::Bool:
      return "_Bool";
    case DType::Int8:
      return "signed char";
    case DType::Int16:
      return "short";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "long long";
    case DType::UInt8:
      return "unsigned char";
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16:
      return "unsigned short";
    case DType::UInt32:
      return "unsigned int";
    case DType::UInt64:
      return "unsigned long long";
    case DType::Float32:
      return "float";
    default:
      return "double";
    }
  }
  // The guard lets the CPU device compile several kernels as one file (one compiler run). The
  // libm functions are declared rather than taken from <math.h>: parsing that header was a
  // quarter of a small kernel's compile time.
  static constexpr void prelude(Text& t, const Program&) {
    t << "#ifndef TG_PRELUDE\n#define TG_PRELUDE\n"
         "float sqrtf(float); double sqrt(double); float exp2f(float); double exp2(double);\n"
         "float log2f(float); double log2(double); float sinf(float); double sin(double);\n"
         "float truncf(float); double trunc(double); float powf(float, float);\n"
         "double pow(double, double);\n"
         "#define NAN __builtin_nanf(\"\")\n#define INFINITY __builtin_inff()\n"
         "#if defined(__GNUC__) && !defined(__clang__)\n"
         "#define TG_REDUCE_KERNEL __attribute__((optimize(\"no-tree-loop-vectorize\")))\n"
         "#define TG_GATED_KERNEL __attribute__((optimize(\"no-tree-loop-if-convert\")))\n"
         "#else\n#define TG_REDUCE_KERNEL\n#define TG_GATED_KERNEL\n#endif\n"
         "typedef unsigned short tg_u16; typedef unsigned int tg_u32;\n"
         "#ifdef __GNUC__\n"
         "typedef float tg_f32x8 __attribute__((vector_size(32)));\n"
         "typedef int tg_i32x8 __attribute__((vector_size(32)));\n"
         "typedef long long tg_i64x4 __attribute__((vector_size(32)));\n"
         "typedef double tg_f64x4 __attribute__((vector_size(32)));\n"
         "#endif\n"
         // A vector load stays in a register: GCC 12 folded a tile's shared loads into each of
         // the tile's multiplies (8 loads for 8 products, not 2), which bound a matmul whose
         // panel is in cache by its loads (128x784x256 on one core: 0.81 -> 0.62 ms)
         "#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))\n"
         "#define TG_IN_REG(v) __asm__(\"\" : \"+x\"(v))\n"
         "#else\n#define TG_IN_REG(v) (void)0\n#endif\n"
         "static inline float tg_u2f(tg_u32 u) { float f; __builtin_memcpy(&f, &u, 4); return f; "
         "}\n"
         "static inline tg_u32 tg_f2u(float f) { tg_u32 u; __builtin_memcpy(&u, &f, 4); return u; "
         "}\n"
         "static inline float tg_b2f(tg_u16 b) { return tg_u2f((tg_u32)b << 16); }\n"
         // 2^x for float, branch free so that loops of it vectorize (libm's exp2f is one call per
         // element): 2^n * p(f), x = n + f, |f| <= 1/2, p the degree-7 Taylor polynomial of 2^f
         // (relative error below 1e-8) by FMA; 2^n in two factors so that subnormal results
         // round once. INTERP computes the same operations (detail::exp2_float), bit for bit.
         "static inline float tg_exp2f(float x) {\n"
         "  tg_u32 lo = -(tg_u32)(x < -151.0f), hi = -(tg_u32)(x > 129.0f);\n"
         "  x = tg_u2f((tg_f2u(x) & ~(lo | hi)) | (tg_f2u(-151.0f) & lo) | (tg_f2u(129.0f) & "
         "hi));\n"
         "  float t = x + 12582912.0f, f = x - (t - 12582912.0f);\n"
         "  int n = (int)(tg_f2u(t) - 0x4b400000u), n1 = n >> 1;\n"
         "  float p = __builtin_fmaf(1.5252734e-5f, f, 1.5403530e-4f);\n"
         "  p = __builtin_fmaf(p, f, 1.3333558e-3f); p = __builtin_fmaf(p, f, 9.6181291e-3f);\n"
         "  p = __builtin_fmaf(p, f, 5.5504109e-2f); p = __builtin_fmaf(p, f, 2.4022651e-1f);\n"
         "  p = __builtin_fmaf(p, f, 6.9314718e-1f); p = __builtin_fmaf(p, f, 1.0f);\n"
         "  return p * tg_u2f((tg_u32)(n1 + 127) << 23) * tg_u2f((tg_u32)(n - n1 + 127) << 23); }\n"
         "static inline tg_u16 tg_f2b(float f) { tg_u32 x = tg_f2u(f);\n"
         "  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return (tg_u16)((x >> 16) | "
         "0x40u);\n"
         "  x += 0x7fffu + ((x >> 16) & 1u); return (tg_u16)(x >> 16); }\n"
         "static inline float tg_h2f(tg_u16 h) { tg_u32 s = (tg_u32)(h & 0x8000u) << 16, e = (h >> "
         "10) & 0x1f, m = h & 0x3ffu;\n"
         "  if (e == 0) { if (m == 0) return tg_u2f(s); int k = -1; do { m <<= 1; ++k; } while "
         "(!(m & 0x400u));\n"
         "    return tg_u2f(s | ((tg_u32)(112 - k) << 23) | ((m & 0x3ffu) << 13)); }\n"
         "  if (e == 31) return tg_u2f(s | 0x7f800000u | (m << 13));\n"
         "  return tg_u2f(s | ((e + 112) << 23) | (m << 13)); }\n"
         "static inline tg_u16 tg_f2h(float f) { tg_u32 x = tg_f2u(f), s = (x >> 16) & 0x8000u, m "
         "= x & 0x7fffffu;\n"
         "  int e = (int)((x >> 23) & 0xff);\n"
         "  if (e == 255) return (tg_u16)(s | 0x7c00u | (m ? 0x200u : 0u));\n"
         "  e = e - 127 + 15; if (e >= 31) return (tg_u16)(s | 0x7c00u);\n"
         "  if (e <= 0) { if (e < -10) return (tg_u16)s; m |= 0x800000u; int sh = 14 - e;\n"
         "    tg_u32 h = m >> sh, r = m & ((1u << sh) - 1), hw = 1u << (sh - 1);\n"
         "    if (r > hw || (r == hw && (h & 1u))) ++h; return (tg_u16)(s | h); }\n"
         "  tg_u32 h = ((tg_u32)e << 10) | (m >> 13), r = m & 0x1fffu;\n"
         "  if (r > 0x1000u || (r == 0x1000u && (h & 1u))) ++h; return (tg_u16)(s | h); }\n"
         "#endif\n";
  }
  // A reduce loop over floats cannot be vectorized under exact IEEE math (only SLP across upcast
  // lanes can), and GCC's loop vectorizer with the dynamic cost model spent 12 s on one such
  // kernel (cfg cleanup after versioning a 16-lane reduce): it is turned off for these kernels,
  // except where the reduction was split into partial accumulators that vector lanes keep.
  // GCC 12 miscompiles some loops with gated loads (a padded view) after if-converting and
  // vectorizing them: a [2, 3, 4] tensor padded to [2, 5, 5] over loops of 2 x 5 x 5 read its
  // rows 2 and 3 with an all-false mask (zeros). If-conversion is off in such kernels.
  static constexpr void signature(Text& t, const Program& p) {
    bool reduce = false, gated = false;
    for (const UOp& u : p.ops) {
      reduce = reduce ||
               ((u.kind == UKind::DefineAcc || u.kind == UKind::VecAcc) && p.reduce_split == 1);
      gated = gated || (u.kind == UKind::Load && u.src[2] >= 0);
    }
    if (reduce) t << "TG_REDUCE_KERNEL ";
    if (gated) t << "TG_GATED_KERNEL ";
    t << "void " << p.name.view()
      << "(void** bufs, const long long* vars, long long start, long long end) {\n";
  }
  static constexpr void declare_param(Text& t, const UOp& u, const Program& p, int i) {
    if (u.kind == UKind::Param)
      t << type(u.dtype) << "* v" << std::int64_t(i) << " = (" << type(u.dtype) << "*)bufs["
        << std::int64_t(u.arg) << "];\n";
    else if (u.kind == UKind::Bound)
      t << "const long long v" << std::int64_t(i) << " = " << (u.arg == 0 ? "start" : "end")
        << ";\n";
    else
      t << "const long long v" << std::int64_t(i) << " = vars[" << std::int64_t(u.arg) << "]; /* "
        << p.vars[std::size_t(u.arg)].name.view() << " */\n";
  }
  static constexpr void open_range(Text& t, const UOp& u, int i, int start, int end) {
    t << "for (long long v" << std::int64_t(i) << " = v" << std::int64_t(start) << "; v"
      << std::int64_t(i) << " < v" << std::int64_t(end) << "; ";
    if (u.src[2] >= 0)
      t << 'v' << std::int64_t(i) << " += v" << std::int64_t(u.src[2]) << ") {\n";
    else
      t << "++v" << std::int64_t(i) << ") {\n";
  }
  // Work-group hooks (GroupReduce, GPU programs only): in C a work-group is one thread.
  static constexpr void local_array(Text& t, DType d, std::string_view name, int size) {
    t << type(d) << ' ' << name << '[' << std::int64_t(size) << "];\n";
  }
  static constexpr void barrier(Text& t) { t << "/* barrier */\n"; }
  static constexpr void load(Text& t, DType stored, int buf, int idx) {
    if (stored == DType::Float16) t << "tg_h2f(";
    if (stored == DType::BFloat16) t << "tg_b2f(";
    t << 'v' << std::int64_t(buf) << "[v" << std::int64_t(idx) << ']';
    if (is_half(stored)) t << ')';
  }
  static constexpr void store(Text& t, DType stored, int buf, int idx, std::string_view val) {
    t << 'v' << std::int64_t(buf) << "[v" << std::int64_t(idx) << "] = ";
    if (stored == DType::Float16)
      t << "tg_f2h(" << val << ");\n";
    else if (stored == DType::BFloat16)
      t << "tg_f2b(" << val << ");\n";
    else
      t << val << ";\n";
  }
  static constexpr void constant(Text& t, DType d, Scalar v) {
    if (is_float(d)) {
      if (d == DType::Float64)
        t.literal(v.f);
      else {
        float f = float(v.f);
        if (f != f || f == std::numeric_limits<float>::infinity() ||
            f == -std::numeric_limits<float>::infinity())
          t.literal(double(f));
        else
          t.literal(double(f)) << 'f';
      }
    } else if (d == DType::Bool)
      t << (v.i ? "1" : "0");
    else if (d == DType::UInt64)
      t.write_unsigned(std::uint64_t(v.i)) << "ull";
    else if (d == DType::Int64) {
      if (v.i == std::numeric_limits<std::int64_t>::min())
        t << "(-9223372036854775807ll - 1)";
      else
        t << v.i << "ll";
    } else
      t << '(' << type(d) << ')' << v.i << (is_unsigned(d) ? "u" : "");
  }
  static constexpr const char* fsuffix(DType d) { return d == DType::Float64 ? "" : "f"; }
  static constexpr void unary(Text& t, Op op, DType d, std::string_view a) {
    switch (op) {
    case Op::Neg:
      t << (d == DType::Bool ? "!" : "-") << a;
      break;
    case Op::Recip:
      t << '(' << (d == DType::Float64 ? "1.0" : "1.0f") << " / " << a << ')';
      break;
    case Op::Sqrt:
      t << "sqrt" << fsuffix(d) << '(' << a << ')';
      break;
    case Op::Exp2:
      t << (d == DType::Float64 ? "exp2(" : "tg_exp2f(") << a << ')';
      break;
    case Op::Log2:
      t << "log2" << fsuffix(d) << '(' << a << ')';
      break;
    case Op::Sin:
      t << "sin" << fsuffix(d) << '(' << a << ')';
      break;
    case Op::Trunc:
      t << "trunc" << fsuffix(d) << '(' << a << ')';
      break;
    default:
      t << a;
    }
  }
  static constexpr void binary(Text& t, Op op, DType d, std::string_view a, std::string_view b) {
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
      // NaN propagates: a if a is NaN or a > b. The NaN test outside, so that the compare with
      // b is a select: GCC 12 compiled `((a > b) | (a != a)) ? a : b` to a branch on the sign in
      // loops it does not vectorize (a matmul's relu(x) operand, whose signs are random). Loops
      // of either form vectorize.
      if (is_float(d))
        t << '(' << a << " != " << a << " ? " << a << " : " << a << " > " << b << " ? " << a
          << " : " << b << ')';
      else
        t << '(' << a << " > " << b << " ? " << a << " : " << b << ')';
      return;
    case Op::Pow:
      t << "pow" << fsuffix(d) << '(' << a << ", " << b << ')';
      return;
    default:
      break;
    }
    t << '(' << a << sym << b << ')';
  }
  static constexpr void cast(Text& t, DType from, DType to, std::string_view a) {
    if (to == DType::Bool)
      t << '(' << a << " != 0)";
    else if (to == DType::Float16)
      t << "tg_h2f(tg_f2h((float)" << a << "))";
    else if (to == DType::BFloat16)
      t << "tg_b2f(tg_f2b((float)" << a << "))";
    else if (is_half(from) && to == DType::Float32)
      t << a;
    else if (is_float(from) && is_int(to)) {
      // Float to integer as the reference interpreter (x86) defines it, never C's undefined
      // behaviour (which the compiler folds differently: (unsigned char)-3.0f becomes 0, not 253):
      // through int32 (int64 for 32/64-bit targets); out of range and NaN give the minimum.
      if (to == DType::UInt64)
        t << "((" << a << " >= 0.0 && " << a << " < 18446744073709551616.0) ? (unsigned long long)"
          << a << " : 0ull)";
      else if (to == DType::Int64 || to == DType::UInt32)
        t << '(' << type(to) << ")((" << a << " >= -9223372036854775808.0 && " << a
          << " < 9223372036854775808.0) ? (long long)" << a << " : (-9223372036854775807ll - 1))";
      else
        t << '(' << type(to) << ")((" << a << " >= -2147483648.0 && " << a
          << " < 2147483648.0) ? (int)" << a << " : (-2147483647 - 1))";
    } else
      t << '(' << type(to) << ')' << a;
  }
  static constexpr void bitcast(Text& t, DType from, DType to, std::string_view a) {
    if (is_half(from)) { // the register holds a float; its bits are those of the 16-bit value
      t << '(' << type(to) << ')' << (from == DType::Float16 ? "tg_f2h(" : "tg_f2b(") << a << ')';
      return;
    }
    if (is_half(to)) {
      t << (to == DType::Float16 ? "tg_h2f((tg_u16)" : "tg_b2f((tg_u16)") << a << ')';
      return;
    }
    t << "({ " << type(to) << " _b; __builtin_memcpy(&_b, &" << a << ", sizeof _b); _b; })";
  }
};

constexpr Text render_c(const Program& p) { return CStyleRenderer::render<CDialect>(p); }

} // namespace tg
