// JavaLog and the Java-exact sizings, built from src/sizing.cc and
// src/status.cc alone, so scripts/test.sh can build this test with clang as
// well as GCC: the sizing of a filter must not depend on the compiler.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "redbloom/sizing.h"

#if REDBLOOM_HAVE_QUADMATH
#include <quadmath.h>
#endif

namespace redbloom {
namespace {

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
// replaced (GCC); CI's second pass (scripts/test.sh) builds this test with
// clang, so a compiler that sizes one filter differently fails here. (That older code,
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
