#pragma once
// The reference interpreter (device INTERP): executes the linear program op by op with C's
// semantics, no compiler involved. It is the oracle the compiled backends are tested against.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../util/rc.hpp"
#include "host.hpp"
#include "launch.hpp"

namespace tg {

namespace detail {

/// A value of any dtype: floats (and 16-bit floats, widened) in f, integers in i.
struct Val {
  double f = 0;
  std::int64_t i = 0;
};

template <class T> constexpr T get(const Val& v) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(v.f);
  else if constexpr (std::is_same_v<T, bool>)
    return v.i != 0;
  else
    return static_cast<T>(v.i);
}
template <class T> constexpr Val put(T x) {
  Val v;
  if constexpr (std::is_floating_point_v<T>)
    v.f = static_cast<double>(x);
  else if constexpr (std::is_unsigned_v<T>)
    v.i = static_cast<std::int64_t>(static_cast<std::uint64_t>(x));
  else
    v.i = static_cast<std::int64_t>(x);
  return v;
}

/// Float to integer as x86 does it (out of range and NaN give the "integer indefinite").
template <class T> T float_to_int(double x) {
  if constexpr (sizeof(T) < 4)
    return static_cast<T>(float_to_int<std::int32_t>(x));
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return static_cast<T>(float_to_int<std::int64_t>(x));
  else {
    if (x != x || x >= 0x1p63 * (std::is_unsigned_v<T> ? 2.0 : 1.0) ||
        x < (std::is_unsigned_v<T> ? 0.0 : -0x1p63) ||
        (sizeof(T) == 4 && (x >= 0x1p31 || x < -0x1p31)))
      return static_cast<T>(std::is_unsigned_v<T> ? T(0) : std::numeric_limits<T>::min());
    return static_cast<T>(x);
  }
}

/// The C type arithmetic of a dtype is done in (16-bit floats: float).
template <class F> decltype(auto) visit_compute(DType t, F&& f) {
  if (is_half(t)) return f(float{});
  return visit_dtype(t, [&](auto x) -> decltype(auto) { return f(x); });
}

/// The C and GLSL kernels' 2^x for float (codegen/decompose.hpp's exp2_poly): the same operations
/// in the same order, so INTERP and those devices agree bit for bit.
inline float exp2_float(float x) {
  using u32 = std::uint32_t;
  u32 lo = -u32(x < -151.0f), hi = -u32(x > 129.0f);
  x = std::bit_cast<float>((std::bit_cast<u32>(x) & ~(lo | hi)) |
                           (std::bit_cast<u32>(-151.0f) & lo) | (std::bit_cast<u32>(129.0f) & hi));
  float t = x + 12582912.0f, f = x - (t - 12582912.0f);
  int n = int(std::bit_cast<u32>(t) - 0x4b400000u), n1 = n / 2;
  float p = std::fma(1.5252734e-5f, f, 1.5403530e-4f);
  p = std::fma(p, f, 1.3333558e-3f);
  p = std::fma(p, f, 9.6181291e-3f);
  p = std::fma(p, f, 5.5504109e-2f);
  p = std::fma(p, f, 2.4022651e-1f);
  p = std::fma(p, f, 6.9314718e-1f);
  p = std::fma(p, f, 1.0f);
  return p * std::bit_cast<float>(u32(n1 + 127) << 23) *
         std::bit_cast<float>(u32(n - n1 + 127) << 23);
}

template <class T> Val unary(Op op, T a) {
  if constexpr (!std::is_arithmetic_v<T>) {
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
    case Op::Neg:
      return put<T>(-a);
    case Op::Recip:
      return put<T>(T(1) / a);
    case Op::Sqrt:
      return put<T>(std::sqrt(a));
    case Op::Exp2:
      if constexpr (std::is_same_v<T, float>)
        return put<T>(exp2_float(a));
      else
        return put<T>(std::exp2(a));
    case Op::Log2:
      return put<T>(std::log2(a));
    case Op::Sin:
      return put<T>(std::sin(a));
    case Op::Trunc:
      return put<T>(std::trunc(a));
    default:
      break;
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    if (op == Op::Neg) return put<bool>(!a);
  } else {
    using U = std::make_unsigned_t<T>;
    if (op == Op::Neg) return put<T>(static_cast<T>(U(0) - static_cast<U>(a)));
  }
  throw device_error(std::string("tg: INTERP cannot run ") + op_name(op) + " on this dtype");
}

template <class T> Val binary(Op op, T a, T b) {
  if constexpr (!std::is_arithmetic_v<T>) {
  } else if (is_compare(op)) {
    return put<bool>(op == Op::CmpLt ? a < b : op == Op::CmpEq ? a == b : a != b);
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
    case Op::Add:
      return put<T>(a + b);
    case Op::Mul:
      return put<T>(a * b);
    case Op::Div:
      return put<T>(a / b);
    case Op::Max:
      return put<T>((a > b || a != a) ? a : b);
    case Op::Pow:
      return put<T>(std::pow(a, b));
    default:
      break;
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
    case Op::And:
    case Op::Mul:
      return put<bool>(a && b);
    case Op::Or:
    case Op::Max:
    case Op::Add:
      return put<bool>(a || b);
    case Op::Xor:
      return put<bool>(a != b);
    default:
      break;
    }
  } else {
    using U = std::make_unsigned_t<T>;
    switch (op) {
    case Op::Add:
      return put<T>(static_cast<T>(static_cast<U>(a) + static_cast<U>(b)));
    case Op::Mul:
      return put<T>(static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b))));
    case Op::Div:
      return put<T>(b == 0                                ? T(0)
                    : (std::is_signed_v<T> && b == T(-1)) ? static_cast<T>(U(0) - static_cast<U>(a))
                                                          : T(a / b));
    case Op::Mod:
      return put<T>(b == 0 || (std::is_signed_v<T> && b == T(-1)) ? T(0) : T(a % b));
    case Op::Max:
      return put<T>(a > b ? a : b);
    case Op::And:
      return put<T>(T(a & b));
    case Op::Or:
      return put<T>(T(a | b));
    case Op::Xor:
      return put<T>(T(a ^ b));
    default:
      break;
    }
  }
  throw device_error(std::string("tg: INTERP cannot run ") + op_name(op) + " on this dtype");
}

inline Val cast(const Val& v, DType from, DType to) {
  return visit_compute(from, [&](auto fx) {
    using F = decltype(fx);
    F x = get<F>(v);
    if (to == DType::Bool) return put<bool>(x != F(0));
    if (to == DType::Float16) return put<float>(half(static_cast<float>(x)));
    if (to == DType::BFloat16) return put<float>(bfloat16_t(static_cast<float>(x)));
    return visit_dtype(to, [&](auto tx) {
      using T = decltype(tx);
      if constexpr (std::is_floating_point_v<F> && !std::is_floating_point_v<T> &&
                    !std::is_same_v<T, bool>)
        return put<T>(float_to_int<T>(static_cast<double>(x)));
      else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>)
        return Val{};
      else
        return put<T>(static_cast<T>(x));
    });
  });
}

inline std::uint64_t bits_of(const Val& v, DType t) {
  switch (t) {
  case DType::Float16:
    return half(static_cast<float>(v.f)).bits;
  case DType::BFloat16:
    return bfloat16_t(static_cast<float>(v.f)).bits;
  case DType::Float32:
    return std::bit_cast<std::uint32_t>(static_cast<float>(v.f));
  case DType::Float64:
    return std::bit_cast<std::uint64_t>(v.f);
  default:
    return std::uint64_t(v.i) & (itemsize(t) == 8 ? ~0ull : ((1ull << (8 * itemsize(t))) - 1));
  }
}
inline Val from_bits(std::uint64_t b, DType t) {
  Val v;
  switch (t) {
  case DType::Float16:
    v.f = half::to_float(std::uint16_t(b));
    break;
  case DType::BFloat16:
    v.f = bfloat16_t::to_float(std::uint16_t(b));
    break;
  case DType::Float32:
    v.f = std::bit_cast<float>(std::uint32_t(b));
    break;
  case DType::Float64:
    v.f = std::bit_cast<double>(b);
    break;
  default:
    v = visit_dtype(t, [&](auto x) {
      using T = decltype(x);
      if constexpr (std::is_integral_v<T>)
        return put<T>(static_cast<T>(b));
      else
        return Val{};
    });
  }
  return v;
}

inline Val load(const void* buf, DType t, std::int64_t idx) {
  return visit_dtype(t, [&](auto x) {
    using T = decltype(x);
    T v = static_cast<const T*>(buf)[idx];
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>)
      return put<float>(float(v));
    else
      return put<T>(v);
  });
}
inline void store(void* buf, DType t, std::int64_t idx, const Val& v) {
  visit_dtype(t, [&](auto x) {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>)
      static_cast<T*>(buf)[idx] = T(static_cast<float>(v.f));
    else
      static_cast<T*>(buf)[idx] = get<T>(v);
  });
}

} // namespace detail

/// Executes a linear program over [start, end) of its outer loop.
inline void interpret(const Program& p, const std::vector<void*>& buffers,
                      const std::vector<std::int64_t>& vars, std::int64_t start, std::int64_t end) {
  using detail::Val;
  const auto& ops = p.ops;
  std::vector<Val> val(ops.size());
  std::vector<std::size_t> match(ops.size(), 0); // Range <-> EndRange
  {
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == UKind::Range || ops[i].kind == UKind::If) stack.push_back(i);
      if (ops[i].kind == UKind::EndRange || ops[i].kind == UKind::EndIf) {
        match[i] = stack.back();
        match[stack.back()] = i;
        stack.pop_back();
      }
    }
  }
  auto dt = [&](int k) { return ops[std::size_t(k)].dtype; };
  for (std::size_t pc = 0; pc < ops.size(); ++pc) {
    const UOp& u = ops[pc];
    auto s = [&](int k) -> const Val& { return val[std::size_t(u.src[std::size_t(k)])]; };
    switch (u.kind) {
    case UKind::Param:
      break;
    case UKind::VarParam:
      val[pc].i = vars[std::size_t(u.arg)];
      break;
    case UKind::Bound:
      val[pc].i = u.arg == 0 ? start : end;
      break;
    case UKind::Const:
    case UKind::DefineAcc:
      val[pc] = detail::visit_compute(u.dtype, [&](auto x) {
        using T = decltype(x);
        if constexpr (std::is_floating_point_v<T>)
          return detail::put<T>(static_cast<T>(u.value.f));
        else
          return detail::put<T>(static_cast<T>(u.value.i));
      });
      break;
    case UKind::Range:
      if (s(0).i >= s(1).i)
        pc = match[pc];
      else
        val[pc].i = s(0).i;
      break;
    case UKind::EndRange: {
      std::size_t r = std::size_t(u.src[0]);
      val[r].i += ops[r].src[2] >= 0 ? val[std::size_t(ops[r].src[2])].i : 1;
      if (val[r].i < val[std::size_t(ops[r].src[1])].i) pc = r;
      break;
    }
    case UKind::If:
      if (!s(0).i) pc = match[pc];
      break;
    case UKind::EndIf:
      break;
    case UKind::Special:
    case UKind::GroupReduce:
    case UKind::Shared:
    case UKind::Barrier:
    case UKind::Private:
    case UKind::Mma:
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
      throw device_error(std::string("tg: INTERP cannot run the device-only op ") +
                         ukind_name(u.kind));
    // A 16-bit float buffer read or written as an integer (decompose's f16_bits/bf16_bits: the
    // programs of a device stand-in that runs them here) holds its bits.
    case UKind::Load:
      if (u.src[2] >= 0 && !s(2).i)
        val[pc] = Val{};
      else
        val[pc] = detail::load(
            buffers[std::size_t(ops[std::size_t(u.src[0])].arg)],
            is_half(dt(u.src[0])) && is_int(u.dtype) ? DType::UInt16 : dt(u.src[0]), s(1).i);
      break;
    case UKind::Store:
      detail::store(buffers[std::size_t(ops[std::size_t(u.src[0])].arg)],
                    is_half(dt(u.src[0])) && is_int(dt(u.src[2])) ? DType::UInt16 : dt(u.src[0]),
                    s(1).i, s(2));
      break;
    case UKind::AccAssign:
      val[std::size_t(u.src[0])] = detail::visit_compute(u.dtype, [&](auto x) {
        using T = decltype(x);
        if constexpr (std::is_floating_point_v<T>)
          if (u.op == Op::MulAdd) // (contract: float sums of products)
            return detail::put<T>(
                std::fma(detail::get<T>(s(1)), detail::get<T>(s(2)), detail::get<T>(s(0))));
        return detail::binary<T>(u.op, detail::get<T>(s(0)), detail::get<T>(s(1)));
      });
      break;
    case UKind::Alu:
      if (u.op == Op::Where)
        val[pc] = s(0).i ? s(1) : s(2);
      else if (u.op == Op::Cast)
        val[pc] = detail::cast(s(0), dt(u.src[0]), u.dtype);
      else if (u.op == Op::Bitcast)
        val[pc] = detail::from_bits(detail::bits_of(s(0), dt(u.src[0])), u.dtype);
      else if (u.op == Op::MulAdd)
        val[pc] = detail::visit_compute(u.dtype, [&](auto x) {
          using T = decltype(x);
          T a = detail::get<T>(s(0)), b = detail::get<T>(s(1)), c = detail::get<T>(s(2));
          if constexpr (std::is_floating_point_v<T>)
            return detail::put<T>(std::fma(a, b, c));
          else
            return detail::binary<T>(Op::Add, detail::get<T>(detail::binary<T>(Op::Mul, a, b)), c);
        });
      else if (is_unary(u.op))
        val[pc] = detail::visit_compute(u.dtype, [&](auto x) {
          using T = decltype(x);
          return detail::unary<T>(u.op, detail::get<T>(s(0)));
        });
      else
        val[pc] = detail::visit_compute(dt(u.src[0]), [&](auto x) {
          using T = decltype(x);
          return detail::binary<T>(u.op, detail::get<T>(s(0)), detail::get<T>(s(1)));
        });
      break;
    case UKind::Reduce:
      break;
    }
  }
}

class InterpRunner : public Runner {
public:
  explicit InterpRunner(Program p) : p_(std::move(p)) {}
  void run(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars) override {
    interpret(p_, buffers, vars, 0, eval_sint(p_.outer, p_.vars, vars));
  }

private:
  Program p_;
};

class InterpDevice : public HostDevice {
public:
  std::string name() const override { return "INTERP"; }
  /// The CPU's schedule and lowering (it checks the CPU's programs), run as programs.
  Target target() const override { return with_env(Target::interp()); }
  std::vector<Rc<Runner>> prepare(const std::vector<const KernelCode*>& kernels) override {
    std::vector<Rc<Runner>> out;
    for (const KernelCode* k : kernels) {
      auto r = make_rc<InterpRunner>(k->program);
      r->name = std::string(k->program.name.view());
      out.push_back(r);
    }
    return out;
  }
};

} // namespace tg
