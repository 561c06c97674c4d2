#pragma once
// opt: the optimizer's choices for one kernel — register tiles (upcast lanes and rows), split
// accumulators, packed operands, loop order, GPU tiles — made from what the lowering found out
// about the kernel's loops and loads (KernelFacts), under LowerOptions. lower (lower.hpp) asks
// choose() and builds the program it chose; TG_BEAM (engine/beam.hpp) searches over the options.
// The measurements behind each default are in docs/performance.md.
#include "../graph/view.hpp"
#include "ir.hpp"

namespace tg {

/// Choices the lowering makes beyond correctness (TG_OPT=0 turns them off).
struct LowerOptions {
  /// Reductions compute this many consecutive outputs of their last axis at once, each with its
  /// own accumulator in one shared loop: loads that do not depend on that axis are shared, and
  /// the others are contiguous, so the C compiler vectorizes them (tinygrad's "upcast").
  int upcast = 16;
  /// With an upcast last axis, a reduction whose loads include one that every index of the
  /// axis before it reads alike (matmul's right operand) also computes this many consecutive
  /// outputs of that axis: a register tile of upcast_rows x upcast lanes, each load shared by a
  /// row or a column of it (8 on AVX-512: runtime/cpu_info.hpp).
  int upcast_rows = 4;
  /// A kernel whose one reduction runs along an axis that every load inside it reads
  /// contiguously (a row of a softmax, a layer norm, a sum over the last axis) splits it into up
  /// to this many partial accumulators, acc[j] over elements j, j + n, j + 2n, ..., combined
  /// pairwise after the loop: the C compiler vectorizes the loop (one vector lane per
  /// accumulator, each still summed in order, so the C kernel and INTERP agree bit for bit),
  /// where one accumulator is a chain of dependent adds. It changes the order of a float sum
  /// (TG_OPT=0 turns it off).
  int split_reduce = 16;
  /// A register-tiled reduction whose shared operand (reduce length x columns x 4 bytes) is
  /// larger than this, with at least 8 column tiles, runs its column tiles in the outer loop:
  /// every row tile then reads the same column panel of that operand, which the CPU device
  /// copies into a contiguous array once per column tile (pack_panels), instead of streaming the
  /// whole operand from memory once per row tile.
  std::int64_t panel_bytes = std::int64_t(1) << 17;
  /// Upcast lanes of a reduction without a register tile, when they are contiguous: a sum over
  /// axis 0 then reads a longer run of each row it visits and crosses fewer pages.
  int wide_upcast = 64;
  /// A kernel without reductions that reads its index through a reshape of a view the reshape
  /// cannot merge into (im2col's columns [R, K] from a masked [N, OH, OW, C, KH, KW] window view)
  /// loops over the finer axes of both shapes: each index is then a sum of loop variables, where
  /// it was divided and reduced modulo every axis size per element.
  bool refine_views = true;
  /// In a kernel without reductions, its last two axes when a view masks them and they are at
  /// most this long (a convolution's kernel taps) are unrolled: every mask then folds to a
  /// constant, and the loads a lane can never read vanish.
  int unroll_masked = 8;
  /// A reduction over at most this many elements (a 2 x 2 or 3 x 3 pooling window), unless it
  /// is a product with a shared operand (a matmul), is unrolled: one expression over its loads,
  /// folded in the loop's order (the same values), with no loop and no accumulator, so the C
  /// compiler vectorizes the kernel's lanes like an elementwise one.
  int unroll_reduce = 9;
  /// A kernel without reductions whose output's last axis one load reads with a stride, and the
  /// axis before it contiguously (a transpose), computes tiles of this many x this many outputs:
  /// the tile's loads then read whole runs of that operand's rows, where one output row read one
  /// element from each of its rows (rows a power of two apart fall in a few L1 sets).
  int transpose_tile = 8;
  /// Lanes (columns) of a float32 register tile of a product whose epilogue loads nothing per row
  /// (a bias at most), when the output's last axis divides by them (or its last tile, shifted
  /// back, adds little: a quarter, a sixteenth with three vectors or more; else two vectors) and
  /// the tile's order stays the same (more than `upcast` only where the C compiler has 32 vector
  /// registers: the CPU device on AVX-512, whose tiles runtime/cpu_info.hpp chooses).
  int tile_lanes = 16;
  /// On a GPU (set by for_gpu), a product whose two operands are each shared along one output
  /// axis (a matmul: the left one along the columns, the right one along the rows) computes up
  /// to this many rows by this many columns of outputs a thread, the tile's outputs strided by
  /// the axis over its size (row r of rows R is r * M / R + i): neighbouring threads then still
  /// load neighbouring elements of the right operand for every column of their tiles, while each
  /// load feeds a whole row or column of the tile. Tiles shrink until the kernel keeps at least
  /// gpu_tile_threads threads (TG_GPU_TILE and TG_GPU_TILE_THREADS override both).
  int gpu_tile = 1;
  std::int64_t gpu_tile_threads = std::int64_t(1) << 18;
  /// A register tile along an output axis that its size does not divide (a product 1000 or 255
  /// wide) keeps its size: the axis runs ceil(size / tile) tiles, the last one shifted back to
  /// end where the axis ends (Halide's ShiftInwards), instead of shrinking to the largest power
  /// of two dividing the axis (255: one output at a time). The overlapped outputs are computed
  /// twice, with the same value, so such a kernel never writes its result into a buffer it reads
  /// (Program::overlapping).
  bool tile_tails = true;
  /// Where not 0 (the CPU device on a host with AMX: runtime/cpu_info.hpp), a bfloat16 product's
  /// register tile is this many rows by twice as many columns: AMX's tiles of 16 rows by 16
  /// columns, two of them sharing each block of the left operand (codegen/amx_products.hpp).
  int bf16_tile = 0;
  /// A bfloat16 product's tile takes two steps of its reduction at once (the CPU device on a host
  /// with AVX512_BF16: codegen/pair_products.hpp). It then keeps `upcast` lanes: 8 x 32, as
  /// float32 and float16 used, was slower at 256² and 512² on Zen 4 and no faster at 2048².
  bool bf16_pairs = false;

  /// Whether a register tile over a shared operand of `k` x `columns` elements (its reduce
  /// length by the tile's output columns) runs its column tiles outermost (panel_bytes).
  constexpr bool panel_order(std::int64_t k, std::int64_t columns) const {
    return upcast_rows > 1 && upcast > 1 && k * columns * 4 > panel_bytes && columns / upcast >= 8;
  }
  /// Whether such a tile may read that operand with a stride along its columns (x @ w.t(), w
  /// not copied): in panel order pack_panels copies each column panel of it (k x the tile's
  /// columns, at most kPanelBytes) into a contiguous array, whose rows load as vectors. The
  /// copy reads w's rows contiguously; without it, every lane of the tile read its own row.
  constexpr bool packs_strided(std::int64_t k, std::int64_t columns) const {
    return panel_order(k, columns) && (columns % upcast == 0 || tile_tails) &&
           k * std::max(tile_lanes, 2 * upcast) * 4 <= kPanelBytes;
  }

  /// These choices for a device without register tiles (a GPU): one output per thread, and its
  /// outer loop is its threads, so kept long (no finer loops) and simple (no unrolling). Upcast
  /// lanes would make each thread read a run of a row that its warp's neighbours read next to
  /// it: 32 cache lines per load instruction, and a sixteenth of the threads.
  constexpr LowerOptions for_gpu() const {
    LowerOptions o = *this;
    o.gpu_tile = upcast > 1 ? 8 : 1; // (not with every choice off)
    o.upcast = o.upcast_rows = o.split_reduce = o.unroll_masked = o.unroll_reduce = 1;
    o.transpose_tile = 1;
    o.wide_upcast = o.upcast;
    o.refine_views = o.tile_tails = false;
    return o;
  }
  /// Every choice off (TG_OPT=0): one output and one accumulator per loop iteration.
  static constexpr LowerOptions off() {
    LowerOptions o;
    o.upcast = o.upcast_rows = o.split_reduce = o.unroll_masked = o.unroll_reduce = 1;
    o.transpose_tile = 1;
    o.refine_views = o.tile_tails = false;
    return o;
  }
};

/// What the lowering found out about one reduction of a kernel.
struct ReductionFacts {
  bool hoisted = false;          // computed once per element of its own result (a row's max)
  std::int64_t inner = 0;        // its innermost merged loop's length (0: symbolic)
  bool inner_contiguous = false; // every load inside it reads that loop contiguously or not at all
  DType dtype = DType::Float32;
};

/// What the lowering found out about a kernel that its choices depend on: its merged output
/// loops, its reductions, and how its loads walk the last output axis ("last") and the axis a
/// register tile's rows would run along ("row": the one before the last, or for a reduction
/// whose loads that vary along the last axis all vary along that one too, the innermost axis
/// they are all shared along, such as a convolution's output channels).
struct KernelFacts {
  Shape loops;
  std::size_t row = 0;
  std::vector<ReductionFacts> reductions;
  SInt reduce_length;                           // of reductions[0]: the product of its merged loops
  bool shared_last = false, shared_row = false; // a load inside a reduction reads one element
                                                // along the axis (and varies along another)
  bool contiguous_last = false; // every load inside a reduction reads "last" contiguously
  bool packable_last = false;   // ... or with a constant stride that pack_panels can copy
  bool masked_last = false, masked_row = false; // a view masks part of the axis
  bool transposed = false;           // a load reads "last" with a stride and "row" contiguously
  bool row_shared_epilogue = false;  // every load outside the reductions is one for all rows
  bool lane_shared_epilogue = false; // ... one for all of "last" (a convolution's bias)
};

/// The choices for a kernel.
struct Choices {
  bool pack_strided = false;        // a tile reads its shared operand strided (packs_strided)
  std::vector<std::int64_t> splits; // per reduction: partial accumulators (split_reduce)
  std::int64_t split = 1;           // the aligned reductions' (they split alike)
  std::int64_t lanes = 1, rows = 1; // the register tile: rows x lanes outputs
  std::size_t row = 0;              // the merged output axis of its rows (KernelFacts::row)
  bool strided_tile = false;        // a GPU's tile (gpu_tile)
  bool panel = false;               // column tiles outermost (panel_bytes)
};

namespace detail {
/// The largest power of two up to `most` that divides d (1 if d is symbolic).
constexpr std::int64_t divisor(const SInt& d, std::int64_t most) {
  if (d.is_const())
    for (std::int64_t w = most; w >= 2; w /= 2)
      if (d.constant() % w == 0) return w;
  return 1;
}
/// Tiles of `size` along an axis of `extent` elements: how many (the last one shifted back when
/// size does not divide extent: LowerOptions::tile_tails).
constexpr std::int64_t tiles_of(std::int64_t extent, std::int64_t size) {
  return (extent + size - 1) / size;
}
/// The tile along an axis of size d: `most` where it divides d, or where tile_tails lets its
/// last tile shift back and that computes at most a quarter more outputs than d (or the largest
/// power of two dividing d is under a quarter of `most`); else that power of two.
constexpr std::int64_t tile_size(const SInt& d, std::int64_t most, const LowerOptions& o) {
  const std::int64_t w = divisor(d, most);
  if (w == most || !o.tile_tails || !d.is_const() || d.constant() <= most) return w;
  const std::int64_t extra = tiles_of(d.constant(), most) * most - d.constant();
  return 4 * extra <= d.constant() || 4 * w <= most ? most : w;
}
/// The rows of a register tile along an axis of size d: an axis shorter than the tile whole.
constexpr std::int64_t row_tile(const SInt& d, const LowerOptions& o) {
  return o.upcast_rows > 1 && d.is_const() && d.constant() < o.upcast_rows
             ? std::max<std::int64_t>(d.constant(), 1)
             : tile_size(d, o.upcast_rows, o);
}
} // namespace detail

/// The choices for a kernel with these facts under these options.
constexpr Choices choose(const KernelFacts& f, const LowerOptions& given) {
  using detail::divisor;
  // a bfloat16 product's tile on AMX (LowerOptions::bf16_tile)
  const bool amx_tile = given.bf16_tile > 0 && f.reductions.size() == 1 &&
                        !f.reductions[0].hoisted && f.reductions[0].dtype == DType::BFloat16;
  LowerOptions o = given;
  if (amx_tile) {
    o.upcast_rows = given.bf16_tile;
    o.tile_lanes = 2 * given.bf16_tile;
  }
  auto tile = [&](const SInt& d, std::int64_t most) { return detail::tile_size(d, most, o); };
  auto tile_rows = [&](const SInt& d) { return detail::row_tile(d, o); };
  Choices c;
  const Shape& m = f.loops;
  const std::size_t n = m.size(), row = f.row;
  std::size_t aligned = 0;
  for (const ReductionFacts& r : f.reductions) aligned += !r.hoisted;
  const bool one_aligned = f.reductions.size() == 1 && !f.reductions[0].hoisted;
  const bool float_reduction = !f.reductions.empty() && f.reductions[0].dtype == DType::Float32;
  // a 16-bit product whose tile multiplies float32s (widen_rows), as float32's does
  const bool widened = !f.reductions.empty() && is_half(f.reductions[0].dtype) &&
                       !(f.reductions[0].dtype == DType::BFloat16 && o.bf16_pairs);
  // A transposed operand shared by a tile's rows (x @ w.t()) goes through a packed panel (see
  // LowerOptions::packs_strided); that tile, not split accumulators, then.
  c.pack_strided = n >= 2 && one_aligned && m.back().is_const() && f.reduce_length.is_const() &&
                   tile_rows(m[row]) > 1 && f.shared_row &&
                   o.packs_strided(f.reduce_length.constant(), m.back().constant()) &&
                   !f.contiguous_last;
  const bool lanes_contiguous = c.pack_strided ? f.packable_last : f.contiguous_last;
  auto split_of = [&](const ReductionFacts& r) -> std::int64_t {
    if (o.split_reduce < 4 || c.pack_strided || r.inner < 64 || !r.inner_contiguous) return 1;
    const std::int64_t w = divisor(r.inner, o.split_reduce);
    return w < 4 ? 1 : w;
  };
  // the reductions at the kernel's index split only alike (a row's max and sum, in one loop)
  std::int64_t aligned_split = 0;
  for (const ReductionFacts& r : f.reductions)
    if (!r.hoisted)
      aligned_split = aligned_split == 0 || aligned_split == split_of(r) ? split_of(r) : 1;
  for (const ReductionFacts& r : f.reductions) {
    const std::int64_t w = r.hoisted ? split_of(r) : aligned_split;
    c.splits.push_back(w);
    if (!r.hoisted) c.split = w;
  }
  auto masked_small = [&](std::size_t axis, bool masked) { // (LowerOptions::unroll_masked)
    return axis < n && m[axis].is_const() && m[axis].constant() >= 2 &&
           m[axis].constant() <= o.unroll_masked && masked;
  };
  auto transposed = [&] { // (LowerOptions::transpose_tile)
    const std::int64_t t = o.transpose_tile;
    return t >= 2 && n >= 2 && m[n - 1].is_const() && m[n - 2].is_const() &&
           m[n - 1].constant() % t == 0 && m[n - 2].constant() % t == 0 && f.transposed;
  };
  // Upcast the last output axis of a reduction kernel when it divides evenly, and the one before
  // it for a register tile when a load is shared along it.
  std::int64_t lanes = 1, rows = 1;
  if (c.split == 1 && aligned > 0 && m.back().is_const()) {
    const std::int64_t size = m.back().constant();
    lanes = tile(m.back(), o.upcast);
    // a short axis (10 classes; a register tile's 10 columns) whole: independent accumulators,
    // not one chain, and a tile's rows then follow; where that would leave more than a few lanes
    // past the widest whole vector (14 columns: 8 and 6), two tiles of 8, the second shifted
    // back (tile_tails), which vectorize whole
    const bool rows_follow = one_aligned && f.shared_row && lanes_contiguous;
    if (lanes < 4 || (lanes < size && size <= o.upcast && rows_follow)) {
      lanes = size <= o.upcast ? std::max<std::int64_t>(size, 1) : 1;
      if (rows_follow && o.tile_tails && size > 8 && size < 16 && size % 8 >= 4) lanes = 8;
    } else if (lanes > 4 && !lanes_contiguous)
      lanes = 4; // lanes along a strided axis: 16 rows 16 KiB apart thrash one L1 set
  } else if (f.reductions.empty() && masked_small(n - 1, f.masked_last)) {
    lanes = m.back().constant();
    if (n >= 2 && masked_small(row, f.masked_row) && lanes * m[row].constant() <= 16)
      rows = m[row].constant();
  } else if (f.reductions.empty() && transposed()) {
    lanes = rows = o.transpose_tile;
  }
  if (lanes >= 8 && n >= 2 && one_aligned && f.shared_row && lanes_contiguous)
    rows = tile_rows(m[row]);
  if (rows > 1 && one_aligned && o.tile_lanes > lanes && f.row_shared_epilogue &&
      (float_reduction || amx_tile || widened)) {
    // (an axis the wide tile does not divide: its last tile shifted back, where that computes at
    // most a quarter more outputs; 1000 columns in 8 x 16 tiles ran 1.3x slower than in 8 x 32)
    auto wide_of = [&](std::int64_t most) {
      std::int64_t w = divisor(m.back(), most);
      if (o.tile_tails && w < most && m.back().is_const() && m.back().constant() > most) {
        const std::int64_t size = m.back().constant();
        if (4 * (detail::tiles_of(size, most) * most - size) <= size) w = most;
      }
      return w;
    };
    std::int64_t wide = wide_of(o.tile_lanes);
    // a tile of three vectors (LowerOptions::tile_lanes) only where its last one's overlap adds
    // at most a sixteenth: it is 5-8% faster than two, and 256 columns in tiles of 48 (288
    // computed) ran 1.2x slower than in tiles of 32
    if (o.tile_lanes > 2 * o.upcast &&
        !(wide == o.tile_lanes &&
          16 * detail::tiles_of(m.back().constant(), wide) * wide <= 17 * m.back().constant()))
      wide = wide_of(2 * o.upcast);
    const SInt& k = f.reduce_length;
    if (wide > lanes && (!k.is_const() || !o.panel_order(k.constant(), m.back().constant()) ||
                         m.back().constant() / wide >= 8))
      lanes = wide;
  }
  // an axis that two or three tiles of `upcast` cover, the last shifted back (28 columns: 0-15
  // and 12-27), as one tile of those vectors: each broadcast of the other operand then feeds all
  // of them (lower.hpp's tile_index; a 3x3 conv2d over 28 columns ran 1.1x faster); its
  // epilogue may load one element per row (a convolution's bias)
  const std::int64_t size = m.back().is_const() ? m.back().constant() : 0;
  const std::int64_t whole = detail::tiles_of(size, o.upcast) * o.upcast;
  if (rows > 1 && one_aligned && lanes == o.upcast && (float_reduction || widened) &&
      (f.row_shared_epilogue || f.lane_shared_epilogue) && o.tile_tails && size > o.upcast &&
      whole > size && whole <= o.tile_lanes)
    lanes = whole;
  // without a tile, contiguous lanes widen: a reduction along a strided axis (a sum over axis 0)
  // then reads longer runs of each row it visits; with 32 vector registers (tile_lanes), float32
  // lanes widen 4x more while at least 8 column blocks are left to share among threads
  if (rows == 1 && lanes == o.upcast && o.upcast > 1 && lanes_contiguous) {
    lanes = std::max(lanes, divisor(m.back(), o.wide_upcast));
    const std::int64_t wider = divisor(m.back(), 4 * o.wide_upcast);
    if (o.tile_lanes >= 32 && o.wide_upcast > o.upcast && f.reductions.size() == 1 &&
        float_reduction && wider > lanes && m.back().constant() / wider >= 8)
      lanes = wider;
  }
  if (o.gpu_tile > 1 && rows == 1 && lanes == 1 && n >= 2 && one_aligned && m.back().is_const() &&
      m[row].is_const() && f.shared_row && f.shared_last) { // see LowerOptions::gpu_tile
    std::int64_t r = divisor(m[row], o.gpu_tile), cols = divisor(m.back(), o.gpu_tile);
    const SInt outputs = prod(m);
    const std::int64_t total = outputs.is_const() ? outputs.constant() : outputs.max_value();
    while (r * cols > 1 && total / (r * cols) < o.gpu_tile_threads) (cols >= r ? cols : r) /= 2;
    if (r * cols > 1) {
      rows = r;
      lanes = cols;
      c.strided_tile = true;
    }
  }
  c.lanes = lanes;
  c.rows = rows;
  c.row = row;
  // A register tile whose shared operand (matmul's right one) outgrows the caches runs its column
  // tiles outermost: each column panel of that operand then stays in cache while every row tile
  // passes over it, instead of the whole operand streaming from memory once per row tile.
  const std::int64_t column_tiles =
      lanes > 1 ? detail::tiles_of(m.back().constant(), lanes) : m.back().constant();
  c.panel = rows > 1 && one_aligned && f.reduce_length.is_const() &&
            o.panel_order(f.reduce_length.constant(), m.back().constant()) && column_tiles >= 8;
  return c;
}

} // namespace tg
