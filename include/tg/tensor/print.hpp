#pragma once
// Printing like PyTorch: tensor([[1.0000, 2.5000], ...], dtype=int32), by the printer both front
// ends share (util/print.hpp).
#include <ostream>

#include "../util/print.hpp"
#include "creation.hpp"

namespace tg {

inline std::string Tensor::to_string() const {
  std::vector<double> floats;
  std::vector<std::int64_t> ints;
  if (is_float(dtype()))
    floats = to_vector<double>();
  else if (is_unsigned(dtype()))
    for (auto x : to_vector<std::uint64_t>()) ints.push_back(std::int64_t(x));
  else
    ints = to_vector<std::int64_t>();
  return format_tensor(floats, ints, shape(), dtype(), device());
}

inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

} // namespace tg
