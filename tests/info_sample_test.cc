// Info() on large memory and file parts estimates bits_set from a sample
// instead of reading every cell (issue #15.6): the estimate must agree with
// an exact count within its statistical error, small parts must still be
// counted exactly, and the method must be reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "test_util.h"

namespace redbloom::testing {
namespace {

// A bitmap of `bytes` whose bits are each set with probability 2^-and_terms,
// independently (a filled Bloom filter looks like this: uniform hashes);
// returns the exact number of non-zero cells (bits, or 4-bit counters).
uint64_t RandomCells(size_t bytes, uint32_t cell_bits, int and_terms, uint64_t seed,
                     std::string* out) {
  std::mt19937_64 rng(seed);
  out->assign(bytes, '\0');
  uint64_t cells = 0;
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t w = ~uint64_t{0};
    for (int t = 0; t < and_terms; ++t) w &= rng();
    const size_t len = std::min<size_t>(8, bytes - i);
    if (len < 8) w &= (uint64_t{1} << (8 * len)) - 1;
    if (cell_bits == 4) w = (w | (w >> 1) | (w >> 2) | (w >> 3)) & 0x1111111111111111ULL;
    std::memcpy(out->data() + i, &w, len);
    cells += static_cast<uint64_t>(std::popcount(w));
  }
  return cells;
}

struct Case {
  const char* store;
  FilterKind kind;
  uint64_t cells;
  int and_terms;  // each bit set with probability 2^-and_terms
  bool sampled;
};

class InfoSampleTest : public ::testing::TestWithParam<Case> {};

TEST_P(InfoSampleTest, EstimateAgreesWithAnExactCount) {
  const Case& c = GetParam();
  TempDir dir;
  const std::string url = std::string(c.store) == "file" ? "file:" + dir.path() : "mem:";
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
  FilterOptions o;
  o.kind = c.kind;
  o.strategy = Strategy::kGuava64;  // given geometry (bits, hashes) takes guava64
  o.bits = c.cells;
  o.hashes = 7;
  ASSERT_OK_AND_ASSIGN(auto filter, BloomFilter::Create(*store, "f", o));
  const FilterConfig config = filter->config();
  std::string bitmap;
  const uint64_t exact =
      RandomCells(config.data_bytes(), config.cell_bits(), c.and_terms, c.cells, &bitmap);
  ASSERT_TRUE(filter->OrBitmap(bitmap, 0).ok());
  bitmap.clear();
  bitmap.shrink_to_fit();

  ASSERT_OK_AND_ASSIGN(FilterInfo info, filter->Info());
  EXPECT_EQ(info.bits_set_exact, !c.sampled);
  if (!c.sampled) {
    EXPECT_EQ(info.bits_set, exact);
    return;
  }
  // 1024 blocks of 4 KiB: 2^25 bits or 2^23 counters. Six standard errors.
  const double sampled = config.cell_bits() == 1 ? std::ldexp(1, 25) : std::ldexp(1, 23);
  const double p = static_cast<double>(exact) / static_cast<double>(c.cells);
  const double tolerance = 6 * std::sqrt(p * (1 - p) / sampled) * static_cast<double>(c.cells);
  EXPECT_NEAR(static_cast<double>(info.bits_set), static_cast<double>(exact), tolerance)
      << "fill " << p;
  EXPECT_NEAR(info.fill_ratio, p, tolerance / static_cast<double>(c.cells));
}

// 2^29 cells of one bit are 64 MiB, the largest part counted exactly.
INSTANTIATE_TEST_SUITE_P(
    Parts, InfoSampleTest,
    ::testing::Values(Case{"mem", FilterKind::kPlain, uint64_t{1} << 29, 2, false},
                      Case{"mem", FilterKind::kPlain, (uint64_t{1} << 29) + 64, 2, true},
                      Case{"mem", FilterKind::kPlain, (uint64_t{1} << 30) + 4160, 5, true},
                      Case{"file", FilterKind::kPlain, (uint64_t{1} << 30) + 4160, 1, true},
                      Case{"mem", FilterKind::kCounting, (uint64_t{1} << 28) + 64, 3, true}),
    [](const ::testing::TestParamInfo<Case>& p) {
      return std::string(p.param.store) + "_" + std::string(FilterKindName(p.param.kind)) + "_" +
             std::to_string(p.param.cells) + (p.param.sampled ? "_sampled" : "_exact");
    });

}  // namespace
}  // namespace redbloom::testing
