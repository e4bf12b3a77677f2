// UTF-8 well-formedness, the one implementation behind IsValidUtf8 and the
// inline IsUtf8 (item and name checks) and the HTTP service's JSON reading
// and writing.
#ifndef REDBLOOM_UTIL_UTF8_H_
#define REDBLOOM_UTIL_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
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

// The high bits of every byte of `s`, OR'ed: 0 exactly when `s` is ASCII
// (and so valid UTF-8). A word at a time, the last word overlapping the one
// before, two 4-byte loads for 4 to 7 bytes: most items are short ASCII ids
// ("ORD-1234567"), and a byte loop after whole words cost 22 instructions
// for a 10-byte id, the word loop 12. 8 to 16 bytes take their two words
// without the loop, which GCC had vectorized with its set-up: 8 instructions
// fewer per single check of an 11-byte id (callgrind). Inline: batch hashes
// (Xxh3_128Many) OR it over every item they read.
inline uint64_t NonAsciiBits(std::string_view s) {
  const auto load = [&s](size_t at, auto word) {
    std::memcpy(&word, s.data() + at, sizeof(word));
    return static_cast<uint64_t>(word);
  };
  const size_t n = s.size();
  if (n >= 8) {
    uint64_t bits = load(n - 8, uint64_t{});
    if (n <= 16) return (bits | load(0, uint64_t{})) & 0x8080808080808080ULL;
    for (size_t i = 0; i + 8 < n; i += 8) bits |= load(i, uint64_t{});
    return bits & 0x8080808080808080ULL;
  }
  if (n >= 4) return (load(0, uint32_t{}) | load(n - 4, uint32_t{})) & 0x80808080U;
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) bits |= static_cast<unsigned char>(s[i]);
  return bits & 0x80U;
}

// Whether s[i..] is well-formed, byte by byte past its ASCII (funnel.cc).
bool Utf8ValidFrom(std::string_view s, size_t i);

// IsValidUtf8 (funnel.h), inline up to the ASCII test: the library's hot
// paths call this, so that an ASCII item (most ids) makes no call for it
// (single block adds at 1e6, -O2: 15.7-16.3 -> 15.2-15.4 ns).
inline bool IsUtf8(std::string_view s) { return NonAsciiBits(s) == 0 || Utf8ValidFrom(s, 0); }

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_UTF8_H_
