// The Lua scripts of the Redis store. Internal; the key layout they maintain
// is documented in docs/format.md.
//
// Scripts are sent with EVAL (BeginEval, redis_pipeline.h says why).
//
// Every script that touches cells first checks the metadata hash against the
// seven fields the client expects (format, kind, strategy, encoding, bits,
// hashes, name), passed as ARGV[1..7], and the filter's incarnation, which
// ARGV[7] carries after the name ("NAME TOKEN", redis_meta.h): a filter
// dropped or re-created by another client is then an error, never a silent
// write.
// Numbers travel as decimal strings; "0" means "none" for expiry times.
//
// Every script that reads or writes a part's cells also checks that the
// part's key holds exactly the bytes its size needs (create sizes every
// bitmap up front): a key that was deleted or evicted, or truncated, is the
// error REDBLOOM_VANISHED (kDataLoss), never an empty filter that answers
// "absent" for everything added before.
#ifndef REDBLOOM_SRC_REDIS_REDIS_SCRIPTS_H_
#define REDBLOOM_SRC_REDIS_REDIS_SCRIPTS_H_

#include <string_view>

namespace redbloom::internal::scripts {

// no_room(bytes): {used, max} when `bytes` more would take the server past
// its maxmemory, else nil. Redis checks maxmemory only before a command, so
// a server below its limit would allocate a bitmap of any size and then
// refuse every write (noeviction) or evict keys, other filters' bits among
// them (false negatives): the scripts that allocate ask first.
// past(at): the server's TIME in ms when the expiry `at` (ms since the epoch,
// by the client's clock; '0' none) is not after it, else nil. PEXPIREAT of a
// past time deletes the key at once, so a client whose clock is behind the
// server's would make keys that vanish as they are made. A user whose ACL
// does not allow TIME (rules written before it was used) skips the check.
// TIME is read once per script: read again, a later call could find the
// filter's expiry reached where an earlier one had not, and a filter that
// simply expired was reported as this client's clock behind (an audit).
#define REDBLOOM_LUA_ROOM                                                      \
  "local function no_room(bytes)\n"                                            \
  "  local info = redis.call('INFO', 'memory')\n"                              \
  "  local max = tonumber(string.match(info, 'maxmemory:(%d+)')) or 0\n"       \
  "  local used = tonumber(string.match(info, 'used_memory:(%d+)')) or 0\n"    \
  "  if max > 0 and used + bytes > max then return {used, max} end\n"          \
  "  return nil\n"                                                             \
  "end\n"                                                                      \
  "local past_now = nil\n"                                                     \
  "local function past(at)\n"                                                  \
  "  if at == '0' then return nil end\n"                                       \
  "  if not past_now then\n"                                                   \
  "    local t = redis.pcall('TIME')\n"                                        \
  "    if t.err then return nil end\n"                                         \
  "    past_now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
  "  end\n"                                                                    \
  "  if tonumber(at) <= past_now then return past_now end\n"                   \
  "  return nil\n"                                                             \
  "end\n"

// need(...): nil when the caller may run every command named (false
// arguments are skipped; {'info', 'memory'} asks for a subcommand, which an
// ACL may allow alone), else the error naming the first it may not.
// Scripts do not roll back, so a script that writes more than once asks
// before its first write: a create denied PEXPIREAT after its HSET left a
// filter that never expired, a window slice denied HSETNX after its
// SETRANGE an unlisted slice that was data_loss for every client until it
// expired. A command renamed away (rename-command) is refused the same way.
// Redis before 7.0 has no redis.acl_check_cmd: the check is skipped there.
// may(c): known, allowed for one command (a table: a subcommand); both true
// where Redis cannot tell (before 7.0).
#define REDBLOOM_LUA_NEED                                                                    \
  "local function may(c)\n"                                                                  \
  "  if not redis.acl_check_cmd then return true, true end\n"                                \
  "  if type(c) == 'table' then return pcall(redis.acl_check_cmd, unpack(c)) end\n"          \
  "  return pcall(redis.acl_check_cmd, c)\n"                                                 \
  "end\n"                                                                                    \
  "local function need(...)\n"                                                               \
  "  if not redis.acl_check_cmd then return nil end\n"                                       \
  "  for i = 1, select('#', ...) do\n"                                                       \
  "    local c = select(i, ...)\n"                                                           \
  "    local known, allowed = true, true\n"                                                  \
  "    if c then known, allowed = may(c) end\n"                                              \
  "    if type(c) == 'table' then c = table.concat(c, '|') end\n"                            \
  "    local why = ', which redbloom needs here (nothing was written)'\n"                    \
  "    if not known then\n"                                                                  \
  "      return redis.error_reply('ERR unknown command \\'' .. c .. '\\'' .. why)\n"         \
  "    end\n"                                                                                \
  "    if not allowed then\n"                                                                \
  "      return redis.error_reply('NOPERM this user has no permissions to run the \\'' ..\n" \
  "                               c .. '\\' command' .. why)\n"                              \
  "    end\n"                                                                                \
  "  end\n"                                                                                  \
  "  return nil\n"                                                                           \
  "end\n"

// The end of fail()'s reply, whatever the state (kMetadataChanged below).
#define REDBLOOM_LUA_METADATA_CHANGED "filter metadata changed"

// Shared prologue. meta_state(key, companion) returns 'ok', 'gone',
// 'changed' or 'companion'. With a companion key (a filter whose strategy's
// Java side keeps a hash beside the bitmap: Redisson's {NAME}:config, passed
// as the KEYS entry after the script's own), that hash's size and
// hashIterations must equal the expected bits and hashes (ARGV[5], ARGV[6])
// too, as Redisson's own scripts compare them; a Redisson client that deleted
// the filter, or re-created it with other parameters, makes it 'companion'
// (REDBLOOM_COMPANION, kConflict). Without one, `companion` is nil (KEYS has
// no such entry). pcall,
// because HMGET on a key of another type raises, and a guard that raised
// would leave the rest of its transaction unguarded. fail(state) is the
// error reply the client maps to kNotFound / kConflict.
#define REDBLOOM_LUA_PROLOGUE                                                                     \
  "local function meta_state(key, companion)\n"                                                   \
  "  local m = redis.pcall('HMGET', key, 'format', 'kind', 'strategy', 'encoding',\n"             \
  "                        'bits', 'hashes', 'name', 'incarnation')\n"                            \
  "  if m.err and not string.find(m.err, 'WRONGTYPE', 1, true) then return m end\n"               \
  "  if m.err then return 'changed' end\n"                                                        \
  "  if not m[1] then return 'gone' end\n"                                                        \
  "  for i = 1, 6 do if m[i] ~= ARGV[i] then return 'changed' end end\n"                          \
  "  local name, inc = ARGV[7], nil\n"                                                            \
  "  local sp = string.find(name, ' ', 1, true)\n"                                                \
  "  if sp then inc = string.sub(name, sp + 1) name = string.sub(name, 1, sp - 1) end\n"          \
  "  if m[7] ~= name or (inc and (m[8] or '') ~= inc) then return 'changed' end\n"                \
  "  if companion then\n"                                                                         \
  "    local c = redis.pcall('HMGET', companion, 'size', 'hashIterations')\n"                     \
  "    if type(c) ~= 'table' or c.err or c[1] ~= ARGV[5] or c[2] ~= ARGV[6] then\n"               \
  "      return 'companion'\n"                                                                    \
  "    end\n"                                                                                     \
  "  end\n"                                                                                       \
  "  return 'ok'\n"                                                                               \
  "end\n"                                                                                         \
  "local function fail(s)\n"                                                                      \
  "  if type(s) == 'table' then return s end\n"                                                   \
  "  return redis.error_reply('REDBLOOM_' .. string.upper(s) .. ' " REDBLOOM_LUA_METADATA_CHANGED \
  "')\n"                                                                                          \
  "end\n"                                                                                         \
  "local function no_part(hash, field)\n"                                                         \
  "  if redis.call('HEXISTS', hash, field) == 1 then return nil end\n"                            \
  "  return redis.error_reply('REDBLOOM_NOPART part does not exist')\n"                           \
  "end\n"                                                                                         \
  "local function restore(key, scratch, want)\n"                                                  \
  "  if redis.call('EXISTS', key) == 0 and redis.pcall('STRLEN', scratch) == tonumber(want) "     \
  "then\n"                                                                                        \
  "    redis.call('RENAME', scratch, key)\n"                                                      \
  "  end\n"                                                                                       \
  "end\n"                                                                                         \
  "local function length_error(key, want)\n"                                                      \
  "  local len = redis.pcall('STRLEN', key)\n"                                                    \
  "  if type(len) == 'table' then return len end\n"                                               \
  "  if len ~= tonumber(want) then\n"                                                             \
  "    return redis.error_reply('REDBLOOM_VANISHED ' .. len)\n"                                   \
  "  end\n"                                                                                       \
  "  return nil\n"                                                                                \
  "end\n"

// The end of fail()'s reply, whatever the state: a script's refusal for its
// filter's metadata, told from other errors.
inline constexpr std::string_view kMetadataChanged = REDBLOOM_LUA_METADATA_CHANGED;

// KEYS: meta, bitmap, parts list. ARGV: main_bytes, expires_at_ms,
// room_bytes, then field, value pairs. A main_bytes of 0 is a filter whose
// parts all come later (a window filter's slices): no bitmap is made.
// room_bytes must fit under maxmemory: the bitmap, a window's first slice, or
// a sharded filter's shards that go to this server. Returns {0} created; {1, HGETALL} metadata
// exists; {2, type} the bitmap key exists without metadata; {3, type} the meta key is not a hash;
// {5, used, maxmemory} the bitmap does not fit under the server's maxmemory; {6, now} the expiry is
// already past by the server's clock (past(), below); {6} the same, found by the keys expiring as
// they were made (no TIME allowed); {7, 1} the parts list of an earlier scaling or window filter of
// the name is there without its metadata (evicted or deleted): a new filter would take its layers
// or slices for its own.
inline constexpr std::string_view kCreate = REDBLOOM_LUA_ROOM REDBLOOM_LUA_NEED
    "local mt = redis.call('TYPE', KEYS[1])['ok']\n"
    "if mt == 'hash' then return {1, redis.call('HGETALL', KEYS[1])} end\n"
    "if mt ~= 'none' then return {3, mt} end\n"
    "if redis.call('EXISTS', KEYS[3]) == 1 then return {7, 1} end\n"
    "local bt = redis.call('TYPE', KEYS[2])['ok']\n"
    "if bt ~= 'none' then return {2, bt} end\n"
    "local late = past(ARGV[2])\n"
    "if late then return {6, late} end\n"
    "local bytes = tonumber(ARGV[1])\n"
    "local denied = need({'info', 'memory'}, bytes > 0 and 'setrange', 'hset',\n"
    "                    ARGV[2] ~= '0' and 'pexpireat')\n"
    "if denied then return denied end\n"
    "local full = no_room(tonumber(ARGV[3]))\n"
    "if full then return {5, full[1], full[2]} end\n"
    // Size the bitmap before writing the metadata: if the allocation fails
    // (OOM), the script stops with nothing written (scripts do not roll
    // back). Writing its last byte makes Redis allocate the string once, at
    // its final size, instead of growing it by doubling as bits arrive. A
    // window filter has no main bitmap (main_bytes 0).
    "if bytes > 0 then redis.call('SETRANGE', KEYS[2], bytes - 1, '\\0') end\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 4))\n"
    "if ARGV[2] ~= '0' then\n"
    "  redis.call('PEXPIREAT', KEYS[1], ARGV[2])\n"
    "  if bytes > 0 then redis.call('PEXPIREAT', KEYS[2], ARGV[2]) end\n"
    // The keys went as they were made: an expiry already past by a clock
    // past() could not read (a user without TIME). Said, not "created".
    "  if redis.call('EXISTS', KEYS[1]) == 0 then return {6} end\n"
    "end\n"
    "return {0}\n";

// A sharded filter's shard S > 0 (see ShardKeysFor): replaces whatever the
// shard's keys hold (a shard left by an interrupted create or drop) with a
// sized, empty bitmap and the shard's metadata copy. Run by the creator that
// won the filter's metadata, or by a create that finishes one that stopped
// part-way, before the shards are marked ready. A shard already placed for
// this filter (its metadata's `name` is the one given, token included) is
// left alone, so that two creates finishing the same filter never empty a
// shard the other has already made ready for adds.
// A shard that does not fit under maxmemory is refused, as kCreate refuses a
// filter, before it is allocated: {5, used, max}.
// KEYS: shard meta, shard bitmap. ARGV: bytes, expires_at_ms, field, value...
inline constexpr std::string_view kCreateShard = REDBLOOM_LUA_ROOM REDBLOOM_LUA_NEED
    "if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('EXISTS', KEYS[2]) == 1 then\n"
    "  local have = redis.call('HGET', KEYS[1], 'name')\n"
    "  for i = 3, #ARGV - 1, 2 do\n"
    "    if ARGV[i] == 'name' and ARGV[i + 1] == have then return 1 end\n"
    "  end\n"
    "end\n"
    "local denied = need('unlink', {'info', 'memory'}, 'setrange', 'hset',\n"
    "                    ARGV[2] ~= '0' and 'pexpireat')\n"
    "if denied then return denied end\n"
    "redis.call('UNLINK', KEYS[1], KEYS[2])\n"
    "local full = no_room(tonumber(ARGV[1]))\n"
    "if full then return {5, full[1], full[2]} end\n"
    "redis.call('SETRANGE', KEYS[2], tonumber(ARGV[1]) - 1, '\\0')\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 3))\n"
    "if ARGV[2] ~= '0' then\n"
    "  redis.call('PEXPIREAT', KEYS[1], ARGV[2])\n"
    "  redis.call('PEXPIREAT', KEYS[2], ARGV[2])\n"
    "end\n"
    "return 1\n";

// Drops one shard of a dropped sharded filter, if it is still that filter's:
// a create of the same name that ran between the drop's metadata step and
// this one has placed shards of its own (another token), which stay. A shard
// without metadata goes (nothing can read it). KEYS: shard meta, bitmap,
// scratch. ARGV: the shard's identity (its metadata's name field). Returns 1
// if dropped, 0 if it belongs to another filter.
inline constexpr std::string_view kDropShard =
    "if redis.call('TYPE', KEYS[1])['ok'] == 'hash' then\n"
    // A shard hash without a name is corrupt: it goes.
    "  local n = redis.call('HGET', KEYS[1], 'name')\n"
    "  if n and n ~= ARGV[1] then return 0 end\n"
    "end\n"
    "redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3])\n"
    "return 1\n";

// Takes back a sharded filter whose create ran out of room placing its
// shards: only while the metadata is still that create's (its token) and not
// ready, so never a filter another create finished or made since. KEYS:
// meta, bitmap. ARGV: shard token. Returns 1 if it was taken back.
inline constexpr std::string_view kDropUnready =
    "if redis.call('HGET', KEYS[1], 'shard_token') ~= ARGV[1] or\n"
    "   redis.call('HGET', KEYS[1], 'shards_ready') ~= '0' then return 0 end\n"
    "redis.call('UNLINK', KEYS[1], KEYS[2])\n"
    "return 1\n";

// Marks a sharded filter's shards as placed, if the metadata still belongs
// to the create that placed them. KEYS: meta. ARGV: shard token. Returns 1,
// 2 if another create of the filter marked them first (of creates racing,
// one made the filter), or 0 if the filter was dropped or re-created
// meanwhile.
inline constexpr std::string_view kShardsReady =
    "if redis.call('HGET', KEYS[1], 'shard_token') ~= ARGV[1] then return 0 end\n"
    "if redis.call('HGET', KEYS[1], 'shards_ready') == '1' then return 2 end\n"
    "redis.call('HSET', KEYS[1], 'shards_ready', '1')\n"
    "return 1\n";

// KEYS: meta, bitmap, parts list. ARGV: data_bytes, expires_at_ms, then
// field, value pairs. Returns {0} attached; {1, HGETALL} metadata exists;
// {2, type} the bitmap is not a string; {3, type} the meta key is not a hash;
// {4, length} the bitmap is longer than data_bytes (written with a larger
// m); {6, now} the expiry is already past by the server's clock: its
// PEXPIREAT would delete the bitmap being adopted, the other program's bits
// with it; {6} the same, found by the new metadata expiring as it was made
// (no TIME allowed), before the bitmap is touched; {7, 1} as kCreate's: the
// bitmap is a scaling filter's first layer, whose other layers, unread by a
// plain filter, hold most of its items.
inline constexpr std::string_view kAttach = REDBLOOM_LUA_ROOM REDBLOOM_LUA_NEED
    "local mt = redis.call('TYPE', KEYS[1])['ok']\n"
    "if mt == 'hash' then return {1, redis.call('HGETALL', KEYS[1])} end\n"
    "if mt ~= 'none' then return {3, mt} end\n"
    "local want = tonumber(ARGV[1])\n"
    "local bt = redis.call('TYPE', KEYS[2])['ok']\n"
    "if bt ~= 'none' and bt ~= 'string' then return {2, bt} end\n"
    "if redis.call('EXISTS', KEYS[3]) == 1 then return {7, 1} end\n"
    "local len = redis.call('STRLEN', KEYS[2])\n"
    "if len > want then return {4, len} end\n"
    "local late = past(ARGV[2])\n"
    "if late then return {6, late} end\n"
    // Zero-extension only: bytes past the end of a string already read as 0
    // bits, so no bit changes; it just saves Redis growing the string later.
    "local denied = need(len < want and 'setrange', 'hset', ARGV[2] ~= '0' and 'pexpireat')\n"
    "if denied then return denied end\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 3))\n"
    "if ARGV[2] ~= '0' then\n"
    "  redis.call('PEXPIREAT', KEYS[1], ARGV[2])\n"
    // The metadata went as it was made (an expiry already past by a clock
    // past() could not read): the adopted bitmap is left as it was.
    "  if redis.call('EXISTS', KEYS[1]) == 0 then return {6} end\n"
    "end\n"
    "if len < want then redis.call('SETRANGE', KEYS[2], want - 1, '\\0') end\n"
    "if ARGV[2] ~= '0' then redis.call('PEXPIREAT', KEYS[2], ARGV[2]) end\n"
    "return {0}\n";

// The add transaction is
//   MULTI; EVAL kAddGuard; BITFIELD scratch SET u1 o 1 ...; EVAL kAddCommit; EXEC
// (counting filters: BITFIELD scratch OVERFLOW SAT INCRBY u4 #o 1 ...).
// The guard moves the bitmap to the scratch key only if the metadata matches,
// the bitmap has its size and (for a scaling layer) the items fit; BITFIELD
// then writes the scratch key, and the commit moves it back. Otherwise the
// guard makes the scratch key a list, BITFIELD fails on it without writing,
// and the commit deletes it: no cell of a dropped, re-created, damaged or
// full part is touched. Running BITFIELD as a plain command, not from Lua,
// keeps its cost at ~2.3 us per item (k = 7) instead of ~4.9 us (see
// bench/redis_bench.cc); RENAME is O(1), so guard and commit cost ~15 us per
// transaction, not per item. RENAME keeps the key's TTL.
//
// KEYS: meta, bitmap, scratch, count hash. ARGV: the seven expected fields,
// count delta, count field, the bitmap's bytes, items, capacity (0: none).
// With a capacity the count grows by `items` here, before the bits are
// known (a reservation), or the guard answers REDBLOOM_FULL <room>.
// Returns the room left after the add (capacity 0: 0).
inline constexpr std::string_view kAddGuard = REDBLOOM_LUA_PROLOGUE REDBLOOM_LUA_NEED
    "local s = meta_state(KEYS[1], KEYS[5])\n"
    // A scratch key can only survive a failed transaction; never reuse it.
    // But one whose commit failed (a script error: a permission revoked, a
    // script killed) holds the bitmap itself, with its adds: it goes back.
    "if s == 'ok' then restore(KEYS[2], KEYS[3], ARGV[10]) end\n"
    "redis.call('DEL', KEYS[3])\n"
    "local function refuse(reply)\n"
    "  redis.call('RPUSH', KEYS[3], 'refused')\n"
    "  return reply\n"
    "end\n"
    "if s ~= 'ok' then return refuse(fail(s)) end\n"
    // The guard's commands and the commit's (BITFIELD between them is
    // checked as it is queued: its EXECABORT runs nothing).
    "local denied = need('hexists', 'hget', 'hincrby', 'rename', 'exists', 'del', 'rpush')\n"
    "if denied then return refuse(denied) end\n"
    "local bad = no_part(KEYS[4], ARGV[9]) or length_error(KEYS[2], ARGV[10])\n"
    "if bad then return refuse(bad) end\n"
    "local room = 0\n"
    "if ARGV[12] ~= '0' then\n"
    "  local count = tonumber(redis.call('HGET', KEYS[4], ARGV[9]) or '0')\n"
    "  local n, cap = tonumber(ARGV[11]), tonumber(ARGV[12])\n"
    "  if count + n > cap then\n"
    "    return refuse(redis.error_reply('REDBLOOM_FULL ' .. math.max(0, cap - count)))\n"
    "  end\n"
    "  redis.call('HINCRBY', KEYS[4], ARGV[9], n)\n"
    "  room = cap - count - n\n"
    "end\n"
    "if ARGV[8] ~= '0' then redis.call('HINCRBY', KEYS[4], ARGV[9], ARGV[8]) end\n"
    "redis.call('RENAME', KEYS[2], KEYS[3])\n"
    "return room\n";

// KEYS: meta, bitmap, scratch. ARGV: the seven expected fields, the bitmap's
// bytes. Returns 1 if the cells were committed, 0 if they were thrown away,
// or fail(state) when the filter's metadata no longer passes: Redis 7.0
// reads its clock afresh for each script of a transaction, so a filter whose
// expiry falls between the guard and here is gone by the time this runs (an
// audit: 11 of 40 adds meeting a 1 s TTL answered 500 "unexpected reply" for
// the 0, where the filter was gone: 404).
inline constexpr std::string_view kAddCommit = REDBLOOM_LUA_PROLOGUE
    // The guard ran in this same transaction: the bitmap key is absent and
    // the scratch key a string of the bitmap's length exactly when the guard
    // moved the bitmap. (STRLEN fails on the guard's refusal, a list. A guard
    // that raised left no scratch key, and a bitmap already lost left BITFIELD
    // a new, short one: neither may become the filter.)
    "local s = meta_state(KEYS[1], KEYS[4])\n"
    "if s == 'ok' and redis.call('EXISTS', KEYS[2]) == 0 and\n"
    "   redis.pcall('STRLEN', KEYS[3]) == tonumber(ARGV[8]) then\n"
    "  redis.call('RENAME', KEYS[3], KEYS[2])\n"
    "  return 1\n"
    "end\n"
    "redis.call('DEL', KEYS[3])\n"
    "if s ~= 'ok' then return fail(s) end\n"
    "return 0\n";

// A small add (a few items) as one script: the checks, BITFIELD and the
// count in one command and one round trip. Calling BITFIELD from Lua costs
// the server ~2 us more per item than the transaction above, but saves its
// five commands and the separate count update (~28 us of server time here),
// so it wins below ~10 items (see kSmallAddOps).
// KEYS: meta, bitmap, count hash. ARGV: the seven expected fields, count delta
// (of earlier calls), count field, k, '1' for 4-bit counters (else bits), the
// bitmap's bytes, capacity (0: none; see kAddGuard), the scratch key (a bitmap
// a failed batch commit left there goes back: restore(); an argument, not a
// key, as declaring a key that does not exist draws TRYAGAIN for the whole of
// a slot's migration; it is in the bitmap's slot, and touched only when the
// bitmap is missing), then k offsets per item.
// Returns {flags, room}: one '0'/'1' per item, 1 if the item turned at least
// one cell on (the ops run in item order), and the room left.
inline constexpr std::string_view kAddSmall = REDBLOOM_LUA_PROLOGUE REDBLOOM_LUA_NEED
    "local s = meta_state(KEYS[1], KEYS[4])\n"
    "if s ~= 'ok' then return fail(s) end\n"
    "restore(KEYS[2], ARGV[14], ARGV[12])\n"
    "local denied = need('hexists', 'hget', 'bitfield', 'hincrby')\n"
    "if denied then return denied end\n"
    "local bad = no_part(KEYS[3], ARGV[9]) or length_error(KEYS[2], ARGV[12])\n"
    "if bad then return bad end\n"
    "local k, counting = tonumber(ARGV[10]), ARGV[11] == '1'\n"
    "local n = (#ARGV - 14) / k\n"
    "local room = 0\n"
    "if ARGV[13] ~= '0' then\n"
    "  local count = tonumber(redis.call('HGET', KEYS[3], ARGV[9]) or '0')\n"
    "  local cap = tonumber(ARGV[13])\n"
    "  if count + n > cap then\n"
    "    return redis.error_reply('REDBLOOM_FULL ' .. math.max(0, cap - count))\n"
    "  end\n"
    "  room = cap - count - n\n"
    "end\n"
    "local args = {}\n"
    "if counting then args = {'OVERFLOW', 'SAT'} end\n"
    "for i = 15, #ARGV do\n"
    "  if counting then\n"
    "    args[#args + 1] = 'INCRBY'; args[#args + 1] = 'u4'; args[#args + 1] = '#' .. ARGV[i]\n"
    "  else\n"
    "    args[#args + 1] = 'SET'; args[#args + 1] = 'u1'; args[#args + 1] = ARGV[i]\n"
    "  end\n"
    "  args[#args + 1] = '1'\n"
    "end\n"
    "local r = redis.call('BITFIELD', KEYS[2], unpack(args))\n"
    // SET answers the previous bit, INCRBY the new counter: 0 resp. 1 is fresh.
    "local fresh = counting and 1 or 0\n"
    "local flags, added = {}, 0\n"
    "for i = 0, n - 1 do\n"
    "  local new = false\n"
    "  for j = 1, k do if r[i * k + j] == fresh then new = true end end\n"
    "  flags[i + 1] = new and '1' or '0'\n"
    "  if new or counting then added = added + 1 end\n"
    "end\n"
    // With a capacity every item counts (a reservation); else the new ones.
    "if ARGV[13] ~= '0' then added = n end\n"
    "local delta = tonumber(ARGV[8]) + added\n"
    "if delta ~= 0 then redis.call('HINCRBY', KEYS[3], ARGV[9], delta) end\n"
    "return {table.concat(flags), room}\n";

// KEYS: meta, count hash. ARGV: the seven expected fields, count delta, count
// field. The count update of an add's last batch, sent without waiting.
inline constexpr std::string_view kAddCount = REDBLOOM_LUA_PROLOGUE
    "if meta_state(KEYS[1], KEYS[3]) ~= 'ok' then return 0 end\n"
    "redis.call('HINCRBY', KEYS[2], ARGV[9], ARGV[8])\n"
    "return 1\n";

// KEYS: meta, bitmap, count hash. ARGV: the seven expected fields, data_bytes,
// count field. Clears the cells and the count; the key keeps its expiry, as
// a time (PEXPIRETIME, Redis 7; before it the TTL read with PTTL): a TTL put
// back after the new bitmap was allocated moved the expiry later by that
// time (1 s after ten clears of a 124 MB filter), and a key in its last
// millisecond (PTTL 0) came back without one, outliving its filter and
// refusing every create of the name (an audit). A key in its last
// millisecond is left as it is: it goes within it.
inline constexpr std::string_view kClear = REDBLOOM_LUA_PROLOGUE REDBLOOM_LUA_NEED
    "local s = meta_state(KEYS[1], KEYS[4])\n"
    "if s ~= 'ok' then return fail(s) end\n"
    "local bad = no_part(KEYS[3], ARGV[9]) or length_error(KEYS[2], ARGV[8])\n"
    "if bad then return bad end\n"
    "local denied = need('pttl', 'unlink', 'setrange', 'pexpire', 'pexpireat', 'hset')\n"
    "if denied then return denied end\n"
    "local ttl = redis.call('PTTL', KEYS[2])\n"
    "if ttl == 0 then return 1 end\n"
    // Asked first where Redis can tell (7.0): a denied command in a script
    // is written to the ACL LOG even under pcall.
    "local at = nil\n"
    "local known, allowed = may('pexpiretime')\n"
    "if known and allowed then at = redis.pcall('PEXPIRETIME', KEYS[2]) end\n"
    // UNLINK frees a large string in a background thread instead of blocking
    // the server (a 512 MB string takes ~100 ms to free).
    "redis.call('UNLINK', KEYS[2])\n"
    "redis.call('SETRANGE', KEYS[2], tonumber(ARGV[8]) - 1, '\\0')\n"
    "if type(at) == 'number' and at > 0 then\n"
    "  redis.call('PEXPIREAT', KEYS[2], at)\n"
    "elseif ttl > 0 then\n"
    "  redis.call('PEXPIRE', KEYS[2], ttl)\n"
    "end\n"
    "redis.call('HSET', KEYS[3], ARGV[9], '0')\n"
    "return 1\n";

// Counting filters. KEYS: meta, bitmap, count hash. ARGV: the seven expected
// fields, count field, k, the bitmap's bytes, the scratch key (as kAddSmall),
// then k counter indexes per item. Removes each item
// whose counters are all non-zero (an index that repeats within the item
// needs as many), decrementing every counter below 15; a saturated counter
// may hold more adds than 15, so it is never decremented. Atomic: the whole
// batch runs as one script. Returns one '0'/'1' per item.
inline constexpr std::string_view kRemove = REDBLOOM_LUA_PROLOGUE REDBLOOM_LUA_NEED
    "local s = meta_state(KEYS[1], KEYS[4])\n"
    "if s ~= 'ok' then return fail(s) end\n"
    "restore(KEYS[2], ARGV[11], ARGV[10])\n"
    "local denied = need('hexists', 'bitfield', 'hincrby')\n"
    "if denied then return denied end\n"
    "local bad = no_part(KEYS[3], ARGV[8]) or length_error(KEYS[2], ARGV[10])\n"
    "if bad then return bad end\n"
    "local k = tonumber(ARGV[9])\n"
    "local n = (#ARGV - 11) / k\n"
    "local out, removed = {}, 0\n"
    "for i = 0, n - 1 do\n"
    "  local ops, need = {}, {}\n"
    "  for j = 1, k do\n"
    "    local o = ARGV[11 + i * k + j]\n"
    "    ops[#ops + 1] = 'GET'; ops[#ops + 1] = 'u4'; ops[#ops + 1] = '#' .. o\n"
    "    need[o] = (need[o] or 0) + 1\n"
    "  end\n"
    "  local v = redis.call('BITFIELD', KEYS[2], unpack(ops))\n"
    "  local value, all = {}, true\n"
    "  for j = 1, k do value[ARGV[11 + i * k + j]] = v[j] end\n"
    "  for o, c in pairs(need) do\n"
    "    if value[o] ~= 15 and value[o] < c then all = false end\n"
    "  end\n"
    "  if all then\n"
    "    local dec = {'OVERFLOW', 'SAT'}\n"
    "    for j = 1, k do\n"
    "      local o = ARGV[11 + i * k + j]\n"
    "      if value[o] < 15 then\n"
    "        dec[#dec + 1] = 'INCRBY'; dec[#dec + 1] = 'u4'; dec[#dec + 1] = '#' .. o\n"
    "        dec[#dec + 1] = '-1'\n"
    "      end\n"
    "    end\n"
    "    if #dec > 2 then redis.call('BITFIELD', KEYS[2], unpack(dec)) end\n"
    "    removed = removed + 1\n"
    "    out[#out + 1] = '1'\n"
    "  else\n"
    "    out[#out + 1] = '0'\n"
    "  end\n"
    "end\n"
    "if removed > 0 then redis.call('HINCRBY', KEYS[3], ARGV[8], -removed) end\n"
    "return table.concat(out)\n";

// Creates part P unless it exists, sized up front, and lists it in the parts
// hash with a count of 0. The metadata's 'layers' field counts the parts
// created densely from 0 (a scaling filter's layers, which clients of
// format 1 read): creating part P when it is P makes it P + 1.
// A dense part (ARGV[12] = '1') is made only after every part below it: a
// client that read the filter before it was dropped and re-created alike
// (the metadata's seven fields the same) would otherwise make layer P of the
// new filter without its layer P - 1, and the filter would be data_loss
// from then on; it gets REDBLOOM_CHANGED and reopens the filter instead.
// A window's metadata records its newest slice made (`newest_slice`, and its
// key `newest_key`): moving on from it while it is in the window, with its
// key gone, is refused (REDBLOOM_LOST), as is making it again (its key
// gone: REDBLOOM_VANISHED). Its items would read absent for good otherwise:
// the parts list and that slice evicted together read as an empty window.
// Only the newest is known made: an older slice may be made after a newer
// one by a client whose clock runs behind. (`newest_key` is in the
// filter's slot, so the script may read it without declaring it.)
// KEYS: meta, part bitmap, parts hash. ARGV: the seven expected fields, P,
// part bytes, part expires_at_ms, filter expires_at_ms, dense, the oldest
// slice that cannot have expired yet by the client's clock (with the grace
// of RedisBitStore::SliceMayHaveExpired; a number past every slice when
// none is sure, and for other kinds).
inline constexpr std::string_view kCreatePart =
    REDBLOOM_LUA_PROLOGUE REDBLOOM_LUA_ROOM REDBLOOM_LUA_NEED
    "local s = meta_state(KEYS[1], KEYS[4])\n"
    "if s ~= 'ok' then return fail(s) end\n"
    "if ARGV[12] == '1' and\n"
    "   tonumber(redis.call('HGET', KEYS[1], 'layers') or '0') < tonumber(ARGV[8]) then\n"
    "  return fail('changed')\n"
    "end\n"
    // A filter whose own expiry the server's clock has reached is gone (Redis
    // keeps a key through its expiry's millisecond), not a clock behind.
    "local stored = redis.call('HGET', KEYS[1], 'expires_at_ms')\n"
    "if stored and stored ~= '0' and past(stored) then return fail('gone') end\n"
    "local late = past(ARGV[10]) or past(ARGV[11])\n"
    "if late then return redis.error_reply('REDBLOOM_PAST ' .. late) end\n"
    "local denied = need('exists', 'setrange', 'hsetnx', 'hget', 'hset',\n"
    "                    (ARGV[10] ~= '0' or ARGV[11] ~= '0') and 'pexpireat',\n"
    "                    ARGV[11] ~= '0' and 'pttl')\n"
    "if denied then return denied end\n"
    "local newest = ARGV[12] ~= '1' and redis.call('HMGET', KEYS[1], 'newest_slice', "
    "'newest_key')\n"
    "if newest and newest[1] and newest[2] and\n"
    "   tonumber(newest[1]) < tonumber(ARGV[8]) and\n"
    "   tonumber(newest[1]) >= tonumber(ARGV[13]) and\n"
    "   redis.call('EXISTS', newest[2]) == 0 then\n"
    "  return redis.error_reply('REDBLOOM_LOST ' .. newest[1])\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[2]) == 0 then\n"
    "  if newest and newest[1] == ARGV[8] then return redis.error_reply('REDBLOOM_VANISHED 0') "
    "end\n"
    // As in kCreate: a part that does not fit under maxmemory is refused
    // before it is allocated, not left to push the server past its limit.
    "  denied = need({'info', 'memory'})\n"
    "  if denied then return denied end\n"
    "  local full = no_room(tonumber(ARGV[9]))\n"
    "  if full then\n"
    "    return redis.error_reply('REDBLOOM_NOROOM ' .. full[1] .. ' ' .. full[2])\n"
    "  end\n"
    "  redis.call('SETRANGE', KEYS[2], tonumber(ARGV[9]) - 1, '\\0')\n"
    "  if ARGV[10] ~= '0' then\n"
    "    redis.call('PEXPIREAT', KEYS[2], ARGV[10])\n"
    // Made in the millisecond its expiry is reached: PEXPIREAT reads a
    // fresh clock and deleted it at once, and listing it left a layer
    // data_loss for the rest of that millisecond (an audit: 5 in 40
    // trials). Nothing is listed. At the filter's own expiry the filter is
    // gone; a slice's earlier one is an expiry past that past() could not
    // see (no TIME allowed): as kCreate's {6}.
    "    if redis.call('EXISTS', KEYS[2]) == 0 then\n"
    "      if ARGV[10] == stored then return fail('gone') end\n"
    "      return redis.error_reply('REDBLOOM_PAST unknown')\n"
    "    end\n"
    "  end\n"
    "end\n"
    "redis.call('HSETNX', KEYS[3], ARGV[8], '0')\n"
    // The list's expiry is set once, by the call that made it. PEXPIREAT of
    // a time the server's clock has reached deletes the key at once, and
    // Redis 7.0 reads that clock afresh, after past() read TIME: re-arming a
    // live list in the filter's last millisecond deleted it under its slices,
    // and every read in that millisecond was data_loss (an audit: 2 in 40
    // trials). A list made in that millisecond goes the same way: the filter
    // is gone then.
    "if ARGV[11] ~= '0' and redis.call('PTTL', KEYS[3]) == -1 then\n"
    "  redis.call('PEXPIREAT', KEYS[3], ARGV[11])\n"
    "  if redis.call('EXISTS', KEYS[3]) == 0 then return fail('gone') end\n"
    "end\n"
    "local layers = redis.call('HGET', KEYS[1], 'layers')\n"
    "if layers == ARGV[8] then redis.call('HSET', KEYS[1], 'layers', tonumber(layers) + 1) end\n"
    "if newest and (not newest[1] or tonumber(newest[1]) < tonumber(ARGV[8])) then\n"
    "  redis.call('HSET', KEYS[1], 'newest_slice', ARGV[8], 'newest_key', KEYS[2])\n"
    "end\n"
    "return 1\n";

// Forgets parts whose keys expired. KEYS: parts hash, then one part bitmap
// per ARGV part number.
inline constexpr std::string_view kPruneParts =
    "for i = 1, #ARGV do\n"
    "  if redis.call('EXISTS', KEYS[i + 1]) == 0 then redis.call('HDEL', KEYS[1], ARGV[i]) end\n"
    "end\n"
    "return 1\n";

// Shared by drop and replace: true if the parts hash KEYS[parts_at] lists
// exactly the part numbers ARGV[first..]. The client passes the part keys it
// derived from the list it read; if a part appeared since, it reads again.
#define REDBLOOM_LUA_SAME_PARTS                             \
  "local function same_parts(parts_key, first)\n"           \
  "  local have = redis.call('HKEYS', parts_key)\n"         \
  "  if #have ~= #ARGV - first + 1 then return false end\n" \
  "  local want = {}\n"                                     \
  "  for i = first, #ARGV do want[ARGV[i]] = true end\n"    \
  "  for _, p in ipairs(have) do\n"                         \
  "    if not want[p] then return false end\n"              \
  "  end\n"                                                 \
  "  return true\n"                                         \
  "end\n"

// Shared by drop and replace, for a filter whose Java side keeps a companion
// hash (Redisson's {NAME}:config): 'same' while the hash holds the bits and
// hashes of the metadata at `meta`, 'gone' without it, 'other' when a Java
// client re-created the filter with other parameters (or put something else
// there), and the hash's HMGET reply for a caller that words it. A filter
// that is no longer redbloom's must not be dropped or replaced on its behalf.
// With the same parameters, the bitmap tells: redbloom sizes it to the
// filter's bytes when it creates or attaches it, where Redisson's tryInit
// makes none and its adds grow one bit by bit; a bitmap shorter than the
// filter's but not empty is 'remade' (a Java delete(), tryInit and adds
// since), and dropping or replacing it deleted the Java side's new filter
// (an audit). An absent one is not told apart: eviction, or redbloom's own
// failed commit (its bits wait at the scratch key) leave the same, and the
// filter must stay droppable and rebuildable then.
#define REDBLOOM_LUA_COMPANION_STATE                                        \
  "local function companion_state(meta, companion, bitmap)\n"               \
  "  local c = redis.pcall('HMGET', companion, 'size', 'hashIterations')\n" \
  "  if type(c) ~= 'table' or c.err then return 'other', c end\n"           \
  "  if not c[1] and not c[2] then return 'gone', c end\n"                  \
  "  local m = redis.call('HMGET', meta, 'bits', 'hashes')\n"               \
  "  if c[1] ~= m[1] or c[2] ~= m[2] then return 'other', c end\n"          \
  "  local len = redis.pcall('STRLEN', bitmap)\n"                           \
  "  if type(len) == 'number' and len > 0 and\n"                            \
  "     len < math.ceil(tonumber(m[1]) / 8) then return 'remade', c end\n"  \
  "  return 'same', c\n"                                                    \
  "end\n"

// The type of the filter's bitmap key when it holds what no filter writes
// (a hash, a list: another program's key at NAME), else nil.
#define REDBLOOM_LUA_FOREIGN_BITMAP                        \
  "local function foreign_bitmap(key)\n"                   \
  "  local t = redis.call('TYPE', key)['ok']\n"            \
  "  if t ~= 'none' and t ~= 'string' then return t end\n" \
  "  return nil\n"                                         \
  "end\n"

// Shared by the replace scripts: false if the filter at `meta` is no longer
// the one the client checked before the swap (its kind and shard count, or
// "" when there was none; "*" skips the check, for a filter whose metadata
// could not be read). A filter dropped since is no obstacle.
#define REDBLOOM_LUA_STILL_THE_OLD                             \
  "local function still_the_old(meta, kind, shards)\n"         \
  "  if kind == '*' or redis.call('EXISTS', meta) == 0 then\n" \
  "    return true\n"                                          \
  "  end\n"                                                    \
  "  if kind == '' then return false end\n"                    \
  "  local f = redis.call('HMGET', meta, 'kind', 'shards')\n"  \
  "  return f[1] == kind and (f[2] or '1') == shards\n"        \
  "end\n"

// KEYS: meta, bitmap, parts hash, part bitmaps..., then the companion hash
// if ARGV[3] is '1'. ARGV: name, the shard token the client read with the
// metadata ("" for none, "*" to skip the check), '1' if the last key is a
// companion hash (else '0'), part numbers... Returns {1} dropped; {0} no
// metadata; {-1, other_name} the metadata belongs to another filter sharing
// the meta key ("x" and "{x}"); {2} the parts changed, read them again; {3,
// type} the meta key is not a hash; {4} the filter was made again since the
// client read its token (its shards, if any, are another create's: read
// again); {5, size, hashIterations} the companion holds another filter, its
// Java side's (nothing dropped); {7} the companion holds this filter's
// parameters over a bitmap a Java side grew ('remade': nothing dropped). A
// key at the bitmap's name that no filter writes (a hash, a list: another
// program's, or one at the name of a window filter, which has no main
// bitmap) is left; the rest goes.
inline constexpr std::string_view kDrop =
    REDBLOOM_LUA_SAME_PARTS REDBLOOM_LUA_COMPANION_STATE REDBLOOM_LUA_FOREIGN_BITMAP
    "local mt = redis.call('TYPE', KEYS[1])['ok']\n"
    "if mt == 'none' then return {0} end\n"
    "if mt ~= 'hash' then return {3, mt} end\n"
    "local n = redis.call('HGET', KEYS[1], 'name')\n"
    // Metadata without a name is corrupt; dropping it must still be possible.
    "if n and n ~= ARGV[1] then return {-1, n} end\n"
    "if ARGV[2] ~= '*' and (redis.call('HGET', KEYS[1], 'shard_token') or '') ~= ARGV[2] then\n"
    "  return {4}\n"
    "end\n"
    // Metadata that could not be read ('*') is compared with nothing.
    "if ARGV[3] == '1' and ARGV[2] ~= '*' then\n"
    "  local st, c = companion_state(KEYS[1], KEYS[#KEYS], KEYS[2])\n"
    "  if st == 'other' then\n"
    "    if type(c) ~= 'table' or c.err then\n"
    "      return {5, 'not a hash', type(c) == 'table' and c.err or ''}\n"
    "    end\n"
    "    return {5, c[1] or '', c[2] or ''}\n"
    "  end\n"
    "  if st == 'remade' then return {7} end\n"
    "end\n"
    "if not same_parts(KEYS[3], 4) then return {2} end\n"
    "if foreign_bitmap(KEYS[2]) or redis.call('HGET', KEYS[1], 'kind') == 'window' then\n"
    "  for i = 1, #KEYS do if i ~= 2 then redis.call('UNLINK', KEYS[i]) end end\n"
    "else\n"
    "  redis.call('UNLINK', unpack(KEYS))\n"
    "end\n"
    "return {1}\n";

// The end of the replace scripts: the replacement's metadata becomes NAME's,
// with the replaced filter's incarnation (none if it had none), so that its
// readers go on reading the new one (their seven fields permitting) rather
// than failing as if NAME had been dropped; with none to take (the filter
// was dropped while rebuilt, or its metadata is not a hash: a swap repairs
// it), the replacement's own stays. `swaps` counts the swaps, for readers
// that must not go on (an export, whose pieces read so far are the old
// filter's). pcall: by now the bits have moved, and an error would stop the
// script half done.
#define REDBLOOM_LUA_KEEP_INCARNATION                                        \
  "local old = redis.call('EXISTS', KEYS[1]) == 1\n"                         \
  "local inc = old and redis.pcall('HGET', KEYS[1], 'incarnation')\n"        \
  "local swaps = old and redis.pcall('HGET', KEYS[1], 'swaps')\n"            \
  "if type(inc) == 'table' then old, inc, swaps = false, false, false end\n" \
  "redis.call('RENAME', KEYS[4], KEYS[1])\n"                                 \
  "redis.call('HSET', KEYS[1], 'name', ARGV[1])\n"                           \
  "redis.call('HSET', KEYS[1], 'swaps', (tonumber(swaps) or 0) + 1)\n"       \
  "if inc then\n"                                                            \
  "  redis.call('HSET', KEYS[1], 'incarnation', inc)\n"                      \
  "elseif old then\n"                                                        \
  "  redis.call('HDEL', KEYS[1], 'incarnation')\n"                           \
  "end\n"

// Rebuilds: makes filter SOURCE the filter NAME in one step. KEYS: name meta,
// name bitmap, name parts hash, source meta, source bitmap, then the part
// bitmaps of the filter being replaced. ARGV: name, source, the replaced
// filter's kind and shards as checked (see still_the_old), its part
// numbers... Returns {1} done; {0} no source; {2} parts changed, read again;
// {4} NAME was re-created as another filter since the check; {5} NAME holds
// no filter now (dropped while it was rebuilt); {7, type} NAME's bitmap key
// holds another program's key (nothing swapped: a RENAME over it deleted it).
inline constexpr std::string_view kReplace =
    REDBLOOM_LUA_SAME_PARTS REDBLOOM_LUA_STILL_THE_OLD REDBLOOM_LUA_FOREIGN_BITMAP REDBLOOM_LUA_NEED
    "if redis.call('TYPE', KEYS[4])['ok'] ~= 'hash' then return {0} end\n"
    "if redis.call('HGET', KEYS[4], 'name') ~= ARGV[2] then return {0} end\n"
    "if ARGV[3] ~= '*' and redis.call('EXISTS', KEYS[1]) == 0 then return {5} end\n"
    "if not still_the_old(KEYS[1], ARGV[3], ARGV[4]) then return {4} end\n"
    "local foreign = foreign_bitmap(KEYS[2])\n"
    "if foreign then return {7, foreign} end\n"
    "if not same_parts(KEYS[3], 5) then return {2} end\n"
    "local denied = need('unlink', 'exists', 'rename', 'hget', 'hset', 'hdel')\n"
    "if denied then return denied end\n"
    "for i = 6, #KEYS do redis.call('UNLINK', KEYS[i]) end\n"
    "redis.call('UNLINK', KEYS[3])\n"
    "if redis.call('EXISTS', KEYS[5]) == 1 then\n"
    "  redis.call('RENAME', KEYS[5], KEYS[2])\n"
    "else\n"
    "  redis.call('UNLINK', KEYS[2])\n"
    "end\n" REDBLOOM_LUA_KEEP_INCARNATION "return {1}\n";

// KEYS: meta, uploaded piece, bitmap, count hash, scratch. ARGV: the seven
// expected fields, byte offset of the piece, new items, count field, the
// bitmap's bytes.
// ORs one uploaded piece of a bulk load into bytes [offset, offset + len) of
// the bitmap: the current range is copied to the scratch key, BITOP ORs the
// piece into it, and SETRANGE writes it back, all inside one script, so no
// add can land in between and a bulk load never clears a bit. Each call costs
// O(piece), not O(filter): a 512 MB filter loads as many short scripts, with
// other clients served between them. SETRANGE keeps the key's TTL.
inline constexpr std::string_view kOrRange = REDBLOOM_LUA_PROLOGUE REDBLOOM_LUA_NEED
    "local s = meta_state(KEYS[1], KEYS[6])\n"
    "if s ~= 'ok' then redis.call('UNLINK', KEYS[2]) return fail(s) end\n"
    "local bad = no_part(KEYS[4], ARGV[10]) or length_error(KEYS[3], ARGV[11])\n"
    "if bad then redis.call('UNLINK', KEYS[2]) return bad end\n"
    "local denied = need('strlen', 'set', 'getrange', 'bitop', 'setrange', 'get', 'unlink',\n"
    "                    'hincrby')\n"
    "if denied then redis.pcall('UNLINK', KEYS[2]) return denied end\n"
    "local len = redis.call('STRLEN', KEYS[2])\n"
    "if len > 0 then\n"
    "  local off = tonumber(ARGV[8])\n"
    "  redis.call('SET', KEYS[5], redis.call('GETRANGE', KEYS[3], off, off + len - 1))\n"
    "  local r = redis.pcall('BITOP', 'OR', KEYS[5], KEYS[5], KEYS[2])\n"
    "  if type(r) == 'table' and r.err then redis.call('UNLINK', KEYS[2], KEYS[5]) return r end\n"
    "  redis.call('SETRANGE', KEYS[3], off, redis.call('GET', KEYS[5]))\n"
    "  redis.call('UNLINK', KEYS[2], KEYS[5])\n"
    "end\n"
    "if ARGV[9] ~= '0' then redis.call('HINCRBY', KEYS[4], ARGV[10], ARGV[9]) end\n"
    "return 1\n";

// KEYS and ARGV as kOrRange. Adds one uploaded piece of 4-bit counters to a
// counting filter's bytes [offset, offset + len): each counter saturates at
// 15, as BITFIELD OVERFLOW SAT INCRBY u4 does (ORing counters would corrupt
// them). Lua walks the piece byte by byte (~125 ns a byte), so pieces are
// kept small (see kCounterMergeChunk) to hold the server ~2 ms at most.
inline constexpr std::string_view kAddRange = REDBLOOM_LUA_PROLOGUE REDBLOOM_LUA_NEED
    "local s = meta_state(KEYS[1], KEYS[6])\n"
    "if s ~= 'ok' then redis.call('UNLINK', KEYS[2]) return fail(s) end\n"
    "local bad = no_part(KEYS[4], ARGV[10]) or length_error(KEYS[3], ARGV[11])\n"
    "if bad then redis.call('UNLINK', KEYS[2]) return bad end\n"
    "local denied = need('get', 'getrange', 'setrange', 'unlink', 'hincrby')\n"
    "if denied then redis.pcall('UNLINK', KEYS[2]) return denied end\n"
    "local add = redis.call('GET', KEYS[2])\n"
    "if add then\n"
    "  local off = tonumber(ARGV[8])\n"
    "  local cur = redis.pcall('GETRANGE', KEYS[3], off, off + #add - 1)\n"
    "  if type(cur) == 'table' and cur.err then redis.call('UNLINK', KEYS[2]) return cur end\n"
    // 4096 bytes at a time through string.byte and string.char (C calls are
    // the cost here), with plain arithmetic per byte: counter values are
    // lo = byte % 16 and hi = byte - lo (the high counter times 16).
    "  local parts = {}\n"
    "  for base = 1, #add, 4096 do\n"
    "    local last = math.min(base + 4095, #add)\n"
    "    local a = {string.byte(add, base, last)}\n"
    "    local c = {string.byte(cur, base, last)}\n"
    "    for j = 1, last - base + 1 do\n"
    "      local x, y = a[j], c[j] or 0\n"
    "      if x ~= 0 then\n"
    "        local lx, ly = x % 16, y % 16\n"
    "        local lo, hi = lx + ly, x - lx + y - ly\n"
    "        if lo > 15 then lo = 15 end\n"
    "        if hi > 240 then hi = 240 end\n"
    "        c[j] = hi + lo\n"
    "      else\n"
    "        c[j] = y\n"
    "      end\n"
    "    end\n"
    "    parts[#parts + 1] = string.char(unpack(c, 1, last - base + 1))\n"
    "  end\n"
    "  redis.call('SETRANGE', KEYS[3], off, table.concat(parts))\n"
    "  redis.call('UNLINK', KEYS[2])\n"
    "end\n"
    "if ARGV[9] ~= '0' then redis.call('HINCRBY', KEYS[4], ARGV[10], ARGV[9]) end\n"
    "return 1\n";

// ---- Filters with a companion hash (Redisson's {NAME}:config) -----------------
// These replace kCreate, kAttach and kReplace for filters whose strategy's
// Java side keeps a hash beside the bitmap (strategy_def.h, CompanionHash).
// The cell scripts above check it through meta_state's second argument.

// KEYS: meta, bitmap, companion. ARGV: main_bytes, expires_at_ms, the number
// C of companion arguments, C companion field/value arguments, then the
// metadata's field/value pairs. Writes the companion hash exactly as the Java
// side's own init does, never over an existing one. Returns kCreate's codes
// (room for the bitmap checked as kCreate does), and {8, type} when the
// companion key exists without metadata (a filter the Java side created:
// attach adopts it).
inline constexpr std::string_view kCreateCompanion = REDBLOOM_LUA_ROOM REDBLOOM_LUA_NEED
    "local mt = redis.call('TYPE', KEYS[1])['ok']\n"
    "if mt == 'hash' then return {1, redis.call('HGETALL', KEYS[1])} end\n"
    "if mt ~= 'none' then return {3, mt} end\n"
    "local bt = redis.call('TYPE', KEYS[2])['ok']\n"
    "if bt ~= 'none' then return {2, bt} end\n"
    "local ct = redis.call('TYPE', KEYS[3])['ok']\n"
    "if ct ~= 'none' then return {8, ct} end\n"
    "local late = past(ARGV[2])\n"
    "if late then return {6, late} end\n"
    "local bytes = tonumber(ARGV[1])\n"
    "local denied = need({'info', 'memory'}, bytes > 0 and 'setrange', 'hset',\n"
    "                    ARGV[2] ~= '0' and 'pexpireat')\n"
    "if denied then return denied end\n"
    "local full = no_room(bytes)\n"
    "if full then return {5, full[1], full[2]} end\n"
    "local c = tonumber(ARGV[3])\n"
    // Bitmap first, as in kCreate: a failed allocation leaves nothing behind.
    "if bytes > 0 then redis.call('SETRANGE', KEYS[2], bytes - 1, '\\0') end\n"
    "redis.call('HSET', KEYS[3], unpack(ARGV, 4, 3 + c))\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 4 + c))\n"
    "if ARGV[2] ~= '0' then\n"
    "  redis.call('PEXPIREAT', KEYS[1], ARGV[2])\n"
    "  redis.call('PEXPIREAT', KEYS[3], ARGV[2])\n"
    "  if bytes > 0 then redis.call('PEXPIREAT', KEYS[2], ARGV[2]) end\n"
    "  if redis.call('EXISTS', KEYS[1]) == 0 then return {6} end\n"  // as kCreate
    "end\n"
    "return {0}\n";

// KEYS: meta, bitmap, companion. ARGV: data_bytes, expires_at_ms, bits,
// hashes, then the metadata's field/value pairs. Adopts a filter the Java
// side created: its companion must exist and hold these bits and hashes.
// Returns kAttach's codes, and {8, 'none'} no companion; {9, type} the
// companion is not a hash; {10, size, hashIterations} it holds other
// parameters.
inline constexpr std::string_view kAttachCompanion = REDBLOOM_LUA_ROOM REDBLOOM_LUA_NEED
    "local mt = redis.call('TYPE', KEYS[1])['ok']\n"
    "if mt == 'hash' then return {1, redis.call('HGETALL', KEYS[1])} end\n"
    "if mt ~= 'none' then return {3, mt} end\n"
    "local ct = redis.call('TYPE', KEYS[3])['ok']\n"
    "if ct == 'none' then return {8, ct} end\n"
    "if ct ~= 'hash' then return {9, ct} end\n"
    "local c = redis.call('HMGET', KEYS[3], 'size', 'hashIterations')\n"
    "if c[1] ~= ARGV[3] or c[2] ~= ARGV[4] then\n"
    "  return {10, c[1] or '(none)', c[2] or '(none)'}\n"
    "end\n"
    "local want = tonumber(ARGV[1])\n"
    "local bt = redis.call('TYPE', KEYS[2])['ok']\n"
    "if bt ~= 'none' and bt ~= 'string' then return {2, bt} end\n"
    "local len = redis.call('STRLEN', KEYS[2])\n"
    "if len > want then return {4, len} end\n"
    "local late = past(ARGV[2])\n"
    "if late then return {6, late} end\n"
    "local denied = need(len < want and 'setrange', 'hset', ARGV[2] ~= '0' and 'pexpireat')\n"
    "if denied then return denied end\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 5))\n"
    "if ARGV[2] ~= '0' then\n"
    "  redis.call('PEXPIREAT', KEYS[1], ARGV[2])\n"
    "  if redis.call('EXISTS', KEYS[1]) == 0 then return {6} end\n"  // as kAttach
    "end\n"
    "if len < want then redis.call('SETRANGE', KEYS[2], want - 1, '\\0') end\n"
    "if ARGV[2] ~= '0' then\n"
    "  redis.call('PEXPIREAT', KEYS[2], ARGV[2])\n"
    "  redis.call('PEXPIREAT', KEYS[3], ARGV[2])\n"
    "end\n"
    "return {0}\n";

// kReplace for a filter or a replacement with a companion hash. KEYS: name
// meta, name bitmap, name parts hash, source meta, source bitmap, name
// companion, source companion, then the part bitmaps of the filter being
// replaced. ARGV: name, source, '1' if the old filter has a companion (else
// '0'), '1' if the replacement has one, the replaced filter's kind and
// shards as checked, its part numbers... The name's companion becomes the
// source's (or goes, if the replacement has none; a hash there that the old
// filter did not own is left alone). Returns as kReplace, and {6, state}
// when the old filter's companion no longer holds it (state 'gone', 'other'
// or 'remade': its Java side deleted or re-created it), or when the old
// filter had none and NAME's companion key holds one a replacement with a
// companion would overwrite ('foreign'); nothing swapped.
inline constexpr std::string_view kReplaceCompanion =
    REDBLOOM_LUA_SAME_PARTS REDBLOOM_LUA_STILL_THE_OLD REDBLOOM_LUA_COMPANION_STATE
        REDBLOOM_LUA_FOREIGN_BITMAP REDBLOOM_LUA_NEED
    "if redis.call('TYPE', KEYS[4])['ok'] ~= 'hash' then return {0} end\n"
    "if redis.call('HGET', KEYS[4], 'name') ~= ARGV[2] then return {0} end\n"
    "if ARGV[5] ~= '*' and redis.call('EXISTS', KEYS[1]) == 0 then return {5} end\n"
    "if not still_the_old(KEYS[1], ARGV[5], ARGV[6]) then return {4} end\n"
    "if ARGV[3] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then\n"
    "  local st = companion_state(KEYS[1], KEYS[6], KEYS[2])\n"
    "  if st ~= 'same' then return {6, st} end\n"
    "elseif ARGV[4] == '1' and redis.call('EXISTS', KEYS[6]) == 1 then\n"
    "  return {6, 'foreign'}\n"
    "end\n"
    "local foreign = foreign_bitmap(KEYS[2])\n"
    "if foreign then return {7, foreign} end\n"
    "if not same_parts(KEYS[3], 7) then return {2} end\n"
    "local denied = need('unlink', 'exists', 'rename', 'hget', 'hset', 'hdel')\n"
    "if denied then return denied end\n"
    "for i = 8, #KEYS do redis.call('UNLINK', KEYS[i]) end\n"
    "redis.call('UNLINK', KEYS[3])\n"
    "if redis.call('EXISTS', KEYS[5]) == 1 then\n"
    "  redis.call('RENAME', KEYS[5], KEYS[2])\n"
    "else\n"
    "  redis.call('UNLINK', KEYS[2])\n"
    "end\n"
    "if ARGV[4] == '1' and redis.call('EXISTS', KEYS[7]) == 1 then\n"
    "  redis.call('RENAME', KEYS[7], KEYS[6])\n"
    "elseif ARGV[3] == '1' then\n"
    "  redis.call('UNLINK', KEYS[6])\n"
    "end\n" REDBLOOM_LUA_KEEP_INCARNATION "return {1}\n";

// A read transaction run as one script (SendReads, redis_pipeline.h): ARGV
// holds each command's argument count, then its arguments; the reply is the
// array EXEC would return, an error reply in place of a command that failed.
// Flagged no-writes, which Redis 7 runs while used memory is over maxmemory
// and on read-only replicas, and which may call read commands only. A
// BITFIELD_RO of a large batch has more arguments than one Lua unpack
// takes (about 8000), so it is called in runs of 2000 GETs.
inline constexpr std::string_view kReads =
    "#!lua flags=no-writes\n"
    "local out, i = {}, 1\n"
    "while i <= #ARGV do\n"
    "  local argc = tonumber(ARGV[i])\n"
    "  local first, last = i + 1, i + argc\n"
    "  local reply\n"
    "  if argc <= 6002 then\n"
    "    reply = redis.pcall(unpack(ARGV, first, last))\n"
    "  else\n"
    "    reply = {}\n"
    "    for j = first + 2, last, 6000 do\n"
    "      local part = redis.pcall(ARGV[first], ARGV[first + 1],\n"
    "                               unpack(ARGV, j, math.min(j + 5999, last)))\n"
    "      if part.err then reply = part break end\n"
    "      for _, v in ipairs(part) do reply[#reply + 1] = v end\n"
    "    end\n"
    "  end\n"
    "  out[#out + 1] = reply\n"
    "  i = last + 1\n"
    "end\n"
    "return out\n";

#undef REDBLOOM_LUA_PROLOGUE
#undef REDBLOOM_LUA_NEED
#undef REDBLOOM_LUA_SAME_PARTS
#undef REDBLOOM_LUA_STILL_THE_OLD

}  // namespace redbloom::internal::scripts

#endif  // REDBLOOM_SRC_REDIS_REDIS_SCRIPTS_H_
