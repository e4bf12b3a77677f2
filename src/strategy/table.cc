// The strategy table: one line per strategy, each defined in its own file in
// this folder. Adding a strategy is that file plus its two lines here.
#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "strategy/strategy_def.h"

namespace redbloom::internal {

extern const StrategyDef kSeedStrategy;      // seed.cc
extern const StrategyDef kGuava64Strategy;   // guava64.cc
extern const StrategyDef kRedissonStrategy;  // redisson.cc
extern const StrategyDef kBlockStrategy;     // block.cc

namespace {

const StrategyDef* const kStrategies[] = {
    &kSeedStrategy,
    &kGuava64Strategy,
    &kRedissonStrategy,
    &kBlockStrategy,
};

}  // namespace

std::span<const StrategyDef* const> StrategyTable() { return kStrategies; }

const StrategyDef* FindStrategy(Strategy id) {
  for (const StrategyDef* s : kStrategies) {
    if (s->id == id) return s;
  }
  return nullptr;
}

const StrategyDef* FindStrategy(std::string_view name) {
  for (const StrategyDef* s : kStrategies) {
    if (s->name == name) return s;
  }
  return nullptr;
}

const StrategyDef& StrategyOf(Strategy id) {
  const StrategyDef* s = FindStrategy(id);
  if (s == nullptr) std::abort();  // configs are validated before they reach here
  return *s;
}

double UniformFalsePositiveRate(uint64_t bits_set, const Geometry& g) {
  return FppAtFill(bits_set, g.bits, g.hashes);
}

uint64_t UniformEstimateItems(uint64_t bits_set, const Geometry& g) {
  return ApproximateCount(bits_set, g.bits, g.hashes);
}

}  // namespace redbloom::internal

namespace redbloom {

using internal::FindStrategy;
using internal::StrategyOf;

std::vector<Strategy> Strategies() {
  std::vector<Strategy> out;
  for (const auto* s : internal::StrategyTable()) out.push_back(s->id);
  return out;
}

std::string_view StrategyName(Strategy s) {
  const auto* def = FindStrategy(s);
  return def == nullptr ? "unknown" : def->name;
}

std::string_view StrategySummary(Strategy s) {
  const auto* def = FindStrategy(s);
  return def == nullptr ? "" : def->summary;
}

Result<Strategy> ParseStrategy(std::string_view name) {
  if (const auto* def = FindStrategy(name)) return def->id;
  std::string known;
  for (const auto* s : internal::StrategyTable()) {
    if (!known.empty()) known += ", ";
    known += s->name;
  }
  return Status::InvalidArgument("unknown strategy '" + std::string(name) + "' (expected " + known +
                                 ")");
}

Status CheckStrategyEncoding(Strategy s, Encoding e) {
  const auto* def = FindStrategy(s);
  if (def == nullptr) return Status::InvalidArgument("unknown strategy");
  if (EncodingName(e) == "unknown") {
    return Status::InvalidArgument("unknown encoding " + std::to_string(static_cast<int>(e)));
  }
  if ((def->encodings & internal::EncodingBit(e)) == 0) {
    std::string allowed;
    for (Encoding x : AllEncodings()) {
      if ((def->encodings & internal::EncodingBit(x)) == 0) continue;
      if (!allowed.empty()) allowed += ", ";
      allowed += EncodingName(x);
    }
    return Status::InvalidArgument("strategy " + std::string(def->name) +
                                   " does not take encoding " + std::string(EncodingName(e)) +
                                   " (it takes " + allowed + ")");
  }
  return Status::Ok();
}

Status CheckParameters(Strategy s, uint64_t capacity, double error_rate) {
  const auto* def = FindStrategy(s);
  if (def == nullptr) return Status::InvalidArgument("unknown strategy");
  if (def->check_parameters == nullptr) return ValidateCapacityAndErrorRate(capacity, error_rate);
  return def->check_parameters(capacity, error_rate);
}

Result<Geometry> GeometryFor(Strategy s, uint64_t capacity, double error_rate) {
  const auto* def = FindStrategy(s);
  if (def == nullptr) return Status::InvalidArgument("unknown strategy");
  // Remembered: block's sizing searches its FPP model (about 10 ms), and a
  // window filter's slices, each its own part number, all ask the same
  // question; a 20-slice window on Redis took 0.2 s of CPU per CLI call, long
  // enough for its 10 ms slices to expire under it. Bounded; a full memo is
  // emptied, never trimmed (the sizes of one process's filters are few).
  using Key = std::tuple<Strategy, uint64_t, uint64_t>;
  static std::mutex mu;
  static std::map<Key, Geometry> memo;  // guarded by mu
  const Key key{s, capacity, std::bit_cast<uint64_t>(error_rate)};
  {
    std::lock_guard lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  Result<Geometry> g = def->geometry(capacity, error_rate);
  if (g.ok()) {
    std::lock_guard lock(mu);
    if (memo.size() >= 1024) memo.clear();
    memo.emplace(key, *g);
  }
  return g;
}

Result<Geometry> GivenGeometry(Strategy s, uint64_t bits, uint32_t hashes) {
  const auto* def = FindStrategy(s);
  if (def == nullptr) return Status::InvalidArgument("unknown strategy");
  if (def->given_geometry == nullptr) {
    return Status::InvalidArgument("strategy " + std::string(def->name) +
                                   " is sized by capacity and error rate, not by bits and hashes");
  }
  return def->given_geometry(bits, hashes);
}

Hash128 HashBytes(Strategy s, std::string_view bytes) { return StrategyOf(s).hash(bytes); }

void ComputeOffsets(Strategy s, const Hash128& hash, const Geometry& geometry, uint64_t* out) {
  StrategyOf(s).offsets(std::span<const Hash128>(&hash, 1), geometry, out);
}

void ComputeOffsets(Strategy s, std::span<const Hash128> hashes, const Geometry& geometry,
                    uint64_t* out) {
  StrategyOf(s).offsets(hashes, geometry, out);
}

double FalsePositiveRate(Strategy s, uint64_t bits_set, const Geometry& geometry) {
  return StrategyOf(s).false_positive_rate(bits_set, geometry);
}

uint64_t EstimateItems(Strategy s, uint64_t bits_set, const Geometry& geometry) {
  return StrategyOf(s).estimate_items(bits_set, geometry);
}

Status HashItem(Strategy s, Encoding e, std::string_view item, std::string* scratch, Hash128* out) {
  std::string_view bytes;
  REDBLOOM_RETURN_IF_ERROR(EncodeItem(e, item, scratch, &bytes));
  *out = HashBytes(s, bytes);
  return Status::Ok();
}

}  // namespace redbloom
