// XXH3-128 inline, for the loops that hash an item and use its hash at once:
// Xxh3_128 and Xxh3_128Many (hash.cc), and block's check that hashes its
// own batch (strategy/block.cc). Header-only use of Debian's libxxhash: the
// short-input paths inline into the caller, and nothing is linked.
#ifndef REDBLOOM_SRC_XXH3_INLINE_H_
#define REDBLOOM_SRC_XXH3_INLINE_H_

#include <cstddef>

#include "redbloom/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace redbloom::internal {

[[gnu::always_inline]] inline Hash128 Xxh3_128Inline(const void* data, size_t len) {
  const XXH128_hash_t h = XXH3_128bits(data, len);
  return Hash128{h.low64, h.high64};
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_XXH3_INLINE_H_
