// What the two halves of RedisBitStore share (redis_bit_store.cc: parts,
// checks, counts, bulk access; redis_bit_store_add.cc: adds and removes).
// Internal.
#ifndef REDBLOOM_SRC_REDIS_REDIS_BIT_STORE_IMPL_H_
#define REDBLOOM_SRC_REDIS_REDIS_BIT_STORE_IMPL_H_

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redis/redis_bit_store.h"
#include "redis/redis_keys.h"
#include "redis/redis_ops.h"

namespace redbloom::internal {

// BITFIELD ops, pre-encoded: every op repeats these, so they are copied, not
// formatted, ~7000 times per batch.
constexpr std::string_view kSetU1 = "$3\r\nSET\r\n$2\r\nu1\r\n";
constexpr std::string_view kGetU1 = "$3\r\nGET\r\n$2\r\nu1\r\n";
constexpr std::string_view kIncrU4 = "$6\r\nINCRBY\r\n$2\r\nu4\r\n";
constexpr std::string_view kGetU4 = "$3\r\nGET\r\n$2\r\nu4\r\n";
constexpr std::string_view kOne = "$1\r\n1\r\n";
// Adds of at most this many ops (items * k) go as one script (kAddSmall)
// instead of the guarded transaction: 9 items at k = 7. Measured here, wall
// time per call (redis-server CPU): 1 item 51 us (33) instead of 80 us (61);
// 10 items 94 us instead of 98 us; 18 items 128 us instead of 120 us, where
// Lua's slower BITFIELD starts to cost more than the transaction's framing.
constexpr uint64_t kSmallAddOps = 64;
// Transactions of one add or check on the wire at once: the next travels
// while the previous answer is read. 3 measured no better than 2 here (the
// run-to-run noise of this shared machine was larger than any difference).
constexpr size_t kMaxInFlight = 2;

inline bool Contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

// The number after `marker` in an error reply ("REDBLOOM_FULL 42").
inline uint64_t NumberAfter(std::string_view text, std::string_view marker) {
  const size_t at = text.find(marker);
  uint64_t v = 0;
  if (at == std::string_view::npos) return v;
  const char* b = text.data() + at + marker.size();
  while (b < text.data() + text.size() && *b == ' ') ++b;
  std::from_chars(b, text.data() + text.size(), v);
  return v;
}

// A run of one batch's items sent as one transaction (adds), or as part of
// one (checks: RedisBitStore::TestTransactions).
struct RedisBitStore::Chunk {
  PartBatch* batch;
  CellsPtr cells;
  size_t first;                 // its first item in the batch
  size_t n;                     // its number of items
  std::vector<uint32_t> order;  // op i of the command is cell order[i] of the run
  bool blocks = false;          // checks: GETRANGEs of the items' blocks (redis_ops.h)
  BlockReads block_reads{};     // checks with blocks: their plan
  size_t reads = 1;             // checks: its read commands
  uint64_t count_delta = 0;     // adds: the earlier transactions' count its guard carries
};

// `window_slice`: the key is a window filter's slice, which also reads
// empty to a client whose clock runs behind the server's (the slice expired
// on time by the server's clock, early by this client's). `companion`: the
// filter has a Redisson config hash, whose Java side may have deleted the
// filter and made it again with the same parameters (and added: Redisson's
// bitmap grows from nothing).
inline Status VanishedStatus(const RedisBitStore::Cells& cells, KeyMode keys, uint64_t len,
                             bool window_slice = false, bool companion = false) {
  const std::string holds = cells.display + ": its key '" + DisplayKey(cells.bitmap, keys) +
                            "' holds " + std::to_string(len) + " bytes";
  // Longer is no loss: another writer's bit count is larger. A Java
  // service given another expectedInsertions or fpp was told "deleted,
  // evicted or truncated", which sent its operator after the wrong cause.
  if (len > cells.bytes) {
    return Status::DataLoss(
        holds + ", more than its " + std::to_string(cells.bytes) +
        ": a client other than redbloom wrote past its end, one that sizes the filter larger "
        "(a Java service given another expectedInsertions or fpp), whose items this filter "
        "cannot answer for: give every client the same parameters (see docs/format.md, "
        "\"Adopting a Java service's bitmap\")");
  }
  return Status::DataLoss(
      holds + " instead of " + std::to_string(cells.bytes) +
      ": it was deleted, evicted or truncated by something other than redbloom, and the items "
      "added to it can no longer be answered for (keep filter keys from eviction: "
      "maxmemory-policy noeviction; see docs/format.md)" +
      (window_slice && len == 0
           ? std::string("; or, if this client's clock runs behind the Redis server's by more than "
                         "a slice (or 1 s), the slice expired on time by the server's clock: keep "
                         "the clocks in step (NTP)")
           : std::string()) +
      (!companion || len == 0
           ? std::string()
           : "; or a Java client deleted the filter and made it again with the same parameters "
             "(Redisson's delete() and tryInit()): then delete '" +
                 DisplayKey(cells.meta, keys) +
                 "' and attach again to use the Java side's filter"));
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_BIT_STORE_IMPL_H_
