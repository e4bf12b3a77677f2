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

#include "redbloom/store.h"

namespace redbloom::internal {

static_assert(std::endian::native == std::endian::little,
              "the word layout assumes a little-endian machine");

inline uint64_t WordIndex(uint64_t bit) { return bit >> 6; }
inline uint64_t BitMask(uint64_t bit) { return uint64_t{1} << ((bit & 63) ^ 7); }

// A BitStore over `words` (at least ceil(bits / 64) of them). `count` is the
// stored item count. `keepalive` owns the memory (a buffer or a mapping);
// `flush` makes it durable.
class WordBitStore final : public BitStore {
 public:
  WordBitStore(uint64_t* words, uint64_t bits, uint64_t* count, std::shared_ptr<void> keepalive,
               std::function<Status()> flush = nullptr)
      : words_(words),
        bits_(bits),
        count_(count),
        keepalive_(std::move(keepalive)),
        flush_(std::move(flush)) {}

  size_t preferred_batch() const override { return 1024; }
  Status Add(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed) override;
  Status Test(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* present) override;
  Result<FilterStats> Stats() override;
  Status Clear() override;
  Status Flush() override { return flush_ ? flush_() : Status::Ok(); }
  Status ReadBits(uint64_t offset, size_t len, std::string* out) override;
  Status OrBits(std::string_view bitmap, uint64_t new_items) override;

 private:
  uint64_t words() const { return (bits_ + 63) / 64; }
  // Bytes of the bitmap as Redis would hold it (the words may pad it).
  uint64_t bitmap_bytes() const { return (bits_ + 7) / 8; }

  uint64_t* words_;
  uint64_t bits_;
  uint64_t* count_;
  std::shared_ptr<void> keepalive_;
  std::function<Status()> flush_;
};

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_WORD_BITS_H_
