// Strategy "seed": the blog posts' BloomFilterHelper (a Spring bean over
// SETBIT/GETBIT). It hashes with Guava's murmur3_128 and keeps only asLong():
//   int hash1 = (int) hash64; int hash2 = (int) (hash64 >>> 32);
//   for (int i = 1; i <= k; i++) {
//     int next = hash1 + i * hash2; if (next < 0) next = ~next; offset = next % m;
//   }
// with m the unrounded int size (SeedGeometry). Java's int wrap-around is done
// in uint32_t here: signed overflow is undefined in C++.
#include "strategy/strategy_def.h"

namespace redbloom::internal {
namespace {

Hash128 Hash(std::string_view bytes) { return Murmur3_128(bytes); }

void ItemOffsets(const Hash128& hash, const Geometry& g, uint64_t* out) {
  const uint32_t hash1 = static_cast<uint32_t>(hash.as_long());
  const uint32_t hash2 = static_cast<uint32_t>(hash.as_long() >> 32);
  const auto m = static_cast<uint32_t>(g.bits);  // a positive Java int
  for (uint32_t i = 1; i <= g.hashes; ++i) {
    uint32_t next = hash1 + i * hash2;     // wraps mod 2^32, as Java's int does
    if (next & 0x80000000u) next = ~next;  // leaves a value in [0, 2^31)
    out[i - 1] = next % m;
  }
}

void Offsets(std::span<const Hash128> hashes, const Geometry& g, uint64_t* out) {
  for (const Hash128& h : hashes) {
    ItemOffsets(h, g, out);
    out += g.hashes;
  }
}

}  // namespace

extern const StrategyDef kSeedStrategy;
const StrategyDef kSeedStrategy = {
    .id = Strategy::kSeed,
    .name = "seed",
    .summary = "the Java blog helper's (BloomFilterHelper + SETBIT): int arithmetic, unrounded m",
    .encodings = kAllEncodings,
    .hash = &Hash,
    .hash_many = &Murmur3_128Many,
    .geometry = &SeedGeometry,
    .given_geometry = nullptr,
    .offsets = &Offsets,
    .false_positive_rate = &UniformFalsePositiveRate,
    .estimate_items = &UniformEstimateItems,
    .java_writes_bits = true,
};

}  // namespace redbloom::internal
