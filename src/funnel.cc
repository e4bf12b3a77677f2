#include "redbloom/funnel.h"

#include <charconv>
#include <cstring>

#include "util/utf8.h"

namespace redbloom {

std::string_view EncodingName(Encoding e) {
  switch (e) {
    case Encoding::kUtf8:
      return "utf8";
    case Encoding::kUtf8x2:
      return "utf8x2";
    case Encoding::kInt32:
      return "int32";
    case Encoding::kInt64:
      return "int64";
    case Encoding::kBytes:
      return "bytes";
  }
  return "unknown";
}

std::span<const Encoding> AllEncodings() {
  static constexpr Encoding kAll[] = {Encoding::kUtf8, Encoding::kUtf8x2, Encoding::kInt32,
                                      Encoding::kInt64, Encoding::kBytes};
  return kAll;
}

Result<Encoding> ParseEncoding(std::string_view name) {
  for (Encoding e : AllEncodings()) {
    if (name == EncodingName(e)) return e;
  }
  return Status::InvalidArgument("unknown encoding '" + std::string(name) +
                                 "' (expected utf8, utf8x2, int32, int64 or bytes)");
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  // ASCII eight bytes at a time: most items are ASCII ids, and the byte loop
  // below cost ~2 ns of an item's ~10 here.
  while (s.size() - i >= 8) {
    uint64_t chunk;
    std::memcpy(&chunk, s.data() + i, 8);
    if ((chunk & 0x8080808080808080ULL) != 0) break;
    i += 8;
  }
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = internal::Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

namespace {

template <typename Int>
Status ParseDecimal(std::string_view text, Int* out) {
  const char* b = text.data();
  const char* e = b + text.size();
  // Java's Integer.parseInt accepts one leading '+' (but not "+-1").
  if (b != e && *b == '+' && (e - b == 1 || b[1] != '-')) ++b;
  auto [ptr, ec] = std::from_chars(b, e, *out, 10);
  if (text.empty() || ec != std::errc() || ptr != e) {
    const char* what = sizeof(Int) == 4 ? "int32" : "int64";
    if (ec == std::errc::result_out_of_range) {
      return Status::InvalidArgument("item '" + std::string(text) + "' is out of range for " +
                                     what);
    }
    return Status::InvalidArgument("item '" + std::string(text) + "' is not a decimal " + what);
  }
  return Status::Ok();
}

// Guava's putInt/putLong: little-endian.
void PutLittleEndian(std::string* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

Status EncodeItem(Encoding encoding, std::string_view item, std::string* scratch,
                  std::string_view* bytes) {
  switch (encoding) {
    case Encoding::kUtf8:
      if (!IsValidUtf8(item)) return Status::InvalidArgument("item is not valid UTF-8");
      *bytes = item;
      return Status::Ok();
    case Encoding::kUtf8x2:
      if (!IsValidUtf8(item)) return Status::InvalidArgument("item is not valid UTF-8");
      scratch->assign(item);
      scratch->append(item);
      *bytes = *scratch;
      return Status::Ok();
    case Encoding::kInt32: {
      int32_t v = 0;
      REDBLOOM_RETURN_IF_ERROR(ParseDecimal(item, &v));
      scratch->clear();
      PutLittleEndian(scratch, static_cast<uint32_t>(v), 4);
      *bytes = *scratch;
      return Status::Ok();
    }
    case Encoding::kInt64: {
      int64_t v = 0;
      REDBLOOM_RETURN_IF_ERROR(ParseDecimal(item, &v));
      scratch->clear();
      PutLittleEndian(scratch, static_cast<uint64_t>(v), 8);
      *bytes = *scratch;
      return Status::Ok();
    }
    case Encoding::kBytes:
      *bytes = item;
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown encoding");
}

}  // namespace redbloom
