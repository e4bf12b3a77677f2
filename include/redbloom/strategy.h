// Strategies: how an item's bytes become k bit offsets.
//
// A strategy owns, in one place, everything that decides which bits an item
// touches and what the filter's fill means:
//   hash      bytes -> 128-bit hash (fixed and versioned: bits outlive processes)
//   geometry  (capacity n, error rate p) -> bits m, hashes k, with the strategy's rounding
//   offsets   hash + geometry -> k offsets in [0, m), in the strategy's order
//   model     fill -> false-positive rate and estimated item count
// The built-in strategies reproduce Java implementations exactly, so filters
// can be shared with them:
//   seed     the blog posts' BloomFilterHelper: Murmur3 (Guava), int arithmetic,
//            offset_i = f(h1 + i*h2) % m for i = 1..k, m the unrounded int size
//   guava64  Guava's BloomFilterStrategies.MURMUR128_MITZ_64 (Guava's default):
//            c = h1; offset_i = (c & Long.MAX_VALUE) % m; c += h2, m a multiple of 64
//   redisson Redisson's RBloomFilter: HighwayHash-128 with Redisson's key,
//            c = h1; offset_i = (c & Long.MAX_VALUE) % m; c += (i even ? h2 : h1),
//            m unrounded (at most 2^32 - 2)
//
// Strategies are registered in one table (src/strategy/table.cc), one file
// each under src/strategy/. A Strategy value is the strategy's stored id: the
// enumerators below name the built-in ones for C++ callers, and a strategy
// registered without an enumerator is reached with ParseStrategy(name).
#ifndef REDBLOOM_STRATEGY_H_
#define REDBLOOM_STRATEGY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/funnel.h"
#include "redbloom/hash.h"
#include "redbloom/sizing.h"
#include "redbloom/status.h"

namespace redbloom {

// A strategy's stored id (file headers, dumps). Never renumbered.
enum class Strategy : uint8_t {
  kSeed = 0,
  kGuava64 = 1,
  kRedisson = 2,
};

// The registered strategies, by id.
std::vector<Strategy> Strategies();
// "seed", "guava64"; "unknown" for an id nobody registered.
std::string_view StrategyName(Strategy s);
// kInvalidArgument naming the registered strategies for an unknown name.
Result<Strategy> ParseStrategy(std::string_view name);
// One line describing the strategy, for help texts.
std::string_view StrategySummary(Strategy s);
// kInvalidArgument if the strategy cannot hash items of this encoding (an
// interop strategy takes only the encodings its Java side can produce).
Status CheckStrategyEncoding(Strategy s, Encoding e);

// kInvalidArgument for a (capacity, error rate) the strategy never takes,
// whatever the filter's kind (MakeConfig calls it first): 0 < p < 1 for seed
// and guava64; 0 <= p <= 1 for redisson, as Redisson checks it.
Status CheckParameters(Strategy s, uint64_t capacity, double error_rate);
// The geometry a strategy gives to (capacity, error rate): kInvalidArgument
// for parameters it cannot size (or that its Java side refuses).
Result<Geometry> GeometryFor(Strategy s, uint64_t capacity, double error_rate);

// The geometry of bits sized elsewhere (m and k as a Guava file records
// them), after checking that this strategy could have produced it: guava64
// needs m a multiple of 64, at most Guava's (2^31-1)*64, and 1 <= k <= 255.
// The seed strategy sizes from capacity and error rate only (kInvalidArgument).
Result<Geometry> GivenGeometry(Strategy s, uint64_t bits, uint32_t hashes);
// The strategy's hash of an item's bytes (see funnel.h for the bytes).
Hash128 HashBytes(Strategy s, std::string_view bytes);
// Writes geometry.hashes offsets, each in [0, geometry.bits), to `out`.
// `geometry` must come from GeometryFor() with the same strategy.
void ComputeOffsets(Strategy s, const Hash128& hash, const Geometry& geometry, uint64_t* out);
// The false-positive rate of a filter with `bits_set` of its bits set.
double FalsePositiveRate(Strategy s, uint64_t bits_set, const Geometry& geometry);
// Distinct items a fill suggests; UINT64_MAX when the estimate is unbounded
// (every bit set).
uint64_t EstimateItems(Strategy s, uint64_t bits_set, const Geometry& geometry);

// Hashes one textual item as a filter with this strategy and encoding does:
// EncodeItem, then HashBytes. `scratch` is reused between calls.
Status HashItem(Strategy s, Encoding e, std::string_view item, std::string* scratch, Hash128* out);

// Hash of a value through a user-defined funnel (any callable
// `void(const T&, ByteSink&)`), under strategy `s`. For guava64 and seed this
// is Guava's Hashing.murmur3_128().hashObject(value, funnel).
template <typename T, typename F>
Hash128 HashObject(Strategy s, const T& value, F&& funnel) {
  ByteSink sink;
  funnel(value, sink);
  return HashBytes(s, sink.bytes());
}

}  // namespace redbloom

#endif  // REDBLOOM_STRATEGY_H_
