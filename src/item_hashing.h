// How the facade and BitmapBuilder turn a batch of items into their hashes:
// validated (UTF-8) or built (int32, int64, utf8x2) and hashed a chunk at a
// time into per-thread scratch, so that a bad item found halfway leaves no
// trace and an ordinary batch allocates nothing. Also the check that keeps a
// FilterConfig filled in by hand away from the hashing kernels.
#ifndef REDBLOOM_SRC_ITEM_HASHING_H_
#define REDBLOOM_SRC_ITEM_HASHING_H_

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "redbloom/filter_config.h"
#include "redbloom/hash.h"
#include "redbloom/status.h"

namespace redbloom::internal {

// Per-thread buffers for the bytes of built items (encode_items.h) keep
// their capacity from call to call up to this size; a larger one is freed
// (by the next single call) or is the call's own (batches).
inline constexpr size_t kBuildScratch = size_t{1} << 18;

// Whether an item of `encoding` is hashed as its own bytes (utf8, once
// validated, and bytes), not as bytes built from it.
inline bool ItemsAreTheirBytes(Encoding encoding) {
  return encoding == Encoding::kUtf8 || encoding == Encoding::kBytes;
}

// Why `item` has no bytes under `encoding`: the funnel's own error, built
// again off the hot path (the hot paths only learn that it has none).
[[gnu::noinline]] Status ItemError(Encoding encoding, std::string_view item);

// The first item of `items` that is not UTF-8 as a utf8 filter's error
// ("item N", counting from base + 1), or Ok.
Status CheckUtf8(std::span<const std::string_view> items, size_t base);

// The hashes of a batch's items under `config`, into out[0 .. items.size()).
// Nothing else is written, so a bad item found halfway leaves no trace.
Status HashItems(const FilterConfig& config, std::span<const std::string_view> items, Hash128* out);

// Scratch for a batch's hashes: per thread for batches of ordinary size, so
// that a call allocates nothing, and the call's own (`own`) for huge ones, so
// that a thread does not keep the memory of its largest batch ever.
std::vector<Hash128>& HashScratch(size_t items, std::vector<Hash128>& own);

// FilterConfig is a plain struct: one a caller filled in by hand reached
// the hashing kernels unchecked (a divide by zero for guava64 with no bits,
// reads past a block builder's empty array, offsets past m). Ok when
// MakeConfig would make `config` as it is.
Status CheckMadeConfig(const FilterConfig& config);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_ITEM_HASHING_H_
