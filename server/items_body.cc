#include "items_body.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "redbloom/funnel.h"
#include "util/utf8.h"

namespace redbloom::server {
namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// True if any byte of `v` is below `n` (n <= 128): the classic "hasless"
// bit trick, 8 bytes per step. Used where there is no SSE2.
constexpr uint64_t HasLess(uint64_t v, uint64_t n) { return (v - kOnes * n) & ~v & kHighs; }
[[maybe_unused]] constexpr uint64_t HasByte(uint64_t v, uint8_t b) {
  return HasLess(v ^ (kOnes * b), 1);
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

class Reader {
 public:
  Reader(std::string_view in, std::deque<std::string>* unescaped)
      : in_(in), unescaped_(unescaped) {}

  size_t pos() const { return pos_; }
  bool AtEnd() const { return pos_ >= in_.size(); }
  char Peek() const { return AtEnd() ? '\0' : in_[pos_]; }
  void Advance() { ++pos_; }

  void SkipWhitespace() {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++pos_;
    }
  }

  // The hot methods return false on error and leave the reason here, so the
  // per-item path builds no Status.
  const Status& error() const { return error_; }
  Status Error(std::string_view what) const {
    // A body that stops early (a client cut it short) says so.
    std::string msg =
        (AtEnd() ? "truncated JSON: the body ends at byte " : "malformed JSON at byte ") +
        std::to_string(pos_) + ": ";
    msg += what;
    return Status::InvalidArgument(std::move(msg));
  }
  bool Fail(std::string_view what) {
    error_ = Error(what);
    return false;
  }

  bool Expect(char c, std::string_view what) {
    if (Peek() != c || AtEnd()) return Fail(what);
    ++pos_;
    return true;
  }

  // At an opening quote. *out views the input when the string has no escapes,
  // else a decoded copy kept in unescaped_.
  bool String(std::string_view* out) {
    ++pos_;  // opening quote
    const size_t start = pos_;
    const char* data = in_.data();
    const size_t n = in_.size();
    // Skip whole blocks while none holds a quote, a backslash or a control
    // character, which is all of most items. `high` notes any byte >= 0x80,
    // so ASCII-only strings (most items) skip UTF-8 validation.
    uint64_t high = 0;
#if defined(__SSE2__)
    // 16 bytes per step: a typical id ("ORD-99821") ends within the first.
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control_max = _mm_set1_epi8(0x1f);
    while (pos_ + 16 <= n) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + pos_));
      const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(v, control_max), control_max);
      const unsigned special = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), control)));
      const unsigned top = static_cast<unsigned>(_mm_movemask_epi8(v));
      if (special != 0) {
        const int at = __builtin_ctz(special);
        high |= top & ((1u << at) - 1);
        pos_ += static_cast<size_t>(at);
        break;
      }
      high |= top;
      pos_ += 16;
    }
#else
    while (pos_ + 8 <= n) {
      uint64_t v;
      std::memcpy(&v, data + pos_, 8);
      if (HasByte(v, '"') | HasByte(v, '\\') | HasLess(v, 0x20)) break;
      high |= v & kHighs;
      pos_ += 8;
    }
#endif
    while (pos_ < n) {
      const unsigned char c = static_cast<unsigned char>(data[pos_]);
      if (c == '"') {
        const std::string_view raw = in_.substr(start, pos_ - start);
        if (high != 0 && !IsValidUtf8(raw)) return Fail("string is not valid UTF-8");
        ++pos_;
        *out = raw;
        return true;
      }
      if (c == '\\') return EscapedString(start, out);
      if (c < 0x20) return Fail("control character in string (escape it)");
      high |= c & 0x80;
      ++pos_;
    }
    return Fail("unterminated string");
  }

  // A JSON number. *is_integer is false when it has a fraction or exponent.
  bool Number(std::string_view* text, bool* is_integer) {
    const size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (!IsDigit(Peek())) return Fail("expected a digit");
    if (Peek() == '0') {
      ++pos_;
      if (IsDigit(Peek())) return Fail("numbers may not have leading zeros");
    } else {
      while (IsDigit(Peek())) ++pos_;
    }
    *is_integer = true;
    if (Peek() == '.') {
      *is_integer = false;
      ++pos_;
      if (!IsDigit(Peek())) return Fail("expected a digit after '.'");
      while (IsDigit(Peek())) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      *is_integer = false;
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!IsDigit(Peek())) return Fail("expected a digit in the exponent");
      while (IsDigit(Peek())) ++pos_;
    }
    *text = in_.substr(start, pos_ - start);
    return true;
  }

  // Skips a literal (true, false, null) so that an error can name its type.
  bool Literal(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

 private:
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  int HexDigit(char c) const {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Reads the 4 hex digits of a \u escape at pos_.
  bool Hex4(uint32_t* out) {
    if (pos_ + 4 > in_.size()) return Fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int d = HexDigit(in_[pos_ + static_cast<size_t>(i)]);
      if (d < 0) return Fail("invalid \\u escape");
      v = (v << 4) | static_cast<uint32_t>(d);
    }
    pos_ += 4;
    *out = v;
    return true;
  }

  bool EscapedString(size_t start, std::string_view* out) {
    std::string s(in_.substr(start, pos_ - start));
    if (!IsValidUtf8(s)) return Fail("string is not valid UTF-8");
    size_t raw_start = pos_;  // start of the current unescaped run
    const auto flush_raw = [&]() -> bool {
      const std::string_view raw = in_.substr(raw_start, pos_ - raw_start);
      if (!IsValidUtf8(raw)) return Fail("string is not valid UTF-8");
      s.append(raw);
      return true;
    };
    while (pos_ < in_.size()) {
      const unsigned char c = static_cast<unsigned char>(in_[pos_]);
      if (c == '"') {
        if (!flush_raw()) return false;
        ++pos_;
        unescaped_->push_back(std::move(s));
        *out = unescaped_->back();
        return true;
      }
      if (c < 0x20) return Fail("control character in string (escape it)");
      if (c != '\\') {
        ++pos_;
        continue;
      }
      if (!flush_raw()) return false;
      ++pos_;
      if (AtEnd()) return Fail("unterminated string");
      const char e = in_[pos_++];
      switch (e) {
        case '"':
          s.push_back('"');
          break;
        case '\\':
          s.push_back('\\');
          break;
        case '/':
          s.push_back('/');
          break;
        case 'b':
          s.push_back('\b');
          break;
        case 'f':
          s.push_back('\f');
          break;
        case 'n':
          s.push_back('\n');
          break;
        case 'r':
          s.push_back('\r');
          break;
        case 't':
          s.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xdc00 && cp <= 0xdfff) return Fail("lone low surrogate in \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            // A high surrogate must be followed by an escaped low one; a lone
            // surrogate has no UTF-8 form.
            if (in_.substr(pos_, 2) != "\\u") return Fail("lone high surrogate in \\u escape");
            pos_ += 2;
            uint32_t lo = 0;
            if (!Hex4(&lo)) return false;
            if (lo < 0xdc00 || lo > 0xdfff) return Fail("lone high surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          AppendUtf8(cp, &s);
          break;
        }
        default:
          --pos_;
          return Fail("invalid escape in string");
      }
      raw_start = pos_;
    }
    return Fail("unterminated string");
  }

  std::string_view in_;
  std::deque<std::string>* unescaped_;
  size_t pos_ = 0;
  Status error_;
};

}  // namespace

Status ItemsBody::Parse(std::string_view body, bool accept_integers, const ItemLimits& limits) {
  items_.clear();
  unescaped_.clear();
  // About one item per 10 bytes of body for typical ids; saves the regrowth.
  items_.reserve(std::min(limits.max_items, body.size() / 10 + 1));
  Reader r(body, &unescaped_);
  const auto item_error = [&](std::string what) {
    return Status::InvalidArgument("item " + std::to_string(items_.size() + 1) + ": " + what);
  };
  r.SkipWhitespace();
  if (r.AtEnd())
    return Status::InvalidArgument("request body is empty; expected {\"items\":[...]}");
  if (!r.Expect('{', "expected an object {\"items\":[...]}")) return r.error();
  bool seen_items = false;
  r.SkipWhitespace();
  if (r.Peek() != '}') {
    while (true) {
      r.SkipWhitespace();
      if (r.Peek() != '"') return r.Error("expected a field name");
      std::string_view key;
      if (!r.String(&key)) return r.error();
      r.SkipWhitespace();
      if (!r.Expect(':', "expected ':' after a field name")) return r.error();
      r.SkipWhitespace();
      if (key != "items") {
        std::string name;
        AppendJsonString(key.substr(0, 64), &name);
        return Status::InvalidArgument("unknown field " + name + "; the body is {\"items\":[...]}");
      }
      if (seen_items) return Status::InvalidArgument("field \"items\" appears twice");
      seen_items = true;
      if (r.Peek() != '[') return Status::InvalidArgument("\"items\" must be an array");
      r.Advance();
      r.SkipWhitespace();
      if (r.Peek() == ']') {
        r.Advance();
      } else {
        while (true) {
          r.SkipWhitespace();
          if (items_.size() == limits.max_items) {
            return Status::TooLarge("more than " + std::to_string(limits.max_items) +
                                    " items in one request; split the batch");
          }
          const char c = r.Peek();
          std::string_view item;
          if (c == '"') {
            if (!r.String(&item)) return r.error();
          } else if (c == '-' || (c >= '0' && c <= '9')) {
            bool is_integer = false;
            if (!r.Number(&item, &is_integer)) return r.error();
            if (!accept_integers) {
              return item_error("is a number; this filter's items are strings (send \"" +
                                std::string(item.substr(0, 32)) + "\")");
            }
            if (!is_integer) {
              return item_error("'" + std::string(item.substr(0, 32)) + "' is not an integer");
            }
          } else if (r.Literal("true") || r.Literal("false") || r.Literal("null") || c == '[' ||
                     c == '{') {
            return item_error(accept_integers ? "must be a string or an integer"
                                              : "must be a string");
          } else {
            return r.Error("expected an item");
          }
          if (item.size() > limits.max_item_bytes) {
            return Status::TooLarge("item " + std::to_string(items_.size() + 1) + " is " +
                                    std::to_string(item.size()) + " bytes; the limit is " +
                                    std::to_string(limits.max_item_bytes));
          }
          items_.push_back(item);
          r.SkipWhitespace();
          if (r.Peek() == ',' && !r.AtEnd()) {
            r.Advance();
            continue;
          }
          if (!r.Expect(']', "expected ',' or ']' in the items array")) return r.error();
          break;
        }
      }
      r.SkipWhitespace();
      if (r.Peek() == ',' && !r.AtEnd()) {
        r.Advance();
        continue;
      }
      if (!r.Expect('}', "expected ',' or '}' after a field")) return r.error();
      break;
    }
  } else {
    r.Advance();
  }
  r.SkipWhitespace();
  if (!r.AtEnd()) return r.Error("unexpected data after the JSON object");
  if (!seen_items) return Status::InvalidArgument("the body must have an \"items\" array");
  return Status::Ok();
}

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t len = internal::Utf8SequenceLength(s, i);
      if (len == 0) {
        out->append("\xef\xbf\xbd");  // U+FFFD
        ++i;
      } else {
        out->append(s.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out->push_back('"');
}

}  // namespace redbloom::server
