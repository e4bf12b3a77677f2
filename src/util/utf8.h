// UTF-8 well-formedness, the one implementation behind IsValidUtf8 (item and
// name checks) and the HTTP service's JSON reading and writing.
#ifndef REDBLOOM_UTIL_UTF8_H_
#define REDBLOOM_UTIL_UTF8_H_

#include <cstddef>
#include <string_view>

namespace redbloom::internal {

// Length (1 to 4) of the UTF-8 sequence starting at s[i], or 0 if it is not
// well-formed: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
// above U+10FFFF (Unicode 15, table 3-7). Requires i < s.size(). Inline: it
// runs for every non-ASCII byte of every item a utf8 filter hashes.
inline size_t Utf8SequenceLength(std::string_view s, size_t i) {
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

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_UTF8_H_
