// Counting, scaling, window and TTL filters and atomic rebuilds, run over
// every store: mem:, file: and a real redis-server.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redis_server.h"
#include "test_util.h"

namespace redbloom {
namespace {

std::vector<std::string> Items(const std::string& prefix, int n, int from = 0) {
  std::vector<std::string> v;
  for (int i = from; i < from + n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}
std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}
std::vector<std::string_view> Slice(const std::vector<std::string>& v, size_t from, size_t n) {
  return {v.begin() + from, v.begin() + from + n};
}

int CountPresent(BloomFilter& f, const std::vector<std::string>& items) {
  std::vector<uint8_t> present;
  Status s = f.ContainsMany(Views(items), &present);
  EXPECT_TRUE(s.ok()) << s.ToString();
  int n = 0;
  for (uint8_t p : present) n += p;
  return n;
}

class KindsTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    redis_ = new testing::RedisServer();
    redis_->Start();
  }
  static void TearDownTestSuite() {
    delete redis_;
    redis_ = nullptr;
  }
  void SetUp() override {
    std::string url = "mem:";
    if (GetParam() == "file") url = "file:" + dir_.path();
    if (GetParam() == "redis") {
      url = redis_->url();
      redis_->Cli({"FLUSHALL"});
    }
    auto s = Store::Open(url);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  std::unique_ptr<BloomFilter> Make(const std::string& name, FilterOptions o) {
    auto f = BloomFilter::Create(*store_, name, o);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? std::move(f).value() : nullptr;
  }

  static testing::RedisServer* redis_;
  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};
testing::RedisServer* KindsTest::redis_ = nullptr;

TEST_P(KindsTest, CountingRemovesWhatWasAdded) {
  auto f = Make("c", {.capacity = 2000, .error_rate = 0.01, .kind = FilterKind::kCounting});
  ASSERT_NE(f, nullptr);
  const auto items = Items("ORD-", 2000);
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  ASSERT_EQ(CountPresent(*f, items), 2000);
  const auto half = std::vector<std::string>(items.begin(), items.begin() + 1000);
  const auto rest = std::vector<std::string>(items.begin() + 1000, items.end());
  std::vector<uint8_t> removed;
  ASSERT_TRUE(f->RemoveMany(Views(half), &removed).ok());
  for (size_t i = 0; i < removed.size(); ++i) EXPECT_EQ(removed[i], 1) << half[i];
  // Every item still in the filter is found; the removed ones mostly are not.
  EXPECT_EQ(CountPresent(*f, rest), 1000);
  EXPECT_LT(CountPresent(*f, half), 50);
  EXPECT_EQ(testing::ValueOrFail(f->Info()).items_added, 1000u)
      << "a counting filter counts every add, less removes";
  // Removing an absent item changes nothing and says so.
  bool gone = true;
  ASSERT_TRUE(f->Remove("never-added", &gone).ok());
  EXPECT_FALSE(gone);
  EXPECT_EQ(CountPresent(*f, rest), 1000);
}

TEST_P(KindsTest, SaturatedCountersAreNeverDecremented) {
  auto f = Make("c", {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kCounting});
  ASSERT_NE(f, nullptr);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(f->Add("hot").ok());  // counters reach 15 and stay
  for (int i = 0; i < 20; ++i) {
    bool removed = false;
    ASSERT_TRUE(f->Remove("hot", &removed).ok());
    EXPECT_TRUE(removed) << "remove " << i;
  }
  EXPECT_TRUE(testing::ValueOrFail(f->Contains("hot"))) << "saturated counters must keep the item";
}

TEST_P(KindsTest, RemoveIsUnimplementedOnBitFilters) {
  auto f = Make("p", {.capacity = 100, .error_rate = 0.01});
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->Add("x").ok());
  EXPECT_EQ(f->Remove("x").code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(testing::ValueOrFail(f->Contains("x")));
}

TEST_P(KindsTest, ConcurrentCountingWritersLoseNoAdd) {
  ASSERT_NE(Make("c", {.capacity = 40000, .error_rate = 0.01, .kind = FilterKind::kCounting}),
            nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto f = BloomFilter::Open(*store_, "c");
      ASSERT_TRUE(f.ok());
      const auto items = Items("t" + std::to_string(t) + "-", 5000);
      for (size_t i = 0; i < items.size(); i += 500) {
        ASSERT_TRUE((*f)->AddMany(Slice(items, i, 500)).ok());
      }
      // Each thread also removes its own odd items while the others add.
      std::vector<std::string> odd;
      for (size_t i = 1; i < items.size(); i += 2) odd.push_back(items[i]);
      std::vector<uint8_t> removed;
      ASSERT_TRUE((*f)->RemoveMany(Views(odd), &removed).ok());
    });
  }
  for (auto& t : threads) t.join();
  auto f = BloomFilter::Open(*store_, "c");
  ASSERT_TRUE(f.ok());
  for (int t = 0; t < 4; ++t) {
    std::vector<std::string> even;
    for (int i = 0; i < 5000; i += 2)
      even.push_back("t" + std::to_string(t) + "-" + std::to_string(i));
    EXPECT_EQ(CountPresent(**f, even), 2500) << "thread " << t;
  }
}

TEST_P(KindsTest, ScalingGrowsAndKeepsTheErrorRateAtTenTimesCapacity) {
  auto f = Make("s", {.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kScaling});
  ASSERT_NE(f, nullptr);
  const auto items = Items("ORD-", 10000);
  for (size_t i = 0; i < items.size(); i += 1000) {
    ASSERT_TRUE(f->AddMany(Slice(items, i, 1000)).ok());
  }
  EXPECT_EQ(CountPresent(*f, items), 10000) << "no false negatives";
  const auto probes = Items("never-", 50000);
  const double fpp = CountPresent(*f, probes) / 50000.0;
  EXPECT_LE(fpp, 0.01) << "the chain's rate must stay within the requested 1%";
  auto info = f->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->parts, 4u) << "1000 + 2000 + 4000 + 8000 >= 10000";
  EXPECT_NEAR(static_cast<double>(info->approximate_items), 10000, 500);
  EXPECT_LE(info->current_fpp, 0.01);
}

TEST_P(KindsTest, ConcurrentGrowthAddsEachLayerOnce) {
  ASSERT_NE(Make("s", {.capacity = 500, .error_rate = 0.01, .kind = FilterKind::kScaling}),
            nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto f = BloomFilter::Open(*store_, "s");
      ASSERT_TRUE(f.ok());
      const auto items = Items("t" + std::to_string(t) + "-", 2000);
      for (size_t i = 0; i < items.size(); i += 100) {
        Status s = (*f)->AddMany(Slice(items, i, 100));
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
    });
  }
  for (auto& t : threads) t.join();
  auto f = BloomFilter::Open(*store_, "s");
  ASSERT_TRUE(f.ok());
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(CountPresent(**f, Items("t" + std::to_string(t) + "-", 2000)), 2000);
  }
  auto config = store_->ReadConfig("s");
  ASSERT_TRUE(config.ok());
  auto layers = store_->Layers("s", *config);
  auto parts = store_->ListParts("s", *config);
  ASSERT_TRUE(layers.ok() && parts.ok());
  // 8000 items over 500, 1000, 2000, 4000 (7500) need a fifth layer; racing
  // writers may overfill a layer a little, but never add two at once.
  EXPECT_EQ(parts->size(), *layers);
  for (size_t i = 0; i < parts->size(); ++i) EXPECT_EQ((*parts)[i], i);
  EXPECT_GE(*layers, 4u);
  EXPECT_LE(*layers, 5u);
}

uint64_t WallMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

TEST_P(KindsTest, WindowForgetsOldSlices) {
  // 6 slices of 400 ms: an item stays visible for at least 2000 ms and at
  // most 2400 ms. Slices are numbered by wall-clock time, so the test records
  // which slices its adds and checks can fall in and asserts only what those
  // ranges make certain; the sleeps leave 200+ ms of margin either way.
  constexpr uint64_t kSlice = 400, kSlices = 6;
  auto f = Make("w", {.capacity = 3000,
                      .error_rate = 0.01,
                      .kind = FilterKind::kWindow,
                      .window_millis = kSlice * kSlices,
                      .slices = kSlices});
  ASSERT_NE(f, nullptr);
  struct Batch {
    std::vector<std::string> items;
    uint64_t first_slice, last_slice;
  };
  auto add = [&](const std::string& prefix) {
    Batch b{Items(prefix, 500), WallMillis() / kSlice, 0};
    std::vector<uint8_t> added;
    EXPECT_TRUE(f->AddMany(Views(b.items), &added).ok());
    // A few may be false positives of what is already there: "not new".
    EXPECT_GE(std::count(added.begin(), added.end(), 1), 490);
    b.last_slice = WallMillis() / kSlice;
    return b;
  };
  int certain = 0;
  auto expect = [&](const Batch& b, const char* label) {
    const uint64_t before = WallMillis() / kSlice;
    const int present = CountPresent(*f, b.items);
    const uint64_t after = WallMillis() / kSlice;
    if (b.first_slice + kSlices > after) {  // live in every slice the check may see
      EXPECT_EQ(present, 500) << label << " must still be in the window";
      ++certain;
    } else if (b.last_slice + kSlices <= before) {  // gone from every slice it may see
      EXPECT_LT(present, 25) << label << " must have left the window";
      ++certain;
    }
  };
  const Batch first = add("first-");
  std::vector<uint8_t> again;
  ASSERT_TRUE(f->AddMany(Views(first.items), &again).ok());
  EXPECT_EQ(std::count(again.begin(), again.end(), 1), 0) << "seen within the window";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const Batch second = add("second-");
  expect(first, "first (at 1.0 s)");
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  expect(first, "first (at 2.6 s)");
  expect(second, "second (at 2.6 s)");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  expect(second, "second (at 3.6 s)");
  EXPECT_GE(certain, 3) << "the machine was too slow for the timings to decide anything";
  auto info = f->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->items_added, 0u) << "no live slice holds anything";
}

TEST_P(KindsTest, TtlRemovesTheWholeFilter) {
  auto f = Make(
      "t", {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling, .ttl_seconds = 1});
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->AddMany(Views(Items("x", 300))).ok());  // grows layers, which expire too
  EXPECT_TRUE(store_->ReadConfig("t").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  EXPECT_EQ(store_->ReadConfig("t").status().code(), StatusCode::kNotFound);
  auto names = store_->List();
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(std::find(names->begin(), names->end(), "t") == names->end());
  // The name is free again, and the new filter starts empty.
  auto again = Make("t", {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling});
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(CountPresent(*again, Items("x", 300)), 0);
}

TEST_P(KindsTest, RebuildSwapsAtomicallyUnderReaders) {
  auto f = Make("r", {.capacity = 2000, .error_rate = 0.01});
  ASSERT_NE(f, nullptr);
  const auto items = Items("ORD-", 2000);
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, misses{0}, reads{0};
  std::thread reader([&] {
    auto r = BloomFilter::Open(*store_, "r");
    ASSERT_TRUE(r.ok());
    std::vector<uint8_t> present;
    while (!stop) {
      Status s = (*r)->ContainsMany(Views(items), &present);
      if (!s.ok()) {
        ++errors;
        continue;
      }
      for (uint8_t p : present) misses += p == 0;
      ++reads;
    }
  });
  // Rebuild twice, with other parameters each time, while the reader reads.
  for (uint64_t capacity : {5000u, 9000u}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Status s =
        BloomFilter::Rebuild(*store_, "r", {.capacity = capacity, .error_rate = 0.001},
                             [&](BloomFilter& fresh) { return fresh.AddMany(Views(items)); });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  reader.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(misses, 0);
  EXPECT_GT(reads, 0);
  auto reopened = BloomFilter::Open(*store_, "r");
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->config().capacity, 9000u);
  auto names = store_->List();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"r"}) << "the temporary name is gone";
}

TEST_P(KindsTest, InvalidKindParametersAreRejectedBeforeAnythingIsCreated) {
  for (FilterOptions o : std::vector<FilterOptions>{
           {.capacity = 10, .error_rate = 0.1, .kind = FilterKind::kScaling, .expansion = 0.5},
           {.capacity = 10, .error_rate = 0.1, .kind = FilterKind::kWindow},
           {.capacity = 10,
           .error_rate = 0.1,
           .kind = FilterKind::kWindow,
           .window_millis = 5,
           .slices = 1},
           {.capacity = 10, .error_rate = 0.1, .window_millis = 1000, .slices = 2},
       }) {
    EXPECT_EQ(BloomFilter::Create(*store_, "bad", o).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(store_->ReadConfig("bad").status().code(), StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Stores, KindsTest, ::testing::Values("mem", "file", "redis"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace redbloom
