#pragma once
// render: linear program -> source text. One C-style renderer for every dialect:
// - CStyleRenderer::render<D> walks the program, one named variable per value (so operands are
//   never evaluated twice);
// - CStyle<D> holds the semantics every C-like dialect shares, written once: arithmetic, compares,
//   casts, bitcasts, constants, loads and stores, loops;
// - a dialect D (C below, CUDA, GLSL and WGSL in render_cuda/glsl/wgsl.hpp) derives CStyle<D> and
//   supplies spellings (type names, conversions, literal suffixes, math function names) and the
//   launch plumbing (prelude, signature, parameters, buffer elements, local memory, barriers).
// Semantics that must agree across dialects are IR rewrites done before rendering
// (codegen/decompose.hpp): a program reaches a renderer with every float -> integer conversion in
// range, 16-bit floats as words of bits (except where the dialect converts them itself: CUDA's
// float16), float exp2 as a polynomial and division made safe where the dialect's own is not.
#include <limits>

#include "../graph/sint_text.hpp"
#include "ir.hpp"

namespace tg {

/// How a value is declared: a constant, a computed value, or a variable that is assigned again.
enum class Decl : std::uint8_t { Const, Value, Mutable };

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
      Text self;
      self << (u.kind == UKind::DefineAcc ? "acc" : "v") << std::int64_t(i);
      auto declare = [&](Decl k) { D::declare(t, k, compute_dtype(u.dtype), self.view()); };
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
        declare(Decl::Const);
        D::constant(t, u.dtype, u.value);
        t << ";\n";
        break;
      case UKind::Range:
        indent();
        D::open_range(t, u, int(i), u.src[0], u.src[1]);
        ++depth;
        break;
      case UKind::EndRange:
      case UKind::EndIf:
        --depth;
        indent();
        t << "}\n";
        break;
      case UKind::Load: {
        indent();
        declare(Decl::Value);
        if (p.ops[std::size_t(u.src[0])].kind == UKind::Shared ||
            p.ops[std::size_t(u.src[0])].kind == UKind::Private) { // hold compute dtype values
          D::shared_element(t, u.src[0], u.src[1]);
          t << ";\n";
          break;
        }
        const DType stored = p.ops[std::size_t(u.src[0])].dtype;
        if (u.src[2] >= 0) { // gated: zero where the gate is off
          Text gate, x, zero;
          name(gate, p, u.src[2]);
          D::load(x, stored, u.dtype, u.src[0], u.src[1]);
          D::constant(zero, u.dtype, Scalar{});
          D::select(t, gate.view(), x.view(), zero.view());
        } else
          D::load(t, stored, u.dtype, u.src[0], u.src[1]);
        t << ";\n";
        break;
      }
      case UKind::Store: {
        indent();
        Text val;
        name(val, p, u.src[2]);
        if (p.ops[std::size_t(u.src[0])].kind == UKind::Shared) {
          D::shared_element(t, u.src[0], u.src[1]);
          t << " = " << val.view() << ";\n";
          break;
        }
        D::store(t, p.ops[std::size_t(u.src[0])].dtype, p.ops[std::size_t(u.src[2])].dtype,
                 u.src[0], u.src[1], val.view());
        break;
      }
      case UKind::DefineAcc:
        indent();
        declare(Decl::Mutable);
        D::constant(t, u.dtype, u.value);
        t << ";\n";
        break;
      case UKind::AccAssign: {
        indent();
        Text a, b;
        name(a, p, u.src[0]);
        name(b, p, u.src[1]);
        t << a.view() << " = ";
        const UOp& x = p.ops[std::size_t(u.src[1])];
        const bool mac = u.op == Op::MulAdd; // (contract); else the dialect's own (mul_acc)
        const char* fma = mac ? D::fma(u.dtype) : D::mul_acc(u.dtype);
        if (fma && (mac || (u.op == Op::Add && x.kind == UKind::Alu && x.op == Op::Mul &&
                            x.dtype == u.dtype))) {
          Text l, r;
          name(l, p, mac ? u.src[1] : x.src[0]);
          name(r, p, mac ? u.src[2] : x.src[1]);
          t << fma << '(' << l.view() << ", " << r.view() << ", " << a.view() << ')';
        } else {
          D::binary(t, u.op, u.dtype, a.view(), b.view());
        }
        t << ";\n";
        break;
      }
      case UKind::Alu: {
        indent();
        declare(Decl::Value);
        Text s[3];
        for (int k = 0; k < 3; ++k)
          if (u.src[std::size_t(k)] >= 0) name(s[k], p, u.src[std::size_t(k)]);
        DType in = u.src[0] >= 0 ? p.ops[std::size_t(u.src[0])].dtype : u.dtype;
        if (u.op == Op::Where && is_min(p, u)) { // a < b ? a : b, the comparison written in
          Text lt; // (GCC 12 reads it as a minimum only so: a shifted-back tile's stores)
          D::binary(lt, Op::CmpLt, u.dtype, s[1].view(), s[2].view());
          D::select(t, lt.view(), s[1].view(), s[2].view());
        } else if (u.op == Op::Where)
          D::select(t, s[0].view(), s[1].view(), s[2].view());
        else if (u.op == Op::Cast)
          D::cast(t, in, u.dtype, s[0].view());
        else if (u.op == Op::Bitcast)
          D::bitcast(t, in, u.dtype, s[0].view());
        else if (u.op == Op::MulAdd)
          t << D::fma(u.dtype) << '(' << s[0].view() << ", " << s[1].view() << ", " << s[2].view()
            << ')';
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
      case UKind::GroupReduce: // the dialect's own (GLSL subgroups) or the shared tree
        if constexpr (D::own_group_reduce)
          D::group_reduce(t, p, u, int(i), depth);
        else
          group_reduce<D>(t, p, u, int(i), depth);
        break;
      case UKind::Shared:
        indent();
        D::local_array(t, compute_dtype(u.dtype), self.view(), u.arg);
        break;
      case UKind::Barrier:
        indent();
        D::barrier(t);
        break;
      case UKind::Private:
      case UKind::Mma:
        indent();
        if constexpr (D::tensor_cores)
          D::warp_op(t, p, u, int(i));
        else
          throw graph_error(std::string("tg: this renderer has no ") + ukind_name(u.kind));
        break;
      case UKind::VecAcc:
      case UKind::VecLoad:
      case UKind::VecMac:
      case UKind::VecLane:
      case UKind::VecStore:
      case UKind::Local:
      case UKind::VecFold:
      case UKind::VecPair:
      case UKind::VecDot2:
      case UKind::WordLoad:
      case UKind::TileDot:
        indent();
        if constexpr (D::vectors)
          D::vector_op(t, p, u, int(i));
        else
          throw graph_error(std::string("tg: this renderer has no ") + ukind_name(u.kind));
        break;
      }
    }
    if constexpr (D::vectors) D::finish(t, p);
    t << "}\n";
    return t;
  }
  /// Whether `u` (a Where) is an integer min(a, b): a < b ? a : b.
  static constexpr bool is_min(const Program& p, const UOp& u) {
    const UOp& c = p.ops[std::size_t(u.src[0])];
    return is_int(u.dtype) && c.kind == UKind::Alu && c.op == Op::CmpLt && c.src[0] == u.src[1] &&
           c.src[1] == u.src[2];
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
    Text lane_name, half;
    name(lane_name, p, lane);
    half << std::int64_t(p.local / 2);
    D::local_array(indent(0), compute_dtype(u.dtype), lds.view(), p.local);
    indent(0) << "{\n";
    D::declare(indent(1), Decl::Const, DType::Int32, "tg_l");
    D::convert(t, DType::Int32, lane_name.view());
    t << ";\n";
    indent(1) << a.view() << " = " << acc.view() << ";\n";
    D::barrier(indent(1));
    D::open_for(indent(1), DType::Int32, "tg_s", half.view(), "tg_s > 0", "tg_s /= 2");
    indent(2) << "if (tg_l < tg_s) { " << a.view() << " = ";
    D::binary(t, u.op, u.dtype, a.view(), b.view());
    t << "; }\n";
    D::barrier(indent(2));
    indent(1) << "}\n";
    indent(1) << acc.view() << " = " << lds.view() << "[0];\n";
    D::barrier(indent(1));
    indent(0) << "}\n";
  }
};

/// The semantics every C-like dialect shares, in terms of D's spellings:
///   D::type(d)                     the name of a value type
///   D::convert(t, to, a)           a value conversion ("(float)a", "float(a)")
///   D::select(t, c, a, b)          c ? a : b
///   D::fsuffix(d), D::int_suffix(d), D::boolean(b), D::float_constant(t, d, x)   literals
///   D::math(op, d)                 the function computing a unary op or pow (math_index)
///   D::fma(d)                      the fused multiply-add (MulAdd: a * b + c rounded once)
///   D::fdiv(d), D::recip(d)        a function for float division / reciprocal, or null for `/`
///   D::is_nan(t, a)                a NaN test that survives the compiler
///   D::reinterpret(t, from, to, a) the bits of a float as an integer of its size or back
///   D::element(t, buf, idx)        a buffer element, read or written
///   D::shared_element(t, buf, idx) an element of a work-group array (UKind::Shared)
///   D::storage(d)                  the dtype a buffer of d holds (bool as a byte where needed)
///   D::mod_by_div                  signed remainder spelled a - a / b * b (no defined `%`)
/// A dialect that converts 16-bit floats itself (CUDA's float16) also names tg_h2f/tg_f2h.
/// The defaults here are C's.
template <class D> struct CStyle {
  static constexpr bool own_group_reduce = false;
  static constexpr bool vectors = false;
  static constexpr bool mod_by_div = false;
  static constexpr const char* group_id = "tg_group()"; // the work-group's flat index (GPUs)
  /// The fused multiply-add a sum of products of dtype t accumulates with (acc = f(a, b, acc)), or
  /// null: a product and a sum, each rounded, as INTERP computes them.
  static constexpr const char* mul_acc(DType) { return nullptr; }
  static constexpr const char* qualifier(DType) { return ""; }
  static constexpr DType storage(DType d) { return d; }
  static constexpr const char* fdiv(DType) { return nullptr; }
  static constexpr const char* recip(DType) { return nullptr; }
  static constexpr void declare(Text& t, Decl k, DType d, std::string_view name) {
    if (k == Decl::Const)
      t << "const ";
    else
      t << D::qualifier(d);
    t << D::type(d) << ' ' << name << " = ";
  }
  static constexpr void convert(Text& t, DType to, std::string_view a) {
    t << '(' << D::type(to) << ')' << a;
  }
  /// c ? a : b (c: a bool).
  static constexpr void select(Text& t, std::string_view c, std::string_view a,
                               std::string_view b) {
    t << '(' << c << " ? " << a << " : " << b << ')';
  }
  static constexpr void element(Text& t, int buf, int idx) {
    t << 'v' << std::int64_t(buf) << "[v" << std::int64_t(idx) << ']';
  }
  /// Whether the dialect renders Private arrays and tensor-core steps (Mma): CUDA's.
  static constexpr bool tensor_cores = false;
  /// An element of a work-group array (UKind::Shared).
  static constexpr void shared_element(Text& t, int buf, int idx) {
    t << 'v' << std::int64_t(buf) << "[v" << std::int64_t(idx) << ']';
  }
  /// Where op is in a math() table: sqrt, exp2, log2, sin, trunc, pow.
  static constexpr int math_index(Op op) { return op == Op::Pow ? 5 : int(op) - int(Op::Sqrt); }
  static constexpr const char* decode(DType d) { return d == DType::Float16 ? "tg_h2f" : "tg_b2f"; }
  static constexpr const char* encode(DType d) { return d == DType::Float16 ? "tg_f2h" : "tg_f2b"; }

  static constexpr void increment(Text& t, std::string_view var) { t << "++" << var; }
  /// `for (T var = init; cond; step) {`
  static constexpr void open_for(Text& t, DType d, std::string_view var, std::string_view init,
                                 std::string_view cond, std::string_view step) {
    t << "for (" << D::type(d) << ' ' << var << " = " << init << "; " << cond << "; " << step
      << ") {\n";
  }
  static constexpr void open_range(Text& t, const UOp& u, int i, int start, int end) {
    Text v, init, cond, step;
    v << 'v' << std::int64_t(i);
    init << 'v' << std::int64_t(start);
    cond << v.view() << " < v" << std::int64_t(end);
    if (u.src[2] >= 0)
      step << v.view() << " += v" << std::int64_t(u.src[2]);
    else
      D::increment(step, v.view());
    D::open_for(t, u.dtype, v.view(), init.view(), cond.view(), step.view());
  }
  /// A buffer element as a value of dtype `value`: a 16-bit float as its value where the dialect
  /// converts it, else as the word of its bits (decompose); bool from its byte.
  static constexpr void load(Text& t, DType stored, DType value, int buf, int idx) {
    Text e;
    D::element(e, buf, idx);
    if (is_half(stored) && is_half(value))
      t << decode(stored) << '(' << e.view() << ')';
    else if (is_half(stored))
      D::convert(t, value, e.view());
    else if (D::storage(stored) != stored) { // bool as a byte
      t << '(' << e.view() << " != ";
      D::constant(t, D::storage(stored), Scalar{});
      t << ')';
    } else
      t << e.view();
  }
  static constexpr void store(Text& t, DType stored, DType value, int buf, int idx,
                              std::string_view val) {
    D::element(t, buf, idx);
    t << " = ";
    if (is_half(stored) && is_half(value))
      t << encode(stored) << '(' << val << ')';
    else if (D::storage(stored) != stored || is_half(stored))
      D::convert(t, is_half(stored) ? DType::UInt16 : D::storage(stored), val);
    else
      t << val;
    t << ";\n";
  }

  static constexpr void constant(Text& t, DType d, Scalar v) {
    if (is_float(d)) return D::float_constant(t, d, d == DType::Float64 ? v.f : double(float(v.f)));
    if (d == DType::Bool) return void(t << D::boolean(v.i != 0));
    if (is_unsigned(d)) {
      const int bits = 8 * int(itemsize(d));
      const std::uint64_t x =
          bits == 64 ? std::uint64_t(v.i) : std::uint64_t(v.i) & ((std::uint64_t(1) << bits) - 1);
      Text n;
      n.write_unsigned(x) << (d == DType::UInt64 ? D::int_suffix(d) : "u");
      if (bits >= 32)
        t << n.view();
      else
        D::convert(t, d, n.view());
      return;
    }
    Text n;
    if (d == DType::Int64 && v.i == std::numeric_limits<std::int64_t>::min())
      n << "(-9223372036854775807" << D::int_suffix(d) << " - 1" << D::int_suffix(d) << ')';
    else if (d == DType::Int32 && v.i == -2147483648ll)
      n << "(-2147483647 - 1)";
    else if (v.i < 0)
      n << '(' << v.i << (d == DType::Int64 ? D::int_suffix(d) : "") << ')';
    else
      n << v.i << (d == DType::Int64 ? D::int_suffix(d) : "");
    if (itemsize(d) >= 4)
      t << n.view();
    else
      D::convert(t, d, n.view());
  }
  static constexpr void zero(Text& t, DType d) { D::constant(t, d, Scalar{}); }

  static constexpr void unary(Text& t, Op op, DType d, std::string_view a) {
    if (op == Op::Neg) {
      t << (d == DType::Bool ? "!" : "-") << a;
    } else if (op == Op::Recip) {
      if (const char* r = D::recip(d)) return void(t << r << '(' << a << ')');
      Text one;
      D::constant(one, d, Scalar::of(d, 1.0));
      D::binary(t, Op::Div, d, one.view(), a);
    } else
      t << D::math(op, d) << '(' << a << ')';
  }
  static constexpr void binary(Text& t, Op op, DType d, std::string_view a, std::string_view b) {
    if (d == DType::Bool) { // as logic, in every dialect
      const char* sym = op == Op::Add || op == Op::Or || op == Op::Max ? " || "
                        : op == Op::Mul || op == Op::And               ? " && "
                        : op == Op::Xor || op == Op::CmpNe             ? " != "
                        : op == Op::CmpEq                              ? " == "
                                                                       : nullptr;
      if (sym) return void(t << '(' << a << sym << b << ')');
      if (op == Op::CmpLt) return void(t << "(!" << a << " && " << b << ')');
    }
    if (op == Op::Max) {
      // NaN propagates: a if a is NaN or a > b. The NaN test outside, so that the compare with
      // b is a select (GCC 12 compiled `((a > b) | (a != a)) ? a : b` to a branch on the sign in
      // loops it does not vectorize).
      Text gt, larger;
      gt << a << " > " << b;
      D::select(larger, gt.view(), a, b);
      if (!is_float(d)) return void(t << larger.view());
      Text nan;
      D::is_nan(nan, a);
      return D::select(t, nan.view(), a, larger.view());
    }
    if (op == Op::Pow) return void(t << D::math(op, d) << '(' << a << ", " << b << ')');
    if (const char* f = op == Op::Div && is_float(d) ? D::fdiv(d) : nullptr)
      return void(t << f << '(' << a << ", " << b << ')');
    if (op == Op::Mod && D::mod_by_div && is_int(d) && !is_unsigned(d))
      return void(t << '(' << a << " - (" << a << " / " << b << ") * " << b << ')');
    // by Op, from Add to Xor (Max and Pow above)
    constexpr const char* symbols[] = {" + ", " * ",  " / ",  " % ", "",    "",
                                       " < ", " == ", " != ", " & ", " | ", " ^ "};
    t << '(' << a << symbols[int(op) - int(Op::Add)] << b << ')';
  }
  /// (A float reaches an integer conversion in range: decompose's saturating_casts.)
  static constexpr void cast(Text& t, DType from, DType to, std::string_view a) {
    if (to == DType::Bool) {
      if (from == DType::Bool) return void(t << a);
      t << '(' << a << " != ";
      zero(t, compute_dtype(from));
      t << ')';
    } else if (is_half(to)) { // rounded to 16 bits, computed in float
      t << decode(to) << '(' << encode(to) << '(';
      D::convert(t, DType::Float32, a);
      t << "))";
    } else if (is_half(from) && to == DType::Float32)
      t << a;
    else
      D::convert(t, to, a);
  }
  /// GPU dialects: a launch value (Bound, VarParam, Special) as an int64 constant, from
  /// D::launch_arg(t, k) (k: 0 item base, 1 outer start, 2 outer end, 3 + v symbolic size v),
  /// D::lane_id and D::comment.
  static constexpr void declare_launch(Text& t, const UOp& u, const Program& p, int i) {
    Text name;
    name << 'v' << std::int64_t(i);
    D::declare(t, Decl::Const, u.dtype, name.view());
    if (u.kind == UKind::Bound)
      D::launch_arg(t, u.arg == 0 ? 1 : 2);
    else if (u.kind == UKind::VarParam)
      D::launch_arg(t, 3 + u.arg);
    else if (u.arg == int(GpuIndex::Lane))
      D::convert(t, u.dtype, D::lane_id);
    else {
      D::launch_arg(t, 0);
      t << " + ";
      D::convert(t, u.dtype, D::group_id);
      if (!p.grouped) {
        t << " * ";
        D::constant(t, u.dtype, Scalar::of_int(u.dtype, p.local * p.per_thread));
        t << " + ";
        D::convert(t, u.dtype, D::lane_id);
      }
    }
    t << ';';
    if (u.kind == UKind::VarParam) D::comment(t, p.vars[std::size_t(u.arg)].name.view());
    t << '\n';
  }
  /// Dialects that declare buffers and local memory at module scope (GLSL, WGSL): a comment
  /// where the kernel meets a buffer or a work-group array; launch values as above.
  static constexpr void declare_param(Text& t, const UOp& u, const Program& p, int i) {
    if (u.kind == UKind::Param)
      t << "// v" << std::int64_t(i) << ": buffer " << std::int64_t(u.arg) << '\n';
    else
      D::declare_launch(t, u, p, i);
  }
  static constexpr void local_array(Text& t, DType, std::string_view name, int) {
    t << "// " << name << ": work-group memory, declared above\n";
  }
  /// (16-bit floats: decompose's, or the dialect's hardware conversions below.)
  static constexpr void bitcast(Text& t, DType from, DType to, std::string_view a) {
    if (is_half(from) || is_half(to)) { // a 16-bit float's register holds a float: its bits
      Text bits;
      if (is_half(from))
        bits << encode(from) << '(' << a << ')';
      else
        D::convert(bits, DType::UInt16, a);
      if (is_half(to))
        t << decode(to) << '(' << bits.view() << ')';
      else
        D::convert(t, to, bits.view());
    } else if (to == DType::Bool) {
      t << '(' << a << " != ";
      zero(t, from);
      t << ')';
    } else if (is_float(from) || is_float(to))
      D::reinterpret(t, from, to, a);
    else // integers (and bool) of one size: the same bits
      D::convert(t, to, a);
  }
};

/// The C-family spellings: C for the CPU device, and CUDA (render_cuda.hpp) on top.
template <class D> struct CFamily : CStyle<D> {
  /// By DType (16-bit floats: their bits).
  static constexpr const char* type(DType t) {
    constexpr const char* names[dtype_count] = {"_Bool",
                                                "signed char",
                                                "short",
                                                "int",
                                                "long long",
                                                "unsigned char",
                                                "unsigned short",
                                                "unsigned int",
                                                "unsigned long long",
                                                "unsigned short",
                                                "unsigned short",
                                                "float",
                                                "double"};
    return names[int(t)];
  }
  static constexpr const char* fsuffix(DType d) { return d == DType::Float64 ? "" : "f"; }
  static constexpr const char* int_suffix(DType d) { return d == DType::UInt64 ? "ull" : "ll"; }
  static constexpr const char* boolean(bool b) { return b ? "1" : "0"; }
  static constexpr void float_constant(Text& t, DType d, double x) {
    t.literal(x);
    if (d != DType::Float64 && x == x && x != std::numeric_limits<double>::infinity() &&
        x != -std::numeric_limits<double>::infinity())
      t << 'f';
  }
  static constexpr void is_nan(Text& t, std::string_view a) { t << a << " != " << a; }
  static constexpr const char* fma(DType d) {
    return d == DType::Float64 ? "__builtin_fma" : "__builtin_fmaf";
  }
  static constexpr const char* math(Op op, DType d) {
    constexpr const char* f[] = {"sqrtf", "exp2f", "log2f", "sinf", "truncf", "powf"};
    constexpr const char* g[] = {"sqrt", "exp2", "log2", "sin", "trunc", "pow"};
    return (d == DType::Float64 ? g : f)[CStyle<D>::math_index(op)];
  }
  static constexpr void reinterpret(Text& t, DType, DType to, std::string_view a) {
    t << "({ " << D::type(to) << " _b; __builtin_memcpy(&_b, &" << a << ", sizeof _b); _b; })";
  }
  // Work-group hooks (GroupReduce, GPU programs only): in C a work-group is one thread.
  static constexpr void local_array(Text& t, DType d, std::string_view name, int size) {
    t << D::type(d) << ' ' << name << '[' << std::int64_t(size) << "];\n";
  }
  static constexpr void barrier(Text& t) { t << "/* barrier */\n"; }
};

/// The C dialect: one function per kernel, run by the CPU runtime on a slice of its outer loop.
struct CDialect : CFamily<CDialect> {
  /// Whether it renders the vector ops of codegen/vectorize.hpp (GNU C vector extensions, which
  /// GCC and Clang have: only the CPU device runs that pass, exported C stays ISO C).
  static constexpr bool vectors = true;
  /// ISO C: a union's other member (CUDA, C++, keeps CFamily's statement expression).
  static constexpr void reinterpret(Text& t, DType from, DType to, std::string_view a) {
    t << "((union { " << type(from) << " a; " << type(to) << " b; }){" << a << "}).b";
  }
  static constexpr const char* fma(DType d) { return d == DType::Float64 ? "fma" : "fmaf"; }
  static constexpr void vector_op(Text& t, const Program& p, const UOp& u, int i) {
    // tg_f32x8, tg_f64x4 (AVX), tg_f32x16, tg_f64x8 (AVX-512); masks tg_i32x8, ...; a 16-bit
    // float's lanes are float32's; pair_products' words tg_u32x16
    const std::int64_t bits = u.dtype == DType::Float64 ? 64 : 32, lanes = u.arg;
    Text vt_, it_;
    vt_ << (u.dtype == DType::UInt32 ? "tg_u" : "tg_f") << bits << 'x' << lanes;
    it_ << "tg_i" << bits << 'x' << lanes;
    const std::string_view vt = vt_.view(), it = it_.view();
    auto v = [&](int k) -> Text& { return t << 'v' << std::int64_t(k); };
    auto gather = [&] { // {buf[i], buf[i + s], ...}: a VecLoad's elements a stride s apart
      t << '{';
      for (int k = 0; k < u.arg; ++k) {
        v(u.src[0]) << "[v" << std::int64_t(u.src[1]);
        if (k > 0) t << " + " << u.value.i * k;
        t << (k + 1 < u.arg ? "], " : "]");
      }
      t << '}';
    };
    if (u.kind == UKind::VecAcc) {
      t << vt << ' ';
      v(i) << " = {0}";
      if (u.value.f != 0) {
        t << "; ";
        v(i) << " += ";
        constant(t, compute_dtype(u.dtype), u.value);
      }
      t << ";\n";
    } else if (u.kind == UKind::VecLoad && is_half(p.ops[std::size_t(u.src[0])].dtype)) {
      // 16-bit floats widened exactly: their bits gathered, then tg_widen_bf16x16(bits), ...
      t << vt << ' ';
      v(i) << "; { tg_u16x" << lanes << " h";
      if (u.value.i > 1) {
        t << " = ";
        gather();
        t << "; ";
      } else {
        t << "; __builtin_memcpy(&h, &";
        v(u.src[0]) << "[v" << std::int64_t(u.src[1]) << "], sizeof h); ";
      }
      v(i) << " = tg_widen_" << (u.dtype == DType::Float16 ? "f16" : "bf16") << 'x' << lanes
           << "(h); }\n";
    } else if (u.kind == UKind::VecLoad && u.value.i > 1) { // elements a stride apart
      t << vt << ' ';
      v(i) << " = ";
      gather();
      t << ";\n";
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
    } else if (u.kind == UKind::VecPair) { // a widened bfloat16's bits are its word's top half
      t << vt << ' ';
      v(i) << " = (" << vt << "){0}";
      if (u.src[0] >= 0) {
        t << " | (" << vt << ")";
        v(u.src[0]);
      }
      if (u.src[1] >= 0) {
        t << " | ((" << vt << ")";
        v(u.src[1]) << " >> 16)";
      }
      t << ";\n";
    } else if (u.kind == UKind::WordLoad) {
      t << "unsigned ";
      v(i) << "; __builtin_memcpy(&";
      v(i) << ", &";
      v(u.src[0]) << "[v" << std::int64_t(u.src[1]) << "], 4);\n";
    } else if (u.kind == UKind::VecDot2) { // a word in memory: broadcast by the instruction
      const UOp& a = p.ops[std::size_t(u.src[1])];
      t << "tg_dot2" << (a.kind == UKind::WordLoad ? "m" : "") << "_bf16x" << lanes << '(';
      v(u.src[0]) << ", ";
      if (a.kind == UKind::WordLoad)
        v(a.src[0]) << " + v" << std::int64_t(a.src[1]);
      else
        v(u.src[1]);
      t << ", ";
      v(u.src[2]) << ");\n";
    } else if (u.kind == UKind::TileDot) { // AMX's sums, then added to the tile's accumulators
      const std::int64_t columns = std::int64_t(u.value.f), tiles = columns / 16;
      const std::int64_t rows = std::int64_t(u.ranges.size()) / tiles;
      t << "{ float s[" << rows * columns << "] __attribute__((aligned(64))); tg_amx_bf16(&tg_amx, "
        << rows << ", " << tiles << ", ";
      v(u.src[0]) << " + v" << std::int64_t(u.src[1]) << ", "
                  << std::max<std::int64_t>(u.value.i, 1) << ", ";
      v(u.src[2]) << ", " << columns << ", " << std::int64_t(u.arg) << ", s);";
      for (std::size_t k = 0; k < u.ranges.size(); ++k) {
        t << " { tg_f32x16 x; __builtin_memcpy(&x, s + " << std::int64_t(k) * 16 << ", 64); ";
        v(u.ranges[k]) << " += x; }";
      }
      t << " }\n";
    } else if (u.kind == UKind::VecMac) { // fused: tg_fma_f32x16(splat(s), b, acc)
      v(u.src[0]) << " = tg_fma_" << vt.substr(3) << "(((" << vt << "){";
      for (std::int64_t k = 0; k < lanes; ++k) v(u.src[1]) << (k + 1 < lanes ? ", " : "}), ");
      v(u.src[2]) << ", ";
      v(u.src[0]) << ");\n";
    } else {
      t << type(compute_dtype(u.dtype)) << ' ';
      v(i) << " = ";
      v(u.src[0]) << '[' << std::int64_t(u.arg) << "];\n";
    }
  }
  // The guard lets the CPU device compile several kernels as one file (one compiler run). The
  // libm functions are declared rather than taken from <math.h>, whose parsing was a large part of
  // a small kernel's compile time (docs/performance.md).
  static constexpr void prelude(Text& t, const Program& p) {
    common_prelude(t);
    if (has_tiles(p)) amx_prelude(t);
  }
  // amx_products' step (TileDot): rows x 16 * tiles sums over 32 * steps k of a bfloat16 row
  // block `a` (rows `stride` elements apart) by a panel of words `b` (`columns` a row), into
  // `out`. AMX's tiles: the sums in tmm0-2, a's block in tmm3, b's in tmm4-6, configured when
  // the kernel's last step had another shape (`*shape`, a local of the kernel, which releases
  // the tiles as it returns: TG_AMX_END; configuring for every step cost 15% at K = 1024).
  // Without AMX the same steps as fused multiply-adds, each pair's high halves first.
  static constexpr void amx_prelude(Text& t) {
    t << "#ifndef TG_AMX_PRELUDE\n#define TG_AMX_PRELUDE\n"
         "#if defined(__AMX_TILE__) && defined(__AMX_BF16__)\n"
         "typedef struct { unsigned char palette, start, reserved[14]; unsigned short colsb[16]; "
         "unsigned char rows[16]; } tg_amx_config;\n"
         "#define TG_AMX_LOAD(tmm, p, s) __asm__ volatile(\"tileloadd (%0,%1,1), %%tmm\" #tmm "
         ":: \"r\"(p), \"r\"((long long)(s)) : \"memory\")\n"
         "#define TG_AMX_DOT(c, b) __asm__ volatile(\"tdpbf16ps %%tmm\" #b \", %%tmm3, %%tmm\" #c "
         "::)\n"
         "#define TG_AMX_STORE(tmm, p, s) __asm__ volatile(\"tilestored %%tmm\" #tmm \", "
         "(%0,%1,1)\" "
         ":: \"r\"(p), \"r\"((long long)(s)) : \"memory\")\n"
         "#define TG_AMX_END(shape) if (shape) __asm__ volatile(\"tilerelease\" ::)\n"
         "static inline TG_UNUSED void tg_amx_bf16(int* shape, int rows, int tiles, "
         "const unsigned short* a, long long stride, const unsigned* b, long long columns, "
         "long long steps, float* out) {\n"
         "  if (*shape != rows * 4 + tiles) {\n"
         "    tg_amx_config c;\n    __builtin_memset(&c, 0, sizeof c);\n    c.palette = 1;\n"
         "    for (int k = 0; k < tiles; ++k) { c.rows[k] = rows; c.rows[4 + k] = 16; "
         "c.colsb[k] = c.colsb[4 + k] = 64; }\n"
         "    c.rows[3] = rows; c.colsb[3] = 64;\n"
         "    __asm__ volatile(\"ldtilecfg %0\" :: \"m\"(c));\n"
         "    *shape = rows * 4 + tiles;\n  }\n"
         "  __asm__ volatile(\"tilezero %%tmm0\" ::);\n"
         "  if (tiles > 1) __asm__ volatile(\"tilezero %%tmm1\" ::);\n"
         "  if (tiles > 2) __asm__ volatile(\"tilezero %%tmm2\" ::);\n"
         "  for (long long s = 0; s < steps; ++s) {\n"
         "    const unsigned* p = b + 16 * s * columns;\n"
         "    TG_AMX_LOAD(3, a + 32 * s, 2 * stride);\n"
         "    TG_AMX_LOAD(4, p, 4 * columns);\n    TG_AMX_DOT(0, 4);\n"
         "    if (tiles > 1) { TG_AMX_LOAD(5, p + 16, 4 * columns); TG_AMX_DOT(1, 5); }\n"
         "    if (tiles > 2) { TG_AMX_LOAD(6, p + 32, 4 * columns); TG_AMX_DOT(2, 6); }\n"
         "  }\n"
         "  TG_AMX_STORE(0, out, 64 * tiles);\n"
         "  if (tiles > 1) TG_AMX_STORE(1, out + 16, 64 * tiles);\n"
         "  if (tiles > 2) TG_AMX_STORE(2, out + 32, 64 * tiles);\n}\n"
         "#else\n"
         "static inline TG_UNUSED float tg_bf2f(unsigned short h) { unsigned w = (unsigned)h << "
         "16; "
         "float f; __builtin_memcpy(&f, &w, 4); return f; }\n"
         "#define TG_AMX_END(shape) (void)(shape)\n"
         "static inline TG_UNUSED void tg_amx_bf16(int* shape, int rows, int tiles, "
         "const unsigned short* a, long long stride, const unsigned* b, long long columns, "
         "long long steps, float* out) {\n"
         "  (void)shape;\n"
         "  for (int r = 0; r < rows; ++r)\n    for (int c = 0; c < 16 * tiles; ++c) {\n"
         "      float acc = 0;\n"
         "      for (long long k = 0; k < 16 * steps; ++k) {\n"
         "        const unsigned short* x = a + r * stride + 2 * k;\n"
         "        const unsigned w = b[k * columns + c];\n"
         "        acc = fmaf(tg_bf2f(x[1]), tg_bf2f((unsigned short)(w >> 16)), acc);\n"
         "        acc = fmaf(tg_bf2f(x[0]), tg_bf2f((unsigned short)w), acc);\n"
         "      }\n      out[r * 16 * tiles + c] = acc;\n    }\n}\n"
         "#endif\n#endif\n";
  }
  static constexpr void common_prelude(Text& t) {
    t << "#ifndef TG_PRELUDE\n#define TG_PRELUDE\n"
         "float sqrtf(float); double sqrt(double); float exp2f(float); double exp2(double);\n"
         "float log2f(float); double log2(double); float sinf(float); double sin(double);\n"
         "float truncf(float); double trunc(double); float powf(float, float);\n"
         "double pow(double, double); float fmaf(float, float, float);\n"
         "double fma(double, double, double);\n"
         "#ifdef __GNUC__\n#define NAN __builtin_nanf(\"\")\n#define INFINITY __builtin_inff()\n"
         "#else\n#include <math.h>\n#endif\n"
         "#if defined(__GNUC__) && !defined(__clang__)\n"
         "#define TG_REDUCE_KERNEL __attribute__((optimize(\"no-tree-loop-vectorize\", "
         "\"vect-cost-model=unlimited\")))\n"
         "#define TG_GATED_KERNEL __attribute__((optimize(\"no-tree-loop-if-convert\")))\n"
         "#else\n#define TG_REDUCE_KERNEL\n#define TG_GATED_KERNEL\n#endif\n"
         "#ifdef __GNUC__\n"
         "typedef float tg_f32x8 __attribute__((vector_size(32)));\n"
         "typedef int tg_i32x8 __attribute__((vector_size(32)));\n"
         "typedef long long tg_i64x4 __attribute__((vector_size(32)));\n"
         "typedef double tg_f64x4 __attribute__((vector_size(32)));\n"
         "typedef float tg_f32x16 __attribute__((vector_size(64)));\n"
         "typedef int tg_i32x16 __attribute__((vector_size(64)));\n"
         "typedef long long tg_i64x8 __attribute__((vector_size(64)));\n"
         "typedef double tg_f64x8 __attribute__((vector_size(64)));\n"
         // A vector fused multiply-add (VecMac): the x86 instruction where the compiler may emit
         // it (GCC and Clang name the builtins alike), else lane by lane.
         "#define TG_FMA_LANES(T, n, f) static inline tg_##T tg_fma_##T(tg_##T a, tg_##T b, "
         "tg_##T c) { for (int i = 0; i < n; ++i) c[i] = f(a[i], b[i], c[i]); return c; }\n"
         "#if (defined(__x86_64__) || defined(__i386__)) && defined(__FMA__)\n"
         "#define tg_fma_f32x8 __builtin_ia32_vfmaddps256\n"
         "#define tg_fma_f64x4 __builtin_ia32_vfmaddpd256\n"
         "#else\n"
         "TG_FMA_LANES(f32x8, 8, __builtin_fmaf) TG_FMA_LANES(f64x4, 4, __builtin_fma)\n"
         "#endif\n"
         "#if (defined(__x86_64__) || defined(__i386__)) && defined(__AVX512F__)\n"
         "#define tg_fma_f32x16(a, b, c) __builtin_ia32_vfmaddps512_mask(a, b, c, 0xffff, 4)\n"
         "#define tg_fma_f64x8(a, b, c) __builtin_ia32_vfmaddpd512_mask(a, b, c, 0xff, 4)\n"
         "#else\n"
         "TG_FMA_LANES(f32x16, 16, __builtin_fmaf) TG_FMA_LANES(f64x8, 8, __builtin_fma)\n"
         "#endif\n"
         // The vector loads of 16-bit floats (VecLoad): a bfloat16 is a float32's top half; a
         // float16 by the x86 conversion where the compiler has it (exact), else by its fields
         // as decompose's decoding (subnormals m * 2^-24).
         "#define TG_UNUSED __attribute__((unused))\n"
         "typedef unsigned short tg_u16x8 __attribute__((vector_size(16)));\n"
         "typedef unsigned short tg_u16x16 __attribute__((vector_size(32)));\n"
         "typedef unsigned tg_u32x8 __attribute__((vector_size(32)));\n"
         "typedef unsigned tg_u32x16 __attribute__((vector_size(64)));\n"
         "#define TG_WIDEN(n) static inline TG_UNUSED tg_f32x##n tg_widen_bf16x##n(tg_u16x##n h) { "
         "return "
         "(tg_f32x##n)(__builtin_convertvector(h, tg_u32x##n) << 16); } static inline TG_UNUSED "
         "tg_f32x##n "
         "tg_widen_bits_f16x##n(tg_u16x##n h) { tg_u32x##n w = __builtin_convertvector(h, "
         "tg_u32x##n), s = (w & 0x8000) << 16, e = w >> 10 & 31, m = w & 0x3ff, f = s | (m << "
         "13), c = (tg_u32x##n)(e == 31), z = (tg_u32x##n)(e == 0), tiny = "
         "(tg_u32x##n)(__builtin_convertvector(m, tg_f32x##n) * 0x1p-24f) | s; return "
         "(tg_f32x##n)((tiny & z) | ((f | (0x7f800000 & c) | ((e + 112) << 23 & ~c)) & ~z)); }\n"
         "TG_WIDEN(8) TG_WIDEN(16)\n"
         // (and tg_h2f, tg_f2h: a float16's value where the CPU device's target converts
         // float16 itself, as x86-64-v3 can: cpu_info.hpp; NaN as decompose's, 0x7e00 signed)
         "#if (defined(__x86_64__) || defined(__i386__)) && defined(__F16C__)\n"
         "typedef short tg_i16x8 __attribute__((vector_size(16)));\n"
         "typedef float tg_f32x4 __attribute__((vector_size(16)));\n"
         "#define tg_widen_f16x8(h) ((tg_f32x8)__builtin_ia32_vcvtph2ps256((tg_i16x8)(h)))\n"
         "static inline TG_UNUSED float tg_h2f(unsigned short h) { return "
         "__builtin_ia32_vcvtph2ps((tg_i16x8){(short)h})[0]; }\n"
         "static inline TG_UNUSED unsigned short tg_f2h(float f) { unsigned b; "
         "__builtin_memcpy(&b, &f, 4); "
         "return f != f ? (b >> 16 & 0x8000) | 0x7e00 : (unsigned "
         "short)__builtin_ia32_vcvtps2ph((tg_f32x4){f}, 0)[0]; }\n"
         "#else\n#define tg_widen_f16x8 tg_widen_bits_f16x8\n#endif\n"
         "#if (defined(__x86_64__) || defined(__i386__)) && defined(__AVX512F__)\n"
         "typedef short tg_i16x16 __attribute__((vector_size(32)));\n"
         "#define tg_widen_f16x16(h) __builtin_ia32_vcvtph2ps512_mask((tg_i16x16)(h), "
         "(tg_f32x16){0}, 0xffff, 4)\n"
         "#else\n#define tg_widen_f16x16 tg_widen_bits_f16x16\n#endif\n"
         // pair_products' step (VecDot2): AVX512_BF16's instruction (tg_dot2m: its word read
         // from memory and broadcast by the instruction), or the same two fused multiply-adds a
         // lane, the high halves first, where the compiler lacks it
         "#if (defined(__x86_64__) || defined(__i386__)) && defined(__AVX512BF16__)\n"
         "#define tg_dot2_bf16x16(acc, a, b) __asm__(\"vdpbf16ps %2, %1, %0\" : \"+v\"(acc) : "
         "\"v\"(b), \"v\"((tg_u32x16){0} + (a)))\n"
         "#define tg_dot2m_bf16x16(acc, p, b) __asm__(\"vdpbf16ps %2%{1to16%}, %1, %0\" : "
         "\"+v\"(acc) : \"v\"(b), \"m\"(*(const unsigned*)(p)))\n"
         "#else\n"
         "static inline TG_UNUSED tg_f32x16 tg_dot2_f32x16(tg_f32x16 acc, unsigned a, tg_u32x16 b) "
         "{ tg_u32x16 m = (tg_u32x16){0} + 0xffff0000u, s = (tg_u32x16){0} + a; return "
         "tg_fma_f32x16((tg_f32x16)(s << 16), (tg_f32x16)(b << 16), "
         "tg_fma_f32x16((tg_f32x16)(s & m), (tg_f32x16)(b & m), acc)); }\n"
         "#define tg_dot2_bf16x16(acc, a, b) ((acc) = tg_dot2_f32x16(acc, a, b))\n"
         "#define tg_dot2m_bf16x16(acc, p, b) { unsigned _w; __builtin_memcpy(&_w, p, 4); "
         "tg_dot2_bf16x16(acc, _w, b); }\n"
         "#endif\n"
         "#endif\n"
         // A vector load stays in a register: GCC 12 folded a tile's shared loads into each of
         // the tile's multiplies (8 loads for 8 products, not 2), which made a matmul whose panel
         // is in cache bound by its loads. (A 32-byte vector fits a register with AVX only: an
         // exported kernel may be built without it.)
         "#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && "
         "defined(__AVX512F__)\n"
         "#define TG_IN_REG(v) __asm__(\"\" : \"+v\"(v))\n" // (any of the 32 registers)
         "#elif defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && "
         "defined(__AVX__)\n"
         "#define TG_IN_REG(v) __asm__(\"\" : \"+x\"(v))\n"
         "#else\n#define TG_IN_REG(v) (void)0\n#endif\n"
         "#endif\n";
  }
  // A reduce loop over floats cannot be vectorized under exact IEEE math (only SLP across upcast
  // lanes can), and GCC's loop vectorizer with the dynamic cost model spent seconds on one such
  // kernel (cfg cleanup after versioning a 16-lane reduce): it is turned off for these kernels,
  // except where the reduction was split into partial accumulators that vector lanes keep. Their
  // SLP runs without a cost model: with it, GCC 12 left a tile's epilogue that adds one value per
  // row (a convolution's bias) as scalar adds and stores (conv2d [32,16,28,28] with a bias, the
  // kernel alone: 1.70-1.84 -> 1.36-1.40 ms; docs/performance.md).
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
    if (has_tiles(p)) t << "  int tg_amx = 0; /* the AMX tiles' shape (tg_amx_bf16) */\n";
  }
  static constexpr bool has_tiles(const Program& p) {
    for (const UOp& u : p.ops)
      if (u.kind == UKind::TileDot) return true;
    return false;
  }
  static constexpr void finish(Text& t, const Program& p) {
    if (has_tiles(p)) t << "  TG_AMX_END(tg_amx);\n";
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
};

constexpr Text render_c(const Program& p) { return CStyleRenderer::render<CDialect>(p); }

} // namespace tg
