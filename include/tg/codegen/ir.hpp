#pragma once
// The linear kernel program: what `lower` produces and every renderer (and the reference
// interpreter) consumes. Values are referred to by their index in `ops`.
#include "../graph/graph.hpp"
#include "../graph/sint_text.hpp"
#include "../util/text.hpp"

namespace tg {

enum class UKind : std::uint8_t {
  Param,     // arg: parameter index (0 = output); dtype: storage dtype
  VarParam,  // arg: index into Program::vars
  Bound,     // arg 0: start, 1: end of the parallel range (set by the launcher)
  Const,     // value
  Range,     // loop index; src0 start, src1 end, src2 step (or -1: 1); arg: range id
  EndRange,  // src0: its Range
  Load,      // src0 param, src1 index, src2 gate (or -1); value in compute dtype
  Store,     // src0 param, src1 index, src2 value
  DefineAcc, // value: initial value
  AccAssign, // src0 acc, src1 value: acc = op(acc, value); op MulAdd (made by contract):
             // acc = src1 * src2 + acc, rounded once
  Alu,       // op with 1..3 sources
  Reduce,    // (lowering only) op over src0 within ranges `ranges`
  // GPU programs only (made by gpu_program, codegen/gpu_program.hpp; the CPU path never sees them):
  Special,     // a launch index; arg: GpuIndex
  If,          // src0 condition; the ops up to the matching EndIf run when it holds
  EndIf,       // src0: its If
  GroupReduce, // src0 acc: every thread of the work-group gets op over all threads' acc
  Shared,      // a work-group array of arg elements of dtype (Load/Store take it as src0)
  Barrier,     // every thread of the work-group waits here (in uniform control flow only)
  Private,     // an array of arg elements of dtype, private to the thread, zeroed (Load: src0)
  Mma,         // (CUDA) a warp's tensor-core step, shared_tiles.hpp: src0, src1: the Shared
               // arrays of A and B (16-bit words, a row of value.i each), src2: the Private
               // accumulators; ranges: the reduction offset, the warp's first row and column;
               // arg: tiles of 16 rows x 8 columns (rows * 256 + columns); dtype: A's and B's
  // C programs for the CPU only (made by vectorize, codegen/vectorize.hpp); arg: lanes:
  VecAcc,   // a vector accumulator of arg lanes, each `value`
  VecLoad,  // src0 param, src1 index: arg elements, consecutive or value.i (> 1) apart
  VecMac,   // src0 VecAcc, src1 scalar, src2 VecLoad: acc = scalar * vector + acc, rounded once
  VecLane,  // src0 VecAcc: its lane arg
  VecStore, // src0 Local, src1 index, src2 VecLoad: arg consecutive elements
  Local,    // an array of arg elements of dtype, private to the thread (made by pack_panels)
  VecFold,  // src0 VecAcc, src1 VecLoad: acc = op(acc, vector), lane by lane (op: Add, Max)
  // (made by pair_products, codegen/pair_products.hpp, on hosts with AVX512_BF16):
  VecPair,  // src0, src1 (each or -1: zeros): VecLoads of bfloat16s -> 32-bit words, src0's in
            // the high halves
  VecDot2,  // src0 VecAcc, src1 a word (two bfloat16s), src2 VecLoad of words: each lane adds the
            // product of the high halves, then of the low halves (vdpbf16ps)
  WordLoad, // src0 param of 16-bit elements, src1 index: elements index, index + 1 as one word
  // (made by amx_products, codegen/amx_products.hpp, on hosts with AMX):
  TileDot, // AMX tiles: src0 the left operand's param (bfloat16), src1 the index of its tile's
           // first element, src2 pair_products' panel (words); value.i: the left operand's row
           // stride (elements), value.f: the panel's columns (words); arg: steps of 32 k; ranges:
           // the tile's VecAccs, row by row (16 columns each): each adds its outputs' sums
};

/// The largest copy of a tile's rows the CPU device's pack_rows and widen_rows make into a local
/// array (codegen/pack_rows.hpp, codegen/widen_rows.hpp).
inline constexpr std::int64_t kPackBytes = 256 * 1024;
/// The largest panel the CPU device's pack_panels copies into a local array
/// (codegen/pack_panels.hpp): 2048 rows of a tile of 48 float32 columns (AVX-512's 8 x 48). The
/// lowering counts on it (LowerOptions::packs_strided).
inline constexpr std::int64_t kPanelBytes = 384 * 1024;

/// What a Special UOp reads (GPU programs).
enum class GpuIndex : int {
  Item = 0, // the work item: base + group * local + lane (grouped: base + group)
  Lane = 1, // the thread's index in its work-group
};

struct UOp {
  UKind kind = UKind::Const;
  Op op = Op::Add;
  DType dtype = DType::Int64;
  std::array<int, 3> src{-1, -1, -1};
  Scalar value;
  int arg = -1;
  std::vector<int> ranges; // Reduce: the ranges it runs over
  constexpr bool operator==(const UOp&) const = default;
};

struct Program {
  std::vector<UOp> ops;
  std::vector<DType> params; // storage dtype of each parameter: the outputs, then the inputs
  int outputs = 1;           // how many of the parameters it writes (the first ones)
  std::vector<Var> vars;     // symbolic sizes passed at launch
  SInt outer;                // size of the parallel range (the launcher splits [0, outer))
  SInt work;                 // iterations of the whole loop nest (for threading decisions)
  Text name;
  /// Its reduction split into this many partial accumulators (LowerOptions::split_reduce): the C
  /// compiler may vectorize that loop, as each vector lane keeps its own sum in order.
  int reduce_split = 1;
  /// Its last register tile along an axis overlaps the one before it (LowerOptions::tile_tails):
  /// it writes some outputs twice, with the same value, so it must not write into a buffer it
  /// reads.
  bool overlapping = false;
  // GPU launch shape, set by gpu_program (codegen/gpu_program.hpp); local == 0 on CPU programs.
  int local = 0;                    // threads per work-group (a power of two)
  bool grouped = false;             // a work-group shares one item and splits its reductions
  std::int64_t items_per_outer = 1; // inner output loops flattened into the item index
  std::int64_t per_thread = 1;      // items each thread runs (not grouped): local apart
};

constexpr const char* ukind_name(UKind k) {
  constexpr const char* names[] = {
      "param",    "var",       "bound",   "const",   "range",   "endrange", "load",   "store",
      "acc",      "accassign", "alu",     "reduce",  "special", "if",       "endif",  "groupreduce",
      "shared",   "barrier",   "private", "mma",     "vecacc",  "vecload",  "vecmac", "veclane",
      "vecstore", "local",     "vecfold", "vecpair", "vecdot2", "wordload", "tiledot"};
  return names[static_cast<int>(k)];
}

namespace detail {
/// Helpers for a pass that copies a program op by op into `out`, inserting ops of its own
/// (map: each old op's index in `out`).
struct ProgramRewriter {
  const Program& in;
  std::vector<UOp> out;
  std::vector<int> map;

  constexpr int add(UOp u) {
    out.push_back(std::move(u));
    return int(out.size()) - 1;
  }
  constexpr int cint(std::int64_t v) {
    return add(UOp{UKind::Const,
                   Op::Add,
                   DType::Int64,
                   {-1, -1, -1},
                   Scalar::of_int(DType::Int64, v),
                   -1,
                   {}});
  }
  constexpr int alu(Op op, DType t, int a, int b) {
    return add(UOp{UKind::Alu, op, t, {a, b, -1}, {}, -1, {}});
  }
  constexpr UOp remapped(const UOp& u) const {
    UOp r = u;
    for (int& s : r.src)
      if (s >= 0) s = map[std::size_t(s)];
    for (int& s : r.ranges) s = map[std::size_t(s)]; // (Reduce's loops, Mma's operands)
    return r;
  }
};

/// Drops pure values nothing uses, renumbering the rest.
constexpr Program drop_unused(Program p) {
  std::vector<std::uint8_t> used(p.ops.size(), 0);
  for (std::size_t i = p.ops.size(); i-- > 0;) {
    const UOp& u = p.ops[i];
    bool pure = u.kind == UKind::Const || u.kind == UKind::Alu || u.kind == UKind::Load ||
                u.kind == UKind::VecLoad || u.kind == UKind::VecLane || u.kind == UKind::Local ||
                u.kind == UKind::VecPair || u.kind == UKind::WordLoad;
    if (pure && !used[i]) continue;
    used[i] = 1;
    for (int s : u.src)
      if (s >= 0) used[std::size_t(s)] = 1;
    for (int s : u.ranges) used[std::size_t(s)] = 1;
  }
  std::vector<int> map(p.ops.size(), -1);
  std::vector<UOp> ops;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (!used[i]) continue;
    UOp u = p.ops[i];
    for (int& s : u.src)
      if (s >= 0) s = map[std::size_t(s)];
    for (int& s : u.ranges) s = map[std::size_t(s)];
    map[i] = int(ops.size());
    ops.push_back(u);
  }
  p.ops = std::move(ops);
  return p;
}
} // namespace detail

/// A readable dump of a program (TG_DEBUG=4).
constexpr Text dump(const Program& p) {
  Text t;
  t << "program " << p.name.view() << '\n';
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const UOp& u = p.ops[i];
    t << "  %" << i << " = " << ukind_name(u.kind);
    if (u.kind == UKind::Alu || u.kind == UKind::AccAssign || u.kind == UKind::Reduce ||
        u.kind == UKind::GroupReduce || u.kind == UKind::VecFold)
      t << ' ' << op_name(u.op);
    t << ' ' << dtype_name(u.dtype);
    for (int s : u.src)
      if (s >= 0) t << " %" << s;
    if (u.kind == UKind::Const) {
      if (is_float(u.dtype))
        (t << ' ').literal(u.value.f); // exact (and inf, nan), so dumps tell constants apart
      else
        t << ' ' << u.value.i;
    }
    if (u.arg >= 0) t << " arg=" << u.arg;
    if (u.kind == UKind::VecLoad && u.value.i > 1) t << " stride=" << u.value.i;
    if (u.kind == UKind::TileDot)
      t << " stride=" << u.value.i << " columns=" << std::int64_t(u.value.f);
    for (std::size_t k = 0; k < u.ranges.size(); ++k) t << (k ? " %" : " ranges %") << u.ranges[k];
    t << '\n';
  }
  return t;
}

} // namespace tg
