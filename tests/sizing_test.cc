#include "redbloom/sizing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "redbloom/filter_config.h"
#include "test_util.h"

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
  // The rate is named as given: "1e-300", not the "0.000000" of %f, which
  // reads as if 0 had been sent.
  for (Strategy s : {Strategy::kBlock, Strategy::kGuava64}) {
    auto tiny = MakeConfig({.capacity = 100, .error_rate = 1e-300, .strategy = s});
    EXPECT_EQ(tiny.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(tiny.status().message().find("0.000000"), std::string::npos)
        << tiny.status().message();
  }
  auto empty = Guava64Geometry(1, 0.99);
  EXPECT_NE(empty.status().message().find("error rate 0.99 "), std::string::npos)
      << empty.status().message();
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

// Bits sized elsewhere (a Guava file's m and k, so guava64 filters): the
// config keeps them and
// derives n = round(m ln 2 / k) and p = 2^-k, and reads back the same.
TEST(SizingTest, GivenGeometryDerivesCapacityAndErrorRate) {
  auto c = MakeConfig({.strategy = Strategy::kGuava64, .bits = 9600, .hashes = 7});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->geometry_given);
  EXPECT_EQ(c->geometry, (Geometry{.bits = 9600, .hashes = 7}));
  EXPECT_EQ(c->capacity, 951u);  // 9600 * 0.693147 / 7 = 950.6
  EXPECT_EQ(c->error_rate, 1.0 / 128);
  EXPECT_NE(c->ToString().find("geometry=given"), std::string::npos) << c->ToString();
  const FilterOptions back = OptionsOf(*c);
  EXPECT_EQ(back.capacity, 0u);
  EXPECT_EQ(back.bits, 9600u);
  auto again = MakeConfig(back);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *c);
  // Not the filter that capacity 951 at 1/128 gives: that one derives m.
  auto derived = MakeConfig(
      {.capacity = c->capacity, .error_rate = c->error_rate, .strategy = Strategy::kGuava64});
  ASSERT_TRUE(derived.ok());
  EXPECT_FALSE(derived->SameFilterAs(*c));
  // A counting filter may have given geometry; its cells are sized by it.
  auto counting = MakeConfig(
      {.strategy = Strategy::kGuava64, .kind = FilterKind::kCounting, .bits = 640, .hashes = 3});
  ASSERT_TRUE(counting.ok()) << counting.status().ToString();
  EXPECT_EQ(counting->data_bytes(), 320u);
  EXPECT_EQ(testing::ValueOrFail(SizePart(*counting, 0)).geometry, counting->geometry);
}

TEST(SizingTest, GivenGeometryIsCheckedLikeGuavasOwn) {
  const auto code = [](const FilterOptions& o) { return MakeConfig(o).status().code(); };
  EXPECT_EQ(code({.strategy = Strategy::kGuava64, .bits = 9601, .hashes = 7}),
            StatusCode::kInvalidArgument)
      << "not a multiple of 64";
  EXPECT_EQ(code({.strategy = Strategy::kGuava64, .bits = 64ULL << 31, .hashes = 7}),
            StatusCode::kInvalidArgument)
      << "over Guava's (2^31-1)*64 bits";
  EXPECT_EQ(code({.strategy = Strategy::kGuava64, .bits = 9600, .hashes = 0}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.strategy = Strategy::kGuava64, .bits = 9600, .hashes = 256}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.strategy = Strategy::kGuava64, .bits = 0, .hashes = 7}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.capacity = 1000,
                  .error_rate = 0.01,
                  .strategy = Strategy::kGuava64,
                  .bits = 9600,
                  .hashes = 7}),
            StatusCode::kInvalidArgument)
      << "capacity and bits are two sizings";
  // One of m and k beside capacity and rate is named as the one given alone
  // (it read "give either ..., not both").
  const Status hashes_alone =
      MakeConfig({.capacity = 100, .error_rate = 0.01, .hashes = 7}).status();
  EXPECT_EQ(hashes_alone.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(hashes_alone.message().find("hashes without bits"), std::string::npos)
      << hashes_alone.ToString();
  EXPECT_EQ(code({.strategy = Strategy::kSeed, .bits = 9600, .hashes = 7}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.strategy = Strategy::kGuava64,
                  .kind = FilterKind::kScaling,
                  .bits = 9600,
                  .hashes = 7}),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      MakeConfig({.strategy = Strategy::kGuava64, .bits = (64ULL << 31) - 64, .hashes = 255}).ok());
}

// Capacities and rates come from users: a number out of range is named as
// such, not as "not a number".
TEST(SizingTest, NumbersOutOfRangeAreNamedSo) {
  EXPECT_EQ(*ParseUint64("1e6"), 1000000u);
  EXPECT_EQ(*ParseUint64("18446744073709551615"), UINT64_MAX);
  // Whole doubles up to 2^64 are in range (1.8e19 was said to be out of it).
  EXPECT_EQ(*ParseUint64("1.8e19"), 18'000'000'000'000'000'000u);
  // Read exactly, not through a double (which took ...993.0 as ...992).
  EXPECT_EQ(*ParseUint64("9007199254740993.0"), 9'007'199'254'740'993u);
  EXPECT_EQ(*ParseUint64("18446744073709551615.0"), UINT64_MAX);
  EXPECT_EQ(*ParseUint64("1.8446744073709551615e19"), UINT64_MAX);
  EXPECT_EQ(*ParseUint64("123456789012345678900e-1"), 12'345'678'901'234'567'890u);
  EXPECT_EQ(*ParseUint64("2.5E3"), 2500u);
  EXPECT_EQ(*ParseUint64("1000.000"), 1000u);
  EXPECT_EQ(*ParseUint64("0e999"), 0u);
  bool too_large = true;
  EXPECT_EQ(WholeNumberOf(1.8e19, &too_large), 18'000'000'000'000'000'000u);
  EXPECT_FALSE(too_large);
  EXPECT_EQ(WholeNumberOf(18446744073709551616.0, &too_large), std::nullopt);
  EXPECT_TRUE(too_large);
  EXPECT_EQ(WholeNumberOf(1.5, &too_large), std::nullopt);
  EXPECT_FALSE(too_large);
  EXPECT_EQ(WholeNumberOf(-1), std::nullopt);
  for (const char* big : {"18446744073709551616", "99999999999999999999", "1e20", "1e999",
                          "18446744073709551616.0", "1.8446744073709551616e19"}) {
    auto r = ParseUint64(big);
    ASSERT_FALSE(r.ok()) << big;
    EXPECT_NE(r.status().message().find("is too large (past 2^64)"), std::string::npos)
        << r.status().ToString();
  }
  for (const char* bad : {"abc", "-5", "10.5", "", "1e-999", "-1e999", "9007199254740993.5", "1e",
                          "1e+", ".e5", "1e5x", "+5", "inf", "0x10"}) {
    auto r = ParseUint64(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("not a non-negative integer"), std::string::npos)
        << r.status().ToString();
  }
  for (const char* tiny : {"1e-400", "1e400"}) {
    auto r = ParseDouble(tiny);
    ASSERT_FALSE(r.ok()) << tiny;
    EXPECT_NE(r.status().message().find("out of a double's range"), std::string::npos)
        << r.status().ToString();
  }
  EXPECT_NE(ParseDouble("1%").status().message().find("not a number"), std::string::npos);
  EXPECT_NE(ParseDouble("inf").status().message().find("not a number"), std::string::npos);
  EXPECT_DOUBLE_EQ(*ParseDouble("0.01"), 0.01);
  // A duration past 2^64 ms is too long, not "not a duration".
  EXPECT_EQ(*ParseDurationMillis("7d"), 7u * 86'400'000u);
  for (const char* long_one : {"99999999999999999999s", "9999999999999999d"}) {
    auto r = ParseDurationMillis(long_one);
    ASSERT_FALSE(r.ok()) << long_one;
    EXPECT_NE(r.status().message().find("is too long"), std::string::npos) << r.status().ToString();
  }
  for (const char* bad : {"", "s", "-5s", "5 s", "5w"}) {
    auto r = ParseDurationMillis(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().find("too long"), std::string::npos) << r.status().ToString();
  }
}

// What a filter in use stores at once, for limits on its size: a window
// keeps each slice one slice past the window (the clock grace), so it holds
// slices + 1 of them; redbloomd's max_filter_bytes counted `slices`.
TEST(SizingTest, StoredPartsAreWhatAFilterInUseHolds) {
  FilterOptions o{.capacity = 1000, .error_rate = 0.01};
  EXPECT_EQ(testing::ValueOrFail(MakeConfig(o)).stored_parts(), 1u);
  o.shards = 4;
  EXPECT_EQ(testing::ValueOrFail(MakeConfig(o)).stored_parts(), 4u);
  o.shards = 1;
  o.kind = FilterKind::kScaling;
  EXPECT_EQ(testing::ValueOrFail(MakeConfig(o)).stored_parts(), 1u);  // layers come as it fills
  o.kind = FilterKind::kCounting;
  EXPECT_EQ(testing::ValueOrFail(MakeConfig(o)).stored_parts(), 1u);
  o.kind = FilterKind::kWindow;
  o.window_millis = 60000;
  for (uint32_t slices : {1u, 10u, 60u}) {
    o.slices = slices;
    const FilterConfig window = testing::ValueOrFail(MakeConfig(o));
    EXPECT_EQ(window.stored_parts(), slices + 1u) << slices;
    EXPECT_EQ(window.initial_parts(), 0u);
  }
}

}  // namespace
}  // namespace redbloom

// A window's slice is sized for its share of the capacity rounded up, at
// the rate over the slices: 10 items over 4 slices is 3 a slice, not 2
// (rounded down, the window held fewer items than asked at its rate), and 3
// over 4 is 1, not 0. The coverage audit: a mutation rounding down survived.
TEST(SizingTest, AWindowSliceHoldsItsShareOfTheCapacityRoundedUp) {
  for (const auto& [capacity, slices, share] :
       {std::tuple<uint64_t, uint32_t, uint64_t>{10, 4, 3}, {3, 4, 1}, {8, 4, 2}}) {
    redbloom::FilterOptions options{.capacity = capacity,
                                    .error_rate = 0.01,
                                    .kind = redbloom::FilterKind::kWindow,
                                    .window_millis = 60'000,
                                    .slices = slices};
    ASSERT_OK_AND_ASSIGN(redbloom::FilterConfig config, redbloom::MakeConfig(options));
    ASSERT_OK_AND_ASSIGN(redbloom::PartSizing part, redbloom::SizePart(config, 0));
    EXPECT_EQ(part.capacity, share) << capacity << " over " << slices;
    EXPECT_DOUBLE_EQ(part.error_rate, 0.01 / slices) << capacity << " over " << slices;
  }
}
