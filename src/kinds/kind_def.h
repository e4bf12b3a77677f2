// The filter-kind table's entry and the policy interface. Internal: one file
// per kind under src/kinds/ defines one KindDef, and src/kinds/table.cc lists
// them.
//
// A kind decides which parts of a filter an operation touches: plain and
// counting filters have one array (part 0); a scaling filter checks every
// layer and adds to the newest one with room; a window filter checks the live
// time slices and adds to the current one. Stores know nothing of this: they
// read and write parts (BitStore).
#ifndef REDBLOOM_SRC_KINDS_KIND_DEF_H_
#define REDBLOOM_SRC_KINDS_KIND_DEF_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "kinds/filter_context.h"
#include "redbloom/filter_config.h"
#include "redbloom/hash.h"
#include "redbloom/status.h"

namespace redbloom::internal {

class KindPolicy {
 public:
  virtual ~KindPolicy() = default;

  // added[i] = 1 if item i was new; `added` is null when the caller wants no
  // answers. Every item is in the filter on success.
  virtual Status Add(FilterContext& f, std::span<const Hash128> hashes, uint8_t* added) const = 0;
  // present[i] = 1 if item i may be present. `present` holds zeros on entry.
  virtual Status Contains(FilterContext& f, std::span<const Hash128> hashes,
                          uint8_t* present) const = 0;
  // removed[i] = 1 if item i was removed. Default: kUnimplemented.
  virtual Status Remove(FilterContext& f, std::span<const Hash128> hashes, uint8_t* removed) const;
  // The parts that hold the filter's items now, ascending: what info sums
  // and a dump carries.
  virtual Result<std::vector<uint64_t>> LiveParts(FilterContext& f) const = 0;
  // Before a merge writes part `part` (from a dump or another filter with
  // this config): makes it exist, or sets *skip when its items no longer
  // belong (a window slice that has left the window).
  virtual Status PrepareMerge(FilterContext& f, uint64_t part, bool* skip) const = 0;
};

// What a kind asks of (capacity, error rate) for one part; the strategy turns
// it into a geometry.
struct PartTarget {
  uint64_t capacity = 0;
  double error_rate = 0;
};

// What a store needs of a kind whose parts are numbered by time and expire
// on their own (a window's slices) to tell an expired part from a lost one,
// and which parts a drop must reach. The slice arithmetic is the kind's
// alone: the Redis store once kept its own copies of it, and one of them,
// two slices late, read a live slice as expired (its items absent).
struct TimeParts {
  // Whether `part` may have expired at `now_ms` by a clock up to the grace
  // (a slice, or a second for short slices) apart from this one, its expiry
  // capped by the filter's own (`filter_expires_at_ms`, 0 = never).
  bool (*may_have_expired)(const FilterConfig& config, uint64_t part, uint64_t filter_expires_at_ms,
                           uint64_t now_ms);
  // The oldest part that has surely not expired at `now_ms` (may_have_expired
  // false); UINT64_MAX when none.
  uint64_t (*oldest_sure)(const FilterConfig& config, uint64_t filter_expires_at_ms,
                          uint64_t now_ms);
  // The parts that may exist at `now_ms`, listed or not, by any clock near
  // this one: first and last, inclusive. A drop deletes all of them.
  std::pair<uint64_t, uint64_t> (*may_exist)(const FilterConfig& config, uint64_t now_ms);
  // Whether an expired `part` (may_have_expired true) may leave the store's
  // list of parts at `now_ms`. One stays listed for a window more: a client whose clock runs
  // behind (up to a window) still reads it as in its window, and must meet
  // it listed and gone (data_loss, naming the clock), not unlisted, which
  // reads as a part never made (its items absent).
  bool (*unlist_expired)(const FilterConfig& config, uint64_t part, uint64_t filter_expires_at_ms,
                         uint64_t now_ms);
};

struct KindDef {
  FilterKind id;          // stored in files and dumps; never reused
  std::string_view name;  // stored in Redis metadata and dumps, typed on the CLI
  uint32_t cell_bits;     // 1 (bits) or 4 (saturating counters)
  bool one_array;         // all cells in part 0 (or, sharded, in shards 0..S-1)
  // Parts are 0..N-1 with no gap, and only ever added while the filter lives
  // (a scaling filter's layers): a store that records N can tell a lost last
  // part from a part never made.
  bool dense_parts;
  // How many parts exist from creation on (parts 0..N-1); later parts come
  // and go with the policy.
  uint64_t (*initial_parts)(const FilterConfig& config);
  // Checks the kind's own options and copies them into *config; rejects the
  // options of other kinds (see RejectScalingOptions, RejectWindowOptions).
  Status (*configure)(const FilterOptions& options, FilterConfig* config);
  // kInvalidArgument for a part the kind does not have, kResourceExhausted
  // for one past its limits.
  Result<PartTarget> (*part_target)(const FilterConfig& config, uint64_t part);
  const KindPolicy* policy;
  // For parts numbered by time (a window's slices, a new one each slice):
  // with `part` in use, the parts below which a handle may forget what it
  // keeps per part, or else a handle in use grows by an entry a part for as
  // long as it lives. Null: parts are bounded (layers, shards), keep them.
  uint64_t (*forgettable_below)(const FilterConfig& config, uint64_t part) = nullptr;
  // FilterConfig::stored_parts. Null: the initial parts.
  uint64_t (*stored_parts)(const FilterConfig& config) = nullptr;
  // Null: parts live as long as their filter.
  const TimeParts* time_parts = nullptr;
};

// nullptr when no kind has this id or name.
const KindDef* FindKind(FilterKind id);
const KindDef* FindKind(std::string_view name);
std::span<const KindDef* const> KindTable();
// FindKind(id) of a validated config.
const KindDef& KindOf(FilterKind id);

// For configure(): the options of scaling and window filters, refused on
// kinds that do not use them.
Status RejectScalingOptions(const FilterOptions& options);
// When window slice `part` expires, before the filter's own expiry caps it:
// one slice after the slice has left the window (the grace for clocks a
// little apart). Stores tell an expired slice from a lost one by it.
uint64_t SliceExpiresAt(const FilterConfig& config, uint64_t part);
Status RejectWindowOptions(const FilterOptions& options);

// The parts of a one-array kind: part 0, or shards 0..S-1, each sized for its
// share of the capacity (see ShardOf).
Result<PartTarget> OneArrayTarget(const FilterConfig& config, uint64_t part);
uint64_t OneArrayParts(const FilterConfig& config);

// The shard of an item of a sharded filter, from its hash: bits mixed out of
// both halves (fmix64 of h1 ^ rotl(h2, 32)), so that which shard an item
// goes to is independent of its offsets within the shard, then mapped onto
// [0, shards) by multiply-shift. Part of the layout, never changed.
uint32_t ShardOf(const Hash128& hash, uint32_t shards);

// Plain and counting filters: one array, part 0. Counting filters remove.
class OneArrayPolicy final : public KindPolicy {
 public:
  explicit OneArrayPolicy(bool removes) : removes_(removes) {}
  Status Add(FilterContext& f, std::span<const Hash128> hashes, uint8_t* added) const override;
  Status Contains(FilterContext& f, std::span<const Hash128> hashes,
                  uint8_t* present) const override;
  Status Remove(FilterContext& f, std::span<const Hash128> hashes, uint8_t* removed) const override;
  Result<std::vector<uint64_t>> LiveParts(FilterContext& f) const override;
  Status PrepareMerge(FilterContext& f, uint64_t part, bool* skip) const override;

 private:
  bool removes_;
};

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_KINDS_KIND_DEF_H_
