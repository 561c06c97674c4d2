#pragma once
// Printing a fixed tensor (or any static expression, evaluated first) exactly as tg::Tensor prints
// the same values: tensor([[1.0000, 2.5000], ...]), PyTorch's format, by the one printer both front
// ends call (util/print.hpp).
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "../util/print.hpp"
#include "ops.hpp"

namespace tg {

namespace fx {

/// The text of a row-major array of `shape`, by the printer tg::Tensor uses (util/print.hpp).
template <class T> std::string format(const T* data, const std::vector<std::int64_t>& s, DType t) {
  std::int64_t n = 1;
  for (std::int64_t d : s) n *= d;
  std::vector<double> floats;
  std::vector<std::int64_t> ints;
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>)
      floats.push_back(double(float(data[i])));
    else if constexpr (std::is_floating_point_v<T>)
      floats.push_back(double(data[i]));
    else if constexpr (std::is_unsigned_v<T>)
      ints.push_back(std::int64_t(std::uint64_t(data[i])));
    else
      ints.push_back(std::int64_t(data[i]));
  }
  return format_tensor(floats, ints, s, t);
}

} // namespace fx

template <class T, std::size_t... D> std::string to_string(const fixed<T, D...>& x) {
  return fx::format(x.data(), {std::int64_t(D)...}, dtype_of<T>);
}
template <class T, std::size_t... D>
std::ostream& operator<<(std::ostream& os, const fixed<T, D...>& x) {
  return os << to_string(x);
}
/// An expression prints its value.
template <fx::expr E>
  requires(!fx::is_fixed<E>)
std::ostream& operator<<(std::ostream& os, const E& e) {
  return os << to_string(e.eval());
}

} // namespace tg
