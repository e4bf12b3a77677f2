// The strategy table's entry. Internal: one file per strategy under
// src/strategy/ defines one StrategyDef, and src/strategy/table.cc lists them.
#ifndef REDBLOOM_SRC_STRATEGY_STRATEGY_DEF_H_
#define REDBLOOM_SRC_STRATEGY_STRATEGY_DEF_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_codec.h"
#include "redbloom/funnel.h"
#include "redbloom/hash.h"
#include "redbloom/sizing.h"
#include "redbloom/status.h"
#include "redbloom/strategy.h"

namespace redbloom::internal {

struct WordKernels;  // word_kernels.h

// A hash that a strategy's Java side keeps next to the bitmap in Redis and
// checks before every operation (Redisson's {NAME}:config). The Redis store
// writes it when it creates such a filter (exactly as the Java side would),
// checks it on attach, compares two of its fields on every cell operation,
// and expires and drops it with the filter; other stores have none.
struct CompanionHash {
  // The key: NAME:suffix if NAME contains '{', else {NAME}:suffix (Redisson's
  // suffixName), never KeysFor's prefix.
  std::string_view suffix;
  // Every field of a new filter's hash, in the order the Java side writes
  // them. Fields kCompanionBitsField and kCompanionHashesField must hold
  // g.bits and g.hashes in canonical decimal.
  std::vector<std::pair<std::string, std::string>> (*fields)(uint64_t capacity, double error_rate,
                                                             const Geometry& g);
  // The capacity and error rate recorded in `fields`, checked against its
  // bits and hashes fields: kDataLoss "<where>: <why>" for anything missing,
  // malformed or inconsistent.
  Status (*parameters)(const FieldMap& fields, std::string_view where, uint64_t* capacity,
                       double* error_rate);
};
// The fields every cell operation compares, by these names (the Lua scripts
// in redis_scripts.h name them too): Redisson's add and contains scripts
// compare exactly these two, as strings.
inline constexpr std::string_view kCompanionBitsField = "size";
inline constexpr std::string_view kCompanionHashesField = "hashIterations";

struct StrategyDef {
  Strategy id;               // stored in files, dumps; never reused
  std::string_view name;     // stored in Redis metadata, typed on the CLI
  std::string_view summary;  // one line for help texts
  uint32_t encodings;        // bit (1 << Encoding) for each encoding it accepts
  Hash128 (*hash)(std::string_view bytes);
  // hash() of every item into out[i], faster than one call per item, and
  // whether every byte of them is ASCII (so valid UTF-8); nullptr if the
  // strategy has no such form.
  bool (*hash_many)(std::span<const std::string_view> items, Hash128* out) = nullptr;
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
  // The (capacity, error rate) the strategy takes, checked before any kind
  // or sizing runs; nullptr means ValidateCapacityAndErrorRate (1 <= n < 2^63,
  // 0 < p < 1).
  Status (*check_parameters)(uint64_t capacity, double error_rate) = nullptr;
  // Its Java side's per-filter hash on Redis, or nullptr.
  const CompanionHash* companion = nullptr;
  // Its Java side writes a filter's bits on Redis itself (the seed helper's
  // SETBIT, Redisson's scripts), counting nothing: redbloom cannot tell
  // their adds from a filter's count.
  bool java_writes_bits = false;
  // Its offsets fused with the in-memory stores' cell accesses
  // (word_kernels.h), or nullptr for the general path.
  const WordKernels* word_kernels = nullptr;
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
