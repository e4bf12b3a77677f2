#include "redis/redis_keys.h"

#include <cstdint>
#include <vector>

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

uint16_t KeySlot(std::string_view key) {
  // Redis Cluster's hash tag: the bytes between the first '{' and the first
  // '}' after it, if there are any.
  if (const size_t open = key.find('{'); open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  // CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection.
  uint16_t crc = 0;
  for (unsigned char c : key) {
    crc ^= static_cast<uint16_t>(c << 8);
    for (int i = 0; i < 8; ++i) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return static_cast<uint16_t>(crc % kClusterSlots);
}

const std::string& SlotTag(uint16_t slot) {
  // All kClusterSlots tags at once, the first time one is asked for (~160,000 short
  // candidates, a few milliseconds).
  static const std::vector<std::string> tags = [] {
    std::vector<std::string> t(kClusterSlots);
    size_t found = 0;
    for (uint64_t n = 0; found < t.size(); ++n) {
      std::string candidate = "rb" + std::to_string(n);
      std::string& at = t[KeySlot(candidate)];
      if (at.empty()) {
        at = std::move(candidate);
        ++found;
      }
    }
    return t;
  }();
  return tags[slot % kClusterSlots];
}

namespace {

constexpr std::string_view kTemporaryPrefix = ".rebuild~";

bool HasHashTag(std::string_view name) {
  const size_t open = name.find('{');
  if (open == std::string_view::npos) return false;
  const size_t close = name.find('}', open + 1);
  return close != std::string_view::npos && close > open + 1;
}

// The prefix of a filter's derived keys (see the header), and whether its
// bitmap key is that prefix too (a temporary filter) rather than the name.
struct Prefix {
  std::string tag;
  bool bitmap_is_tag = false;
};

Prefix Tag(std::string_view name) {
  if (name.starts_with(kTemporaryPrefix)) {
    const std::string_view base = name.substr(kTemporaryPrefix.size());
    return {"{" + SlotTag(KeySlot(base)) + "}" + std::string(name), true};
  }
  if (HasHashTag(name)) return {std::string(name), false};
  if (name.find_first_of("{}") == std::string_view::npos) return {"{" + std::string(name) + "}"};
  return {"{" + SlotTag(KeySlot(name)) + "}" + std::string(name), false};
}

std::string Encode(std::string key, KeyMode mode) {
  return mode == KeyMode::kJdk ? JdkSerializedString(key) : key;
}

}  // namespace

FilterKeys KeysFor(std::string_view name, KeyMode mode) {
  const Prefix p = Tag(name);
  const std::string bitmap = p.bitmap_is_tag ? p.tag : std::string(name);
  return {Encode(bitmap, mode), Encode(p.tag + ":meta", mode), Encode(p.tag + "/add", mode),
          Encode(p.tag + "/parts", mode)};
}

std::string LegacyMetaKey(std::string_view name, KeyMode mode) {
  if (name.starts_with(kTemporaryPrefix) || HasHashTag(name) ||
      name.find_first_of("{}") == std::string_view::npos) {
    return "";
  }
  // Those builds' tag: the name itself if it has a '{', else "{NAME}" (so
  // "x}" kept "{x}}:meta").
  const std::string tag =
      name.find('{') != std::string_view::npos ? std::string(name) : "{" + std::string(name) + "}";
  return Encode(tag + ":meta", mode);
}

PartKeys PartKeysFor(std::string_view name, KeyMode mode, uint64_t part) {
  const std::string base = Tag(name).tag + "/part/" + std::to_string(part);
  return {Encode(base, mode), Encode(base + "/add", mode)};
}

std::string TempKeyFor(std::string_view name, KeyMode mode, std::string_view suffix) {
  return Encode(Tag(name).tag + "/tmp/" + std::string(suffix), mode);
}

namespace {

std::string ShardPrefix(std::string_view name, uint32_t shard, uint32_t shards) {
  const uint16_t base = KeySlot(KeysFor(name, KeyMode::kPlain).bitmap);
  const auto slot =
      static_cast<uint16_t>((base + uint64_t{shard} * kClusterSlots / shards) % kClusterSlots);
  return "{" + SlotTag(slot) + "}" + std::string(name) + "/shard/" + std::to_string(shard);
}

}  // namespace

ShardKeys ShardKeysFor(std::string_view name, KeyMode mode, uint32_t shard, uint32_t shards) {
  const std::string p = ShardPrefix(name, shard, shards);
  return {Encode(p, mode), Encode(p + "/add", mode), Encode(p + ":meta", mode)};
}

std::string ShardTempKeyFor(std::string_view name, KeyMode mode, uint32_t shard, uint32_t shards,
                            std::string_view suffix) {
  return Encode(ShardPrefix(name, shard, shards) + "/tmp/" + std::string(suffix), mode);
}

std::string CompanionKeyFor(std::string_view name, KeyMode mode, std::string_view suffix) {
  const Prefix p = Tag(name);
  if (p.bitmap_is_tag) return Encode(p.tag + ":" + std::string(suffix), mode);
  if (name.find('{') != std::string_view::npos) {
    return Encode(std::string(name) + ":" + std::string(suffix), mode);
  }
  return Encode("{" + std::string(name) + "}:" + std::string(suffix), mode);
}

std::string DisplayKey(std::string_view text, KeyMode mode) {
  if (mode == KeyMode::kJdk) return "jdk(" + std::string(text) + ")";
  return std::string(text);
}

}  // namespace redbloom::internal
