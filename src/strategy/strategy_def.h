// The strategy table's entry. Internal: one file per strategy under
// src/strategy/ defines one StrategyDef, and src/strategy/table.cc lists them.
#ifndef REDBLOOM_SRC_STRATEGY_STRATEGY_DEF_H_
#define REDBLOOM_SRC_STRATEGY_STRATEGY_DEF_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "redbloom/funnel.h"
#include "redbloom/hash.h"
#include "redbloom/sizing.h"
#include "redbloom/status.h"
#include "redbloom/strategy.h"

namespace redbloom::internal {

struct StrategyDef {
  Strategy id;               // stored in files, dumps; never reused
  std::string_view name;     // stored in Redis metadata, typed on the CLI
  std::string_view summary;  // one line for help texts
  uint32_t encodings;        // bit (1 << Encoding) for each encoding it accepts
  Hash128 (*hash)(std::string_view bytes);
  Result<Geometry> (*geometry)(uint64_t capacity, double error_rate);
  // Checks bits sized elsewhere (m and k as a Guava file records them) that
  // this strategy could have produced; null if it sizes from capacity and
  // error rate only.
  Result<Geometry> (*given_geometry)(uint64_t bits, uint32_t hashes);
  // The offsets of hashes.size() items, g.hashes each, item after item:
  // batch-first, so that per-filter constants (a modulus's inverse) are
  // computed once per batch, not once per item.
  void (*offsets)(std::span<const Hash128> hashes, const Geometry& g, uint64_t* out);
  double (*false_positive_rate)(uint64_t bits_set, const Geometry& g);
  uint64_t (*estimate_items)(uint64_t bits_set, const Geometry& g);
};

inline constexpr uint32_t kAllEncodings = 0xFFFFFFFFu;

// The high 64 bits of a 64x64-bit product: one `mul` on x86-64.
__extension__ typedef unsigned __int128 Uint128;
inline uint64_t MulHigh64(uint64_t a, uint64_t b) {
  return static_cast<uint64_t>((static_cast<Uint128>(a) * b) >> 64);
}
constexpr uint32_t EncodingBit(Encoding e) { return uint32_t{1} << static_cast<unsigned>(e); }

// The classic model that fits any strategy whose k offsets are independent
// and uniform over all m bits: FPP = (x/m)^k (Guava's expectedFpp) and
// n = -m/k ln(1 - x/m) (Guava's approximateElementCount).
double UniformFalsePositiveRate(uint64_t bits_set, const Geometry& g);
uint64_t UniformEstimateItems(uint64_t bits_set, const Geometry& g);

// nullptr when no strategy has this id or name.
const StrategyDef* FindStrategy(Strategy id);
const StrategyDef* FindStrategy(std::string_view name);
std::span<const StrategyDef* const> StrategyTable();

// FindStrategy(id), which callers have validated (a config from MakeConfig).
const StrategyDef& StrategyOf(Strategy id);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_STRATEGY_STRATEGY_DEF_H_
