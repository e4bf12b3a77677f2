// A capability that some BitStores add to the BitStore interface: cells in
// this process's memory (mem:, file:) that take hashed items and compute
// their offsets themselves, a few items ahead of the cells they touch (or
// run the strategy's line kernels, line_kernels.h). Internal.
//
// Why: a BitStore batch carries every item's offsets, computed before the
// store touches any cell. In memory that is two passes over the batch, one
// of arithmetic (guava64's seven Barrett reductions per item) and one of
// cache misses, and neither overlaps the other. Here the store asks the
// strategy for the offsets of a few items at a time (still a batch call,
// so per-filter constants are computed once per group) while the cache
// lines of earlier items are on their way. FilterContext uses it for the
// calls it can (see filter_context.cc); everything else, and every store
// without it, goes through BitStore with offsets.
#ifndef REDBLOOM_SRC_HASHED_CELLS_H_
#define REDBLOOM_SRC_HASHED_CELLS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "redbloom/hash.h"
#include "redbloom/sizing.h"
#include "redbloom/status.h"
#include "redbloom/store.h"

namespace redbloom::internal {

struct StrategyDef;

class HashedCells {
 public:
  virtual ~HashedCells() = default;

  // present[i] |= 1 if every cell of item i in part `part` is non-zero. A
  // part that does not exist holds nothing (present is left as it is).
  // `g` is the part's geometry; an offset outside the part is
  // kInvalidArgument, as BitStore::Test answers it.
  virtual Status TestHashes(uint64_t part, std::span<const Hash128> hashes,
                            const StrategyDef& strategy, const Geometry& g, uint8_t* present) = 0;
  // Leaves out of *parts those that do not exist, when the store can tell
  // that for several at once more cheaply than TestHashes finds it out for
  // each (a window's slices nobody added to); may leave all of them. A part
  // made after the call began may be left out, as an add running beside a
  // check may be missed; one made before it never is.
  virtual Status KeepExisting(std::vector<uint64_t>* parts) = 0;
  // BitStore::Add of these items without a capacity: every item is added,
  // added[i] (if `added` is not null) = 1 if item i turned a cell on, and
  // the part's count grows as BitStore::Add says.
  virtual Status AddHashes(uint64_t part, std::span<const Hash128> hashes,
                           const StrategyDef& strategy, const Geometry& g, uint8_t* added) = 0;
  // How many dense parts (a scaling filter's layers 0..N-1) were made, as a
  // record every writer raises before it adds to a layer, readable without
  // a system call (file: the main file's header, mapped); nullopt where the
  // store keeps none. The record may lag a layer that exists but holds no
  // item; it never lags one that holds items (ScalingPolicy::Add).
  virtual std::optional<uint64_t> PartsMade() const { return std::nullopt; }
  // True when `parts`, dense from 0, are every part that may hold an item by
  // PartsMade()'s record, no part was made or removed since the last listing
  // by what the store can tell (file: the parts directory's stamp, which
  // covers writers that keep no record), and this handle has each of them
  // open: a test of them needs no listing. False where unsure.
  virtual bool KnowsDenseParts(std::span<const uint64_t> parts) {
    (void)parts;
    return false;
  }
  // kConflict or kNotFound once the filter was dropped or replaced, as a
  // listing would say: a test that trusted KnowsDenseParts asks it after,
  // since a drop flags the main file before it removes any part.
  virtual Status StillLive() { return Status::Ok(); }
};

// The capability of `bits`, or null if its store has none. A dynamic_cast:
// ask once per open filter, not per call.
inline HashedCells* HashedCellsOf(BitStore& bits) { return dynamic_cast<HashedCells*>(&bits); }

// Offsets a thread keeps as scratch at most (512 KiB): in-memory batches are
// worked through OffsetSliceItems(k) items at a time, so that a thread that
// once served a huge batch at a large k does not keep its offsets for good.
// At 8 MiB, redbloomd's 16 workers kept up to 128 MiB each of slice and add
// offsets after varied large batches; a slice of 9,362 items at k = 7 costs
// nothing measurable over one of 149,796 (1e5- and 1e6-item batches on mem:,
// guava64 and block, CPU ns per item within 2-3%).
inline constexpr size_t kScratchOffsets = size_t{1} << 16;
inline size_t OffsetSliceItems(uint32_t k) {
  return std::max<size_t>(1, kScratchOffsets / std::max<uint32_t>(k, 1));
}

// Offsets of one call to a store without HashedCells (Redis; a scaling
// layer's reserving add anywhere) at most (8 MiB): each call is a round trip,
// so it carries as many items as the store prefers, and a window's slices
// share it. Bounded by kScratchOffsets, a check of a 24-slice window on Redis
// sent 9 times the GETRANGEs and took 2.6-6 times as long. What a call held
// beyond kScratchOffsets is freed when it returns (ShrinkScratch).
inline constexpr size_t kStoreCallOffsets = size_t{1} << 20;
inline size_t StoreSliceItems(uint32_t k) {
  return std::max<size_t>(1, kStoreCallOffsets / std::max<uint32_t>(k, 1));
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_HASHED_CELLS_H_
