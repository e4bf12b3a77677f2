#include "redbloom/sizing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#if REDBLOOM_HAVE_QUADMATH
#include <quadmath.h>
#endif

namespace redbloom {
namespace {

TEST(SizingTest, JavaCastsSaturate) {
  EXPECT_EQ(JavaDoubleToInt(3e9), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(JavaDoubleToInt(-3e9), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(JavaDoubleToInt(std::nan("")), 0);
  EXPECT_EQ(JavaDoubleToInt(12.99), 12);
  EXPECT_EQ(JavaDoubleToInt(-12.99), -12);
  EXPECT_EQ(JavaDoubleToLong(1e30), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(JavaDoubleToLong(INFINITY), std::numeric_limits<int64_t>::max());
}

TEST(SizingTest, JavaMathRoundIsHalfUp) {
  EXPECT_EQ(JavaMathRound(2.5), 3);
  EXPECT_EQ(JavaMathRound(-2.5), -2);  // ties go toward +infinity, unlike C's round()
  EXPECT_EQ(JavaMathRound(2.4999999999999996), 2);
  EXPECT_EQ(JavaMathRound(0.49999999999999994), 0);  // floor(x + 0.5) would give 1
  EXPECT_EQ(JavaMathRound(6.6438561897747395), 7);
}

TEST(SizingTest, SeedSizingFollowsTheHelperFormulas) {
  // The formulas of the posts' BloomFilterHelper, evaluated here in long double
  // as an independent check of the int truncation and the rounding of k.
  for (uint64_t n : {1ULL, 100ULL, 1000ULL, 12345ULL, 1000000ULL}) {
    for (double p : {0.5, 0.1, 0.01, 0.001, 1e-6}) {
      auto g = SeedGeometry(n, p);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      const long double raw = -static_cast<long double>(n) * std::log(static_cast<long double>(p)) /
                              (std::log(2.0L) * std::log(2.0L));
      EXPECT_NEAR(static_cast<long double>(g->bits), std::floor(raw), 1.0) << n << " " << p;
      const double k = std::round(static_cast<double>(g->bits) / n * std::log(2.0));
      EXPECT_EQ(g->hashes, std::max(1.0, k)) << n << " " << p;
      EXPECT_FALSE(g->capped);
    }
  }
}

TEST(SizingTest, SeedSizeSaturatesAtIntMaxAndSaysSo) {
  auto g = SeedGeometry(300'000'000, 0.01);  // ~2.875e9 bits wanted
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->bits, 2147483647u);
  EXPECT_TRUE(g->capped);
  EXPECT_EQ(g->hashes, 5u);  // from the capped m, as Java computes it
}

TEST(SizingTest, Guava64RoundsUpToWholeWordsWithoutIntCap) {
  auto g = Guava64Geometry(1000, 0.01);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->bits % 64, 0u);
  EXPECT_EQ(g->bits, 9600u);  // 9585 rounded up to 150 longs, Guava's writeTo size
  EXPECT_EQ(g->hashes, 7u);
  auto big = Guava64Geometry(300'000'000, 0.01);
  ASSERT_TRUE(big.ok());
  EXPECT_GT(big->bits, 2147483647u);
  EXPECT_FALSE(big->capped);
}

TEST(SizingTest, RejectsInvalidParametersBeforeAnythingIsCreated) {
  EXPECT_EQ(SeedGeometry(0, 0.01).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Guava64Geometry(0, 0.01).status().code(), StatusCode::kInvalidArgument);
  for (double p : {0.0, 1.0, -0.1, 1.5, std::nan(""), HUGE_VAL}) {
    EXPECT_EQ(SeedGeometry(10, p).status().code(), StatusCode::kInvalidArgument) << p;
    EXPECT_EQ(Guava64Geometry(10, p).status().code(), StatusCode::kInvalidArgument) << p;
  }
  // m == 0: Guava throws "data length is zero", the helper would divide by zero.
  EXPECT_EQ(Guava64Geometry(1, 0.99).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SeedGeometry(1, 0.99).status().code(), StatusCode::kInvalidArgument);
  // k > 255.
  EXPECT_EQ(Guava64Geometry(10, 1e-300).status().code(), StatusCode::kInvalidArgument);
  // The helper takes an int capacity.
  EXPECT_EQ(SeedGeometry(3'000'000'000ULL, 0.01).status().code(), StatusCode::kInvalidArgument);
}

TEST(SizingTest, FppAndCountEstimates) {
  EXPECT_DOUBLE_EQ(FppAtFill(0, 1000, 7), 0.0);
  EXPECT_DOUBLE_EQ(FppAtFill(500, 1000, 2), 0.25);
  // At capacity, a filter sized for p has an expected FPP close to p.
  auto g = Guava64Geometry(100000, 0.01);
  ASSERT_TRUE(g.ok());
  EXPECT_NEAR(ExpectedFpp(100000, g->bits, g->hashes), 0.01, 0.001);
  // The count estimate inverts the expected fill.
  const double fill = -std::expm1(-7.0 * 1000 / 9600);
  const auto bits_set = static_cast<uint64_t>(fill * 9600);
  EXPECT_NEAR(static_cast<double>(ApproximateCount(bits_set, 9600, 7)), 1000, 5);
  EXPECT_EQ(ApproximateCount(9600, 9600, 7), std::numeric_limits<uint64_t>::max());
}

uint64_t Fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// The Java-exact sizings of 53,946 (capacity, error rate) pairs, error rates
// d * 10^-j as people type them, and JavaLog of each rate, folded into one
// checksum. The value was computed with the libquadmath implementation this
// replaced (GCC); scripts/test.sh builds this test with clang too, so a
// compiler that sizes one filter differently fails here. (That older code,
// built with clang, gave f197f38fd7eb5622: it fell back to long double.)
TEST(SizingTest, SizingIsTheSameUnderEveryCompiler) {
  uint64_t h = 0xcbf29ce484222325ULL;
  int count = 0;
  for (int j = 1; j <= 6; ++j) {
    for (int d = 1; d <= 999; ++d) {
      double p = d;
      for (int i = 0; i < j + 2; ++i) p /= 10;
      if (!(p < 1)) continue;
      const double l = JavaLog(p);
      uint64_t bits;
      std::memcpy(&bits, &l, 8);
      h = Fnv(h, bits);
      for (uint64_t n : {1ULL, 7ULL, 100ULL, 1000ULL, 12345ULL, 1000000ULL, 10000000ULL,
                         123456789ULL, 2147483647ULL}) {
        auto seed = SeedGeometry(n, p);
        auto guava = Guava64Geometry(n, p);
        h = Fnv(h, seed.ok() ? seed->bits * 1000 + seed->hashes : 0);
        h = Fnv(h, guava.ok() ? guava->bits * 1000 + guava->hashes : 1);
        ++count;
      }
    }
  }
  EXPECT_EQ(count, 53946);
  EXPECT_EQ(h, 0xdec410de293906f5ULL);
}

// Values whose correctly rounded log glibc's log misses (0.691) or that every
// filter uses (ln 2, as the sizing formulas square it).
TEST(SizingTest, JavaLogIsCorrectlyRoundedOnKnownValues) {
  EXPECT_EQ(JavaLog(0.691), -0x1.7a7c7950f81acp-2);  // glibc: ...abp-2
  EXPECT_EQ(JavaLog(2.0), 0x1.62e42fefa39efp-1);
  EXPECT_EQ(JavaLog(0.01), -0x1.26bb1bbb55515p+2);
  EXPECT_EQ(JavaLog(0.03), -0x1.c0d6e3a1428a6p+1);
  EXPECT_EQ(JavaLog(1.0), 0.0);
  EXPECT_TRUE(std::isnan(JavaLog(-1.0)));
  EXPECT_EQ(JavaLog(0.0), -std::numeric_limits<double>::infinity());
}

#if REDBLOOM_HAVE_QUADMATH
// JavaLog's double-double log against libquadmath's 113-bit log rounded to
// double: the same for every decimal rate d * 10^-j (d < 10^4, j <= 12) and
// for 10^6 random doubles in (0, 1) (5.1 million agreed when it was written).
TEST(SizingTest, JavaLogAgreesWithQuadPrecision) {
  auto quad = [](double x) { return static_cast<double>(logq(static_cast<__float128>(x))); };
  for (int j = 1; j <= 12; ++j) {
    for (int d = 1; d <= 9999; ++d) {
      double p = d;
      for (int i = 0; i < j + 3; ++i) p /= 10;
      ASSERT_EQ(JavaLog(p), quad(p)) << "p " << p;
    }
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1'000'000; ++i) {
    const uint64_t exponent = 1022 - rng() % 60;
    const uint64_t b = (rng() & 0x000fffffffffffffULL) | (exponent << 52);
    double x;
    std::memcpy(&x, &b, 8);
    ASSERT_EQ(JavaLog(x), quad(x)) << "x " << x;
  }
}
#endif

}  // namespace
}  // namespace redbloom
