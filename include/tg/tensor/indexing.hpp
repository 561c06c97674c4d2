#pragma once
// Ops that select, place or order elements, as torch.*: running products and maxima,
// masked_fill, tril / triu, scatter / scatter_add / index_add, sort / argsort / topk, einsum.
// All are compositions of tg's primitives: comparisons with an index range become one-hot masks
// that a reduction folds (the pattern of cumsum and gather), so they fuse, run on every device and
// differentiate. Sorting ranks every pair: O(n^2) work along the sorted dim.
#include "math.hpp"

namespace tg {

namespace detail {
/// An index range along axis `at` of a rank-`rank` shape of ones: arange(n) there.
TG_API Tensor arange_along(std::int64_t n, int rank, int at, const std::string& device);
/// [..., n(i), n(j), ...] at axes (d, d + 1): j <= i.
TG_API Tensor upto_mask(std::int64_t n, int rank, int d, const std::string& device);
/// A running reduction along dim d: out[i] = op over x[j], j <= i (x in the result dtype).
TG_API Tensor running(const Tensor& x, int d, Op op, const char* name, std::source_location loc);
/// Index of the last j <= i with x[j] equal to (or, both NaN, as) values[i] along d.
TG_API Tensor running_index(const Tensor& x, const Tensor& values, int d);
/// out[i] = x[index[i]] along d, index of x's shape (the gradient goes to the picked element).
TG_API Tensor pick_along(const Tensor& x, const Tensor& index, int d);
/// Moves axis d last (the permutation and its inverse).
TG_API std::pair<std::vector<int>, std::vector<int>> axis_last(int rank, int d);
/// For scatter-like ops: the sum of src[..., k] over k with index[..., k] == o, and whether any
/// k hit o, for o in [0, O): index and src [..., K] (dim last), results [..., O].
TG_API std::pair<Tensor, Tensor> place(const Tensor& index, const Tensor& src, std::int64_t O);
/// The ordering sort uses: a before b (ascending: a < b, NaN last; descending: a > b, NaN first).
TG_API Tensor before(const Tensor& a, const Tensor& b, bool descending);
} // namespace detail

namespace detail {
TG_API Tensor triangle(const Tensor& x, std::int64_t k, bool lower, const char* op,
                       std::source_location loc);
} // namespace detail

namespace detail {
TG_API Tensor scatter_like(const Tensor& x, int dim, const Tensor& index, const Tensor& src,
                           bool add, const char* op, std::source_location loc);
} // namespace detail

/// torch.einsum over explicit or implicit output ("ij,jk->ik", "ij,jk", "i,i->"): each operand
/// is laid out over all the equation's letters, they are multiplied (broadcast), and the letters
/// not in the output are summed; a letter twice in one operand takes a diagonal. No ellipsis.
TG_API Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands,
                     std::source_location loc = std::source_location::current());
TG_API Tensor einsum(std::string_view equation, std::initializer_list<Tensor> operands,
                     std::source_location loc = std::source_location::current());

} // namespace tg
