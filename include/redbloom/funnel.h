// Funnels: how an item becomes the bytes that are hashed.
//
// The built-in encodings reproduce Guava funnels exactly, so a Java service and
// redbloom that agree on the encoding set the same bits:
//   utf8    Guava putString(s, UTF_8)                 (Funnels.stringFunnel(UTF_8))
//   utf8x2  putString(s, UTF_8).putString(s, UTF_8)    (the second blog post's funnel)
//   int32   putInt(v), 4 bytes little-endian           (Funnels.integerFunnel())
//   int64   putLong(v), 8 bytes little-endian          (Funnels.longFunnel())
//   bytes   putBytes(b), the raw bytes                 (Funnels.byteArrayFunnel())
//
// Items reach the CLI and the HTTP service as text; int32/int64 items are then
// decimal numbers. C++ callers with their own types write a funnel (any
// callable `void(const T&, ByteSink&)`) and hash it with HashObject()
// (strategy.h). A funnel only makes bytes: which hash runs over them is the
// strategy's business.
#ifndef REDBLOOM_FUNNEL_H_
#define REDBLOOM_FUNNEL_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "redbloom/status.h"

namespace redbloom {

enum class Encoding : uint8_t {
  kUtf8 = 0,
  kUtf8x2 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kBytes = 4,
};

// "utf8", "utf8x2", "int32", "int64", "bytes"; "unknown" for other values.
std::string_view EncodingName(Encoding e);
// Every encoding, in id order.
std::span<const Encoding> AllEncodings();
Result<Encoding> ParseEncoding(std::string_view name);

// Collects the bytes a funnel writes, with Guava's PrimitiveSink semantics.
class ByteSink {
 public:
  ByteSink& PutBytes(std::string_view b) {
    buf_.append(b);
    return *this;
  }
  ByteSink& PutInt32(int32_t v) { return PutLittleEndian(static_cast<uint32_t>(v), 4); }
  ByteSink& PutInt64(int64_t v) { return PutLittleEndian(static_cast<uint64_t>(v), 8); }
  // Guava putString(s, UTF_8): `utf8` must already be UTF-8.
  ByteSink& PutString(std::string_view utf8) { return PutBytes(utf8); }

  const std::string& bytes() const { return buf_; }
  void Clear() { buf_.clear(); }

 private:
  ByteSink& PutLittleEndian(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  std::string buf_;
};

// True if `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);
// The kInvalidArgument of an item that a utf8 or utf8x2 filter refuses.
Status InvalidUtf8Item();

// The bytes of one textual item under an encoding: the item itself (utf8,
// bytes), the item twice (utf8x2, built in *scratch), or the number's
// little-endian bytes (int32, int64, built in *scratch). *bytes points into
// `item` or *scratch. Fails with kInvalidArgument for text that is not valid
// UTF-8 (utf8, utf8x2) or not a decimal number in range (int32, int64): such
// an item could not have come from the Java side, and hashing it anyway would
// silently diverge from it.
Status EncodeItem(Encoding encoding, std::string_view item, std::string* scratch,
                  std::string_view* bytes);

}  // namespace redbloom

#endif  // REDBLOOM_FUNNEL_H_
