// MurmurHash3's 64-bit finalizer (fmix64), the one copy behind Guava's
// murmur3_128, the block strategy's extra bit fields and a sharded filter's
// choice of shard. All three are stored layouts: its constants never change.
#ifndef REDBLOOM_UTIL_FMIX64_H_
#define REDBLOOM_UTIL_FMIX64_H_

#include <cstdint>

namespace redbloom::internal {

// Its two multipliers, named for the eight-lane copy in hash.cc.
inline constexpr uint64_t kFmix64Mul1 = 0xff51afd7ed558ccdULL;
inline constexpr uint64_t kFmix64Mul2 = 0xc4ceb9fe1a85ec53ULL;

constexpr uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= kFmix64Mul1;
  k ^= k >> 33;
  k *= kFmix64Mul2;
  k ^= k >> 33;
  return k;
}

// fmix64(1), written out: an edit to a constant above fails the build
// before it moves a stored bit.
static_assert(Fmix64(1) == 0xb456bcfc34c2cb2cULL);

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_FMIX64_H_
