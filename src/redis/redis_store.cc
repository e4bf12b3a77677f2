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
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <thread>

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
constexpr std::string_view kOne = "$1\r\n1\r\n";
// The facade hands us this many batches at once so that a long add can keep
// one batch in flight while the previous answer is read (window of 2).
constexpr size_t kBatchesPerCall = 64;

// The six metadata fields every bit operation checks (scripts::meta_state
// and the HMGET of a check), in this order.
constexpr std::string_view kCheckedFields[] = {"format", "strategy", "encoding",
                                               "bits",   "hashes",   "name"};

std::vector<std::string> CheckedValues(std::string_view name, const FilterConfig& c) {
  return {std::string(kFormatVersion),           std::string(StrategyName(c.strategy)),
          std::string(EncodingName(c.encoding)), std::to_string(c.geometry.bits),
          std::to_string(c.geometry.hashes),     std::string(name)};
}

// Every field of the metadata hash (docs/format.md, "Metadata").
std::vector<std::pair<std::string, std::string>> MetaFields(std::string_view name,
                                                            const FilterConfig& c,
                                                            std::string_view origin) {
  return {{"format", std::string(kFormatVersion)},
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
          {"origin", std::string(origin)}};
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
  uint64_t count = 0;
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
    if (!v.ok())
      return corrupt("field '" + std::string(field) + "' = '" + text + "' is not a count");
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
  REDBLOOM_ASSIGN_OR_RETURN(std::string error_rate, get("error_rate"));
  auto parsed_kind = ParseFilterKind(kind);
  auto parsed_strategy = ParseStrategy(strategy);
  auto parsed_encoding = ParseEncoding(encoding);
  auto parsed_error = ParseDouble(error_rate);
  if (!parsed_kind.ok()) return corrupt("unknown kind '" + kind + "'");
  if (!parsed_strategy.ok()) return corrupt("unknown strategy '" + strategy + "'");
  if (!parsed_encoding.ok()) return corrupt("unknown encoding '" + encoding + "'");
  if (!parsed_error.ok()) return corrupt("error_rate '" + error_rate + "' is not a number");
  o.kind = *parsed_kind;
  o.strategy = *parsed_strategy;
  o.encoding = *parsed_encoding;
  o.error_rate = *parsed_error;
  REDBLOOM_ASSIGN_OR_RETURN(o.capacity, number("capacity"));
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t bits, number("bits"));
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t hashes, number("hashes"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string capped, get("capped"));
  REDBLOOM_ASSIGN_OR_RETURN(meta.count, number("count"));
  if (capped != "0" && capped != "1") return corrupt("capped '" + capped + "' is not 0 or 1");
  if (auto it = f.find("origin");
      it != f.end() && it->second != "create" && it->second != "attach") {
    return corrupt("origin '" + it->second + "' is not create or attach");
  }
  Result<FilterConfig> config = MakeConfig(o);
  if (!config.ok()) return corrupt("invalid parameters: " + config.status().message());
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

Status CheckSize(std::string_view name, const FilterConfig& c) {
  if (c.geometry.bits > kMaxBitsPerKey) {
    return Status::InvalidArgument(
        "filter '" + std::string(name) + "' needs " + std::to_string(c.geometry.bits) + " bits (" +
        std::to_string(c.data_bytes() >> 20) +
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

// State shared by a store and the bit stores opened from it (which may
// outlive nothing, but sharing keeps the pool alive regardless).
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
// connection can be reused; marks it broken if that fails.
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

class RedisBitStore final : public BitStore {
 public:
  RedisBitStore(std::shared_ptr<Shared> shared, std::string name, FilterConfig config)
      : shared_(std::move(shared)),
        name_(std::move(name)),
        keys_(KeysFor(name_, shared_->keys)),
        config_(std::move(config)),
        checked_(CheckedValues(name_, config_)) {}

  size_t preferred_batch() const override { return shared_->options.batch_items * kBatchesPerCall; }

  // Adds are idempotent for the bits (a bit set twice stays set), so a batch
  // whose connection died is re-sent. If the lost attempt had in fact run,
  // the retry finds those bits set and reports the items as not new, and the
  // count misses them: after a retry both under-report, never over-report.
  Status Add(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed) override {
    REDBLOOM_RETURN_IF_ERROR(CheckOffsets(offsets, items, k));
    size_t done = 0;
    uint64_t uncounted = 0;  // new items whose count update has not been sent
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) {
      return AddFrom(c, offsets, items, k, changed, &done, &uncounted);
    });
  }

  Status Test(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* present) override {
    REDBLOOM_RETURN_IF_ERROR(CheckOffsets(offsets, items, k));
    size_t done = 0;
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) {
      return TestFrom(c, offsets, items, k, present, &done);
    });
  }

  Result<FilterStats> Stats() override {
    FilterStats stats;
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"MULTI"});
      cmd.Command({"BITCOUNT", keys_.bitmap});
      AppendMetaCheck(&cmd, /*with_count=*/true);
      cmd.Command({"EXEC"});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 2));
      const redisReply* meta = exec->element[1];
      REDBLOOM_RETURN_IF_ERROR(CheckMeta(meta, 7));
      const redisReply* count = exec->element[0];
      if (count->type == REDIS_REPLY_ERROR) return BitmapError(c, count);
      if (count->type != REDIS_REPLY_INTEGER || count->integer < 0) {
        return Unexpected("BITCOUNT", count);
      }
      stats.bits_set = static_cast<uint64_t>(count->integer);
      Result<uint64_t> items = ParseUint64(ReplyText(meta->element[6]));
      if (!items.ok()) return Status::DataLoss("filter '" + name_ + "': corrupt count field");
      stats.items_added = *items;
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return stats;
  }

  Status Clear() override {
    // Idempotent: clearing twice leaves the same empty filter.
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Begin(5 + checked_.size() + 1);
      cmd.Arg("EVAL");
      cmd.Arg(scripts::kClear);
      cmd.Arg("2");
      cmd.Arg(keys_.meta);
      cmd.Arg(keys_.bitmap);
      for (const auto& v : checked_) cmd.Arg(v);
      cmd.Arg(config_.data_bytes());
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
      if (r->type == REDIS_REPLY_ERROR) return GuardError(r.get(), c);
      return Status::Ok();
    });
  }

 private:
  Status CheckOffsets(const uint64_t* offsets, size_t items, uint32_t k) const {
    if (k != config_.geometry.hashes) {
      return Status::InvalidArgument("expected " + std::to_string(config_.geometry.hashes) +
                                     " offsets per item, got " + std::to_string(k));
    }
    for (size_t i = 0; i < items * k; ++i) {
      if (offsets[i] >= config_.geometry.bits) {
        return Status::InvalidArgument("bit offset " + std::to_string(offsets[i]) +
                                       " is outside the filter's " +
                                       std::to_string(config_.geometry.bits) + " bits");
      }
    }
    return Status::Ok();
  }

  // HMGET of the checked fields (and the count), compared by CheckMeta.
  void AppendMetaCheck(CommandBuffer* cmd, bool with_count) const {
    cmd->Begin(2 + std::size(kCheckedFields) + (with_count ? 1 : 0));
    cmd->Arg("HMGET");
    cmd->Arg(keys_.meta);
    for (std::string_view f : kCheckedFields) cmd->Arg(f);
    if (with_count) cmd->Arg("count");
  }

  Status CheckMeta(const redisReply* r, size_t fields) const {
    if (r->type == REDIS_REPLY_ERROR) {
      return Status::DataLoss("metadata '" +
                              DisplayKey(KeysFor(name_, KeyMode::kPlain).meta, shared_->keys) +
                              "' is not a hash: " + ReplyString(r));
    }
    if (!IsArray(r, fields)) return Unexpected("HMGET", r);
    if (r->element[0]->type == REDIS_REPLY_NIL) return Gone();
    for (size_t i = 0; i < checked_.size(); ++i) {
      if (ReplyText(r->element[i]) != checked_[i]) return ConfigChangedStatus(name_);
    }
    return Status::Ok();
  }

  Status Gone() const {
    return Status::NotFound("filter '" + name_ + "' does not exist (it was dropped)");
  }

  // An error reply from a guarded script (REDBLOOM_GONE / REDBLOOM_CHANGED)
  // or from Redis.
  Status GuardError(const redisReply* r, Connection& c) const {
    const std::string_view text = ReplyText(r);
    // Redis 7 passes "CODE message" through; older servers may prefix "ERR ".
    if (text.find("REDBLOOM_GONE") != std::string_view::npos) return Gone();
    if (text.find("REDBLOOM_CHANGED") != std::string_view::npos) return ConfigChangedStatus(name_);
    return ReplyErrorStatus(text, c.server());
  }

  // An error reply from a command on the bitmap key.
  Status BitmapError(Connection& c, const redisReply* r) const {
    Status s = ReplyErrorStatus(ReplyText(r), c.server());
    if (ReplyText(r).starts_with("WRONGTYPE")) {
      return WrongTypeStatus(DisplayKey(name_, shared_->keys), KeyType(c, keys_.bitmap));
    }
    return s;
  }

  void BuildAdd(CommandBuffer* cmd, const uint64_t* offsets, size_t n, uint32_t k,
                uint64_t count_delta) const {
    cmd->Clear();
    cmd->Command({"MULTI"});
    // EVAL guard 3 meta bitmap scratch <6 checked> <delta>
    cmd->Begin(3 + 3 + checked_.size() + 1);
    cmd->Arg("EVAL");
    cmd->Arg(scripts::kAddGuard);
    cmd->Arg("3");
    cmd->Arg(keys_.meta);
    cmd->Arg(keys_.bitmap);
    cmd->Arg(keys_.scratch);
    for (const auto& v : checked_) cmd->Arg(v);
    cmd->Arg(count_delta);
    cmd->Begin(2 + 4 * n * k);
    cmd->Arg("BITFIELD");
    cmd->Arg(keys_.scratch);
    for (size_t i = 0; i < n * k; ++i) {
      cmd->Raw(kSetU1, 2);
      cmd->Arg(offsets[i]);
      cmd->Raw(kOne, 1);
    }
    cmd->Begin(3 + 3 + checked_.size());
    cmd->Arg("EVAL");
    cmd->Arg(scripts::kAddCommit);
    cmd->Arg("3");
    cmd->Arg(keys_.meta);
    cmd->Arg(keys_.bitmap);
    cmd->Arg(keys_.scratch);
    for (const auto& v : checked_) cmd->Arg(v);
    cmd->Command({"EXEC"});
  }

  // Adds items [*done, items) on one connection, advancing *done past every
  // batch whose answer was read.
  Status AddFrom(Connection& c, const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed,
                 size_t* done, uint64_t* uncounted) {
    const size_t batch = shared_->options.batch_items;
    CommandBuffer buffers[2];
    std::deque<std::pair<size_t, size_t>> in_flight;  // (first item, items)
    size_t next = *done;
    auto send = [&]() -> Status {
      const size_t n = std::min(batch, items - next);
      CommandBuffer& cmd = buffers[in_flight.size() % 2];
      // The count of earlier batches rides along with this one's guard.
      BuildAdd(&cmd, offsets + next * k, n, k, *uncounted);
      *uncounted = 0;
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      in_flight.emplace_back(next, n);
      next += n;
      return Status::Ok();
    };
    while (next < items && in_flight.size() < 2) REDBLOOM_RETURN_IF_ERROR(send());
    while (!in_flight.empty()) {
      const auto [first, n] = in_flight.front();
      in_flight.pop_front();
      Status s = ReadAddReply(c, first, n, k, changed, uncounted);
      if (!s.ok()) {
        Drain(c, in_flight.size() * 5);
        return s;
      }
      *done = first + n;
      if (next < items) REDBLOOM_RETURN_IF_ERROR(send());
    }
    if (*uncounted > 0) {
      // The last batch's count goes out without waiting for its answer: one
      // round trip saved per call (half the latency of a single-item add).
      // The pool reads the answer before lending the connection again.
      CommandBuffer cmd;
      cmd.Begin(3 + 1 + checked_.size() + 1);
      cmd.Arg("EVAL");
      cmd.Arg(scripts::kAddCount);
      cmd.Arg("1");
      cmd.Arg(keys_.meta);
      for (const auto& v : checked_) cmd.Arg(v);
      cmd.Arg(*uncounted);
      if (c.Append(cmd).ok() && c.Flush().ok()) {
        c.OweReply();
        *uncounted = 0;
      }
    }
    return Status::Ok();
  }

  Status ReadAddReply(Connection& c, size_t first, size_t n, uint32_t k, uint8_t* changed,
                      uint64_t* uncounted) {
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 3));
    const redisReply* guard = exec->element[0];
    const redisReply* bits = exec->element[1];
    const redisReply* commit = exec->element[2];
    if (guard->type == REDIS_REPLY_ERROR) return GuardError(guard, c);
    if (bits->type == REDIS_REPLY_ERROR) return BitmapError(c, bits);
    if (commit->type != REDIS_REPLY_INTEGER || commit->integer != 1) {
      return Unexpected("the add transaction's commit", commit);
    }
    if (!IsArray(bits, n * k)) return Unexpected("BITFIELD", bits);
    uint64_t added = 0;
    for (size_t i = 0; i < n; ++i) {
      // BITFIELD SET answers each bit's previous value: an item is new when
      // it turned at least one bit on.
      bool was_new = false;
      for (uint32_t j = 0; j < k; ++j) was_new |= bits->element[i * k + j]->integer == 0;
      if (changed != nullptr) changed[first + i] = was_new ? 1 : 0;
      added += was_new ? 1 : 0;
    }
    *uncounted += added;
    return Status::Ok();
  }

  Status TestFrom(Connection& c, const uint64_t* offsets, size_t items, uint32_t k,
                  uint8_t* present, size_t* done) {
    const size_t batch = shared_->options.batch_items;
    CommandBuffer buffers[2];
    std::deque<std::pair<size_t, size_t>> in_flight;
    size_t next = *done;
    auto send = [&]() -> Status {
      const size_t n = std::min(batch, items - next);
      CommandBuffer& cmd = buffers[in_flight.size() % 2];
      cmd.Clear();
      // MULTI makes the bits and the metadata one snapshot: a filter dropped
      // or re-created in between cannot pass the check with the old bits.
      // MULTI, BITFIELD_RO and HMGET are all allowed on read-only replicas.
      cmd.Command({"MULTI"});
      cmd.Begin(2 + 3 * n * k);
      cmd.Arg("BITFIELD_RO");
      cmd.Arg(keys_.bitmap);
      const uint64_t* o = offsets + next * k;
      for (size_t i = 0; i < n * k; ++i) {
        cmd.Raw(kGetU1, 2);
        cmd.Arg(o[i]);
      }
      AppendMetaCheck(&cmd, /*with_count=*/false);
      cmd.Command({"EXEC"});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      in_flight.emplace_back(next, n);
      next += n;
      return Status::Ok();
    };
    while (next < items && in_flight.size() < 2) REDBLOOM_RETURN_IF_ERROR(send());
    while (!in_flight.empty()) {
      const auto [first, n] = in_flight.front();
      in_flight.pop_front();
      Status s = ReadTestReply(c, first, n, k, present);
      if (!s.ok()) {
        Drain(c, in_flight.size() * 4);
        return s;
      }
      *done = first + n;
      if (next < items) REDBLOOM_RETURN_IF_ERROR(send());
    }
    return Status::Ok();
  }

  Status ReadTestReply(Connection& c, size_t first, size_t n, uint32_t k, uint8_t* present) {
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 2));
    REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[1], checked_.size()));
    const redisReply* bits = exec->element[0];
    if (bits->type == REDIS_REPLY_ERROR) return BitmapError(c, bits);
    if (!IsArray(bits, n * k)) return Unexpected("BITFIELD_RO", bits);
    for (size_t i = 0; i < n; ++i) {
      uint8_t all = 1;
      for (uint32_t j = 0; j < k; ++j) all &= bits->element[i * k + j]->integer == 1 ? 1 : 0;
      present[first + i] = all;
    }
    return Status::Ok();
  }

  std::shared_ptr<Shared> shared_;
  const std::string name_;
  const FilterKeys keys_;
  const FilterConfig config_;
  const std::vector<std::string> checked_;
};

class RedisStore final : public Store {
 public:
  RedisStore(RedisUrl url, std::shared_ptr<Shared> shared)
      : url_(std::move(url)), shared_(std::move(shared)) {}

  std::string url() const override { return url_.Redacted(); }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    REDBLOOM_RETURN_IF_ERROR(CheckSize(name, config));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    // Not idempotent: a create whose answer was lost and that is sent again
    // would report kAlreadyExists for the filter it made itself.
    return shared_->Run(/*idempotent=*/false, [&](Connection& c) -> Status {
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r,
                                EvalWithMeta(c, scripts::kCreate, name, keys, config, "create"));
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
      return MetaWrongType(r.get(), name);
    });
  }

  Status Attach(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    REDBLOOM_RETURN_IF_ERROR(CheckSize(name, config));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    // Idempotent: attaching again with the same parameters succeeds.
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r,
                                EvalWithMeta(c, scripts::kAttach, name, keys, config, "attach"));
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
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    FilterConfig config;
    Status s = shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"TYPE", keys.meta});
      cmd.Command({"HGETALL", keys.meta});
      cmd.Command({"TYPE", keys.bitmap});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr meta_type, c.ReadOk());
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr meta, c.Read());
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
      if (meta->type == REDIS_REPLY_ERROR)
        return ReplyErrorStatus(ReplyText(meta.get()), c.server());
      REDBLOOM_ASSIGN_OR_RETURN(StoredMeta stored, ParseMeta(meta.get(), DisplayMeta(name)));
      if (stored.name != name) return CollisionStatus(name, stored.name, DisplayMeta(name));
      config = stored.config;
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return config;
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
        REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.ReadOk());
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

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    // Not idempotent: a repeated drop would answer kNotFound.
    return shared_->Run(/*idempotent=*/false, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"EVAL", scripts::kDrop, "2", keys.meta, keys.bitmap, name});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.ReadOk());
      if (!IsArray(r.get(), 1) || r->element[0]->type != REDIS_REPLY_INTEGER) {
        return Unexpected("drop", r.get());
      }
      switch (r->element[0]->integer) {
        case 1:
          return Status::Ok();
        case 0:
          return NotFoundStatus(name);
        case -1:
          return CollisionStatus(name, ReplyString(r->element[1]), DisplayMeta(name));
        default:
          return MetaWrongType(r.get(), name);
      }
    });
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_ASSIGN_OR_RETURN(FilterConfig stored, ReadConfig(name));
    if (!stored.SameFilterAs(config)) return ConfigChangedStatus(name);
    return std::unique_ptr<BitStore>(
        std::make_unique<RedisBitStore>(shared_, std::string(name), config));
  }

  Status Ping() override {
    return shared_->Run(/*idempotent=*/true, [&](Connection& c) -> Status {
      CommandBuffer cmd;
      cmd.Command({"PING"});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.ReadOk());
      if (ReplyText(r.get()) != "PONG") return Unexpected("PING", r.get());
      return Status::Ok();
    });
  }

 private:
  std::string DisplayName(std::string_view name) const { return DisplayKey(name, shared_->keys); }
  std::string DisplayMeta(std::string_view name) const {
    return DisplayKey(KeysFor(name, KeyMode::kPlain).meta, shared_->keys);
  }

  // Runs a create/attach script with the metadata fields as arguments;
  // returns its array reply, whose first element is the outcome code.
  Result<ReplyPtr> EvalWithMeta(Connection& c, std::string_view script, std::string_view name,
                                const FilterKeys& keys, const FilterConfig& config,
                                std::string_view origin) {
    const auto fields = MetaFields(name, config, origin);
    CommandBuffer cmd;
    cmd.Begin(6 + 2 * fields.size());
    cmd.Arg("EVAL");
    cmd.Arg(script);
    cmd.Arg("2");
    cmd.Arg(keys.meta);
    cmd.Arg(keys.bitmap);
    cmd.Arg(config.data_bytes());
    for (const auto& [field, value] : fields) {
      cmd.Arg(field);
      cmd.Arg(value);
    }
    REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.ReadOk());
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
    REDBLOOM_RETURN_IF_ERROR((*lease)->Append(cmd));
    Result<ReplyPtr> r = (*lease)->ReadOk();
    if (!r.ok()) return r.status();
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace redbloom::internal
