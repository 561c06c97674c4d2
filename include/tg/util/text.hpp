#pragma once
// A text builder usable in constant expressions (libstdc++ 12's std::string is not, under Clang).
#include <bit>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace tg {

class Text {
public:
  constexpr Text& operator<<(std::string_view s) {
    buf_.insert(buf_.end(), s.begin(), s.end());
    return *this;
  }
  constexpr Text& operator<<(const char* s) { return *this << std::string_view(s); }
  constexpr Text& operator<<(char c) {
    buf_.push_back(c);
    return *this;
  }
  constexpr Text& operator<<(std::int64_t v) {
    if (v < 0) {
      buf_.push_back('-');
      return write_unsigned(0 - static_cast<std::uint64_t>(v));
    }
    return write_unsigned(static_cast<std::uint64_t>(v));
  }
  constexpr Text& operator<<(int v) { return *this << static_cast<std::int64_t>(v); }
  constexpr Text& operator<<(std::size_t v) { return write_unsigned(v); }
  constexpr Text& write_unsigned(std::uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
      tmp[n++] = char('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) buf_.push_back(tmp[--n]);
    return *this;
  }
  constexpr Text& hex(std::uint64_t v) {
    constexpr char digits[] = "0123456789abcdef";
    char tmp[17];
    int n = 0;
    do {
      tmp[n++] = digits[v & 15];
      v >>= 4;
    } while (v);
    while (n) buf_.push_back(tmp[--n]);
    return *this;
  }
  /// A double as a C literal that reads back exactly: "3.0", "0.5", or a hex float.
  constexpr Text& literal(double d) {
    if (d != d) return *this << "NAN";
    if (d == std::numeric_limits<double>::infinity()) return *this << "INFINITY";
    if (d == -std::numeric_limits<double>::infinity()) return *this << "(-INFINITY)";
    if (d >= -9007199254740992.0 && d <= 9007199254740992.0 && d == double(std::int64_t(d))) {
      if (d == 0 && std::bit_cast<std::uint64_t>(d) >> 63) return *this << "-0.0";
      return *this << std::int64_t(d) << ".0";
    }
    std::uint64_t bits = std::bit_cast<std::uint64_t>(d);
    if (bits >> 63) buf_.push_back('-');
    int exp = int((bits >> 52) & 0x7ff);
    std::uint64_t mant = bits & ((std::uint64_t(1) << 52) - 1);
    *this << (exp ? "0x1." : "0x0.");
    // 13 hex digits of mantissa, trailing zeros trimmed
    char tmp[13];
    for (int k = 12; k >= 0; --k) {
      tmp[k] = "0123456789abcdef"[mant & 15];
      mant >>= 4;
    }
    int last = 12;
    while (last > 0 && tmp[last] == '0') --last;
    for (int k = 0; k <= last; ++k) buf_.push_back(tmp[k]);
    return *this << 'p' << std::int64_t(exp ? exp - 1023 : -1022);
  }
  constexpr std::string_view view() const { return {buf_.data(), buf_.size()}; }
  constexpr std::size_t size() const { return buf_.size(); }
  constexpr const std::vector<char>& chars() const { return buf_; }

private:
  std::vector<char> buf_;
};

/// FNV-1a, 64 bit: stable hashes for cache keys.
constexpr std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace tg
