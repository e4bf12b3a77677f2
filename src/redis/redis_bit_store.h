// The cells of one Redis filter, every part of it (BitStore). Internal.
//
// Layout (docs/format.md): part 0 of plain, counting and scaling filters is a
// Redis string at key NAME in SETBIT order, so the Java seed service and
// redis-cli see the same bits; other parts are strings at TAG/part/P. Every
// operation is one pipelined round trip per batch, and checks the metadata
// and the part's size in the same transaction or script.
#ifndef REDBLOOM_SRC_REDIS_REDIS_BIT_STORE_H_
#define REDBLOOM_SRC_REDIS_REDIS_BIT_STORE_H_

#include <atomic>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/store.h"
#include "redis/connection_source.h"
#include "redis/redis_keys.h"

namespace redbloom::internal {

// What a Redis store and the bit stores opened from it share.
struct RedisShared {
  std::unique_ptr<ConnectionSource> source;
  KeyMode keys = KeyMode::kPlain;
  StoreOptions options;
  // wait_replicas: a write is acknowledged only once WAIT says this many
  // replicas have it (0: no WAIT), waiting at most wait_timeout.
  int wait_replicas = 0;
  std::chrono::milliseconds wait_timeout{1000};
  // `INFO replication` was refused (an ACL allowing `INFO memory` alone):
  // Warnings stops asking for it unless wait_replicas needs it, so that a
  // readiness probe does not fill the server's ACL LOG with denials.
  std::atomic<bool> replication_info_refused{false};
};

// With shared.wait_replicas, sends WAIT on the connection that just wrote
// and fails with kUnavailable if fewer replicas than asked confirm every
// write so far. Without it, a failover can lose writes the old master
// acknowledged but had not yet replicated: a lost add is a future false
// negative.
Status WaitForReplicas(Connection& c, const RedisShared& shared);

class RedisBitStore final : public BitStore {
 public:
  // `shard_token` names this incarnation of a sharded filter (metadata field
  // shard_token); empty for other filters. `incarnation` is the metadata's
  // kIncarnationField, checked by every call ("" for a filter made before it).
  RedisBitStore(std::shared_ptr<RedisShared> shared, std::string name, const FilterConfig& config,
                uint64_t filter_expires_at_ms, std::string shard_token,
                std::string_view incarnation);
  ~RedisBitStore() override;

  size_t preferred_batch() const override;
  Result<std::vector<uint64_t>> ListParts() override;
  Status CreatePart(uint64_t part, uint64_t expires_at_ms) override;
  Status Test(std::span<PartBatch> batches, std::vector<uint64_t>* parts_now) override;
  Status Add(std::span<PartBatch> batches) override;
  Status Remove(std::span<PartBatch> batches) override;
  Result<FilterStats> Stats(uint64_t part) override;
  Result<uint64_t> ItemCount(uint64_t part) override;
  Status Clear() override;
  Status ReadBits(uint64_t part, uint64_t offset, size_t len, std::string* out) override;
  Result<std::string> SwapMark() override;
  Status OrBitsAt(uint64_t part, uint64_t offset, std::string_view bytes,
                  uint64_t new_items) override;

  // The cells one operation works on: a filter's part.
  struct Cells {
    uint64_t part = 0;
    std::string display;               // "filter 'x'" or "part 3 of filter 'x'", for messages
    std::string meta;                  // the metadata hash every operation checks (the filter's,
                                       // or a shard's copy in the shard's slot); routes the cells
    std::vector<std::string> checked;  // the values of its kCheckedFields
    std::string bitmap;                // the key holding the cells
    std::string scratch;               // its add transaction's scratch key
    std::string count_hash;            // the hash holding its item count ...
    std::string count_field;           // ... in this field
    Geometry geometry;                 // offsets are in [0, geometry.bits)
    uint32_t cell_bits = 1;            // 1, or 4 for counting filters
    uint64_t bytes = 0;                // the key's exact length
    // A bulk load's temporary key with this suffix, in the cells' slot.
    std::function<std::string(std::string_view suffix)> temp_key;
    // True for parts listed in the parts hash (created later); false for
    // part 0 of kinds that have it from creation on.
    bool listed = false;
    // Added items whose count update has not been sent yet.
    mutable std::atomic<uint64_t> pending{0};

    bool counting() const { return cell_bits == 4; }
  };

 private:
  struct Chunk;
  // A part's keys and sizing, made once. A call holds its parts' Cells while
  // it runs, so a window filter's slices gone by can be forgotten meanwhile.
  using CellsPtr = std::shared_ptr<const Cells>;
  Result<CellsPtr> CellsOf(uint64_t part);
  Status CheckBatch(const Cells& cells, const PartBatch& b) const;
  Status CheckMeta(const redisReply* r, const Cells& cells) const;
  Status ScriptError(Connection& c, const Cells& cells, const redisReply* r) const;
  // The replies of AppendPresence at exec->element[at]: the part is listed
  // (if it must be) and its key holds its bytes, else why not.
  Status CheckPresence(Connection& c, const Cells& cells, const redisReply* exec, size_t at) const;
  Status BitmapError(Connection& c, const Cells& cells, const redisReply* r) const;
  Status Gone() const;
  Result<uint64_t> ParseCount(const Cells& cells, const redisReply* r) const;
  void AppendMetaCheck(CommandBuffer* cmd, const Cells& cells) const;
  // Filters whose strategy's Java side keeps a companion hash (Redisson's
  // config; redis_companion.h). A guarded script gets its key after its own
  // keys (meta_state's second argument); a check transaction reads it back
  // just before EXEC, one more reply, and CheckCompanion checks that reply
  // (the last of EXEC's). Without one these add nothing.
  std::vector<std::string> ScriptKeys(std::initializer_list<std::string_view> keys) const;
  void AppendCompanionCheck(CommandBuffer* cmd) const;
  size_t CompanionReplies() const { return companion_.empty() ? 0 : 1; }
  Status CheckCompanion(const redisReply* exec) const;
  void AppendCount(CommandBuffer* cmd, const Cells& cells, uint64_t delta) const;

  // Runs a read `op` (read transactions sent with SendReads) on a server
  // that holds `key`, master or replica. If the server answered OOM, runs
  // it again on the same connection in script-reads mode: a read must not
  // fail because the server is full (redis_pipeline.h). `op` may run twice,
  // and is written to resume (TestOn's *done).
  Status RunReads(const std::string& key, const std::function<Status(Connection&)>& op);
  // Whether the kind's parts are numbered by time and expire on their own (a
  // window's slices; KindDef::time_parts).
  bool TimeParted() const;
  // A window slice whose key may have expired by now (its expiry, less a
  // grace of a slice or a second for clocks apart): a listed slice whose key
  // is gone is then an expired one, not a lost one. False for other kinds.
  bool SliceMayHaveExpired(uint64_t part) const;
  // Where each check transaction's chunks end (see the definition).
  static std::vector<size_t> TestTransactions(const std::vector<Chunk>& chunks, size_t batch);
  Status TestOn(Connection& c, std::vector<Chunk>& chunks, const std::vector<size_t>& ends,
                size_t* done, std::vector<uint64_t>* parts_now);
  Status SendTest(Connection& c, CommandBuffer& cmd, std::span<Chunk> chunks, bool list_parts);
  // The commands SendTest queued between MULTI and EXEC.
  size_t TestQueued(std::span<const Chunk> chunks, bool list_parts) const;
  // A window's oldest slice that cannot have expired by this client's clock
  // (SliceMayHaveExpired false), for kCreatePart's check of the newest slice
  // made; UINT64_MAX for other kinds, or when none is sure.
  uint64_t OldestSureSlice() const;
  // The metadata field that records the parts made: a scaling filter's
  // `layers` (made densely from 0), a window's `newest_slice`.
  const char* MadeField() const;
  // Whether a check transaction reads MadeField(): for a listing of the
  // parts, and on every window check (its newest slice, for ReadChunk).
  bool ReadsMade(bool list_parts) const;
  // kDataLoss for a window's newest slice made, lost before its expiry;
  // `how` says how it was found.
  Status LostNewestSlice(uint64_t slice, std::string_view how) const;
  // The parts list must hold every part the metadata records made
  // (`layers`: its MadeField() reply): every layer of a scaling filter, and
  // a window's newest slice until its expiry. The part script lists a part
  // and records it in one step, so a part missing from the list was deleted
  // from it (with the list itself, evicted), and its items would read
  // absent: kDataLoss. Nothing recorded (a filter of an older build) checks
  // nothing.
  Status CheckLayersListed(std::span<const uint64_t> parts, const redisReply* layers) const;
  Status ReadTest(Connection& c, std::span<const Chunk> chunks, bool list_parts,
                  std::vector<uint64_t>* parts_now);
  // A check's HKEYS of the parts list (and its HGET of `layers`) into *parts_now.
  Status ReadPartsList(const redisReply* r, const redisReply* layers,
                       std::vector<uint64_t>* parts_now) const;
  // `newest`: a window's newest slice made, as its metadata records it.
  Status ReadChunk(Connection& c, const Chunk& chunk, const redisReply* exec, size_t reads,
                   size_t at, std::optional<uint64_t> newest) const;
  Status AddBatch(const Cells& cells, PartBatch& b);
  Status AddSmall(const Cells& cells, PartBatch& b);
  Status RemoveBatch(const Cells& cells, PartBatch& b);
  Status AddOn(Connection& c, const Cells& cells, PartBatch& b, std::vector<Chunk>& chunks,
               size_t* done, uint64_t* uncounted, bool* unread);
  Status SendAdd(Connection& c, CommandBuffer& cmd, const Cells& cells, const Chunk& chunk,
                 uint64_t count_delta);
  Status ReadAdd(Connection& c, const Cells& cells, PartBatch& b, const Chunk& chunk,
                 uint64_t* uncounted, bool* refused);
  void ReadAddsLeft(Connection& c, const Cells& cells, PartBatch& b, std::vector<Chunk>& chunks,
                    size_t from, size_t to, uint64_t* uncounted);
  template <typename Extras>
  Status EvalPerItem(Connection& c, const Cells& cells, std::string_view script,
                     std::string_view what, size_t extra_args, Extras&& extras,
                     const uint64_t* offsets, size_t n, uint32_t k, uint8_t* out, uint64_t* room,
                     bool* full) const;

  std::shared_ptr<RedisShared> shared_;
  const std::string name_;
  const FilterConfig config_;
  const FilterKeys keys_;
  const std::vector<std::string> checked_;
  const std::string companion_;  // its key, or ""
  const uint64_t filter_expires_at_ms_;
  const std::string shard_token_;
  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Cells>> cells_;  // guarded by mu_
};

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_BIT_STORE_H_
