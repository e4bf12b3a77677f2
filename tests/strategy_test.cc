#include "redbloom/strategy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strategy/strategy_def.h"
#include "test_util.h"
#include "word_kernels.h"

namespace redbloom {
namespace {

// Direct transcription of the posts' Java loop with Java int semantics spelled
// out (two's complement wrap via int64 arithmetic and masking), as an
// independent oracle for the unsigned implementation.
std::vector<uint64_t> JavaSeedLoop(uint64_t hash64, int32_t k, int32_t m) {
  auto to_int = [](int64_t v) {
    v &= 0xffffffffLL;
    return static_cast<int32_t>(v >= 0x80000000LL ? v - 0x100000000LL : v);
  };
  const int32_t hash1 = to_int(static_cast<int64_t>(hash64 & 0xffffffffULL));
  const int32_t hash2 = to_int(static_cast<int64_t>(hash64 >> 32));
  std::vector<uint64_t> out;
  for (int32_t i = 1; i <= k; ++i) {
    int32_t next = to_int(static_cast<int64_t>(hash1) + static_cast<int64_t>(i) * hash2);
    if (next < 0) next = ~next;
    out.push_back(static_cast<uint64_t>(next % m));
  }
  return out;
}

TEST(StrategyTest, SeedMatchesJavaIntArithmetic) {
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (int trial = 0; trial < 20000; ++trial) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const Hash128 h{x, ~x};
    for (auto [n, p] :
         {std::pair{100ULL, 0.01}, {1000ULL, 0.01}, {1000000ULL, 0.001}, {300000000ULL, 0.01}}) {
      auto g = SeedGeometry(n, p);
      ASSERT_TRUE(g.ok());
      std::vector<uint64_t> got(g->hashes);
      ComputeOffsets(Strategy::kSeed, h, *g, got.data());
      ASSERT_EQ(got,
                JavaSeedLoop(x, static_cast<int32_t>(g->hashes), static_cast<int32_t>(g->bits)))
          << "hash " << x << " n " << n;
    }
  }
}

TEST(StrategyTest, OffsetsStayInRange) {
  uint64_t x = 1;
  for (Strategy s : Strategies()) {
    auto g = GeometryFor(s, 777, 0.003);
    ASSERT_TRUE(g.ok());
    std::vector<uint64_t> out(g->hashes);
    for (int i = 0; i < 10000; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      ComputeOffsets(s, Hash128{x, x * 31 + 7}, *g, out.data());
      for (uint64_t o : out) ASSERT_LT(o, g->bits) << StrategyName(s);
    }
  }
}

TEST(StrategyTest, Guava64StepsByH2AndMasksTheSign) {
  const Geometry g{6400, 3, false};
  const Hash128 h{0xFFFFFFFFFFFFFFFFULL, 1};
  std::vector<uint64_t> out(3);
  ComputeOffsets(Strategy::kGuava64, h, g, out.data());
  // c = -1 -> (c & MAX) = 2^63-1; then c = 0; then 1.
  EXPECT_EQ(out[0], 0x7FFFFFFFFFFFFFFFULL % 6400);
  EXPECT_EQ(out[1], 0u);
  EXPECT_EQ(out[2], 1u);
}

// guava64's offsets come from a Barrett reduction (portable) or from
// doubles (AVX-512, where the CPU has it), not `%`: both must be the same
// integers as Java's (c & Long.MAX_VALUE) % m for every m Guava can have,
// from one word to its limit of (2^31 - 1) * 64 bits, for k up to 16 (two
// vectors of eight) and past it (portable).
class Guava64OffsetsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { internal::SetVectorKernelsEnabledForTesting(GetParam()); }
  void TearDown() override { internal::SetVectorKernelsEnabledForTesting(true); }
};

INSTANTIATE_TEST_SUITE_P(VectorAndPortable, Guava64OffsetsTest, ::testing::Bool());

TEST_P(Guava64OffsetsTest, EqualJavaRemainders) {
  uint64_t x = 0x2545F4914F6CDD1DULL;
  auto next = [&x] {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 0x2545F4914F6CDD1DULL;
  };
  std::vector<uint64_t> sizes = {64, 128, 640, 9600, 95850624, ((1ULL << 31) - 1) * 64};
  for (int i = 0; i < 200; ++i) sizes.push_back((next() % ((1ULL << 31) - 1) + 1) * 64);
  for (uint64_t m : sizes) {
    const uint32_t k = m % 3 == 0 ? 20 : 16;
    const Geometry g{m, k, false};
    std::vector<uint64_t> got(k);
    for (int trial = 0; trial < 2000; ++trial) {
      // Extremes too: all ones, the sign bit alone, zero, and runs of c
      // around the largest multiple of m below 2^63 and around m (where a
      // quotient estimate is most likely to be off by one).
      const uint64_t top = 0x7fffffffffffffffULL / m * m;
      const Hash128 h = trial == 0   ? Hash128{~0ULL, ~0ULL}
                        : trial == 1 ? Hash128{1ULL << 63, 1ULL << 63}
                        : trial == 2 ? Hash128{0, 0}
                        : trial == 3 ? Hash128{top - 3, 1}
                        : trial == 4 ? Hash128{m - 3, 1}
                        : trial == 5 ? Hash128{top - m, m}
                                     : Hash128{next(), next()};
      ComputeOffsets(Strategy::kGuava64, h, g, got.data());
      uint64_t c = h.h1;
      for (uint32_t j = 0; j < k; ++j, c += h.h2) {
        ASSERT_EQ(got[j], (c & 0x7fffffffffffffffULL) % m) << "m " << m << " trial " << trial;
      }
    }
  }
}

TEST(StrategyTest, BatchOffsetsEqualOneByOne) {
  for (Strategy s : Strategies()) {
    auto g = GeometryFor(s, 12345, 0.004);
    ASSERT_TRUE(g.ok());
    std::vector<Hash128> hashes;
    for (uint64_t i = 0; i < 100; ++i) hashes.push_back(Hash128{i * 0x9E3779B97F4A7C15ULL, ~i});
    std::vector<uint64_t> many(hashes.size() * g->hashes), one(g->hashes);
    ComputeOffsets(s, hashes, *g, many.data());
    for (size_t i = 0; i < hashes.size(); ++i) {
      ComputeOffsets(s, hashes[i], *g, one.data());
      ASSERT_EQ(
          std::vector<uint64_t>(many.begin() + i * g->hashes, many.begin() + (i + 1) * g->hashes),
          one)
          << StrategyName(s) << " item " << i;
    }
  }
}

// A strategy's batch hash (StrategyDef::hash_many, which HashItems uses for
// utf8 and bytes items) gives each item its one-at-a-time hash, and says
// "all ASCII" exactly when no item has a byte of 0x80 or more.
TEST(StrategyTest, BatchHashesEqualOneByOne) {
  std::vector<std::string> items;
  for (int i = 0; i < 77; ++i)
    items.push_back(std::string(static_cast<size_t>(i % 40), 'a') + std::to_string(i));
  int with_hash_many = 0;
  for (const internal::StrategyDef* def : internal::StrategyTable()) {
    if (def->hash_many == nullptr) continue;
    ++with_hash_many;
    for (bool ascii : {true, false}) {
      if (!ascii) items[50] += "\xc3\xa7";
      const std::vector<std::string_view> views(items.begin(), items.end());
      std::vector<Hash128> many(views.size());
      EXPECT_EQ(def->hash_many(views, many.data()), ascii) << def->name;
      for (size_t i = 0; i < views.size(); ++i) {
        ASSERT_EQ(many[i], def->hash(views[i])) << def->name << " item " << i;
      }
      if (!ascii) items[50].resize(items[50].size() - 2);
    }
  }
  EXPECT_GE(with_hash_many, 3) << "seed, guava64 and block hash batches";
}

// The ASCII answer must see every byte: one of 0x80 or more anywhere in an
// item of any length makes it false (a batch of nine, so that the AVX-512
// form of Murmur3_128Many runs where the CPU has it).
TEST(StrategyTest, BatchHashesSeeEveryNonAsciiByte) {
  int with_hash_many = 0;
  for (const internal::StrategyDef* def : internal::StrategyTable()) {
    if (def->hash_many == nullptr) continue;
    ++with_hash_many;
    for (size_t length = 1; length <= 40; ++length) {
      for (size_t at = 0; at < length; ++at) {
        std::vector<std::string> items(9, "ORD-12345");
        items[4] = std::string(length, 'x');
        items[4][at] = static_cast<char>(0x80 + (at % 0x40));
        const std::vector<std::string_view> views(items.begin(), items.end());
        std::vector<Hash128> many(views.size());
        ASSERT_FALSE(def->hash_many(views, many.data()))
            << def->name << ": byte " << at << " of " << length;
        ASSERT_EQ(many[4], def->hash(views[4])) << def->name;
      }
    }
  }
  EXPECT_GE(with_hash_many, 3) << "seed, guava64 and block hash batches";
}

TEST(StrategyTest, ParseNames) {
  EXPECT_EQ(testing::ValueOrFail(ParseStrategy("seed")), Strategy::kSeed);
  EXPECT_EQ(testing::ValueOrFail(ParseStrategy("guava64")), Strategy::kGuava64);
  EXPECT_EQ(testing::ValueOrFail(ParseStrategy("block")), Strategy::kBlock);
  EXPECT_EQ(ParseStrategy("murmur").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace redbloom
