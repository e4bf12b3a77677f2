// How the Redis stores put commands on the wire: replies, transactions,
// streaming a large command while it is built, the order of a batch's cell
// operations, and the one helper that builds every EVAL. Internal.
#ifndef REDBLOOM_SRC_REDIS_REDIS_PIPELINE_H_
#define REDBLOOM_SRC_REDIS_REDIS_PIPELINE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/status.h"
#include "redis/redis_client.h"

namespace redbloom::internal {

// ---- Replies ----------------------------------------------------------------

std::string ReplyString(const redisReply* r);
bool IsArray(const redisReply* r, size_t min_elements);
// kInternal naming the command and what came back.
Status Unexpected(std::string_view what, const redisReply* r);
// Sends `cmd` and reads its single reply, failing on an error reply.
Result<ReplyPtr> Call(Connection& c, const CommandBuffer& cmd);
// Reads the replies of MULTI, `queued` commands and EXEC; returns EXEC's
// array, or the first error (queue-time errors make EXEC fail as a whole).
// On a connection in script-reads mode, reads the one reply of the script
// SendReads sent instead, the same array. `discarded`, if given, is set when
// EXEC's own reply says the server ran none of it (EXECABORT): a MULTI
// refused (an ACL without it) ran the commands one by one instead.
Result<ReplyPtr> ReadTransaction(Connection& c, size_t queued, bool* discarded = nullptr);
// How many replies a transaction of `queued` commands has on the wire: what
// to Drain when it will not be read.
size_t TransactionReplies(const Connection& c, size_t queued);
// Reads `n` replies and drops them (after an error mid-pipeline), so the
// connection can be reused; it is marked broken if that fails.
void Drain(Connection& c, size_t n);
// TYPE of a key, for error messages ("value of another type" when it
// cannot be asked: Connection::replies_pending).
std::string KeyType(Connection& c, std::string_view key);

// ---- Commands -----------------------------------------------------------------

// Reads while the server is out of memory. With maxmemory reached and the
// noeviction policy, Redis refuses every command queued in MULTI, reads
// included, so a check would fail although nothing needs memory; it still
// runs a script flagged no-writes (Redis 7). SendReads queues a read-only
// transaction (MULTI, read commands, EXEC) as it is, or, on a connection in
// script-reads mode, as one such script (scripts::kReads) with the same
// commands: a script runs atomically, so the reads stay one snapshot, and its
// reply is EXEC's array. kInternal for a command the script may not run.
Status SendReads(Connection& c, const CommandBuffer& transaction);
// Starts `EVAL script numkeys keys...` in *cmd; the caller then appends
// exactly `args` arguments (CommandBuffer checks the count). Scripts go with
// EVAL, not EVALSHA: Redis caches a script by the SHA1 of its text either way,
// EVAL costs about a microsecond more for these few hundred bytes, and it can
// never fail with NOSCRIPT after a restart or a SCRIPT FLUSH (which inside
// MULTI would let an add transaction's BITFIELD run without its guard).
void BeginEval(CommandBuffer* cmd, std::string_view script,
               std::initializer_list<std::string_view> keys, size_t args);
// The same with keys from a vector (scripts over a variable number of keys).
void BeginEval(CommandBuffer* cmd, std::string_view script, const std::vector<std::string>& keys,
               size_t args);

// Writes a command to the connection while it is still being built, every
// kStreamBytes. redis-server parses what has arrived (one object allocated
// per argument: most of its work for a BITFIELD of 28000 arguments) while the
// client formats the rest, so the two overlap without splitting the batch
// into more transactions, each of which costs the server another round of
// reads and writes.
class Streamer {
 public:
  static constexpr size_t kStreamBytes = 64 << 10;
  // The first write goes out sooner: until it arrives the server has nothing
  // to parse, so every byte formatted before it is time nothing overlaps.
  static constexpr size_t kFirstBytes = 8 << 10;

  // kReads: a read-only transaction, sent with SendReads (and then, in
  // script-reads mode, whole at Finish: it must be converted in one piece).
  enum class Kind { kAny, kReads };

  Streamer(Connection& c, CommandBuffer& cmd, Kind kind = Kind::kAny)
      : c_(c), cmd_(cmd), kind_(kind) {}

  Status MaybePush() {
    if (Held()) return Status::Ok();
    const size_t due = sent_ == 0 ? kFirstBytes : kStreamBytes;
    return cmd_.data().size() - sent_ >= due ? Push() : Status::Ok();
  }
  // Sends the rest. A command built with a wrong argument count (a bug) has
  // been partly sent already: the connection is closed, never reused.
  Status Finish();

 private:
  Status Push();
  bool Held() const { return kind_ == Kind::kReads && c_.script_reads(); }

  Connection& c_;
  CommandBuffer& cmd_;
  const Kind kind_;
  size_t sent_ = 0;
};

// The order to send a batch's cell ops in: ascending offset, ties in batch
// order (a stable LSD radix sort of at most 12 bits per pass: two passes for
// bitmaps of up to 2^24 bits). redis-server then walks the bitmap forwards
// instead of missing the cache on nearly every op, and every op still sees
// what it would in batch order: an op's previous value depends only on the
// earlier ops on its own cell. (Sorting by the top 12 bits only, in one pass,
// saved the client ~30 us per 1000 items but cost the server about as much.)
void SortedOrder(const uint64_t* offsets, size_t count, std::vector<uint32_t>* order);

// Non-zero 4-bit counters in `bytes`: each nibble's bits folded into its low bit.
uint64_t NonZeroNibbles(std::string_view bytes);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_PIPELINE_H_
