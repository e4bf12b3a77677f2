// Strategies: a 128-bit hash and a geometry become k bit offsets.
//
// These are pure functions over integers, written so that Java's int/long
// wrap-around is done in unsigned arithmetic (signed overflow is undefined
// behaviour in C++). The offset order is the strategy's own order, which is
// the order `redbloom offsets` prints.
#ifndef REDBLOOM_STRATEGY_H_
#define REDBLOOM_STRATEGY_H_

#include <cstdint>
#include <string_view>

#include "redbloom/hash.h"
#include "redbloom/sizing.h"
#include "redbloom/status.h"

namespace redbloom {

enum class Strategy : uint8_t {
  // The blog posts' BloomFilterHelper: h1 = (int) asLong(), h2 = (int)(asLong() >>> 32),
  // offset_i = f(h1 + i*h2) % m for i = 1..k, where f(x) = x < 0 ? ~x : x and
  // m is the unrounded int size. For filters shared with that helper.
  kSeed = 0,
  // Guava's BloomFilterStrategies.MURMUR128_MITZ_64 (Guava's default):
  // c = h1; offset_i = (c & Long.MAX_VALUE) % m; c += h2, for i = 0..k-1,
  // with m a multiple of 64. The default for new filters.
  kGuava64 = 1,
};

std::string_view StrategyName(Strategy s);  // "seed", "guava64"
Result<Strategy> ParseStrategy(std::string_view name);

// The geometry a strategy gives to (capacity, error rate).
Result<Geometry> GeometryFor(Strategy s, uint64_t capacity, double error_rate);

// The geometry of bits sized elsewhere (m and k as a Guava file records
// them), after checking that this strategy could have produced it: guava64
// needs m a multiple of 64, at most Guava's (2^31-1)*64, and 1 <= k <= 255.
// The seed strategy sizes from capacity and error rate only (kInvalidArgument).
Result<Geometry> GivenGeometry(Strategy s, uint64_t bits, uint32_t hashes);

// Writes geometry.hashes offsets, each in [0, geometry.bits), to `out`.
// `geometry` must come from GeometryFor() with the same strategy.
void ComputeOffsets(Strategy s, const Hash128& hash, const Geometry& geometry, uint64_t* out);

}  // namespace redbloom

#endif  // REDBLOOM_STRATEGY_H_
