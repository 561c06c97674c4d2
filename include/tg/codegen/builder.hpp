#pragma once
// A hash-consed builder of UOps that folds constants and simplifies index arithmetic using the
// value ranges of integers (so a contiguous kernel's index is just its loop variable).
#include <algorithm>
#include <limits>

#include "ir.hpp"

namespace tg {

class UOpBuilder {
public:
  static constexpr std::int64_t unknown = std::int64_t(1) << 50;

  std::vector<UOp> ops;
  std::vector<std::int64_t> lo, hi; // value range of integer uops

  constexpr int add(UOp u, std::int64_t l = -unknown, std::int64_t h = unknown) {
    std::size_t hsh = hash(u) % buckets_.size();
    if (u.kind != UKind::Range && u.kind != UKind::Reduce && u.kind != UKind::Store)
      for (int i : buckets_[hsh])
        if (ops[std::size_t(i)] == u) return i;
    ops.push_back(std::move(u));
    lo.push_back(l);
    hi.push_back(h);
    int id = int(ops.size()) - 1;
    buckets_[hsh].push_back(id);
    return id;
  }
  constexpr const UOp& operator[](int i) const { return ops[std::size_t(i)]; }
  constexpr bool is_const(int i) const { return ops[std::size_t(i)].kind == UKind::Const; }
  constexpr std::int64_t ival(int i) const { return ops[std::size_t(i)].value.i; }

  constexpr int constant(DType t, Scalar v) {
    UOp u{UKind::Const, Op::Add, t, {-1, -1, -1}, v, -1, {}};
    std::int64_t x = is_float(t) ? 0 : v.i;
    return is_float(t) ? add(u) : add(u, x, x);
  }
  constexpr int cint(std::int64_t v) {
    return constant(DType::Int64, Scalar::of_int(DType::Int64, v));
  }
  constexpr int cbool(bool v) { return constant(DType::Bool, Scalar::of_int(DType::Bool, v)); }

  constexpr int alu(Op op, DType t, int a, int b = -1, int c = -1) {
    if (op == Op::Where && is_const(a)) return ival(a) ? b : c;
    if (is_float(t) || op == Op::Cast || op == Op::Bitcast ||
        (a >= 0 && is_float(ops[std::size_t(a)].dtype)))
      return raw(op, t, a, b, c);
    // integer and boolean simplifications
    const bool ca = a >= 0 && is_const(a), cb = b >= 0 && is_const(b);
    if (is_binary(op) && ca && !cb &&
        (op == Op::Add || op == Op::Mul || op == Op::And || op == Op::Or || op == Op::Max))
      return alu(op, t, b, a);
    if (ca && (b < 0 || cb) && c < 0 && is_binary(op)) {
      std::int64_t x = ival(a), y = ival(b), r = 0;
      bool ok = true;
      switch (op) {
      case Op::Add:
        r = x + y;
        break;
      case Op::Mul:
        r = x * y;
        break;
      case Op::Div:
        ok = y != 0;
        if (ok) r = x / y;
        break;
      case Op::Mod:
        ok = y != 0;
        if (ok) r = x % y;
        break;
      case Op::Max:
        r = x > y ? x : y;
        break;
      case Op::CmpLt:
        r = x < y;
        break;
      case Op::CmpEq:
        r = x == y;
        break;
      case Op::CmpNe:
        r = x != y;
        break;
      case Op::And:
        r = x & y;
        break;
      case Op::Or:
        r = x | y;
        break;
      default:
        ok = false;
      }
      if (ok && !is_unsigned(t)) return constant(t, Scalar::of_int(t, r));
    }
    if (cb) {
      std::int64_t y = ival(b);
      if (op == Op::Add && y == 0) return a;
      if (op == Op::Mul && y == 1) return a;
      if (op == Op::Mul && y == 0) return cint_t(t, 0);
      if (op == Op::Div && y == 1) return a;
      if (op == Op::Mod && y == 1) return cint_t(t, 0);
      if (op == Op::And && t == DType::Bool) return y ? a : cbool(false);
      if (op == Op::Or && t == DType::Bool) return y ? cbool(true) : a;
      const UOp& ua = ops[std::size_t(a)];
      // (x op c1) op c2 -> x op (c1 op c2)
      if ((op == Op::Add || op == Op::Mul) && ua.kind == UKind::Alu && ua.op == op &&
          is_const(ua.src[1])) {
        // copies first: alu() adds to `ops` (ua dangles), and argument order is unspecified
        int x = ua.src[0], c1 = ua.src[1];
        int c = alu(op, t, c1, b);
        return alu(op, t, x, c);
      }
      if ((op == Op::Div || op == Op::Mod) && y > 0 && lo_(a) >= 0) {
        if (hi_(a) < y) return op == Op::Div ? cint_t(t, 0) : a;
        // (x*k + r) / y where y divides k and 0 <= r < y
        auto [mul, rest] = split_multiple(a, y);
        if (mul >= 0) {
          if (op == Op::Mod) return rest < 0 ? cint_t(t, 0) : alu(Op::Mod, t, rest, b);
          int q = mul;
          if (rest >= 0) q = alu(Op::Add, t, q, alu(Op::Div, t, rest, b));
          return q;
        }
      }
      if (op == Op::CmpLt) {
        if (hi_(a) < y) return cbool(true);
        if (lo_(a) >= y) return cbool(false);
      }
    }
    if (op == Op::CmpLt && ca) {
      std::int64_t x = ival(a);
      if (lo_(b) > x) return cbool(true);
      if (hi_(b) <= x) return cbool(false);
    }
    return raw(op, t, a, b, c);
  }

  /// An index expression for a symbolic integer.
  template <class VarIndex> constexpr int sint(const SInt& s, VarIndex&& var_index) {
    int r = cint(s.constant());
    for (const Term& t : s.terms()) {
      int p = cint(t.coef);
      for (const Var& v : t.vars) {
        UOp u{UKind::VarParam, Op::Add, DType::Int64, {-1, -1, -1}, {}, var_index(v), {}};
        p = alu(Op::Mul, DType::Int64, add(u, v.lo, v.hi), p);
      }
      r = alu(Op::Add, DType::Int64, r, p);
    }
    return r;
  }

private:
  constexpr std::int64_t lo_(int i) const { return lo[std::size_t(i)]; }
  constexpr std::int64_t hi_(int i) const { return hi[std::size_t(i)]; }
  constexpr int cint_t(DType t, std::int64_t v) { return constant(t, Scalar::of_int(t, v)); }

  /// Splits a = m*y + rest where rest has a range inside [0, y); m is returned pre-divided.
  constexpr std::pair<int, int> split_multiple(int a, std::int64_t y) {
    const UOp u = ops[std::size_t(a)]; // a copy: cint() and alu() below add to `ops`
    if (u.kind == UKind::Alu && u.op == Op::Mul && is_const(u.src[1]) && ival(u.src[1]) % y == 0 &&
        lo_(u.src[0]) >= 0) {
      int k = cint(ival(u.src[1]) / y);
      return {alu(Op::Mul, u.dtype, u.src[0], k), -1};
    }
    if (u.kind == UKind::Alu && u.op == Op::Add) {
      int x = u.src[0], r = u.src[1];
      for (int pass = 0; pass < 2; ++pass) {
        const UOp ux = ops[std::size_t(x)];
        if (ux.kind == UKind::Alu && ux.op == Op::Mul && is_const(ux.src[1]) &&
            ival(ux.src[1]) % y == 0 && lo_(ux.src[0]) >= 0 && lo_(r) >= 0 && hi_(r) < y) {
          int k = cint(ival(ux.src[1]) / y);
          return {alu(Op::Mul, u.dtype, ux.src[0], k), r};
        }
        if (ux.kind == UKind::Alu && ux.op == Op::Add && lo_(r) >= 0 && hi_(r) < y) {
          auto [m, rest] = split_multiple(x, y);
          if (m >= 0 && rest < 0) return {m, r};
        }
        int tmp = x;
        x = r;
        r = tmp;
      }
    }
    return {-1, -1};
  }

  constexpr int raw(Op op, DType t, int a, int b, int c) {
    UOp u{UKind::Alu, op, t, {a, b, c}, {}, -1, {}};
    std::int64_t l = -unknown, h = unknown;
    if (!is_float(t) && a >= 0) {
      std::int64_t la = lo_(a), ha = hi_(a);
      std::int64_t lb = b >= 0 ? lo_(b) : 0, hb = b >= 0 ? hi_(b) : 0;
      auto known = [](std::int64_t v) { return v > -unknown && v < unknown; };
      bool kn = known(la) && known(ha) && known(lb) && known(hb);
      if (op == Op::Add && kn) {
        l = la + lb;
        h = ha + hb;
      } else if (op == Op::Mul && kn && b >= 0 && is_const(b)) {
        std::int64_t y = ival(b);
        l = y >= 0 ? la * y : ha * y;
        h = y >= 0 ? ha * y : la * y;
      } else if (op == Op::Div && b >= 0 && is_const(b) && ival(b) > 0 && la >= 0) {
        l = la / ival(b);
        h = known(ha) ? ha / ival(b) : unknown;
      } else if (op == Op::Mod && b >= 0 && is_const(b) && ival(b) > 0 && la >= 0) {
        l = 0;
        h = ival(b) - 1;
      } else if (op == Op::Where && b >= 0 && c >= 0 && known(lb) && known(hb) && known(lo_(c)) &&
                 known(hi_(c))) {
        l = std::min(lb, lo_(c));
        h = std::max(hb, hi_(c));
      } else if (is_compare(op) || t == DType::Bool) {
        l = 0;
        h = 1;
      }
      if (!known(l) || !known(h)) {
        l = -unknown;
        h = unknown;
      }
    }
    return add(u, l, h);
  }
  static constexpr std::size_t hash(const UOp& u) {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(std::uint64_t(u.kind));
    mix(std::uint64_t(u.op));
    mix(std::uint64_t(u.dtype));
    for (int s : u.src) mix(std::uint64_t(std::int64_t(s)));
    mix(std::uint64_t(u.value.i));
    mix(std::uint64_t(u.arg));
    return std::size_t(h);
  }
  std::vector<std::vector<int>> buckets_ = std::vector<std::vector<int>>(509);
};

} // namespace tg
