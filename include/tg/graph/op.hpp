#pragma once
// The primitive ops of the Graph and the scalars its constants hold.
#include <limits>

#include "dtype.hpp"

namespace tg {

enum class Op : std::uint8_t {
  // leaves
  Buffer, // a materialized input: `arg` indexes Graph::buffers
  Const,  // a scalar (shape [])
  // unary
  Neg,
  Recip,
  Sqrt,
  Exp2,
  Log2,
  Sin,
  Trunc,
  Cast,
  Bitcast,
  // binary
  Add,
  Mul,
  Div,
  Mod,
  Max,
  Pow,
  CmpLt,
  CmpEq,
  CmpNe,
  And,
  Or,
  Xor,
  // ternary
  Where,
  // reductions over `axes` (kept as size 1)
  ReduceSum,
  ReduceMax,
  ReduceProd,
  // structure
  View,       // movement ops in `moves`, zero-copy
  Contiguous, // forces a materialized, contiguous copy
  // kernel programs only (made by codegen/decompose.hpp; never a graph node)
  MulAdd, // a * b + c, rounded once
};

constexpr const char* op_name(Op op) {
  constexpr const char* names[] = {
      "buffer", "const",      "neg",     "recip", "sqrt",       "exp2",  "log2", "sin",
      "trunc",  "cast",       "bitcast", "add",   "mul",        "div",   "mod",  "max",
      "pow",    "cmplt",      "cmpeq",   "cmpne", "and",        "or",    "xor",  "where",
      "sum",    "max_reduce", "prod",    "view",  "contiguous", "muladd"};
  return names[static_cast<int>(op)];
}
constexpr bool is_unary(Op op) { return op >= Op::Neg && op <= Op::Bitcast; }
constexpr bool is_binary(Op op) { return op >= Op::Add && op <= Op::Xor; }
constexpr bool is_elementwise(Op op) { return op >= Op::Neg && op <= Op::Where; }
constexpr bool is_reduce(Op op) { return op >= Op::ReduceSum && op <= Op::ReduceProd; }
constexpr bool is_compare(Op op) { return op >= Op::CmpLt && op <= Op::CmpNe; }
constexpr int arity(Op op) {
  return op <= Op::Const                       ? 0
         : is_unary(op)                        ? 1
         : is_binary(op)                       ? 2
         : op == Op::Where || op == Op::MulAdd ? 3
                                               : 1;
}

/// A scalar of any dtype: integers in `i` (uint64 bit-cast), floats in `f`.
struct Scalar {
  double f = 0;
  std::int64_t i = 0;
  static constexpr Scalar of(DType t, double v) {
    Scalar s;
    if (is_float(t))
      s.f = v;
    else if (is_bool(t))
      s.i = v != 0;
    else
      s.i = static_cast<std::int64_t>(v);
    return s;
  }
  static constexpr Scalar of_int(DType t, std::int64_t v) {
    Scalar s;
    if (is_float(t))
      s.f = static_cast<double>(v);
    else
      s.i = is_bool(t) ? (v != 0) : v;
    return s;
  }
  constexpr double as_double(DType t) const {
    return is_float(t) ? f : is_unsigned(t) ? double(std::uint64_t(i)) : double(i);
  }
  constexpr bool operator==(const Scalar&) const = default;
};

/// The value a reduction of dtype t starts from, which combining with changes nothing (op: the
/// reduction, or the ALU op it folds with): 0 for a sum, 1 for a product, -inf or the lowest
/// value for a max.
constexpr Scalar reduce_identity(Op op, DType t) {
  if (op == Op::ReduceSum || op == Op::Add) return Scalar::of_int(t, 0);
  if (op == Op::ReduceProd || op == Op::Mul) return Scalar::of_int(t, 1);
  if (is_float(t)) return Scalar::of(t, -std::numeric_limits<double>::infinity());
  if (is_bool(t) || is_unsigned(t)) return Scalar::of_int(t, 0);
  std::int64_t m = t == DType::Int8    ? -128
                   : t == DType::Int16 ? -32768
                   : t == DType::Int32 ? -2147483648ll
                                       : std::numeric_limits<std::int64_t>::min();
  return Scalar::of_int(t, m);
}

} // namespace tg
