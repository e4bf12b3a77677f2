#include "redbloom/sizing.h"

#include <cmath>
#include <limits>
#include <string>

#if REDBLOOM_HAVE_QUADMATH
#include <quadmath.h>
#endif

namespace redbloom {

double JavaLog(double x) {
#if REDBLOOM_HAVE_QUADMATH
  // log in 113-bit precision, rounded once to double: the correctly rounded
  // result except when the true value lies within ~2^-60 ulp of a midpoint.
  return static_cast<double>(logq(static_cast<__float128>(x)));
#else
  // 64-bit-mantissa log rounded to double: correctly rounded but for about
  // one value in 2^11.
  return static_cast<double>(std::log(static_cast<long double>(x)));
#endif
}

namespace {

// Java evaluates Math.log(2) * Math.log(2) in double; so do we.
double Ln2Squared() { return JavaLog(2.0) * JavaLog(2.0); }

// -n * Math.log(p) / (Math.log(2) * Math.log(2)), with Java's `long` negation
// of n first, exactly as both helpers write it.
double RawBits(uint64_t n, double p) {
  const double neg_n = -static_cast<double>(static_cast<int64_t>(n));
  return neg_n * JavaLog(p) / Ln2Squared();
}

// max(1, (int) Math.round((double) m / n * Math.log(2))), the same in all
// three helpers.
int64_t JavaOptimalHashes(uint64_t n, int64_t m) {
  const double v = static_cast<double>(m) / static_cast<double>(n) * JavaLog(2.0);
  // (int) of a long keeps its low 32 bits; for every valid (n, p) the value
  // is below 2^11, so this only matters for the range checks.
  return std::max<int64_t>(1, static_cast<int32_t>(JavaMathRound(v)));
}

Result<uint32_t> OptimalHashes(uint64_t n, int64_t m) {
  const int64_t k = JavaOptimalHashes(n, m);
  if (k > kMaxHashes) {
    return Status::InvalidArgument("error rate too small: it needs " + std::to_string(k) +
                                   " hash functions, more than " + std::to_string(kMaxHashes));
  }
  return static_cast<uint32_t>(k);
}

}  // namespace

Status ValidateCapacityAndErrorRate(uint64_t capacity, double error_rate) {
  if (capacity < 1) return Status::InvalidArgument("capacity must be at least 1");
  if (capacity > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument("capacity must be below 2^63");
  }
  if (std::isnan(error_rate) || !(error_rate > 0.0 && error_rate < 1.0)) {
    return Status::InvalidArgument("error rate must be strictly between 0 and 1");
  }
  return Status::Ok();
}

int32_t JavaDoubleToInt(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483647.0) return std::numeric_limits<int32_t>::max();
  if (v <= -2147483648.0) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);  // truncation toward zero, in range
}

int64_t JavaDoubleToLong(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

int64_t JavaMathRound(double v) {
  if (std::isnan(v)) return 0;
  const double f = std::floor(v);
  // v - f is exact for doubles, so ties are detected without the classic
  // floor(v + 0.5) error at 0.49999999999999994.
  return JavaDoubleToLong(v - f >= 0.5 ? f + 1.0 : f);
}

Result<Geometry> SeedGeometry(uint64_t capacity, double error_rate) {
  REDBLOOM_RETURN_IF_ERROR(ValidateCapacityAndErrorRate(capacity, error_rate));
  if (capacity > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    // The helper's constructor takes `int expectedInsertions`.
    return Status::InvalidArgument("strategy seed takes a capacity of at most 2147483647");
  }
  const double raw = RawBits(capacity, error_rate);
  const int32_t m = JavaDoubleToInt(raw);
  if (m <= 0) {
    return Status::InvalidArgument("capacity " + std::to_string(capacity) + " at error rate " +
                                   std::to_string(error_rate) + " gives a filter of 0 bits");
  }
  REDBLOOM_ASSIGN_OR_RETURN(uint32_t k, OptimalHashes(capacity, m));
  Geometry g;
  g.bits = static_cast<uint64_t>(m);
  g.hashes = k;
  g.capped = raw >= 2147483647.0;
  return g;
}

Result<Geometry> Guava64Geometry(uint64_t capacity, double error_rate) {
  REDBLOOM_RETURN_IF_ERROR(ValidateCapacityAndErrorRate(capacity, error_rate));
  const int64_t m = JavaDoubleToLong(RawBits(capacity, error_rate));
  if (m <= 0) {
    return Status::InvalidArgument("capacity " + std::to_string(capacity) + " at error rate " +
                                   std::to_string(error_rate) + " gives a filter of 0 bits");
  }
  REDBLOOM_ASSIGN_OR_RETURN(uint32_t k, OptimalHashes(capacity, m));
  const uint64_t words = (static_cast<uint64_t>(m) + 63) / 64;
  if (words > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return Status::InvalidArgument("filter of " + std::to_string(m) +
                                   " bits is larger than Guava's limit of (2^31-1)*64 bits");
  }
  Geometry g;
  g.bits = words * 64;
  g.hashes = k;
  return g;
}

Status ValidateRedissonParameters(uint64_t capacity, double error_rate) {
  // tryInitAsync's own checks, in its order and with its messages.
  if (error_rate > 1) {
    return Status::InvalidArgument("Bloom filter false probability can't be greater than 1");
  }
  if (error_rate < 0) {
    return Status::InvalidArgument("Bloom filter false probability can't be negative");
  }
  if (capacity > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument("capacity must be below 2^63 (Redisson takes a Java long)");
  }
  return Status::Ok();
}

Result<Geometry> RedissonGeometry(uint64_t capacity, double error_rate) {
  REDBLOOM_RETURN_IF_ERROR(ValidateRedissonParameters(capacity, error_rate));
  // optimalNumOfBits: `if (p == 0) p = Double.MIN_VALUE;`
  const double p = error_rate == 0 ? std::numeric_limits<double>::denorm_min() : error_rate;
  const int64_t m = JavaDoubleToLong(RawBits(capacity, p));
  // NaN, n = 0 and p = 1 all land here, as in Redisson.
  if (m == 0) return Status::InvalidArgument("Bloom filter calculated size is 0");
  if (m < 0 || static_cast<uint64_t>(m) > kRedissonMaxBits) {
    return Status::InvalidArgument("Bloom filter size can't be greater than " +
                                   std::to_string(kRedissonMaxBits) + ". But calculated size is " +
                                   std::to_string(m));
  }
  Geometry g;
  g.bits = static_cast<uint64_t>(m);
  g.hashes = static_cast<uint32_t>(JavaOptimalHashes(capacity, m));
  return g;
}

double FppAtFill(uint64_t bits_set, uint64_t bits, uint32_t hashes) {
  if (bits == 0) return 1.0;
  return std::pow(static_cast<double>(bits_set) / static_cast<double>(bits), hashes);
}

double ExpectedFpp(uint64_t items, uint64_t bits, uint32_t hashes) {
  if (bits == 0) return 1.0;
  const double k = hashes;
  return std::pow(-std::expm1(-k * static_cast<double>(items) / static_cast<double>(bits)), k);
}

uint64_t ApproximateCount(uint64_t bits_set, uint64_t bits, uint32_t hashes) {
  if (bits == 0 || hashes == 0) return 0;
  if (bits_set >= bits) return std::numeric_limits<uint64_t>::max();
  const double fraction = static_cast<double>(bits_set) / static_cast<double>(bits);
  const double estimate = -std::log1p(-fraction) * static_cast<double>(bits) / hashes;
  return static_cast<uint64_t>(JavaMathRound(estimate));
}

uint64_t RedissonCount(uint64_t bits_set, uint64_t bits, uint32_t hashes) {
  if (bits == 0 || hashes == 0) return 0;
  if (bits_set == bits) return std::numeric_limits<uint64_t>::max();
  // -size is a long negated before the division, as Java reads it.
  const double scale = -static_cast<double>(static_cast<int64_t>(bits)) / hashes;
  const double v = scale * JavaLog(1 - static_cast<double>(bits_set) / static_cast<double>(bits));
  return static_cast<uint64_t>(std::max<int64_t>(0, JavaMathRound(v)));
}

}  // namespace redbloom
