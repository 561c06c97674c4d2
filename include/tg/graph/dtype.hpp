#pragma once
// Data types, their sizes and names, PyTorch type promotion, and the 16-bit float storage types.
#include <bit>
#include <cstdint>
#include <type_traits>

namespace tg {

enum class DType : std::uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64
};
inline constexpr int dtype_count = 13;

namespace dtypes {
inline constexpr DType bool_ = DType::Bool, int8 = DType::Int8, int16 = DType::Int16,
                       int32 = DType::Int32, int64 = DType::Int64, uint8 = DType::UInt8,
                       uint16 = DType::UInt16, uint32 = DType::UInt32, uint64 = DType::UInt64,
                       float16 = DType::Float16, bfloat16 = DType::BFloat16,
                       float32 = DType::Float32, float64 = DType::Float64;
} // namespace dtypes
using namespace dtypes;

constexpr int itemsize(DType t) {
  switch (t) {
  case DType::Bool:
  case DType::Int8:
  case DType::UInt8:
    return 1;
  case DType::Int16:
  case DType::UInt16:
  case DType::Float16:
  case DType::BFloat16:
    return 2;
  case DType::Int32:
  case DType::UInt32:
  case DType::Float32:
    return 4;
  default:
    return 8;
  }
}
constexpr bool is_float(DType t) { return t >= DType::Float16; }
constexpr bool is_bool(DType t) { return t == DType::Bool; }
constexpr bool is_unsigned(DType t) { return t >= DType::UInt8 && t <= DType::UInt64; }
constexpr bool is_int(DType t) { return t >= DType::Int8 && t <= DType::UInt64; }
/// 16-bit floats are stored as 16 bits and computed in float32.
constexpr bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
constexpr DType compute_dtype(DType t) { return is_half(t) ? DType::Float32 : t; }

constexpr const char* dtype_name(DType t) {
  constexpr const char* names[] = {"bool",     "int8",    "int16",  "int32",  "int64",
                                   "uint8",    "uint16",  "uint32", "uint64", "float16",
                                   "bfloat16", "float32", "float64"};
  return names[static_cast<int>(t)];
}

// Rank inside a category, used by promotion: bigger wins.
namespace detail {
constexpr int category(DType t) { return is_bool(t) ? 0 : is_int(t) ? 1 : 2; }
} // namespace detail

/// PyTorch's promotion of two tensor dtypes.
constexpr DType promote(DType a, DType b) {
  if (a == b) return a;
  int ca = detail::category(a), cb = detail::category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if (is_half(a) && is_half(b)) return DType::Float32; // float16 with bfloat16
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  // integers
  if (is_unsigned(a) == is_unsigned(b)) return itemsize(a) >= itemsize(b) ? a : b;
  DType u = is_unsigned(a) ? a : b, s = is_unsigned(a) ? b : a;
  if (itemsize(s) > itemsize(u)) return s;
  switch (itemsize(u)) { // a signed type wide enough for both
  case 1:
    return DType::Int16;
  case 2:
    return DType::Int32;
  default:
    return DType::Int64; // uint32/uint64 with a signed type: int64 (uint64 may wrap)
  }
}

/// PyTorch's result_type of two tensor operands, where a 0-d tensor counts for less: next to a
/// tensor with dimensions its dtype matters only when it is of a higher category (int32 tensor +
/// 0-d int64: int32; + 0-d float64: float64; float16 tensor + 0-d float64: float16).
constexpr DType promote(DType a, bool a_0d, DType b, bool b_0d) {
  if (a_0d == b_0d) return promote(a, b);
  DType dim = a_0d ? b : a, zero = a_0d ? a : b;
  if (is_float(dim)) return dim;
  if (dim == DType::Bool || is_float(zero)) return promote(dim, zero);
  return dim;
}

/// The kind of a Python-like C++ scalar, as both front ends promote it: Bool, Int64 or Float64.
template <class S> constexpr DType scalar_kind() {
  using T = std::remove_cvref_t<S>;
  if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else if constexpr (std::is_integral_v<T>)
    return DType::Int64;
  else
    return DType::Float64;
}

/// Promotion of a tensor dtype with a Python-like scalar of kind `scalar` (Bool, Int64 or
/// Float64): the scalar only matters when it is of a higher category (int tensor * 2.5 -> float32).
constexpr DType promote_scalar(DType t, DType scalar) {
  int ct = detail::category(t), cs = detail::category(scalar);
  if (cs <= ct) return t;
  return cs == 2 ? DType::Float32 : DType::Int64;
}

/// IEEE half and bfloat16 as storage types, with round-to-nearest-even conversions.
struct half {
  std::uint16_t bits = 0;
  constexpr half() = default;
  constexpr half(float f) : bits(from_float(f)) {}
  constexpr operator float() const { return to_float(bits); }
  static constexpr std::uint16_t from_float(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    std::uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int exp = int((x >> 23) & 0xff);
    if (exp == 255) return std::uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int e = exp - 127 + 15;
    if (e >= 31) return std::uint16_t(sign | 0x7c00u);
    if (e <= 0) {
      if (e < -10) return std::uint16_t(sign);
      mant |= 0x800000u;
      int shift = 14 - e;
      std::uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1),
                    halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
      return std::uint16_t(sign | h);
    }
    std::uint32_t h = (std::uint32_t(e) << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h; // may carry into the exponent: correct
    return std::uint16_t(sign | h);
  }
  static constexpr float to_float(std::uint16_t h) {
    std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f,
                  mant = h & 0x3ffu;
    std::uint32_t x;
    if (exp == 0) {
      if (mant == 0)
        x = sign;
      else {
        int e = -1;
        do {
          mant <<= 1;
          ++e;
        } while (!(mant & 0x400u));
        x = sign | (std::uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
      }
    } else if (exp == 31)
      x = sign | 0x7f800000u | (mant << 13);
    else
      x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    return std::bit_cast<float>(x);
  }
};
struct bfloat16_t {
  std::uint16_t bits = 0;
  constexpr bfloat16_t() = default;
  constexpr bfloat16_t(float f) : bits(from_float(f)) {}
  constexpr operator float() const { return to_float(bits); }
  static constexpr std::uint16_t from_float(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
      return std::uint16_t((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return std::uint16_t(x >> 16);
  }
  static constexpr float to_float(std::uint16_t b) {
    return std::bit_cast<float>(std::uint32_t(b) << 16);
  }
};

template <class T> struct dtype_of_t;
template <> struct dtype_of_t<bool> {
  static constexpr DType value = DType::Bool;
};
template <> struct dtype_of_t<std::int8_t> {
  static constexpr DType value = DType::Int8;
};
template <> struct dtype_of_t<std::int16_t> {
  static constexpr DType value = DType::Int16;
};
template <> struct dtype_of_t<std::int32_t> {
  static constexpr DType value = DType::Int32;
};
template <> struct dtype_of_t<long> {
  static constexpr DType value = DType::Int64;
};
template <> struct dtype_of_t<long long> {
  static constexpr DType value = DType::Int64;
};
template <> struct dtype_of_t<std::uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <> struct dtype_of_t<std::uint16_t> {
  static constexpr DType value = DType::UInt16;
};
template <> struct dtype_of_t<std::uint32_t> {
  static constexpr DType value = DType::UInt32;
};
template <> struct dtype_of_t<unsigned long> {
  static constexpr DType value = DType::UInt64;
};
template <> struct dtype_of_t<unsigned long long> {
  static constexpr DType value = DType::UInt64;
};
template <> struct dtype_of_t<half> {
  static constexpr DType value = DType::Float16;
};
template <> struct dtype_of_t<bfloat16_t> {
  static constexpr DType value = DType::BFloat16;
};
template <> struct dtype_of_t<float> {
  static constexpr DType value = DType::Float32;
};
template <> struct dtype_of_t<double> {
  static constexpr DType value = DType::Float64;
};
template <class T> inline constexpr DType dtype_of = dtype_of_t<T>::value;

/// Calls f(T{}) with the C++ storage type of a dtype.
template <class F> constexpr decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
  case DType::Bool:
    return f(bool{});
  case DType::Int8:
    return f(std::int8_t{});
  case DType::Int16:
    return f(std::int16_t{});
  case DType::Int32:
    return f(std::int32_t{});
  case DType::Int64:
    return f(std::int64_t{});
  case DType::UInt8:
    return f(std::uint8_t{});
  case DType::UInt16:
    return f(std::uint16_t{});
  case DType::UInt32:
    return f(std::uint32_t{});
  case DType::UInt64:
    return f(std::uint64_t{});
  case DType::Float16:
    return f(half{});
  case DType::BFloat16:
    return f(bfloat16_t{});
  case DType::Float32:
    return f(float{});
  default:
    return f(double{});
  }
}

} // namespace tg
