#pragma once
// The safetensors format (state/safetensors.hpp): dtype codes, a small strict JSON parser, and
// the header's validation.
#include <algorithm>
#include <bit>
#include <fstream>
#include <unordered_set>

#include "../graph/sint_text.hpp"
#include "../util/rc.hpp"
#include "safetensors.hpp"

namespace tg::safetensors {

/// The safetensors name of a dtype ("F32", "BF16", "I64", "BOOL", ...).
inline const char* dtype_code(DType t) {
  switch (t) {
  case DType::Bool:
    return "BOOL";
  case DType::Int8:
    return "I8";
  case DType::Int16:
    return "I16";
  case DType::Int32:
    return "I32";
  case DType::Int64:
    return "I64";
  case DType::UInt8:
    return "U8";
  case DType::UInt16:
    return "U16";
  case DType::UInt32:
    return "U32";
  case DType::UInt64:
    return "U64";
  case DType::Float16:
    return "F16";
  case DType::BFloat16:
    return "BF16";
  case DType::Float32:
    return "F32";
  case DType::Float64:
    return "F64";
  }
  return "?";
}
inline std::optional<DType> dtype_from_code(std::string_view s) {
  for (int i = 0; i < dtype_count; ++i)
    if (s == dtype_code(DType(i))) return DType(i);
  return std::nullopt;
}

namespace json {
/// A strict JSON reader that walks the text instead of building a tree: the caller says what it
/// expects where (object() and array() call back at each member and item, string() and number()
/// read scalars, skip() checks any value and drops it). So reading a header takes time linear in
/// its length (duplicate keys are found through a hash set) and memory in proportion to what the
/// caller keeps, whatever the file holds.
class Parser {
public:
  explicit Parser(std::string_view s) : s_(s) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw format_error("invalid JSON header at byte " + std::to_string(i_) + ": " + msg);
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool at_number() const { return peek() == '-' || (peek() >= '0' && peek() <= '9'); }
  /// After the top-level value: nothing but whitespace may follow.
  void finish() {
    ws();
    if (i_ != s_.size()) fail("unexpected '" + std::string(1, s_[i_]) + "' after the JSON value");
  }

  /// An object at nesting `depth`: member(key) is called with the position at each member's
  /// value, which it must read (or skip).
  template <class F> void object(int depth, F&& member) {
    if (depth > max_depth) fail("nested too deeply");
    expect('{');
    ws();
    if (peek() == '}') {
      ++i_;
      return;
    }
    std::unordered_set<std::string> keys;
    while (true) {
      ws();
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      if (!keys.insert(key).second) fail("duplicate key \"" + key + "\"");
      ws();
      expect(':');
      ws();
      member(static_cast<const std::string&>(key));
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return;
    }
  }
  /// An array at nesting `depth`: item() is called at each item, which it must read (or skip).
  template <class F> void array(int depth, F&& item) {
    if (depth > max_depth) fail("nested too deeply");
    expect('[');
    ws();
    if (peek() == ']') {
      ++i_;
      return;
    }
    while (true) {
      ws();
      item();
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return;
    }
  }
  /// A number's text, checked against JSON's grammar.
  std::string_view number() {
    std::size_t b = i_;
    if (peek() == '-') ++i_;
    if (peek() == '0')
      ++i_;
    else if (peek() >= '1' && peek() <= '9')
      while (peek() >= '0' && peek() <= '9') ++i_;
    else
      fail("invalid number");
    if (peek() == '.') {
      ++i_;
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
      while (peek() >= '0' && peek() <= '9') ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
      while (peek() >= '0' && peek() <= '9') ++i_;
    }
    return s_.substr(b, i_ - b);
  }
  /// A string, unescaped (UTF-8).
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("control character in a string");
      if (c != '\\') {
        out.push_back(char(c));
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated string");
      char e = s_[i_++];
      switch (e) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        unsigned cp = hex4();
        if (cp >= 0xD800 && cp < 0xDC00) { // a surrogate pair
          if (s_.size() - i_ < 6 || s_[i_] != '\\' || s_[i_ + 1] != 'u')
            fail("unpaired surrogate in \\u escape");
          i_ += 2;
          unsigned lo = hex4();
          if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          fail("unpaired surrogate in \\u escape");
        }
        utf8(out, cp);
        break;
      }
      default:
        fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }
  /// Any value at nesting `depth`, checked and dropped.
  void skip(int depth) {
    if (depth > max_depth) fail("nested too deeply");
    if (i_ >= s_.size()) fail("unexpected end of the header");
    char c = s_[i_];
    if (c == '{')
      object(depth, [&](const std::string&) { skip(depth + 1); });
    else if (c == '[')
      array(depth, [&] { skip(depth + 1); });
    else if (c == '"')
      string();
    else if (at_number())
      number();
    else if (c == 't')
      word("true");
    else if (c == 'f')
      word("false");
    else if (c == 'n')
      word("null");
    else
      fail("unexpected character '" + std::string(1, c) + "'");
  }

private:
  static constexpr int max_depth = 64;
  void expect(char c) {
    if (i_ >= s_.size()) fail(std::string("expected '") + c + "', found the end of the header");
    if (s_[i_] != c) fail(std::string("expected '") + c + "', found '" + s_[i_] + "'");
    ++i_;
  }
  void word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) fail("unexpected character '" + std::string(1, s_[i_]) + "'");
    i_ += w.size();
  }
  unsigned hex4() {
    if (s_.size() - i_ < 4) fail("truncated \\u escape");
    unsigned u = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[i_++];
      u <<= 4;
      if (h >= '0' && h <= '9')
        u |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f')
        u |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        u |= unsigned(h - 'A' + 10);
      else
        fail("invalid \\u escape");
    }
    return u;
  }
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80)
      out.push_back(char(cp));
    else if (cp < 0x800) {
      out.push_back(char(0xC0 | (cp >> 6)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(char(0xE0 | (cp >> 12)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(char(0xF0 | (cp >> 18)));
      out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    }
  }
  std::string_view s_;
  std::size_t i_ = 0;
};

inline void quote(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20) {
      const char* hex = "0123456789abcdef";
      out += "\\u00";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    } else
      out.push_back(ch);
  }
  out.push_back('"');
}
} // namespace json

namespace detail {
inline constexpr std::uint64_t max_header = 100'000'000; // as the reference implementation

inline std::uint64_t read_u64le(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}
/// A non-negative integer from a number's text (what: the field, for the message).
inline std::uint64_t to_u64(std::string_view text, const std::string& what) {
  if (text.empty() || text[0] == '-' || text.find_first_of(".eE") != std::string_view::npos)
    throw format_error(what + " must be a non-negative integer");
  if (text.size() > 19) throw format_error(what + " is too large");
  std::uint64_t r = 0;
  for (char c : text) r = r * 10 + std::uint64_t(c - '0');
  if (r > (std::uint64_t(1) << 62)) throw format_error(what + " is too large");
  return r;
}
/// Reads one tensor's entry ({"dtype": ..., "shape": [...], "data_offsets": [b, e]}) at nesting
/// `depth`, and checks that its shape and dtype fill its offsets exactly.
inline TensorInfo parse_tensor(json::Parser& p, int depth, const std::string& name) {
  std::string where = "tensor \"" + name + "\": ";
  if (p.peek() != '{') {
    p.skip(depth);
    throw format_error(where + "its entry is not an object");
  }
  bool has_dtype = false, has_shape = false, has_offsets = false;
  std::string dtype;
  TensorInfo info{name, DType::Float32, {}, 0, 0};
  std::vector<std::string_view> offsets; // numbers' text; empty views for other values
  p.object(depth, [&](const std::string& k) {
    if (k == "dtype") {
      has_dtype = true;
      if (p.peek() != '"') {
        p.skip(depth + 1);
        throw format_error(where + "dtype is not a string");
      }
      dtype = p.string();
    } else if (k == "shape") {
      has_shape = true;
      if (p.peek() != '[') {
        p.skip(depth + 1);
        throw format_error(where + "shape is not an array");
      }
      p.array(depth + 1, [&] {
        if (!p.at_number()) {
          p.skip(depth + 2);
          throw format_error(where + "a shape entry must be a non-negative integer");
        }
        info.shape.push_back(std::int64_t(to_u64(p.number(), where + "a shape entry")));
      });
    } else if (k == "data_offsets") {
      has_offsets = true;
      if (p.peek() != '[') {
        p.skip(depth + 1);
        throw format_error(where + "data_offsets must be [begin, end]");
      }
      p.array(depth + 1, [&] {
        if (p.at_number() && offsets.size() < 2) {
          offsets.push_back(p.number());
        } else {
          p.skip(depth + 2);
          offsets.push_back({});
        }
      });
    } else {
      p.skip(depth + 1);
      throw format_error(where + "unknown field \"" + k + "\"");
    }
  });
  if (!has_dtype || !has_shape || !has_offsets)
    throw format_error(where + "needs \"dtype\", \"shape\" and \"data_offsets\"");
  auto t = dtype_from_code(dtype);
  if (!t) {
    bool known = dtype == "F8_E5M2" || dtype == "F8_E4M3" || dtype == "F6_E2M3" ||
                 dtype == "F6_E3M2" || dtype == "F4" || dtype == "F8_E8M0" || dtype == "C64";
    throw format_error(
        where + "dtype \"" + dtype + "\" is " +
        (known ? "not supported by tg (no such dtype in the core)" : "not a safetensors dtype"));
  }
  info.dtype = *t;
  std::uint64_t count = 1;
  bool overflow = false;
  for (std::int64_t d : info.shape) {
    std::uint64_t n = std::uint64_t(d);
    if (n && count > (std::uint64_t(1) << 62) / n)
      overflow = true;
    else
      count *= n;
  }
  if (offsets.size() != 2) throw format_error(where + "data_offsets must be [begin, end]");
  info.begin = to_u64(offsets[0], where + "data_offsets[0]");
  info.end = to_u64(offsets[1], where + "data_offsets[1]");
  if (info.end < info.begin) throw format_error(where + "data_offsets end before they begin");
  if (overflow || count * std::uint64_t(itemsize(*t)) != info.end - info.begin)
    throw format_error(
        where + "shape " + tg::detail::shape_str(Shape(info.shape.begin(), info.shape.end())) +
        " of " + dtype_code(*t) + " needs " +
        (overflow ? "too many" : std::to_string(count * std::uint64_t(itemsize(*t)))) +
        " bytes, but data_offsets [" + std::to_string(info.begin) + ", " +
        std::to_string(info.end) + "] hold " + std::to_string(info.end - info.begin));
  return info;
}
/// Parses and checks a header against the data size (bytes after the header).
inline Header parse_header(std::string_view text, std::uint64_t data_size) {
  if (text.empty() || text[0] != '{') throw format_error("the header does not start with '{'");
  json::Parser p(text);
  Header h;
  p.object(0, [&](const std::string& name) {
    if (name != "__metadata__") {
      h.tensors.push_back(parse_tensor(p, 1, name));
      return;
    }
    if (p.peek() != '{') {
      p.skip(1);
      throw format_error("__metadata__ must be an object of strings");
    }
    p.object(1, [&](const std::string& k) {
      if (p.peek() != '"') {
        p.skip(2);
        throw format_error("__metadata__ value of \"" + k + "\" is not a string");
      }
      h.metadata[k] = p.string();
    });
  });
  p.finish();
  // the tensors must tile the data section exactly
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  for (const TensorInfo& t : h.tensors) {
    if (t.begin != at)
      throw format_error("tensor \"" + t.name + "\": data_offsets [" + std::to_string(t.begin) +
                         ", " + std::to_string(t.end) + "] " +
                         (t.begin < at ? "overlap another tensor"
                                       : "leave a gap after byte " + std::to_string(at)));
    at = t.end;
  }
  if (at != data_size)
    throw format_error(at > data_size
                           ? "truncated: the tensors need " + std::to_string(at) +
                                 " bytes of data, the file has " + std::to_string(data_size)
                           : "the tensors cover " + std::to_string(at) +
                                 " bytes of data, but the file has " + std::to_string(data_size) +
                                 " (trailing bytes)");
  return h;
}
inline Header parse_file_header(std::span<const unsigned char> bytes) {
  if (bytes.size() < 8)
    throw format_error("truncated: " + std::to_string(bytes.size()) +
                       " bytes, too short for the 8-byte header length");
  std::uint64_t n = read_u64le(bytes.data());
  if (n > max_header)
    throw format_error("the header length " + std::to_string(n) +
                       " is larger than the 100 MB limit");
  if (n > bytes.size() - 8)
    throw format_error("truncated: the header length is " + std::to_string(n) +
                       " bytes, but only " + std::to_string(bytes.size() - 8) + " follow");
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), std::size_t(n));
  Header h = parse_header(text, bytes.size() - 8 - n);
  h.data_start = 8 + n;
  return h;
}
inline Tensor from_bytes(const unsigned char* p, const TensorInfo& info,
                         const std::string& device) {
  std::string dev = device.empty() ? default_device() : tg::detail::canonical_device(device);
  std::int64_t n = 1;
  for (std::int64_t d : info.shape) n *= d;
  auto d = tg::device(dev);
  auto buf = make_rc<Buffer>(d, info.dtype, n);
  std::size_t bytes = std::size_t(info.end - info.begin);
  if (info.dtype == DType::Bool) { // any nonzero byte is true
    std::vector<unsigned char> clean(p, p + bytes);
    for (auto& c : clean) c = c ? 1 : 0;
    if (bytes) d->copy_in(buf->ptr, clean.data(), bytes);
  } else if (bytes) {
    d->copy_in(buf->ptr, p, bytes);
  }
  Tensor t =
      Tensor::make(Op::Buffer, info.dtype, Shape(info.shape.begin(), info.shape.end()), {}, dev);
  t.lazy()->buffer = std::move(buf);
  return t;
}
inline std::vector<unsigned char> read_file(const std::string& path, const char* op) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw error(std::string("tg.safetensors.") + op + ": cannot open " + path);
  f.seekg(0, std::ios::end);
  std::streamoff size = f.tellg();
  if (size < 0) throw error(std::string("tg.safetensors.") + op + ": cannot read " + path);
  f.seekg(0, std::ios::beg);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  if (size && !f.read(reinterpret_cast<char*>(bytes.data()), size))
    throw error(std::string("tg.safetensors.") + op + ": cannot read " + path);
  return bytes;
}
template <class F> auto with_name(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const format_error& e) {
    throw format_error("tg.safetensors: " + what + ": " + e.what());
  }
}
} // namespace detail

} // namespace tg::safetensors
