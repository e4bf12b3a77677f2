// Sizing: pure functions from (capacity n, error rate p) to bits m and hashes k,
// and back from a fill to an expected false-positive rate or an item count.
//
// Three sizings exist because three Java implementations exist, and a filter
// shared with one of them must be sized exactly as it sizes:
//  * Seed (the blog posts' BloomFilterHelper):
//      m = (int)(-n ln p / ln^2 2)        Java's (int) cast saturates at 2^31-1
//      k = max(1, (int) Math.round(m/n ln 2))
//    and the strategy takes offsets modulo this m.
//  * Guava 31.1 BloomFilter.create:
//      m = (long)(-n ln p / ln^2 2)       no 2^31 cap
//      k = max(1, (int) Math.round(m/n ln 2)) from the unrounded m,
//    then m is rounded up to a multiple of 64 (the long[] it allocates).
//  * Redisson's RBloomFilter.tryInit (unchanged since Redisson 3.6.0):
//      m = (long)(-n ln p / ln^2 2)       no rounding, p = 0 read as Double.MIN_VALUE
//      k = max(1, (int) Math.round(m/n ln 2))
//    refused for p outside [0, 1], m == 0 or m > 2^32 - 2 (its getMaxSize()).
// For reference: 1% needs about 9.6 bits per item and k = 7; 0.1% about 14.4
// bits and k = 10.
#ifndef REDBLOOM_SIZING_H_
#define REDBLOOM_SIZING_H_

#include <cstdint>

#include "redbloom/status.h"

namespace redbloom {

struct Geometry {
  uint64_t bits = 0;    // m: offsets are in [0, bits)
  uint32_t hashes = 0;  // k: offsets per item
  bool capped = false;  // seed only: m was saturated at 2^31-1 by Java's (int) cast

  friend bool operator==(const Geometry&, const Geometry&) = default;
};

// Largest k we accept. Guava rejects k > 255 (it stores k in one byte), and a
// larger k means an error rate below 1e-76, which no real filter wants.
inline constexpr uint32_t kMaxHashes = 255;

// Checks 1 <= n < 2^63 (a Java long, as the Java sizings take it) and
// 0 < p < 1 (NaN rejected).
Status ValidateCapacityAndErrorRate(uint64_t capacity, double error_rate);

// Java semantics used by the sizings, exposed for tests.
int32_t JavaDoubleToInt(double v);   // (int) v: NaN -> 0, saturating
int64_t JavaDoubleToLong(double v);  // (long) v: NaN -> 0, saturating
int64_t JavaMathRound(double v);     // Math.round: nearest, ties toward +infinity
// Natural log as Java's Math.log answers it. HotSpot's Math.log is (in every
// case we could find) the correctly rounded log; glibc's log is not always:
// out of 33,095 error rates tried, 7 differed by one ulp (p = 0.691 among
// them), enough to move m by one at some n and so every offset of the seed
// strategy. This computes log in double-double arithmetic (~2^-100 relative,
// plain IEEE double operations, so every compiler gives the same bits) and
// rounds once; sizing_test checks it against 113-bit logq on 5 million
// inputs and pins the sizing of 53,946 filters under GCC and clang.
double JavaLog(double x);

// The seed helper's sizing. Errors: invalid n/p, m == 0, k > kMaxHashes.
Result<Geometry> SeedGeometry(uint64_t capacity, double error_rate);
// Guava 31.1's sizing, m rounded up to a multiple of 64. Errors: invalid n/p,
// m == 0, k > kMaxHashes, or more than (2^31-1)*64 bits (Guava's own limit).
Result<Geometry> Guava64Geometry(uint64_t capacity, double error_rate);

// Redisson's largest filter: Integer.MAX_VALUE * 2L bits.
inline constexpr uint64_t kRedissonMaxBits = 4294967294;
// The (n, p) Redisson's tryInit takes before sizing: 0 <= p <= 1 (its own
// two checks, with its messages), and n below 2^63 (a Java long). n = 0, p = 1
// and NaN pass here and are refused by the sizing, as Redisson does.
Status ValidateRedissonParameters(uint64_t capacity, double error_rate);
// Redisson's sizing, with no limit on k but its own (p = 0 gives k = 1075 at
// most). Errors carry Redisson's messages: "Bloom filter calculated size is
// 0", "Bloom filter size can't be greater than 4294967294. But calculated
// size is M".
Result<Geometry> RedissonGeometry(uint64_t capacity, double error_rate);

// False-positive probability when `bits_set` of `bits` are set: (x/m)^k.
// This is Guava's expectedFpp().
double FppAtFill(uint64_t bits_set, uint64_t bits, uint32_t hashes);
// Expected FPP after `items` distinct insertions: (1 - e^(-k n / m))^k.
double ExpectedFpp(uint64_t items, uint64_t bits, uint32_t hashes);
// Guava's approximateElementCount(): round(-ln(1 - x/m) * m / k), half up.
// Returns UINT64_MAX when every bit is set (the estimate is unbounded).
uint64_t ApproximateCount(uint64_t bits_set, uint64_t bits, uint32_t hashes);
// Redisson's count(): Math.round(-m / (double) k * Math.log(1 - x / (double) m)),
// evaluated as Java does (it differs from Guava's by log vs log1p and the
// order of operations, so the two can differ by one). UINT64_MAX when every
// bit is set (Redisson answers Long.MAX_VALUE there); 0 for a count above m
// (bits set past m, which Redisson never sets: Math.round(NaN) is 0).
uint64_t RedissonCount(uint64_t bits_set, uint64_t bits, uint32_t hashes);

}  // namespace redbloom

#endif  // REDBLOOM_SIZING_H_
