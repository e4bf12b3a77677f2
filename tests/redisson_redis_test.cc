// redbloom and Redisson's RBloomFilter on the same keys of a real
// redis-server, in both directions and with both byte codecs.
//
// Redisson is not packaged in Debian, so RedissonClient below replays what
// a Redisson client (3.6.0 and later) sends, restated from
// org.redisson.RedissonBloomFilter (redisson_replay.h): the key layout (the
// bitmap at NAME, the config hash at suffixName(NAME, "config")), tryInit's
// script, the add and contains scripts with their argument layout ([size,
// hashIterations, k or object count, indexes...], every number as its
// decimal string), count() and delete(). Its indexes come from a
// transcription of Redisson's loop over HighwayHash-128 (which
// redisson_test checks against Redisson's vectors), independent of
// strategy redisson's; its sizes are the ones the vectors give.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/funnel.h"
#include "redbloom/store.h"
#include "redbloom/strategy.h"
#include "redbloom/transfer.h"
#include "redis/redis_keys.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "redis_test_raw.h"
#include "redisson_replay.h"
#include "test_util.h"

namespace redbloom {
namespace {

using testing::AppendRedissonIndexes;
using testing::kRedissonAdd;
using testing::kRedissonContains;
using testing::kRedissonTryInit;
using testing::RawRedis;
using testing::RedisCluster;
using testing::RedisServer;
using testing::SharedRedisTest;

// RawRedis that follows a cluster's MOVED redirects (a single server never
// sends one), so a replayed client reaches whichever master holds its keys.
class RoutedRedis {
 public:
  explicit RoutedRedis(int port) : port_(port) {}

  RawRedis::Reply Run(const std::vector<std::string>& args) {
    for (int hop = 0;; ++hop) {
      RawRedis::Reply r = Node(port_).Run(args);
      const std::string_view text =
          r->type == REDIS_REPLY_ERROR ? std::string_view(r->str, r->len) : "";
      if (!text.starts_with("MOVED ") || hop == 3) return r;
      port_ = std::stoi(std::string(text.substr(text.rfind(':') + 1)));
    }
  }
  long long Int(const std::vector<std::string>& args) {
    RawRedis::Reply r = Run(args);
    EXPECT_EQ(r->type, REDIS_REPLY_INTEGER) << args[0] << ": " << (r->str ? r->str : "");
    return r->integer;
  }
  std::string Str(const std::vector<std::string>& args) {
    RawRedis::Reply r = Run(args);
    if (r->type == REDIS_REPLY_NIL) return "(nil)";
    if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
    return std::string(r->str, r->len);
  }

 private:
  RawRedis& Node(int port) {
    auto& node = nodes_[port];
    if (node == nullptr) node = std::make_unique<RawRedis>(port);
    return *node;
  }

  int port_;
  std::map<int, std::unique_ptr<RawRedis>> nodes_;
};

// A Redisson RBloomFilter<T> handle. Items are given as the bytes its codec
// writes: the UTF-8 of the string (StringCodec, LongCodec) or the array
// itself (ByteArrayCodec).
class RedissonClient {
 public:
  RedissonClient(RoutedRedis& redis, std::string name) : redis_(redis), name_(std::move(name)) {
    config_ = testing::RedissonConfigKey(name_);
  }

  const std::string& config_key() const { return config_; }

  // tryInit(n, p): `p_text` is Double.toString(p), as StringCodec sends it.
  bool TryInit(uint64_t n, const std::string& p_text, uint64_t size, uint32_t iterations) {
    size_ = size;
    iterations_ = iterations;
    return redis_.Int({"EVAL", kRedissonTryInit, "1", config_, std::to_string(size),
                       std::to_string(iterations), std::to_string(n), p_text}) == 1;
  }

  // readConfig(): HGETALL of the config hash, as the first add or contains does.
  bool ReadConfig() {
    const std::string size = redis_.Str({"HGET", config_, "size"});
    const std::string iterations = redis_.Str({"HGET", config_, "hashIterations"});
    if (size == "(nil)" || iterations == "(nil)") return false;  // "not initialized!"
    size_ = std::stoull(size);
    iterations_ = static_cast<uint32_t>(std::stoul(iterations));
    return true;
  }
  // A client that read the config before someone re-created the filter:
  // Redisson keeps size and hashIterations once read.
  void Assume(uint64_t size, uint32_t iterations) {
    size_ = size;
    iterations_ = iterations;
  }

  // add(Collection): the number of objects added; -1 with last_error() set
  // when the script refuses.
  long long Add(const std::vector<std::string>& items) {
    return Eval(kRedissonAdd, std::to_string(iterations_), items);
  }
  // contains(Collection): the number of objects present.
  long long Contains(const std::vector<std::string>& items) {
    return Eval(kRedissonContains, std::to_string(items.size()), items);
  }

  // count(): BITCOUNT, then Math.round(-size / (double) k * Math.log(1 - c / (double) size)).
  long long Count() {
    const double c = static_cast<double>(redis_.Int({"BITCOUNT", name_}));
    const double m = static_cast<double>(size_);
    const double v = -m / iterations_ * std::log(1 - c / m);
    return std::isinf(v) ? INT64_MAX : static_cast<long long>(std::floor(v + 0.5));
  }

  // delete(): both keys.
  void Delete() { redis_.Run({"DEL", name_, config_}); }

  const std::string& last_error() const { return last_error_; }

 private:
  long long Eval(const char* script, const std::string& third,
                 const std::vector<std::string>& items) {
    std::vector<std::string> args = {
        "EVAL", script, "2", config_, name_, std::to_string(size_), std::to_string(iterations_),
        third};
    std::vector<uint64_t> indexes;
    for (const auto& item : items) AppendRedissonIndexes(item, size_, iterations_, &indexes);
    for (uint64_t i : indexes) args.push_back(std::to_string(i));
    auto r = redis_.Run(args);
    if (r->type == REDIS_REPLY_ERROR) {
      last_error_ = std::string(r->str, r->len);
      return -1;
    }
    EXPECT_EQ(r->type, REDIS_REPLY_INTEGER);
    return r->integer;
  }

  RoutedRedis& redis_;
  std::string name_;
  std::string config_;
  uint64_t size_ = 0;
  uint32_t iterations_ = 0;
  std::string last_error_;
};

std::vector<std::string> Items(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// Byte strings for ByteArrayCodec: every byte value, NUL included.
std::vector<std::string> ByteItems(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string s = prefix;
    s.push_back(static_cast<char>(i & 0xff));
    s.push_back('\0');
    s.push_back(static_cast<char>(0xff - (i * 7 & 0xff)));
    s += std::to_string(i);
    out.push_back(s);
  }
  return out;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// Every test on one redis-server and on a Redis Cluster (3 masters, 3
// replicas), each started on first use and flushed before every test, with
// both byte codecs.
class RedissonRedisTest : public ::testing::TestWithParam<std::tuple<std::string, Encoding>> {
 protected:
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    std::string url;
    int port = 0;
    if (std::get<0>(GetParam()) == "cluster") {
      if (cluster_ == nullptr) cluster_ = testing::Started<RedisCluster>().release();
      cluster_->FlushAll();
      url = cluster_->url();
      port = cluster_->node(0).port();
    } else {
      if (server_ == nullptr) server_ = testing::Started<RedisServer>().release();
      RawRedis(server_->port()).Run({"FLUSHALL"});
      url = server_->url();
      port = server_->port();
    }
    raw_ = std::make_unique<RoutedRedis>(port);
    auto store = Store::Open(url);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  Encoding codec() const { return std::get<1>(GetParam()); }
  std::vector<std::string> Make(const std::string& prefix, int n) const {
    return codec() == Encoding::kBytes ? ByteItems(prefix, n) : Items(prefix, n);
  }
  FilterOptions Options(uint64_t n, double p) const {
    return {.capacity = n, .error_rate = p, .strategy = Strategy::kRedisson, .encoding = codec()};
  }

  // Every item present through redbloom.
  void ExpectAllPresent(BloomFilter& f, const std::vector<std::string>& items) {
    std::vector<uint8_t> present;
    ASSERT_TRUE(f.ContainsMany(Views(items), &present).ok());
    for (size_t i = 0; i < items.size(); ++i) EXPECT_EQ(present[i], 1) << "item " << i;
  }

  static inline RedisServer* server_ = nullptr;
  static inline RedisCluster* cluster_ = nullptr;
  std::unique_ptr<RoutedRedis> raw_;
  std::unique_ptr<Store> store_;
};

TEST_P(RedissonRedisTest, RedbloomCreatesAndRedissonUsesItUnchanged) {
  auto f = BloomFilter::Create(*store_, "orders", Options(1000, 0.01));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  // The config hash is exactly tryInit's (tests/data/redisson/params.jsonl).
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:config", "size"}), "9585");
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:config", "hashIterations"}), "7");
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:config", "expectedInsertions"}), "1000");
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:config", "falseProbability"}), "0.01");
  EXPECT_EQ(raw_->Int({"HLEN", "{orders}:config"}), 4);

  RedissonClient redisson(*raw_, "orders");
  EXPECT_FALSE(redisson.TryInit(1000, "0.01", 9585, 7));  // it exists: Redisson keeps it
  ASSERT_TRUE(redisson.ReadConfig());

  // redbloom adds; Redisson finds every item, and re-adding them adds nothing.
  const auto ours = Make("ORD-", 300);
  ASSERT_TRUE((*f)->AddMany(Views(ours)).ok());
  EXPECT_EQ(redisson.Contains(ours), 300) << redisson.last_error();
  EXPECT_EQ(redisson.Add(ours), 0) << redisson.last_error();

  // Redisson adds; redbloom finds every item. Redisson's "added" count is
  // exactly the items redbloom saw as absent just before.
  const auto theirs = Make("RDS-", 300);
  std::vector<uint8_t> before;
  ASSERT_TRUE((*f)->ContainsMany(Views(theirs), &before).ok());
  long long absent = 0;
  for (uint8_t b : before) absent += b == 0 ? 1 : 0;
  EXPECT_GT(absent, 290);
  EXPECT_EQ(redisson.Add(theirs), absent) << redisson.last_error();
  ExpectAllPresent(**f, theirs);
  EXPECT_EQ(redisson.Contains(theirs), 300);

  // info's approximate_items is Redisson's count().
  auto info = (*f)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(static_cast<long long>(info->approximate_items), redisson.Count());
  EXPECT_GT(info->approximate_items, 550u);
}

TEST_P(RedissonRedisTest, RedissonCreatesAndRedbloomAttachesWithItsParameters) {
  RedissonClient redisson(*raw_, "seen");
  ASSERT_TRUE(redisson.TryInit(100, "0.03", 729, 5));
  const auto theirs = Make("RDS-", 60);
  ASSERT_EQ(redisson.Add(theirs), 60) << redisson.last_error();
  const std::string bits_before = raw_->Str({"GET", "seen"});

  // No capacity or error rate: they come from the config hash.
  auto f =
      BloomFilter::Attach(*store_, "seen", {.strategy = Strategy::kRedisson, .encoding = codec()});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->config().capacity, 100u);
  EXPECT_EQ((*f)->config().error_rate, 0.03);
  EXPECT_EQ((*f)->config().geometry.bits, 729u);
  EXPECT_EQ((*f)->config().geometry.hashes, 5u);
  // Not a bit changed (the bitmap is only zero-extended to its full size).
  std::string bits_after = raw_->Str({"GET", "seen"});
  ASSERT_EQ(bits_after.size(), (729u + 7) / 8);
  EXPECT_EQ(bits_after.substr(0, bits_before.size()), bits_before);
  EXPECT_EQ(bits_after.find_first_not_of('\0', bits_before.size()), std::string::npos);

  ExpectAllPresent(**f, theirs);
  const auto ours = Make("ORD-", 30);
  ASSERT_TRUE((*f)->AddMany(Views(ours)).ok());
  EXPECT_EQ(redisson.Contains(ours), 30) << redisson.last_error();
  auto info = (*f)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(static_cast<long long>(info->approximate_items), redisson.Count());

  // Attaching again is fine; other explicit parameters are a conflict.
  EXPECT_TRUE(BloomFilter::Attach(*store_, "seen", Options(100, 0.03)).ok());
  auto other = BloomFilter::Attach(*store_, "seen", Options(100, 0.01));
  EXPECT_EQ(other.status().code(), StatusCode::kConflict) << other.status().ToString();
}

TEST_P(RedissonRedisTest, AttachToAnInitializedFilterWithoutBitsAndWithExplicitParameters) {
  RedissonClient redisson(*raw_, "fresh");
  ASSERT_TRUE(redisson.TryInit(1000, "0.01", 9585, 7));  // tryInit writes no bitmap
  // Explicit parameters that do not match the config hash: refused, nothing written.
  auto wrong = BloomFilter::Attach(*store_, "fresh", Options(1000, 0.02));
  EXPECT_EQ(wrong.status().code(), StatusCode::kConflict) << wrong.status().ToString();
  EXPECT_NE(wrong.status().message().find("size=9585"), std::string::npos);
  EXPECT_EQ(raw_->Int({"EXISTS", "fresh", "{fresh}:meta"}), 0);

  auto f = BloomFilter::Attach(*store_, "fresh", Options(1000, 0.01));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto ours = Make("ORD-", 50);
  ASSERT_TRUE((*f)->AddMany(Views(ours)).ok());
  EXPECT_EQ(redisson.Contains(ours), 50) << redisson.last_error();
}

TEST_P(RedissonRedisTest, BitmapsAreByteForByteTheSame) {
  // The same items through either side give the same bytes.
  const auto items = Make("X-", 500);
  auto f = BloomFilter::Create(*store_, "ours", Options(1000, 0.01));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->AddMany(Views(items)).ok());
  RedissonClient redisson(*raw_, "theirs");
  ASSERT_TRUE(redisson.TryInit(1000, "0.01", 9585, 7));
  ASSERT_GT(redisson.Add(items), 490);
  std::string theirs = raw_->Str({"GET", "theirs"});
  const std::string ours = raw_->Str({"GET", "ours"});
  ASSERT_LE(theirs.size(), ours.size());  // Redisson's SETBIT grows the string as needed
  theirs.resize(ours.size(), '\0');
  EXPECT_EQ(theirs, ours);
}

TEST_P(RedissonRedisTest, ARedissonReinitWithOtherParametersIsAConflict) {
  auto f = BloomFilter::Create(*store_, "orders", Options(1000, 0.01));
  ASSERT_TRUE(f.ok());
  const auto items = Make("ORD-", 40);
  ASSERT_TRUE((*f)->AddMany(Views(items)).ok());

  // Redisson deletes the filter and re-creates it smaller, then adds.
  RedissonClient redisson(*raw_, "orders");
  redisson.Delete();
  ASSERT_TRUE(redisson.TryInit(100, "0.01", 958, 7));
  ASSERT_EQ(redisson.Add(Make("NEW-", 5)), 5) << redisson.last_error();
  const std::string bits = raw_->Str({"GET", "orders"});

  std::vector<uint8_t> out;
  Status check = (*f)->ContainsMany(Views(items), &out);
  EXPECT_EQ(check.code(), StatusCode::kConflict) << check.ToString();
  EXPECT_NE(check.message().find("{orders}:config"), std::string::npos) << check.ToString();
  EXPECT_TRUE(out.empty());  // never "absent"
  Status add = (*f)->AddMany(Views(Make("MORE-", 20)));
  EXPECT_EQ(add.code(), StatusCode::kConflict) << add.ToString();
  Status small_add = (*f)->Add("ONE");
  EXPECT_EQ(small_add.code(), StatusCode::kConflict) << small_add.ToString();
  EXPECT_EQ((*f)->Info().status().code(), StatusCode::kConflict);
  const std::string ones((*f)->config().data_bytes(), '\xff');
  EXPECT_EQ((*f)->OrBitmap(ones, 0).code(), StatusCode::kConflict);  // load, import, merge
  EXPECT_EQ((*f)->Clear().code(), StatusCode::kConflict);
  EXPECT_EQ(raw_->Str({"GET", "orders"}), bits);  // redbloom wrote nothing
  // A new handle is refused at open, naming what the hash holds now.
  auto reopened = BloomFilter::Open(*store_, "orders");
  EXPECT_EQ(reopened.status().code(), StatusCode::kConflict);
  EXPECT_NE(reopened.status().message().find("size=958"), std::string::npos)
      << reopened.status().ToString();

  // Redisson's own scripts refuse redbloom's parameters the same way.
  RedissonClient stale(*raw_, "orders");
  stale.Assume(9585, 7);
  EXPECT_EQ(stale.Contains(items), -1);
  EXPECT_NE(stale.last_error().find("Bloom filter config has been changed"), std::string::npos);

  // A drop or a rebuild would destroy the filter Java made (an audit: both
  // did, and Java's clients then failed every call): refused, nothing
  // touched, the rebuild's temporary filter gone.
  const Status dropped = BloomFilter::Drop(*store_, "orders");
  EXPECT_EQ(dropped.code(), StatusCode::kConflict) << dropped.ToString();
  EXPECT_NE(dropped.message().find("delete '{orders}:meta'"), std::string::npos)
      << dropped.ToString();
  const Status rebuilt =
      BloomFilter::Rebuild(*store_, "orders", Options(1000, 0.01),
                           [&](BloomFilter& b) { return b.AddMany(Views(items)); });
  EXPECT_EQ(rebuilt.code(), StatusCode::kConflict) << rebuilt.ToString();
  EXPECT_EQ(store_->ReadConfig(TemporaryName("orders")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(raw_->Str({"GET", "orders"}), bits);
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:config", "size"}), "958");
  EXPECT_EQ(raw_->Int({"EXISTS", "{orders}:meta"}), 1);
  // What the README says to do: forget redbloom's record, attach again.
  raw_->Run({"DEL", "{orders}:meta"});
  auto theirs = BloomFilter::Attach(*store_, "orders",
                                    {.strategy = Strategy::kRedisson, .encoding = codec()});
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  ExpectAllPresent(**theirs, Make("NEW-", 5));
}

// Redisson's delete() and a tryInit with the same parameters leave a config
// hash that matches, over a bitmap redbloom did not size (tryInit makes none,
// adds grow one): the filter is the Java side's new one. A drop deleted it
// and a rebuild overwrote it (an audit); both are refused, nothing touched.
TEST_P(RedissonRedisTest, ARedissonReinitWithTheSameParametersIsNeitherDroppedNorReplaced) {
  auto f = BloomFilter::Create(*store_, "same", Options(1000, 0.01));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->AddMany(Views(Make("OLD-", 40))).ok());
  RedissonClient redisson(*raw_, "same");
  redisson.Delete();
  ASSERT_TRUE(redisson.TryInit(1000, "0.01", 9585, 7));
  ASSERT_EQ(redisson.Add(Make("NEW-", 5)), 5) << redisson.last_error();
  const std::string bits = raw_->Str({"GET", "same"});
  // Reads say what may have happened (they blamed eviction alone).
  const Status check = (*f)->Contains(Make("OLD-", 1)[0]).status();
  EXPECT_EQ(check.code(), StatusCode::kDataLoss) << check.ToString();
  EXPECT_NE(check.message().find("tryInit()"), std::string::npos) << check.ToString();

  const Status dropped = BloomFilter::Drop(*store_, "same");
  EXPECT_EQ(dropped.code(), StatusCode::kConflict) << dropped.ToString();
  EXPECT_NE(dropped.message().find("delete '{same}:meta'"), std::string::npos)
      << dropped.ToString();
  const Status rebuilt = BloomFilter::Rebuild(*store_, "same", Options(1000, 0.01),
                                              [&](BloomFilter& b) { return b.Add("R"); });
  EXPECT_EQ(rebuilt.code(), StatusCode::kConflict) << rebuilt.ToString();
  EXPECT_EQ(raw_->Str({"GET", "same"}), bits);
  EXPECT_EQ(raw_->Str({"HGET", "{same}:config", "size"}), "9585");
  EXPECT_EQ(redisson.Contains(Make("NEW-", 5)), 5);
  raw_->Run({"DEL", "{same}:meta"});
  auto theirs =
      BloomFilter::Attach(*store_, "same", {.strategy = Strategy::kRedisson, .encoding = codec()});
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  ExpectAllPresent(**theirs, Make("NEW-", 5));
  // Once attached (the bitmap sized again), a drop takes it as before.
  EXPECT_TRUE(BloomFilter::Drop(*store_, "same").ok());
  EXPECT_EQ(raw_->Int({"EXISTS", "same", "{same}:config", "{same}:meta"}), 0);
}

// A bitmap that is gone (evicted, deleted) or waits at the add's scratch
// key (a failed commit) is no Java re-create: the filter stays droppable and
// rebuildable, the usual ways out of data_loss. The first version of the
// re-create check refused both (the review).
TEST_P(RedissonRedisTest, ARedissonFilterWithoutItsBitmapIsStillDroppedAndRebuilt) {
  for (const std::string name : {"evicted", "stashed"}) {
    auto f = BloomFilter::Create(*store_, name, Options(1000, 0.01));
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->AddMany(Views(Make("A-", 10))).ok());
    const auto keys = internal::KeysFor(name, internal::KeyMode::kPlain);
    if (name == "evicted") {
      raw_->Run({"DEL", name});
      const Status rebuilt =
          BloomFilter::Rebuild(*store_, name, Options(1000, 0.01),
                               [&](BloomFilter& b) { return b.AddMany(Views(Make("B-", 5))); });
      ASSERT_TRUE(rebuilt.ok()) << rebuilt.ToString();
      auto again = BloomFilter::Open(*store_, name);
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      ExpectAllPresent(**again, Make("B-", 5));
      raw_->Run({"DEL", name});
    } else {
      raw_->Run({"RENAME", name, keys.scratch});
    }
    const Status dropped = BloomFilter::Drop(*store_, name);
    EXPECT_TRUE(dropped.ok()) << name << ": " << dropped.ToString();
    EXPECT_EQ(raw_->Int({"EXISTS", name, keys.meta, keys.scratch, "{" + name + "}:config"}), 0)
        << name;
  }
}

// A Redisson filter Java made and redbloom has not adopted is not found,
// and says how to adopt it, before and after Java's first add (a check said
// "does not exist" and no more; after an add, to attach without the
// strategy, which would read Java's items with another hashing).
TEST_P(RedissonRedisTest, OpeningARedissonFilterJavaMadeNamesAttachWithItsStrategy) {
  RedissonClient redisson(*raw_, "jm");
  ASSERT_TRUE(redisson.TryInit(1000, "0.01", 9585, 7));
  for (int round = 0; round < 2; ++round) {
    const Status opened = BloomFilter::Open(*store_, "jm").status();
    EXPECT_EQ(opened.code(), StatusCode::kNotFound) << opened.ToString();
    EXPECT_NE(opened.message().find("attach --strategy redisson"), std::string::npos)
        << round << ": " << opened.ToString();
    if (round == 0) {
      ASSERT_EQ(redisson.Add(Make("J-", 3)), 3) << redisson.last_error();
    }
  }
}

// A rebuild into the redisson strategy writes NAME's config hash: one there
// that the old filter did not own (a Redisson client's) was overwritten.
TEST_P(RedissonRedisTest, ARebuildIntoRedissonLeavesAConfigHashItDidNotOwn) {
  ASSERT_TRUE(
      BloomFilter::Create(
          *store_, "rw",
          {.capacity = 1000, .error_rate = 0.01, .strategy = Strategy::kSeed, .encoding = codec()})
          .ok());
  RedissonClient redisson(*raw_, "rw");
  ASSERT_TRUE(redisson.TryInit(5000, "0.01", 47925, 7));
  const Status rebuilt = BloomFilter::Rebuild(*store_, "rw", Options(1000, 0.01),
                                              [&](BloomFilter& b) { return b.Add("R"); });
  EXPECT_EQ(rebuilt.code(), StatusCode::kConflict) << rebuilt.ToString();
  EXPECT_NE(rebuilt.message().find("{rw}:config"), std::string::npos) << rebuilt.ToString();
  EXPECT_EQ(raw_->Str({"HGET", "{rw}:config", "size"}), "47925");
  EXPECT_EQ(raw_->Str({"HGET", "{rw}:config", "expectedInsertions"}), "5000");
  auto still = BloomFilter::Open(*store_, "rw");
  ASSERT_TRUE(still.ok()) << still.status().ToString();
  EXPECT_EQ((*still)->config().strategy, Strategy::kSeed);
  EXPECT_EQ(store_->ReadConfig(TemporaryName("rw")).status().code(), StatusCode::kNotFound);

  // A config key that another program made a list: a drop says so (it said
  // "now holds size=not a hash hashIterations=").
  ASSERT_TRUE(BloomFilter::Create(*store_, "lc", Options(1000, 0.01)).ok());
  raw_->Run({"DEL", "{lc}:config"});
  raw_->Run({"RPUSH", "{lc}:config", "x"});
  const Status dropped = BloomFilter::Drop(*store_, "lc");
  EXPECT_EQ(dropped.code(), StatusCode::kConflict) << dropped.ToString();
  EXPECT_NE(dropped.message().find("is no hash now"), std::string::npos) << dropped.ToString();
  EXPECT_EQ(raw_->Int({"EXISTS", "{lc}:config", "lc"}), 2);
}

TEST_P(RedissonRedisTest, ADeletedConfigHashIsAConflictToo) {
  auto f = BloomFilter::Create(*store_, "gone", Options(1000, 0.01));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Add("A").ok());
  raw_->Run({"DEL", "{gone}:config"});
  EXPECT_EQ((*f)->Contains("A").status().code(), StatusCode::kConflict);
  EXPECT_EQ((*f)->Add("B").code(), StatusCode::kConflict);
  // A rebuild does not bring back a filter Java deleted; a drop clears
  // what is left of it.
  const Status rebuilt = BloomFilter::Rebuild(*store_, "gone", Options(1000, 0.01),
                                              [](BloomFilter& b) { return b.Add("C"); });
  EXPECT_EQ(rebuilt.code(), StatusCode::kConflict) << rebuilt.ToString();
  EXPECT_EQ(raw_->Int({"EXISTS", "{gone}:config"}), 0);
  EXPECT_TRUE(BloomFilter::Drop(*store_, "gone").ok());
  for (const char* key : {"gone", "{gone}:meta"}) EXPECT_EQ(raw_->Int({"EXISTS", key}), 0) << key;
}

TEST_P(RedissonRedisTest, DropAndTtlCoverTheConfigHash) {
  auto options = Options(1000, 0.01);
  options.ttl_seconds = 3600;
  auto f = BloomFilter::Create(*store_, "ttl", options);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (const char* key : {"ttl", "{ttl}:meta", "{ttl}:config"}) {
    const long long pttl = raw_->Int({"PTTL", key});
    EXPECT_GT(pttl, 3500 * 1000) << key;
    EXPECT_LE(pttl, 3600 * 1000) << key;
  }
  ASSERT_TRUE(BloomFilter::Drop(*store_, "ttl").ok());
  EXPECT_EQ(raw_->Int({"EXISTS", "ttl", "{ttl}:meta", "{ttl}:config"}), 0);

  // Dropping a filter of another strategy leaves a hash of that name alone.
  raw_->Run({"HSET", "{plain}:config", "size", "1"});
  ASSERT_TRUE(BloomFilter::Create(*store_, "plain",
                                  {.capacity = 10, .error_rate = 0.1, .strategy = Strategy::kSeed})
                  .ok());
  ASSERT_TRUE(BloomFilter::Drop(*store_, "plain").ok());
  EXPECT_EQ(raw_->Int({"EXISTS", "{plain}:config"}), 1);
}

TEST_P(RedissonRedisTest, CreateRefusesWhatRedissonRefusesOrCouldNotRead) {
  auto too_big = BloomFilter::Create(*store_, "big", Options(1000000000, 0.01));
  EXPECT_EQ(too_big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(too_big.status().message(),
            "Bloom filter size can't be greater than 4294967294. But calculated size is "
            "9585058377");
  auto p_above_one = BloomFilter::Create(*store_, "p", Options(10, 1.5));
  EXPECT_EQ(p_above_one.status().message(),
            "Bloom filter false probability can't be greater than 1");
  auto counting = Options(1000, 0.01);
  counting.kind = FilterKind::kCounting;
  auto c = BloomFilter::Create(*store_, "counting", counting);
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
  auto sharded = Options(1000, 0.01);
  sharded.shards = 2;  // Redisson reads one bitmap
  auto sh = BloomFilter::Create(*store_, "sharded", sharded);
  EXPECT_EQ(sh.status().code(), StatusCode::kInvalidArgument) << sh.status().ToString();
  // Redisson would keep the config of "a{b" at "a{b:config", another slot.
  auto braces = BloomFilter::Create(*store_, "a{b", Options(1000, 0.01));
  EXPECT_EQ(braces.status().code(), StatusCode::kInvalidArgument) << braces.status().ToString();
  // A hash tag is fine: bitmap "{t}x", config "{t}x:config".
  EXPECT_TRUE(BloomFilter::Create(*store_, "{t}x", Options(1000, 0.01)).ok());
  EXPECT_EQ(raw_->Str({"HGET", "{t}x:config", "size"}), "9585");
  EXPECT_EQ(raw_->Int({"EXISTS", "{t}x:meta"}), 1);

  // A filter Redisson created (tryInit only, no bits yet) is not created over.
  RedissonClient redisson(*raw_, "theirs");
  ASSERT_TRUE(redisson.TryInit(1000, "0.01", 9585, 7));
  auto over = BloomFilter::Create(*store_, "theirs", Options(1000, 0.01));
  EXPECT_EQ(over.status().code(), StatusCode::kConflict);
  EXPECT_NE(over.status().message().find("attach"), std::string::npos);
  EXPECT_EQ(raw_->Int({"EXISTS", "theirs", "{theirs}:meta"}), 0);
}

// A Redisson filter's bitmap is at NAME, where every strategy keeps its
// bitmap. An attach that forgot --strategy redisson took it as a seed or
// guava64 filter of the same size (seed's m for 1e6 at 1% is Redisson's, to
// the bit): every item Java had added then read absent, and what redbloom
// added was noise to Java (an audit). A create took a name Java had only
// initialised. Both are refused now, naming the strategy to use.
TEST_P(RedissonRedisTest, AnotherStrategyNeitherCreatesNorAttachesOverARedissonFilter) {
  RedissonClient redisson(*raw_, "orders");
  ASSERT_TRUE(redisson.TryInit(1000, "0.01", 9585, 7));
  const auto items = Make("ORD-", 20);
  ASSERT_EQ(redisson.Add(items), 20) << redisson.last_error();
  const std::string bits = raw_->Str({"GET", "orders"});
  RedissonClient fresh(*raw_, "initialised");
  ASSERT_TRUE(fresh.TryInit(1000, "0.01", 9585, 7));
  for (const Strategy strategy : {Strategy::kSeed, Strategy::kGuava64, Strategy::kBlock}) {
    const FilterOptions o = {.capacity = 1000, .error_rate = 0.01, .strategy = strategy};
    for (const char* name : {"orders", "initialised"}) {
      auto attached = BloomFilter::Attach(*store_, name, o);
      EXPECT_EQ(attached.status().code(), StatusCode::kConflict) << name;
      EXPECT_NE(attached.status().message().find("--strategy redisson"), std::string::npos)
          << attached.status().ToString();
      auto created = BloomFilter::Create(*store_, name, o);
      EXPECT_EQ(created.status().code(), StatusCode::kConflict) << name;
      EXPECT_NE(created.status().message().find("holds size=9585 hashIterations=7"),
                std::string::npos)
          << created.status().ToString();
    }
  }
  for (const char* key : {"{orders}:meta", "{initialised}:meta", "initialised"}) {
    EXPECT_EQ(raw_->Int({"EXISTS", key}), 0) << key;
  }
  EXPECT_EQ(raw_->Str({"GET", "orders"}), bits);
  // With the right strategy, Java's items are there.
  auto f = BloomFilter::Attach(*store_, "orders", Options(1000, 0.01));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ExpectAllPresent(**f, items);

  // A filter redbloom already keeps is the create script's to compare: a
  // create repeated alike still succeeds (a service's start-up create) when
  // a config hash appeared beside it since (a review: it answered conflict).
  const FilterOptions guava = {
      .capacity = 1000, .error_rate = 0.01, .strategy = Strategy::kGuava64};
  ASSERT_TRUE(BloomFilter::Create(*store_, "mine", guava).ok());
  raw_->Run({"HSET", "{mine}:config", "size", "9585", "hashIterations", "7"});
  auto again = BloomFilter::Create(*store_, "mine", guava);
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

// A plain filter may be named "{zz}:config", the key a redisson filter
// "zz" keeps its config hash at: a create of that redisson filter is
// refused without calling that bitmap Redisson's hash or saying to delete
// it (which would destroy the other filter).
TEST_P(RedissonRedisTest, AConfigKeyHeldByAnotherFiltersBitmapIsNotCalledRedissons) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "{zz}:config",
                                  {.capacity = 10, .error_rate = 0.01, .strategy = Strategy::kSeed})
                  .ok());
  auto created = BloomFilter::Create(*store_, "zz", Options(10, 0.01));
  EXPECT_EQ(created.status().code(), StatusCode::kConflict) << created.status().ToString();
  EXPECT_NE(created.status().message().find("where a string is"), std::string::npos)
      << created.status().ToString();
  EXPECT_EQ(created.status().message().find("delete it"), std::string::npos)
      << created.status().ToString();
  EXPECT_TRUE(BloomFilter::Open(*store_, "{zz}:config").ok());
}

// A redisson filter whose metadata cannot be read (corrupt) can still be
// dropped: the drop compared the config hash with the metadata's garbage
// and refused it as "another filter its Java side made" (a review).
TEST_P(RedissonRedisTest, ARedissonFilterWithCorruptMetadataCanBeDropped) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "z", Options(1000, 0.01)).ok());
  raw_->Run({"HSET", "{z}:meta", "bits", "garbage"});
  EXPECT_NE(BloomFilter::Open(*store_, "z").status().code(), StatusCode::kOk);
  const Status dropped = BloomFilter::Drop(*store_, "z");
  EXPECT_TRUE(dropped.ok()) << dropped.ToString();
  for (const char* key : {"z", "{z}:meta", "{z}:config"}) {
    EXPECT_EQ(raw_->Int({"EXISTS", key}), 0) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, RedissonRedisTest,
                         ::testing::Combine(::testing::Values("redis", "cluster"),
                                            ::testing::Values(Encoding::kUtf8, Encoding::kBytes)),
                         [](const auto& p) {
                           return std::get<0>(p.param) + "_" +
                                  std::string(EncodingName(std::get<1>(p.param)));
                         });

// ---- The CLI on Redisson filters: exit codes, bulk commands -----------------

class RedissonCliTest : public SharedRedisTest {
 protected:
  void SetUp() override {
    SharedRedisTest::SetUp();
    routed_ = std::make_unique<RoutedRedis>(server_->port());
  }

  testing::CommandResult Run(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", server_->url()});
    return testing::RunCommand(args, input);
  }

  std::unique_ptr<RoutedRedis> routed_;
};

TEST_F(RedissonCliTest, AttachTakesTheConfigHashOrFailsClearly) {
  RedissonClient redisson(*routed_, "orders");
  // No config hash: not found (exit 4).
  auto missing = Run({"attach", "orders", "--strategy", "redisson"});
  EXPECT_EQ(missing.exit_code, 4) << missing.err;
  EXPECT_NE(missing.err.find("{orders}:config"), std::string::npos) << missing.err;
  // A malformed one: exit 3, nothing written.
  raw_->Run({"HSET", "{orders}:config", "size", "95x85", "hashIterations", "7",
             "expectedInsertions", "1000", "falseProbability", "0.01"});
  auto malformed = Run({"attach", "orders", "--strategy", "redisson"});
  EXPECT_EQ(malformed.exit_code, 3) << malformed.err;
  EXPECT_NE(malformed.err.find("size '95x85'"), std::string::npos) << malformed.err;
  raw_->Run({"DEL", "{orders}:config"});
  raw_->Run({"SET", "{orders}:config", "not a hash"});
  auto not_hash = Run({"attach", "orders", "--strategy", "redisson"});
  EXPECT_EQ(not_hash.exit_code, 3) << not_hash.err;
  EXPECT_EQ(raw_->Int({"EXISTS", "orders", "{orders}:meta"}), 0);
  raw_->Run({"DEL", "{orders}:config"});
  // Redisson names its keys in plain UTF-8, never Java-serialized.
  auto jdk = testing::RunCommand({REDBLOOM_CLI_PATH, "--store", server_->url() + "?keys=jdk",
                                  "create", "orders", "--strategy", "redisson", "--capacity",
                                  "1000", "--error", "0.01"});
  EXPECT_EQ(jdk.exit_code, 2) << jdk.err;
  EXPECT_NE(jdk.err.find("keys=jdk"), std::string::npos) << jdk.err;
  // Half the parameters: a usage error.
  EXPECT_EQ(Run({"attach", "orders", "--strategy", "redisson", "--capacity", "1000"}).exit_code, 2);
  // Other strategies record nothing: they need both.
  EXPECT_EQ(Run({"attach", "orders", "--strategy", "seed"}).exit_code, 2);

  ASSERT_TRUE(redisson.TryInit(1000, "0.01", 9585, 7));
  ASSERT_EQ(redisson.Add({"ORD-1", "ORD-2"}), 2);
  auto ok = Run({"attach", "orders", "--strategy", "redisson"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("capacity=1000 error_rate=0.01 bits=9585 hashes=7"), std::string::npos)
      << ok.err;
  auto check = Run({"check", "orders", "ORD-1", "ORD-2", "ORD-3"});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_EQ(testing::Lines(check.out),
            (std::vector<std::string>{"1\tORD-1", "1\tORD-2", "0\tORD-3"}));
  auto info = Run({"info", "orders", "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(nlohmann::json::parse(info.out)["approximate_items"], redisson.Count());
  EXPECT_EQ(nlohmann::json::parse(info.out)["strategy"], "redisson");
}

TEST_F(RedissonCliTest, BulkCommandsKeepTheFilterRedissonReadable) {
  testing::TempDir dir;
  std::string lines;
  std::vector<std::string> loaded;
  for (int i = 0; i < 2000; ++i) {
    loaded.push_back("L-" + std::to_string(i));
    lines += loaded.back() + "\n";
  }
  ASSERT_EQ(Run({"create", "a", "--strategy", "redisson", "--capacity", "10000", "--error", "0.01"})
                .exit_code,
            0);
  auto load = Run({"load", "a", "--file", "-"}, lines);
  ASSERT_EQ(load.exit_code, 0) << load.err;
  RedissonClient a(*routed_, "a");
  ASSERT_TRUE(a.ReadConfig());
  EXPECT_EQ(a.Contains(loaded), 2000) << a.last_error();

  // dedup prints the new lines and adds them.
  auto dedup = Run({"dedup", "a"}, "L-1\nD-1\nL-2\nD-2\n");
  ASSERT_EQ(dedup.exit_code, 0) << dedup.err;
  EXPECT_EQ(testing::Lines(dedup.out), (std::vector<std::string>{"D-1", "D-2"}));
  EXPECT_EQ(a.Contains({"D-1", "D-2"}), 2);

  // export / import as a redbloom dump: a new Redisson-readable filter.
  const std::string dump = dir.path() + "/a.dump";
  ASSERT_EQ(Run({"export", "a", "--format", "redbloom", "--file", dump}).exit_code, 0);
  auto imported = Run({"import", "b", "--format", "redbloom", "--file", dump});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(raw_->Str({"HGET", "{b}:config", "size"}), raw_->Str({"HGET", "{a}:config", "size"}));
  RedissonClient b(*routed_, "b");
  ASSERT_TRUE(b.ReadConfig());
  EXPECT_EQ(b.Contains(loaded), 2000) << b.last_error();

  // merge into a new filter, with one Redisson wrote.
  RedissonClient r(*routed_, "r");
  ASSERT_TRUE(r.TryInit(10000, "0.01", 95850, 7));
  ASSERT_EQ(r.Add({"R-1", "R-2", "R-3"}), 3);
  ASSERT_EQ(Run({"attach", "r", "--strategy", "redisson"}).exit_code, 0);
  auto merge = Run({"merge", "m", "a", "r"});
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  RedissonClient m(*routed_, "m");
  ASSERT_TRUE(m.ReadConfig());
  EXPECT_EQ(m.Contains(loaded), 2000) << m.last_error();
  EXPECT_EQ(m.Contains({"R-1", "R-2", "R-3", "D-1"}), 4);

  // rebuild with other parameters: the config hash follows the new filter.
  auto rebuild = Run({"rebuild", "a", "--file", "-", "--strategy", "redisson", "--capacity", "5000",
                      "--error", "0.001"},
                     "N-1\nN-2\n");
  ASSERT_EQ(rebuild.exit_code, 0) << rebuild.err;
  EXPECT_EQ(raw_->Str({"HGET", "{a}:config", "expectedInsertions"}), "5000");
  EXPECT_EQ(raw_->Str({"HGET", "{a}:config", "falseProbability"}), "0.001");
  RedissonClient rebuilt(*routed_, "a");
  ASSERT_TRUE(rebuilt.ReadConfig());
  EXPECT_EQ(rebuilt.Contains({"N-1", "N-2"}), 2) << rebuilt.last_error();
  EXPECT_EQ(raw_->Int({"EXISTS", "{a}:config"}), 1);
  // and nothing of the temporary filter is left.
  auto keys = raw_->Run({"KEYS", "*rebuild*"});
  EXPECT_EQ(keys->elements, 0u);

  // drop removes the config hash with the filter.
  ASSERT_EQ(Run({"drop", "m"}).exit_code, 0);
  EXPECT_EQ(raw_->Int({"EXISTS", "m", "{m}:meta", "{m}:config"}), 0);
}

}  // namespace
}  // namespace redbloom
