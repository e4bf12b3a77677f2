#include "word_bits.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

namespace redbloom::internal {
namespace {

// How many items ahead to prefetch. Each item touches k scattered cache lines;
// eight items (~56 lines at k = 7) keeps enough misses in flight to hide
// memory latency without evicting what is about to be used.
constexpr size_t kPrefetchItems = 8;

Status CheckOffsets(const uint64_t* offsets, size_t n, uint64_t bits) {
  for (size_t i = 0; i < n; ++i) {
    if (offsets[i] >= bits) {
      return Status::InvalidArgument("bit offset " + std::to_string(offsets[i]) +
                                     " is outside the filter's " + std::to_string(bits) + " bits");
    }
  }
  return Status::Ok();
}

}  // namespace

Status WordBitStore::Add(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed) {
  REDBLOOM_RETURN_IF_ERROR(CheckOffsets(offsets, items * k, bits_));
  uint64_t added = 0;
  for (size_t i = 0; i < items; ++i) {
    if (i + kPrefetchItems < items) {
      const uint64_t* ahead = offsets + (i + kPrefetchItems) * k;
      for (uint32_t j = 0; j < k; ++j) __builtin_prefetch(&words_[WordIndex(ahead[j])], 1);
    }
    const uint64_t* item = offsets + i * k;
    bool was_new = false;
    for (uint32_t j = 0; j < k; ++j) {
      std::atomic_ref<uint64_t> word(words_[WordIndex(item[j])]);
      const uint64_t mask = BitMask(item[j]);
      // Read first: most bits of a filter in use are already set, and a plain
      // load does not take the cache line exclusive the way fetch_or does.
      if ((word.load(std::memory_order_relaxed) & mask) == 0 &&
          (word.fetch_or(mask, std::memory_order_relaxed) & mask) == 0) {
        was_new = true;
      }
    }
    if (changed != nullptr) changed[i] = was_new ? 1 : 0;
    added += was_new ? 1 : 0;
  }
  if (added != 0) std::atomic_ref<uint64_t>(*count_).fetch_add(added, std::memory_order_relaxed);
  return Status::Ok();
}

Status WordBitStore::Test(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* present) {
  REDBLOOM_RETURN_IF_ERROR(CheckOffsets(offsets, items * k, bits_));
  for (size_t i = 0; i < items; ++i) {
    if (i + kPrefetchItems < items) {
      const uint64_t* ahead = offsets + (i + kPrefetchItems) * k;
      for (uint32_t j = 0; j < k; ++j) __builtin_prefetch(&words_[WordIndex(ahead[j])], 0);
    }
    const uint64_t* item = offsets + i * k;
    uint8_t all = 1;
    for (uint32_t j = 0; j < k; ++j) {
      std::atomic_ref<uint64_t> word(words_[WordIndex(item[j])]);
      if ((word.load(std::memory_order_relaxed) & BitMask(item[j])) == 0) {
        all = 0;
        break;
      }
    }
    present[i] = all;
  }
  return Status::Ok();
}

Result<FilterStats> WordBitStore::Stats() {
  FilterStats stats;
  const uint64_t n = words();
  for (uint64_t w = 0; w < n; ++w) {
    stats.bits_set +=
        std::popcount(std::atomic_ref<uint64_t>(words_[w]).load(std::memory_order_relaxed));
  }
  stats.items_added = std::atomic_ref<uint64_t>(*count_).load(std::memory_order_relaxed);
  return stats;
}

Status WordBitStore::Clear() {
  const uint64_t n = words();
  for (uint64_t w = 0; w < n; ++w) {
    std::atomic_ref<uint64_t>(words_[w]).store(0, std::memory_order_relaxed);
  }
  std::atomic_ref<uint64_t>(*count_).store(0, std::memory_order_relaxed);
  return Status::Ok();
}

Status WordBitStore::ReadBits(uint64_t offset, size_t len, std::string* out) {
  out->clear();
  if (offset >= bitmap_bytes()) return Status::Ok();
  len = static_cast<size_t>(std::min<uint64_t>(len, bitmap_bytes() - offset));
  out->resize(len);
  // Word-wise relaxed loads: concurrent adds may or may not be seen, but no
  // torn word is ever read.
  for (size_t i = 0; i < len;) {
    const uint64_t pos = offset + i;
    const uint64_t w = std::atomic_ref<uint64_t>(words_[pos / 8]).load(std::memory_order_relaxed);
    for (uint64_t b = pos % 8; b < 8 && i < len; ++b, ++i) {
      (*out)[i] = static_cast<char>((w >> (8 * b)) & 0xff);
    }
  }
  return Status::Ok();
}

Status WordBitStore::OrBits(std::string_view bitmap, uint64_t new_items) {
  if (bitmap.size() > bitmap_bytes()) {
    return Status::InvalidArgument("bitmap of " + std::to_string(bitmap.size()) +
                                   " bytes is larger than the filter's " +
                                   std::to_string(bitmap_bytes()));
  }
  const size_t full_words = bitmap.size() / 8;
  for (size_t w = 0; w < full_words; ++w) {
    uint64_t v;
    std::memcpy(&v, bitmap.data() + 8 * w, 8);  // little-endian load keeps Redis byte order
    if (v != 0) std::atomic_ref<uint64_t>(words_[w]).fetch_or(v, std::memory_order_relaxed);
  }
  if (bitmap.size() % 8 != 0) {
    uint64_t v = 0;
    std::memcpy(&v, bitmap.data() + 8 * full_words, bitmap.size() % 8);
    if (v != 0)
      std::atomic_ref<uint64_t>(words_[full_words]).fetch_or(v, std::memory_order_relaxed);
  }
  if (new_items != 0) {
    std::atomic_ref<uint64_t>(*count_).fetch_add(new_items, std::memory_order_relaxed);
  }
  return Status::Ok();
}

}  // namespace redbloom::internal
