#include "redis/redis_bit_store.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>

#include "kinds/kind_def.h"
#include "redis/redis_bit_store_impl.h"
#include "redis/redis_companion.h"
#include "redis/redis_meta.h"
#include "redis/redis_ops.h"
#include "redis/redis_pipeline.h"
#include "redis/redis_scripts.h"
#include "stores.h"
#include "util/fork_generation.h"

namespace redbloom::internal {
namespace {

// Appends the part's size check (STRLEN, then HEXISTS for listed parts) to a
// transaction; RedisBitStore::CheckPresence, or a check's ReadChunk, reads
// them back.
void AppendPresence(CommandBuffer* cmd, const RedisBitStore::Cells& cells,
                    const std::string& parts_key) {
  cmd->Command({"STRLEN", cells.bitmap});
  if (cells.listed) cmd->Command({"HEXISTS", parts_key, cells.count_field});
}

size_t PresenceReplies(const RedisBitStore::Cells& cells) { return cells.listed ? 2 : 1; }

// A part's HEXISTS in TAG/parts. An error there (WRONGTYPE: the key holds
// something other than a hash) is a conflict, never "not created", which
// would answer absent for all the part's items.
Result<bool> PartListed(const redisReply* r, const std::string& name,
                        const std::string& parts_key) {
  if (r->type == REDIS_REPLY_INTEGER) return r->integer == 1;
  if (r->type == REDIS_REPLY_ERROR) {
    return Status::Conflict("filter '" + name + "': its parts list " + parts_key + " answered " +
                            ReplyString(r) +
                            " (another program's key of another type under the filter's name?)");
  }
  return Unexpected("HEXISTS", r);
}

// For reads of one part (stats, bits): a listed part never created is
// kNotFound, as there is nothing to read.
Status RequireListed(const redisReply* r, const std::string& name, const std::string& parts_key,
                     const std::string& display) {
  REDBLOOM_ASSIGN_OR_RETURN(bool listed, PartListed(r, name, parts_key));
  return listed ? Status::Ok() : Status::NotFound(display + " does not exist");
}

// SETBIT and BITFIELD address at most 2^32 bits (512 MB) in one string.
constexpr uint64_t kMaxBitsPerKey = uint64_t{1} << 32;
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
}  // namespace

RedisBitStore::RedisBitStore(std::shared_ptr<RedisShared> shared, std::string name,
                             const FilterConfig& config, uint64_t filter_expires_at_ms,
                             std::string shard_token, std::string_view incarnation)
    : shared_(std::move(shared)),
      name_(std::move(name)),
      config_(config),
      keys_(KeysFor(name_, shared_->keys)),
      checked_(CheckedValues(name_, config, incarnation)),
      companion_(CompanionKey(name_, shared_->keys, config)),
      filter_expires_at_ms_(filter_expires_at_ms),
      shard_token_(std::move(shard_token)) {}

// Counts that could not be sent are sent now, best effort.
RedisBitStore::~RedisBitStore() {
  std::lock_guard lock(mu_);
  // Not a structured binding: clang before 16 cannot capture one.
  for (auto& entry : cells_) {
    const std::shared_ptr<Cells>& cells = entry.second;
    const uint64_t uncounted = cells->pending.exchange(0);
    if (uncounted == 0) continue;
    (void)shared_->source->Run(cells->meta, Access::kMaster, /*idempotent=*/false,
                               [&](Connection& c) -> Status {
                                 CommandBuffer cmd;
                                 AppendCount(&cmd, *cells, uncounted);
                                 return Call(c, cmd).status();
                               });
  }
}

size_t RedisBitStore::preferred_batch() const {
  return shared_->options.batch_items * kBatchesPerCall;
}

Result<RedisBitStore::CellsPtr> RedisBitStore::CellsOf(uint64_t part) {
  std::lock_guard lock(mu_);
  if (auto it = cells_.find(part); it != cells_.end()) return CellsPtr(it->second);
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(config_, part));
  auto cells = std::make_unique<Cells>();
  cells->part = part;
  cells->geometry = sizing.geometry;
  cells->cell_bits = config_.cell_bits();
  cells->bytes = sizing.bytes(cells->cell_bits);
  cells->meta = keys_.meta;
  cells->checked = checked_;
  cells->temp_key = [this](std::string_view suffix) {
    return TempKeyFor(name_, shared_->keys, suffix);
  };
  if (part == 0 && config_.initial_parts() > 0) {
    cells->display = "filter '" + name_ + "'";
    cells->bitmap = keys_.bitmap;
    cells->scratch = keys_.scratch;
    cells->count_hash = keys_.meta;
    cells->count_field = "count";
  } else if (part < config_.initial_parts()) {
    // A shard: its own keys and metadata copy, in its own slot.
    const ShardKeys shard = ShardKeysFor(name_, shared_->keys, static_cast<uint32_t>(part),
                                         static_cast<uint32_t>(config_.initial_parts()));
    cells->display = "shard " + std::to_string(part) + " of filter '" + name_ + "'";
    const auto shards = static_cast<uint32_t>(config_.initial_parts());
    cells->temp_key = [this, part, shards](std::string_view suffix) {
      return ShardTempKeyFor(name_, shared_->keys, static_cast<uint32_t>(part), shards, suffix);
    };
    cells->meta = shard.meta;
    cells->checked.back() = ShardIdentity(name_, part, shard_token_);
    cells->bitmap = shard.bitmap;
    cells->scratch = shard.scratch;
    cells->count_hash = shard.meta;
    cells->count_field = "count";
  } else {
    const PartKeys part_keys = PartKeysFor(name_, shared_->keys, part);
    cells->display = "part " + std::to_string(part) + " of filter '" + name_ + "'";
    cells->bitmap = part_keys.bitmap;
    cells->scratch = part_keys.scratch;
    cells->count_hash = keys_.parts;
    cells->count_field = std::to_string(part);
    cells->listed = true;
  }
  if (sizing.geometry.bits * cells->cell_bits > kMaxBitsPerKey) {
    std::string what = cells->display + " needs " +
                       std::to_string(sizing.geometry.bits * cells->cell_bits) +
                       " bits, but one Redis key holds at most 2^32 bits (512 MiB)";
    // A part made after creation (a scaling filter's next layer): the filter
    // has outgrown Redis, out of room as at its layer limit.
    if (part > 0 && part >= config_.initial_parts()) return Status::ResourceExhausted(what);
    return Status::InvalidArgument(what);
  }
  CellsPtr made(cells_.emplace(part, std::move(cells)).first->second);
  // Parts gone by are forgotten (a call still using one holds it). One
  // whose count could not be sent is kept, for the destructor to send (a
  // call still adding to a forgotten slice may leave a count unsent: that
  // slice is out of the window already).
  if (const auto forgettable_below = KindOf(config_.kind).forgettable_below) {
    const uint64_t below = forgettable_below(config_, part);
    for (auto it = cells_.begin(); it != cells_.end() && it->first < below;) {
      it = it->second->pending.load() == 0 ? cells_.erase(it) : std::next(it);
    }
  }
  return made;
}

Status RedisBitStore::CheckBatch(const Cells& cells, const PartBatch& b) const {
  if (b.k != cells.geometry.hashes) {
    return Status::InvalidArgument("expected " + std::to_string(cells.geometry.hashes) +
                                   " offsets per item for " + cells.display + ", got " +
                                   std::to_string(b.k));
  }
  for (size_t i = 0; i < b.items * b.k; ++i) {
    if (b.offsets[i] >= cells.geometry.bits) {
      return Status::InvalidArgument("offset " + std::to_string(b.offsets[i]) + " is outside the " +
                                     std::to_string(cells.geometry.bits) + " cells of " +
                                     cells.display);
    }
  }
  return Status::Ok();
}

void RedisBitStore::AppendMetaCheck(CommandBuffer* cmd, const Cells& cells) const {
  cmd->Begin(3 + kChecked);
  cmd->Arg("HMGET");
  cmd->Arg(cells.meta);
  for (std::string_view f : kCheckedFields) cmd->Arg(f);
  cmd->Arg(kIncarnationField);
}

std::vector<std::string> RedisBitStore::ScriptKeys(
    std::initializer_list<std::string_view> keys) const {
  std::vector<std::string> out(keys.begin(), keys.end());
  if (!companion_.empty()) out.push_back(companion_);
  return out;
}

void RedisBitStore::AppendCompanionCheck(CommandBuffer* cmd) const {
  if (!companion_.empty()) AppendCompanionRead(cmd, companion_);
}

Status RedisBitStore::CheckCompanion(const redisReply* exec) const {
  if (companion_.empty()) return Status::Ok();
  return CheckCompanionReply(exec->element[exec->elements - 1], name_,
                             DisplayKey(companion_, shared_->keys), config_);
}

Status RedisBitStore::CheckMeta(const redisReply* r, const Cells& cells) const {
  if (r->type == REDIS_REPLY_ERROR) {
    return Status::DataLoss("metadata '" +
                            DisplayKey(KeysFor(name_, KeyMode::kPlain).meta, shared_->keys) +
                            "' is not a hash: " + ReplyString(r));
  }
  if (!IsArray(r, kChecked + 1)) return Unexpected("HMGET", r);
  if (r->element[0]->type == REDIS_REPLY_NIL) return Gone();
  for (size_t i = 0; i + 1 < kChecked; ++i) {
    if (ReplyText(r->element[i]) != cells.checked[i]) return ConfigChangedStatus(name_);
  }
  // As meta_state (redis_scripts.h): the name, and the incarnation if the
  // value carries one (a missing field reads "").
  const auto [name, incarnation] = SplitIdentity(cells.checked[kChecked - 1]);
  if (ReplyText(r->element[kChecked - 1]) != name ||
      (incarnation && ReplyText(r->element[kChecked]) != *incarnation)) {
    return ConfigChangedStatus(name_);
  }
  return Status::Ok();
}

Status RedisBitStore::Gone() const {
  return Status::NotFound("filter '" + name_ +
                          "' does not exist (it was dropped, or lost with the server's data)");
}

Status RedisBitStore::BitmapError(Connection& c, const Cells& cells, const redisReply* r) const {
  if (Contains(ReplyText(r), "WRONGTYPE")) {
    if (cells.bitmap == keys_.bitmap) {
      return WrongTypeStatus(DisplayKey(name_, shared_->keys), KeyType(c, cells.bitmap));
    }
    // A part's key is named by its part ("the key of part 3 of filter 'sc'"),
    // not quoted as if it were the key.
    return Status::Conflict("the key of " + cells.display + " holds a " + KeyType(c, cells.bitmap) +
                            ", not a bitmap");
  }
  return ReplyErrorStatus(ReplyText(r), c.server());
}

// An error reply from a guarded script or from Redis. Redis 7 passes
// "CODE message" through; older servers may prefix "ERR ".
Status RedisBitStore::ScriptError(Connection& c, const Cells& cells, const redisReply* r) const {
  const std::string_view text = ReplyText(r);
  if (Contains(text, "REDBLOOM_GONE")) return Gone();
  if (Contains(text, "REDBLOOM_CHANGED")) return ConfigChangedStatus(name_);
  if (Contains(text, "REDBLOOM_COMPANION")) {
    return CompanionChangedStatus(name_, DisplayKey(companion_, shared_->keys), config_);
  }
  if (Contains(text, "REDBLOOM_NOPART")) return Status::NotFound(cells.display + " does not exist");
  if (Contains(text, "REDBLOOM_VANISHED")) {
    return VanishedStatus(cells, shared_->keys, NumberAfter(text, "REDBLOOM_VANISHED"),
                          TimeParted(), !companion_.empty());
  }
  return BitmapError(c, cells, r);
}

// The stored count plus this handle's pending adds. The stored value can be
// briefly negative: a remove here may land before another client's pending
// count of the add it undoes; it reads as 0 then.
Result<uint64_t> RedisBitStore::ParseCount(const Cells& cells, const redisReply* r) const {
  int64_t stored = 0;
  if (r->type != REDIS_REPLY_NIL) {  // nil: a part whose count was never set
    const std::string_view text = ReplyText(r);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), stored);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      return Status::DataLoss(cells.display + ": corrupt item count '" + ReplyString(r) + "'");
    }
  }
  const int64_t total = stored + static_cast<int64_t>(cells.pending.load());
  return static_cast<uint64_t>(std::max<int64_t>(0, total));
}

void RedisBitStore::AppendCount(CommandBuffer* cmd, const Cells& cells, uint64_t delta) const {
  BeginEval(cmd, scripts::kAddCount, ScriptKeys({cells.meta, cells.count_hash}), kChecked + 2);
  for (const auto& v : cells.checked) cmd->Arg(v);
  cmd->Arg(delta);
  cmd->Arg(cells.count_field);
}

Status WaitForReplicas(Connection& c, const RedisShared& shared) {
  if (shared.wait_replicas <= 0) return Status::Ok();
  CommandBuffer cmd;
  cmd.Command(
      {"WAIT", std::to_string(shared.wait_replicas), std::to_string(shared.wait_timeout.count())});
  // The server answers WAIT only after wait_timeout_ms: a read that gave up
  // at command_timeout_ms before that made a write no replica confirmed a
  // deadline_exceeded (not retried, and closing the connection) instead of
  // not_replicated.
  Connection::LongerWait longer(c, shared.wait_timeout);
  REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
  if (r->type != REDIS_REPLY_INTEGER) return Unexpected("WAIT", r.get());
  if (r->integer < shared.wait_replicas) {
    return NotReplicatedStatus(c.server().display, static_cast<int>(r->integer),
                               shared.wait_replicas, shared.wait_timeout);
  }
  return Status::Ok();
}

// ---- Parts ------------------------------------------------------------------

const char* RedisBitStore::MadeField() const {
  return KindOf(config_.kind).dense_parts ? "layers" : "newest_slice";
}

bool RedisBitStore::ReadsMade(bool list_parts) const { return list_parts || TimeParted(); }

Status RedisBitStore::LostNewestSlice(uint64_t slice, std::string_view how) const {
  return Status::DataLoss(
      "window filter '" + name_ + "' has lost slice " + std::to_string(slice) +
      ", the newest its metadata records made, before its expiry: " + std::string(how) +
      " (deleted or evicted; set maxmemory-policy " + "noeviction or volatile-*)");
}

Status RedisBitStore::CheckLayersListed(std::span<const uint64_t> parts,
                                        const redisReply* layers) const {
  if (layers->type != REDIS_REPLY_STRING) return Status::Ok();  // none recorded (older builds)
  Result<uint64_t> made = ParseUint64(ReplyText(layers));
  if (!made.ok()) return Status::Ok();  // ParseMeta reports a corrupt field
  if (TimeParted()) {
    // The newest slice made must be listed until its expiry: the parts list
    // and that slice both gone (evicted, deleted) read every item absent.
    if (std::binary_search(parts.begin(), parts.end(), *made) || SliceMayHaveExpired(*made)) {
      return Status::Ok();
    }
    return LostNewestSlice(
        *made, "its parts list " + DisplayKey(keys_.parts, shared_->keys) + " no longer names it");
  }
  if (!KindOf(config_.kind).dense_parts) return Status::Ok();
  for (uint64_t p = 0; p < *made; ++p) {
    if (!std::binary_search(parts.begin(), parts.end(), p)) {
      return Status::DataLoss(std::string(FilterKindName(config_.kind)) + " filter '" + name_ +
                              "' has lost layer " + std::to_string(p) + " from its parts list " +
                              DisplayKey(keys_.parts, shared_->keys) +
                              " (deleted or evicted?), though its metadata records " +
                              std::to_string(*made) + " layers made");
    }
  }
  return Status::Ok();
}

bool RedisBitStore::TimeParted() const { return KindOf(config_.kind).time_parts != nullptr; }

bool RedisBitStore::SliceMayHaveExpired(uint64_t part) const {
  const TimeParts* t = KindOf(config_.kind).time_parts;
  return t != nullptr && t->may_have_expired(config_, part, filter_expires_at_ms_,
                                             shared_->options.clock->NowMillis());
}

uint64_t RedisBitStore::OldestSureSlice() const {
  const TimeParts* t = KindOf(config_.kind).time_parts;
  return t == nullptr
             ? UINT64_MAX
             : t->oldest_sure(config_, filter_expires_at_ms_, shared_->options.clock->NowMillis());
}

Result<std::vector<uint64_t>> RedisBitStore::ListParts() {
  std::vector<uint64_t> live;
  Status s = shared_->source->Run(
      keys_.meta, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
        live.clear();
        CommandBuffer cmd;
        cmd.Command({"HMGET", keys_.meta, "format", MadeField(), std::string(kIncarnationField)});
        cmd.Command({"HKEYS", keys_.parts});
        REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr meta, c.ReadOk());
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.ReadOk());
        if (!IsArray(meta.get(), 3)) return Unexpected("HMGET", meta.get());
        if (meta->element[0]->type == REDIS_REPLY_NIL) return Gone();
        if (!IsArray(r.get(), 0)) return Unexpected("HKEYS", r.get());
        // The parts of another incarnation of the name (dropped and created
        // again, perhaps as another kind) are not this handle's: a scaling
        // handle read a window's slice numbers as layers (data_loss), a
        // window handle a scaling filter's layers as expired slices (an
        // empty export, answered ok). A conflict, which reopens.
        if (const std::optional<std::string_view> ours = SplitIdentity(checked_.back()).second;
            ours && ReplyText(meta->element[2]) != *ours) {
          return ConfigChangedStatus(name_);
        }
        // Whether the filter went (dropped, or expired with all its keys:
        // Gone) or was dropped and created again (another incarnation: a
        // conflict, which the caller answers by reopening) since its
        // metadata was read: then its parts went with it. Only OK leaves a
        // missing part lost. (A re-create read as a loss was data_loss for
        // redbloomd's GETs racing a DELETE and a PUT.)
        auto changed_since = [&]() -> Status {
          CommandBuffer meta_now;
          meta_now.Command({"EXISTS", keys_.meta});
          meta_now.Command({"HGET", keys_.meta, std::string(kIncarnationField)});
          REDBLOOM_RETURN_IF_ERROR(c.Append(meta_now));
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr m, c.ReadOk());
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr now, c.ReadOk());
          if (m->type == REDIS_REPLY_INTEGER && m->integer == 0) return Gone();
          const std::optional<std::string_view> ours = SplitIdentity(checked_.back()).second;
          if (ours && ReplyText(now.get()) != *ours) return ConfigChangedStatus(name_);
          return Status::Ok();
        };
        std::vector<uint64_t> parts;
        for (size_t i = 0; i < r->elements; ++i) {
          REDBLOOM_ASSIGN_OR_RETURN(
              uint64_t p, PartOfField(name_, ReplyText(r->element[i]), ReplyString(r->element[i]),
                                      keys_.parts, shared_->keys));
          parts.push_back(p);
        }
        {
          std::vector<uint64_t> listed = parts;
          for (uint64_t p = 0; p < config_.initial_parts(); ++p) listed.push_back(p);
          std::sort(listed.begin(), listed.end());
          if (Status listed_ok = CheckLayersListed(listed, meta->element[1]); !listed_ok.ok()) {
            REDBLOOM_RETURN_IF_ERROR(changed_since());
            return listed_ok;
          }
        }
        if (parts.empty()) return Status::Ok();
        CommandBuffer exists;
        for (uint64_t p : parts)
          exists.Command({"EXISTS", PartKeysFor(name_, shared_->keys, p).bitmap});
        REDBLOOM_RETURN_IF_ERROR(c.Append(exists));
        std::vector<uint64_t> expired;
        for (uint64_t p : parts) {
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr e, c.ReadOk());
          if (e->type != REDIS_REPLY_INTEGER) return Unexpected("EXISTS", e.get());
          (e->integer == 1 ? live : expired).push_back(p);
        }
        if (!expired.empty() && KindOf(config_.kind).dense_parts) {
          // A scaling filter's layers never expire alone (they share the
          // filter's TTL): a listed layer whose key is gone was deleted or
          // evicted. Forgetting it would leave its items absent, and the
          // next add would make it again, empty. Unless the filter went.
          REDBLOOM_RETURN_IF_ERROR(changed_since());
          const uint64_t lost = expired.front();
          return Status::DataLoss(
              std::string(FilterKindName(config_.kind)) + " filter '" + name_ +
              "' has lost layer " + std::to_string(lost) + ": its key " +
              PartKeysFor(name_, shared_->keys, lost).bitmap +
              " is gone (deleted or evicted), though the filter's parts list records it");
        }
        // A window slice's key expires, by the server's clock, one slice
        // after the slice left the window. One gone well before that was
        // deleted or evicted: forgetting it would answer "absent" for its
        // items (every later check reads the list), so it stays listed, and
        // the check that reads it fails with data_loss until the slice would
        // have expired. The grace covers clocks apart by up to a slice (or a
        // second, for short slices).
        // One whose key expired stays listed for a window more: a client
        // whose clock runs behind (up to a window) still reads it as in its
        // window, and must meet it listed and gone (data_loss, naming the
        // clock), not unlisted, which reads as a slice never made ("absent"
        // for its items, once a client with the right clock had pruned it).
        std::vector<uint64_t> lost;
        if (const TimeParts* t = KindOf(config_.kind).time_parts) {
          const uint64_t now = shared_->options.clock->NowMillis();
          std::erase_if(expired, [&](uint64_t p) {
            if (!SliceMayHaveExpired(p)) {
              lost.push_back(p);
              return true;
            }
            return !t->unlist_expired(config_, p, filter_expires_at_ms_, now);
          });
        }
        if (!expired.empty()) {
          // Forget parts whose keys expired, so the list stays short.
          // Housekeeping: the listing stands without it, and a user that
          // may only read (the README's reader, whose scripts cannot HDEL)
          // or a server that refuses writes leaves it to the next writer's
          // listing. A refusal is a reply, so the connection stays in step;
          // a lost connection still fails the call (and Run retries it).
          std::vector<std::string> prune_keys = {keys_.parts};
          for (uint64_t p : expired)
            prune_keys.push_back(PartKeysFor(name_, shared_->keys, p).bitmap);
          CommandBuffer prune;
          BeginEval(&prune, scripts::kPruneParts, prune_keys, expired.size());
          for (uint64_t p : expired) prune.Arg(p);
          REDBLOOM_RETURN_IF_ERROR(c.Append(prune));
          REDBLOOM_RETURN_IF_ERROR(c.Read().status());
        }
        if (!lost.empty()) {
          REDBLOOM_RETURN_IF_ERROR(changed_since());
          return Status::DataLoss("window filter '" + name_ + "' has lost slice " +
                                  std::to_string(lost.front()) + ": its key " +
                                  PartKeysFor(name_, shared_->keys, lost.front()).bitmap +
                                  " is gone (deleted or evicted) while the slice is in the window");
        }
        return Status::Ok();
      });
  if (!s.ok()) return s;
  for (uint64_t p = 0; p < config_.initial_parts(); ++p) live.push_back(p);
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  return live;
}

Status RedisBitStore::CreatePart(uint64_t part, uint64_t expires_at_ms) {
  REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(part));
  if (!cells->listed) return Status::Ok();  // exists from creation on
  const uint64_t expires_at = CapExpiry(expires_at_ms, filter_expires_at_ms_);
  // Idempotent: creating a part that exists changes nothing.
  return shared_->source->Run(
      cells->meta, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
        CommandBuffer cmd;
        Connection::LongerWait wait(c, Connection::AllocationWait(cells->bytes));
        BeginEval(&cmd, scripts::kCreatePart, ScriptKeys({cells->meta, cells->bitmap, keys_.parts}),
                  kChecked + 6);
        for (const auto& v : cells->checked) cmd.Arg(v);
        cmd.Arg(part);
        cmd.Arg(cells->bytes);
        cmd.Arg(expires_at);
        cmd.Arg(filter_expires_at_ms_);
        cmd.Arg(KindOf(config_.kind).dense_parts ? "1" : "0");
        cmd.Arg(OldestSureSlice());
        REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
        constexpr std::string_view kNoRoom = "REDBLOOM_NOROOM ";
        if (r->type == REDIS_REPLY_ERROR && ReplyText(r.get()).starts_with(kNoRoom)) {
          std::string_view used_max = ReplyText(r.get()).substr(kNoRoom.size());
          const size_t space = used_max.find(' ');
          return Status::ResourceExhausted(
              c.server().display + " has no room for part " + std::to_string(part) +
              " of filter '" + name_ + "': its " + std::to_string(cells->bytes) +
              " bytes and the " + std::string(used_max.substr(0, space)) +
              " bytes in use exceed maxmemory " + std::string(used_max.substr(space + 1)));
        }
        constexpr std::string_view kLost = "REDBLOOM_LOST ";
        if (r->type == REDIS_REPLY_ERROR && ReplyText(r.get()).starts_with(kLost)) {
          uint64_t lost = 0;
          const std::string_view text = ReplyText(r.get()).substr(kLost.size());
          std::from_chars(text.data(), text.data() + text.size(), lost);
          return LostNewestSlice(
              lost, "its key is gone, found as slice " + std::to_string(part) + " was made");
        }
        constexpr std::string_view kPast = "REDBLOOM_PAST ";
        if (r->type == REDIS_REPLY_ERROR && ReplyText(r.get()).starts_with(kPast)) {
          // "unknown": the part expired as it was made (no TIME allowed).
          std::optional<uint64_t> server_ms;
          const std::string_view text = ReplyText(r.get()).substr(kPast.size());
          if (uint64_t ms = 0;
              std::from_chars(text.data(), text.data() + text.size(), ms).ec == std::errc()) {
            server_ms = ms;
          }
          return ExpiryPastStatus(c.server().display,
                                  "part " + std::to_string(part) + " of filter '" + name_ + "'",
                                  expires_at, server_ms);
        }
        if (r->type == REDIS_REPLY_ERROR) return ScriptError(c, *cells, r.get());
        return Status::Ok();
      });
}

// ---- Checks -----------------------------------------------------------------

Status RedisBitStore::Test(std::span<PartBatch> batches, std::vector<uint64_t>* parts_now) {
  const size_t batch = shared_->options.batch_items;
  // Chunks by the metadata key that routes them: the filter's own, and one
  // per shard of a sharded filter (each in its own slot, maybe node).
  std::map<std::string, std::vector<Chunk>> groups;
  for (PartBatch& b : batches) {
    REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(b.part));
    REDBLOOM_RETURN_IF_ERROR(CheckBatch(*cells, b));
    for (size_t first = 0; first < b.items; first += batch) {
      groups[cells->meta].push_back(Chunk{&b, cells, first, std::min(batch, b.items - first), {}});
    }
  }
  // The part list rides with the filter's own first transaction, if any.
  if (parts_now != nullptr && groups.count(keys_.meta) == 0) {
    REDBLOOM_ASSIGN_OR_RETURN(*parts_now, ListParts());
    parts_now = nullptr;
  }
  std::vector<std::string> keys;
  std::vector<std::function<Status()>> tasks;
  for (auto& group : groups) {  // not a structured binding, as in ~RedisBitStore
    const std::string& key = group.first;
    auto& chunks = group.second;
    keys.push_back(key);
    std::vector<uint64_t>* list = key == keys_.meta ? parts_now : nullptr;
    tasks.push_back([this, &key, &chunks, list, batch] {
      const std::vector<size_t> ends = TestTransactions(chunks, batch);
      size_t done = 0;
      return RunReads(key, [&](Connection& c) { return TestOn(c, chunks, ends, &done, list); });
    });
  }
  if (tasks.size() == 1) return tasks.front()();
  return shared_->source->InParallel(keys, tasks, ConnectionSource::OnFailure::kStopThatServer);
}

// Chunks of several parts go in one transaction, up to `batch` items in all:
// a check of a window's 24 slices, or of a scaling filter's layers, pays one
// MULTI/EXEC and one metadata read instead of one per part (redis-server
// spent 5.2 ms per single-item check of a 1,024-slice window, most of it in
// those). Only chunks whose metadata must read alike share one.
std::vector<size_t> RedisBitStore::TestTransactions(const std::vector<Chunk>& chunks,
                                                    size_t batch) {
  std::vector<size_t> ends;
  size_t items = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const bool joins = i > 0 && items + chunks[i].n <= batch &&
                       chunks[i].cells->checked == chunks[i - 1].cells->checked;
    if (i > 0 && !joins) {
      ends.push_back(i);
      items = 0;
    }
    items += chunks[i].n;
  }
  if (!chunks.empty()) ends.push_back(chunks.size());
  return ends;
}

Status RedisBitStore::RunReads(const std::string& key,
                               const std::function<Status(Connection&)>& op) {
  // A Redis before 7 cannot compile the script's flags, and a user without
  // +eval may not run it.
  const auto unusable = [](const Status& s) {
    return (s.code() == StatusCode::kInternal &&
            s.message().find("Error compiling script") != std::string::npos) ||
           IsPermanentFailure(s);
  };
  const auto as_script = [&](Connection& c) {
    c.set_script_reads(true);
    Status s = op(c);
    c.set_script_reads(false);
    return s;
  };
  return shared_->source->Run(key, Access::kReplicaOk, /*idempotent=*/true, [&](Connection& c) {
    // Refused for OOM a moment ago: straight to the script. A server out of
    // memory stays so for a while, and each refused MULTI cost as much
    // server time as the script (block: 1.0 us per checked item at OOM
    // against 0.33 normally).
    if (c.oom_recently() && !c.script_reads()) {
      Status s = as_script(c);
      if (!unusable(s) || c.broken()) return s;
    }
    const Status s = op(c);
    if (s.ok() || !c.saw_oom() || c.broken() || c.script_reads()) return s;
    Status again = as_script(c);
    if (unusable(again)) return s;  // the OOM stands
    if (again.ok()) c.RememberOom();
    return again;
  });
}

// Tests transactions [*done, ends.size()) on one connection, advancing *done
// past every transaction whose answer was read (transaction t holds chunks
// [ends[t - 1], ends[t])). Every transaction of the call goes out before the
// first answer is read: a check of more parts than one transaction holds is
// then still one round trip. A call holds at most preferred_batch() items,
// so what is in flight stays bounded (~64 transactions of batch_items).
Status RedisBitStore::TestOn(Connection& c, std::vector<Chunk>& chunks,
                             const std::vector<size_t>& ends, size_t* done,
                             std::vector<uint64_t>* parts_now) {
  CommandBuffer cmd;  // hiredis copies each command, so one buffer serves all
  // The part list rides with the first transaction of the call.
  const size_t list_at = parts_now != nullptr ? *done : SIZE_MAX;
  if (parts_now != nullptr && *done > 0) parts_now = nullptr;  // read before a retry
  const auto txn = [&](size_t t) {
    const size_t begin = t == 0 ? 0 : ends[t - 1];
    return std::span<Chunk>(chunks).subspan(begin, ends[t] - begin);
  };
  for (size_t t = *done; t < ends.size(); ++t) {
    REDBLOOM_RETURN_IF_ERROR(SendTest(c, cmd, txn(t), t == list_at));
  }
  while (*done < ends.size()) {
    Status s = ReadTest(c, txn(*done), *done == list_at, parts_now);
    if (!s.ok()) {
      // Every reply of the transactions still on the wire must be read, or
      // the next user of this connection would read them as its own.
      size_t replies = 0;
      for (size_t t = *done + 1; t < ends.size(); ++t) {
        replies += TransactionReplies(c, TestQueued(txn(t), t == list_at));
      }
      Drain(c, replies);
      return s;
    }
    ++*done;
  }
  return Status::Ok();
}

// One transaction: every chunk's reads, the metadata check (once: the
// chunks' metadata reads alike), then each chunk's size and listing, the
// part list if asked, the companion check.
Status RedisBitStore::SendTest(Connection& c, CommandBuffer& cmd, std::span<Chunk> chunks,
                               bool list_parts) {
  cmd.Clear();
  Streamer stream(c, cmd, Streamer::Kind::kReads);
  // MULTI makes the cells, the metadata and the parts' sizes one snapshot: a
  // filter dropped or re-created in between cannot pass the check with the
  // old cells. Every command here is allowed on read-only replicas.
  cmd.Command({"MULTI"});
  for (Chunk& chunk : chunks) {
    const Cells& cells = *chunk.cells;
    const uint32_t k = chunk.batch->k;
    const uint64_t* o = chunk.batch->offsets + chunk.first * k;
    const size_t count = chunk.n * k;
    // Items whose bits share a 64-byte block: GETRANGEs of the blocks,
    // nearby ones merged (redis_ops.h).
    chunk.blocks = !cells.counting() && ItemsInBlocks(o, chunk.n, k);
    chunk.reads = 1;
    if (chunk.blocks) {
      BlockReads& plan = chunk.block_reads;
      PlanBlockReads(o, chunk.n, k, &plan);
      chunk.reads = plan.first.size();
      for (size_t r = 0; r < plan.first.size(); ++r) {
        AppendRangeRead(&cmd, cells.bitmap, plan.first[r], plan.last[r]);
        if (r % 64 == 63) REDBLOOM_RETURN_IF_ERROR(stream.MaybePush());
      }
      continue;
    }
    SortedOrder(o, count, &chunk.order);
    cmd.Begin(2 + 3 * count);
    cmd.Arg("BITFIELD_RO");
    cmd.Arg(cells.bitmap);
    for (size_t i = 0; i < count; ++i) {
      if (cells.counting()) {
        cmd.Raw(kGetU4, 2);
        cmd.Arg('#', o[chunk.order[i]]);
      } else {
        cmd.Raw(kGetU1, 2);
        cmd.Arg(o[chunk.order[i]]);
      }
      if (i % 256 == 255) REDBLOOM_RETURN_IF_ERROR(stream.MaybePush());
    }
  }
  AppendMetaCheck(&cmd, *chunks.front().cells);
  for (const Chunk& chunk : chunks) AppendPresence(&cmd, *chunk.cells, keys_.parts);
  if (list_parts) cmd.Command({"HKEYS", keys_.parts});
  // The record of the parts made, for the listing and, on a window, for the
  // slices' own check (ReadChunk).
  if (ReadsMade(list_parts)) cmd.Command({"HGET", keys_.meta, MadeField()});
  AppendCompanionCheck(&cmd);
  cmd.Command({"EXEC"});
  return stream.Finish();
}

size_t RedisBitStore::TestQueued(std::span<const Chunk> chunks, bool list_parts) const {
  size_t queued = 1 + (list_parts ? 1 : 0) + (ReadsMade(list_parts) ? 1 : 0) + CompanionReplies();
  for (const Chunk& chunk : chunks) queued += chunk.reads + PresenceReplies(*chunk.cells);
  return queued;
}

Status RedisBitStore::ReadTest(Connection& c, std::span<const Chunk> chunks, bool list_parts,
                               std::vector<uint64_t>* parts_now) {
  REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, TestQueued(chunks, list_parts)));
  size_t at = 0;  // the chunks' reads come first, in order
  for (const Chunk& chunk : chunks) at += chunk.reads;
  REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[at++], *chunks.front().cells));
  REDBLOOM_RETURN_IF_ERROR(CheckCompanion(exec.get()));
  const size_t presence = at;
  for (const Chunk& chunk : chunks) at += PresenceReplies(*chunk.cells);
  const redisReply* made =
      ReadsMade(list_parts) ? exec->element[at + (list_parts ? 1 : 0)] : nullptr;
  if (list_parts && parts_now != nullptr) {
    REDBLOOM_RETURN_IF_ERROR(ReadPartsList(exec->element[at], made, parts_now));
  }
  std::optional<uint64_t> newest;  // a window's newest slice made, if recorded
  if (TimeParted() && made->type == REDIS_REPLY_STRING) {
    if (Result<uint64_t> n = ParseUint64(ReplyText(made)); n.ok()) newest = *n;
  }
  size_t reads = 0;
  at = presence;
  for (const Chunk& chunk : chunks) {
    REDBLOOM_RETURN_IF_ERROR(ReadChunk(c, chunk, exec.get(), reads, at, newest));
    reads += chunk.reads;
    at += PresenceReplies(*chunk.cells);
  }
  return Status::Ok();
}

Status RedisBitStore::ReadPartsList(const redisReply* r, const redisReply* layers,
                                    std::vector<uint64_t>* parts_now) const {
  if (r->type == REDIS_REPLY_ERROR && ReplyText(r).starts_with("WRONGTYPE")) {
    // Another program keeps another type under the parts list's key.
    return WrongTypeStatus(DisplayKey(keys_.parts, shared_->keys), "value of another type",
                           "a hash");
  }
  if (!IsArray(r, 0)) return Unexpected("HKEYS", r);
  parts_now->clear();
  for (uint64_t p = 0; p < config_.initial_parts(); ++p) parts_now->push_back(p);
  for (size_t i = 0; i < r->elements; ++i) {
    // As ListParts reads them: "01" is no name a script writes.
    REDBLOOM_ASSIGN_OR_RETURN(
        uint64_t p, PartOfField(name_, ReplyText(r->element[i]), ReplyString(r->element[i]),
                                keys_.parts, shared_->keys));
    parts_now->push_back(p);
  }
  std::sort(parts_now->begin(), parts_now->end());
  parts_now->erase(std::unique(parts_now->begin(), parts_now->end()), parts_now->end());
  return CheckLayersListed(*parts_now, layers);
}

// One chunk's answers: its reads at exec->element[reads], its STRLEN (and
// HEXISTS, for a listed part) at exec->element[at].
Status RedisBitStore::ReadChunk(Connection& c, const Chunk& chunk, const redisReply* exec,
                                size_t reads, size_t at, std::optional<uint64_t> newest) const {
  const Cells& cells = *chunk.cells;
  bool exists = true;
  if (cells.listed) {
    REDBLOOM_ASSIGN_OR_RETURN(exists, PartListed(exec->element[at + 1], name_, keys_.parts));
  }
  PartBatch& b = *chunk.batch;
  const uint32_t k = b.k;
  const redisReply* length = exec->element[at];
  if (!exists) {  // a part never created holds nothing
    // Parts are made and listed in one script, and forgotten only once
    // their keys are gone: a key with bits that the list does not name
    // means the list was deleted or evicted (it has no TTL). Reading the
    // part as empty would answer "absent" for every item in it.
    if (length->type == REDIS_REPLY_INTEGER && length->integer > 0) {
      return Status::DataLoss("filter '" + name_ + "': its parts list " +
                              DisplayKey(keys_.parts, shared_->keys) + " does not name " +
                              cells.display + ", whose key holds bits: the list was deleted or " +
                              "evicted (set maxmemory-policy noeviction or volatile-*)");
    }
    // Neither listed nor kept, yet the newest slice the metadata records
    // made: the list and the slice went together (evicted, deleted).
    if (newest == b.part && !SliceMayHaveExpired(b.part)) {
      return LostNewestSlice(b.part, "its key and its name in the parts list " +
                                         DisplayKey(keys_.parts, shared_->keys) + " are gone");
    }
    std::fill(b.out + chunk.first, b.out + chunk.first + chunk.n, 0);
    return Status::Ok();
  }
  if (length->type == REDIS_REPLY_ERROR) return BitmapError(c, cells, length);
  if (length->type != REDIS_REPLY_INTEGER) return Unexpected("STRLEN", length);
  if (length->integer == 0 && SliceMayHaveExpired(b.part)) {
    // A window slice whose key expired on time, still listed (a check that
    // started as it left the window): it holds nothing, as an unlisted one.
    std::fill(b.out + chunk.first, b.out + chunk.first + chunk.n, 0);
    return Status::Ok();
  }
  if (static_cast<uint64_t>(length->integer) != cells.bytes) {
    return VanishedStatus(cells, shared_->keys, static_cast<uint64_t>(length->integer),
                          TimeParted(), !companion_.empty());
  }
  if (chunk.blocks) {
    const BlockReads& plan = chunk.block_reads;
    for (size_t i = 0; i < chunk.n; ++i) {
      const uint32_t range = plan.range_of[i];
      const redisReply* r = exec->element[reads + range];
      if (r->type == REDIS_REPLY_ERROR) return BitmapError(c, cells, r);
      REDBLOOM_RETURN_IF_ERROR(DecodeBlockRead(
          r, plan.first[range], b.offsets + (chunk.first + i) * k, k, &b.out[chunk.first + i]));
    }
    return Status::Ok();
  }
  const redisReply* bits = exec->element[reads];
  if (bits->type == REDIS_REPLY_ERROR) return BitmapError(c, cells, bits);
  if (!IsArray(bits, chunk.n * k)) return Unexpected("BITFIELD_RO", bits);
  // Back into batch order (the ops went in chunk.order), then an item is
  // present when all its k cells are set.
  std::vector<uint8_t> set(chunk.n * k);
  for (size_t i = 0; i < chunk.n * k; ++i) {
    set[chunk.order[i]] = bits->element[i]->integer != 0 ? 1 : 0;
  }
  for (size_t i = 0; i < chunk.n; ++i) {
    uint8_t all = 1;
    for (uint32_t j = 0; j < k; ++j) all &= set[i * k + j];
    b.out[chunk.first + i] = all;
  }
  return Status::Ok();
}

// ---- Counts, stats, bulk ----------------------------------------------------

Status RedisBitStore::CheckPresence(Connection& c, const Cells& cells, const redisReply* exec,
                                    size_t at) const {
  if (cells.listed) {
    REDBLOOM_RETURN_IF_ERROR(
        RequireListed(exec->element[at + 1], name_, keys_.parts, cells.display));
  }
  const redisReply* length = exec->element[at];
  if (length->type == REDIS_REPLY_ERROR) return BitmapError(c, cells, length);
  if (length->type != REDIS_REPLY_INTEGER) return Unexpected("STRLEN", length);
  if (static_cast<uint64_t>(length->integer) != cells.bytes) {
    return VanishedStatus(cells, shared_->keys, static_cast<uint64_t>(length->integer),
                          /*window_slice=*/false, !companion_.empty());
  }
  return Status::Ok();
}

Result<uint64_t> RedisBitStore::ItemCount(uint64_t part) {
  REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(part));
  uint64_t count = 0;
  Status s = RunReads(cells->meta, [&](Connection& c) -> Status {
    CommandBuffer cmd;
    cmd.Command({"MULTI"});
    AppendMetaCheck(&cmd, *cells);
    cmd.Command({"HGET", cells->count_hash, cells->count_field});
    AppendCompanionCheck(&cmd);
    cmd.Command({"EXEC"});
    REDBLOOM_RETURN_IF_ERROR(SendReads(c, cmd));
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 2 + CompanionReplies()));
    REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[0], *cells));
    REDBLOOM_RETURN_IF_ERROR(CheckCompanion(exec.get()));
    REDBLOOM_ASSIGN_OR_RETURN(count, ParseCount(*cells, exec->element[1]));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return count;
}

Result<FilterStats> RedisBitStore::Stats(uint64_t part) {
  REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(part));
  FilterStats stats;
  if (cells->counting()) {
    // BITCOUNT counts bits, not non-zero counters: read the cells instead.
    std::string chunk;
    for (uint64_t offset = 0; offset < cells->bytes; offset += kBulkChunk) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(kBulkChunk, cells->bytes - offset));
      REDBLOOM_RETURN_IF_ERROR(ReadBits(part, offset, len, &chunk));
      stats.bits_set += NonZeroNibbles(chunk);
    }
    REDBLOOM_ASSIGN_OR_RETURN(stats.items_added, ItemCount(part));
    return stats;
  }
  Status s = RunReads(cells->meta, [&](Connection& c) -> Status {
    CommandBuffer cmd;
    cmd.Command({"MULTI"});
    cmd.Command({"BITCOUNT", cells->bitmap});
    AppendMetaCheck(&cmd, *cells);
    cmd.Command({"HGET", cells->count_hash, cells->count_field});
    AppendPresence(&cmd, *cells, keys_.parts);
    AppendCompanionCheck(&cmd);
    cmd.Command({"EXEC"});
    REDBLOOM_RETURN_IF_ERROR(SendReads(c, cmd));
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec,
                              ReadTransaction(c, 3 + PresenceReplies(*cells) + CompanionReplies()));
    REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[1], *cells));
    REDBLOOM_RETURN_IF_ERROR(CheckCompanion(exec.get()));
    REDBLOOM_RETURN_IF_ERROR(CheckPresence(c, *cells, exec.get(), 3));
    const redisReply* count = exec->element[0];
    if (count->type == REDIS_REPLY_ERROR) return BitmapError(c, *cells, count);
    if (count->type != REDIS_REPLY_INTEGER || count->integer < 0) {
      return Unexpected("BITCOUNT", count);
    }
    stats.bits_set = static_cast<uint64_t>(count->integer);
    REDBLOOM_ASSIGN_OR_RETURN(stats.items_added, ParseCount(*cells, exec->element[2]));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return stats;
}

Status RedisBitStore::Clear() {
  REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> parts, ListParts());
  for (uint64_t part : parts) {
    REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(part));
    // Idempotent: clearing twice leaves the same empty part.
    Status cleared = shared_->source->Run(
        cells->meta, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
          CommandBuffer cmd;
          BeginEval(&cmd, scripts::kClear,
                    ScriptKeys({cells->meta, cells->bitmap, cells->count_hash}), kChecked + 2);
          for (const auto& v : cells->checked) cmd.Arg(v);
          cmd.Arg(cells->bytes);
          cmd.Arg(cells->count_field);
          REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
          // A window slice that expired on time since the listing holds
          // nothing left to clear (it was data_loss, an audit).
          if (r->type == REDIS_REPLY_ERROR && Contains(ReplyText(r.get()), "REDBLOOM_VANISHED") &&
              NumberAfter(ReplyText(r.get()), "REDBLOOM_VANISHED") == 0 &&
              SliceMayHaveExpired(part)) {
            return Status::Ok();
          }
          if (r->type == REDIS_REPLY_ERROR) return ScriptError(c, *cells, r.get());
          cells->pending = 0;
          return Status::Ok();
        });
    if (!cleared.ok()) return cleared;
  }
  return Status::Ok();
}

Status RedisBitStore::ReadBits(uint64_t part, uint64_t offset, size_t len, std::string* out) {
  REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(part));
  out->clear();
  if (len == 0) return Status::Ok();
  return RunReads(cells->meta, [&](Connection& c) -> Status {
    CommandBuffer cmd;
    cmd.Command({"MULTI"});
    cmd.Begin(4);
    cmd.Arg("GETRANGE");
    cmd.Arg(cells->bitmap);
    cmd.Arg(offset);
    cmd.Arg(offset + len - 1);
    AppendMetaCheck(&cmd, *cells);
    AppendPresence(&cmd, *cells, keys_.parts);
    AppendCompanionCheck(&cmd);
    cmd.Command({"EXEC"});
    REDBLOOM_RETURN_IF_ERROR(SendReads(c, cmd));
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec,
                              ReadTransaction(c, 2 + PresenceReplies(*cells) + CompanionReplies()));
    REDBLOOM_RETURN_IF_ERROR(CheckMeta(exec->element[1], *cells));
    REDBLOOM_RETURN_IF_ERROR(CheckCompanion(exec.get()));
    REDBLOOM_RETURN_IF_ERROR(CheckPresence(c, *cells, exec.get(), 2));
    const redisReply* bytes = exec->element[0];
    if (bytes->type == REDIS_REPLY_ERROR) return BitmapError(c, *cells, bytes);
    if (bytes->type != REDIS_REPLY_STRING) return Unexpected("GETRANGE", bytes);
    out->assign(bytes->str, bytes->len);
    return Status::Ok();
  });
}

Result<std::string> RedisBitStore::SwapMark() {
  std::string mark;
  REDBLOOM_RETURN_IF_ERROR(RunReads(keys_.meta, [&](Connection& c) -> Status {
    // A transaction, as every read: at maxmemory reads go as a script.
    CommandBuffer cmd;
    cmd.Command({"MULTI"});
    cmd.Command({"HGET", keys_.meta, "swaps"});
    cmd.Command({"EXEC"});
    REDBLOOM_RETURN_IF_ERROR(SendReads(c, cmd));
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, ReadTransaction(c, 1));
    const redisReply* r = exec->element[0];
    if (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_STRING) return Unexpected("HGET", r);
    mark = r->type == REDIS_REPLY_NIL ? std::string() : std::string(ReplyText(r));
    return Status::Ok();
  }));
  return mark;
}

// Uploads `bitmap` to a temporary key piece by piece (all-zero pieces are
// skipped: a load of 1e6 items into a 1e8-item filter sends ~1% of it), and
// merges each piece with one short script. A run that stops part way because
// the slot is migrating (ASK, TRYAGAIN: MIGRATE moves the merged bits with
// the keys) is run again from the first piece whose merge it did not see
// succeed; any other retry (a lost connection, a failover) starts over, as
// what the old master merged may never have reached its replica, and a WAIT
// must follow writes of its own connection. ORing bits is idempotent, so a
// plain filter's merge is also retried after a lost answer (which may add
// `new_items` to the count twice). Adding counters is not: a counting
// filter's merge is retried only after redirects (nothing ran where one was
// answered), and one that fails part way has added some pieces; running it
// again counts those twice, which only keeps items present longer, never
// makes one absent. (A redirected run restarted at the first piece once,
// adding the counters of those before the redirect twice.)
Status RedisBitStore::OrBitsAt(uint64_t part, uint64_t at, std::string_view bitmap,
                               uint64_t new_items) {
  REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(part));
  const size_t chunk = cells->counting() ? kCounterMergeChunk : kMergeChunk;
  const std::string_view script = cells->counting() ? scripts::kAddRange : scripts::kOrRange;
  if (at > cells->bytes || bitmap.size() > cells->bytes - at) {
    return Status::InvalidArgument("bytes [" + std::to_string(at) + ", " +
                                   std::to_string(at + bitmap.size()) + ") lie outside the " +
                                   std::to_string(cells->bytes) + " bytes of " + cells->display);
  }
  // Pending adds are counted along with the load.
  const uint64_t uncounted = cells->pending.exchange(0);
  // One upload key per piece for the call, whatever its retries: a piece
  // uploaded to the node importing the slot, whose merge then met TRYAGAIN
  // (the filter's keys not there yet), stayed until its expiry, and a
  // migration left 23-30 such 1 MiB keys per load (an audit); a retry
  // overwrites it now, and the last run's merge deletes it. Per piece, not
  // one for all: a SET still in flight on a connection given up for lost
  // would otherwise put another piece's bytes under the name a retry's
  // merge reads, at its offset.
  char call[17];
  std::snprintf(call, sizeof(call), "%016llx", static_cast<unsigned long long>(UniqueRandom64()));
  // Non-zero pieces only; the item count rides with the last one.
  std::vector<size_t> pieces;
  for (size_t offset = 0; offset < bitmap.size(); offset += chunk) {
    const std::string_view piece = bitmap.substr(offset, chunk);
    if (piece.find_first_not_of('\0') != std::string_view::npos) pieces.push_back(offset);
  }
  const uint64_t count = new_items + uncounted;
  if (pieces.empty() && count == 0) return Status::Ok();
  if (pieces.empty()) pieces.push_back(bitmap.size());  // only the count to add
  // Pieces [0, merged) were merged, by this run or an earlier one; kept
  // across runs only while the call follows a migration.
  size_t merged = 0;
  bool migrating = false;
  Status status = shared_->source->Run(
      cells->meta, Access::kMaster, /*idempotent=*/!cells->counting(),
      [&](Connection& c) -> Status {
        if (!migrating) merged = 0;
        // All merged, then WAIT lost: a plain filter's last piece goes again,
        // so that WAIT covers a write of this connection.
        if (merged == pieces.size() && !cells->counting()) --merged;
        // Which piece each reply owed answers, and whether it is its merge's.
        std::deque<std::pair<size_t, bool>> owed;
        for (size_t i = merged; i < pieces.size(); ++i) {
          const size_t offset = pieces[i];
          const bool last = i + 1 == pieces.size();
          const std::string upload =
              cells->temp_key(std::string(call) + "." + std::to_string(offset));
          const std::string scratch = upload + ":or";
          CommandBuffer cmd;
          if (offset < bitmap.size()) {
            // The upload expires by itself should this client die before the
            // script deletes it.
            cmd.Command({"SET", upload, bitmap.substr(offset, chunk), "PX", kUploadTtlMillis});
          }
          BeginEval(&cmd, script,
                    ScriptKeys({cells->meta, upload, cells->bitmap, cells->count_hash, scratch}),
                    kChecked + 4);
          for (const auto& v : cells->checked) cmd.Arg(v);
          cmd.Arg(at + offset);
          cmd.Arg(last ? count : uint64_t{0});
          cmd.Arg(cells->count_field);
          cmd.Arg(cells->bytes);
          REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
          if (offset < bitmap.size()) owed.emplace_back(i, false);
          owed.emplace_back(i, true);
          // Keep about two pieces in flight: the next upload travels while
          // the server merges the previous one.
          while (owed.size() > 4 || (last && !owed.empty())) {
            REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
            const auto [piece, is_merge] = owed.front();
            owed.pop_front();
            if (r->type == REDIS_REPLY_ERROR) {
              const Status err = ScriptError(c, *cells, r.get());
              if (const auto& moved = c.redirect();
                  moved && (moved->kind == ClusterRedirect::Kind::kAsk ||
                            moved->kind == ClusterRedirect::Kind::kTryAgain)) {
                migrating = true;
              }
              Drain(c, owed.size());
              return err;
            }
            if (is_merge) merged = piece + 1;
          }
        }
        return WaitForReplicas(c, *shared_);
      });
  // The count rode with the last piece: once that merged, it is in.
  if (!status.ok() && merged < pieces.size()) cells->pending += uncounted;
  return status;
}

}  // namespace redbloom::internal
