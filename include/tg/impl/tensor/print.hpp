#pragma once
// What tensor/print.hpp declares (TG_API, config.hpp).
#include <ostream>

#include "../../tensor/tensor.hpp"

namespace tg {

TG_API std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

TG_API std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

} // namespace tg
