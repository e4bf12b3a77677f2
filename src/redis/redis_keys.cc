#include "redis/redis_keys.h"

#include <cstdint>

namespace redbloom::internal {
namespace {

void PutBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// One UTF-16 code unit in modified UTF-8 (java.io.DataOutputStream.writeUTF).
void PutModifiedUtf8Unit(std::string* out, uint32_t unit) {
  if (unit >= 0x0001 && unit <= 0x007F) {
    out->push_back(static_cast<char>(unit));
  } else if (unit <= 0x07FF) {  // includes U+0000, which Java writes as C0 80
    out->push_back(static_cast<char>(0xC0 | (unit >> 6)));
    out->push_back(static_cast<char>(0x80 | (unit & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (unit >> 12)));
    out->push_back(static_cast<char>(0x80 | ((unit >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (unit & 0x3F)));
  }
}

std::string ModifiedUtf8(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size() + utf8.size() / 2);
  const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
  const auto* end = p + utf8.size();
  while (p < end) {
    uint32_t cp;
    int extra;
    if (*p < 0x80) {
      cp = *p;
      extra = 0;
    } else if ((*p & 0xE0) == 0xC0) {
      cp = *p & 0x1F;
      extra = 1;
    } else if ((*p & 0xF0) == 0xE0) {
      cp = *p & 0x0F;
      extra = 2;
    } else {
      cp = *p & 0x07;
      extra = 3;
    }
    ++p;
    for (int i = 0; i < extra && p < end; ++i, ++p) cp = (cp << 6) | (*p & 0x3F);
    if (cp > 0xFFFF) {
      // Java strings are UTF-16: a supplementary code point is two chars.
      const uint32_t v = cp - 0x10000;
      PutModifiedUtf8Unit(&out, 0xD800 | (v >> 10));
      PutModifiedUtf8Unit(&out, 0xDC00 | (v & 0x3FF));
    } else {
      PutModifiedUtf8Unit(&out, cp);
    }
  }
  return out;
}

}  // namespace

std::string JdkSerializedString(std::string_view utf8) {
  const std::string body = ModifiedUtf8(utf8);
  std::string out("\xAC\xED\x00\x05", 4);  // STREAM_MAGIC, STREAM_VERSION
  if (body.size() <= 0xFFFF) {
    out.push_back('\x74');  // TC_STRING
    PutBigEndian(&out, body.size(), 2);
  } else {
    out.push_back('\x7C');  // TC_LONGSTRING
    PutBigEndian(&out, body.size(), 8);
  }
  out += body;
  return out;
}

namespace {

std::string Tag(std::string_view name) {
  return name.find('{') != std::string_view::npos ? std::string(name)
                                                  : "{" + std::string(name) + "}";
}

std::string Encode(std::string key, KeyMode mode) {
  return mode == KeyMode::kJdk ? JdkSerializedString(key) : key;
}

}  // namespace

FilterKeys KeysFor(std::string_view name, KeyMode mode) {
  const std::string tag = Tag(name);
  return {Encode(std::string(name), mode), Encode(tag + ":meta", mode), Encode(tag + "/add", mode),
          Encode(tag + "/parts", mode)};
}

PartKeys PartKeysFor(std::string_view name, KeyMode mode, uint64_t part) {
  const std::string base = Tag(name) + "/part/" + std::to_string(part);
  return {Encode(base, mode), Encode(base + "/add", mode)};
}

std::string TempKeyFor(std::string_view name, KeyMode mode, std::string_view suffix) {
  return Encode(Tag(name) + "/tmp/" + std::string(suffix), mode);
}

std::string DisplayKey(std::string_view text, KeyMode mode) {
  if (mode == KeyMode::kJdk) return "jdk(" + std::string(text) + ")";
  return std::string(text);
}

}  // namespace redbloom::internal
