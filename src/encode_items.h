// The encodings that build bytes (int32, int64, utf8x2) on the hot paths:
// written into the caller's memory without building a Status or growing a
// std::string per item. EncodeItem (funnel.h) stays the one place that says
// why an item is refused; these only say whether. Internal.
//
// Why: a batched guava64 check of int64 items (5 to 10 digits) cost 33-35
// ns per item where the same text as utf8 cost 15, block 23-24 against 9
// (1e6 items, one process): per item EncodeItem's frame for a Status, eight
// push_backs into scratch, from_chars' overflow check per digit, and a hash
// of that one item where utf8 hashes a batch. With these: 20-21 and 13.7.
#ifndef REDBLOOM_SRC_ENCODE_ITEMS_H_
#define REDBLOOM_SRC_ENCODE_ITEMS_H_

#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <system_error>

#include "redbloom/funnel.h"

namespace redbloom::internal {

// Parses a decimal as Java's Integer.parseInt / Long.parseLong take it: an
// optional '-' or one '+' (not "+-1"), then ASCII digits only, no spaces.
// std::errc::invalid_argument or result_out_of_range when it is not one.
//
// Up to digits10 digits (9 for int32, 18 for int64) cannot overflow, and are
// summed here without from_chars' overflow check per digit; longer ones,
// and anything that is not sign-and-digits, go to from_chars. On such
// items: a batched int64 check 23-25 -> 21.5-23 ns (guava64), 16-17 ->
// 14.5-15 (block).
template <typename Int>
inline std::errc ParseJavaDecimal(std::string_view text, Int* out) {
  const char* b = text.data();
  const char* e = b + text.size();
  const bool negative = b != e && *b == '-';
  const char* digits = b != e && (*b == '-' || *b == '+') ? b + 1 : b;
  if (digits != e && e - digits <= std::numeric_limits<Int>::digits10) {
    uint64_t v = 0;
    for (const char* p = digits; p != e; ++p) {
      const unsigned d = static_cast<unsigned char>(*p) - unsigned{'0'};
      if (d > 9) return std::errc::invalid_argument;
      v = v * 10 + d;
    }
    *out = static_cast<Int>(negative ? 0 - v : v);
    return std::errc();
  }
  if (b != e && *b == '+' && (e - b == 1 || b[1] != '-')) ++b;
  auto [ptr, ec] = std::from_chars(b, e, *out, 10);
  if (ec != std::errc()) return ec;
  return text.empty() || ptr != e ? std::errc::invalid_argument : std::errc();
}

// Guava's putInt / putLong: the low `width` (4 or 8) bytes of v,
// little-endian. One store where the host is little-endian: the hash reads
// these bytes as one word right after, and eight byte stores cannot be
// forwarded to that load (a single int64 check spent 13 ns of 35 there).
inline void PutLittleEndian(uint64_t v, int width, char* out) {
  if constexpr (std::endian::native == std::endian::little) {
    if (width == 8) {
      std::memcpy(out, &v, 8);
    } else {
      const auto low = static_cast<uint32_t>(v);
      std::memcpy(out, &low, 4);
    }
  } else {
    for (int i = 0; i < width; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  }
}

// Whether `encoding` is one that builds the bytes it hashes.
inline bool EncodingBuildsBytes(Encoding encoding) {
  return encoding == Encoding::kInt32 || encoding == Encoding::kInt64 ||
         encoding == Encoding::kUtf8x2;
}

// How many bytes `item` becomes under an encoding that builds bytes.
inline size_t BuiltSize(Encoding encoding, std::string_view item) {
  switch (encoding) {
    case Encoding::kInt32:
      return 4;
    case Encoding::kInt64:
      return 8;
    default:
      return 2 * item.size();
  }
}

// Writes BuiltSize(encoding, item) bytes at `out`: a number's little-endian
// bytes (Guava's putInt / putLong), or utf8x2's text twice. False if the
// item is not a decimal in range; utf8x2's UTF-8 is *not* checked here (the
// caller checks it, or learns from the hash that the bytes were ASCII).
inline bool BuildItem(Encoding encoding, std::string_view item, char* out) {
  if (encoding == Encoding::kUtf8x2) {
    if (!item.empty()) {  // a default string_view's data() is null, which memcpy may not take
      std::memcpy(out, item.data(), item.size());
      std::memcpy(out + item.size(), item.data(), item.size());
    }
    return true;
  }
  uint64_t v = 0;
  int width = 8;
  if (encoding == Encoding::kInt32) {
    int32_t x = 0;
    if (ParseJavaDecimal(item, &x) != std::errc()) return false;
    v = static_cast<uint32_t>(x);
    width = 4;
  } else {
    int64_t x = 0;
    if (ParseJavaDecimal(item, &x) != std::errc()) return false;
    v = static_cast<uint64_t>(x);
  }
  PutLittleEndian(v, width, out);
  return true;
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_ENCODE_ITEMS_H_
