#include "items_body.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "redbloom/funnel.h"

namespace redbloom::server {
namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// True if any byte of `v` is below `n` (n <= 128): the classic "hasless"
// bit trick, 8 bytes per step.
constexpr uint64_t HasLess(uint64_t v, uint64_t n) { return (v - kOnes * n) & ~v & kHighs; }
constexpr uint64_t HasByte(uint64_t v, uint8_t b) { return HasLess(v ^ (kOnes * b), 1); }

// Length of the UTF-8 sequence at s[i], or 0 if it is not well-formed (the
// same rules as redbloom::IsValidUtf8: no overlongs, no surrogates, <= U+10FFFF).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  const auto cont = [&](size_t k) { return k < s.size() && (b(k) & 0xc0) == 0x80; };
  if (c >= 0xc2 && c <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    if (c == 0xe0 && b(i + 1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(i + 1) >= 0xa0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (c == 0xf0 && b(i + 1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(i + 1) >= 0x90) return 0;  // > U+10FFFF
    return 4;
  }
  return 0;
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

  Status Error(std::string_view what) const {
    std::string msg = "malformed JSON at byte " + std::to_string(pos_) + ": ";
    msg += what;
    return Status::InvalidArgument(std::move(msg));
  }

  Status Expect(char c, std::string_view what) {
    if (Peek() != c || AtEnd()) return Error(what);
    ++pos_;
    return Status::Ok();
  }

  // At an opening quote. *out views the input when the string has no escapes,
  // else a decoded copy kept in unescaped_.
  Status String(std::string_view* out) {
    ++pos_;  // opening quote
    const size_t start = pos_;
    const char* data = in_.data();
    const size_t n = in_.size();
    // Skip 8 bytes at a time while none is a quote, a backslash or a control
    // character; most items contain none of these. `high` collects the top
    // bits, so ASCII-only strings (most items) skip UTF-8 validation.
    uint64_t high = 0;
    while (pos_ + 8 <= n) {
      uint64_t v;
      std::memcpy(&v, data + pos_, 8);
      if (HasByte(v, '"') | HasByte(v, '\\') | HasLess(v, 0x20)) break;
      high |= v;
      pos_ += 8;
    }
    while (pos_ < n) {
      const unsigned char c = static_cast<unsigned char>(data[pos_]);
      if (c == '"') {
        const std::string_view raw = in_.substr(start, pos_ - start);
        if ((high & kHighs) != 0 && !IsValidUtf8(raw)) return Error("string is not valid UTF-8");
        ++pos_;
        *out = raw;
        return Status::Ok();
      }
      if (c == '\\') return EscapedString(start, out);
      if (c < 0x20) return Error("control character in string (escape it)");
      high |= c;
      ++pos_;
    }
    return Error("unterminated string");
  }

  // A JSON number. *is_integer is false when it has a fraction or exponent.
  Status Number(std::string_view* text, bool* is_integer) {
    const size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (!IsDigit(Peek())) return Error("expected a digit");
    if (Peek() == '0') {
      ++pos_;
      if (IsDigit(Peek())) return Error("numbers may not have leading zeros");
    } else {
      while (IsDigit(Peek())) ++pos_;
    }
    *is_integer = true;
    if (Peek() == '.') {
      *is_integer = false;
      ++pos_;
      if (!IsDigit(Peek())) return Error("expected a digit after '.'");
      while (IsDigit(Peek())) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      *is_integer = false;
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!IsDigit(Peek())) return Error("expected a digit in the exponent");
      while (IsDigit(Peek())) ++pos_;
    }
    *text = in_.substr(start, pos_ - start);
    return Status::Ok();
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
  Status Hex4(uint32_t* out) {
    if (pos_ + 4 > in_.size()) return Error("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int d = HexDigit(in_[pos_ + static_cast<size_t>(i)]);
      if (d < 0) return Error("invalid \\u escape");
      v = (v << 4) | static_cast<uint32_t>(d);
    }
    pos_ += 4;
    *out = v;
    return Status::Ok();
  }

  Status EscapedString(size_t start, std::string_view* out) {
    std::string s(in_.substr(start, pos_ - start));
    if (!IsValidUtf8(s)) return Error("string is not valid UTF-8");
    size_t raw_start = pos_;  // start of the current unescaped run
    const auto flush_raw = [&]() -> Status {
      const std::string_view raw = in_.substr(raw_start, pos_ - raw_start);
      if (!IsValidUtf8(raw)) return Error("string is not valid UTF-8");
      s.append(raw);
      return Status::Ok();
    };
    while (pos_ < in_.size()) {
      const unsigned char c = static_cast<unsigned char>(in_[pos_]);
      if (c == '"') {
        REDBLOOM_RETURN_IF_ERROR(flush_raw());
        ++pos_;
        unescaped_->push_back(std::move(s));
        *out = unescaped_->back();
        return Status::Ok();
      }
      if (c < 0x20) return Error("control character in string (escape it)");
      if (c != '\\') {
        ++pos_;
        continue;
      }
      REDBLOOM_RETURN_IF_ERROR(flush_raw());
      ++pos_;
      if (AtEnd()) return Error("unterminated string");
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
          REDBLOOM_RETURN_IF_ERROR(Hex4(&cp));
          if (cp >= 0xdc00 && cp <= 0xdfff) return Error("lone low surrogate in \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            // A high surrogate must be followed by an escaped low one; a lone
            // surrogate has no UTF-8 form.
            if (in_.substr(pos_, 2) != "\\u") return Error("lone high surrogate in \\u escape");
            pos_ += 2;
            uint32_t lo = 0;
            REDBLOOM_RETURN_IF_ERROR(Hex4(&lo));
            if (lo < 0xdc00 || lo > 0xdfff) return Error("lone high surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          AppendUtf8(cp, &s);
          break;
        }
        default:
          --pos_;
          return Error("invalid escape in string");
      }
      raw_start = pos_;
    }
    return Error("unterminated string");
  }

  std::string_view in_;
  std::deque<std::string>* unescaped_;
  size_t pos_ = 0;
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
  REDBLOOM_RETURN_IF_ERROR(r.Expect('{', "expected an object {\"items\":[...]}"));
  bool seen_items = false;
  r.SkipWhitespace();
  if (r.Peek() != '}') {
    while (true) {
      r.SkipWhitespace();
      if (r.Peek() != '"') return r.Error("expected a field name");
      std::string_view key;
      REDBLOOM_RETURN_IF_ERROR(r.String(&key));
      r.SkipWhitespace();
      REDBLOOM_RETURN_IF_ERROR(r.Expect(':', "expected ':' after a field name"));
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
            return Status::ResourceExhausted("more than " + std::to_string(limits.max_items) +
                                             " items in one request; split the batch");
          }
          const char c = r.Peek();
          std::string_view item;
          if (c == '"') {
            REDBLOOM_RETURN_IF_ERROR(r.String(&item));
          } else if (c == '-' || (c >= '0' && c <= '9')) {
            bool is_integer = false;
            REDBLOOM_RETURN_IF_ERROR(r.Number(&item, &is_integer));
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
            return Status::ResourceExhausted("item " + std::to_string(items_.size() + 1) + " is " +
                                             std::to_string(item.size()) + " bytes; the limit is " +
                                             std::to_string(limits.max_item_bytes));
          }
          items_.push_back(item);
          r.SkipWhitespace();
          if (r.Peek() == ',' && !r.AtEnd()) {
            r.Advance();
            continue;
          }
          REDBLOOM_RETURN_IF_ERROR(r.Expect(']', "expected ',' or ']' in the items array"));
          break;
        }
      }
      r.SkipWhitespace();
      if (r.Peek() == ',' && !r.AtEnd()) {
        r.Advance();
        continue;
      }
      REDBLOOM_RETURN_IF_ERROR(r.Expect('}', "expected ',' or '}' after a field"));
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
      const size_t len = Utf8SequenceLength(s, i);
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
