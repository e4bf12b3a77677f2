// Strategy "guava64": Guava's BloomFilterStrategies.MURMUR128_MITZ_64, the
// strategy of every Guava BloomFilter since Guava 16:
//   long c = h1; for i in 0..k-1: offset_i = (c & Long.MAX_VALUE) % m; c += h2
// with (h1, h2) the two little-endian longs of murmur3_128 and m a multiple
// of 64 (Guava's long[] words; Guava64Geometry). The default for new filters.
#include <cstdint>
#include <string>

#include "strategy/strategy_def.h"

namespace redbloom::internal {
namespace {

Hash128 Hash(std::string_view bytes) { return Murmur3_128(bytes); }

void Offsets(const Hash128& hash, const Geometry& g, uint64_t* out) {
  uint64_t combined = hash.h1;
  for (uint32_t i = 0; i < g.hashes; ++i) {
    out[i] = (combined & 0x7fffffffffffffffULL) % g.bits;
    combined += hash.h2;  // long addition, wraps mod 2^64
  }
}

// A Guava file's m and k: m a positive multiple of 64 (Guava's long words),
// at most Guava's (2^31-1) words, and 1 <= k <= 255 (Guava stores k in a
// byte).
Result<Geometry> Given(uint64_t bits, uint32_t hashes) {
  if (bits == 0 || bits % 64 != 0 || bits / 64 > static_cast<uint64_t>(INT32_MAX)) {
    return Status::InvalidArgument(
        "guava64 needs a positive multiple of 64 bits up to (2^31-1)*64, not " +
        std::to_string(bits));
  }
  if (hashes < 1 || hashes > kMaxHashes) {
    return Status::InvalidArgument("hashes must be from 1 to " + std::to_string(kMaxHashes) +
                                   ", not " + std::to_string(hashes));
  }
  Geometry g;
  g.bits = bits;
  g.hashes = hashes;
  return g;
}

}  // namespace

extern const StrategyDef kGuava64Strategy;
const StrategyDef kGuava64Strategy = {
    .id = Strategy::kGuava64,
    .name = "guava64",
    .summary = "Guava BloomFilter's MURMUR128_MITZ_64 (the default)",
    .encodings = kAllEncodings,
    .hash = &Hash,
    .geometry = &Guava64Geometry,
    .given_geometry = &Given,
    .offsets = &Offsets,
    .false_positive_rate = &UniformFalsePositiveRate,
    .estimate_items = &UniformEstimateItems,
};

}  // namespace redbloom::internal
