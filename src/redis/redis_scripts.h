// The Lua scripts of the Redis store. Internal; the key layout they maintain
// is documented in docs/format.md.
//
// Scripts are sent with EVAL, not EVALSHA: Redis caches a script by the SHA1
// of its text either way, EVAL costs under a microsecond more for these few
// hundred bytes, and it can never fail with NOSCRIPT after a restart or a
// SCRIPT FLUSH (which inside MULTI would let the add transaction's BITFIELD
// run without its guard).
//
// Every script that touches bits first checks the metadata hash against the
// six fields the client expects (format, strategy, encoding, bits, hashes,
// name), passed as ARGV[1..6]; a filter dropped or re-created with other
// parameters by another client is then an error, never a silent write.
#ifndef REDBLOOM_SRC_REDIS_REDIS_SCRIPTS_H_
#define REDBLOOM_SRC_REDIS_REDIS_SCRIPTS_H_

#include <string_view>

namespace redbloom::internal::scripts {

// Shared prologue: meta_state(meta_key) returns 'ok', 'gone' or 'changed'.
// pcall, because HMGET on a key of another type raises, and a guard that
// raised would leave its transaction's later commands unguarded.
#define REDBLOOM_LUA_META_STATE                                                       \
  "local function meta_state(key)\n"                                                  \
  "  local m = redis.pcall('HMGET', key, 'format', 'strategy', 'encoding', 'bits',\n" \
  "                        'hashes', 'name')\n"                                       \
  "  if type(m) ~= 'table' or m.err then return 'changed' end\n"                      \
  "  if not m[1] then return 'gone' end\n"                                            \
  "  for i = 1, 6 do if m[i] ~= ARGV[i] then return 'changed' end end\n"              \
  "  return 'ok'\n"                                                                   \
  "end\n"

// KEYS: meta, bitmap. ARGV: data_bytes, then field, value pairs.
// Returns {0} created; {1, HGETALL} metadata exists; {2, type} the bitmap key
// exists without metadata; {3, type} the meta key is not a hash.
inline constexpr std::string_view kCreate =
    "local mt = redis.call('TYPE', KEYS[1])['ok']\n"
    "if mt == 'hash' then return {1, redis.call('HGETALL', KEYS[1])} end\n"
    "if mt ~= 'none' then return {3, mt} end\n"
    "local bt = redis.call('TYPE', KEYS[2])['ok']\n"
    "if bt ~= 'none' then return {2, bt} end\n"
    // Size the bitmap before writing the metadata: if the allocation fails
    // (maxmemory), the script stops with nothing written (scripts do not roll
    // back). Writing its last byte makes Redis allocate the string once, at
    // its final size, instead of growing it by doubling as bits arrive.
    "redis.call('SETRANGE', KEYS[2], tonumber(ARGV[1]) - 1, '\\0')\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 2))\n"
    "return {0}\n";

// KEYS: meta, bitmap. ARGV: data_bytes, then field, value pairs.
// Returns {0} attached; {1, HGETALL} metadata exists; {2, type} the bitmap is
// not a string; {3, type} the meta key is not a hash; {4, length} the bitmap
// is longer than data_bytes (written with a larger m).
inline constexpr std::string_view kAttach =
    "local mt = redis.call('TYPE', KEYS[1])['ok']\n"
    "if mt == 'hash' then return {1, redis.call('HGETALL', KEYS[1])} end\n"
    "if mt ~= 'none' then return {3, mt} end\n"
    "local want = tonumber(ARGV[1])\n"
    "local bt = redis.call('TYPE', KEYS[2])['ok']\n"
    "if bt ~= 'none' and bt ~= 'string' then return {2, bt} end\n"
    "local len = redis.call('STRLEN', KEYS[2])\n"
    "if len > want then return {4, len} end\n"
    // Zero-extension only: bytes past the end of a string already read as 0
    // bits, so no bit changes; it just saves Redis growing the string later.
    "if len < want then redis.call('SETRANGE', KEYS[2], want - 1, '\\0') end\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 2))\n"
    "return {0}\n";

// The add transaction is
//   MULTI; EVAL kAddGuard; BITFIELD scratch SET u1 o 1 ...; EVAL kAddCommit; EXEC
// The guard moves the bitmap to the scratch key only if the metadata matches;
// BITFIELD then writes the scratch key, and the commit moves it back. If the
// metadata does not match, the bitmap stays where it is, BITFIELD writes a
// throwaway scratch key, and the commit deletes it: no bit of a dropped or
// re-created filter is touched. Running BITFIELD as a plain command, not from
// Lua, keeps its cost at ~2.3 us per item (k = 7) instead of ~4.9 us (see
// bench/redis_bench.cc); RENAME is O(1), so the guard costs a few us per
// batch, not per item.
//
// KEYS: meta, bitmap, scratch. ARGV: the six expected fields, count delta.
inline constexpr std::string_view kAddGuard = REDBLOOM_LUA_META_STATE
    // A scratch key can only survive a failed transaction; never reuse it.
    "redis.call('DEL', KEYS[3])\n"
    "local s = meta_state(KEYS[1])\n"
    "if s ~= 'ok' then\n"
    "  return redis.error_reply('REDBLOOM_' .. string.upper(s) .. ' filter metadata changed')\n"
    "end\n"
    "if ARGV[7] ~= '0' then redis.call('HINCRBY', KEYS[1], 'count', ARGV[7]) end\n"
    "if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('RENAME', KEYS[2], KEYS[3]) end\n"
    "return 1\n";

// KEYS: meta, bitmap, scratch. ARGV: the six expected fields.
// Returns 1 if the bits were committed, 0 if they were thrown away.
inline constexpr std::string_view kAddCommit = REDBLOOM_LUA_META_STATE
    // The guard ran in this same transaction and saw the same metadata; the
    // bitmap key is absent exactly when the guard moved it (or there was none).
    "if meta_state(KEYS[1]) == 'ok' and redis.call('EXISTS', KEYS[2]) == 0 then\n"
    "  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('RENAME', KEYS[3], KEYS[2]) end\n"
    "  return 1\n"
    "end\n"
    "redis.call('DEL', KEYS[3])\n"
    "return 0\n";

// KEYS: meta. ARGV: the six expected fields, count delta. The count update
// of an add's last batch, sent without waiting for the answer.
inline constexpr std::string_view kAddCount = REDBLOOM_LUA_META_STATE
    "if meta_state(KEYS[1]) ~= 'ok' then return 0 end\n"
    "redis.call('HINCRBY', KEYS[1], 'count', ARGV[7])\n"
    "return 1\n";

// KEYS: meta, bitmap. ARGV: the six expected fields, data_bytes.
inline constexpr std::string_view kClear = REDBLOOM_LUA_META_STATE
    "local s = meta_state(KEYS[1])\n"
    "if s ~= 'ok' then\n"
    "  return redis.error_reply('REDBLOOM_' .. string.upper(s) .. ' filter metadata changed')\n"
    "end\n"
    // UNLINK frees a large string in a background thread instead of blocking
    // the server (a 512 MB string takes ~100 ms to free).
    "redis.call('UNLINK', KEYS[2])\n"
    "redis.call('SETRANGE', KEYS[2], tonumber(ARGV[7]) - 1, '\\0')\n"
    "redis.call('HSET', KEYS[1], 'count', '0')\n"
    "return 1\n";

// KEYS: meta, bitmap. ARGV: name.
// Returns {1} dropped; {0} no metadata; {-1, other_name} the metadata belongs
// to another filter sharing the meta key ("x" and "{x}"); {3, type} the meta
// key is not a hash.
inline constexpr std::string_view kDrop =
    "local mt = redis.call('TYPE', KEYS[1])['ok']\n"
    "if mt == 'none' then return {0} end\n"
    "if mt ~= 'hash' then return {3, mt} end\n"
    "local n = redis.call('HGET', KEYS[1], 'name')\n"
    // Metadata without a name is corrupt; dropping it must still be possible.
    "if n and n ~= ARGV[1] then return {-1, n} end\n"
    "redis.call('UNLINK', KEYS[1], KEYS[2])\n"
    "return {1}\n";

#undef REDBLOOM_LUA_META_STATE

}  // namespace redbloom::internal::scripts

#endif  // REDBLOOM_SRC_REDIS_REDIS_SCRIPTS_H_
