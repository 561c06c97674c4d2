#pragma once
// narrow32: a program whose integers are all 32 bits wide, for a dialect with no 8-, 16- or
// 64-bit integer arithmetic and no float64 (WGSL). Buffers keep their dtypes (the dialect packs
// narrow ones into 32-bit words): loads widen, stores keep the low bits.
// - 8- and 16-bit integer values become int32 / uint32 and are wrapped back into their dtype's
//   range after every op that can leave it, so each value stays what its dtype makes it.
// - int64 values are the index arithmetic: they become int32. The device refuses 64-bit tensors
//   and checks at launch that sizes stay below 2^31; a constant outside int32, a 64-bit
//   accumulator, a float converted to int64, and int64 arithmetic between two values read from
//   buffers (which 32 bits could overflow) are refused here, naming the kernel.
#include <string>

#include "../errors.hpp"
#include "ir.hpp"

namespace tg {

/// The 32-bit dtype a value of dtype d is computed in (d itself where it is not an integer).
constexpr DType wide32(DType d) {
  switch (d) {
  case DType::Int8:
  case DType::Int16:
  case DType::Int64:
    return DType::Int32;
  case DType::UInt8:
  case DType::UInt16:
    return DType::UInt32;
  default:
    return d;
  }
}

constexpr Program narrow32(const Program& p) {
  const DType i32 = DType::Int32, u32 = DType::UInt32;
  auto refuse = [&](const char* what) {
    throw device_error(std::string("tg: kernel ") + std::string(p.name.view()) + " " + what +
                       ", which a device without 64-bit types (WGSL) cannot compute");
  };
  for (DType d : p.params)
    if (itemsize(d) == 8)
      throw device_error(std::string("tg: kernel ") + std::string(p.name.view()) +
                         " has a tensor of dtype " + dtype_name(d) +
                         ", which a device without 64-bit types (WGSL) cannot hold");
  detail::ProgramRewriter rw{p, {}, std::vector<int>(p.ops.size(), -1)};
  auto add = [&](Op op, DType d, int a, int b = -1) {
    return rw.add(UOp{UKind::Alu, op, d, {a, b, -1}, {}, -1, {}});
  };
  auto konst = [&](DType d, std::int64_t v) {
    return rw.add(UOp{UKind::Const, Op::Add, d, {-1, -1, -1}, Scalar::of_int(d, v), -1, {}});
  };
  // x (a 32-bit value) as dtype d's value: the low bits, sign-extended for signed d
  // ((x << k) >> k: the IR's shifts are products and exact quotients by 2^k)
  auto wrap = [&](DType d, int x) {
    const int bits = 8 * int(itemsize(d));
    if (is_unsigned(d)) return add(Op::And, u32, x, konst(u32, (std::int64_t(1) << bits) - 1));
    const int up =
        add(Op::Mul, u32, add(Op::Bitcast, u32, x), konst(u32, std::int64_t(1) << (32 - bits)));
    return add(Op::Div, i32, add(Op::Bitcast, i32, up), konst(i32, std::int64_t(1) << (32 - bits)));
  };
  const auto narrow = [](DType d) { return is_int(d) && itemsize(d) < 4; };
  // (char, not bool: libstdc++'s vector<bool> is not usable in Clang's constant expressions)
  std::vector<char> data(p.ops.size(), 0);  // a value read from a buffer, or computed from one
  std::vector<char> dirty(p.ops.size(), 0); // a narrow accumulator summed or multiplied
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const UOp& u = p.ops[i];
    UOp r = rw.remapped(u);
    for (int& k : r.ranges) k = rw.map[std::size_t(k)];
    for (int s : u.src)
      if (s >= 0) data[i] = char(data[i] || data[std::size_t(s)]);
    if (u.kind == UKind::Load || u.kind == UKind::DefineAcc) data[i] = 1;
    if (u.kind == UKind::Param) {
      rw.map[i] = rw.add(std::move(r));
      continue;
    }
    if (u.dtype == DType::UInt64 || u.dtype == DType::Float64 ||
        (u.kind == UKind::DefineAcc && u.dtype == DType::Int64))
      refuse(u.kind == UKind::DefineAcc  ? "accumulates integers in int64 (a sum or product of "
                                           "integers: cast them to int32 or float32 first)"
             : u.dtype == DType::Float64 ? "computes float64 values"
                                         : "computes uint64 values");
    if (u.dtype == DType::Int64 && u.kind == UKind::Const &&
        (u.value.i < -2147483648ll || u.value.i > 2147483647ll))
      refuse("indexes past 2^31 (a constant outside int32)");
    if (u.dtype == DType::Int64 && u.kind == UKind::Alu) {
      const DType from = p.ops[std::size_t(u.src[0])].dtype;
      if (u.op == Op::Cast && is_float(from)) refuse("converts a float to int64");
      const bool arith = u.op == Op::Add || u.op == Op::Mul || u.op == Op::Neg || u.op == Op::Div ||
                         u.op == Op::MulAdd;
      bool all = arith;
      for (int s : u.src)
        if (s >= 0) all = all && data[std::size_t(s)];
      if (all) refuse("computes int64 arithmetic of values read from buffers");
    }
    // a read of a narrow accumulator that was summed or multiplied: its value wrapped now
    if (u.kind != UKind::AccAssign)
      for (int k = 0; k < 3; ++k)
        if (u.src[std::size_t(k)] >= 0 && dirty[std::size_t(u.src[std::size_t(k)])])
          r.src[std::size_t(k)] =
              wrap(p.ops[std::size_t(u.src[std::size_t(k)])].dtype, r.src[std::size_t(k)]);
    if (u.kind == UKind::AccAssign && narrow(u.dtype) && (u.op == Op::Add || u.op == Op::Mul))
      dirty[std::size_t(u.src[0])] = 1;
    r.dtype = wide32(u.dtype);
    if (u.kind == UKind::Const && narrow(u.dtype)) r.value = Scalar::of_int(r.dtype, u.value.i);
    const int out = rw.add(std::move(r));
    const bool leaves_range = u.op == Op::Add || u.op == Op::Mul || u.op == Op::Neg ||
                              u.op == Op::Div || u.op == Op::MulAdd || u.op == Op::Cast ||
                              u.op == Op::Bitcast;
    rw.map[i] = u.kind == UKind::Alu && narrow(u.dtype) && leaves_range ? wrap(u.dtype, out) : out;
  }
  Program out = p;
  out.ops = std::move(rw.out);
  return out;
}

} // namespace tg
