// The items' decimal reader (encode_items.h: a sum of its own for short
// numbers, from_chars for the rest) against from_chars alone, with the
// rule Java's parseInt / parseLong follow: the same numbers accepted, the
// same values and bytes, for int32 and int64.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "encode_items.h"

namespace {

[[noreturn]] void Mismatch(const char* what, std::string_view text) {
  std::fprintf(stderr, "decimal_fuzz: %s\ntext: '%.*s'\n", what, static_cast<int>(text.size()),
               text.data());
  std::abort();
}

template <typename Int>
void Compare(std::string_view text) {
  Int want = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+' && (e - b == 1 || b[1] != '-')) ++b;
  const auto [ptr, ec] = std::from_chars(b, e, want, 10);
  const bool want_ok = !text.empty() && ec == std::errc() && ptr == e;
  Int got = 0;
  const std::errc got_ec = redbloom::internal::ParseJavaDecimal(text, &got);
  if ((got_ec == std::errc()) != want_ok) Mismatch("accepted differently", text);
  if (!want_ok) {
    const bool range = ec == std::errc::result_out_of_range;
    if ((got_ec == std::errc::result_out_of_range) != range) Mismatch("other error", text);
    return;
  }
  if (got != want) Mismatch("other value", text);
  const auto encoding = sizeof(Int) == 4 ? redbloom::Encoding::kInt32 : redbloom::Encoding::kInt64;
  char bytes[8] = {};
  if (!redbloom::internal::BuildItem(encoding, text, bytes)) Mismatch("not built", text);
  for (size_t i = 0; i < sizeof(Int); ++i) {
    const auto byte = static_cast<char>((static_cast<uint64_t>(want) >> (8 * i)) & 0xff);
    if (bytes[i] != byte) Mismatch("other bytes", text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Compare<int32_t>(text);
  Compare<int64_t>(text);
  return 0;
}
