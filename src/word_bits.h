// Cells over word arrays in memory, shared by the mem: and file: stores.
// Internal header.
//
// Layout: the words hold bytes in Redis order, so the raw memory is exactly
// what Redis stores for the same filter: bit i is in byte i/8, at mask
// 0x80 >> (i % 8). Read as a little-endian uint64, that is bit (i % 64) ^ 7 of
// word i / 64. Keeping one byte order everywhere makes dumps and exports a
// plain copy.
//
// 4-bit counters: counter i is nibble i of the bitmap in Redis order (byte
// i/2, high nibble for even i), as BITFIELD u4 #i addresses it. Increments
// saturate at 15 and a saturated counter is never decremented: it may count
// more items than 15, and decrementing it could zero it while some of those
// items are still in the filter, which would make them false negatives.
#ifndef REDBLOOM_SRC_WORD_BITS_H_
#define REDBLOOM_SRC_WORD_BITS_H_

#include <atomic>
#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hashed_cells.h"
#include "redbloom/filter_config.h"
#include "redbloom/store.h"
#include "util/writer_gate.h"

namespace redbloom::internal {

struct WordKernels;
struct OneItem;
// The single-item kernels' types (word_kernels.h): whether one item's bits
// are all set (WordKernels::test_one), and setting them holding the array
// alone (WordKernels::set_one_exclusive): whether the item turned a bit on.
using TestOneFn = bool (*)(const Hash128& hash, const Geometry& g, uint64_t* words, OneItem* item);
using SetOneFn = bool (*)(const Hash128& hash, const Geometry& g, uint64_t* words,
                          const OneItem* item);
// What a single check of an item's bytes needs besides the item and the
// cells' words, kept by an open filter (BloomFilter::State): part 0's
// geometry, the strategy's hash and the kernels' test_one for it.
struct SingleCheck {
  Geometry geometry;
  Hash128 (*hash)(std::string_view bytes) = nullptr;
  TestOneFn test_one = nullptr;
};
// Whether every bit of the item (its bytes, as the strategy hashes them) is
// set in words: a single check's hash and test in one call, so that its
// caller makes one call, not two, and keeps no hash on its stack between
// them (WordKernels::CheckItemFor).
using CheckItemFn = bool (*)(std::string_view item, const SingleCheck& c, uint64_t* words);
// The general CheckItemFn: c.test_one(c.hash(item), ...).
bool CheckItemByParts(std::string_view item, const SingleCheck& c, uint64_t* words);

static_assert(std::endian::native == std::endian::little,
              "the word layout assumes a little-endian machine");

inline uint64_t WordIndex(uint64_t bit) { return bit >> 6; }
inline uint64_t BitMask(uint64_t bit) { return uint64_t{1} << ((bit & 63) ^ 7); }

// Zeroed words in this process's memory, 64-byte aligned (a `block` item's
// 512-bit block is then one cache line). Large arrays are an anonymous
// mapping, 2 MiB aligned and advised MADV_HUGEPAGE before any touch
// (transparent_hugepage = madvise, as here): the kernel zeroes pages as they
// are first touched, so creating a 12 GB filter makes nothing resident (issue
// #15.6), and random accesses miss the TLB far less. Null if out of memory.
struct WordsDelete {
  size_t bytes = 0;
  bool mapped = false;
  void operator()(uint64_t* p) const;
};
using Words = std::unique_ptr<uint64_t[], WordsDelete>;
Words NewWords(size_t bytes);

// Adds the sixteen 4-bit counters of `b` to those of `a`, each saturating at
// 15 (counting filters' merge).
uint64_t SaturatingNibbleAdd(uint64_t a, uint64_t b);
// Merges the cells of `from` into *to (byte buffers in Redis order, not
// shared): bits ORed, or 4-bit counters added as SaturatingNibbleAdd does.
void MergeCellBytes(std::string_view from, std::string* to, bool counters);

// One part's cells. The memory is owned by `keepalive`.
struct WordArray {
  uint64_t* words = nullptr;  // at least ceil(cells * cell_bits / 64) words
  uint64_t cells = 0;         // offsets are in [0, cells)
  uint32_t hashes = 0;        // offsets per item (PartBatch::k)
  uint32_t cell_bits = 1;     // 1 (bits) or 4 (saturating counters)
  uint64_t* count = nullptr;  // the part's item count
  // Non-zero once the filter was dropped or replaced by a rebuild: every
  // operation then answers kConflict so the caller reopens.
  uint64_t* superseded = nullptr;
  // A file's main array (scaling filters): its header's record of the layers
  // made, shared with every process mapping the file; else null.
  uint64_t* parts_made = nullptr;
  std::shared_ptr<void> keepalive;
  std::function<Status()> flush;
  // Not OK when the cells are mapped read-only (a file we may not write, or
  // one whose disk blocks could not be reserved): every write answers it.
  Status writable;
  // Serialises removes (counting filters): a mutex shared by every handle in
  // this process, and/or a file to flock() for handles in other processes,
  // opened for each remove (the caller closes the descriptor): held for the
  // handle's life, one per cached counting filter ran redbloomd out of
  // descriptors, and creates failed until a restart.
  std::shared_ptr<std::mutex> remove_mutex;
  std::function<Result<int>()> open_lock;
  // In-process arrays (mem:) only: the writers of 1-bit cells. A batch that
  // gets it alone (try_lock: it never waits for it) sets its bits with
  // plain loads and stores; otherwise it holds it shared and uses locked
  // ORs, as every writer of a file array does (its other writers may be
  // other processes). A locked OR costs ~5 ns here and serialises memory
  // accesses: at 1e7 items a guava64 add took 60 ns per item with them and
  // 35 ns with plain stores, for two locked operations per batch instead of
  // about five per item. A single add by the gate's biased owner is alone
  // without even the gate's compare-and-swap (writer_gate.h).
  std::shared_ptr<WriterGate> writers;

  uint64_t word_count() const { return (cells * cell_bits + 63) / 64; }
  // Bytes of the cells as Redis would hold them (the words may pad them).
  uint64_t bitmap_bytes() const { return (cells * cell_bits + 7) / 8; }
};

// Adds delta to the part's item count. kAlone: the caller holds a.writers
// alone, so nobody else changes the count, and a plain load and store do
// what a locked add (5-6 ns, as much as the rest of a single add's writing)
// does otherwise. That holds because every change to the count of an array
// with a writer gate is made holding the gate (adds, Reserve, Clear,
// merges) or as its biased owner, except on 4-bit counters, which are never
// held alone.
template <bool kAlone = false>
void AddCount(WordArray& a, int64_t delta) {
  if (delta == 0) return;
  std::atomic_ref<uint64_t> count(*a.count);
  if constexpr (kAlone) {
    count.store(count.load(std::memory_order_relaxed) + static_cast<uint64_t>(delta),
                std::memory_order_relaxed);
  } else {
    count.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
  }
}

// A part's item count. A counting filter's removes can outnumber its adds
// (a full counter is never lowered, so removing its item always succeeds),
// and the count then goes below zero: as on Redis, where the stored count is
// signed, that reads as 0. It read as about 2^64 (items_added
// 18446744073709551611), which exports carried into dumps that Redis then
// refused.
inline uint64_t CountOf(const WordArray& a) {
  const uint64_t raw = std::atomic_ref<uint64_t>(*a.count).load(std::memory_order_relaxed);
  return static_cast<int64_t>(raw) < 0 ? 0 : raw;
}

// What changes whenever a filter's set of parts does (file: the parts
// directory's identity and modification time, which every link and unlink
// in it moves). `settled`: old enough that a change could not share its
// timestamp (file systems stamp with a clock tick, not the instant).
struct PartsStamp {
  bool exists = false;
  uint64_t dev = 0, ino = 0;
  int64_t mtime_ns = 0;
  bool settled = false;
  bool operator==(const PartsStamp& o) const {
    return exists == o.exists && dev == o.dev && ino == o.ino && mtime_ns == o.mtime_ns;
  }
};

// How a store keeps the parts of one filter.
class WordParts {
 public:
  virtual ~WordParts() = default;
  // kNotFound if the part does not exist.
  virtual Result<std::shared_ptr<WordArray>> Open(uint64_t part) = 0;
  // Idempotent; safe when several writers race.
  virtual Status Create(uint64_t part, uint64_t expires_at_ms) = 0;
  virtual Result<std::vector<uint64_t>> List() = 0;
  // True where one listing of the parts that exist costs less than asking
  // for several parts one by one (file: one directory read in place of a
  // failed open() per missing part); not where asking is as cheap (mem:).
  virtual bool ListsExisting() const { return false; }
  // With ListsExisting(): the parts that exist now. No housekeeping: expired
  // parts may be listed, and Open then says so.
  virtual Result<std::vector<uint64_t>> Existing() {
    return Status::Unimplemented("this store does not list its parts cheaply");
  }
  // The parts' PartsStamp now, or nullopt where the store keeps none (or
  // cannot read it).
  virtual std::optional<PartsStamp> Stamp() { return std::nullopt; }
  // See BitStore::CheckCurrent.
  virtual Status CheckCurrent() { return Status::Ok(); }
};

// A BitStore over word arrays, with atomic word operations: several threads
// (and, on a shared file mapping, several processes) may add at once. It
// also takes hashed items (HashedCells), the in-memory fast path.
class WordBitStore final : public BitStore, public HashedCells {
 public:
  // `main`: part 0 when the kind has it from creation (opened eagerly, so the
  // common one-array calls take no lock), else null.
  WordBitStore(std::unique_ptr<WordParts> parts, std::shared_ptr<WordArray> main);

  size_t preferred_batch() const override { return 1024; }
  Result<std::vector<uint64_t>> ListParts() override;
  Status CreatePart(uint64_t part, uint64_t expires_at_ms) override;
  Status Test(std::span<PartBatch> batches, std::vector<uint64_t>* parts_now) override;
  Status Add(std::span<PartBatch> batches) override;
  Status Remove(std::span<PartBatch> batches) override;
  Result<FilterStats> Stats(uint64_t part) override;
  Result<uint64_t> ItemCount(uint64_t part) override;
  Status Clear() override;
  Status Flush() override;
  Status CheckCurrent() override { return parts_->CheckCurrent(); }
  Status ReadBits(uint64_t part, uint64_t offset, size_t len, std::string* out) override;
  Status OrBitsAt(uint64_t part, uint64_t offset, std::string_view bytes,
                  uint64_t new_items) override;

  Status TestHashes(uint64_t part, std::span<const Hash128> hashes, const StrategyDef& strategy,
                    const Geometry& g, uint8_t* present) override;
  Status KeepExisting(std::vector<uint64_t>* parts) override;
  std::optional<uint64_t> PartsMade() const override {
    if (main_raw_ == nullptr || main_raw_->parts_made == nullptr) return std::nullopt;
    return std::atomic_ref<uint64_t>(*main_raw_->parts_made).load(std::memory_order_acquire);
  }
  bool KnowsDenseParts(std::span<const uint64_t> parts) override;
  Status StillLive() override;
  Status AddHashes(uint64_t part, std::span<const Hash128> hashes, const StrategyDef& strategy,
                   const Geometry& g, uint8_t* added) override;

  // Single items on part 0 of a filter that has it from creation: what
  // TestHashes and AddHashes do for one item, with no Status built, for a
  // strategy and geometry that SingleItemsFit (asked once per open filter;
  // they do not ask again). Each returns false, doing nothing, when it cannot
  // answer that way (part 0 was dropped or replaced, or is read-only): the
  // caller then takes the general path, which says why.
  bool SingleItemsFit(const StrategyDef& strategy, const Geometry& g) const;
  // Whether AddItems can take part 0's batches: an array with a writer gate
  // (mem:; a file's other writers may be other processes, so its adds stay
  // shared).
  bool ItemAddsFit() const { return main_raw_ != nullptr && main_raw_->writers != nullptr; }
  // TestOne is inline (word_kernels.h), as is LiveMain: their two calls and
  // register saves were about a tenth of a single check's time (single /
  // batched at 1e6: guava64 2.1 -> 1.9), keeping the core from overlapping
  // consecutive checks' cache misses.
  inline bool TestOne(const Hash128& hash, const WordKernels& kernels, const Geometry& g,
                      bool* present) const;
  // Part 0's words for a single check, or null where TestOne would return
  // false: asked before the item is hashed, so that nothing after the hash
  // can still fall back (fewer values kept across the hash's call).
  uint64_t* SingleCheckWords() const {
    const WordArray* a = LiveMain(0);
    return a == nullptr ? nullptr : a->words;
  }
  // A batched check of items as bytes, hashed by the kernels themselves
  // (WordKernels::test_items, which must not be null); *ascii as that
  // answers it. Inline as TestOne is, and false as it is, or where the
  // kernels do not take the batch.
  inline bool TestItems(std::span<const std::string_view> items, const WordKernels& kernels,
                        const Geometry& g, uint8_t* present, bool* ascii) const;
  // A batched add of items as bytes, hashed by the kernels themselves
  // (WordKernels::set_items_exclusive, which must not be null) and
  // validated by the caller. False, touching nothing, where TestItems would
  // be, where the array is read-only or has no writer gate (file:), where
  // another writer holds the gate, or where the kernels do not take the
  // batch: the general path then adds the items, or says why it cannot.
  bool AddItems(std::span<const std::string_view> items, const WordKernels& kernels,
                const Geometry& g, uint8_t* added);
  // Inline too, up to the writer gate's bias; AddOneGated past it.
  // set_one: the kernels' set_one_exclusive for g, or its resolved form
  // (WordKernels::SetOneFor).
  inline bool AddOne(const Hash128& hash, const WordKernels& kernels, SetOneFn set_one,
                     const Geometry& g, bool* added);

 private:
  // The part's array: kNotFound if it does not exist.
  Result<std::shared_ptr<WordArray>> Array(uint64_t part);
  // The same without copying a shared_ptr (two locked operations) for part
  // 0's eagerly opened array; any other part's is held in *hold for the
  // call, since a listing may forget it meanwhile (see ListParts).
  Result<WordArray*> ArrayPtr(uint64_t part, std::shared_ptr<WordArray>* hold);
  // From ListParts (a window filter lists once per slice; a scaling
  // filter's checks list too, but its layers retire only with the filter):
  // forgets the open arrays of parts the store has retired (their
  // `superseded` set: a window filter's expired slices, deleted by a
  // listing), so that a handle does not keep every slice it ever opened
  // mapped (their memory, descriptors and, on file:, the disk blocks of files
  // already deleted). Arrays still live stay, even if a listing missed them
  // (a part made after it read the directory): dropping one would skip its
  // Flush.
  void ForgetRetired();
  // Part 0's array if it was opened eagerly and is still live, else null
  // (then ArrayPtr says why): the common case, without building a Result.
  // main_raw_ is read once: read again after the acquire load, it would
  // have to be loaded again (three instructions of a single check's path).
  WordArray* LiveMain(uint64_t part) const {
    WordArray* const a = main_raw_;
    if (part != 0 || a == nullptr) return nullptr;
    uint64_t* superseded = a->superseded;
    if (superseded != nullptr &&
        std::atomic_ref<uint64_t>(*superseded).load(std::memory_order_acquire) != 0) {
      return nullptr;
    }
    return a;
  }
  // Sets the items' bits with the kernels, under the array's writer gate
  // (WordArray::writers), and counts the new ones.
  static void SetWithKernels(WordArray& a, const WordKernels& kernels,
                             std::span<const Hash128> hashes, const Geometry& g, uint8_t* added);
  // The same for one item; whether it was new. As the gate's biased owner
  // if this thread is (writer_gate.h), inline; else AddOneGated: tested
  // first (no gate if it is present), then under the gate.
  static inline bool AddOneToArray(WordArray& a, const WordKernels& kernels, SetOneFn set_one,
                                   const Hash128& hash, const Geometry& g);
  static bool AddOneGated(WordArray& a, const WordKernels& kernels, const Hash128& hash,
                          const Geometry& g);

  std::unique_ptr<WordParts> parts_;
  std::shared_ptr<WordArray> main_;
  WordArray* main_raw_ = nullptr;  // main_.get(): the hot path copies no shared_ptr
  std::mutex mu_;
  // Parts opened and not retired since; guarded by mu_.
  std::map<uint64_t, std::shared_ptr<WordArray>> open_;
  // The parts' stamp when they were last listed, if settled then (guarded
  // by mu_): KnowsDenseParts trusts nothing while it differs.
  std::optional<PartsStamp> listed_stamp_;
};

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_WORD_BITS_H_
