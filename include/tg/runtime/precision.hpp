#pragma once
// tg::set_float32_matmul_precision and tg::backends::cuda::matmul::allow_tf32, PyTorch's names for
// one setting: whether float32 products may compute at a lower precision inside (TF32 on CUDA's
// tensor cores). Read when a realize plans its kernels, so it applies to products planned after
// a change (the plan cache is keyed by it).
#include <string>

#include "../errors.hpp"

namespace tg {

namespace detail {
/// 0: "highest", 1: "high", 2: "medium".
inline int& matmul_precision() {
  static int p = 0;
  return p;
}
} // namespace detail

/// torch.set_float32_matmul_precision: "highest" (the default: float32 products are computed in
/// float32), "high" or "medium" (CUDA devices of compute capability 8.0 and later compute them
/// on tensor cores, their operands rounded to TF32, a 10-bit mantissa; PyTorch's "medium" may use
/// bfloat16 instead, tg uses TF32 for both). Other devices compute in float32 at every setting.
inline void set_float32_matmul_precision(const std::string& precision) {
  if (precision == "highest")
    detail::matmul_precision() = 0;
  else if (precision == "high")
    detail::matmul_precision() = 1;
  else if (precision == "medium")
    detail::matmul_precision() = 2;
  else
    throw error("tg.set_float32_matmul_precision: expected \"highest\", \"high\" or \"medium\", "
                "got \"" +
                precision + "\"");
}
inline std::string get_float32_matmul_precision() {
  const char* names[] = {"highest", "high", "medium"};
  return names[detail::matmul_precision()];
}

namespace backends::cuda::matmul {
/// torch.backends.cuda.matmul.allow_tf32: true sets the precision "high", false "highest".
inline void allow_tf32(bool on) { set_float32_matmul_precision(on ? "high" : "highest"); }
/// Whether float32 products may use TF32 (a precision other than "highest").
inline bool allow_tf32() { return detail::matmul_precision() != 0; }
} // namespace backends::cuda::matmul

} // namespace tg
