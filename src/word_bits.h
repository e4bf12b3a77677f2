// Bit operations over a word array in memory, shared by the mem: and file:
// stores. Internal header.
//
// Layout: the words hold bytes in Redis order, so the raw memory is exactly
// what Redis stores for the same filter: bit i is in byte i/8, at mask
// 0x80 >> (i % 8). Read as a little-endian uint64, that is bit (i % 64) ^ 7 of
// word i / 64. Keeping one byte order everywhere makes dumps and exports a
// plain copy.
#ifndef REDBLOOM_SRC_WORD_BITS_H_
#define REDBLOOM_SRC_WORD_BITS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "redbloom/store.h"

namespace redbloom::internal {

static_assert(std::endian::native == std::endian::little,
              "the word layout assumes a little-endian machine");

inline uint64_t WordIndex(uint64_t bit) { return bit >> 6; }
inline uint64_t BitMask(uint64_t bit) { return uint64_t{1} << ((bit & 63) ^ 7); }

// Adds the sixteen 4-bit counters of `b` to those of `a`, each saturating at
// 15 (counting filters' merge).
uint64_t SaturatingNibbleAdd(uint64_t a, uint64_t b);
// Merges the cells of `from` into *to (byte buffers in Redis order, not
// shared): bits ORed, or 4-bit counters added as SaturatingNibbleAdd does.
void MergeCellBytes(std::string_view from, std::string* to, bool counters);

// Where a WordBitStore's state lives. The memory is owned by `keepalive`.
struct WordArray {
  uint64_t* words = nullptr;  // at least ceil(cells * cell_bits / 64) words
  uint64_t cells = 0;         // offsets are in [0, cells)
  uint32_t cell_bits = 1;     // 1 (bits) or 4 (saturating counters)
  uint64_t* count = nullptr;  // the stored item count
  // Non-zero once the filter was replaced by a rebuild: every operation then
  // answers kConflict so the caller reopens the new filter.
  uint64_t* superseded = nullptr;
  std::shared_ptr<void> keepalive;
  std::function<Status()> flush;
  // Serialises removes (counting filters): a mutex shared by every handle in
  // this process, and/or a file to flock() for handles in other processes.
  std::shared_ptr<std::mutex> remove_mutex;
  int lock_fd = -1;
};

// A BitStore over a word array in memory, with atomic word operations.
//
// 4-bit counters: counter i is nibble i of the bitmap in Redis order (byte
// i/2, high nibble for even i), as BITFIELD u4 #i addresses it. Increments
// saturate at 15 and a saturated counter is never decremented: it may count
// more items than 15, and decrementing it could zero it while some of those
// items are still in the filter, which would make them false negatives.
class WordBitStore final : public BitStore {
 public:
  explicit WordBitStore(WordArray array) : a_(std::move(array)) {}

  size_t preferred_batch() const override { return 1024; }
  Status Add(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed) override;
  Status Test(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* present) override;
  Status Remove(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* removed) override;
  Result<FilterStats> Stats() override;
  Result<uint64_t> ItemCount() override;
  Status Clear() override;
  Status Flush() override;
  Status ReadBits(uint64_t offset, size_t len, std::string* out) override;
  Status OrBits(std::string_view bitmap, uint64_t new_items) override;

 private:
  uint64_t words() const { return (a_.cells * a_.cell_bits + 63) / 64; }
  // Bytes of the bitmap as Redis would hold it (the words may pad it).
  uint64_t bitmap_bytes() const { return (a_.cells * a_.cell_bits + 7) / 8; }
  Status CheckLive() const;
  Status CheckOffsets(const uint64_t* offsets, size_t n) const;
  void AddCount(int64_t delta);

  WordArray a_;
};

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_WORD_BITS_H_
