// How a filter name becomes Redis key bytes. Internal; documented in
// docs/format.md ("Keys").
//
// For a filter NAME, with a prefix TAG chosen so that every key below lands
// in the Redis Cluster slot of the bitmap key (a cluster hashes only the part
// between the first '{' and the next '}', when that part is not empty):
//   bitmap   NAME              the bits, SETBIT order (the Java service's key)
//   meta     TAG:meta          hash of the filter's parameters and item count
//   scratch  TAG/add           exists only inside an add transaction (or after
//                              one whose commit failed: the next add restores it)
//   parts    TAG/parts         hash: part number -> item count, for scaling
//                              layers and window slices
//   part P   TAG/part/P        the bits of part P (layer or time slice)
//            TAG/part/P/add    its add transaction's scratch key
//   upload   TAG/tmp/RANDOM    a bulk load's bits before they are ORed in
// TAG is "{NAME}" for a name without braces (the slot of "NAME" is that of
// its tag "NAME"), NAME itself for a name that has a hash tag ("{user1}x":
// every key starts with the same tag), and "{T}NAME" otherwise, where T is
// SlotTag(KeySlot(NAME)): a name like "a{b" or "x}" is hashed whole, and T
// is a short tag of that same slot. A rebuild's temporary filter (see
// TemporaryName) is "{T}NAME" for the slot of the name it replaces, bitmap
// included, so the swap is one script in one slot. Scripts and MULTI over a
// filter's keys therefore work on a cluster. No filter name contains '/' or
// ends in ":meta" (ValidateFilterName), so no filter's keys collide with
// another's meta or scratch key.
//
// KeyMode::kJdk applies Java serialization to every key name: the bytes that
// Spring's default RedisTemplate (JdkSerializationRedisSerializer, i.e.
// ObjectOutputStream.writeObject(String)) sends for a String key. That is how
// redbloom reaches bitmaps written through RedisTemplate rather than
// StringRedisTemplate.
#ifndef REDBLOOM_SRC_REDIS_REDIS_KEYS_H_
#define REDBLOOM_SRC_REDIS_REDIS_KEYS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace redbloom::internal {

enum class KeyMode {
  kPlain,  // key bytes are the name's UTF-8 bytes (StringRedisTemplate, redis-cli)
  kJdk,    // key bytes are the Java serialization of the name as a String
};

// The bytes of `new ObjectOutputStream(out).writeObject(s)` for the Java
// String whose UTF-8 encoding is `utf8` (which must be valid UTF-8):
//   AC ED 00 05          stream magic and version
//   74 LEN16 MUTF8       TC_STRING, u16 big-endian byte length, modified UTF-8
// or, when the modified UTF-8 is longer than 65535 bytes,
//   7C LEN64 MUTF8       TC_LONGSTRING with a u64 big-endian length.
// Modified UTF-8 (java.io.DataOutput) differs from UTF-8 in two ways: U+0000
// is C0 80, and a code point above U+FFFF is its UTF-16 surrogate pair, each
// half encoded as three bytes (six in all, instead of UTF-8's four).
std::string JdkSerializedString(std::string_view utf8);

// Redis Cluster's hash slots: 0 .. kClusterSlots - 1.
inline constexpr int kClusterSlots = 16384;

// The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag, or of the
// whole key without one, mod kClusterSlots.
uint16_t KeySlot(std::string_view key);
// A short string without braces whose slot is `slot`: the first of "rb0",
// "rb1", "rb2", ... that hashes there. Part of the key layout, never changed.
const std::string& SlotTag(uint16_t slot);

struct FilterKeys {
  std::string bitmap;
  std::string meta;
  std::string scratch;
  std::string parts;
};

// `name` must have passed ValidateFilterName.
FilterKeys KeysFor(std::string_view name, KeyMode mode);

// Where builds before 2026-12-01 kept the metadata of a name with a brace but
// no hash tag ("NAME:meta", now "{rbN}NAME:meta"), to name that layout in an
// error; empty for a name whose keys did not move.
std::string LegacyMetaKey(std::string_view name, KeyMode mode);

struct PartKeys {
  std::string bitmap;
  std::string scratch;
};
PartKeys PartKeysFor(std::string_view name, KeyMode mode, uint64_t part);

// TAG/tmp/SUFFIX: a bulk load's upload, ORed into the bitmap, then deleted.
std::string TempKeyFor(std::string_view name, KeyMode mode, std::string_view suffix);

// Shard S (1 <= S < shards) of a sharded filter: its own bitmap, scratch key
// and metadata copy, all in slot (slot(NAME) + S * 16384 / shards) mod 16384,
// so the shards spread evenly over the slot space and so over a cluster's
// masters. With P = "{" + SlotTag(that slot) + "}" + NAME + "/shard/" + S:
//   bitmap P, scratch P/add, meta P:meta.
// Shard 0 is the filter's own keys (KeysFor).
struct ShardKeys {
  std::string bitmap;
  std::string scratch;
  std::string meta;
};
ShardKeys ShardKeysFor(std::string_view name, KeyMode mode, uint32_t shard, uint32_t shards);
// P/tmp/SUFFIX: a bulk load's upload into shard S, in the shard's slot.
std::string ShardTempKeyFor(std::string_view name, KeyMode mode, uint32_t shard, uint32_t shards,
                            std::string_view suffix);

// The key of a hash that a strategy's Java side keeps beside the bitmap
// (strategy_def.h, CompanionHash): Redisson's suffixName, NAME:SUFFIX if NAME
// contains '{', else {NAME}:SUFFIX, whatever TAG is. A rebuild's temporary
// filter, which no Java client opens, uses TAG:SUFFIX, in the slot of the
// filter it replaces. Names like "a{b" put Redisson's key in another slot
// than the bitmap (Redisson hashes the whole key); callers check KeySlot.
std::string CompanionKeyFor(std::string_view name, KeyMode mode, std::string_view suffix);

// A printable form of key bytes for messages: the name itself in plain mode,
// "jdk(NAME)" for a Java-serialized key.
std::string DisplayKey(std::string_view name_or_key_text, KeyMode mode);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_KEYS_H_
