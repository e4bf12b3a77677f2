// redis://host[:port][/db] -- filters shared through one plain Redis server.
//
// Layout (docs/format.md): the bits are a Redis string at key NAME in SETBIT
// order, so the Java seed service and redis-cli see the same bits; the
// parameters live in a hash at {NAME}:meta that every client checks.
//
// Round trips are the cost on Redis (~40 us on loopback, far more across a
// network), so every operation is one pipelined round trip per batch, and a
// long add or check keeps the next batch in flight while it reads the
// previous answer.
#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <thread>
#include <utility>

#include "redis/redis_client.h"
#include "redis/redis_keys.h"
#include "redis/redis_scripts.h"
#include "redis/redis_url.h"
#include "stores.h"

namespace redbloom::internal {
namespace {

constexpr std::string_view kFormatVersion = "1";
// SETBIT and BITFIELD address at most 2^32 bits (512 MB) in one string.
constexpr uint64_t kMaxBitsPerKey = uint64_t{1} << 32;
// BITFIELD ops, pre-encoded: every op repeats these, so they are copied, not
// formatted, ~7000 times per batch.
constexpr std::string_view kSetU1 = "$3\r\nSET\r\n$2\r\nu1\r\n";
constexpr std::string_view kGetU1 = "$3\r\nGET\r\n$2\r\nu1\r\n";
constexpr std::string_view kIncrU4 = "$6\r\nINCRBY\r\n$2\r\nu4\r\n";
constexpr std::string_view kGetU4 = "$3\r\nGET\r\n$2\r\nu4\r\n";
constexpr std::string_view kOne = "$1\r\n1\r\n";
// The facade hands us this many batches at once so that a long add can keep
// one batch in flight while the previous answer is read (window of 2).
constexpr size_t kBatchesPerCall = 64;
// A call is sent in transactions of batch_items, not smaller ones to overlap
// client and server work within a call: on this kind of machine every extra
// round of reads and writes costs redis-server ~10-25 us of system time, and
// splitting 1000 items into 4 transactions raised the server's CPU per item
// from ~2.2 to ~2.7 us while saving the client ~0.3 us, a net loss once the
// server is the bottleneck (measured with bench/redis_bench.cc). Streaming a
// transaction while it is built (Streamer) overlaps them without that cost.
//
// Bulk reads and uploads move at most this much per command, so one command
// holds the server for a few milliseconds, not the ~1 s a 512 MB value takes.
constexpr size_t kBulkChunk = 4 << 20;
// A bulk load's upload deletes itself after an hour if its client died.
constexpr std::string_view kUploadTtlMillis = "3600000";
// Bytes of a bulk load merged per script: about a millisecond of server time
// (copy out, BITOP, copy back), so a load of any size never holds the server
// for long.
constexpr size_t kMergeChunk = 1 << 20;
// The same for counting filters, whose counters a Lua loop adds byte by byte
// (kAddRange): 16 KiB is about 2 ms of it.
constexpr size_t kCounterMergeChunk = 16 << 10;
// Adds of at most this many ops (items * k) go as one script (kAddSmall)
// instead of the guarded transaction: 9 items at k = 7. Measured here, wall
// time per call (redis-server CPU): 1 item 51 us (33) instead of 80 us (61);
// 10 items 94 us instead of 98 us; 18 items 128 us instead of 120 us, where
// Lua's slower BITFIELD starts to cost more than the transaction's framing.
constexpr uint64_t kSmallAddOps = 64;
// Batches of one add or check on the wire at once: the next batch travels
// while the previous answer is read. 3 measured no better than 2 here (the
// run-to-run noise of this shared machine was larger than any difference).
constexpr size_t kMaxInFlight = 2;

// The seven metadata fields every cell operation checks (the scripts'
// meta_state and the HMGET of a check), in this order.
constexpr std::string_view kCheckedFields[] = {"format", "kind",   "strategy", "encoding",
                                               "bits",   "hashes", "name"};
constexpr size_t kChecked = std::size(kCheckedFields);

std::vector<std::string> CheckedValues(std::string_view name, const FilterConfig& c) {
  return {std::string(kFormatVersion),
          std::string(FilterKindName(c.kind)),
          std::string(StrategyName(c.strategy)),
          std::string(EncodingName(c.encoding)),
          std::to_string(c.geometry.bits),
          std::to_string(c.geometry.hashes),
          std::string(name)};
}

// Every field of the metadata hash (docs/format.md, "Metadata").
std::vector<std::pair<std::string, std::string>> MetaFields(std::string_view name,
                                                            const FilterConfig& c,
                                                            std::string_view origin,
                                                            uint64_t expires_at_ms) {
  std::vector<std::pair<std::string, std::string>> f = {
      {"format", std::string(kFormatVersion)},
      {"name", std::string(name)},
      {"kind", std::string(FilterKindName(c.kind))},
      {"strategy", std::string(StrategyName(c.strategy))},
      {"encoding", std::string(EncodingName(c.encoding))},
      {"capacity", std::to_string(c.capacity)},
      {"error_rate", FormatDouble(c.error_rate)},
      {"bits", std::to_string(c.geometry.bits)},
      {"hashes", std::to_string(c.geometry.hashes)},
      {"capped", c.geometry.capped ? "1" : "0"},
      {"count", "0"},
      {"origin", std::string(origin)},
      {"expansion", FormatDouble(c.expansion)},
      {"window_ms", std::to_string(c.window_millis)},
      {"slices", std::to_string(c.slices)},
      {"ttl_seconds", std::to_string(c.ttl_seconds)},
      {"expires_at_ms", std::to_string(expires_at_ms)}};
  if (c.kind == FilterKind::kScaling) f.emplace_back("layers", "1");
  // Absent means derived from capacity and error rate (every filter before
  // given geometry existed); older readers ignore the field, derive another
  // geometry from the derived n and p, and refuse the filter.
  if (c.geometry_given) f.emplace_back("geometry", "given");
  return f;
}

std::string ReplyString(const redisReply* r) { return std::string(ReplyText(r)); }

Status Unexpected(std::string_view what, const redisReply* r) {
  std::string shape = r == nullptr ? "nothing" : "type " + std::to_string(r->type);
  if (!ReplyText(r).empty()) shape += " '" + ReplyString(r) + "'";
  return Status::Internal("unexpected redis reply to " + std::string(what) + ": " + shape);
}

bool IsArray(const redisReply* r, size_t min_elements) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements >= min_elements;
}

// A decoded metadata hash.
struct StoredMeta {
  std::string name;
  FilterConfig config;
  int64_t count = 0;           // may be briefly negative (see RedisBitStore::ParseCount)
  uint64_t expires_at_ms = 0;  // 0: never
};

// Parses and validates an HGETALL reply. Anything missing, malformed or of an
// unknown version is kDataLoss: redbloom never guesses at bits it cannot
// interpret, since a wrong guess reads as "absent".
Result<StoredMeta> ParseMeta(const redisReply* r, std::string_view key_display) {
  auto corrupt = [&](const std::string& why) {
    return Status::DataLoss("metadata '" + std::string(key_display) + "': " + why);
  };
  if (!IsArray(r, 0) || r->elements % 2 != 0) return corrupt("not a field/value list");
  std::map<std::string, std::string, std::less<>> f;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    f[ReplyString(r->element[i])] = ReplyString(r->element[i + 1]);
  }
  auto get = [&](std::string_view field) -> Result<std::string> {
    auto it = f.find(field);
    if (it == f.end()) return corrupt("field '" + std::string(field) + "' is missing");
    return it->second;
  };
  auto number = [&](std::string_view field) -> Result<uint64_t> {
    REDBLOOM_ASSIGN_OR_RETURN(std::string text, get(field));
    Result<uint64_t> v = ParseUint64(text);
    if (!v.ok()) {
      return corrupt("field '" + std::string(field) + "' = '" + text + "' is not a count");
    }
    return *v;
  };
  auto real = [&](std::string_view field) -> Result<double> {
    REDBLOOM_ASSIGN_OR_RETURN(std::string text, get(field));
    Result<double> v = ParseDouble(text);
    if (!v.ok()) {
      return corrupt("field '" + std::string(field) + "' = '" + text + "' is not a number");
    }
    return *v;
  };

  REDBLOOM_ASSIGN_OR_RETURN(std::string format, get("format"));
  if (format != kFormatVersion) {
    return corrupt("format version '" + format + "' is not supported (this build reads version " +
                   std::string(kFormatVersion) + ")");
  }
  StoredMeta meta;
  REDBLOOM_ASSIGN_OR_RETURN(meta.name, get("name"));
  FilterOptions o;
  REDBLOOM_ASSIGN_OR_RETURN(std::string kind, get("kind"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string strategy, get("strategy"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string encoding, get("encoding"));
  auto parsed_kind = ParseFilterKind(kind);
  auto parsed_strategy = ParseStrategy(strategy);
  auto parsed_encoding = ParseEncoding(encoding);
  if (!parsed_kind.ok()) return corrupt("unknown kind '" + kind + "'");
  if (!parsed_strategy.ok()) return corrupt("unknown strategy '" + strategy + "'");
  if (!parsed_encoding.ok()) return corrupt("unknown encoding '" + encoding + "'");
  o.kind = *parsed_kind;
  o.strategy = *parsed_strategy;
  o.encoding = *parsed_encoding;
  REDBLOOM_ASSIGN_OR_RETURN(o.error_rate, real("error_rate"));
  REDBLOOM_ASSIGN_OR_RETURN(o.capacity, number("capacity"));
  const uint64_t stored_capacity = o.capacity;
  const double stored_error_rate = o.error_rate;
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t bits, number("bits"));
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t hashes, number("hashes"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string capped, get("capped"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string count, get("count"));
  if (auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), meta.count);
      count.empty() || ec != std::errc() || end != count.data() + count.size()) {
    return corrupt("field 'count' = '" + count + "' is not a count");
  }
  REDBLOOM_ASSIGN_OR_RETURN(double expansion, real("expansion"));
  REDBLOOM_ASSIGN_OR_RETURN(o.window_millis, number("window_ms"));
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t slices, number("slices"));
  REDBLOOM_ASSIGN_OR_RETURN(o.ttl_seconds, number("ttl_seconds"));
  REDBLOOM_ASSIGN_OR_RETURN(meta.expires_at_ms, number("expires_at_ms"));
  if (capped != "0" && capped != "1") return corrupt("capped '" + capped + "' is not 0 or 1");
  if (auto it = f.find("origin");
      it != f.end() && it->second != "create" && it->second != "attach") {
    return corrupt("origin '" + it->second + "' is not create or attach");
  }
  if (slices > kMaxSlices) return corrupt("slices " + std::to_string(slices) + " is too many");
  o.slices = static_cast<uint32_t>(slices);
  // Options carry the default expansion for kinds that do not use it.
  if (o.kind == FilterKind::kScaling) {
    o.expansion = expansion;
    REDBLOOM_RETURN_IF_ERROR(number("layers").status());
  } else if (expansion != 0) {
    return corrupt("expansion is set on a " + kind + " filter");
  }
  bool geometry_given = false;
  if (auto it = f.find("geometry"); it != f.end()) {
    if (it->second != "given" && it->second != "derived") {
      return corrupt("geometry '" + it->second + "' is not given or derived");
    }
    geometry_given = it->second == "given";
  }
  if (geometry_given) {
    o.bits = bits;
    o.hashes = static_cast<uint32_t>(std::min<uint64_t>(hashes, UINT32_MAX));
    o.capacity = 0;
    o.error_rate = 0;
  }
  Result<FilterConfig> config = MakeConfig(o);
  if (!config.ok()) return corrupt("invalid parameters: " + config.status().message());
  if (geometry_given &&
      (config->capacity != stored_capacity || config->error_rate != stored_error_rate)) {
    return corrupt("capacity and error_rate do not match the ones given bits and hashes derive");
  }
  // The geometry is derived data: recomputing it catches metadata written by
  // a build whose sizing differs from ours, or edited by hand.
  const Geometry& g = config->geometry;
  if (g.bits != bits || g.hashes != hashes || g.capped != (capped == "1")) {
    return corrupt("stored geometry (bits=" + std::to_string(bits) +
                   " hashes=" + std::to_string(hashes) +
                   ") does not match its capacity and error rate (bits=" + std::to_string(g.bits) +
                   " hashes=" + std::to_string(g.hashes) + ")");
  }
  meta.config = *config;
  return meta;
}

Status CheckSize(std::string_view what, const Geometry& g, uint32_t cell_bits) {
  if (g.bits * cell_bits > kMaxBitsPerKey) {
    return Status::InvalidArgument(
        std::string(what) + " needs " + std::to_string(g.bits * cell_bits) + " bits (" +
        std::to_string((g.bits * cell_bits / 8) >> 20) +
        " MiB), but one Redis key holds at most 2^32 bits (512 MiB); use a larger error rate, "
        "a smaller capacity, or split the filter");
  }
  return Status::Ok();
}

Status CollisionStatus(std::string_view name, std::string_view owner, std::string_view meta_key) {
  return Status::Conflict("filter '" + std::string(name) + "' shares its metadata key '" +
                          std::string(meta_key) + "' with filter '" + std::string(owner) +
                          "' (names 'x' and '{x}' map to the same key); choose another name");
}

// State shared by a store and the bit stores opened from it.
struct Shared {
  Shared(const RedisUrl& u, ServerParams server)
      : pool(std::move(server), u.options.pool_size), options(u.options), keys(u.keys) {}

  ConnectionPool pool;
  const StoreOptions options;
  const KeyMode keys;

  // Runs `op` on a pooled connection, retrying with backoff after a lost
  // connection (kUnavailable). A failure before anything was written is
  // always safe to retry; after a write, only when `idempotent`, since the
  // server may have executed the command before the connection died.
  // Timeouts (kDeadlineExceeded) are not retried: a server too slow for one
  // attempt gets no faster from a second one, and the caller's time is up.
  template <typename Op>
  Status Run(bool idempotent, Op&& op) {
    for (int attempt = 0;; ++attempt) {
      Status s;
      bool wrote = false;
      {
        Result<ConnectionPool::Lease> lease = pool.Acquire();
        if (!lease.ok()) {
          s = lease.status();
        } else {
          s = op(**lease);
          wrote = (*lease)->wrote();
        }
      }
      if (s.ok() || s.code() != StatusCode::kUnavailable || IsPermanentFailure(s) ||
          attempt >= options.max_retries || (wrote && !idempotent)) {
        return s;
      }
      std::this_thread::sleep_for(Backoff(attempt));
    }
  }

  // 25 ms, 50 ms, 100 ms ... capped at 1 s, each scaled by a random factor
  // in [0.5, 1) so that many clients cut off together do not reconnect in
  // lockstep.
  static std::chrono::milliseconds Backoff(int attempt) {
    thread_local std::minstd_rand rng(std::random_device{}());
    const int64_t base = std::min<int64_t>(1000, int64_t{25} << std::min(attempt, 10));
    return std::chrono::milliseconds(base / 2 + static_cast<int64_t>(rng() % (base / 2 + 1)));
  }
};

// Reads `n` replies and drops them (after an error mid-pipeline), so the
// connection can be reused; it is marked broken if that fails.
void Drain(Connection& c, size_t n) {
  for (size_t i = 0; i < n && !c.broken(); ++i) {
    if (!c.Read().ok()) return;
  }
}

// TYPE of a key, for error messages.
std::string KeyType(Connection& c, std::string_view key) {
  CommandBuffer cmd;
  cmd.Command({"TYPE", key});
  if (!c.Append(cmd).ok()) return "value of another type";
  Result<ReplyPtr> r = c.ReadOk();
  if (!r.ok()) return "value of another type";
  return ReplyString(r->get());
}

// Sends `cmd` and reads its single reply, failing on an error reply.
Result<ReplyPtr> Call(Connection& c, const CommandBuffer& cmd) {
  REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
  return c.ReadOk();
}

// Reads the replies of MULTI, `queued` commands and EXEC; returns EXEC's
// array, or the first error (queue-time errors make EXEC fail as a whole).
Result<ReplyPtr> ReadTransaction(Connection& c, size_t queued) {
  Status first_error;
  for (size_t i = 0; i < queued + 1; ++i) {  // +OK, then +QUEUED each
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
    if (r->type == REDIS_REPLY_ERROR && first_error.ok()) {
      first_error = ReplyErrorStatus(ReplyText(r.get()), c.server());
    }
  }
  REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, c.Read());
  if (!first_error.ok()) return first_error;
  if (exec->type == REDIS_REPLY_ERROR) return ReplyErrorStatus(ReplyText(exec.get()), c.server());
  if (!IsArray(exec.get(), queued)) return Unexpected("EXEC", exec.get());
  return exec;
}

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

  Streamer(Connection& c, CommandBuffer& cmd) : c_(c), cmd_(cmd) {}

  Status MaybePush() {
    const size_t due = sent_ == 0 ? kFirstBytes : kStreamBytes;
    return cmd_.data().size() - sent_ >= due ? Push() : Status::Ok();
  }
  // Sends the rest. A command built with a wrong argument count (a bug) has
  // been partly sent already: the connection is closed, never reused.
  Status Finish() {
    if (Status s = cmd_.Validate(); !s.ok()) {
      c_.MarkBroken();
      return s;
    }
    return Push();
  }

 private:
  Status Push() {
    REDBLOOM_RETURN_IF_ERROR(c_.AppendRaw(std::string_view(cmd_.data()).substr(sent_)));
    sent_ = cmd_.data().size();
    return c_.Flush();
  }

  Connection& c_;
  CommandBuffer& cmd_;
  size_t sent_ = 0;
};

// The order to send a batch's cell ops in: ascending offset, ties in batch
// order (a stable LSD radix sort of at most 12 bits per pass: two passes for
// bitmaps of up to 2^24 bits). redis-server then walks the bitmap forwards
// instead of missing the cache on nearly every op, and every op still sees
// what it would in batch order: an op's previous value depends only on the
// earlier ops on its own cell. (Sorting by the top 12 bits only, in one pass,
// saved the client ~30 us per 1000 items but cost the server about as much.)
void SortedOrder(const uint64_t* offsets, size_t count, std::vector<uint32_t>* order) {
  uint64_t highest = 0;
  for (size_t i = 0; i < count; ++i) highest = std::max(highest, offsets[i]);
  const int width = static_cast<int>(std::bit_width(highest));
  const int passes = (width + 11) / 12;
  order->resize(count);
  for (size_t i = 0; i < count; ++i) (*order)[i] = static_cast<uint32_t>(i);
  if (passes == 0) return;
  const int digit_bits = (width + passes - 1) / passes;
  const uint64_t mask = (uint64_t{1} << digit_bits) - 1;
  std::vector<uint32_t> other(count);
  std::vector<uint32_t> start(mask + 1);
  for (int shift = 0; shift < width; shift += digit_bits) {
    std::fill(start.begin(), start.end(), 0);
    for (uint32_t i : *order) ++start[(offsets[i] >> shift) & mask];
    uint32_t sum = 0;
    for (auto& b : start) sum += std::exchange(b, sum);
    for (uint32_t i : *order) other[start[(offsets[i] >> shift) & mask]++] = i;
    order->swap(other);
  }
}

// Non-zero 4-bit counters in `bytes`: each nibble's bits folded into its low bit.
uint64_t NonZeroNibbles(std::string_view bytes) {
  uint64_t n = 0;
  for (unsigned char b : bytes) n += ((b & 0xF0) != 0) + ((b & 0x0F) != 0);
  return n;
}

// The cells one bit store works on: a filter's main array or one part.
struct Cells {
  std::string display;      // "filter 'x'" or "part 3 of filter 'x'", for messages
  std::string bitmap;       // the key holding the cells
  std::string scratch;      // its add transaction's scratch key
  std::string count_hash;   // the hash holding its item count ...
  std::string count_field;  // ... in this field
  Geometry geometry;        // offsets are in [0, geometry.bits)
  uint32_t cell_bits = 1;   // 1, or 4 for counting filters
  uint64_t expires_at_ms = 0;

  uint64_t data_bytes() const { return (geometry.bits * cell_bits + 7) / 8; }
  bool counting() const { return cell_bits == 4; }
};

class RedisBitStore final : public BitStore {
 public:
  RedisBitStore(std::shared_ptr<Shared> shared, std::string name, const FilterConfig& config,
                Cells cells)
      : shared_(std::move(shared)),
        name_(std::move(name)),
        meta_key_(KeysFor(name_, shared_->keys).meta),
        checked_(CheckedValues(name_, config)),
        cells_(std::move(cells)) {}

  size_t preferred_batch() const override { return shared_->options.batch_items * kBatchesPerCall; }

  // Adds are idempotent for the bits (a bit set twice stays set), so a batch
  // whose connection died is re-sent. If the lost attempt had in fact run,
  // the retry finds those bits set and reports the items as not new, and the
  // count misses them. The count can over-count only when a lost attempt
  // carried the count of earlier batches (see AddFrom) and had run.
  // Counting filters are not retried: a second increment would be a second add.
  Status Add(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed) override {
    REDBLOOM_RETURN_IF_ERROR(CheckOffsets(offsets, items, k));
    if (items == 0) return Status::Ok();
    if (uint64_t{items} * k <= kSmallAddOps) return AddSmall(offsets, items, k, changed);
    size_t done = 0;
    // Added items whose count update has not been sent: the last call's, and
    // then each batch's until the next batch's guard carries it.
    uint64_t uncounted = pending_.exchange(0);
    Status s = shared_->Run(/*idempotent=*/!cells_.counting(), [&](Connection& c) {
      Status added = AddFrom(c, offsets, items, k, changed, &done, &uncounted);
      if (added.ok() && uncounted != 0) {
        // The last batch's count goes out at once, without waiting for its
        // answer (the pool reads it later): other clients see the count as
        // soon as the add returns, at the price of one more small command
        // per call (~10-25 us of server time here; nothing at batch 1000).
        CommandBuffer cmd;
        AppendCount(&cmd, uncounted);
        if (c.Append(cmd).ok() && c.Flush().ok()) {
          c.OweReply();
          uncounted = 0;
        }
      }
      return added;
    });
    // What could not be sent rides with this handle's next command.
    pending_ += uncounted;
    return s;
  }

  // A few items: one script (kAddSmall), which also carries the count.
  Status AddSmall(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed) {
    const uint64_t uncounted = pending_.exchange(0);
    Status s = shared_->Run(/*idempotent=*/!cells_.counting(), [&](Connection& c) -> Status {
      return EvalPerItem(
          c, scripts::kAddSmall, "the small add script", 5,
          [&](CommandBuffer& cmd) {
            cmd.Arg(uncounted);
            cmd.Arg(cells_.count_field);
            cmd.Arg(cells_.expires_at_ms);
            cmd.Arg(uint64_t{k});
            cmd.Arg(cells_.counting() ? "1" : "0");
          },
          offsets, items, k, changed);
    });
    // A count the script may not have applied rides with the next command.
    if (!s.ok()) pending_ += uncounted;
    return s;
  }

  // A count that could not be sent is sent now, best effort.
  ~RedisBitStore() override {
    const uint64_t uncounted = pending_.exchange(0);
    if (uncounted == 0) return;
    (void)shared_->Run(/*idempotent=*/false, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      AppendCount(&cmd, uncounted);
      return Call(c, cmd).status();
    });
  }

  Status Test(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* present) override {
    REDBLOOM_RETURN_IF_ERROR(CheckOffsets(offsets, items, k));
    size_t done = 0;
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) {
      return TestFrom(c, offsets, items, k, present, &done);
    });
  }

  // Not retried: removing twice could take away another add of the item.
  Status Remove(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* removed) override {
    if (!cells_.counting()) {
      return Status::Unimplemented(
          "items can be removed only from counting filters (create with --counting)");
    }
    REDBLOOM_RETURN_IF_ERROR(CheckOffsets(offsets, items, k));
    if (items == 0) return Status::Ok();
    return shared_->Run(/*idempotent=*/false, [&](Connection& c) -> Status {
      // Pending adds are counted first, so the removes below never take the
      // stored count under what this handle added.
      if (const uint64_t uncounted = pending_.exchange(0); uncounted != 0) {
        CommandBuffer count;
        AppendCount(&count, uncounted);
        Status s = Call(c, count).status();
        if (!s.ok()) {
          pending_ += uncounted;
          return s;
        }
      }
      // One script per batch: the server runs ~2 commands per item in Lua.
      const size_t batch = shared_->options.batch_items;
      for (size_t first = 0; first < items; first += batch) {
        const size_t n = std::min(batch, items - first);
        REDBLOOM_RETURN_IF_ERROR(EvalPerItem(
            c, scripts::kRemove, "remove", 2,
            [&](CommandBuffer& cmd) {
              cmd.Arg(cells_.count_field);
              cmd.Arg(uint64_t{k});
            },
            offsets + first * k, n, k, removed == nullptr ? nullptr : removed + first));
      }
      return Status::Ok();
    });
  }

  Result<uint64_t> ItemCount() override {
    uint64_t count = 0;
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"MULTI"});
      AppendMetaCheck(&cmd);
      cmd.Command({"HGET", cells_.count_hash, cells_.count_field});
      cmd.Command({"EXEC"});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 2));
      REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[0]));
      REDBLOOM_ASSIGN_OR_RETURN(count, ParseCount(exec->element[1]));
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return count;
  }

  Result<FilterStats> Stats() override {
    FilterStats stats;
    if (cells_.counting()) {
      // BITCOUNT counts bits, not non-zero counters: read the cells instead.
      std::string chunk;
      for (uint64_t offset = 0; offset < cells_.data_bytes(); offset += kBulkChunk) {
        const size_t len =
            static_cast<size_t>(std::min<uint64_t>(kBulkChunk, cells_.data_bytes() - offset));
        REDBLOOM_RETURN_IF_ERROR(ReadBits(offset, len, &chunk));
        stats.bits_set += NonZeroNibbles(chunk);
      }
      REDBLOOM_ASSIGN_OR_RETURN(stats.items_added, ItemCount());
      return stats;
    }
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"MULTI"});
      cmd.Command({"BITCOUNT", cells_.bitmap});
      AppendMetaCheck(&cmd);
      cmd.Command({"HGET", cells_.count_hash, cells_.count_field});
      cmd.Command({"EXEC"});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 3));
      REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[1]));
      const redisReply* count = exec->element[0];
      if (count->type == REDIS_REPLY_ERROR) return BitmapError(c, count);
      if (count->type != REDIS_REPLY_INTEGER || count->integer < 0) {
        return Unexpected("BITCOUNT", count);
      }
      stats.bits_set = static_cast<uint64_t>(count->integer);
      REDBLOOM_ASSIGN_OR_RETURN(stats.items_added, ParseCount(exec->element[2]));
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return stats;
  }

  Status Clear() override {
    // Idempotent: clearing twice leaves the same empty filter.
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Begin(3 + 3 + kChecked + 3);
      cmd.Arg("EVAL");
      cmd.Arg(scripts::kClear);
      cmd.Arg("3");
      cmd.Arg(meta_key_);
      cmd.Arg(cells_.bitmap);
      cmd.Arg(cells_.count_hash);
      for (const auto& v : checked_) cmd.Arg(v);
      cmd.Arg(cells_.data_bytes());
      cmd.Arg(cells_.expires_at_ms);
      cmd.Arg(cells_.count_field);
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
      if (r->type == REDIS_REPLY_ERROR) return ScriptError(c, r.get());
      pending_ = 0;
      return Status::Ok();
    });
  }

  Status ReadBits(uint64_t offset, size_t len, std::string* out) override {
    out->clear();
    if (len == 0) return Status::Ok();
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"MULTI"});
      cmd.Begin(4);
      cmd.Arg("GETRANGE");
      cmd.Arg(cells_.bitmap);
      cmd.Arg(offset);
      cmd.Arg(offset + len - 1);
      AppendMetaCheck(&cmd);
      cmd.Command({"EXEC"});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 2));
      REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[1]));
      const redisReply* bytes = exec->element[0];
      if (bytes->type == REDIS_REPLY_ERROR) return BitmapError(c, bytes);
      if (bytes->type != REDIS_REPLY_STRING) return Unexpected("GETRANGE", bytes);
      out->assign(bytes->str, bytes->len);
      return Status::Ok();
    });
  }

  // Uploads `bitmap` to a temporary key piece by piece (all-zero pieces are
  // skipped: a load of 1e6 items into a 1e8-item filter sends ~1% of it), and
  // merges each piece with one short script. ORing bits is idempotent, so a
  // plain filter's merge is retried as a whole (a retry after a lost answer
  // may add `new_items` to the count twice). Adding counters is not: a
  // counting filter's merge is never retried, and one that fails part way
  // has added some pieces; running it again counts those twice, which only
  // keeps items present longer, never makes one absent.
  Status OrBits(std::string_view bitmap, uint64_t new_items) override {
    const size_t chunk = cells_.counting() ? kCounterMergeChunk : kMergeChunk;
    const std::string_view script = cells_.counting() ? scripts::kAddRange : scripts::kOrRange;
    if (bitmap.size() > cells_.data_bytes()) {
      return Status::InvalidArgument("bitmap of " + std::to_string(bitmap.size()) +
                                     " bytes is larger than the filter's " +
                                     std::to_string(cells_.data_bytes()));
    }
    // Pending adds are counted along with the load.
    const uint64_t uncounted = pending_.exchange(0);
    Status status = shared_->Run(/*idempotent=*/!cells_.counting(), [&](Connection& c) -> Status {
      thread_local std::mt19937_64 rng(std::random_device{}());
      char suffix[17];
      std::snprintf(suffix, sizeof(suffix), "%016llx", static_cast<unsigned long long>(rng()));
      const std::string upload = TempKeyFor(name_, shared_->keys, suffix);
      const std::string scratch = upload + ":or";
      // Non-zero pieces only; the item count rides with the last one.
      std::vector<size_t> pieces;
      for (size_t offset = 0; offset < bitmap.size(); offset += chunk) {
        const std::string_view piece = bitmap.substr(offset, chunk);
        if (piece.find_first_not_of('\0') != std::string_view::npos) pieces.push_back(offset);
      }
      const uint64_t count = new_items + uncounted;
      if (pieces.empty() && count == 0) return Status::Ok();
      if (pieces.empty()) pieces.push_back(bitmap.size());  // only the count to add
      size_t in_flight = 0;
      for (size_t i = 0; i < pieces.size(); ++i) {
        const size_t offset = pieces[i];
        const bool last = i + 1 == pieces.size();
        CommandBuffer cmd;
        if (offset < bitmap.size()) {
          // The upload expires by itself should this client die before the
          // script deletes it.
          cmd.Command({"SET", upload, bitmap.substr(offset, chunk), "PX", kUploadTtlMillis});
        }
        cmd.Begin(3 + 5 + kChecked + 3);
        cmd.Arg("EVAL");
        cmd.Arg(script);
        cmd.Arg("5");
        cmd.Arg(meta_key_);
        cmd.Arg(upload);
        cmd.Arg(cells_.bitmap);
        cmd.Arg(cells_.count_hash);
        cmd.Arg(scratch);
        for (const auto& v : checked_) cmd.Arg(v);
        cmd.Arg(static_cast<uint64_t>(offset));
        cmd.Arg(last ? count : uint64_t{0});
        cmd.Arg(cells_.count_field);
        REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
        in_flight += offset < bitmap.size() ? 2 : 1;
        // Keep about two pieces in flight: the next upload travels while the
        // server merges the previous one.
        while (in_flight > 4 || (last && in_flight > 0)) {
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
          if (r->type == REDIS_REPLY_ERROR) {
            const Status err = ScriptError(c, r.get());
            Drain(c, in_flight - 1);
            return err;
          }
          --in_flight;
        }
      }
      return Status::Ok();
    });
    if (!status.ok()) pending_ += uncounted;
    return status;
  }

 private:
  Status CheckOffsets(const uint64_t* offsets, size_t items, uint32_t k) const {
    if (k != cells_.geometry.hashes) {
      return Status::InvalidArgument("expected " + std::to_string(cells_.geometry.hashes) +
                                     " offsets per item, got " + std::to_string(k));
    }
    for (size_t i = 0; i < items * k; ++i) {
      if (offsets[i] >= cells_.geometry.bits) {
        return Status::InvalidArgument("offset " + std::to_string(offsets[i]) + " is outside the " +
                                       std::to_string(cells_.geometry.bits) + " cells of " +
                                       cells_.display);
      }
    }
    return Status::Ok();
  }

  // HMGET of the checked fields, compared by CheckMeta.
  void AppendMetaCheck(CommandBuffer* cmd) const {
    cmd->Begin(2 + kChecked);
    cmd->Arg("HMGET");
    cmd->Arg(meta_key_);
    for (std::string_view f : kCheckedFields) cmd->Arg(f);
  }

  Status CheckMeta(const redisReply* r) const {
    if (r->type == REDIS_REPLY_ERROR) {
      return Status::DataLoss("metadata '" +
                              DisplayKey(KeysFor(name_, KeyMode::kPlain).meta, shared_->keys) +
                              "' is not a hash: " + ReplyString(r));
    }
    if (!IsArray(r, kChecked)) return Unexpected("HMGET", r);
    if (r->element[0]->type == REDIS_REPLY_NIL) return Gone();
    for (size_t i = 0; i < kChecked; ++i) {
      if (ReplyText(r->element[i]) != checked_[i]) return ConfigChangedStatus(name_);
    }
    return Status::Ok();
  }

  // The stored count plus this handle's pending adds. The stored value can
  // be briefly negative: a remove here may land before another client's
  // pending count of the add it undoes; it reads as 0 then.
  Result<uint64_t> ParseCount(const redisReply* r) const {
    int64_t stored = 0;
    if (r->type != REDIS_REPLY_NIL) {  // nil: a part whose count was never set
      const std::string_view text = ReplyText(r);
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), stored);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        return Status::DataLoss(cells_.display + ": corrupt item count '" + ReplyString(r) + "'");
      }
    }
    const int64_t total = stored + static_cast<int64_t>(pending_.load());
    return static_cast<uint64_t>(std::max<int64_t>(0, total));
  }

  Status Gone() const {
    return Status::NotFound("filter '" + name_ + "' does not exist (it was dropped)");
  }

  // An error reply from a guarded script (REDBLOOM_GONE / REDBLOOM_CHANGED)
  // or from Redis.
  Status ScriptError(Connection& c, const redisReply* r) const {
    const std::string_view text = ReplyText(r);
    // Redis 7 passes "CODE message" through; older servers may prefix "ERR ".
    if (text.find("REDBLOOM_GONE") != std::string_view::npos) return Gone();
    if (text.find("REDBLOOM_CHANGED") != std::string_view::npos) return ConfigChangedStatus(name_);
    return BitmapError(c, r);
  }

  // An error reply from a command on the cells' key.
  Status BitmapError(Connection& c, const redisReply* r) const {
    if (ReplyText(r).find("WRONGTYPE") != std::string_view::npos) {
      const bool main = cells_.bitmap == KeysFor(name_, shared_->keys).bitmap;
      return WrongTypeStatus(main ? DisplayKey(name_, shared_->keys) : "of " + cells_.display,
                             KeyType(c, cells_.bitmap));
    }
    return ReplyErrorStatus(ReplyText(r), c.server());
  }

  // EVAL of a script that works on the cells item by item (kAddSmall,
  // kRemove). KEYS: meta, cells, count hash. ARGV: the seven checked fields,
  // the `extra_args` that `extras` appends, then `n` items' k offsets each.
  // The script answers one '0'/'1' per item, copied to out[0, n) if given.
  template <typename Extras>
  Status EvalPerItem(Connection& c, std::string_view script, std::string_view what,
                     size_t extra_args, Extras&& extras, const uint64_t* offsets, size_t n,
                     uint32_t k, uint8_t* out) const {
    CommandBuffer cmd;
    cmd.Begin(3 + 3 + kChecked + extra_args + n * k);
    cmd.Arg("EVAL");
    cmd.Arg(script);
    cmd.Arg("3");
    cmd.Arg(meta_key_);
    cmd.Arg(cells_.bitmap);
    cmd.Arg(cells_.count_hash);
    for (const auto& v : checked_) cmd.Arg(v);
    extras(cmd);
    for (size_t i = 0; i < n * k; ++i) cmd.Arg(offsets[i]);
    REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
    if (r->type == REDIS_REPLY_ERROR) return ScriptError(c, r.get());
    if (r->type != REDIS_REPLY_STRING || r->len != n) return Unexpected(what, r.get());
    if (out != nullptr) {
      for (size_t i = 0; i < n; ++i) out[i] = r->str[i] == '1' ? 1 : 0;
    }
    return Status::Ok();
  }

  // A batch whose answer has not been read yet.
  struct InFlight {
    size_t first;                 // its first item
    size_t n;                     // its number of items
    std::vector<uint32_t> order;  // op i of the command is cell order[i] of the batch
  };

  // EVAL of the count-only script, adding `delta` to the item count.
  void AppendCount(CommandBuffer* cmd, uint64_t delta) const {
    cmd->Begin(3 + 2 + kChecked + 2);
    cmd->Arg("EVAL");
    cmd->Arg(scripts::kAddCount);
    cmd->Arg("2");
    cmd->Arg(meta_key_);
    cmd->Arg(cells_.count_hash);
    for (const auto& v : checked_) cmd->Arg(v);
    cmd->Arg(delta);
    cmd->Arg(cells_.count_field);
  }

  // Builds and sends one add transaction, streaming it (see Streamer).
  // `offsets` holds the batch's `count` offsets.
  Status SendAdd(Connection& c, CommandBuffer* cmd, const uint64_t* offsets, size_t count,
                 const std::vector<uint32_t>& order, uint64_t count_delta) const {
    cmd->Clear();
    Streamer stream(c, *cmd);
    cmd->Command({"MULTI"});
    // EVAL guard 4 meta bitmap scratch count_hash <checked> delta field
    cmd->Begin(3 + 4 + kChecked + 2);
    cmd->Arg("EVAL");
    cmd->Arg(scripts::kAddGuard);
    cmd->Arg("4");
    cmd->Arg(meta_key_);
    cmd->Arg(cells_.bitmap);
    cmd->Arg(cells_.scratch);
    cmd->Arg(cells_.count_hash);
    for (const auto& v : checked_) cmd->Arg(v);
    cmd->Arg(count_delta);
    cmd->Arg(cells_.count_field);
    if (cells_.counting()) {
      // SAT: a counter stops at 15 instead of wrapping to 0 (a false negative).
      cmd->Begin(4 + 4 * count);
      cmd->Arg("BITFIELD");
      cmd->Arg(cells_.scratch);
      cmd->Arg("OVERFLOW");
      cmd->Arg("SAT");
      for (size_t i = 0; i < count; ++i) {
        cmd->Raw(kIncrU4, 2);
        cmd->Arg('#', offsets[order[i]]);
        cmd->Raw(kOne, 1);
        if (i % 256 == 255) REDBLOOM_RETURN_IF_ERROR(stream.MaybePush());
      }
    } else {
      cmd->Begin(2 + 4 * count);
      cmd->Arg("BITFIELD");
      cmd->Arg(cells_.scratch);
      for (size_t i = 0; i < count; ++i) {
        cmd->Raw(kSetU1, 2);
        cmd->Arg(offsets[order[i]]);
        cmd->Raw(kOne, 1);
        if (i % 256 == 255) REDBLOOM_RETURN_IF_ERROR(stream.MaybePush());
      }
    }
    cmd->Begin(3 + 3 + kChecked + 1);
    cmd->Arg("EVAL");
    cmd->Arg(scripts::kAddCommit);
    cmd->Arg("3");
    cmd->Arg(meta_key_);
    cmd->Arg(cells_.bitmap);
    cmd->Arg(cells_.scratch);
    for (const auto& v : checked_) cmd->Arg(v);
    cmd->Arg(cells_.expires_at_ms);
    cmd->Command({"EXEC"});
    return stream.Finish();
  }

  // Adds items [*done, items) on one connection, advancing *done past every
  // batch whose answer was read.
  Status AddFrom(Connection& c, const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed,
                 size_t* done, uint64_t* uncounted) {
    const size_t batch = shared_->options.batch_items;
    CommandBuffer cmd;  // hiredis copies each command, so one buffer serves all
    std::deque<InFlight> in_flight;
    size_t next = *done;
    auto send = [&]() -> Status {
      const size_t n = std::min(batch, items - next);
      InFlight f{next, n, {}};
      SortedOrder(offsets + next * k, n * k, &f.order);
      // The count of earlier batches rides along with this one's guard. If
      // this transaction's answer is lost but it ran, a retry sends that
      // count again: the one way the count can over-count.
      const uint64_t delta = *uncounted;
      *uncounted = 0;
      REDBLOOM_RETURN_IF_ERROR(SendAdd(c, &cmd, offsets + next * k, n * k, f.order, delta));
      in_flight.push_back(std::move(f));
      next += n;
      return Status::Ok();
    };
    while (next < items && in_flight.size() < kMaxInFlight) REDBLOOM_RETURN_IF_ERROR(send());
    while (!in_flight.empty()) {
      const InFlight f = std::move(in_flight.front());
      in_flight.pop_front();
      Status s = ReadAddReply(c, f, k, changed, uncounted);
      if (!s.ok()) {
        Drain(c, in_flight.size() * 5);
        return s;
      }
      *done = f.first + f.n;
      if (next < items) REDBLOOM_RETURN_IF_ERROR(send());
    }
    return Status::Ok();
  }

  Status ReadAddReply(Connection& c, const InFlight& f, uint32_t k, uint8_t* changed,
                      uint64_t* uncounted) {
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 3));
    const redisReply* guard = exec->element[0];
    const redisReply* cells = exec->element[1];
    const redisReply* commit = exec->element[2];
    if (guard->type == REDIS_REPLY_ERROR) return ScriptError(c, guard);
    if (cells->type == REDIS_REPLY_ERROR) return BitmapError(c, cells);
    if (commit->type != REDIS_REPLY_INTEGER || commit->integer != 1) {
      return Unexpected("the add transaction's commit", commit);
    }
    if (!IsArray(cells, f.n * k)) return Unexpected("BITFIELD", cells);
    // BITFIELD SET answers each bit's previous value, INCRBY each counter's
    // new one: an item is new when it turned at least one cell on. The ops
    // ran in f.order, where ops on one cell keep batch order, so of two items
    // sharing a bit the earlier one sees it unset: "new" is as if the items
    // were added one by one. turned_on is back in batch order.
    const long long fresh = cells_.counting() ? 1 : 0;
    std::vector<uint8_t> turned_on(f.n * k);
    for (size_t i = 0; i < f.n * k; ++i) {
      turned_on[f.order[i]] = cells->element[i]->integer == fresh ? 1 : 0;
    }
    uint64_t added = 0;
    for (size_t i = 0; i < f.n; ++i) {
      bool was_new = false;
      for (uint32_t j = 0; j < k; ++j) was_new |= turned_on[i * k + j] != 0;
      if (changed != nullptr) changed[f.first + i] = was_new ? 1 : 0;
      // Counting filters count every add, since each needs its own remove.
      added += (was_new || cells_.counting()) ? 1 : 0;
    }
    *uncounted += added;
    return Status::Ok();
  }

  Status TestFrom(Connection& c, const uint64_t* offsets, size_t items, uint32_t k,
                  uint8_t* present, size_t* done) {
    const size_t batch = shared_->options.batch_items;
    CommandBuffer cmd;  // hiredis copies each command, so one buffer serves all
    std::deque<InFlight> in_flight;
    size_t next = *done;
    auto send = [&]() -> Status {
      const size_t n = std::min(batch, items - next);
      InFlight f{next, n, {}};
      const uint64_t* o = offsets + next * k;
      SortedOrder(o, n * k, &f.order);
      cmd.Clear();
      Streamer stream(c, cmd);
      // MULTI makes the cells and the metadata one snapshot: a filter dropped
      // or re-created in between cannot pass the check with the old cells.
      // MULTI, BITFIELD_RO and HMGET are all allowed on read-only replicas.
      cmd.Command({"MULTI"});
      cmd.Begin(2 + 3 * n * k);
      cmd.Arg("BITFIELD_RO");
      cmd.Arg(cells_.bitmap);
      for (size_t i = 0; i < n * k; ++i) {
        if (cells_.counting()) {
          cmd.Raw(kGetU4, 2);
          cmd.Arg('#', o[f.order[i]]);
        } else {
          cmd.Raw(kGetU1, 2);
          cmd.Arg(o[f.order[i]]);
        }
        if (i % 256 == 255) REDBLOOM_RETURN_IF_ERROR(stream.MaybePush());
      }
      AppendMetaCheck(&cmd);
      cmd.Command({"EXEC"});
      REDBLOOM_RETURN_IF_ERROR(stream.Finish());
      in_flight.push_back(std::move(f));
      next += n;
      return Status::Ok();
    };
    while (next < items && in_flight.size() < kMaxInFlight) REDBLOOM_RETURN_IF_ERROR(send());
    while (!in_flight.empty()) {
      const InFlight f = std::move(in_flight.front());
      in_flight.pop_front();
      Status s = ReadTestReply(c, f, k, present);
      if (!s.ok()) {
        Drain(c, in_flight.size() * 4);
        return s;
      }
      *done = f.first + f.n;
      if (next < items) REDBLOOM_RETURN_IF_ERROR(send());
    }
    return Status::Ok();
  }

  Status ReadTestReply(Connection& c, const InFlight& f, uint32_t k, uint8_t* present) {
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 2));
    REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[1]));
    const redisReply* cells = exec->element[0];
    if (cells->type == REDIS_REPLY_ERROR) return BitmapError(c, cells);
    if (!IsArray(cells, f.n * k)) return Unexpected("BITFIELD_RO", cells);
    // Back into batch order (the ops went in f.order), then an item is
    // present when all its k cells are set.
    std::vector<uint8_t> set(f.n * k);
    for (size_t i = 0; i < f.n * k; ++i) set[f.order[i]] = cells->element[i]->integer != 0 ? 1 : 0;
    for (size_t i = 0; i < f.n; ++i) {
      uint8_t all = 1;
      for (uint32_t j = 0; j < k; ++j) all &= set[i * k + j];
      present[f.first + i] = all;
    }
    return Status::Ok();
  }

  std::shared_ptr<Shared> shared_;
  const std::string name_;
  const std::string meta_key_;
  const std::vector<std::string> checked_;
  const Cells cells_;
  std::atomic<uint64_t> pending_{0};  // added items not yet in the stored count
};

class RedisStore final : public Store {
 public:
  RedisStore(RedisUrl url, std::shared_ptr<Shared> shared)
      : url_(std::move(url)), shared_(std::move(shared)) {}

  std::string url() const override { return url_.Redacted(); }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    REDBLOOM_RETURN_IF_ERROR(
        CheckSize("filter '" + std::string(name) + "'", config.geometry, config.cell_bits()));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const uint64_t expires_at =
        config.ttl_seconds == 0 ? 0 : NowMillis() + config.ttl_seconds * 1000;
    // A window filter is all slices (parts); it has no main array.
    const uint64_t main_bytes = config.kind == FilterKind::kWindow ? 0 : config.data_bytes();
    // Not idempotent: a create whose answer was lost and that is sent again
    // would report kAlreadyExists for the filter it made itself.
    return shared_->Run(/*idempotent=*/false, [&](Connection& c) -> Status {
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, EvalWithMeta(c, scripts::kCreate, name, keys, config,
                                                         main_bytes, expires_at, "create"));
      const int64_t code = r->element[0]->integer;
      if (code == 0) return Status::Ok();
      if (code == 1) {
        REDBLOOM_ASSIGN_OR_RETURN(StoredMeta existing, ExistingMeta(r.get(), name));
        return ExistsStatus(name, existing.config, config);
      }
      if (code == 2) {
        const std::string type = ReplyString(r->element[1]);
        if (type != "string") return WrongTypeStatus(DisplayName(name), type);
        return Status::Conflict("key '" + DisplayName(name) +
                                "' exists without redbloom metadata (written by another program, "
                                "e.g. a Java service?); use attach to adopt it, or delete it");
      }
      if (code == 5 && r->elements >= 3) {
        return Status::ResourceExhausted(
            url_.Redacted() + " has no room for filter '" + DisplayName(name) + "': its " +
            std::to_string(main_bytes) + " bytes and the " +
            std::to_string(r->element[1]->integer) + " bytes in use exceed maxmemory " +
            std::to_string(r->element[2]->integer));
      }
      return MetaWrongType(r.get(), name);
    });
  }

  Status Attach(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    if (config.kind != FilterKind::kPlain) {
      return Status::InvalidArgument("attach adopts plain bitmaps only");
    }
    REDBLOOM_RETURN_IF_ERROR(
        CheckSize("filter '" + std::string(name) + "'", config.geometry, config.cell_bits()));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const uint64_t expires_at =
        config.ttl_seconds == 0 ? 0 : NowMillis() + config.ttl_seconds * 1000;
    // Idempotent: attaching again with the same parameters succeeds.
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      REDBLOOM_ASSIGN_OR_RETURN(
          ReplyPtr r, EvalWithMeta(c, scripts::kAttach, name, keys, config, config.data_bytes(),
                                   expires_at, "attach"));
      const int64_t code = r->element[0]->integer;
      if (code == 0) return Status::Ok();
      if (code == 1) {
        REDBLOOM_ASSIGN_OR_RETURN(StoredMeta existing, ExistingMeta(r.get(), name));
        if (existing.config.SameFilterAs(config)) return Status::Ok();
        return ExistsStatus(name, existing.config, config);
      }
      if (code == 2) return WrongTypeStatus(DisplayName(name), ReplyString(r->element[1]));
      if (code == 4) {
        return Status::Conflict(
            "key '" + DisplayName(name) + "' is " + std::to_string(r->element[1]->integer) +
            " bytes long, but a filter of " + config.ToString() + " has only " +
            std::to_string(config.data_bytes()) +
            " bytes: whoever wrote it used more bits (another capacity or error rate?); attach "
            "with the writer's exact parameters");
      }
      return MetaWrongType(r.get(), name);
    });
  }

  Result<FilterConfig> ReadConfig(std::string_view name) override {
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(name));
    return meta.config;
  }

  Result<std::vector<std::string>> List() override {
    std::vector<std::string> names;
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      names.clear();
      std::string cursor = "0";
      do {
        CommandBuffer cmd;
        // TYPE needs Redis 6.0; COUNT 1000 bounds each step's server time.
        cmd.Command({"SCAN", cursor, "MATCH", "*:meta", "COUNT", "1000", "TYPE", "hash"});
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
        if (!IsArray(r.get(), 2) || !IsArray(r->element[1], 0)) return Unexpected("SCAN", r.get());
        cursor = ReplyString(r->element[0]);
        const redisReply* keys = r->element[1];
        if (keys->elements == 0) continue;
        CommandBuffer names_cmd;
        for (size_t i = 0; i < keys->elements; ++i) {
          names_cmd.Command({"HGET", ReplyText(keys->element[i]), "name"});
        }
        REDBLOOM_RETURN_IF_ERROR(c.Append(names_cmd));
        for (size_t i = 0; i < keys->elements; ++i) {
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr name, c.Read());
          const std::string text = ReplyString(name.get());
          // Only hashes that are the metadata of the name they hold, in this
          // store's key mode, are filters; anything else merely ends in :meta.
          if (name->type != REDIS_REPLY_STRING || !ValidateFilterName(text).ok() ||
              KeysFor(text, shared_->keys).meta != ReplyText(keys->element[i])) {
            continue;
          }
          names.push_back(text);
        }
      } while (cursor != "0");
      return Status::Ok();
    });
    if (!s.ok()) return s;
    // SCAN may return a key more than once.
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

  // Runs a script over a filter's keys and all its parts' keys, read just
  // before. The parts change only when a client adds one: a script that finds
  // other parts than it was given answers 2 and runs again with a fresh list
  // (a few times at most in practice). `interpret` gets any other answer, an
  // array whose first element is an integer.
  template <typename Build, typename Interpret>
  Status WithParts(Connection& c, const FilterKeys& keys, std::string_view name,
                   std::string_view doing, Build build, Interpret interpret) {
    for (int round = 0; round < 100; ++round) {
      REDBLOOM_ASSIGN_OR_RETURN(auto parts, PartNumbers(c, keys, name));
      CommandBuffer cmd;
      build(parts, &cmd);
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
      if (!IsArray(r.get(), 1) || r->element[0]->type != REDIS_REPLY_INTEGER) {
        return Unexpected(doing, r.get());
      }
      if (r->element[0]->integer == 2) continue;
      return interpret(r.get());
    }
    return Status::Unavailable("filter '" + std::string(name) +
                               "' kept gaining parts while being " + std::string(doing) +
                               "; try again");
  }

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    // Not idempotent: a repeated drop would answer kNotFound.
    return shared_->Run(/*idempotent=*/false, [&](Connection& c) -> Status {
      auto build = [&](const std::vector<uint64_t>& parts, CommandBuffer* cmd) {
        cmd->Begin(3 + 3 + parts.size() + 1 + parts.size());
        cmd->Arg("EVAL");
        cmd->Arg(scripts::kDrop);
        cmd->Arg(uint64_t{3 + parts.size()});
        cmd->Arg(keys.meta);
        cmd->Arg(keys.bitmap);
        cmd->Arg(keys.parts);
        for (uint64_t p : parts) cmd->Arg(PartKeysFor(name, shared_->keys, p).bitmap);
        cmd->Arg(name);
        for (uint64_t p : parts) cmd->Arg(p);
      };
      return WithParts(c, keys, name, "dropped", build, [&](const redisReply* r) -> Status {
        switch (r->element[0]->integer) {
          case 1:
            return Status::Ok();
          case 0:
            return NotFoundStatus(name);
          case -1:
            return CollisionStatus(name, ReplyString(r->element[1]), DisplayMeta(name));
          default:
            return MetaWrongType(r, name);
        }
      });
    });
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(name));
    if (!meta.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    if (config.kind == FilterKind::kWindow) {
      return Status::InvalidArgument("a window filter has no main bit array");
    }
    const FilterKeys keys = KeysFor(name, shared_->keys);
    Cells cells{"filter '" + std::string(name) + "'",
                keys.bitmap,
                keys.scratch,
                keys.meta,
                "count",
                config.geometry,
                config.cell_bits(),
                meta.expires_at_ms};
    return std::unique_ptr<BitStore>(
        std::make_unique<RedisBitStore>(shared_, std::string(name), config, std::move(cells)));
  }

  Result<std::unique_ptr<BitStore>> OpenPart(std::string_view name, const FilterConfig& config,
                                             uint64_t part, bool create) override {
    if (config.kind != FilterKind::kScaling && config.kind != FilterKind::kWindow) {
      return Status::InvalidArgument("only scaling and window filters have parts");
    }
    if (config.kind == FilterKind::kScaling && part == 0) return OpenBits(name, config);
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(name));
    if (!meta.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(config, part));
    const std::string what =
        "part " + std::to_string(part) + " of filter '" + std::string(name) + "'";
    REDBLOOM_RETURN_IF_ERROR(CheckSize(what, sizing.geometry, config.cell_bits()));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const PartKeys part_keys = PartKeysFor(name, shared_->keys, part);
    const uint64_t expires_at = PartExpiry(config, part, meta.expires_at_ms);
    const std::vector<std::string> checked = CheckedValues(name, config);
    Cells cells{what,
                part_keys.bitmap,
                part_keys.scratch,
                keys.parts,
                std::to_string(part),
                sizing.geometry,
                config.cell_bits(),
                expires_at};
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      if (create) {
        CommandBuffer cmd;
        cmd.Begin(3 + 3 + kChecked + 4);
        cmd.Arg("EVAL");
        cmd.Arg(scripts::kCreatePart);
        cmd.Arg("3");
        cmd.Arg(keys.meta);
        cmd.Arg(part_keys.bitmap);
        cmd.Arg(keys.parts);
        for (const auto& v : checked) cmd.Arg(v);
        cmd.Arg(part);
        cmd.Arg(cells.data_bytes());
        cmd.Arg(expires_at);
        cmd.Arg(meta.expires_at_ms);
        REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
        if (r->type == REDIS_REPLY_ERROR) return PartScriptError(c, r.get(), name);
        return Status::Ok();
      }
      CommandBuffer cmd;
      cmd.Command({"EXISTS", part_keys.bitmap});
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
      if (r->type != REDIS_REPLY_INTEGER) return Unexpected("EXISTS", r.get());
      if (r->integer == 0) return Status::NotFound(what + " does not exist");
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return std::unique_ptr<BitStore>(
        std::make_unique<RedisBitStore>(shared_, std::string(name), config, std::move(cells)));
  }

  Result<std::vector<uint64_t>> ListParts(std::string_view name,
                                          const FilterConfig& config) override {
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(name));
    if (!meta.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    const FilterKeys keys = KeysFor(name, shared_->keys);
    std::vector<uint64_t> live;
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      live.clear();
      REDBLOOM_ASSIGN_OR_RETURN(auto parts, PartNumbers(c, keys, name));
      if (parts.empty()) return Status::Ok();
      CommandBuffer cmd;
      for (uint64_t p : parts) cmd.Command({"EXISTS", PartKeysFor(name, shared_->keys, p).bitmap});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      std::vector<uint64_t> expired;
      for (uint64_t p : parts) {
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.ReadOk());
        (r->integer == 1 ? live : expired).push_back(p);
      }
      if (!expired.empty()) {
        // Forget slices whose keys expired, so the list stays short.
        CommandBuffer prune;
        prune.Begin(3 + 1 + 2 * expired.size());
        prune.Arg("EVAL");
        prune.Arg(scripts::kPruneParts);
        prune.Arg(uint64_t{1 + expired.size()});
        prune.Arg(keys.parts);
        for (uint64_t p : expired) prune.Arg(PartKeysFor(name, shared_->keys, p).bitmap);
        for (uint64_t p : expired) prune.Arg(p);
        REDBLOOM_RETURN_IF_ERROR(Call(c, prune).status());
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    if (config.kind == FilterKind::kScaling) live.push_back(0);
    std::sort(live.begin(), live.end());
    return live;
  }

  Result<uint64_t> Layers(std::string_view name, const FilterConfig& config) override {
    if (config.kind != FilterKind::kScaling) {
      return Status::InvalidArgument("only scaling filters have layers");
    }
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const std::vector<std::string> checked = CheckedValues(name, config);
    uint64_t layers = 0;
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Begin(2 + kChecked + 1);
      cmd.Arg("HMGET");
      cmd.Arg(keys.meta);
      for (std::string_view f : kCheckedFields) cmd.Arg(f);
      cmd.Arg("layers");
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
      if (!IsArray(r.get(), kChecked + 1)) return Unexpected("HMGET", r.get());
      if (r->element[0]->type == REDIS_REPLY_NIL) return NotFoundStatus(name);
      for (size_t i = 0; i < kChecked; ++i) {
        if (ReplyText(r->element[i]) != checked[i]) return ConfigChangedStatus(name);
      }
      Result<uint64_t> v = ParseUint64(ReplyText(r->element[kChecked]));
      if (!v.ok() || *v == 0)
        return Status::DataLoss("filter '" + std::string(name) + "': corrupt layers field");
      layers = *v;
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return layers;
  }

  Result<uint64_t> GrowLayers(std::string_view name, const FilterConfig& config,
                              uint64_t seen) override {
    if (config.kind != FilterKind::kScaling) {
      return Status::InvalidArgument("only scaling filters have layers");
    }
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(name));
    if (!meta.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(config, seen));
    REDBLOOM_RETURN_IF_ERROR(
        CheckSize("layer " + std::to_string(seen) + " of filter '" + std::string(name) + "'",
                  sizing.geometry, config.cell_bits()));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const std::vector<std::string> checked = CheckedValues(name, config);
    const uint64_t bytes = (sizing.geometry.bits * config.cell_bits() + 7) / 8;
    uint64_t layers = 0;
    // Idempotent: growing from `seen` twice adds one layer.
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Begin(3 + 3 + kChecked + 3);
      cmd.Arg("EVAL");
      cmd.Arg(scripts::kGrow);
      cmd.Arg("3");
      cmd.Arg(keys.meta);
      cmd.Arg(PartKeysFor(name, shared_->keys, seen).bitmap);
      cmd.Arg(keys.parts);
      for (const auto& v : checked) cmd.Arg(v);
      cmd.Arg(seen);
      cmd.Arg(bytes);
      cmd.Arg(meta.expires_at_ms);
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
      if (r->type == REDIS_REPLY_ERROR) return PartScriptError(c, r.get(), name);
      if (r->type != REDIS_REPLY_INTEGER || r->integer < 1) return Unexpected("grow", r.get());
      layers = static_cast<uint64_t>(r->integer);
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return layers;
  }

  Status Replace(std::string_view name, std::string_view source) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(source));
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta replacement, ReadMeta(source));
    REDBLOOM_RETURN_IF_ERROR(CheckReplaceable(replacement.config));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const FilterKeys from = KeysFor(source, shared_->keys);
    // Readers of the old filter see the new one on their next call: the same
    // keys, checked against their parameters (kConflict if they differ, and
    // the facade reopens). Not idempotent: done twice, the source is gone.
    return shared_->Run(/*idempotent=*/false, [&](Connection& c) -> Status {
      auto build = [&](const std::vector<uint64_t>& parts, CommandBuffer* cmd) {
        cmd->Begin(3 + 5 + parts.size() + 2 + parts.size());
        cmd->Arg("EVAL");
        cmd->Arg(scripts::kReplace);
        cmd->Arg(uint64_t{5 + parts.size()});
        cmd->Arg(keys.meta);
        cmd->Arg(keys.bitmap);
        cmd->Arg(keys.parts);
        cmd->Arg(from.meta);
        cmd->Arg(from.bitmap);
        for (uint64_t p : parts) cmd->Arg(PartKeysFor(name, shared_->keys, p).bitmap);
        cmd->Arg(name);
        cmd->Arg(source);
        for (uint64_t p : parts) cmd->Arg(p);
      };
      return WithParts(c, keys, name, "replaced", build, [&](const redisReply* r) -> Status {
        switch (r->element[0]->integer) {
          case 1:
            return Status::Ok();
          case 0:
            return NotFoundStatus(source);
          default:
            return Unexpected("replace", r);
        }
      });
    });
  }

  Status Ping() override {
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"PING"});
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
      if (ReplyText(r.get()) != "PONG") return Unexpected("PING", r.get());
      return Status::Ok();
    });
  }

 private:
  std::string DisplayName(std::string_view name) const { return DisplayKey(name, shared_->keys); }
  std::string DisplayMeta(std::string_view name) const {
    return DisplayKey(KeysFor(name, KeyMode::kPlain).meta, shared_->keys);
  }

  // The stored metadata of `name`, validated (see ParseMeta).
  Result<StoredMeta> ReadMeta(std::string_view name) {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    StoredMeta meta;
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"TYPE", keys.meta});
      cmd.Command({"HGETALL", keys.meta});
      cmd.Command({"TYPE", keys.bitmap});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr meta_type, c.ReadOk());
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr hash, c.Read());
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr bitmap_type, c.ReadOk());
      const std::string mt = ReplyString(meta_type.get());
      if (mt == "none") {
        const std::string bt = ReplyString(bitmap_type.get());
        if (bt == "none") return NotFoundStatus(name);
        return Status::NotFound("filter '" + std::string(name) + "' does not exist: key '" +
                                DisplayName(name) + "' is a " + bt + " without redbloom metadata" +
                                (bt == "string" ? "; adopt it with attach" : ""));
      }
      if (mt != "hash") {
        return Status::DataLoss("metadata key '" + DisplayMeta(name) + "' holds a " + mt +
                                ", not a hash");
      }
      if (hash->type == REDIS_REPLY_ERROR) {
        return ReplyErrorStatus(ReplyText(hash.get()), c.server());
      }
      REDBLOOM_ASSIGN_OR_RETURN(meta, ParseMeta(hash.get(), DisplayMeta(name)));
      if (meta.name != name) return CollisionStatus(name, meta.name, DisplayMeta(name));
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return meta;
  }

  // The part numbers in a filter's parts hash.
  Result<std::vector<uint64_t>> PartNumbers(Connection& c, const FilterKeys& keys,
                                            std::string_view name) {
    CommandBuffer cmd;
    cmd.Command({"HKEYS", keys.parts});
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
    if (!IsArray(r.get(), 0)) return Unexpected("HKEYS", r.get());
    std::vector<uint64_t> parts;
    for (size_t i = 0; i < r->elements; ++i) {
      Result<uint64_t> p = ParseUint64(ReplyText(r->element[i]));
      if (!p.ok() || std::to_string(*p) != ReplyText(r->element[i])) {
        return Status::DataLoss("filter '" + std::string(name) + "': corrupt part number '" +
                                ReplyString(r->element[i]) + "'");
      }
      parts.push_back(*p);
    }
    return parts;
  }

  Status PartScriptError(Connection& c, const redisReply* r, std::string_view name) const {
    const std::string_view text = ReplyText(r);
    if (text.find("REDBLOOM_GONE") != std::string_view::npos) return NotFoundStatus(name);
    if (text.find("REDBLOOM_CHANGED") != std::string_view::npos) return ConfigChangedStatus(name);
    if (text.find("REDBLOOM_CORRUPT") != std::string_view::npos) {
      return Status::DataLoss("filter '" + std::string(name) + "': " + std::string(text));
    }
    return ReplyErrorStatus(text, c.server());
  }

  // Runs a create/attach script with the metadata fields as arguments;
  // returns its array reply, whose first element is the outcome code.
  Result<ReplyPtr> EvalWithMeta(Connection& c, std::string_view script, std::string_view name,
                                const FilterKeys& keys, const FilterConfig& config, uint64_t bytes,
                                uint64_t expires_at, std::string_view origin) {
    const auto fields = MetaFields(name, config, origin, expires_at);
    CommandBuffer cmd;
    cmd.Begin(7 + 2 * fields.size());
    cmd.Arg("EVAL");
    cmd.Arg(script);
    cmd.Arg("2");
    cmd.Arg(keys.meta);
    cmd.Arg(keys.bitmap);
    cmd.Arg(bytes);
    cmd.Arg(expires_at);
    for (const auto& [field, value] : fields) {
      cmd.Arg(field);
      cmd.Arg(value);
    }
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
    if (!IsArray(r.get(), 1) || r->element[0]->type != REDIS_REPLY_INTEGER ||
        (r->element[0]->integer != 0 && r->elements < 2)) {
      return Unexpected("the create/attach script", r.get());
    }
    return r;
  }

  Result<StoredMeta> ExistingMeta(const redisReply* r, std::string_view name) const {
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta existing, ParseMeta(r->element[1], DisplayMeta(name)));
    if (existing.name != name) return CollisionStatus(name, existing.name, DisplayMeta(name));
    return existing;
  }

  Status MetaWrongType(const redisReply* r, std::string_view name) const {
    const std::string type = r->elements > 1 ? ReplyString(r->element[1]) : "value";
    return Status::DataLoss("metadata key '" + DisplayMeta(name) + "' holds a " + type +
                            ", not a hash");
  }

  const RedisUrl url_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace

Result<std::unique_ptr<Store>> NewRedisStore(std::string_view url_text,
                                             const StoreOptions& options) {
  REDBLOOM_ASSIGN_OR_RETURN(RedisUrl url, ParseRedisUrl(url_text, options));
  ServerParams server;
  server.host = url.host;
  server.port = url.port;
  server.user = url.user;
  server.password = url.password;
  server.db = url.db;
  server.connect_timeout = url.options.connect_timeout;
  server.command_timeout = url.options.command_timeout;
  server.display = (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) +
                   ":" + std::to_string(url.port);
  auto shared = std::make_shared<Shared>(url, std::move(server));
  auto store = std::make_unique<RedisStore>(std::move(url), shared);
  // Connect once, without retries, so a wrong URL or a server that is down
  // fails here, at open, rather than at the first operation.
  {
    Result<ConnectionPool::Lease> lease = shared->pool.Acquire();
    if (!lease.ok()) return lease.status();
    CommandBuffer cmd;
    cmd.Command({"PING"});
    REDBLOOM_RETURN_IF_ERROR(Call(**lease, cmd).status());
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace redbloom::internal
