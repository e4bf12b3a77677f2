// The `block` strategy: its offsets' shape, its sizing against the FPP it
// promises (measured, at several rates), its model in Info(), and golden
// offsets so its layout cannot change by accident.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "redbloom/strategy.h"

namespace redbloom {
namespace {

std::vector<uint64_t> OffsetsOf(const FilterConfig& c, const std::string& item) {
  auto o = ItemOffsets(c, item);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  return o.ok() ? *o : std::vector<uint64_t>{};
}

FilterConfig Config(uint64_t n, double p) {
  auto c = MakeConfig(FilterOptions{.capacity = n, .error_rate = p, .strategy = Strategy::kBlock});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : FilterConfig{};
}

// A FilterConfig filled in by hand is refused, not hashed: guava64 with no
// bits divided by zero, a block builder of no bits read past its array, and
// block offsets for 10 bits came out past m (an audit).
TEST(BlockStrategyTest, AConfigNotMadeByMakeConfigIsRefused) {
  FilterConfig guava;
  guava.strategy = Strategy::kGuava64;
  EXPECT_EQ(ItemOffsets(guava, "a").status().code(), StatusCode::kInvalidArgument);
  FilterConfig block;
  block.strategy = Strategy::kBlock;
  block.geometry = {.bits = 10, .hashes = 7};
  EXPECT_EQ(ItemOffsets(block, "a").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BitmapBuilder::Make(FilterConfig{}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_THROW(BitmapBuilder{block}, std::invalid_argument);
  auto made = MakeConfig({.capacity = 1000, .error_rate = 0.01, .strategy = Strategy::kBlock});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE(ItemOffsets(*made, "a").ok());
  EXPECT_TRUE(BitmapBuilder::Make(*made).ok());
  // A scaling filter's first layer too large is the capacity asked for: a
  // bad request (exit 2), not a store out of room (it said resource_exhausted).
  auto huge = MakeConfig(
      {.capacity = (uint64_t{1} << 63) - 1, .error_rate = 0.01, .kind = FilterKind::kScaling});
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument) << huge.status().ToString();
}

TEST(BlockStrategyTest, AnItemsOffsetsShareOneBlockAndDistinctWords) {
  for (double p : {0.1, 0.01, 0.001, 1e-5}) {
    const FilterConfig c = Config(100000, p);
    ASSERT_EQ(c.geometry.bits % 512, 0u) << "p " << p;
    for (int i = 0; i < 20000; ++i) {
      const std::vector<uint64_t> o = OffsetsOf(c, "ORD-" + std::to_string(i));
      ASSERT_EQ(o.size(), c.geometry.hashes);
      std::set<uint64_t> words;
      for (uint64_t x : o) {
        ASSERT_LT(x, c.geometry.bits);
        ASSERT_EQ(x / 512, o[0] / 512) << "item " << i << " p " << p;
        words.insert(x / 64);
      }
      // Up to eight bits, each in its own word of the block.
      EXPECT_EQ(words.size(), std::min<size_t>(8, o.size())) << "item " << i << " p " << p;
    }
  }
}

// A schema test: the hash, the block and the bits of a few items are the
// format of every block filter ever written. Changing any of them needs a
// new strategy id, never an edit here.
TEST(BlockStrategyTest, GoldenOffsets) {
  const FilterConfig c = Config(1000, 0.01);
  EXPECT_EQ(c.geometry.bits, 10240u);
  EXPECT_EQ(c.geometry.hashes, 5u);
  EXPECT_EQ(Xxh3_128(std::string_view("ORD-1")).ToHex(), "a59190a378634a55cabc87350632ea99");
  EXPECT_EQ(OffsetsOf(c, "ORD-1"), (std::vector<uint64_t>{3225, 3294, 3343, 3436, 3462}));
  EXPECT_EQ(OffsetsOf(c, "hello"), (std::vector<uint64_t>{8143, 7711, 7798, 7864, 7904}));
  // Past ten bits an item's fields come from mixes of h2, ten per mix: k = 25
  // takes two of them. Within its block an item keeps its first bits of k = 5.
  const FilterConfig fine = Config(1000, 1e-9);
  EXPECT_EQ(fine.geometry.hashes, 25u);
  EXPECT_EQ(OffsetsOf(fine, "ORD-1"),
            (std::vector<uint64_t>{26777, 26846, 26895, 26988, 27014, 27075, 26660, 26705, 26813,
                                   26828, 26940, 27001, 27033, 27124, 26640, 26729, 26806, 26857,
                                   26881, 26965, 27066, 27120, 26627, 26721, 26795}));
}

TEST(BlockStrategyTest, SizingNeedsAFewPercentMoreBitsThanClassic) {
  // The blocked model asks for somewhat more bits per item than the classic
  // filter, never fewer, and never absurdly many.
  for (double p : {0.1, 0.01, 0.001, 1e-4}) {
    auto classic = GeometryFor(Strategy::kGuava64, 1'000'000, p);
    auto block = GeometryFor(Strategy::kBlock, 1'000'000, p);
    ASSERT_TRUE(classic.ok() && block.ok());
    const double ratio = static_cast<double>(block->bits) / static_cast<double>(classic->bits);
    EXPECT_GE(ratio, 1.0) << "p " << p;
    EXPECT_LE(ratio, 1.25) << "p " << p;
    EXPECT_LE(block->hashes, classic->hashes) << "p " << p;
  }
}

// Fills filters to capacity at several rates and measures the false-positive
// rate on 10^6 never-added items: it must stay within the requested rate (a
// sampling allowance of 3 standard deviations), and Info() must report the
// block model's rate, within 10% of what was measured.
TEST(BlockStrategyTest, MeasuredFppAtCapacityStaysWithinTheRate) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  constexpr uint64_t kItems = 200'000;
  constexpr int kProbes = 1'000'000;
  std::vector<std::string> added, fresh;
  for (uint64_t i = 0; i < kItems; ++i) added.push_back("ORD-" + std::to_string(i));
  for (int i = 0; i < kProbes; ++i) fresh.push_back("absent-" + std::to_string(i));
  const std::vector<std::string_view> added_views(added.begin(), added.end());
  const std::vector<std::string_view> fresh_views(fresh.begin(), fresh.end());
  for (double p : {0.2, 0.05, 0.01, 0.002}) {
    auto f = BloomFilter::Create(
        **store, "p" + std::to_string(p),
        FilterOptions{.capacity = kItems, .error_rate = p, .strategy = Strategy::kBlock});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->AddMany(added_views).ok());
    std::vector<uint8_t> present;
    ASSERT_TRUE((*f)->ContainsMany(added_views, &present).ok());
    for (size_t i = 0; i < kItems; ++i) ASSERT_EQ(present[i], 1) << "key " << added[i];
    ASSERT_TRUE((*f)->ContainsMany(fresh_views, &present).ok());
    int hits = 0;
    for (uint8_t b : present) hits += b;
    const double measured = static_cast<double>(hits) / kProbes;
    EXPECT_LE(measured, p + 3 * std::sqrt(p * (1 - p) / kProbes)) << "p " << p;
    EXPECT_GE(measured, 0.7 * p) << "p " << p << ": sized far larger than needed";

    auto info = (*f)->Info();
    ASSERT_TRUE(info.ok());
    EXPECT_NEAR(info->current_fpp, measured, 0.1 * measured) << "p " << p;
    EXPECT_NEAR(static_cast<double>(info->approximate_items), kItems, 0.02 * kItems) << "p " << p;
    // The classic formula (fill^k) would under-report a blocked filter.
    const double classic = std::pow(info->fill_ratio, info->config.geometry.hashes);
    EXPECT_GT(info->current_fpp, classic) << "p " << p;
  }
}

}  // namespace
}  // namespace redbloom
