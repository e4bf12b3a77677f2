// What a kind's policy works with: one open filter's config, its cells on the
// store, the clock, and batch helpers that turn hashes into each part's
// offsets. Internal.
#ifndef REDBLOOM_SRC_KINDS_FILTER_CONTEXT_H_
#define REDBLOOM_SRC_KINDS_FILTER_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/clock.h"
#include "redbloom/filter_config.h"
#include "redbloom/hash.h"
#include "redbloom/store.h"

namespace redbloom::internal {

struct StrategyDef;
class HashedCells;

// State a filter handle keeps between calls, for its policy. Thread-safe.
class PartCache {
 public:
  // Sizing of part `part`, computed once.
  Result<PartSizing> Sizing(const FilterConfig& config, uint64_t part);
  // Part 0's sizing without a lock, once Sizing computed it; else null.
  const PartSizing* part0() const {
    return part0_ready_.load(std::memory_order_acquire) ? &part0_ : nullptr;
  }
  // Parts the handle knows to exist (scaling layers), or empty if unknown.
  std::vector<uint64_t> known_parts() const;
  void set_known_parts(std::vector<uint64_t> parts);
  // When this handle last listed its parts (scaling layers), in the store
  // clock's milliseconds; 0 if never.
  uint64_t listed_at() const { return listed_at_ms_.load(std::memory_order_relaxed); }
  void set_listed_at(uint64_t ms) { listed_at_ms_.store(ms, std::memory_order_relaxed); }
  // Window slices this handle has created (so each is created once).
  bool created(uint64_t part) const;
  void set_created(uint64_t part);
  // Returns whether `part` was remembered as created, and forgets it.
  bool forget_created(uint64_t part);
  // Whether the caller is the first to see slice `slice` begin (a window
  // filter then has expired slices pruned): true once per slice, and for
  // the first call of a handle.
  bool TakePruneTurn(uint64_t slice) {
    return pruned_slice_.exchange(slice, std::memory_order_relaxed) != slice;
  }
  // Set once when the filter is opened, before any call: the store's
  // HashedCells (hashed_cells.h) or null, and the config's strategy (so that
  // no call looks it up in the table).
  HashedCells* hashed_cells() const { return hashed_cells_; }
  void set_hashed_cells(HashedCells* cells) { hashed_cells_ = cells; }
  const StrategyDef* strategy() const { return strategy_; }
  void set_strategy(const StrategyDef* strategy) { strategy_ = strategy; }

 private:
  // Part 0 (every call of a plain filter) is read without the mutex once
  // set: a lock per call cost single-item calls ~20 ns here.
  std::atomic<bool> part0_ready_{false};
  std::atomic<uint64_t> pruned_slice_{~uint64_t{0}};
  std::atomic<uint64_t> listed_at_ms_{0};
  PartSizing part0_;  // written once, before part0_ready_
  HashedCells* hashed_cells_ = nullptr;
  const StrategyDef* strategy_ = nullptr;
  mutable std::mutex mu_;
  std::map<uint64_t, PartSizing> sizing_;
  std::vector<uint64_t> known_parts_;
  std::vector<uint64_t> created_;
};

class FilterContext {
 public:
  FilterContext(std::string_view name, const FilterConfig& config, BitStore& bits,
                const Clock& clock, PartCache& cache);

  std::string_view name() const { return name_; }
  const FilterConfig& config() const { return config_; }
  BitStore& bits() { return bits_; }
  uint64_t NowMillis() const { return clock_.NowMillis(); }
  PartCache& cache() { return cache_; }
  Result<PartSizing> Sizing(uint64_t part) { return cache_.Sizing(config_, part); }

  // present[i] = 1 if some part of `parts` may hold item i (entries already 1
  // stay 1). Every part of one slice of items goes to the store in one call.
  // With `parts_now`, the parts that exist, read with the first slice.
  // `all_exist`: the caller knows every part exists (no store is asked
  // which do).
  Status TestIn(std::span<const uint64_t> parts, std::span<const Hash128> hashes, uint8_t* present,
                std::vector<uint64_t>* parts_now = nullptr, bool all_exist = false);
  // Adds items to one part. out[i] = 1 if item i turned a cell on. With a
  // capacity (see PartBatch), stops at the first slice the store refuses:
  // *done says how many items were added, *room how many more fit. On an
  // error, *done says how many leading items the store confirmed added
  // (their out[] answers stand); the rest may or may not have been.
  Status AddTo(uint64_t part, std::span<const Hash128> hashes, uint8_t* out, uint64_t capacity = 0,
               size_t* done = nullptr, uint64_t* room = nullptr);
  Status RemoveFrom(uint64_t part, std::span<const Hash128> hashes, uint8_t* out);

  // Each item to its own part, part_of[i] (a sharded filter's shards): one
  // store call per slice of items, with every part's batch in it (so the
  // store can reach every shard at once). out[i] answers item i.
  enum class Op { kTest, kAdd, kRemove };
  Status Routed(Op op, std::span<const uint32_t> part_of, std::span<const Hash128> hashes,
                uint8_t* out);

  // After a policy's Add failed: how many leading items it knows were added,
  // with their answers in place (0: it cannot tell). Kinds that can tell set
  // it (one array: the store's confirmed transactions).
  size_t confirmed() const { return confirmed_; }
  void set_confirmed(size_t n) { confirmed_ = n; }

 private:
  // Part `part`'s geometry (part 0's without a lock once known).
  Status GeometryOf(uint64_t part, Geometry* g) {
    if (const PartSizing* sizing = cache_.part0(); part == 0 && sizing != nullptr) {
      *g = sizing->geometry;
      return Status::Ok();
    }
    return SizedGeometry(part, g);
  }
  Status SizedGeometry(uint64_t part, Geometry* g);
  // TestIn and AddTo through the BitStore, with offsets (stores without
  // HashedCells, and reservations).
  Status TestInStore(std::span<const uint64_t> parts, std::span<const Hash128> hashes,
                     uint8_t* present, std::vector<uint64_t>* parts_now);
  Status AddToStore(uint64_t part, std::span<const Hash128> hashes, uint8_t* out, uint64_t capacity,
                    size_t* done, uint64_t* room);
  // Offsets of `hashes` under part `part`'s geometry, into *out (resized).
  Status Offsets(uint64_t part, std::span<const Hash128> hashes, std::vector<uint64_t>* out);

  std::string_view name_;
  const FilterConfig& config_;
  BitStore& bits_;
  const Clock& clock_;
  PartCache& cache_;
  const StrategyDef& strategy_;
  size_t confirmed_ = 0;
};

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_KINDS_FILTER_CONTEXT_H_
