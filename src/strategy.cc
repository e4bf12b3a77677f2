#include "redbloom/strategy.h"

#include <cstdint>
#include <string>

namespace redbloom {

std::string_view StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kSeed:
      return "seed";
    case Strategy::kGuava64:
      return "guava64";
  }
  return "unknown";
}

Result<Strategy> ParseStrategy(std::string_view name) {
  if (name == "seed") return Strategy::kSeed;
  if (name == "guava64") return Strategy::kGuava64;
  return Status::InvalidArgument("unknown strategy '" + std::string(name) +
                                 "' (expected seed or guava64)");
}

Result<Geometry> GeometryFor(Strategy s, uint64_t capacity, double error_rate) {
  switch (s) {
    case Strategy::kSeed:
      return SeedGeometry(capacity, error_rate);
    case Strategy::kGuava64:
      return Guava64Geometry(capacity, error_rate);
  }
  return Status::InvalidArgument("unknown strategy");
}

Result<Geometry> GivenGeometry(Strategy s, uint64_t bits, uint32_t hashes) {
  if (s != Strategy::kGuava64) {
    return Status::InvalidArgument("strategy " + std::string(StrategyName(s)) +
                                   " is sized by capacity and error rate, not by bits and hashes");
  }
  if (bits == 0 || bits % 64 != 0 || bits / 64 > static_cast<uint64_t>(INT32_MAX)) {
    return Status::InvalidArgument(
        "guava64 needs a positive multiple of 64 bits up to (2^31-1)*64, "
        "not " +
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

namespace {

void SeedOffsets(const Hash128& hash, const Geometry& g, uint64_t* out) {
  // Java: int hash1 = (int) hash64; int hash2 = (int) (hash64 >>> 32);
  const uint32_t hash1 = static_cast<uint32_t>(hash.as_long());
  const uint32_t hash2 = static_cast<uint32_t>(hash.as_long() >> 32);
  const auto m = static_cast<uint32_t>(g.bits);  // a positive Java int
  for (uint32_t i = 1; i <= g.hashes; ++i) {
    // int nextHash = hash1 + i * hash2; wraps mod 2^32.
    uint32_t next = hash1 + i * hash2;
    // if (nextHash < 0) nextHash = ~nextHash; leaves a value in [0, 2^31).
    if (next & 0x80000000u) next = ~next;
    out[i - 1] = next % m;
  }
}

void Guava64Offsets(const Hash128& hash, const Geometry& g, uint64_t* out) {
  uint64_t combined = hash.h1;
  for (uint32_t i = 0; i < g.hashes; ++i) {
    out[i] = (combined & 0x7fffffffffffffffULL) % g.bits;
    combined += hash.h2;  // long addition, wraps mod 2^64
  }
}

}  // namespace

void ComputeOffsets(Strategy s, const Hash128& hash, const Geometry& geometry, uint64_t* out) {
  switch (s) {
    case Strategy::kSeed:
      SeedOffsets(hash, geometry, out);
      return;
    case Strategy::kGuava64:
      Guava64Offsets(hash, geometry, out);
      return;
  }
}

}  // namespace redbloom
