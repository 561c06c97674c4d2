#pragma once
// Symbolic integers: dimensions that are polynomials over named variables with bounds
// ("batch" in [1, 4096]). A variable may carry a bound value, used when a kernel is launched;
// the kernel's source only names the variable, so one compiled kernel serves every value.
#include <array>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tg {

/// A short, fixed-capacity name usable in constant expressions.
struct Name {
  std::array<char, 24> chars{};
  constexpr Name() = default;
  constexpr Name(std::string_view s) {
    for (std::size_t i = 0; i < s.size() && i + 1 < chars.size(); ++i) chars[i] = s[i];
  }
  constexpr std::string_view view() const {
    std::size_t n = 0;
    while (n < chars.size() && chars[n]) ++n;
    return {chars.data(), n};
  }
  constexpr bool operator==(const Name&) const = default;
  constexpr auto operator<=>(const Name&) const = default;
};

/// A symbolic size variable: a name, inclusive bounds and (optionally) its current value.
struct Var {
  Name name;
  std::int64_t lo = 0, hi = 0;
  std::int64_t value = -1; // -1: unbound
  constexpr bool operator==(const Var& o) const { return name == o.name; }
  constexpr bool operator<(const Var& o) const { return name < o.name; }
};

/// coef * vars[0] * vars[1] * ...
struct Term {
  std::int64_t coef = 0;
  std::vector<Var> vars; // sorted by name; repeated for powers
  constexpr bool same_monomial(const Term& o) const {
    if (vars.size() != o.vars.size()) return false;
    for (std::size_t i = 0; i < vars.size(); ++i)
      if (!(vars[i] == o.vars[i])) return false;
    return true;
  }
  constexpr bool monomial_less(const Term& o) const {
    if (vars.size() != o.vars.size()) return vars.size() < o.vars.size();
    for (std::size_t i = 0; i < vars.size(); ++i)
      if (!(vars[i] == o.vars[i])) return vars[i] < o.vars[i];
    return false;
  }
};

/// A polynomial with integer coefficients over size variables; plain integers are the common case.
class SInt {
public:
  constexpr SInt() = default;
  template <std::integral I> constexpr SInt(I v) : c_(static_cast<std::int64_t>(v)) {}
  constexpr explicit SInt(const Var& v) { terms_.push_back(Term{1, {v}}); }

  constexpr bool is_const() const { return terms_.empty(); }
  /// The constant part; equals the value when is_const().
  constexpr std::int64_t constant() const { return c_; }
  constexpr const std::vector<Term>& terms() const { return terms_; }

  /// The value with every variable replaced by its bound value (or by `fallback(var)`).
  constexpr std::int64_t eval() const {
    std::int64_t r = c_;
    for (const Term& t : terms_) {
      std::int64_t p = t.coef;
      for (const Var& v : t.vars) p *= v.value;
      r += p;
    }
    return r;
  }
  /// Largest possible value given the variables' bounds (all coefficients assumed >= 0).
  constexpr std::int64_t max_value() const {
    std::int64_t r = c_;
    for (const Term& t : terms_) {
      std::int64_t p = t.coef;
      for (const Var& v : t.vars) p *= v.hi;
      r += p;
    }
    return r;
  }
  constexpr void collect_vars(std::vector<Var>& out) const {
    for (const Term& t : terms_)
      for (const Var& v : t.vars) {
        bool seen = false;
        for (const Var& o : out) seen = seen || o == v;
        if (!seen) out.push_back(v);
      }
  }

  friend constexpr SInt operator+(const SInt& a, const SInt& b) {
    SInt r = a;
    r.c_ += b.c_;
    for (const Term& t : b.terms_) r.add_term(t);
    return r;
  }
  friend constexpr SInt operator-(const SInt& a) {
    SInt r = a;
    r.c_ = -r.c_;
    for (Term& t : r.terms_) t.coef = -t.coef;
    return r;
  }
  friend constexpr SInt operator-(const SInt& a, const SInt& b) { return a + (-b); }
  friend constexpr SInt operator*(const SInt& a, const SInt& b) {
    SInt r(a.c_ * b.c_);
    for (const Term& t : a.terms_) r.add_term(Term{t.coef * b.c_, t.vars});
    for (const Term& t : b.terms_) r.add_term(Term{t.coef * a.c_, t.vars});
    for (const Term& x : a.terms_)
      for (const Term& y : b.terms_) {
        Term t{x.coef * y.coef, x.vars};
        for (const Var& v : y.vars) { // insertion keeps the names sorted
          std::size_t at = t.vars.size();
          while (at > 0 && v < t.vars[at - 1]) --at;
          t.vars.insert(t.vars.begin() + std::ptrdiff_t(at), v);
        }
        r.add_term(t);
      }
    return r;
  }
  /// Exact division by a constant when every coefficient is divisible; otherwise false.
  constexpr bool divisible_by(std::int64_t d) const {
    if (d == 0 || c_ % d) return false;
    for (const Term& t : terms_)
      if (t.coef % d) return false;
    return true;
  }
  constexpr SInt div_exact(std::int64_t d) const {
    SInt r = *this;
    r.c_ /= d;
    for (Term& t : r.terms_) t.coef /= d;
    return r;
  }
  friend constexpr bool operator==(const SInt& a, const SInt& b) {
    if (a.c_ != b.c_ || a.terms_.size() != b.terms_.size()) return false;
    for (std::size_t i = 0; i < a.terms_.size(); ++i)
      if (a.terms_[i].coef != b.terms_[i].coef || !a.terms_[i].same_monomial(b.terms_[i]))
        return false;
    return true;
  }
  friend constexpr bool operator==(const SInt& a, std::int64_t b) {
    return a.is_const() && a.c_ == b;
  }

private:
  constexpr void add_term(const Term& t) {
    if (t.coef == 0) return;
    for (std::size_t i = 0; i < terms_.size(); ++i) {
      if (terms_[i].same_monomial(t)) {
        terms_[i].coef += t.coef;
        if (terms_[i].coef == 0) terms_.erase(terms_.begin() + std::ptrdiff_t(i));
        return;
      }
      if (t.monomial_less(terms_[i])) {
        terms_.insert(terms_.begin() + std::ptrdiff_t(i), t);
        return;
      }
    }
    terms_.push_back(t);
  }
  std::int64_t c_ = 0;
  std::vector<Term> terms_;
};

using Shape = std::vector<SInt>;

constexpr SInt prod(const Shape& s) {
  SInt r = 1;
  for (const SInt& d : s) r = r * d;
  return r;
}
constexpr Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size(), SInt(1));
  SInt acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    st[i] = shape[i] == 1 ? SInt(0) : acc;
    acc = acc * shape[i];
  }
  return st;
}

} // namespace tg
