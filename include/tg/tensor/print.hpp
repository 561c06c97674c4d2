#pragma once
// Printing like PyTorch: tensor([[1.0000, 2.5000], ...], dtype=int32), by the printer both front
// ends share (util/print.hpp; Tensor::to_string is in tg/impl/tensor.hpp).
#include <iosfwd>

#include "../util/print_options.hpp"
#include "creation.hpp"

namespace tg {

TG_API std::ostream& operator<<(std::ostream& os, const Tensor& t);
TG_API std::ostream& operator<<(std::ostream& os, DType t);

} // namespace tg
