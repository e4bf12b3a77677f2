#include "redbloom/sizing.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

// The double-double arithmetic below relies on every operation rounding
// once: no fused multiply-add may merge two of them (GCC in ISO C++ mode
// does not; clang would where the target has FMA).
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

namespace redbloom {

namespace {

// The rate as given, in its shortest round-trip form ("1e-300", not the
// "0.000000" of std::to_string), as FormatDouble writes it; here so that
// this file builds alone (CI's "sizing under clang" compiles it with
// status.cc only).
std::string RateText(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, ptr) : "nan";
}

// Double-double numbers (hi + lo, |lo| <= ulp(hi)/2) after Dekker and
// Knuth: each operation below is exact or accurate to about 2^-104
// relative, with IEEE double operations only, so any compiler and any
// x86-64 or ARM64 target computes the same bits.
struct DD {
  double hi;
  double lo;
};

// a + b = s + e exactly.
DD TwoSum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

// The same for |a| >= |b|.
DD FastTwoSum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}

// a * b = p + e exactly (Dekker's product: halves of 26 bits multiply exactly).
DD TwoProduct(double a, double b) {
  constexpr double kSplit = 134217729.0;  // 2^27 + 1
  const double p = a * b;
  const double ca = kSplit * a, cb = kSplit * b;
  const double ah = ca - (ca - a), al = a - ah;
  const double bh = cb - (cb - b), bl = b - bh;
  return {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
}

DD Add(DD x, DD y) {
  DD s = TwoSum(x.hi, y.hi);
  const DD t = TwoSum(x.lo, y.lo);
  s.lo += t.hi;
  s = FastTwoSum(s.hi, s.lo);
  s.lo += t.lo;
  return FastTwoSum(s.hi, s.lo);
}

DD Mul(DD x, DD y) {
  DD p = TwoProduct(x.hi, y.hi);
  p.lo += x.hi * y.lo + x.lo * y.hi;
  return FastTwoSum(p.hi, p.lo);
}

DD Div(DD x, DD y) {
  const double q1 = x.hi / y.hi;
  DD r = Add(x, Mul({-q1, 0}, y));
  const double q2 = r.hi / y.hi;
  r = Add(r, Mul({-q2, 0}, y));
  const double q3 = r.hi / y.hi;
  return Add(FastTwoSum(q1, q2), {q3, 0});
}

// ln 2 to 107 bits (checked against libquadmath's logq(2) in sizing_test).
constexpr DD kLn2 = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};

// ln(x) for finite x > 0, to about 2^-100 relative: x = 2^e f with f in
// [sqrt(1/2), sqrt(2)), ln f = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with
// s = (f - 1)/(f + 1), |s| <= 0.172, so 23 terms reach 2^-110.
DD LogDD(double x) {
  int e = 0;
  double f = std::frexp(x, &e);  // f in [1/2, 1), exact
  if (f < 0.70710678118654752) {
    f *= 2;  // exact
    --e;
  }
  // f - 1 is exact (Sterbenz); f + 1 is not always, hence TwoSum.
  const DD s = Div({f - 1, 0}, TwoSum(f, 1));
  const DD s2 = Mul(s, s);
  DD term = s;
  DD sum = s;
  for (int n = 1; n < 40; ++n) {
    term = Mul(term, s2);
    const DD t = Div(term, {2.0 * n + 1, 0});
    sum = Add(sum, t);
    if (std::fabs(t.hi) < 0x1p-115 * std::fabs(sum.hi) || t.hi == 0) break;
  }
  return Add(Mul({static_cast<double>(e), 0}, kLn2), Mul({2, 0}, sum));
}

}  // namespace

double JavaLog(double x) {
  if (!(x > 0) || std::isinf(x)) return std::log(x);  // NaN, -inf, 0, +inf: as Math.log
  if (x == 1) return 0;
  // The double nearest hi + lo: FastTwoSum left hi = RN(hi + lo). It is the
  // correctly rounded log unless the true value lies within ~2^-100 of a
  // midpoint between two doubles, which sizing_test checks does not happen
  // for 10^6 error rates of every form people type and 10^6 random ones.
  return LogDD(x).hi;
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
    return Status::InvalidArgument("error rate " + RateText(error_rate) +
                                   " is not strictly between 0 and 1");
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
                                   RateText(error_rate) + " gives a filter of 0 bits");
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
                                   RateText(error_rate) + " gives a filter of 0 bits");
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
