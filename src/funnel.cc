#include "redbloom/funnel.h"

#include <charconv>
#include <cstring>

#include "encode_items.h"
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

bool internal::Utf8ValidFrom(std::string_view s, size_t i) {
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Only a string with a non-ASCII byte goes through the sequence rules.
bool IsValidUtf8(std::string_view s) { return internal::IsUtf8(s); }

namespace {

template <typename Int>
Status ParseDecimal(std::string_view text, Int* out) {
  const std::errc ec = internal::ParseJavaDecimal(text, out);
  if (ec == std::errc()) return Status::Ok();
  const char* what = sizeof(Int) == 4 ? "int32" : "int64";
  if (ec == std::errc::result_out_of_range) {
    return Status::InvalidArgument("item '" + std::string(text) + "' is out of range for " + what);
  }
  return Status::InvalidArgument("item '" + std::string(text) + "' is not a decimal " + what);
}

}  // namespace

Status InvalidUtf8Item() { return Status::InvalidArgument("item is not valid UTF-8"); }

Status EncodeItem(Encoding encoding, std::string_view item, std::string* scratch,
                  std::string_view* bytes) {
  switch (encoding) {
    case Encoding::kUtf8:
      if (!IsValidUtf8(item)) return InvalidUtf8Item();
      *bytes = item;
      return Status::Ok();
    case Encoding::kUtf8x2:
      if (!IsValidUtf8(item)) return InvalidUtf8Item();
      scratch->assign(item);
      scratch->append(item);
      *bytes = *scratch;
      return Status::Ok();
    case Encoding::kInt32: {
      int32_t v = 0;
      REDBLOOM_RETURN_IF_ERROR(ParseDecimal(item, &v));
      scratch->resize(4);
      internal::PutLittleEndian(static_cast<uint32_t>(v), 4, scratch->data());
      *bytes = *scratch;
      return Status::Ok();
    }
    case Encoding::kInt64: {
      int64_t v = 0;
      REDBLOOM_RETURN_IF_ERROR(ParseDecimal(item, &v));
      scratch->resize(8);
      internal::PutLittleEndian(static_cast<uint64_t>(v), 8, scratch->data());
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
