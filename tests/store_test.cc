// Behaviour every store shares, run over mem: and file:. (The Redis store runs
// the same kind of checks in redis_*_test.cc against a real server.)
#include "redbloom/store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "test_util.h"

namespace redbloom {
namespace {

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string url = GetParam() == "file" ? "file:" + dir_.path() : "mem:";
    auto s = Store::Open(url);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  FilterConfig Config(uint64_t n = 1000, double p = 0.01) {
    auto c = MakeConfig(FilterOptions{.capacity = n, .error_rate = p});
    EXPECT_TRUE(c.ok());
    return *c;
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreTest, CreateIsIdempotentOnlyForIdenticalConfig) {
  ASSERT_TRUE(store_->Create("f", Config()).ok());
  EXPECT_EQ(store_->Create("f", Config()).code(), StatusCode::kAlreadyExists);
  const Status other = store_->Create("f", Config(1000, 0.02));
  EXPECT_EQ(other.code(), StatusCode::kConflict);
  EXPECT_NE(other.message().find("error_rate=0.01"), std::string::npos) << other.message();
  auto read = store_->ReadConfig("f");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, Config());
}

TEST_P(StoreTest, MissingFilterIsNotFoundEverywhere) {
  EXPECT_EQ(store_->ReadConfig("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Drop("nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->OpenBits("nope", Config()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(BloomFilter::Open(*store_, "nope").status().code(), StatusCode::kNotFound);
}

TEST_P(StoreTest, ListAndDrop) {
  ASSERT_TRUE(store_->Create("b", Config()).ok());
  ASSERT_TRUE(store_->Create("a", Config()).ok());
  auto names = store_->List();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(store_->Drop("a").ok());
  EXPECT_EQ(testing::ValueOrFail(store_->List()), (std::vector<std::string>{"b"}));
}

TEST_P(StoreTest, RejectsUnsafeNames) {
  for (const std::string& name :
       std::vector<std::string>{"", "a/b", "..", ".", ".hidden", "with space", "tab\there",
                                "x:meta", std::string(kMaxNameBytes + 1, 'x'),
                                std::string("nul\0x", 5), std::string("\xff\xfe")}) {
    EXPECT_EQ(store_->Create(name, Config()).code(), StatusCode::kInvalidArgument)
        << "'" << name << "'";
  }
  EXPECT_TRUE(store_->Create(std::string(kMaxNameBytes, 'x'), Config()).ok());
  EXPECT_TRUE(store_->Create("blacklist:pedidos", Config()).ok());
  EXPECT_TRUE(store_->Create("订单", Config()).ok());
}

TEST_P(StoreTest, OpenBitsNoticesARecreatedFilter) {
  ASSERT_TRUE(store_->Create("f", Config()).ok());
  ASSERT_TRUE(store_->Drop("f").ok());
  ASSERT_TRUE(store_->Create("f", Config(5000)).ok());
  EXPECT_EQ(store_->OpenBits("f", Config()).status().code(), StatusCode::kConflict);
}

// A handle must never keep working on a filter that was dropped: it reports
// the filter gone, or follows the filter re-created under the name.
TEST_P(StoreTest, OpenHandlesFollowDropAndRecreate) {
  auto stale = BloomFilter::Create(*store_, "f", {.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(stale.ok());
  ASSERT_TRUE((*stale)->Add("before").ok());
  ASSERT_TRUE(store_->Drop("f").ok());
  auto gone = (*stale)->Contains("before");
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << "a dropped filter is an error";
  EXPECT_EQ((*stale)->Add("x").code(), StatusCode::kNotFound);

  // Re-created with identical parameters: the old handle now writes to it.
  auto fresh = BloomFilter::Create(*store_, "f", {.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*stale)->Add("after").ok());
  EXPECT_TRUE(testing::ValueOrFail((*fresh)->Contains("after")));
  EXPECT_FALSE(testing::ValueOrFail((*fresh)->Contains("before")));
}

TEST_P(StoreTest, AddReportsNewItemsAndCountsThem) {
  ASSERT_TRUE(store_->Create("f", Config()).ok());
  auto bits = store_->OpenBits("f", Config());
  ASSERT_TRUE(bits.ok());
  const uint64_t offsets[] = {1, 2, 3, 1, 2, 3, 3, 4, 5};
  uint8_t changed[3] = {9, 9, 9};
  ASSERT_TRUE((*bits)->Add(offsets, 3, 3, changed).ok());
  EXPECT_EQ(changed[0], 1);
  EXPECT_EQ(changed[1], 0);
  EXPECT_EQ(changed[2], 1);
  uint8_t present[3];
  const uint64_t probe[] = {1, 2, 3, 4, 5, 6, 5, 4, 3};
  ASSERT_TRUE((*bits)->Test(probe, 3, 3, present).ok());
  EXPECT_EQ(present[0], 1);
  EXPECT_EQ(present[1], 0);
  EXPECT_EQ(present[2], 1);
  auto stats = (*bits)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->bits_set, 5u);
  EXPECT_EQ(stats->items_added, 2u);
  const uint64_t out_of_range[] = {Config().geometry.bits};
  EXPECT_EQ((*bits)->Add(out_of_range, 1, 1, nullptr).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*bits)->Clear().ok());
  EXPECT_EQ(testing::ValueOrFail((*bits)->Stats()).bits_set, 0u);
  EXPECT_EQ(testing::ValueOrFail((*bits)->Stats()).items_added, 0u);
}

TEST_P(StoreTest, ConcurrentWritersLoseNoAdd) {
  ASSERT_TRUE(store_->Create("f", Config(200000, 0.01)).ok());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto f = BloomFilter::Open(*store_, "f");
      ASSERT_TRUE(f.ok());
      std::vector<std::string> items;
      for (int i = 0; i < kPerThread; ++i)
        items.push_back("t" + std::to_string(t) + "-" + std::to_string(i));
      std::vector<std::string_view> views(items.begin(), items.end());
      for (size_t start = 0; start < views.size(); start += 100) {
        ASSERT_TRUE((*f)->AddMany(std::span(views).subspan(start, 100)).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  auto f = BloomFilter::Open(*store_, "f");
  ASSERT_TRUE(f.ok());
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      const std::string item = "t" + std::to_string(t) + "-" + std::to_string(i);
      ASSERT_TRUE(testing::ValueOrFail((*f)->Contains(item))) << item;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values("mem", "file"),
                         [](const auto& param_info) { return param_info.param; });

TEST(StoreUrlTest, RejectsUnknownSchemes) {
  for (const std::string& url :
       std::vector<std::string>{"", "memory:", "http://x", "file:", "redis:/x"}) {
    EXPECT_EQ(Store::Open(url).status().code(), StatusCode::kInvalidArgument) << url;
  }
}

TEST(StoreUrlTest, FileStoreOnAPlainFileIsAnError) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/not-a-dir";
  FILE* f = fopen(path.c_str(), "w");
  fclose(f);
  EXPECT_FALSE(Store::Open("file:" + path).ok());
}

}  // namespace
}  // namespace redbloom
