#pragma once
// Movement ops (views, no copies) and the composite ops built on them: cat, stack, split,
// gather, matmul, softmax, cumsum.
#include "../util/slice.hpp"
#include "ops.hpp"

#include <limits>

namespace tg {

namespace detail {
/// Host-side check that integer indices lie in [-n, n) (gather and index_select read them).
TG_API Tensor checked_index(const Tensor& index, const Tensor& input, int d, const char* op,
                            std::source_location loc);
/// 0, 1, ..., n - 1 for the one-hot masks of gather, cumsum and the like: int32 where n allows
/// (half the data; and devices without 64-bit types, WEBGPU, can hold it), otherwise int64.
TG_API Tensor arange_on(std::int64_t n, const std::string& device);
} // namespace detail

/// Concatenation along `dim`: every piece padded to the full extent, then summed.
TG_API Tensor cat(const std::vector<Tensor>& ts, int dim = 0,
                  std::source_location loc = std::source_location::current());
TG_API Tensor stack(const std::vector<Tensor>& ts, int dim = 0,
                    std::source_location loc = std::source_location::current());

namespace detail {
/// Whether matmul copies its right operand first: a transposed view (x @ w.t(), as nn::Linear
/// computes) is read along its strided axis by every lane of the kernel's register tile, which
/// ran several times slower than over a contiguous copy (docs/performance.md). Not for small
/// operands, whose copy costs more than it saves, nor when TG_OPT=0, nor where the kernel copies
/// the operand's column panels itself (LowerOptions::packs_strided: large operands, whose tiles
/// run in panel order). In tg/impl/realize.hpp.
TG_API bool copy_transposed_operand(const Tensor& a, const Tensor& b);
} // namespace detail

TG_API Tensor matmul(const Tensor& a, const Tensor& b,
                     std::source_location loc = std::source_location::current());

// free-function spellings, as in torch.*
TG_API Tensor softmax(const Tensor& x, int dim,
                      std::source_location loc = std::source_location::current());
TG_API Tensor log_softmax(const Tensor& x, int dim,
                          std::source_location loc = std::source_location::current());
TG_API Tensor maximum(const Tensor& a, const Tensor& b,
                      std::source_location loc = std::source_location::current());
TG_API Tensor minimum(const Tensor& a, const Tensor& b,
                      std::source_location loc = std::source_location::current());

} // namespace tg
