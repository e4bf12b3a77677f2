// The Redis store against a real redis-server started by the test: every
// library operation, the key layout, and every error a caller can meet.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "redbloom/transfer.h"
#include "redis/connection_source.h"
#include "redis/redis_client.h"
#include "redis/redis_keys.h"
#include "redis/redis_ops.h"
#include "redis/redis_scripts.h"
#include "redis/redis_url.h"
#include "redis_server.h"
#include "redis_test_raw.h"
#include "slow_relay.h"
#include "store_fixture.h"
#include "stores.h"
#include "test_util.h"

namespace redbloom {
namespace {

using testing::ExitCodeOfChild;
using testing::RawRedis;
using testing::RedisServer;
using testing::SharedRedisTest;

std::unique_ptr<Store> MustOpen(const std::string& url) {
  auto s = Store::Open(url);
  EXPECT_TRUE(s.ok()) << url << ": " << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

FilterConfig Config(uint64_t n = 1000, double p = 0.01, Strategy s = Strategy::kGuava64,
                    Encoding e = Encoding::kUtf8) {
  auto c = MakeConfig(FilterOptions{.capacity = n, .error_rate = p, .strategy = s, .encoding = e});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

FilterOptions Options(uint64_t n = 1000, double p = 0.01, Strategy s = Strategy::kGuava64,
                      Encoding e = Encoding::kUtf8) {
  return FilterOptions{.capacity = n, .error_rate = p, .strategy = s, .encoding = e};
}

// How often the server ran `command`, from its INFO commandstats (0 if never).
long CommandCalls(const std::string& commandstats, std::string_view command) {
  const std::string field = "cmdstat_" + std::string(command) + ":calls=";
  const size_t at = commandstats.find(field);
  return at == std::string::npos ? 0L : std::stol(commandstats.substr(at + field.size()));
}

// used_memory from a server's INFO memory.
uint64_t UsedMemory(const std::string& memory) {
  return std::stoull(memory.substr(memory.find("used_memory:") + 12));
}

// Items valid under `e`, distinct for distinct i; `salt` separates members
// from non-members.
std::vector<std::string> Items(Encoding e, size_t count, size_t salt = 0) {
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    const size_t v = salt * 10'000'000 + i;
    switch (e) {
      case Encoding::kInt32:
        out.push_back(std::to_string(static_cast<int32_t>(v * 2654435761u)));
        break;
      case Encoding::kInt64:
        out.push_back(std::to_string(static_cast<int64_t>(v * 0x9E3779B97F4A7C15ull)));
        break;
      default:
        // ASCII, Latin and CJK text, as in the two posts' examples.
        out.push_back((i % 3 == 0   ? "ORD-"
                       : i % 3 == 1 ? "pedido-ção-"
                                    : "订单-") +
                      std::to_string(v));
    }
  }
  return out;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// Part 0 of a filter through the BitStore interface.
Status AddOffsets(BitStore& bits, const uint64_t* offsets, size_t items, uint32_t k, uint8_t* out) {
  PartBatch b{.part = 0, .k = k, .offsets = offsets, .items = items, .out = out};
  return bits.Add(std::span(&b, 1));
}
Status TestOffsets(BitStore& bits, const uint64_t* offsets, size_t items, uint32_t k,
                   uint8_t* out) {
  PartBatch b{.part = 0, .k = k, .offsets = offsets, .items = items, .out = out};
  return bits.Test(std::span(&b, 1));
}

class RedisStoreTest : public SharedRedisTest {
 protected:
  void SetUp() override {
    SharedRedisTest::SetUp();
    store_ = MustOpen(server_->url());
    ASSERT_NE(store_, nullptr);
  }

  // The shared server with the filters' clock standing at `clock`.
  Result<std::unique_ptr<Store>> OnClock(std::shared_ptr<ManualClock> clock) {
    StoreOptions options;
    options.clock = std::move(clock);
    return Store::Open(server_->url(), options);
  }
  static uint64_t WallMillis() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  }
  static constexpr uint64_t kHourMs = 3'600'000;
  static constexpr uint64_t kQuarterMs = kHourMs / 4;  // a slice of Window(kHourMs, 4)
  // A clock time in the middle of a slice of Window(kHourMs, 4).
  static uint64_t HalfPastThisHour() { return WallMillis() / kHourMs * kHourMs + kHourMs / 2; }

  // Plants a Java service's filter `name` (bit 77 of a 10-byte bitmap, and a
  // Redisson config hash for kRedisson), attaches it through `store`, whose
  // clock is behind the server's by more than the TTL asked, and expects the
  // refusal to leave every adopted key as it was: its bits, length and TTL.
  void ExpectAPastAttachLeavesTheKeysAlone(Store& store, const std::string& name,
                                           Strategy strategy) {
    FilterConfig config = Config(1000, 0.01, strategy);
    config.ttl_seconds = 3600;
    raw_->Run({"SETBIT", name, "77", "1"});
    const std::string companion = "{" + name + "}:config";
    if (strategy == Strategy::kRedisson) {
      raw_->Run({"HSET", companion, "size", std::to_string(config.geometry.bits), "hashIterations",
                 std::to_string(config.geometry.hashes), "expectedInsertions", "1000",
                 "falseProbability", "0.01"});
    }
    const Status s = store.Attach(name, config);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << name << ": " << s.ToString();
    EXPECT_EQ(s.reason(), StatusReason::kClockBehind) << name << ": " << s.ToString();
    EXPECT_NE(s.message().find("behind the server's"), std::string::npos) << s.ToString();
    EXPECT_EQ(raw_->Int({"GETBIT", name, "77"}), 1) << name << ": the adopted bits went";
    EXPECT_EQ(raw_->Int({"STRLEN", name}), 10) << name << ": the adopted bitmap was grown";
    EXPECT_EQ(raw_->Int({"PTTL", name}), -1) << name;
    if (strategy == Strategy::kRedisson) {
      EXPECT_EQ(raw_->Int({"EXISTS", companion}), 1) << name << ": the adopted config went";
      EXPECT_EQ(raw_->Int({"PTTL", companion}), -1) << name;
    }
    EXPECT_EQ(store_->ReadConfig(name).status().code(), StatusCode::kNotFound) << name;
  }
  static FilterOptions Window(uint64_t window_millis, uint32_t slices) {
    FilterOptions window = Options(1000, 0.01);
    window.kind = FilterKind::kWindow;
    window.window_millis = window_millis;
    window.slices = slices;
    return window;
  }

  std::unique_ptr<Store> store_;
};

// A client whose clock is behind the server's by more than a filter's TTL
// (or a window slice's life) gave expiries Redis had already passed: the
// keys were deleted as they were made, so a create answered "does not
// exist" and a window's adds data_loss blaming eviction. The scripts compare
// with the server's TIME and refuse, naming the clocks; nothing is written.
TEST_F(RedisStoreTest, AnExpiryAlreadyPastByTheServersClockIsRefusedNamingTheClocks) {
  auto behind = std::make_shared<ManualClock>(WallMillis() - 2 * 3600 * 1000);
  ASSERT_OK_AND_ASSIGN(auto store, OnClock(behind));
  FilterOptions ttl = Options(1000, 0.01);
  ttl.ttl_seconds = 3600;
  auto made = BloomFilter::Create(*store, "skewed-ttl", ttl);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable) << made.status().ToString();
  EXPECT_NE(made.status().message().find("behind the server's"), std::string::npos)
      << made.status().ToString();
  EXPECT_EQ(store_->ReadConfig("skewed-ttl").status().code(), StatusCode::kNotFound);
  // A sharded filter's too (its metadata read as "holds a 1733..., not a
  // hash": data_loss).
  FilterOptions sharded = ttl;
  sharded.shards = 2;
  const Status spread = BloomFilter::Create(*store, "skewed-shards", sharded).status();
  EXPECT_EQ(spread.reason(), StatusReason::kClockBehind) << spread.ToString();
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
  // A window of 1 s slices, 200 s behind: every slice's expiry is past.
  ASSERT_OK_AND_ASSIGN(auto w, BloomFilter::Create(*store, "skewed-window", Window(10'000, 10)));
  behind->Set(WallMillis() - 200'000);
  // Scripts refused by an error reply: once, since retrying cannot cure a
  // clock (it was sent max_retries times more, with backoff).
  const auto failed_scripts = [&] {
    const std::string stats = server_->Cli({"INFO", "commandstats"});
    long total = 0;
    for (const std::string command : {"evalsha", "eval"}) {
      const size_t at = stats.find("cmdstat_" + command + ":");
      const size_t failed = stats.find("failed_calls=", at);
      if (at != std::string::npos && failed != std::string::npos) {
        total += std::stol(stats.substr(failed + 13));
      }
    }
    return total;
  };
  const long failed_before = failed_scripts();
  Status add = w->Add("x");
  EXPECT_EQ(failed_scripts() - failed_before, 1) << "the refused script was sent again";
  EXPECT_EQ(add.code(), StatusCode::kUnavailable) << add.ToString();
  EXPECT_NE(add.message().find("behind the server's"), std::string::npos) << add.ToString();
  // In step, both work.
  behind->Set(WallMillis());
  ASSERT_OK_AND_ASSIGN(auto in_step, BloomFilter::Create(*store, "skewed-ttl", ttl));
  ASSERT_OK_AND_ASSIGN(auto w2, BloomFilter::Open(*store, "skewed-window"));
  EXPECT_TRUE(w2->Add("x").ok());
  EXPECT_TRUE(testing::ValueOrFail(w2->Contains("x")));
}

// The same for attach, whose PEXPIREAT of a past time deleted the bitmap it
// was adopting: another program's bits (a Java service's filter), and for a
// Redisson filter its config hash too.
TEST_F(RedisStoreTest, AnAttachWhoseExpiryIsPastLeavesTheAdoptedKeysAlone) {
  auto behind = std::make_shared<ManualClock>(WallMillis() - 2 * 3600 * 1000);
  ASSERT_OK_AND_ASSIGN(auto store, OnClock(behind));
  ExpectAPastAttachLeavesTheKeysAlone(*store, "java", Strategy::kSeed);
  ExpectAPastAttachLeavesTheKeysAlone(*store, "javarb", Strategy::kRedisson);
}

// The same for a user whose ACL denies TIME, so that the scripts cannot
// read the server's clock: a create's keys expired as they were made, and
// it answered "does not exist" (not_found, exit 4: an audit); an attach's
// PEXPIREAT deleted the bitmap it adopted, and a Redisson filter's config.
// The scripts see the new metadata go, and say so; an attach stops before
// it touches the adopted keys.
TEST_F(RedisStoreTest, WithoutTimeAnExpiryPastIsToldAndTheAdoptedKeysStay) {
  raw_->Must({"ACL", "SETUSER", "notime", "reset", "on", ">pw", "~*", "&*", "+@all", "-time"});
  StoreOptions options;
  options.clock = std::make_shared<ManualClock>(WallMillis() - 2 * 3600 * 1000);
  ASSERT_OK_AND_ASSIGN(
      auto store,
      Store::Open("redis://notime:pw@127.0.0.1:" + std::to_string(server_->port()), options));
  for (const Strategy strategy : {Strategy::kSeed, Strategy::kRedisson}) {
    const std::string name = strategy == Strategy::kSeed ? "nt" : "ntrb";
    FilterOptions ttl = Options(1000, 0.01);
    ttl.strategy = strategy;
    ttl.ttl_seconds = 3600;
    const Status made = BloomFilter::Create(*store, name, ttl).status();
    EXPECT_EQ(made.code(), StatusCode::kUnavailable) << name << ": " << made.ToString();
    EXPECT_EQ(made.reason(), StatusReason::kClockBehind) << made.ToString();
    EXPECT_NE(made.message().find("as it was made"), std::string::npos) << made.ToString();
    EXPECT_EQ(raw_->Int({"EXISTS", name, "{" + name + "}:meta", "{" + name + "}:config"}), 0);
    if (strategy == Strategy::kSeed) {
      FilterOptions sharded = ttl;
      sharded.shards = 2;
      const Status spread = BloomFilter::Create(*store, "nt-shards", sharded).status();
      EXPECT_EQ(spread.reason(), StatusReason::kClockBehind) << spread.ToString();
      EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
    }

    ExpectAPastAttachLeavesTheKeysAlone(*store, "java-" + name, strategy);
    if (strategy == Strategy::kSeed) {  // a key not written yet is not made
      FilterConfig config = Config(1000, 0.01, strategy);
      config.ttl_seconds = 3600;
      const Status unwritten = store->Attach("unwritten", config);
      EXPECT_EQ(unwritten.reason(), StatusReason::kClockBehind) << unwritten.ToString();
      EXPECT_EQ(raw_->Int({"EXISTS", "unwritten"}), 0) << "a bitmap was made";
    }
  }
  // A window's new slice likewise: it expired as it was made (it was listed,
  // and read data_loss until its filter expired, as the README said).
  ASSERT_TRUE(BloomFilter::Create(*store_, "ntw", Window(600'000, 3)).ok());
  ASSERT_OK_AND_ASSIGN(auto behind, BloomFilter::Open(*store, "ntw"));
  const Status added = behind->Add("x");
  EXPECT_EQ(added.reason(), StatusReason::kClockBehind) << added.ToString();
  EXPECT_NE(added.message().find("as it was made"), std::string::npos) << added.ToString();
  EXPECT_EQ(raw_->Int({"HLEN", "{ntw}/parts"}), 0) << "a slice was listed";
  raw_->Must({"ACL", "DELUSER", "notime"});
}

// A scaling or window filter's new part is refused when its expiry is past
// by the server's clock. At the filter's own expiry (Redis keeps a key
// through that millisecond, so the metadata still read alive) the refusal
// said "clock behind" (503, at least 0 ms behind: an audit, 15 of 20 runs
// adding at expiry), sending operators to NTP for a filter that had simply
// expired. It is not_found. Made here by a filter whose recorded expiry is
// past and whose metadata key stays, seen by a client whose clock is behind
// it (so that the client itself does not call it expired first).
TEST_F(RedisStoreTest, ANewPartOfAFilterAtItsExpiryIsNotFoundNotAClockBehind) {
  FilterOptions scaling = Options(10, 0.01);
  scaling.kind = FilterKind::kScaling;
  scaling.ttl_seconds = 3600;
  ASSERT_TRUE(BloomFilter::Create(*store_, "ending", scaling).ok());
  raw_->Run({"HSET", "{ending}:meta", "expires_at_ms", std::to_string(WallMillis() - 1000)});
  raw_->Run({"PERSIST", "{ending}:meta"});
  auto behind = std::make_shared<ManualClock>(WallMillis() - 60'000);
  ASSERT_OK_AND_ASSIGN(auto store, OnClock(behind));
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*store, "ending"));
  const Status added = f->AddMany(Views(Items(Encoding::kUtf8, 200)));  // past layer 0
  EXPECT_EQ(added.code(), StatusCode::kNotFound) << added.ToString();
}

TEST_F(RedisStoreTest, CreateWritesMetadataAndPresizesTheBitmap) {
  const FilterConfig config = Config(5000, 0.001);
  ASSERT_TRUE(store_->Create("orders", config).ok());
  // The bitmap is allocated at its final size up front.
  EXPECT_EQ(raw_->Int({"STRLEN", "orders"}), static_cast<long long>(config.data_bytes()));
  EXPECT_EQ(raw_->Int({"BITCOUNT", "orders"}), 0);
  EXPECT_EQ(raw_->Str({"TYPE", "{orders}:meta"}), "hash");
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:meta", "format"}), "1");
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:meta", "name"}), "orders");
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:meta", "strategy"}), "guava64");
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:meta", "error_rate"}), "0.001");
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:meta", "bits"}), std::to_string(config.geometry.bits));
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:meta", "hashes"}), std::to_string(config.geometry.hashes));
  EXPECT_EQ(raw_->Str({"HGET", "{orders}:meta", "count"}), "0");

  auto read = store_->ReadConfig("orders");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, config);
}

// A caller that stops reading a pipeline at an error reply leaves the later
// replies unread: its connection must not go back to the pool, or the next
// call on it reads those replies as its own. One connection (pool_size=1);
// a scaling filter whose metadata key another program overwrote with a
// string: listing its layers fails at the first of two pipelined commands.
// Before, the next check of another filter read the stale reply: an error,
// or another command's answer taken for its own.
TEST_F(RedisStoreTest, AConnectionLeftWithUnreadRepliesIsNotReused) {
  std::unique_ptr<Store> one = MustOpen(server_->url() + "?pool_size=1");
  ASSERT_NE(one, nullptr);
  auto scaling = BloomFilter::Create(
      *one, "s", {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling});
  ASSERT_TRUE(scaling.ok()) << scaling.status().ToString();
  auto plain = BloomFilter::Create(*one, "p", {.capacity = 1000, .error_rate = 0.001});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_TRUE((*plain)->Add("here").ok());
  ASSERT_TRUE((*scaling)->Add("layer-0").ok());
  auto bits = one->OpenBits("s", (*scaling)->config());
  ASSERT_TRUE(bits.ok()) << bits.status().ToString();
  raw_->Str({"DEL", "{s}:meta"});
  raw_->Str({"SET", "{s}:meta", "not a hash"});
  for (int round = 0; round < 3; ++round) {
    EXPECT_FALSE((*bits)->ListParts().ok()) << round;
    auto present = (*plain)->Contains("here");
    ASSERT_TRUE(present.ok()) << round << ": " << present.status().ToString();
    EXPECT_TRUE(*present) << round;
    auto absent = (*plain)->Contains("never added");
    ASSERT_TRUE(absent.ok()) << round << ": " << absent.status().ToString();
    EXPECT_FALSE(*absent) << round;
  }
}

// A sharded counting filter's removes go to each item's shard, in batches
// and one at a time. No test removed from one (the coverage audit: sending
// every remove to shard 0 survived).
TEST_F(RedisStoreTest, ARemoveFromAShardedCountingFilterReachesEachItemsShard) {
  FilterOptions options{.capacity = 10'000, .error_rate = 0.001, .kind = FilterKind::kCounting};
  options.shards = 4;
  ASSERT_OK_AND_ASSIGN(auto filter, BloomFilter::Create(*store_, "sharded-counts", options));
  std::vector<std::string> items;
  for (int i = 0; i < 2000; ++i) items.push_back("item-" + std::to_string(i));
  const std::vector<std::string_view> all = Views(items);
  ASSERT_TRUE(filter->AddMany(all).ok());
  const auto gone = std::span(all).first(1000);
  const auto kept = std::span(all).subspan(1000);
  std::vector<uint8_t> removed;
  ASSERT_TRUE(filter->RemoveMany(gone.first(999), &removed).ok());
  EXPECT_EQ(std::count(removed.begin(), removed.end(), 1), 999);
  bool last = false;
  ASSERT_TRUE(filter->Remove(gone.back(), &last).ok());
  EXPECT_TRUE(last);
  std::vector<uint8_t> present;
  ASSERT_TRUE(filter->ContainsMany(kept, &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 1000) << "a kept item went absent";
  ASSERT_TRUE(filter->ContainsMany(gone, &present).ok());
  EXPECT_LE(std::count(present.begin(), present.end(), 1), 10) << "removed items stayed";
}

// Adds NAME-0 .. NAME-(n-1) one at a time, each checked at once: 0, else 11
// for an error, 12 for an added item read absent. For a child of fork().
int AddAndCheck(BloomFilter& filter, const std::string& name, int n) {
  for (int i = 0; i < n; ++i) {
    const std::string item = name + "-" + std::to_string(i);
    if (!filter.Add(item).ok()) return 11;
    Result<bool> present = filter.Contains(item);
    if (!present.ok()) return 11;
    if (!*present) return 12;
  }
  return 0;
}

// A program that forks keeps using its store in both processes: the child
// calls over connections of its own. It used the parent's pooled sockets:
// both sent commands on one connection and each read the other's replies
// (the fork audit: errors, and items just added read "absent").
TEST_F(RedisStoreTest, AChildOfForkCallsOverConnectionsOfItsOwn) {
  auto filter = BloomFilter::Create(*store_, "forked", {.capacity = 100'000, .error_rate = 0.0001});
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("before").ok());  // leaves a connection idle in the pool
  const auto connections = [&] {
    return std::stoull(
        internal::InfoField(raw_->Str({"INFO", "stats"}), "total_connections_received"));
  };
  const uint64_t before = connections();
  // The child calls once while the parent waits, so that a connection it
  // opens is the only new one; then both call at once.
  int told[2];
  ASSERT_EQ(::pipe(told), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(told[0]);
    Result<bool> first = (*filter)->Contains("before");
    if (!first.ok() || !*first) ::_exit(10);
    if (::write(told[1], "x", 1) != 1) ::_exit(10);
    ::_exit(AddAndCheck(**filter, "child", 2000));
  }
  ::close(told[1]);
  char byte = 0;
  const bool first_call_done = ::read(told[0], &byte, 1) == 1;
  ::close(told[0]);
  const uint64_t after_first_call = connections();
  EXPECT_EQ(AddAndCheck(**filter, "parent", 2000), 0) << "11: an error, 12: a false negative";
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: its first call, 11: an error, 12: a false negative";
  EXPECT_TRUE(first_call_done);
  EXPECT_EQ(after_first_call, before + 1) << "the child's first call opened its own connection";
}

// Filters two processes of one fork() create get incarnations of their own.
// The thread's generator, copied by fork(), drew the same numbers in both:
// sibling workers re-creating a filter at the same point wrote the same
// incarnation, which a handle's drop-and-re-create check then could not
// tell apart (and OrBitmap's upload keys had the same names).
TEST_F(RedisStoreTest, ProcessesOfOneForkDrawIncarnationsOfTheirOwn) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "inc-before", {.capacity = 100, .error_rate = 0.01})
                  .ok());  // the generator has drawn
  const int child = ExitCodeOfChild([&] {
    return BloomFilter::Create(*store_, "inc-child", {.capacity = 100, .error_rate = 0.01}).ok()
               ? 0
               : 10;
  });
  ASSERT_EQ(child, 0);
  ASSERT_TRUE(
      BloomFilter::Create(*store_, "inc-parent", {.capacity = 100, .error_rate = 0.01}).ok());
  const std::string parent = raw_->Str({"HGET", "{inc-parent}:meta", "incarnation"});
  const std::string child_made = raw_->Str({"HGET", "{inc-child}:meta", "incarnation"});
  ASSERT_EQ(parent.size(), 16u) << parent;
  ASSERT_EQ(child_made.size(), 16u) << child_made;
  EXPECT_NE(parent, child_made);
}

// A filter dropped and made again with the same bits and hashes per part
// but another window, expansion or TTL passed the seven checked fields: a
// handle opened before wrote into it as the old filter. Adds went to window
// slices numbered by the old slice length (acknowledged, then never found),
// a new layer was made at the old layer's size (data_loss for every reader
// after) or with the old TTL (the layer expired under a filter without one).
// The metadata's incarnation differs, so the handle reopens first.
TEST_F(RedisStoreTest, AHandleOpenedBeforeADropAndReCreateWritesAsTheNewFilter) {
  const auto items = Items(Encoding::kUtf8, 250);
  struct Case {
    const char* name;
    FilterOptions before, after;
  };
  FilterOptions scaling{.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling};
  FilterOptions wider = scaling;
  wider.expansion = 4;
  FilterOptions expiring = scaling;
  expiring.ttl_seconds = 3600;
  const std::vector<Case> cases = {{"inc-w", Window(60000, 4), Window(20000, 4)},
                                   {"inc-e", scaling, wider},
                                   {"inc-t", expiring, scaling},
                                   {"inc-u", scaling, expiring}};
  auto other = MustOpen(server_->url());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(auto stale, BloomFilter::Create(*store_, c.name, c.before));
    ASSERT_TRUE(stale->Add("warm").ok());
    ASSERT_TRUE(other->Drop(c.name).ok());
    ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Create(*other, c.name, c.after));
    // Its checks read the new filter's parts (a window's by the new slice
    // length), and its adds write them.
    ASSERT_TRUE(fresh->Add("from-fresh").ok());
    ASSERT_OK_AND_ASSIGN(bool found, stale->Contains("from-fresh"));
    EXPECT_TRUE(found) << "a check of the old filter's parts";
    ASSERT_TRUE(stale->AddMany(Views(items)).ok());
    std::vector<uint8_t> present;
    const Status checked = fresh->ContainsMany(Views(items), &present);
    ASSERT_TRUE(checked.ok()) << checked.ToString();
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), 250) << "acknowledged adds lost";
    // Every key of the filter carries the new filter's expiry, or none (a
    // window's slices expire with the window).
    if (c.after.kind == FilterKind::kWindow) continue;
    const int64_t want = c.after.ttl_seconds == 0 ? -1 : 1;
    auto keys = raw_->Must({"KEYS", "*" + std::string(c.name) + "*"});
    EXPECT_GE(keys->elements, 3u);
    for (size_t i = 0; i < keys->elements; ++i) {
      const std::string key(keys->element[i]->str, keys->element[i]->len);
      const int64_t ttl = raw_->Int({"PTTL", key});
      EXPECT_EQ(ttl > 0 ? 1 : ttl, want) << key;
    }
  }
}

// Drops and creates by one client while another reads a filter (of one or
// four shards, a window, a scaling one): a part found missing because of a
// drop, with the filter there again when the reader looked why, was
// answered data_loss (redbloomd: 500 to a GET, the alert's counter up). Each
// answer is now the old filter's not_found or the new filter's answer (or,
// re-created at each of the reopen's tries, a conflict).
TEST_F(RedisStoreTest, ADropAndCreateRacingReadsIsNeverDataLoss) {
  FilterOptions sharded = Options(2000, 0.01);
  sharded.shards = 4;
  FilterOptions scaling = Options(100, 0.01);
  scaling.kind = FilterKind::kScaling;
  const std::vector<std::pair<std::string, FilterOptions>> cases = {{"plain", Options(2000, 0.01)},
                                                                    {"sharded", sharded},
                                                                    {"window", Window(60000, 4)},
                                                                    {"scaling", scaling}};
  for (const auto& one : cases) {
    // Not a structured binding: clang before 16 cannot capture one.
    const std::string& label = one.first;
    const FilterOptions& options = one.second;
    SCOPED_TRACE(label);
    const std::string name = "race-" + label;
    ASSERT_TRUE(BloomFilter::Create(*store_, name, options).ok());
    auto other = MustOpen(server_->url());
    std::atomic<bool> done{false};
    std::thread churn([&] {
      while (!done.load()) {
        (void)other->Drop(name);
        // With an item, so that a window has a slice and a scaling filter
        // its layer to lose.
        if (auto made = BloomFilter::Create(*other, name, options); made.ok()) {
          (void)(*made)->Add("churn");
        }
        // A breath, so that reads also find the filter whole (under
        // ThreadSanitizer a 4-shard filter was never read whole in 1.5 s).
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    const auto items = Items(Encoding::kUtf8, 50);
    int answered = 0, gone = 0, again = 0;
    std::vector<std::string> wrong;
    // At least 1.5 s, and until both outcomes were seen (at most 20 s).
    const auto start = std::chrono::steady_clock::now();
    const auto enough = [&] {
      const auto spent = std::chrono::steady_clock::now() - start;
      return spent >= std::chrono::seconds(20) ||
             (spent >= std::chrono::milliseconds(1500) && answered > 0 && gone > 0);
    };
    while (!enough() && wrong.size() < 5) {
      auto f = BloomFilter::Open(*store_, name);
      if (!f.ok()) continue;
      for (int i = 0; i < 20; ++i) {
        std::vector<uint8_t> present;
        for (const Status& s :
             {(*f)->Info().status(), (*f)->ContainsMany(Views(items), &present)}) {
          if (s.ok()) {
            ++answered;
          } else if (s.code() == StatusCode::kNotFound) {
            ++gone;
          } else if (s.code() == StatusCode::kConflict) {
            ++again;  // created again on each of WithReopen's tries
          } else {
            wrong.push_back(s.ToString());
          }
        }
      }
    }
    done.store(true);
    churn.join();
    EXPECT_TRUE(wrong.empty()) << wrong.size() << " answers, the first: " << wrong.front();
    EXPECT_GT(answered, 0);
    EXPECT_GT(gone, 0) << "the race was never met";
    std::printf("%s: %d answered, %d not found, %d conflicts\n", label.c_str(), answered, gone,
                again);
  }
}

// A window handle that has read no slice yet (nothing added when it
// checked): its next check after a drop and a create with another window
// read the new filter's slices by the old numbering, and missed them.
TEST_F(RedisStoreTest, AWindowHandleWithNoSliceReadFollowsAReCreate) {
  for (const uint64_t window : {20000, 60000}) {
    const std::string name = "wn" + std::to_string(window);
    ASSERT_OK_AND_ASSIGN(auto stale, BloomFilter::Create(*store_, name, Window(60000, 4)));
    ASSERT_OK_AND_ASSIGN(bool absent, stale->Contains("zz"));
    EXPECT_FALSE(absent);
    auto other = MustOpen(server_->url());
    ASSERT_TRUE(other->Drop(name).ok());
    ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Create(*other, name, Window(window, 4)));
    ASSERT_TRUE(fresh->Add("X").ok());
    ASSERT_OK_AND_ASSIGN(bool found, stale->Contains("X"));
    EXPECT_TRUE(found) << name;
  }
}

// The incarnation's edges: a rebuild's swap keeps it (readers of the
// replaced filter read the new one, as before it), and a filter made by a
// build before it (no field) is checked as having none, so that a re-create
// by this build is still noticed.
TEST_F(RedisStoreTest, TheIncarnationSurvivesARebuildAndMayBeMissing) {
  const FilterConfig config = Config();
  ASSERT_TRUE(store_->Create("inc", config).ok());
  ASSERT_OK_AND_ASSIGN(auto bits, store_->OpenBits("inc", config));
  ASSERT_OK_AND_ASSIGN(auto offsets, ItemOffsets(config, "x"));
  const uint32_t k = config.geometry.hashes;
  uint8_t flag = 0;
  ASSERT_TRUE(BloomFilter::Rebuild(*store_, "inc", Options(), [](BloomFilter& f) {
                return f.Add("x");
              }).ok());
  const Status after_rebuild = TestOffsets(*bits, offsets.data(), 1, k, &flag);
  ASSERT_TRUE(after_rebuild.ok()) << after_rebuild.ToString();
  EXPECT_EQ(flag, 1) << "the handle reads the rebuilt filter";

  ASSERT_EQ(raw_->Int({"HDEL", "{inc}:meta", "incarnation"}), 1);
  ASSERT_OK_AND_ASSIGN(auto older, store_->OpenBits("inc", config));
  ASSERT_TRUE(AddOffsets(*older, offsets.data(), 1, k, &flag).ok());
  ASSERT_TRUE(TestOffsets(*older, offsets.data(), 1, k, &flag).ok());
  EXPECT_EQ(flag, 1);
  ASSERT_TRUE(store_->Drop("inc").ok());
  ASSERT_TRUE(store_->Create("inc", config).ok());
  EXPECT_EQ(TestOffsets(*older, offsets.data(), 1, k, &flag).code(), StatusCode::kConflict);
  EXPECT_EQ(AddOffsets(*older, offsets.data(), 1, k, &flag).code(), StatusCode::kConflict);
}

// A rebuild swaps in over metadata it cannot read (a string where the hash
// was): the swap's script read the old incarnation with HGET, which raised
// after the bits were already moved, leaving the rebuilt bits under a
// broken filter and reporting "the old filter is unchanged". It repairs the
// filter, as before the incarnation.
TEST_F(RedisStoreTest, ARebuildSwapsInOverMetadataItCannotRead) {
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "wr", Options()));
  ASSERT_TRUE(f->Add("a").ok());
  const Status rebuilt = BloomFilter::Rebuild(*store_, "wr", Options(), [&](BloomFilter& temp) {
    raw_->Must({"DEL", "{wr}:meta"});
    raw_->Must({"SET", "{wr}:meta", "garbage"});
    return temp.Add("item1");
  });
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.ToString();
  ASSERT_OK_AND_ASSIGN(auto after, BloomFilter::Open(*store_, "wr"));
  ASSERT_OK_AND_ASSIGN(bool found, after->Contains("item1"));
  EXPECT_TRUE(found);
  EXPECT_EQ(raw_->Str({"TYPE", "{wr}:meta"}), "hash");
}

TEST_F(RedisStoreTest, CreateIsIdempotentOnlyForIdenticalParameters) {
  ASSERT_TRUE(store_->Create("f", Config()).ok());
  EXPECT_EQ(store_->Create("f", Config()).code(), StatusCode::kAlreadyExists);
  const Status other = store_->Create("f", Config(1000, 0.02));
  EXPECT_EQ(other.code(), StatusCode::kConflict);
  EXPECT_NE(other.message().find("error_rate=0.01"), std::string::npos) << other.message();
  // A second client with other parameters gets the conflict through the facade too.
  auto store2 = MustOpen(server_->url());
  bool created = true;
  auto f = BloomFilter::Create(*store2, "f", Options(), &created);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_FALSE(created);
  EXPECT_EQ(BloomFilter::Create(*store2, "f", Options(1000, 0.02)).status().code(),
            StatusCode::kConflict);
  EXPECT_EQ(BloomFilter::Create(*store2, "f", Options(1000, 0.01, Strategy::kSeed)).status().code(),
            StatusCode::kConflict);
}

TEST_F(RedisStoreTest, DifferentErrorRatesRoundTripExactly) {
  for (double p : {0.1, 0.01, 0.03, 1e-7, 0.123456789012345, 1.0 / 3}) {
    const std::string name = "p" + FormatDouble(p);
    ASSERT_TRUE(store_->Create(name, Config(777, p)).ok()) << p;
    auto read = store_->ReadConfig(name);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read->error_rate, p);
    EXPECT_EQ(*read, Config(777, p));
  }
}

class RedisEncodingTest : public RedisStoreTest,
                          public ::testing::WithParamInterface<std::tuple<Strategy, Encoding>> {};

// The central guarantee, on every encoding and strategy: every added item is
// found, each is reported new exactly once, and the false-positive rate
// stays near its target. batch_items=300 makes 2000 items several pipelined
// batches, so the window and batch boundaries are exercised too.
TEST_P(RedisEncodingTest, NoFalseNegativesAndFppWithinBounds) {
  const auto [strategy, encoding] = GetParam();
  auto store = MustOpen(server_->url() + "?batch_items=300");
  constexpr size_t kItems = 2000;
  constexpr double kP = 0.01;
  auto f = BloomFilter::Create(*store, "f", Options(kItems, kP, strategy, encoding));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto items = Items(encoding, kItems);
  std::vector<uint8_t> added;
  ASSERT_TRUE((*f)->AddMany(Views(items), &added).ok());
  size_t new_items = 0;
  for (uint8_t a : added) new_items += a;
  // A new item can collide with earlier ones on all k bits (probability
  // about the fill's FPP), so a few may be reported as not new.
  EXPECT_GT(new_items, kItems * 97 / 100);

  std::vector<uint8_t> present;
  ASSERT_TRUE((*f)->ContainsMany(Views(items), &present).ok());
  for (size_t i = 0; i < kItems; ++i) ASSERT_EQ(present[i], 1) << "item " << i << " " << items[i];

  // Adding again changes nothing.
  ASSERT_TRUE((*f)->AddMany(Views(items), &added).ok());
  for (size_t i = 0; i < kItems; ++i) ASSERT_EQ(added[i], 0) << "item " << i;

  const auto others = Items(encoding, 20000, /*salt=*/7);
  ASSERT_TRUE((*f)->ContainsMany(Views(others), &present).ok());
  size_t false_positives = 0;
  for (uint8_t p : present) false_positives += p;
  // Expected ~200 (1%); sd ~14. 2.5x the target fails only if something is wrong.
  EXPECT_LT(false_positives, 500u);

  auto info = (*f)->Info();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->items_added, new_items);
  EXPECT_EQ(info->bits_set, static_cast<uint64_t>(raw_->Int({"BITCOUNT", "f"})));
  EXPECT_NEAR(static_cast<double>(info->approximate_items), kItems, kItems * 0.05);
}

INSTANTIATE_TEST_SUITE_P(
    All, RedisEncodingTest,
    ::testing::Combine(::testing::Values(Strategy::kGuava64, Strategy::kSeed, Strategy::kBlock),
                       ::testing::Values(Encoding::kUtf8, Encoding::kUtf8x2, Encoding::kInt32,
                                         Encoding::kInt64, Encoding::kBytes)),
    [](const auto& param_info) {
      return std::string(StrategyName(std::get<0>(param_info.param))) + "_" +
             std::string(EncodingName(std::get<1>(param_info.param)));
    });

// Redis holds exactly the bytes the mem: store holds for the same items: one
// bit order everywhere, so exports, the Java service and redis-cli agree.
TEST_F(RedisStoreTest, BitsAreByteIdenticalToTheMemoryStore) {
  auto mem = MustOpen("mem:");
  for (Strategy s : {Strategy::kGuava64, Strategy::kSeed, Strategy::kBlock}) {
    const std::string name = std::string("same-") + std::string(StrategyName(s));
    auto r = BloomFilter::Create(*store_, name, Options(3000, 0.02, s));
    auto m = BloomFilter::Create(*mem, name, Options(3000, 0.02, s));
    ASSERT_TRUE(r.ok() && m.ok());
    const auto items = Items(Encoding::kUtf8, 1500);
    ASSERT_TRUE((*r)->AddMany(Views(items)).ok());
    ASSERT_TRUE((*m)->AddMany(Views(items)).ok());
    std::string mem_bits;
    ASSERT_TRUE((*m)->ReadBitmap(&mem_bits).ok());
    EXPECT_EQ(raw_->Str({"GET", name}), mem_bits) << name;
    // And SETBIT order: GETBIT at an item's offsets reads 1.
    auto offsets = (*r)->Offsets(items[0]);
    ASSERT_TRUE(offsets.ok());
    for (uint64_t o : *offsets) EXPECT_EQ(raw_->Int({"GETBIT", name, std::to_string(o)}), 1);
  }
}

TEST_F(RedisStoreTest, AddReportsEachItemNewOnceEvenWithinOneBatch) {
  auto f = BloomFilter::Create(*store_, "f", Options());
  ASSERT_TRUE(f.ok());
  std::vector<std::string_view> items = {"x", "y", "x", "z", "y"};
  std::vector<uint8_t> added;
  ASSERT_TRUE((*f)->AddMany(items, &added).ok());
  EXPECT_EQ(added, (std::vector<uint8_t>{1, 1, 0, 1, 0}));
  bool was_new = true;
  ASSERT_TRUE((*f)->Add("x", &was_new).ok());
  EXPECT_FALSE(was_new);
  auto info = (*f)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->items_added, 3u);
  EXPECT_EQ(raw_->Str({"HGET", "{f}:meta", "count"}), "3");
  auto hit = (*f)->Contains("z");
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(*hit);
  // The empty batch is a no-op, not an error.
  ASSERT_TRUE((*f)->AddMany({}, &added).ok());
  EXPECT_TRUE(added.empty());
}

// Redis sends each batch's cell ops sorted by offset and maps the answers
// back, or reads a `block` item's 64 bytes with one GETRANGE and tests its
// bits here: every item's "new" and "present" must still be what the memory
// store, which works item by item, answers. A small, overfilled filter makes
// items share cells, both within a batch and across batches.
TEST_F(RedisStoreTest, AnswersMatchTheMemoryStoreItemForItem) {
  auto mem = MustOpen("mem:");
  for (auto [kind, strategy] : {std::pair{FilterKind::kPlain, Strategy::kGuava64},
                                {FilterKind::kCounting, Strategy::kGuava64},
                                {FilterKind::kPlain, Strategy::kBlock},
                                {FilterKind::kCounting, Strategy::kBlock}}) {
    FilterOptions o = Options(300, 0.05, strategy);
    o.kind = kind;
    const std::string name =
        "answers-" + std::string(FilterKindName(kind)) + "-" + std::string(StrategyName(strategy));
    auto r = BloomFilter::Create(*store_, name, o);
    auto m = BloomFilter::Create(*mem, name, o);
    ASSERT_TRUE(r.ok() && m.ok());
    // 2500 items, some repeated, in batches of 1000 (the store's default).
    std::vector<std::string> items = Items(Encoding::kUtf8, 2000);
    for (size_t i = 0; i < 500; ++i) items.push_back(items[i * 3]);
    std::vector<uint8_t> added_redis, added_mem;
    ASSERT_TRUE((*r)->AddMany(Views(items), &added_redis).ok());
    ASSERT_TRUE((*m)->AddMany(Views(items), &added_mem).ok());
    EXPECT_EQ(added_redis, added_mem) << name;
    // And in calls of 1 to 20 items, which take the small add script up to
    // 16 items (k = 4 here: 64 ops at most) and the transaction beyond.
    std::vector<std::string> more = Items(Encoding::kUtf8, 600, /*salt=*/2);
    for (size_t i = 0; i < 100; ++i) more.push_back(items[i * 7]);
    for (size_t i = 0, n = 1; i < more.size(); i += n, n = n % 20 + 1) {
      const size_t len = std::min(n, more.size() - i);
      std::vector<std::string_view> call(more.begin() + i, more.begin() + i + len);
      std::vector<uint8_t> r_flags, m_flags;
      ASSERT_TRUE((*r)->AddMany(call, &r_flags).ok());
      ASSERT_TRUE((*m)->AddMany(call, &m_flags).ok());
      EXPECT_EQ(r_flags, m_flags) << name << " at item " << i;
    }
    items.insert(items.end(), more.begin(), more.end());
    // Overfilled on purpose, so some items are not new and some misses hit.
    EXPECT_GT(std::count(added_mem.begin(), added_mem.end(), 0), 500) << name;
    std::vector<std::string> probe = Items(Encoding::kUtf8, 3000, /*salt=*/1);
    probe.insert(probe.end(), items.begin(), items.begin() + 1000);
    std::vector<uint8_t> present_redis, present_mem;
    ASSERT_TRUE((*r)->ContainsMany(Views(probe), &present_redis).ok());
    ASSERT_TRUE((*m)->ContainsMany(Views(probe), &present_mem).ok());
    EXPECT_EQ(present_redis, present_mem) << name;
    const auto hits = std::count(present_mem.begin(), present_mem.end(), 1);
    EXPECT_GT(hits, 1000) << name;  // some false positives among the 3000
    EXPECT_LT(hits, 4000) << name;  // and some true misses
  }
}

// The count of a handle's last add rides with its next command; closing the
// handle sends it.
TEST_F(RedisStoreTest, CountReachesRedisWhenTheHandleCloses) {
  {
    auto f = BloomFilter::Create(*store_, "f", Options());
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->AddMany(Views(Items(Encoding::kUtf8, 40))).ok());
    auto info = (*f)->Info();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->items_added, 40u);  // pending adds included
  }
  EXPECT_EQ(raw_->Str({"HGET", "{f}:meta", "count"}), "40");
  auto g = BloomFilter::Open(*store_, "f");
  ASSERT_TRUE(g.ok());
  auto info = (*g)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->items_added, 40u);
}

TEST_F(RedisStoreTest, ClearKeepsTheFilterAndItsSize) {
  auto f = BloomFilter::Create(*store_, "f", Options());
  ASSERT_TRUE(f.ok());
  const auto items = Items(Encoding::kUtf8, 100);
  ASSERT_TRUE((*f)->AddMany(Views(items)).ok());
  ASSERT_GT(raw_->Int({"BITCOUNT", "f"}), 0);
  ASSERT_TRUE((*f)->Clear().ok());
  EXPECT_EQ(raw_->Int({"BITCOUNT", "f"}), 0);
  EXPECT_EQ(raw_->Int({"STRLEN", "f"}), static_cast<long long>(Config().data_bytes()));
  auto info = (*f)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->items_added, 0u);
  EXPECT_EQ(info->bits_set, 0u);
  std::vector<uint8_t> present;
  ASSERT_TRUE((*f)->ContainsMany(Views(items), &present).ok());
  for (uint8_t p : present) EXPECT_EQ(p, 0);
}

TEST_F(RedisStoreTest, ListShowsOnlyThisStoresFiltersAndDropRemovesBothKeys) {
  ASSERT_TRUE(store_->Create("b", Config()).ok());
  ASSERT_TRUE(store_->Create("a", Config()).ok());
  ASSERT_TRUE(store_->Create("{tagged}x", Config()).ok());
  // Look-alikes that are not redbloom filters of this store.
  raw_->Run({"HSET", "other:meta", "name", "other"});
  raw_->Run({"SET", "plain:meta", "x"});
  raw_->Run({"SETBIT", "bare", "7", "1"});
  auto jdk = MustOpen(server_->url() + "?keys=jdk");
  ASSERT_TRUE(jdk->Create("j", Config()).ok());

  auto names = store_->List();
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b", "{tagged}x"}));
  auto jdk_names = jdk->List();
  ASSERT_TRUE(jdk_names.ok());
  EXPECT_EQ(*jdk_names, (std::vector<std::string>{"j"}));

  ASSERT_TRUE(store_->Drop("a").ok());
  EXPECT_EQ(raw_->Int({"EXISTS", "a", "{a}:meta"}), 0);
  ASSERT_TRUE(store_->Drop("{tagged}x").ok());
  EXPECT_EQ(raw_->Int({"EXISTS", "{tagged}x", "{tagged}x:meta"}), 0);
  EXPECT_EQ(store_->Drop("a").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Drop("bare").code(), StatusCode::kNotFound);
  EXPECT_EQ(raw_->Int({"EXISTS", "bare"}), 1);  // not ours: untouched
  names = store_->List();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"b"}));
}

TEST_F(RedisStoreTest, ListPagesThroughManyFilters) {
  for (int i = 0; i < 1500; ++i) {
    raw_->Run({"HSET", "{n" + std::to_string(i) + "}:meta", "name", "n" + std::to_string(i)});
  }
  auto names = store_->List();
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_EQ(names->size(), 1500u);
}

// Metadata corrupted under an open handle: the handle's calls say what a
// fresh open says, data_loss. They said conflict ("dropped or re-created"),
// which tells a caller to reopen, and the reopen failed data_loss (an
// audit).
TEST_F(RedisStoreTest, CorruptMetadataUnderAnOpenHandleIsDataLoss) {
  FilterOptions o = Options();
  o.kind = FilterKind::kCounting;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "lc", o));
  ASSERT_TRUE(f->Add("x").ok());
  raw_->Run({"HSET", "{lc}:meta", "bits", "banana"});
  const Status s = f->Contains("x").status();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("banana"), std::string::npos) << s.ToString();
  EXPECT_EQ(BloomFilter::Open(*store_, "lc").status().code(), StatusCode::kDataLoss);
}

TEST_F(RedisStoreTest, BareBitmapIsNotFoundAndTheErrorSaysHowToAdoptIt) {
  raw_->Run({"SETBIT", "bare", "100", "1"});
  const Status s = BloomFilter::Open(*store_, "bare").status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("attach"), std::string::npos) << s.message();
}

// Builds before 2026-12-01 kept a braced name's metadata at "NAME:meta".
// Such a filter's bitmap read as a bare bitmap whose error said "adopt it
// with attach", which keeps one layer of a scaling filter and loses the
// rest; the error now names the old layout and how to move the filter.
TEST_F(RedisStoreTest, AFilterInTheOldLayoutOfBracedNamesIsNamedSo) {
  raw_->Run({"SETBIT", "a{b", "100", "1"});
  raw_->Run({"HSET", "a{b:meta", "kind", "scaling", "hashes", "7"});
  const Status s = BloomFilter::Open(*store_, "a{b").status();
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s.ToString();
  EXPECT_NE(s.message().find("'a{b:meta'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("export --format redbloom"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("adopt it with attach"), std::string::npos) << s.message();
  // A name with a '}' but no '{' had "{NAME}" as its tag then.
  raw_->Run({"SETBIT", "x}", "100", "1"});
  raw_->Run({"HSET", "{x}}:meta", "kind", "plain"});
  const Status closing = BloomFilter::Open(*store_, "x}").status();
  EXPECT_EQ(closing.code(), StatusCode::kConflict) << closing.ToString();
  EXPECT_NE(closing.message().find("'{x}}:meta'"), std::string::npos) << closing.message();
  // A bare bitmap under such a name, with no old metadata, is still one.
  raw_->Run({"SETBIT", "c}d", "100", "1"});
  const Status bare = BloomFilter::Open(*store_, "c}d").status();
  EXPECT_EQ(bare.code(), StatusCode::kNotFound) << bare.ToString();
  EXPECT_NE(bare.message().find("attach"), std::string::npos) << bare.message();
  // Attaching the bitmap is refused: it would keep one layer of the rest.
  const Status attached = store_->Attach("a{b", Config());
  EXPECT_EQ(attached.code(), StatusCode::kConflict) << attached.ToString();
  // A drop names it too, rather than "does not exist" with its keys there.
  const Status dropped = store_->Drop("a{b");
  EXPECT_EQ(dropped.code(), StatusCode::kConflict) << dropped.ToString();
  EXPECT_NE(dropped.message().find("'a{b:meta'"), std::string::npos) << dropped.message();
  EXPECT_EQ(raw_->Int({"EXISTS", "a{b", "a{b:meta"}), 2);
}

// A filter in that old layout is listed (its reads then name the layout):
// a listing that left it out hid it from an operator after an upgrade. A
// name whose key it holds is told whose it is, not of 'x' and '{x}'. The
// old layout is made here from a filter whose metadata key is the one
// "x}" had then ("{x}}:meta"), its name field set to "x}".
TEST_F(RedisStoreTest, AnOldLayoutFilterIsListedAndNamedInACollision) {
  ASSERT_TRUE(store_->Create("{x}}", Config()).ok());
  ASSERT_EQ(raw_->Int({"EXISTS", "{x}}:meta"}), 1);
  raw_->Run({"HSET", "{x}}:meta", "name", "x}"});
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> names, store_->List());
  EXPECT_EQ(names, std::vector<std::string>{"x}"});
  const Status old = BloomFilter::Open(*store_, "x}").status();
  EXPECT_EQ(old.code(), StatusCode::kConflict) << old.ToString();
  EXPECT_NE(old.message().find("before 2026-12-01"), std::string::npos) << old.message();
  const Status collided = BloomFilter::Open(*store_, "{x}}").status();
  EXPECT_EQ(collided.code(), StatusCode::kConflict) << collided.ToString();
  EXPECT_NE(collided.message().find("with filter 'x}' (made by a redbloom build before "
                                    "2026-12-01"),
            std::string::npos)
      << collided.message();
  EXPECT_EQ(collided.message().find("'x' and '{x}'"), std::string::npos) << collided.message();
  // A braced name made by this build keeps its metadata at "{rbN}a{b:meta",
  // which the name "{rbN}a{b" maps to as well: that collision is the pair
  // kind, not an old build's (the review's case).
  ASSERT_TRUE(store_->Create("a{b", Config()).ok());
  const auto keys = raw_->Must({"KEYS", "{rb*}a{b:meta"});
  ASSERT_EQ(keys->elements, 1u);
  std::string tagged(keys->element[0]->str, keys->element[0]->len);
  tagged.resize(tagged.size() - std::string(":meta").size());
  const Status pair = BloomFilter::Open(*store_, tagged).status();
  EXPECT_EQ(pair.code(), StatusCode::kConflict) << pair.ToString();
  EXPECT_NE(pair.message().find("'x' and '{x}'"), std::string::npos) << pair.message();
  EXPECT_EQ(pair.message().find("before 2026-12-01"), std::string::npos) << pair.message();
}

// The old layout's key for "x}" is also the metadata key of this layout's
// filter "{x}}" (its tag is "x}"): a live "{x}}" is not an old "x}". Taken
// for one, it refused creating, reading and dropping "x}" (an audit), and
// made an existing "x}" refuse its own idempotent re-create.
TEST_F(RedisStoreTest, AFilterOfThisLayoutIsNoOldOneOfItsNeighbour) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "{x}}", Options(100, 0.01)).ok());
  bool created = false;
  auto f = BloomFilter::Create(*store_, "x}", Options(100, 0.01), &created);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(created);
  ASSERT_TRUE((*f)->Add("a").ok());
  ASSERT_TRUE(BloomFilter::Create(*store_, "x}", Options(100, 0.01), &created).ok());
  EXPECT_FALSE(created);
  ASSERT_OK_AND_ASSIGN(auto other, BloomFilter::Open(*store_, "{x}}"));
  ASSERT_OK_AND_ASSIGN(const bool in_other, other->Contains("a"));
  EXPECT_FALSE(in_other);
  ASSERT_TRUE(BloomFilter::Drop(*store_, "x}").ok());
  EXPECT_TRUE(BloomFilter::Open(*store_, "{x}}").ok());
}

// A window filter has no bitmap key, nor has a filter whose bitmap was
// lost: the old layout's metadata alone names it (an audit found such a
// filter read as missing, and a create make another beside its old keys).
TEST_F(RedisStoreTest, AnOldLayoutFilterWithoutABitmapIsNamedAndNotMadeAgain) {
  raw_->Run({"HSET", "w{z:meta", "kind", "window", "slices", "6"});
  raw_->Run({"HSET", "w{z/parts", "179654600", "3"});
  const Status opened = BloomFilter::Open(*store_, "w{z").status();
  EXPECT_EQ(opened.code(), StatusCode::kConflict) << opened.ToString();
  EXPECT_NE(opened.message().find("'w{z:meta'"), std::string::npos) << opened.message();
  const Status created = store_->Create("w{z", Config());
  EXPECT_EQ(created.code(), StatusCode::kConflict) << created.ToString();
  EXPECT_EQ(raw_->Int({"EXISTS", "w{z"}), 0) << "the create made a bitmap";
  auto names = store_->List();
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_TRUE(names->empty()) << names->front();
  // A name whose old metadata key is not there is created as usual.
  EXPECT_TRUE(store_->Create("v{z", Config()).ok());
}

// Another client drops or re-creates the filter under open bits: their adds
// and checks fail, and nothing is written into the new filter or left behind
// as a bare key. (The BloomFilter facade then reopens by name and follows
// the new filter; the store's guard is what keeps the old bits out of it.)
TEST_F(RedisStoreTest, OpenBitsNoticeDropAndRecreate) {
  const FilterConfig config = Config();
  ASSERT_TRUE(store_->Create("f", config).ok());
  auto bits = store_->OpenBits("f", config);
  ASSERT_TRUE(bits.ok()) << bits.status().ToString();
  auto offsets = ItemOffsets(config, "x");
  ASSERT_TRUE(offsets.ok());
  const uint32_t k = config.geometry.hashes;
  uint8_t flag = 0;
  ASSERT_TRUE(AddOffsets(**bits, offsets->data(), 1, k, &flag).ok());
  // 20 items: past kSmallAddOps, so the guarded transaction, not the small
  // add script, must notice too.
  std::vector<uint64_t> many;
  for (int i = 0; i < 20; ++i) {
    auto o = ItemOffsets(config, "many-" + std::to_string(i));
    ASSERT_TRUE(o.ok());
    many.insert(many.end(), o->begin(), o->end());
  }
  std::vector<uint8_t> flags(20);
  auto other = MustOpen(server_->url());

  ASSERT_TRUE(other->Drop("f").ok());
  EXPECT_EQ(AddOffsets(**bits, offsets->data(), 1, k, &flag).code(), StatusCode::kNotFound);
  EXPECT_EQ(AddOffsets(**bits, many.data(), 20, k, flags.data()).code(), StatusCode::kNotFound);
  EXPECT_EQ(TestOffsets(**bits, offsets->data(), 1, k, &flag).code(), StatusCode::kNotFound);
  EXPECT_EQ((*bits)->Stats(0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*bits)->Clear().code(), StatusCode::kNotFound);
  EXPECT_EQ(raw_->Int({"EXISTS", "f", "{f}:meta", "{f}/add"}), 0) << "a dropped filter came back";

  ASSERT_TRUE(other->Create("f", Config(1000, 0.05)).ok());
  EXPECT_EQ(AddOffsets(**bits, offsets->data(), 1, k, &flag).code(), StatusCode::kConflict);
  EXPECT_EQ(AddOffsets(**bits, many.data(), 20, k, flags.data()).code(), StatusCode::kConflict);
  EXPECT_EQ(TestOffsets(**bits, offsets->data(), 1, k, &flag).code(), StatusCode::kConflict);
  EXPECT_EQ(raw_->Int({"BITCOUNT", "f"}), 0) << "bits written into the re-created filter";
  EXPECT_EQ(raw_->Int({"EXISTS", "{f}/add"}), 0);

  // The facade, by name, follows the filter that now has the name.
  auto f = BloomFilter::Open(*store_, "f");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(other->Drop("f").ok());
  EXPECT_EQ((*f)->Add("after-drop").code(), StatusCode::kNotFound);
  EXPECT_EQ((*f)->Contains("x").status().code(), StatusCode::kNotFound);
}

TEST_F(RedisStoreTest, KeyOfTheWrongTypeIsAClearConflict) {
  raw_->Run({"LPUSH", "lst", "a", "b"});
  Status s = store_->Create("lst", Config());
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_NE(s.message().find("holds a list, not a bitmap"), std::string::npos) << s.message();
  s = store_->Attach("lst", Config());
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_NE(s.message().find("holds a list"), std::string::npos) << s.message();

  // The bitmap replaced by a hash behind a filter's back.
  auto f = BloomFilter::Create(*store_, "f", Options());
  ASSERT_TRUE(f.ok());
  raw_->Run({"DEL", "f"});
  raw_->Run({"HSET", "f", "k", "v"});
  s = (*f)->Add("x");
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_NE(s.message().find("key 'f' holds a hash, not a bitmap"), std::string::npos)
      << s.message();
  // The same through the guarded transaction (more items than a small add).
  const auto items = Items(Encoding::kUtf8, 20);
  s = (*f)->AddMany(Views(items));
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_NE(s.message().find("key 'f' holds a hash, not a bitmap"), std::string::npos)
      << s.message();
  EXPECT_EQ((*f)->Contains("x").status().code(), StatusCode::kConflict);
  EXPECT_EQ((*f)->Info().status().code(), StatusCode::kConflict);
  // A scaling filter's layer key: named by its layer, not quoted as a key
  // ("key 'of part 1 of filter 'sc'' holds a list").
  {
    auto sc = BloomFilter::Create(
        *store_, "sc", {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling});
    ASSERT_TRUE(sc.ok()) << sc.status().ToString();
    ASSERT_TRUE((*sc)->AddMany(Views(Items(Encoding::kUtf8, 300))).ok());
    ASSERT_EQ(raw_->Int({"EXISTS", "{sc}/part/1"}), 1);
    raw_->Run({"DEL", "{sc}/part/1"});
    raw_->Run({"LPUSH", "{sc}/part/1", "a"});
    const Status layer = (*sc)->AddMany(Views(Items(Encoding::kUtf8, 20)));
    EXPECT_EQ(layer.code(), StatusCode::kConflict) << layer.ToString();
    EXPECT_NE(layer.message().find("the key of part 1 of filter 'sc' holds a list, not a bitmap"),
              std::string::npos)
        << layer.message();
  }
  // The foreign value survived, and no scratch key is left.
  EXPECT_EQ(raw_->Str({"HGET", "f", "k"}), "v");
  EXPECT_EQ(raw_->Int({"EXISTS", "{f}/add"}), 0);

  // Metadata key of the wrong type: a corrupt filter.
  raw_->Run({"SET", "{m}:meta", "junk"});
  EXPECT_EQ(store_->ReadConfig("m").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(store_->Create("m", Config()).code(), StatusCode::kDataLoss);
}

// A sharded filter's m and k are one shard's, so a one-array filter or Guava
// file of that geometry "matched" it: an import or merge wrote every bit into
// shard 0, reported success, and the items of the other shards read absent
// (about three in four here). And an export of a filter with a shard lost
// left the shard out and reported success. All are refused now, and a dump
// goes on no further than its end marker.
TEST_F(RedisStoreTest, ShardedFiltersTakeNoOneArrayBitsAndExportNoShardLess) {
  FilterOptions sharded = Options(4000, 0.01);
  sharded.shards = 4;
  ASSERT_OK_AND_ASSIGN(auto sh, BloomFilter::Create(*store_, "sh", sharded));
  // A plain filter of one shard's m and k (given, not sized).
  FilterOptions one = Options(0, 0);
  one.bits = sh->config().geometry.bits;
  one.hashes = sh->config().geometry.hashes;
  ASSERT_OK_AND_ASSIGN(auto u, BloomFilter::Create(*store_, "u", one));
  ASSERT_EQ(u->config().geometry, sh->config().geometry) << "the test needs one shard's geometry";
  const auto items = Items(Encoding::kUtf8, 1000);
  ASSERT_TRUE(u->AddMany(Views(items)).ok());
  std::stringstream guava;
  ASSERT_TRUE(ExportGuava(*u, guava).ok());
  auto imported = ImportGuava(*store_, "sh", guava, {});
  EXPECT_EQ(imported.status().code(), StatusCode::kConflict) << imported.status().ToString();
  const std::vector<std::string> sources = {"u"};
  EXPECT_EQ(Merge(*store_, "sh", sources).code(), StatusCode::kConflict) << "as the import above";
  const std::vector<std::string> mixed = {"u", "sh"};
  EXPECT_EQ(Merge(*store_, "new", mixed).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ReadConfig("new").status().code(), StatusCode::kNotFound)
      << "a refused merge created its destination";
  std::vector<uint8_t> present;
  ASSERT_TRUE(sh->ContainsMany(Views(items), &present).ok());
  EXPECT_LT(std::count(present.begin(), present.end(), 1), 50) << "bits went into the shard";

  // A dump is one dump: a second one after it is refused, not dropped.
  ASSERT_TRUE(sh->AddMany(Views(items)).ok());
  std::stringstream dump;
  ASSERT_TRUE(ExportDump(*sh, dump).ok());
  std::stringstream twice(dump.str() + dump.str());
  EXPECT_EQ(ImportDump(*store_, "copy", twice).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ReadConfig("copy").status().code(), StatusCode::kNotFound);

  // A shard lost with its server.
  const auto lost = internal::ShardKeysFor("sh", internal::KeyMode::kPlain, 2, 4);
  ASSERT_EQ(raw_->Int({"DEL", lost.bitmap, lost.meta}), 2);
  std::stringstream partial;
  EXPECT_EQ(ExportDump(*sh, partial).code(), StatusCode::kDataLoss);
  EXPECT_EQ(Merge(*store_, "copy2", std::vector<std::string>{"sh"}).code(), StatusCode::kDataLoss);
}

// A window slice whose key is deleted or evicted while the slice is in its
// window is data_loss on every check, until the slice would have expired.
// Before, the next listing of the parts (the first call of a handle in a
// slice: every CLI run) forgot it like an expired slice, and its items then
// read absent: 0 for every one of them, exit 1, and in redbloomd a 500
// data_loss once, then 200 "present": false.
TEST_F(RedisStoreTest, AWindowSliceLostInsideItsWindowIsDataLossNotAbsent) {
  constexpr uint64_t kHour = 3'600'000;
  const uint64_t start = WallMillis();
  auto clock = std::make_shared<ManualClock>(start);
  ASSERT_OK_AND_ASSIGN(auto store, OnClock(clock));
  const FilterOptions window = Window(4 * kHour, 4);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "w", window));
  const std::vector<std::string_view> items = {"a", "b", "c"};
  ASSERT_TRUE(f->AddMany(items).ok());
  const uint64_t slice = start / kHour;
  ASSERT_EQ(raw_->Int({"DEL", internal::PartKeysFor("w", internal::KeyMode::kPlain, slice).bitmap}),
            1);
  std::vector<uint8_t> present;
  for (int round = 0; round < 3; ++round) {
    // A new handle lists the parts before its first check; the old one
    // checks on.
    ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Open(*store, "w"));
    const Status checked = fresh->ContainsMany(items, &present);
    EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << round << ": " << checked.ToString();
    // An empty slice key is also what a client whose clock runs behind the
    // server's meets (the slice expired on time by the server's clock): the
    // message names that cause too, not eviction alone (an audit).
    EXPECT_NE(checked.message().find("clock runs behind"), std::string::npos) << checked.ToString();
    EXPECT_EQ(f->ContainsMany(items, &present).code(), StatusCode::kDataLoss) << round;
    EXPECT_EQ(fresh->Info().status().code(), StatusCode::kDataLoss) << round;
  }
  // Once the slice would have expired (one slice after it left the window),
  // it is forgotten like an expired one.
  clock->Advance(std::chrono::milliseconds((slice + 4 + 1) * kHour - start));
  ASSERT_OK_AND_ASSIGN(auto later, BloomFilter::Open(*store, "w"));
  ASSERT_TRUE(later->ContainsMany(items, &present).ok());
  ASSERT_OK_AND_ASSIGN(FilterInfo info, later->Info());
  EXPECT_EQ(info.parts, 0u);
}

// A slice whose key expired stays listed for a window more: a client whose
// clock runs behind the server's, to which the slice is still in its
// window, meets it listed and gone (data_loss, as when it is alone). A
// client on the server's time forgot it at its first listing, and the one
// behind then read its items absent (an audit: 32,300 of 111,920 checks
// through a redbloomd 5 s behind, with no error).
TEST_F(RedisStoreTest, AClientBehindMeetsAnExpiredSliceAsLostAfterOthersListedIt) {
  const FilterOptions window = Window(kHourMs, 4);
  const uint64_t now = HalfPastThisHour();
  auto behind_clock = std::make_shared<ManualClock>(now);
  ASSERT_OK_AND_ASSIGN(auto behind, OnClock(behind_clock));
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*behind, "lag", window));
  const auto items = Items(Encoding::kUtf8, 100);
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  // A later slice is the newest made, so the first is not guarded as such.
  behind_clock->Advance(std::chrono::milliseconds(kQuarterMs));
  ASSERT_TRUE(f->AddMany(Views(Items(Encoding::kUtf8, 10, 500))).ok());
  const uint64_t slice = now / kQuarterMs;
  const std::string field = std::to_string(slice);
  // The server's clock, ahead, expired the first slice's key.
  ASSERT_EQ(
      raw_->Int({"DEL", internal::PartKeysFor("lag", internal::KeyMode::kPlain, slice).bitmap}), 1);
  const uint64_t expiry = (slice + 4 + 1) * kQuarterMs;
  auto right_clock = std::make_shared<ManualClock>(expiry + 1);
  ASSERT_OK_AND_ASSIGN(auto right, OnClock(right_clock));
  {
    ASSERT_OK_AND_ASSIGN(auto g, BloomFilter::Open(*right, "lag"));
    ASSERT_TRUE(g->Info().ok());
  }
  EXPECT_EQ(raw_->Int({"HEXISTS", "{lag}/parts", field}), 1) << "forgotten at its expiry";

  std::vector<uint8_t> present;
  ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Open(*behind, "lag"));
  for (BloomFilter* h : {f.get(), fresh.get()}) {
    const Status checked = h->ContainsMany(Views(items), &present);
    EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << checked.ToString();
    EXPECT_NE(checked.message().find("clock runs behind"), std::string::npos) << checked.ToString();
  }
  // A window after its expiry, a listing forgets it.
  right_clock->Set(expiry + kHourMs);
  {
    ASSERT_OK_AND_ASSIGN(auto g, BloomFilter::Open(*right, "lag"));
    ASSERT_TRUE(g->Info().ok());
  }
  EXPECT_EQ(raw_->Int({"HEXISTS", "{lag}/parts", field}), 0) << "never forgotten";
}

// The parts list ({w}/parts, which has no TTL) deleted or evicted while a
// slice's key still holds its bits: every check answered absent (an
// audit: 11 of 40 window filters under allkeys-random eviction, exit 1
// for all their items), and the next add answered "not new". A slice key
// with bits that the list does not name is data_loss.
TEST_F(RedisStoreTest, AWindowWhosePartsListWasLostIsDataLossNotAbsent) {
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "w", Window(3'600'000, 6)));
  const auto items = Items(Encoding::kUtf8, 1000);
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  ASSERT_EQ(raw_->Int({"DEL", "{w}/parts"}), 1);
  std::vector<uint8_t> present;
  for (const bool fresh : {false, true}) {
    ASSERT_OK_AND_ASSIGN(auto g, BloomFilter::Open(*store_, "w"));
    BloomFilter& h = fresh ? *g : *f;
    const Status checked = h.ContainsMany(Views(items), &present);
    EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << fresh << ": " << checked.ToString();
    std::vector<std::string_view> one = {items[0]};
    EXPECT_EQ(h.ContainsMany(one, &present).code(), StatusCode::kDataLoss) << fresh;
  }
  // A drop takes the unlisted slice too, so the filter made again alike
  // works (its slice numbers are the same), and no key stays behind.
  ASSERT_TRUE(BloomFilter::Drop(*store_, "w").ok());
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
  ASSERT_OK_AND_ASSIGN(auto again, BloomFilter::Create(*store_, "w", Window(3'600'000, 6)));
  const Status checked = again->ContainsMany(Views(items), &present);
  ASSERT_TRUE(checked.ok()) << checked.ToString();
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 0);
}

// A check of a window's slices, or of a scaling filter's layers, is one
// transaction for all of them (up to batch_items tests of an item in a part
// each), not one per part: redis-server spent 5.2 ms per single-item check of
// a 1,024-slice window, most of it in each slice's MULTI, EXEC and metadata
// read. Answers stay the parts' own, and a part that fails its check fails
// the call with the connection still in step for the next one.
TEST_F(RedisStoreTest, AWindowCheckIsOneTransactionForAllItsSlices) {
  constexpr uint64_t kHour = 3'600'000;
  const uint64_t now = WallMillis() / kHour * kHour + kHour / 2;
  const auto multis = [&] { return CommandCalls(raw_->Str({"INFO", "commandstats"}), "multi"); };
  for (const size_t batch : {size_t{0}, size_t{5}}) {
    SCOPED_TRACE("batch_items " + std::to_string(batch));
    auto clock = std::make_shared<ManualClock>(now);
    StoreOptions options;
    options.clock = clock;
    ASSERT_OK_AND_ASSIGN(
        auto store,
        Store::Open(server_->url() + "?pool_size=1" +
                        (batch > 0 ? "&batch_items=" + std::to_string(batch) : std::string()),
                    options));
    const std::string name = "w24-" + std::to_string(batch);
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, name, Window(24 * kHour, 24)));
    for (uint64_t s = 0; s < 24; ++s) {
      clock->Set(now - s * kHour);
      ASSERT_TRUE(f->Add("in-" + std::to_string(s)).ok()) << s;
    }
    clock->Set(now);
    ASSERT_OK_AND_ASSIGN(FilterInfo info, f->Info());
    ASSERT_EQ(info.parts, 24u);
    const long per_check = batch == 0 ? 1 : (24 + 4) / 5;  // transactions of 5 tests at most
    for (uint64_t s = 0; s < 24; ++s) {
      const long before = multis();
      ASSERT_OK_AND_ASSIGN(const bool present, f->Contains("in-" + std::to_string(s)));
      EXPECT_TRUE(present) << s;
      EXPECT_EQ(multis() - before, per_check) << s;
    }
    const auto absent = Items(Encoding::kUtf8, 200, 7);
    std::vector<uint8_t> found;
    ASSERT_TRUE(f->ContainsMany(Views(absent), &found).ok());
    EXPECT_LT(std::count(found.begin(), found.end(), 1), 10);  // p = 1% over all slices
    // A scaling filter's layers alike.
    FilterOptions scaling = Options(100, 0.01);
    scaling.kind = FilterKind::kScaling;
    ASSERT_OK_AND_ASSIGN(auto g, BloomFilter::Create(*store, "layers-" + name, scaling));
    const auto items = Items(Encoding::kUtf8, 1000);
    ASSERT_TRUE(g->AddMany(Views(items)).ok());
    ASSERT_OK_AND_ASSIGN(FilterInfo layers, g->Info());
    ASSERT_GE(layers.parts, 3u);
    const long before = multis();
    ASSERT_OK_AND_ASSIGN(const bool present, g->Contains(items[0]));
    EXPECT_TRUE(present);
    EXPECT_EQ(multis() - before,
              batch == 0 ? 1 : static_cast<long>((layers.parts + batch - 1) / batch));
    // A slice lost while in the window fails the check that meets it,
    // whichever transaction holds it, and the one connection stays usable.
    ASSERT_EQ(
        raw_->Int(
            {"DEL",
             internal::PartKeysFor(name, internal::KeyMode::kPlain, now / kHour - 20).bitmap}),
        1);
    EXPECT_EQ(f->Contains("in-0").status().code(), StatusCode::kDataLoss);
    ASSERT_OK_AND_ASSIGN(const bool still, g->Contains(items[1]));
    EXPECT_TRUE(still);
  }
}

// A large batch goes to Redis in calls of the store's preferred size,
// shared by a window's slices. Bounded by the offsets a thread keeps
// (512 KiB), a call held 10 times fewer items, and a check of a 24-slice
// window sent 3.5 times the slice tests (HEXISTS: 1,944 against 552 here;
// the review measured 2.6-6 times the time). Counted by the server.
TEST_F(RedisStoreTest, AWindowsLargeCheckGoesInCallsOfThePreferredSize) {
  FilterOptions window = Window(86'400'000, 24);
  window.capacity = 1'000'000;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "wide", window));
  ASSERT_TRUE(f->AddMany(Views(Items(Encoding::kUtf8, 20'000))).ok());
  const auto hexists = [&] { return CommandCalls(raw_->Str({"INFO", "commandstats"}), "hexists"); };
  const long before = hexists();
  std::vector<uint8_t> found;
  ASSERT_TRUE(f->ContainsMany(Views(Items(Encoding::kUtf8, 20'000, 3)), &found).ok());
  EXPECT_LT(hexists() - before, 1000);
}

// A call to Redis carries up to 8 MiB of offsets, and gives back what it
// held beyond the 512 KiB a thread keeps: a 60,000-item add and check kept
// 1.3 MiB for good with calls cut to 512 KiB, several MiB with uncut calls
// before. (mallinfo2 reads nothing under the sanitizers.)
TEST_F(RedisStoreTest, ALargeBatchKeepsLittleScratch) {
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "scratch", Options(100'000, 0.01)));
  const auto items = Items(Encoding::kUtf8, 60'000);
  std::vector<uint8_t> added, present;
  const auto in_use = [] { return ::mallinfo2().uordblks + ::mallinfo2().hblkhd; };
  const size_t before = in_use();
  ASSERT_TRUE(f->AddMany(Views(items), &added).ok());
  ASSERT_TRUE(f->ContainsMany(Views(items), &present).ok());
  const size_t after = in_use();
  EXPECT_LT(after, before + (size_t{1} << 20)) << (after - before) / 1024 << " KiB kept";
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 60'000);
}

// A part's key of another type met while later transactions of the call
// are still on the wire: the message asked the server for the key's TYPE
// and read the next transaction's reply as the answer ("holds a OK, not a
// bitmap"). It says "a value of another type" then, and the connection
// stays in step for the next call.
TEST_F(RedisStoreTest, AWrongTypedPartMidPipelineIsNamedWithoutReadingAnotherReply) {
  auto store = MustOpen(server_->url() + "?batch_items=1&pool_size=1");
  ASSERT_NE(store, nullptr);
  FilterOptions scaling = Options(10, 0.01);
  scaling.kind = FilterKind::kScaling;
  scaling.expansion = 1;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "wt", scaling));
  const auto items = Items(Encoding::kUtf8, 50);
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  ASSERT_OK_AND_ASSIGN(FilterInfo info, f->Info());
  ASSERT_GE(info.parts, 3u);
  const std::string layer = internal::PartKeysFor("wt", internal::KeyMode::kPlain, 1).bitmap;
  ASSERT_EQ(raw_->Int({"DEL", layer}), 1);
  ASSERT_EQ(raw_->Int({"RPUSH", layer, "x"}), 1);
  const Status checked = f->Contains(items[0]).status();
  EXPECT_EQ(checked.code(), StatusCode::kConflict) << checked.ToString();
  EXPECT_NE(checked.message().find("not a bitmap"), std::string::npos) << checked.ToString();
  EXPECT_EQ(checked.message().find("holds a OK"), std::string::npos) << checked.ToString();
  // An add keeps two transactions in flight: the same.
  ASSERT_OK_AND_ASSIGN(auto plain, BloomFilter::Create(*store, "wa", Options(100, 0.01)));
  ASSERT_EQ(raw_->Int({"DEL", "wa"}), 1);
  ASSERT_EQ(raw_->Int({"RPUSH", "wa", "x"}), 1);
  std::vector<uint8_t> flags;
  const Status added = plain->AddMany(Views(items), &flags);
  EXPECT_EQ(added.code(), StatusCode::kConflict) << added.ToString();
  EXPECT_EQ(added.message().find("holds a OK"), std::string::npos) << added.ToString();
  // Alone on the wire, the key's type is named.
  const Status one = plain->Add("y");
  EXPECT_NE(one.message().find("list"), std::string::npos) << one.ToString();
  ASSERT_OK_AND_ASSIGN(auto other, BloomFilter::Create(*store, "wt-other", Options(100, 0.01)));
  ASSERT_TRUE(other->Add("y").ok());
  ASSERT_OK_AND_ASSIGN(const bool present, other->Contains("y"));
  EXPECT_TRUE(present);
}

// With short slices a slice's key expires a slice or two after a call read
// the time: one that was still listed when a check or an add's presence
// test read it, but whose key had expired by then, was reported as deleted
// (data_loss, HTTP 500; 119 of 200 adds in the audit with 10 ms slices). A
// listed slice whose key is gone within a second of its expiry is an expired
// one: it holds nothing.
TEST_F(RedisStoreTest, AShortWindowSliceThatExpiredDuringACallIsEmptyNotLost) {
  const uint64_t start = WallMillis();
  auto clock = std::make_shared<ManualClock>(start);
  ASSERT_OK_AND_ASSIGN(auto store, OnClock(clock));
  const FilterOptions window = Window(200, 20);  // 10 ms slices, the shortest
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "short", window));
  const std::vector<std::string_view> items = {"a", "b", "c"};
  ASSERT_TRUE(f->AddMany(items).ok());
  // The slice's key expired as Redis's clock would have it; the handle's
  // clock has not moved on (the call read it just before).
  ASSERT_EQ(
      raw_->Int(
          {"DEL", internal::PartKeysFor("short", internal::KeyMode::kPlain, start / 10).bitmap}),
      1);
  std::vector<uint8_t> present;
  const Status checked = f->ContainsMany(items, &present);
  ASSERT_TRUE(checked.ok()) << checked.ToString();
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 0);
  clock->Advance(std::chrono::milliseconds(10));  // the next slice
  std::vector<uint8_t> added;
  const Status add = f->AddMany(items, &added);
  ASSERT_TRUE(add.ok()) << add.ToString();
  EXPECT_EQ(std::count(added.begin(), added.end(), 1), 3);
}

// A scaling filter's layers are listed in TAG/parts, and its metadata counts
// those made. A list deleted or short of a field (by hand, or a key evicted)
// is data_loss for checks, adds and info: before, the layers it no longer
// named read as absent (3 of 4 items after the list was deleted), info
// described one layer, and the next add refilled layer 1 from a count of 0.
// A parts field past the 32 layers a chain can have is data_loss naming it,
// not resource_exhausted "reached its limit of 32 layers" (507 on every check).
TEST_F(RedisStoreTest, AStrayPartsFieldPastTheChainsLimitIsDataLossNamingIt) {
  FilterOptions scaling = Options(100, 0.01);
  scaling.kind = FilterKind::kScaling;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "sc", scaling));
  ASSERT_TRUE(f->AddMany(Views(Items(Encoding::kUtf8, 500))).ok());
  const std::string parts_key = internal::KeysFor("sc", internal::KeyMode::kPlain).parts;
  raw_->Run({"HSET", parts_key, "99", "1"});
  ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Open(*store_, "sc"));
  for (BloomFilter* h : {f.get(), fresh.get()}) {
    const auto check = h->Contains("x");
    EXPECT_EQ(check.status().code(), StatusCode::kDataLoss) << check.status().ToString();
    EXPECT_NE(check.status().message().find("lists a layer 99"), std::string::npos)
        << check.status().message();
  }
  raw_->Run({"HDEL", parts_key, "99"});
  EXPECT_TRUE(fresh->Contains("x").ok());
}

// A parts field under another spelling of a number ("01") is no name a
// script writes: every reader of the list calls it corrupt, where checks and
// adds read it as layer 1 and info called it data_loss; the message names
// the key and the field. A drop takes the filter with it: it refused too,
// and the filter could only be mended by hand.
TEST_F(RedisStoreTest, APartsFieldOfAnotherSpellingIsCorruptForEveryReader) {
  FilterOptions scaling = Options(100, 0.01);
  scaling.kind = FilterKind::kScaling;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "sc", scaling));
  ASSERT_TRUE(f->AddMany(Views(Items(Encoding::kUtf8, 500))).ok());
  const std::string parts_key = internal::KeysFor("sc", internal::KeyMode::kPlain).parts;
  raw_->Run({"HSET", parts_key, "01", "1"});
  ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Open(*store_, "sc"));
  const Status check = fresh->Contains("x").status();
  const Status add = fresh->Add("y");
  const Status info = fresh->Info().status();
  for (const Status& s : {check, add, info}) {
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
    EXPECT_NE(s.message().find("its parts list '" + parts_key + "' holds a field '01'"),
              std::string::npos)
        << s.ToString();
  }
  raw_->Run({"HDEL", parts_key, "01"});
  EXPECT_TRUE(fresh->Contains("x").ok());

  raw_->Run({"HSET", parts_key, "01", "1"});
  raw_->Run({"HSET", parts_key, "x", "1"});
  const Status dropped = store_->Drop("sc");
  EXPECT_TRUE(dropped.ok()) << dropped.ToString();
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0) << raw_->Run({"KEYS", "*"})->elements << " keys left";
  EXPECT_EQ(BloomFilter::Open(*store_, "sc").status().code(), StatusCode::kNotFound);
}

TEST_F(RedisStoreTest, AScalingFilterWhosePartsListLostALayerIsDataLoss) {
  FilterOptions scaling = Options(100, 0.01);
  scaling.kind = FilterKind::kScaling;
  const auto items = Items(Encoding::kUtf8, 500);
  const std::string parts_key = internal::KeysFor("sc", internal::KeyMode::kPlain).parts;
  for (const bool whole_list : {true, false}) {
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "sc", scaling));
    ASSERT_TRUE(f->AddMany(Views(items)).ok());
    ASSERT_OK_AND_ASSIGN(FilterInfo grown, f->Info());
    ASSERT_GE(grown.parts, 3u);
    if (whole_list) {
      ASSERT_EQ(raw_->Int({"DEL", parts_key}), 1);
    } else {
      ASSERT_EQ(raw_->Int({"HDEL", parts_key, std::to_string(grown.parts - 1)}), 1);
    }
    ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Open(*store_, "sc"));
    std::vector<uint8_t> present;
    for (BloomFilter* h : {f.get(), fresh.get()}) {
      const Status checked = h->ContainsMany(Views(items), &present);
      EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << whole_list << ": " << checked.ToString();
      EXPECT_NE(checked.message().find("has lost layer"), std::string::npos) << checked.message();
      EXPECT_EQ(h->Add("one more").code(), StatusCode::kDataLoss) << whole_list;
      EXPECT_EQ(h->Info().status().code(), StatusCode::kDataLoss) << whole_list;
    }
    ASSERT_TRUE(BloomFilter::Drop(*store_, "sc").ok());
  }
  // Another type under the list's key is a conflict that names the key (it
  // was "unexpected redis reply to HKEYS" [internal]).
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "sc", scaling));
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  raw_->Must({"SET", parts_key, "x"});
  std::vector<uint8_t> present;
  const Status wrong = f->ContainsMany(Views(items), &present);
  EXPECT_EQ(wrong.code(), StatusCode::kConflict) << wrong.ToString();
  EXPECT_NE(wrong.message().find(parts_key), std::string::npos) << wrong.message();
}

// A window's metadata records its newest slice. With the parts list and
// that slice both gone (allkeys eviction takes cold keys together, or a
// DEL by hand), every item read absent and info showed an empty filter: an
// audit. Until that slice's expiry it is data_loss, for checks, adds and
// info, through handles opened before and after.
TEST_F(RedisStoreTest, AWindowThatLostItsPartsListAndNewestSliceIsDataLoss) {
  FilterOptions window = Options(1000, 0.01);
  window.kind = FilterKind::kWindow;
  window.window_millis = 3600000;
  window.slices = 4;
  const auto items = Items(Encoding::kUtf8, 200);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "win", window));
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  const std::string parts_key = internal::KeysFor("win", internal::KeyMode::kPlain).parts;
  auto listed = raw_->Run({"HKEYS", parts_key});
  ASSERT_EQ(listed->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(listed->elements, 1u);
  const std::string slice =
      internal::PartKeysFor("win", internal::KeyMode::kPlain, std::stoull(listed->element[0]->str))
          .bitmap;
  ASSERT_EQ(raw_->Int({"DEL", parts_key, slice}), 2);
  ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Open(*store_, "win"));
  std::vector<uint8_t> present;
  for (BloomFilter* h : {fresh.get(), f.get()}) {
    const Status checked = h->ContainsMany(Views(items), &present);
    EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << checked.ToString();
    EXPECT_NE(checked.message().find("has lost"), std::string::npos) << checked.message();
    EXPECT_EQ(h->Info().status().code(), StatusCode::kDataLoss);
    EXPECT_EQ(h->Add("one more").code(), StatusCode::kDataLoss);
  }
  // In the next slice an add that asks for no answers (`add -q`, `load`)
  // reads no slice before it makes its own, which raised the record past the
  // lost slice: from then on it read absent (the review). Moving on from a
  // newest slice whose key is gone while it is in the window is data_loss.
  constexpr uint64_t kHour = 3'600'000;
  const uint64_t now = WallMillis() / kHour * kHour + kHour / 2;
  auto clock = std::make_shared<ManualClock>(now);
  StoreOptions options;
  options.clock = clock;
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(server_->url(), options));
  ASSERT_OK_AND_ASSIGN(auto g, BloomFilter::Create(*store, "win2", window));
  ASSERT_TRUE(g->AddMany(Views(items)).ok());
  const std::string parts2 = internal::KeysFor("win2", internal::KeyMode::kPlain).parts;
  const std::string slice2 =
      internal::PartKeysFor("win2", internal::KeyMode::kPlain, now / (kHour / 4)).bitmap;
  ASSERT_EQ(raw_->Int({"DEL", parts2, slice2}), 2);
  clock->Set(now + kHour / 4);
  const Status quiet = g->AddMany(Views(Items(Encoding::kUtf8, 10, 3)));
  EXPECT_EQ(quiet.code(), StatusCode::kDataLoss) << quiet.ToString();
  EXPECT_NE(quiet.message().find("has lost slice"), std::string::npos) << quiet.message();
  const Status checked = g->ContainsMany(Views(items), &present);
  EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << checked.ToString();
  // Once the lost slice has left the window, the filter goes on.
  clock->Set(now + 5 * kHour / 4);
  EXPECT_TRUE(g->AddMany(Views(Items(Encoding::kUtf8, 10, 3))).ok());
}

// The record is of the newest slice made: a client whose clock runs behind
// makes an older slice after it, which must not lower the record (mutation
// testing: with the older slice overwriting it, the newer slice's loss
// together with the parts list read as absent).
TEST_F(RedisStoreTest, AnOlderSliceMadeLaterKeepsTheNewestSliceRecord) {
  const FilterOptions window = Window(kHourMs, 4);
  const uint64_t now = HalfPastThisHour();
  ASSERT_OK_AND_ASSIGN(auto ahead, OnClock(std::make_shared<ManualClock>(now + kQuarterMs)));
  ASSERT_OK_AND_ASSIGN(auto behind, OnClock(std::make_shared<ManualClock>(now)));
  const auto items = Items(Encoding::kUtf8, 100);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*ahead, "win3", window));
  ASSERT_TRUE(f->AddMany(Views(items)).ok());  // slice (now + kQuarterMs) / kQuarterMs
  ASSERT_OK_AND_ASSIGN(auto g, BloomFilter::Open(*behind, "win3"));
  ASSERT_TRUE(g->AddMany(Views(Items(Encoding::kUtf8, 10, 5))).ok());  // slice now / kQuarterMs
  const uint64_t newest = (now + kQuarterMs) / kQuarterMs;
  const std::string meta = internal::KeysFor("win3", internal::KeyMode::kPlain).meta;
  EXPECT_EQ(raw_->Str({"HGET", meta, "newest_slice"}), std::to_string(newest));
  const std::string parts = internal::KeysFor("win3", internal::KeyMode::kPlain).parts;
  const std::string slice = internal::PartKeysFor("win3", internal::KeyMode::kPlain, newest).bitmap;
  ASSERT_EQ(raw_->Int({"DEL", parts, slice}), 2);
  ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Open(*ahead, "win3"));
  std::vector<uint8_t> present;
  const Status checked = fresh->ContainsMany(Views(items), &present);
  EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << checked.ToString();
}

// The loss of a window's parts list with its newest slice is found however
// many slices later the next add comes, while that slice is in the window:
// the oldest slice sure to be alive was looked for from one slice back
// only, and an add two slices later read the lost items absent.
TEST_F(RedisStoreTest, ALostNewestSliceIsFoundByAnAddSlicesLater) {
  const FilterOptions window = Window(kHourMs, 4);
  const uint64_t now = HalfPastThisHour();
  for (uint64_t later = 1; later <= 3; ++later) {
    auto clock = std::make_shared<ManualClock>(now);
    ASSERT_OK_AND_ASSIGN(auto store, OnClock(clock));
    const std::string name = "late" + std::to_string(later);
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, name, window));
    const auto items = Items(Encoding::kUtf8, 100);
    ASSERT_TRUE(f->AddMany(Views(items)).ok());
    const std::string parts = internal::KeysFor(name, internal::KeyMode::kPlain).parts;
    const std::string slice =
        internal::PartKeysFor(name, internal::KeyMode::kPlain, now / kQuarterMs).bitmap;
    ASSERT_EQ(raw_->Int({"DEL", parts, slice}), 2);
    clock->Set(now + later * kQuarterMs);  // the lost slice is still in the window
    const Status quiet = f->AddMany(Views(Items(Encoding::kUtf8, 10, 3)));
    EXPECT_EQ(quiet.code(), StatusCode::kDataLoss) << later << ": " << quiet.ToString();
    std::vector<uint8_t> present;
    const Status checked = f->ContainsMany(Views(items), &present);
    EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << later << ": " << checked.ToString();
  }
}

// A newest slice whose key is gone when it may have expired (a server whose
// clock runs ahead expires it first) is no loss: the filter moves on to its
// next slice (mutation testing: an off-by-one toward expired slices made
// that data_loss, and no test failed).
TEST_F(RedisStoreTest, ANewestSliceGoneWhenItMayHaveExpiredIsNoLoss) {
  const FilterOptions window = Window(kHourMs, 4);
  const uint64_t now = HalfPastThisHour();
  auto clock = std::make_shared<ManualClock>(now);
  ASSERT_OK_AND_ASSIGN(auto store, OnClock(clock));
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "win4", window));
  ASSERT_TRUE(f->AddMany(Views(Items(Encoding::kUtf8, 100))).ok());
  const std::string slice =
      internal::PartKeysFor("win4", internal::KeyMode::kPlain, now / kQuarterMs).bitmap;
  const long long expiry = raw_->Int({"PEXPIRETIME", slice});
  ASSERT_GT(expiry, 0);
  ASSERT_EQ(raw_->Int({"DEL", slice}), 1);
  // Inside the grace a slice's expiry is given (half a slice before it).
  clock->Set(static_cast<uint64_t>(expiry) - kQuarterMs / 2);
  const Status added = f->AddMany(Views(Items(Encoding::kUtf8, 10, 7)));
  EXPECT_TRUE(added.ok()) << added.ToString();
}

// An add cut short by the store keeps the answers of the transactions Redis
// confirmed before it failed: those items are in the filter, and dedup must
// print the new ones, since a second run finds them present. Before, the
// answers were dropped with the error (an audit's dedup lost 38,001 of
// 400,000 lines that way). Items past the transactions in flight were never
// sent. The fault is a CLIENT PAUSE once the call's first transaction has set
// bits; an attempt it misses (the call done first) is run again.
TEST_F(RedisStoreTest, AnAddCutShortKeepsTheAnswersRedisConfirmed) {
  auto store = MustOpen(server_->url() + "?command_timeout_ms=300&max_retries=0&batch_items=1000");
  ASSERT_NE(store, nullptr);
  const auto items = Items(Encoding::kUtf8, 300'000);
  bool cut_mid_way = false;
  for (int attempt = 0; attempt < 6 && !cut_mid_way; ++attempt) {
    const std::string name = "cut" + std::to_string(attempt);
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, name, Options(1'000'000, 0.001)));
    std::thread pause([&] {
      PauseWritesOnceBitsAppear(internal::KeysFor(name, internal::KeyMode::kPlain).bitmap, 1000);
    });
    std::vector<uint8_t> added;
    const Status s = f->AddMany(Views(items), &added);
    pause.join();
    raw_->Run({"CLIENT", "UNPAUSE"});
    if (s.ok() || added.empty()) continue;
    cut_mid_way = true;
    ASSERT_LT(added.size(), items.size()) << s.ToString();
    EXPECT_EQ(added.size() % 1000, 0u) << "answers come a transaction at a time";
    EXPECT_GE(std::count(added.begin(), added.end(), 1), static_cast<long>(added.size() * 99 / 100))
        << "distinct items into an empty filter are new";
    std::vector<uint8_t> present;
    ASSERT_TRUE(f->ContainsMany(Views(items), &present).ok());
    for (size_t i = 0; i < added.size(); ++i) ASSERT_EQ(present[i], 1) << "confirmed item " << i;
    const size_t unsent = added.size() + 2 * 1000;  // two transactions in flight
    size_t stray = 0;
    for (size_t i = unsent; i < items.size(); ++i) stray += present[i];
    EXPECT_LE(stray, (items.size() - unsent) / 100) << "items past those in flight were added";
  }
  EXPECT_TRUE(cut_mid_way) << "no attempt was cut after its first answer and before its last";
}

// An add whose WAIT (wait_replicas) lost its connection is sent again, on a
// new one, and its items' bits are then found set. The items the first
// attempt turned on were answered new then and stay new: before, the retry's
// answers replaced them, every item read "not new", and `dedup` dropped lines
// it had never printed. Small adds (one script) and batches both.
TEST_F(RedisStoreTest, AnAddSentAgainAfterItsWaitWasCutKeepsWhatWasNew) {
  RedisServer replica;
  replica.Start();
  replica.Cli({"REPLICAOF", "127.0.0.1", std::to_string(server_->port())});
  ASSERT_TRUE(replica.WaitForMasterLink());
  auto store = MustOpen(server_->url() + "?wait_replicas=1&wait_timeout_ms=20000");
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "w", Options(10000, 0.01)));
  for (size_t count : {size_t{3}, size_t{2000}}) {
    // The replica stops acknowledging, so WAIT blocks; the add's connection
    // is cut while it does, and the replica resumes for the retry's WAIT.
    ASSERT_EQ(::kill(replica.pid(), SIGSTOP), 0);
    std::thread cutter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      server_->Cli({"CLIENT", "KILL", "TYPE", "normal"});
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::kill(replica.pid(), SIGCONT);
    });
    const auto items = Items(Encoding::kUtf8, count, count);
    std::vector<uint8_t> added;
    Status s = f->AddMany(Views(items), &added);
    cutter.join();
    ASSERT_TRUE(s.ok()) << count << ": " << s.ToString();
    EXPECT_GE(static_cast<size_t>(std::count(added.begin(), added.end(), 1)), count * 99 / 100)
        << count << " items, all new, read as seen before";
  }
  replica.Stop();
}

// command_timeout_ms and connect_timeout_ms bound a whole reply, not each
// read: a server (or a path to it) that sends a byte every few milliseconds
// held a check for as long as its reply took (42 s for a byte per 100 ms in
// the audit, answered 200), and a connection's handshake for as long as its
// INFO reply took.
TEST_F(RedisStoreTest, AReplyThatTricklesInTimesOutWithinTheTimeout) {
  testing::SlowRelay relay(server_->port(), std::chrono::milliseconds(5));
  const std::string url = "redis://127.0.0.1:" + std::to_string(relay.port()) +
                          "?command_timeout_ms=300&connect_timeout_ms=300&max_retries=0";
  auto store = MustOpen(url);
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "trickle", Options(1000, 0.01)));
  ASSERT_TRUE(f->Add("x").ok());
  relay.Trickle(true);
  const Status checked = f->Contains("x").status();  // EXEC's reply: about 150 bytes
  EXPECT_EQ(checked.code(), StatusCode::kDeadlineExceeded) << checked.ToString();
  const Status opened = Store::Open(url).status();  // INFO server: about 1,500 bytes
  EXPECT_EQ(opened.code(), StatusCode::kUnavailable) << opened.ToString();
  EXPECT_NE(opened.message().find("connect_timeout_ms"), std::string::npos) << opened.ToString();
}

// A server that takes the TCP connection but answers nothing (stopped, or
// stalled) is named so: it was "cannot connect to redis ... within 300 ms",
// which sent the reader to the network while the connection was made.
TEST_F(RedisStoreTest, AStalledServerIsToldApartFromAnUnreachableOne) {
  RedisServer stalled;
  stalled.Start();
  const std::string url = stalled.url() +
                          (stalled.url().find('?') == std::string::npos ? "?" : "&") +
                          "connect_timeout_ms=300&max_retries=0";
  ASSERT_EQ(::kill(stalled.pid(), SIGSTOP), 0);
  const Status opened = Store::Open(url).status();
  ::kill(stalled.pid(), SIGCONT);
  EXPECT_EQ(opened.code(), StatusCode::kUnavailable) << opened.ToString();
  EXPECT_NE(opened.message().find("connected to redis 127.0.0.1:"), std::string::npos)
      << opened.ToString();
  EXPECT_NE(opened.message().find("did not answer within 300 ms (connect_timeout_ms)"),
            std::string::npos)
      << opened.ToString();
  EXPECT_EQ(opened.message().find("cannot connect"), std::string::npos) << opened.ToString();
  stalled.Stop();
}

// A call to a stalled server waits connect_timeout once, as its error says:
// the retries meant for a lost connection each waited as long again, so
// every redbloomd request and /readyz probe took three times the timeout
// (6.1 s at the defaults). The server counts the connections it is offered
// once it resumes: one attempt, not max_retries + 1.
TEST_F(RedisStoreTest, AStalledServerIsWaitedForOnceNotOncePerRetry) {
  RedisServer stalled;
  stalled.Start();
  const std::string url = stalled.url() +
                          (stalled.url().find('?') == std::string::npos ? "?" : "&") +
                          "connect_timeout_ms=300&max_retries=2&pool_size=1";
  auto store = MustOpen(url);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "f", Options()));
  RawRedis raw(stalled.port());
  // The pooled connection goes, so the call must connect again.
  ASSERT_EQ(raw.Int({"CLIENT", "KILL", "TYPE", "normal"}), 1);
  const auto offered = [&] {
    return std::stoll(
        internal::InfoField(raw.Str({"INFO", "stats"}), "total_connections_received"));
  };
  const long long before = offered();
  ASSERT_EQ(::kill(stalled.pid(), SIGSTOP), 0);
  const Status checked = f->Contains("x").status();
  ::kill(stalled.pid(), SIGCONT);
  EXPECT_EQ(checked.code(), StatusCode::kUnavailable) << checked.ToString();
  EXPECT_NE(checked.message().find("did not answer within 300 ms"), std::string::npos)
      << checked.ToString();
  // The resumed server accepts what the kernel queued for it meanwhile.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(offered() - before, 1);
  stalled.Stop();
}

// The timeout bounds a whole send too: a server, or a path to it, that reads
// a little at a time (4 KiB every 20 ms through a relay) let every write()
// make progress within the timeout, and held a large batch's send for as
// long as it took (this batch of about 10 MB: 35 s, where 300 ms was due).
TEST_F(RedisStoreTest, ASendThatCrawlsOutTimesOutWithinTheTimeout) {
  testing::SlowRelay relay(server_->port(), std::chrono::milliseconds(20), /*client_buffer=*/4096);
  const std::string url = "redis://127.0.0.1:" + std::to_string(relay.port()) +
                          "?command_timeout_ms=300&max_retries=0&batch_items=40000";
  auto store = MustOpen(url);
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "crawl", Options(40000, 0.01)));
  relay.Throttle(true);
  const auto items = Items(Encoding::kUtf8, 40000);
  const auto start = std::chrono::steady_clock::now();
  const Status added = f->AddMany(Views(items));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(added.code(), StatusCode::kDeadlineExceeded) << added.ToString();
  // What is asserted is the deadline, with room for a loaded machine.
  EXPECT_LT(took, std::chrono::seconds(10))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
}

// A plain redis:// URL aimed at a replica that accepts writes (replica-read-
// only no) is refused when it connects: adds there would land on the replica
// only and vanish at its next resync. Before, they were acknowledged and the
// master never saw them. A read-only replica still serves checks.
TEST_F(RedisStoreTest, AWritableReplicaIsRefusedAndAReadOnlyOneServesChecks) {
  RedisServer replica({"--replica-read-only", "no"});
  replica.Start();
  server_->Cli({"CONFIG", "SET", "repl-diskless-sync-delay", "0"});  // not the default 5 s
  replica.Cli({"REPLICAOF", "127.0.0.1", std::to_string(server_->port())});
  ASSERT_TRUE(replica.WaitForMasterLink());
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "rep", Options(1000, 0.01)));
  ASSERT_TRUE(f->Add("on-master").ok());
  const Status opened = Store::Open(replica.url()).status();
  EXPECT_EQ(opened.code(), StatusCode::kUnavailable) << opened.ToString();
  EXPECT_NE(opened.message().find("replica that accepts writes"), std::string::npos)
      << opened.ToString();
  replica.Cli({"CONFIG", "SET", "replica-read-only", "yes"});
  for (int i = 0; i < 200 && replica.Cli({"EXISTS", "rep"}).find('1') == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto store = MustOpen(replica.url());
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto on_replica, BloomFilter::Open(*store, "rep"));
  ASSERT_OK_AND_ASSIGN(const bool present, on_replica->Contains("on-master"));
  EXPECT_TRUE(present);
  EXPECT_EQ(on_replica->Add("on-replica").code(), StatusCode::kUnavailable);
  replica.Stop();
}

// An add whose answer a lost connection took may have run: sent again, it
// answers "not new" for every item it added, and dedup dropped lines it never
// printed (exit 0; 2,000 of 5,000 in the audit). With answers wanted it is
// not sent again: unavailable, reason kAnswersLost. Without answers it is sent
// again, as before, and every item is present. The connection is lost after
// the transaction ran: its reply (BITFIELD's 7,000 answers, 28 kB) passes
// the client output buffer limit, and Redis closes the connection.
TEST_F(RedisStoreTest, AnAddWhoseAnswerWasLostIsSentAgainOnlyWhenNoAnswersAreWanted) {
  auto store = MustOpen(server_->url() + "?batch_items=1000&max_retries=8");
  ASSERT_NE(store, nullptr);
  struct Restore {
    RawRedis* raw;
    ~Restore() { raw->Run({"CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0"}); }
  } restore{raw_.get()};
  for (const bool want_answers : {true, false}) {
    SCOPED_TRACE(want_answers ? "answers wanted" : "no answers");
    const std::string name = want_answers ? "lost-answers" : "lost-none";
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, name, Options(20000, 0.01)));
    const auto items = Items(Encoding::kUtf8, 1000);
    raw_->Must({"CONFIG", "SET", "client-output-buffer-limit", "normal 4096 0 0"});
    // Lifted once the first attempt's bits are in, so a retry goes through.
    std::thread lift([&] {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (raw_->Int({"BITCOUNT", name}) == 0 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      raw_->Must({"CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0"});
    });
    std::vector<uint8_t> added;
    const Status s = f->AddMany(Views(items), want_answers ? &added : nullptr);
    lift.join();
    if (want_answers) {
      EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
      EXPECT_EQ(s.reason(), StatusReason::kAnswersLost) << s.ToString();
      EXPECT_TRUE(added.empty()) << "no chunk was answered";
    } else {
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    std::vector<uint8_t> present;
    ASSERT_TRUE(f->ContainsMany(Views(items), &present).ok());
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), 1000) << "the lost attempt ran";
  }
}

// A window slice or a scaling layer never outlives its filter: its key
// expires with the filter's TTL at the latest. Uncapped, a slice of a filter
// that had expired stayed in Redis for up to a window more (an hour here),
// memory nothing could reach.
TEST_F(RedisStoreTest, APartExpiresWithItsFilterAtTheLatest) {
  FilterOptions window = Options(1000, 0.01);
  window.kind = FilterKind::kWindow;
  window.window_millis = 3'600'000;
  window.slices = 2;
  FilterOptions scaling = Options(100, 0.01);
  scaling.kind = FilterKind::kScaling;
  for (FilterOptions o : {window, scaling}) {
    o.ttl_seconds = 60;
    const std::string name = o.kind == FilterKind::kWindow ? "short-window" : "short-scaling";
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, name, o));
    ASSERT_TRUE(f->AddMany(Views(Items(Encoding::kUtf8, 300))).ok());
    ASSERT_GE(f->Info()->parts, o.kind == FilterKind::kWindow ? 1u : 2u) << name;
    const auto keys = raw_->Run({"KEYS", "*" + name + "*"});
    ASSERT_GE(keys->elements, 3u) << name;
    for (size_t i = 0; i < keys->elements; ++i) {
      const std::string key(keys->element[i]->str, keys->element[i]->len);
      const long long ttl = raw_->Int({"PTTL", key});
      EXPECT_GT(ttl, 0) << key;
      EXPECT_LE(ttl, 60'000) << key << " outlives its filter";
    }
  }
}

// A create, or a counting add or remove, whose answer a lost connection took
// has run: none is sent again. Sent again, a create would answer "exists"
// for the filter it made, a counting add would count its items twice (one
// remove would leave them present), and a remove would take away another
// add of its items. Each fails unavailable, having run once. (A plain add is
// sent again: see the test above.)
TEST_F(RedisStoreTest, ACreateOrACountingWriteWhoseAnswerWasLostIsNotSentAgain) {
  testing::SlowRelay relay(server_->port(), std::chrono::milliseconds(0));
  auto via = MustOpen("redis://127.0.0.1:" + std::to_string(relay.port()) + "?max_retries=8");
  ASSERT_NE(via, nullptr);
  FilterOptions o = Options(1000, 0.01);
  o.kind = FilterKind::kCounting;
  ASSERT_TRUE(BloomFilter::Create(*via, "warm", o).ok());
  relay.DropReplyOnce("$4\r\nEVAL\r\n");
  auto created = BloomFilter::Create(*via, "lost-answer", o);
  ASSERT_TRUE(relay.dropped());
  EXPECT_EQ(created.status().code(), StatusCode::kUnavailable) << created.status().ToString();
  ASSERT_OK_AND_ASSIGN(auto direct, BloomFilter::Open(*store_, "lost-answer"));

  // One item goes in the small add script; ten (70 offsets), a transaction.
  const auto items = Items(Encoding::kUtf8, 11);
  const std::vector<std::string_view> one = {items[0]};
  const std::vector<std::string_view> ten(items.begin() + 1, items.end());
  for (const auto& [batch, text] : {std::pair{one, "$4\r\nEVAL\r\n"}, {ten, "$4\r\nEXEC\r\n"}}) {
    SCOPED_TRACE(batch.size());
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*via, "lost-answer"));
    ASSERT_NO_FATAL_FAILURE(testing::ExpectALostAddRanOnce(relay, *f, *direct, batch, text));
  }

  // Added twice, removed once through a lost answer: still present.
  const std::vector<std::string_view> all(items.begin(), items.end());
  ASSERT_TRUE(direct->AddMany(all).ok());
  ASSERT_TRUE(direct->AddMany(all).ok());
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*via, "lost-answer"));
  std::vector<uint8_t> present;
  ASSERT_TRUE(f->ContainsMany(all, &present).ok());
  relay.DropReplyOnce("$4\r\nEVAL\r\n");
  const Status removed = f->RemoveMany(all, nullptr);
  ASSERT_TRUE(relay.dropped());
  EXPECT_EQ(removed.code(), StatusCode::kUnavailable) << removed.ToString();
  ASSERT_TRUE(direct->ContainsMany(all, &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 11) << "a remove ran twice";
}

// An add whose WAIT (wait_replicas) finds too few replicas confirms none of
// its items, whatever its size: the answers a failed add keeps are those of
// items the store confirmed. A batch larger than one script kept every
// answer read before the WAIT, so the CLI printed all its items as added
// (and dedup printed them) while saying they were not replicated.
TEST_F(RedisStoreTest, AnAddNoReplicaConfirmedKeepsNoAnswers) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "w", Options(100000, 0.01)).ok());
  auto waiting = MustOpen(server_->url() + "?wait_replicas=1&wait_timeout_ms=50");
  ASSERT_NE(waiting, nullptr);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*waiting, "w"));
  for (const size_t n : {size_t{2}, size_t{500}, size_t{5000}}) {
    const auto items = Items(Encoding::kUtf8, n, n);
    std::vector<uint8_t> answers;
    Status s = f->AddMany(Views(items), &answers);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << n << ": " << s.ToString();
    EXPECT_EQ(s.reason(), StatusReason::kNotReplicated) << s.ToString();
    EXPECT_TRUE(answers.empty()) << n << " items: " << answers.size() << " answers kept";
  }
}

// A WAIT longer than the command timeout is waited for: the read gave up at
// command_timeout_ms and answered deadline_exceeded (HTTP 504, not retried)
// for what is not_replicated (an audit).
TEST_F(RedisStoreTest, AWaitLongerThanTheCommandTimeoutIsWaitedFor) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "slow-wait", Options(1000, 0.01)).ok());
  auto waiting =
      MustOpen(server_->url() + "?wait_replicas=1&wait_timeout_ms=1500&command_timeout_ms=300");
  ASSERT_NE(waiting, nullptr);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*waiting, "slow-wait"));
  const Status s = f->Add("x");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.reason(), StatusReason::kNotReplicated) << s.ToString();
  FilterOptions o = Options(1000, 0.01);
  const Status made = BloomFilter::Create(*waiting, "slow-wait-2", o).status();
  EXPECT_EQ(made.reason(), StatusReason::kNotReplicated) << made.ToString();
}

// A bulk merge whose connection is lost part way is run again from its first
// piece: what the old connection merged may never have reached a replica
// promoted since. (A cursor of merged pieces, kept for a Cluster migration's
// redirects, once skipped them on every retry.) The fault stands for such a
// failover: the first piece's bits go in the same transaction that kills
// the connection.
TEST_F(RedisStoreTest, AMergeRetriedAfterALostConnectionSendsEveryPieceAgain) {
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "lost-merge",
                                                   FilterOptions{.capacity = 30'000'000,
                                                                 .error_rate = 0.01,
                                                                 .strategy = Strategy::kGuava64}));
  const size_t bytes = f->config().data_bytes();
  ASSERT_GT(bytes, size_t{16} << 20) << "the test needs many pieces";
  std::string bitmap(bytes, '\0');
  for (size_t i = 0; i < bytes; i += 4096) bitmap[i] = '\x21';
  RawRedis raw(server_->port());
  Status merged;
  std::atomic<bool> done{false};
  std::thread merge([&] {
    merged = f->OrBitmap(bitmap, 0);
    done = true;
  });
  while (!done && raw.Int({"BITCOUNT", "lost-merge", "0", "0"}) == 0) {
  }
  raw.Must({"MULTI"});
  raw.Run({"BITCOUNT", "lost-merge", "-1", "-1"});
  raw.Run({"SETRANGE", "lost-merge", "0", std::string(size_t{1} << 20, '\0')});
  raw.Run({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  const auto exec = raw.Run({"EXEC"});
  merge.join();
  ASSERT_EQ(exec->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(exec->elements, 3u);
  ASSERT_EQ(exec->element[0]->integer, 0) << "the merge ended before the fault: make it larger";
  ASSERT_GT(exec->element[2]->integer, 0) << "no connection was killed";
  ASSERT_TRUE(merged.ok()) << merged.ToString();
  std::string back;
  ASSERT_TRUE(f->ReadBitmap(&back).ok());
  ASSERT_EQ(back.size(), bitmap.size());
  EXPECT_TRUE(back == bitmap) << "pieces merged before the lost connection were not sent again";
}

// A sharded create that fails part-way (here WAIT finds no replica) can be
// repeated, as the README says of every write that fails so: the repeat
// finishes the filter with the first create's token and expiry, and leaves a
// shard that create already placed as it is. It once left the filter "being
// created" until someone dropped it.
TEST_F(RedisStoreTest, AShardedCreateThatStoppedPartWayIsFinishedByRepeatingIt) {
  FilterOptions o = Options(4000, 0.01);
  o.shards = 4;
  auto waiting = MustOpen(server_->url() + "?wait_replicas=1&wait_timeout_ms=50");
  ASSERT_NE(waiting, nullptr);
  auto failed = BloomFilter::Create(*waiting, "spread", o);
  ASSERT_EQ(failed.status().code(), StatusCode::kUnavailable) << failed.status().ToString();
  // Shard 1 was placed before its WAIT failed; the server's other shards
  // were not tried (each would have waited as long).
  const auto placed = internal::ShardKeysFor("spread", internal::KeyMode::kPlain, 1, 4);
  ASSERT_EQ(raw_->Int({"EXISTS", placed.bitmap}), 1) << "the shard was placed before WAIT";
  const auto untried = internal::ShardKeysFor("spread", internal::KeyMode::kPlain, 3, 4);
  EXPECT_EQ(raw_->Int({"EXISTS", untried.bitmap}), 0);
  EXPECT_EQ(raw_->Str({"HGET", "{spread}:meta", "shards_ready"}), "0");
  // A bit set in a placed shard stands for adds: a repeat must not empty it.
  ASSERT_EQ(raw_->Int({"SETBIT", placed.bitmap, "7", "1"}), 0);
  // Other parameters are still a conflict, and finish nothing.
  FilterOptions other = o;
  other.capacity = 5000;
  EXPECT_EQ(BloomFilter::Create(*store_, "spread", other).status().code(), StatusCode::kConflict);
  EXPECT_EQ(raw_->Str({"HGET", "{spread}:meta", "shards_ready"}), "0");

  bool created = false;
  auto again = BloomFilter::Create(*store_, "spread", o, &created);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(created) << "the repeat made the filter";
  EXPECT_EQ(raw_->Str({"HGET", "{spread}:meta", "shards_ready"}), "1");
  EXPECT_EQ(raw_->Int({"GETBIT", placed.bitmap, "7"}), 1) << "a placed shard was emptied";
  const auto items = Items(Encoding::kUtf8, 300);
  ASSERT_TRUE((*again)->AddMany(Views(items)).ok());
  std::vector<uint8_t> present;
  ASSERT_TRUE((*again)->ContainsMany(Views(items), &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 300);
  ASSERT_OK_AND_ASSIGN(const FilterInfo info, (*again)->Info());
  EXPECT_EQ(info.parts, 4u);
  // Once finished, a create is an ordinary "exists" again.
  bool created_twice = true;
  ASSERT_TRUE(BloomFilter::Create(*store_, "spread", o, &created_twice).ok());
  EXPECT_FALSE(created_twice);
  ASSERT_TRUE((*again)->ContainsMany(Views(items), &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 300);
}

// An import or merge that meets a sharded filter whose create was cut
// short waited 3 s and failed "being created: repeat it, with the same
// parameters", which a user of import may not know (an audit). They finish
// it, as a repeated create does, when their parameters are its own.
TEST_F(RedisStoreTest, AnImportOrMergeFinishesAShardedCreateCutShort) {
  FilterOptions o = Options(4000, 0.01);
  o.shards = 4;
  ASSERT_OK_AND_ASSIGN(auto whole, BloomFilter::Create(*store_, "whole", o));
  const auto items = Items(Encoding::kUtf8, 300);
  ASSERT_TRUE(whole->AddMany(Views(items)).ok());
  std::stringstream dump;
  ASSERT_TRUE(ExportDump(*whole, dump).ok());
  auto waiting = MustOpen(server_->url() + "?wait_replicas=1&wait_timeout_ms=50");
  ASSERT_NE(waiting, nullptr);
  for (const std::string name : {"imported", "merged"}) {
    ASSERT_EQ(BloomFilter::Create(*waiting, name, o).status().code(), StatusCode::kUnavailable);
    ASSERT_EQ(raw_->Str({"HGET", "{" + name + "}:meta", "shards_ready"}), "0") << name;
  }
  auto imported = ImportDump(*store_, "imported", dump);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const std::vector<std::string> sources = {"whole"};
  const Status merged = Merge(*store_, "merged", sources);
  ASSERT_TRUE(merged.ok()) << merged.ToString();
  for (const std::string name : {"imported", "merged"}) {
    EXPECT_EQ(raw_->Str({"HGET", "{" + name + "}:meta", "shards_ready"}), "1") << name;
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*store_, name));
    std::vector<uint8_t> present;
    ASSERT_TRUE(f->ContainsMany(Views(items), &present).ok()) << name;
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), 300) << name;
  }
}

// A sharded filter's item is checked in one shard, so its rate is the
// shards' mean; info combined them as it does a scaling filter's layers
// (any of which may answer) and said 3.8% for 4 shards measuring 0.96%, 13%
// for 16 (an audit), which would set off alerts and needless rebuilds.
TEST_F(RedisStoreTest, AShardedFiltersCurrentRateIsItsShardsMean) {
  FilterOptions o = Options(20000, 0.01);
  o.shards = 4;
  o.strategy = Strategy::kGuava64;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "rate", o));
  ASSERT_TRUE(f->AddMany(Views(Items(Encoding::kUtf8, 20000))).ok());
  ASSERT_OK_AND_ASSIGN(const FilterInfo info, f->Info());
  EXPECT_GT(info.current_fpp, 0.005);
  EXPECT_LT(info.current_fpp, 0.015) << "4 shards filled to capacity at 0.01";
}

// A shard whose keys are gone (deleted, or lost with a master that failed
// over before its replica had them): every call that needs the shard is an
// error, and info does not describe a smaller filter. (Info once skipped it
// as it skips a window slice that expires while it reads, and reported 14
// parts of 16.)
TEST_F(RedisStoreTest, ALostShardIsAnErrorNeverASmallerFilter) {
  FilterOptions o = Options(4000, 0.01);
  o.shards = 4;
  auto f = BloomFilter::Create(*store_, "spread", o);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto items = Items(Encoding::kUtf8, 200);
  ASSERT_TRUE((*f)->AddMany(Views(items)).ok());
  ASSERT_OK_AND_ASSIGN(const FilterInfo before, (*f)->Info());
  ASSERT_EQ(before.parts, 4u);
  const auto lost = internal::ShardKeysFor("spread", internal::KeyMode::kPlain, 2, 4);
  ASSERT_EQ(raw_->Int({"DEL", lost.bitmap, lost.meta}), 2);

  const auto info = (*f)->Info();
  EXPECT_EQ(info.status().code(), StatusCode::kDataLoss)
      << (info.ok() ? std::to_string(info->parts) + " parts" : info.status().ToString());
  if (!info.ok()) {
    EXPECT_NE(info.status().message().find("part 2"), std::string::npos) << info.status().message();
  }
  std::vector<uint8_t> present(3, 1);
  const Status check = (*f)->ContainsMany(Views(items), &present);
  EXPECT_EQ(check.code(), StatusCode::kDataLoss) << "never \"absent\": " << check.ToString();
  EXPECT_TRUE(present.empty());
  const Status add = (*f)->AddMany(Views(items));
  EXPECT_EQ(add.code(), StatusCode::kDataLoss) << add.ToString();
  // Dropping what is left still works, and the filter is then not found.
  EXPECT_TRUE(store_->Drop("spread").ok());
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
  EXPECT_EQ((*f)->Info().status().code(), StatusCode::kNotFound);
}

// A drop of `name` by a second client, through a TCP relay that holds back
// its first command holding `hold` (see SlowRelay::HoldOnce). Finish()
// releases it and waits for its answer; destruction does too, when an
// assertion returned early.
class HeldDrop {
 public:
  HeldDrop(int server_port, std::string name, std::string hold)
      : relay_(server_port, std::chrono::milliseconds(0)) {
    dropper_ = MustOpen("redis://127.0.0.1:" + std::to_string(relay_.port()));
    if (dropper_ == nullptr) return;
    relay_.HoldOnce(std::move(hold));
    thread_ = std::thread([this, name] { dropped_ = dropper_->Drop(name); });
    for (int i = 0; i < 500 && !relay_.holding(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~HeldDrop() { (void)Finish(); }
  bool holding() const { return relay_.holding(); }
  Status Finish() {
    relay_.Release();
    if (thread_.joinable()) thread_.join();
    return dropped_;
  }

 private:
  testing::SlowRelay relay_;
  std::unique_ptr<Store> dropper_;
  std::thread thread_;
  Status dropped_ = Status::Internal("not run");
};

// A drop of a sharded filter removes its metadata, then its shards, one
// script per shard. A create of the same name (another client) that ran in
// between had its new shards unlinked by the old drop: it was answered
// created, its adds were acknowledged, and every call then failed data_loss
// ("a part it has from creation on is missing") until someone dropped it (an
// audit's race: 3 of 40). A drop now removes only its own filter's shards.
TEST_F(RedisStoreTest, ADropLeavesTheShardsOfAFilterMadeAgainMeanwhile) {
  FilterOptions o = Options(4000, 0.01);
  o.shards = 4;
  ASSERT_TRUE(BloomFilter::Create(*store_, "again", o).ok());
  // The drop's first shard step waits at the relay, after the metadata went.
  HeldDrop drop(server_->port(), "again",
                internal::ShardKeysFor("again", internal::KeyMode::kPlain, 1, 4).meta);
  ASSERT_TRUE(drop.holding()) << "the drop never reached its shards";
  ASSERT_EQ(raw_->Int({"EXISTS", "{again}:meta"}), 0) << "the metadata goes first";
  auto made = BloomFilter::Create(*store_, "again", o);
  const auto items = Items(Encoding::kUtf8, 400);
  const Status added = made.ok() ? (*made)->AddMany(Views(items)) : made.status();
  const Status dropped = drop.Finish();
  ASSERT_TRUE(added.ok()) << added.ToString();
  EXPECT_TRUE(dropped.ok()) << dropped.ToString();
  std::vector<uint8_t> present;
  const Status check = (*made)->ContainsMany(Views(items), &present);
  ASSERT_TRUE(check.ok()) << "the filter made again lost shards: " << check.ToString();
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 400);
  // Its own drop still removes every shard.
  ASSERT_TRUE(store_->Drop("again").ok());
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
}

// A drop reads the filter's metadata (its shard count and token), then
// removes the metadata, then the shards of that token. Another client that
// dropped and made the filter again between the first two steps had its new
// metadata removed by the old drop, and its shards (another token) kept for
// good, read by no one. The metadata step now checks the token, and the drop
// reads again: it removes the filter made meanwhile whole.
TEST_F(RedisStoreTest, ADropOfAFilterMadeAgainSinceItReadItRemovesThatFilterWhole) {
  FilterOptions o = Options(4000, 0.01);
  o.shards = 4;
  ASSERT_TRUE(BloomFilter::Create(*store_, "twice", o).ok());
  // The drop's metadata step (it begins by asking the strategy, for a
  // companion key) waits at the relay, after the drop read the metadata.
  HeldDrop drop(server_->port(), "twice", "strategy");
  ASSERT_TRUE(drop.holding()) << "the drop never reached its metadata step";
  ASSERT_TRUE(store_->Drop("twice").ok());
  auto made = BloomFilter::Create(*store_, "twice", o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  ASSERT_TRUE((*made)->AddMany(Views(Items(Encoding::kUtf8, 100))).ok());
  const Status dropped = drop.Finish();
  EXPECT_TRUE(dropped.ok()) << dropped.ToString();
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0) << "shards of the filter made again were left behind";
  EXPECT_EQ((*made)->Info().status().code(), StatusCode::kNotFound);
}

// A batch add moves the bitmap to a scratch key, writes it there and moves
// it back in a commit script. A commit that failed (a permission revoked
// between the two, a script killed, OOM) left the bitmap at the scratch key,
// and the next add's guard deleted it as a leftover: every item added so far
// was gone for good (an audit, with a writer lacking +type: 5000 of 5000).
// The guard now puts it back.
TEST_F(RedisStoreTest, ABitmapAFailedCommitLeftBehindIsPutBackByTheNextAdd) {
  // The next add a batch, then a single item (its own script), then a remove.
  for (const int next : {40, 1, 0}) {
    const bool counting = next == 0;
    const std::string name = "stranded-" + std::to_string(next);
    FilterOptions o = Options(10000, 0.01);
    if (counting) o.kind = FilterKind::kCounting;
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, name, o));
    const auto before = Items(Encoding::kUtf8, 2000);
    ASSERT_TRUE(f->AddMany(Views(before)).ok());
    // Where a commit that failed leaves it.
    const internal::FilterKeys keys = internal::KeysFor(name, internal::KeyMode::kPlain);
    ASSERT_EQ(raw_->Str({"RENAME", keys.bitmap, keys.scratch}), "OK");
    std::vector<std::string> after;
    for (int i = 0; i < next; ++i) after.push_back("after-" + std::to_string(i));
    const Status written = counting ? f->Remove(before.back()) : f->AddMany(Views(after));
    ASSERT_TRUE(written.ok()) << name << ": " << written.ToString();
    EXPECT_EQ(raw_->Int({"EXISTS", keys.scratch}), 0) << name;
    std::vector<uint8_t> present;
    ASSERT_TRUE(f->ContainsMany(Views(before), &present).ok()) << name;
    EXPECT_GE(std::count(present.begin(), present.end(), 1), 1999) << name;
    ASSERT_TRUE(f->ContainsMany(Views(after), &present).ok()) << name;
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), next) << name;
  }
  // A drop takes a bitmap left there too.
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "stranded-drop", Options(1000, 0.01)));
  const internal::FilterKeys keys = internal::KeysFor("stranded-drop", internal::KeyMode::kPlain);
  ASSERT_EQ(raw_->Str({"RENAME", keys.bitmap, keys.scratch}), "OK");
  ASSERT_TRUE(store_->Drop("stranded-drop").ok());
  EXPECT_EQ(raw_->Int({"EXISTS", keys.scratch}), 0) << "a drop left the scratch key";
}

// The swap's script checks again what Replace checked before it, in the
// same step as the swap: a filter dropped and re-created as a sharded one
// in between is not replaced (its other shards would be orphaned), and
// nothing moves; nor is one dropped since (a rebuild must not bring back a
// filter dropped while it ran: it was swapped in, stop 43).
TEST_F(RedisStoreTest, TheReplaceScriptRefusesAFilterReCreatedSinceTheCheck) {
  FilterOptions o = Options(4000, 0.01);
  o.shards = 4;
  ASSERT_TRUE(BloomFilter::Create(*store_, "x", o).ok());
  ASSERT_TRUE(store_->Create("y", Config()).ok());
  const auto x = internal::KeysFor("x", internal::KeyMode::kPlain);
  const auto y = internal::KeysFor("y", internal::KeyMode::kPlain);
  // As Replace sends it once it has found "x" a plain filter, or no filter.
  auto swap = [&](const std::string& kind) {
    return raw_->Run({"EVAL", std::string(internal::scripts::kReplace), "5", x.meta, x.bitmap,
                      x.parts, y.meta, y.bitmap, "x", "y", kind, "1"});
  };
  for (const char* checked : {"plain", ""}) {
    auto r = swap(checked);
    ASSERT_EQ(r->type, REDIS_REPLY_ARRAY) << checked;
    EXPECT_EQ(r->element[0]->integer, 4) << checked;
    EXPECT_EQ(raw_->Str({"HGET", x.meta, "shards"}), "4") << checked;
    EXPECT_EQ(raw_->Str({"HGET", y.meta, "name"}), "y") << checked;
  }
  ASSERT_TRUE(store_->Drop("x").ok());
  auto r = swap("plain");
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  EXPECT_EQ(r->element[0]->integer, 5);
  EXPECT_EQ(raw_->Int({"EXISTS", x.meta}), 0);
  EXPECT_EQ(raw_->Str({"HGET", y.meta, "name"}), "y");
  // Made again as a plain filter, as checked: swapped.
  ASSERT_TRUE(store_->Create("x", Config()).ok());
  r = swap("plain");
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  EXPECT_EQ(r->element[0]->integer, 1);
  EXPECT_EQ(raw_->Str({"HGET", x.meta, "name"}), "x");
  EXPECT_EQ(raw_->Int({"EXISTS", y.meta}), 0);
}

TEST_F(RedisStoreTest, CorruptOrForeignMetadataIsDataLoss) {
  struct Case {
    const char* field;
    const char* value;
  };
  for (const Case& c : {Case{"format", "2"}, Case{"bits", "12345"}, Case{"hashes", "3"},
                        Case{"strategy", "murmur9"}, Case{"error_rate", "zero"},
                        Case{"capacity", "-5"}, Case{"capped", "maybe"}, Case{"count", "x"},
                        Case{"kind", "cuckoo"}, Case{"origin", "martians"}}) {
    raw_->Run({"FLUSHALL"});
    ASSERT_TRUE(store_->Create("f", Config()).ok());
    raw_->Run({"HSET", "{f}:meta", c.field, c.value});
    const Status s = store_->ReadConfig("f").status();
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << c.field << "=" << c.value << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.field), std::string::npos) << s.message();
  }
  raw_->Run({"FLUSHALL"});
  ASSERT_TRUE(store_->Create("f", Config()).ok());
  raw_->Run({"HDEL", "{f}:meta", "hashes"});
  EXPECT_EQ(store_->ReadConfig("f").status().code(), StatusCode::kDataLoss);
  // A corrupt filter can still be dropped.
  EXPECT_TRUE(store_->Drop("f").ok());
}

// "x" and "{x}" share the metadata key {x}:meta: the stored name tells them apart.
TEST_F(RedisStoreTest, NamesSharingAMetadataKeyConflict) {
  ASSERT_TRUE(store_->Create("{x}", Config()).ok());
  Status s = store_->Create("x", Config());
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_NE(s.message().find("shares its metadata key"), std::string::npos) << s.message();
  EXPECT_EQ(store_->ReadConfig("x").status().code(), StatusCode::kConflict);
  EXPECT_EQ(store_->Drop("x").code(), StatusCode::kConflict);
  EXPECT_TRUE(store_->ReadConfig("{x}").ok());
}

TEST_F(RedisStoreTest, FiltersBeyondOneKeyAreRejectedBeforeWriting) {
  auto big = MakeConfig(Options(1'000'000'000, 0.001));
  ASSERT_TRUE(big.ok());
  ASSERT_GT(big->geometry.bits, uint64_t{1} << 32);
  const Status s = store_->Create("big", *big);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("512 MiB"), std::string::npos) << s.message();
  EXPECT_EQ(store_->Attach("big", *big).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
  // Just past the limit, the size needed reads larger than the limit: both
  // read "512 MiB" when the need was rounded down to whole MiB.
  FilterConfig just_over = *big;
  just_over.geometry.bits = (uint64_t{1} << 32) + 64;
  const Status over = store_->Create("over", just_over);
  EXPECT_EQ(over.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(over.message().find("needs 4294967360 bits (536870920 bytes)"), std::string::npos)
      << over.message();
  EXPECT_NE(over.message().find("--shards"), std::string::npos) << over.message();
  // Attach takes one bitmap as it is: shards are no advice there.
  const Status attached = store_->Attach("over", just_over);
  EXPECT_EQ(attached.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(attached.message().find("shards"), std::string::npos) << attached.message();
  // A sharded filter's geometry is one shard's, and is said to be (the
  // error read as if the filter needed that many bits, with shards advised).
  FilterOptions sharded = Options(4'000'000'000, 0.01);
  sharded.shards = 8;
  ASSERT_OK_AND_ASSIGN(FilterConfig eight, MakeConfig(sharded));
  const Status each = store_->Create("eight", eight);
  EXPECT_EQ(each.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(each.message().find("each of the 8 shards of filter 'eight' needs"), std::string::npos)
      << each.message();
  EXPECT_NE(each.message().find("more shards"), std::string::npos) << each.message();
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
}

// ---------------------------------------------------------------------------
// Bulk access (load, export, merge) and the other filter kinds, as laid out in
// Redis. kinds_test runs the kinds' behaviour on every store; these check the
// Redis keys behind them.

TEST_F(RedisStoreTest, BulkReadAndOrWorkInPiecesAndLeaveNoUpload) {
  // 4e7 items at 1%: a 46 MiB bitmap, so reads and uploads take many 4 MiB pieces.
  auto f = BloomFilter::Create(*store_, "big", Options(40'000'000, 0.01));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->AddMany(Views(Items(Encoding::kUtf8, 100))).ok());
  BitmapBuilder builder((*f)->config());
  const auto loaded = Items(Encoding::kUtf8, 5000, /*salt=*/3);
  ASSERT_TRUE(builder.Add(Views(loaded)).ok());
  ASSERT_TRUE((*f)->OrBitmap(builder.bitmap(), builder.new_items()).ok());
  std::vector<uint8_t> present;
  ASSERT_TRUE((*f)->ContainsMany(Views(loaded), &present).ok());
  for (size_t i = 0; i < loaded.size(); ++i) ASSERT_EQ(present[i], 1) << loaded[i];
  // The earlier adds survived the OR.
  ASSERT_TRUE((*f)->ContainsMany(Views(Items(Encoding::kUtf8, 100)), &present).ok());
  for (uint8_t p : present) EXPECT_EQ(p, 1);
  std::string read;
  ASSERT_TRUE((*f)->ReadBitmap(&read).ok());
  EXPECT_EQ(read, raw_->Str({"GET", "big"}));
  EXPECT_EQ(raw_->Str({"HGET", "{big}:meta", "count"}), std::to_string(100 + builder.new_items()));
  EXPECT_EQ(raw_->Run({"KEYS", "*tmp*"})->elements, 0u) << "an upload was left behind";

  // An OR into a filter dropped meanwhile fails and leaves nothing.
  auto bits = store_->OpenBits("big", (*f)->config());
  ASSERT_TRUE(bits.ok());
  ASSERT_TRUE(store_->Drop("big").ok());
  EXPECT_EQ((*bits)->OrBits(0, builder.bitmap(), 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
}

TEST_F(RedisStoreTest, KindsKeepAllTheirKeysUnderOneTagAndDropRemovesThem) {
  FilterOptions scaling = Options(100, 0.01);
  scaling.kind = FilterKind::kScaling;
  auto s = BloomFilter::Create(*store_, "grow", scaling);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->AddMany(Views(Items(Encoding::kUtf8, 700))).ok());
  auto info = (*s)->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_GE(info->parts, 3u);
  EXPECT_EQ(raw_->Str({"HGET", "{grow}:meta", "layers"}), std::to_string(info->parts));
  EXPECT_EQ(raw_->Int({"EXISTS", "{grow}/part/1", "{grow}/part/2"}), 2);
  EXPECT_EQ(raw_->Str({"TYPE", "{grow}/parts"}), "hash");

  FilterOptions counting = Options(1000, 0.01);
  counting.kind = FilterKind::kCounting;
  auto c = BloomFilter::Create(*store_, "cnt", counting);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Four bits per counter, as BITFIELD u4 #i addresses them.
  EXPECT_EQ(raw_->Int({"STRLEN", "cnt"}), static_cast<long long>((*c)->config().data_bytes()));
  EXPECT_EQ((*c)->config().data_bytes(), (*c)->config().geometry.bits / 2);
  ASSERT_TRUE((*c)->Add("x").ok());
  auto offsets = (*c)->Offsets("x");
  ASSERT_TRUE(offsets.ok());
  const auto counter =
      raw_->Run({"BITFIELD", "cnt", "GET", "u4", "#" + std::to_string((*offsets)[0])});
  EXPECT_GE(counter->element[0]->integer, 1);

  ASSERT_TRUE(store_->Drop("grow").ok());
  ASSERT_TRUE(store_->Drop("cnt").ok());
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0) << raw_->Run({"KEYS", "*"})->elements << " keys left";
}

TEST_F(RedisStoreTest, TtlAndWindowSlicesAreRedisExpiries) {
  FilterOptions ttl = Options();
  ttl.ttl_seconds = 3600;
  auto f = BloomFilter::Create(*store_, "short", ttl);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (const char* key : {"short", "{short}:meta"}) {
    const long long pttl = raw_->Int({"PTTL", key});
    EXPECT_GT(pttl, 3'500'000) << key;
    EXPECT_LE(pttl, 3'600'000) << key;
  }
  // Clearing re-creates the bitmap with the same expiry.
  ASSERT_TRUE((*f)->Add("x").ok());
  ASSERT_TRUE((*f)->Clear().ok());
  EXPECT_GT(raw_->Int({"PTTL", "short"}), 3'500'000);

  FilterOptions window = Options(1000, 0.01);
  window.kind = FilterKind::kWindow;
  window.window_millis = 60'000;
  window.slices = 6;
  auto w = BloomFilter::Create(*store_, "recent", window);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(raw_->Int({"EXISTS", "recent"}), 0) << "a window filter has no main bitmap";
  const uint64_t before = testing::WallMillis() / 10'000;
  ASSERT_TRUE((*w)->Add("x").ok());
  // The add went to the slice of its moment (10 s slices; allow a boundary).
  std::string key = "{recent}/part/" + std::to_string(before);
  if (raw_->Int({"EXISTS", key}) == 0) key = "{recent}/part/" + std::to_string(before + 1);
  ASSERT_EQ(raw_->Int({"EXISTS", key}), 1) << key;
  // A slice lives for the window plus one slice after its own end: <= 80 s.
  const long long pttl = raw_->Int({"PTTL", key});
  EXPECT_GT(pttl, 60'000);
  EXPECT_LE(pttl, 80'000);
}

// ---------------------------------------------------------------------------
// Attach: adopting bits another program wrote.

TEST_F(RedisStoreTest, AttachAdoptsABareBitmapWithoutChangingABit) {
  const FilterConfig config = Config(1000, 0.01, Strategy::kSeed);
  // Some other program set bits 3, 77 and 4000 (a shorter string than ours).
  for (const char* bit : {"3", "77", "4000"}) raw_->Run({"SETBIT", "legacy", bit, "1"});
  const std::string before = raw_->Str({"GET", "legacy"});
  ASSERT_LT(before.size(), config.data_bytes());

  ASSERT_TRUE(store_->Attach("legacy", config).ok());
  const std::string after = raw_->Str({"GET", "legacy"});
  EXPECT_EQ(after.substr(0, before.size()), before);
  EXPECT_EQ(after.size(), config.data_bytes()) << "zero-extended to the filter's size";
  EXPECT_EQ(after.find_first_not_of('\0', before.size()), std::string::npos);
  EXPECT_EQ(raw_->Str({"HGET", "{legacy}:meta", "origin"}), "attach");

  // Attaching again with the same parameters is fine; other parameters are not.
  EXPECT_TRUE(store_->Attach("legacy", config).ok());
  EXPECT_EQ(store_->Attach("legacy", Config(1000, 0.02, Strategy::kSeed)).code(),
            StatusCode::kConflict);
  EXPECT_EQ(store_->Create("legacy", config).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(raw_->Str({"GET", "legacy"}), after);
}

TEST_F(RedisStoreTest, AttachAcceptsAKeyNotWrittenYet) {
  auto f = BloomFilter::Attach(*store_, "future", Options(500, 0.01, Strategy::kSeed));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("first").ok());
  auto hit = (*f)->Contains("first");
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(*hit);
}

TEST_F(RedisStoreTest, AttachRefusesABitmapWrittenWithMoreBits) {
  const FilterConfig config = Config(1000, 0.01, Strategy::kSeed);
  raw_->Run({"SETBIT", "wide", std::to_string(config.geometry.bits + 100), "1"});
  const Status s = store_->Attach("wide", config);
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_NE(s.message().find("more bits"), std::string::npos) << s.message();
  EXPECT_EQ(raw_->Int({"EXISTS", "{wide}:meta"}), 0);
}

// An import that made a seed filter and then failed leaves it: a Java
// service using the helper writes its bits without counting, so the drop
// that undoes such an import deleted that service's adds (an audit: 1,000
// acknowledged items read absent from Java). A guava64 filter, which no
// Java side writes, is still dropped.
TEST_F(RedisStoreTest, AFailedImportLeavesASeedFilterJavaMayHaveWritten) {
  struct Case {
    Strategy strategy;
    bool counting;  // a layout no Java side writes, whatever its strategy
  };
  for (const Case& c : {Case{Strategy::kSeed, false}, Case{Strategy::kGuava64, false},
                        Case{Strategy::kSeed, true}}) {
    const Strategy strategy = c.strategy;
    const std::string name =
        std::string(StrategyName(strategy)) + (c.counting ? "-counting" : "") + "-copy";
    FilterOptions o = Options(1000, 0.01, strategy);
    if (c.counting) o.kind = FilterKind::kCounting;
    auto source = BloomFilter::Create(*store_, "source-" + name, o);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    for (int i = 0; i < 300; ++i) ASSERT_TRUE((*source)->Add("item-" + std::to_string(i)).ok());
    std::stringstream dump;
    ASSERT_TRUE(ExportDump(**source, dump).ok());
    const std::string good = dump.str();
    std::string changed = good;
    changed[good.size() / 2] ^= 0x40;  // found as the import writes, after its create
    auto theirs = ItemOffsets((*source)->config(), "theirs");
    ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
    testing::ChangingBuf buf(good, changed, [&] {
      for (uint64_t bit : *theirs) raw_->Run({"SETBIT", name, std::to_string(bit), "1"});
    });
    std::istream in(&buf);
    auto copy = ImportDump(*store_, name, in);
    ASSERT_FALSE(copy.ok()) << name;
    EXPECT_EQ(copy.status().code(), StatusCode::kDataLoss) << copy.status().ToString();
    if (strategy == Strategy::kGuava64 || c.counting) {
      EXPECT_NE(copy.status().message().find("dropped again"), std::string::npos)
          << copy.status().message();
      EXPECT_EQ(raw_->Int({"EXISTS", name}), 0);
      continue;
    }
    EXPECT_NE(copy.status().message().find("is left: its Java clients"), std::string::npos)
        << copy.status().message();
    for (uint64_t bit : *theirs) {
      EXPECT_EQ(raw_->Int({"GETBIT", name, std::to_string(bit)}), 1) << "Java's add was deleted";
    }
    auto left = BloomFilter::Open(*store_, name);
    ASSERT_TRUE(left.ok()) << left.status().ToString();
    EXPECT_TRUE(testing::ValueOrFail((*left)->Contains("theirs")));
  }
}

// A Java service sharing an attached key, redeployed with a larger
// expectedInsertions, writes past the key's end. Every call on the filter
// still refuses (its items cannot all be answered for), but says what
// happened: it said "deleted, evicted or truncated", for a key grown longer.
TEST_F(RedisStoreTest, AKeyWrittenPastItsEndByAnotherWriterIsToldAsSuch) {
  auto f = BloomFilter::Attach(*store_, "shared", Options(1000, 0.01, Strategy::kSeed));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("a").ok());
  const uint64_t bits = (*f)->config().geometry.bits;
  raw_->Run({"SETBIT", "shared", std::to_string(bits * 2), "1"});
  const Result<bool> hit = (*f)->Contains("a");
  ASSERT_FALSE(hit.ok());
  EXPECT_EQ(hit.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(hit.status().message().find("wrote past its end"), std::string::npos)
      << hit.status().message();
  EXPECT_EQ(hit.status().message().find("truncated"), std::string::npos) << hit.status().message();
  const Status added = (*f)->Add("b");
  EXPECT_EQ(added.code(), StatusCode::kDataLoss);
  EXPECT_NE(added.message().find("wrote past its end"), std::string::npos) << added.message();
}

TEST_F(RedisStoreTest, AttachRefusesShards) {
  // A Java service's bitmap is one key; a sharded filter's items would go to
  // other keys the service never reads.
  raw_->Run({"SETBIT", "javas", "5", "1"});
  FilterOptions o = Options(1000, 0.01, Strategy::kSeed);
  o.shards = 4;
  auto f = BloomFilter::Attach(*store_, "javas", o);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("cannot be sharded"), std::string::npos)
      << f.status().ToString();
  auto config = MakeConfig(o);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(store_->Attach("javas", *config).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(raw_->Int({"EXISTS", "{javas}:meta"}), 0) << "nothing written";
}

TEST_F(RedisStoreTest, CreateOverABareBitmapPointsToAttach) {
  raw_->Run({"SETBIT", "bare", "5", "1"});
  const Status s = store_->Create("bare", Config());
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_NE(s.message().find("use attach"), std::string::npos) << s.message();
  EXPECT_EQ(raw_->Int({"GETBIT", "bare", "5"}), 1);
  EXPECT_EQ(raw_->Int({"STRLEN", "bare"}), 1);
}

// A scaling filter whose metadata went (evicted under an allkeys-* policy,
// or deleted by hand) left its parts list and layers. A create of the name
// took them for its own (an empty filter answered 700 items present, its
// count theirs), and an attach adopted the first layer alone, as the open's
// error advised (most of the items then answered absent). Both are refused
// now, naming the parts list, and nothing is written.
TEST_F(RedisStoreTest, AScalingFiltersRemainsAreNeitherTakenByACreateNorAttached) {
  FilterOptions scaling = Options(100, 0.01);
  scaling.kind = FilterKind::kScaling;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "gone", scaling));
  const auto items = Items(Encoding::kUtf8, 700);
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  ASSERT_EQ(raw_->Int({"DEL", "{gone}:meta"}), 1);
  const long long keys = raw_->Int({"DBSIZE"});

  const Status open = BloomFilter::Open(*store_, "gone").status();
  EXPECT_EQ(open.code(), StatusCode::kNotFound) << open.ToString();
  EXPECT_NE(open.message().find("'{gone}/parts'"), std::string::npos) << open.message();
  EXPECT_EQ(open.message().find("adopt it with attach"), std::string::npos) << open.message();

  const Status create = store_->Create("gone", *MakeConfig(scaling));
  EXPECT_EQ(create.code(), StatusCode::kConflict) << create.ToString();
  EXPECT_NE(create.message().find("'{gone}/parts'"), std::string::npos) << create.message();
  const Status plain = store_->Create("gone", Config(1000, 0.01));
  EXPECT_EQ(plain.code(), StatusCode::kConflict) << plain.ToString();
  const Status attach = store_->Attach("gone", Config(1000, 0.01));
  EXPECT_EQ(attach.code(), StatusCode::kConflict) << attach.ToString();
  EXPECT_NE(attach.message().find("'{gone}/parts'"), std::string::npos) << attach.message();
  EXPECT_EQ(raw_->Int({"EXISTS", "{gone}:meta"}), 0) << "nothing written";
  EXPECT_EQ(raw_->Int({"DBSIZE"}), keys);
  // A drop names them too, and leaves them: they may not all be the filter's.
  const Status drop = store_->Drop("gone");
  EXPECT_EQ(drop.code(), StatusCode::kNotFound) << drop.ToString();
  EXPECT_NE(drop.message().find("'{gone}/part/N'"), std::string::npos) << drop.message();
  EXPECT_NE(drop.message().find("first layer 'gone'"), std::string::npos) << drop.message();
  EXPECT_EQ(raw_->Int({"DBSIZE"}), keys);

  // A window filter has no bitmap: its parts list alone was taken.
  const FilterOptions window = Window(3'600'000, 4);
  ASSERT_OK_AND_ASSIGN(auto w, BloomFilter::Create(*store_, "wgone", window));
  ASSERT_TRUE(w->AddMany(Views(items)).ok());
  ASSERT_EQ(raw_->Int({"DEL", "{wgone}:meta"}), 1);
  EXPECT_EQ(store_->Create("wgone", *MakeConfig(window)).code(), StatusCode::kConflict);
}

// ---------------------------------------------------------------------------
// Key modes.

TEST_F(RedisStoreTest, JdkKeysAreJavaSerializedAndSeparateFromPlainKeys) {
  auto jdk = MustOpen(server_->url() + "?keys=jdk");
  auto f = BloomFilter::Create(*jdk, "order", Options());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("ORD-1").ok());
  const std::string key = internal::JdkSerializedString("order");
  EXPECT_EQ(raw_->Int({"EXISTS", key}), 1);
  EXPECT_EQ(raw_->Int({"EXISTS", internal::JdkSerializedString("{order}:meta")}), 1);
  EXPECT_EQ(raw_->Int({"EXISTS", "order"}), 0);
  EXPECT_EQ(store_->ReadConfig("order").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(raw_->Int({"STRLEN", key}), static_cast<long long>(Config().data_bytes()));
  EXPECT_TRUE(jdk->Drop("order").ok());
  EXPECT_EQ(raw_->Int({"DBSIZE"}), 0);
}

// The Java-side check of these bytes is redis_java_test (ObjectOutputStream
// itself); this pins the parts of the format that have no Java counterpart
// in that test's names: the length prefix and the modified UTF-8 of U+0000.
// A check reads block items' blocks in ascending order, and blocks at most
// kMergeGap bytes apart with one GETRANGE; each item maps to the read that
// holds its block.
TEST(RedisOpsTest, NearbyBlocksShareOneRead) {
  // k = 2 offsets per item, in blocks 100, 0, 2, 6, 2 (the 512-bit blocks).
  const std::vector<uint64_t> offsets = {100 * 512 + 3, 100 * 512 + 70, 5,           400,
                                         2 * 512,       2 * 512 + 9,    6 * 512 + 1, 6 * 512 + 500,
                                         2 * 512 + 1,   2 * 512 + 2};
  internal::BlockReads plan;
  internal::PlanBlockReads(offsets.data(), 5, 2, &plan);
  // Blocks 0 and 2 are 64 bytes apart: one read. Block 6 starts 192 bytes
  // after block 2 ends (<= 256): the same read. Block 100 is far: its own.
  EXPECT_EQ(plan.first, (std::vector<uint64_t>{0, 6400}));
  EXPECT_EQ(plan.last, (std::vector<uint64_t>{6 * 64 + 63, 6400 + 63}));
  EXPECT_EQ(plan.range_of, (std::vector<uint32_t>{1, 0, 0, 0, 0}));
  EXPECT_TRUE(internal::ItemsInBlocks(offsets.data(), 5, 2));
  const std::vector<uint64_t> spread = {5, 512 + 5};  // one item over two blocks
  EXPECT_FALSE(internal::ItemsInBlocks(spread.data(), 1, 2));
}

TEST(RedisKeysTest, JdkSerializationFraming) {
  const std::string s = internal::JdkSerializedString(std::string("a\0b", 3));
  ASSERT_EQ(s.size(), 4u + 1 + 2 + 4);
  EXPECT_EQ(s.substr(0, 4), std::string("\xAC\xED\x00\x05", 4));
  EXPECT_EQ(s[4], '\x74');
  EXPECT_EQ(s.substr(5, 2), std::string("\x00\x04", 2));
  EXPECT_EQ(s.substr(7), std::string("a\xC0\x80"
                                     "b",
                                     4));
  const std::string long_name(70000, 'x');
  const std::string l = internal::JdkSerializedString(long_name);
  EXPECT_EQ(l[4], '\x7C');
  EXPECT_EQ(l.substr(5, 8), std::string("\0\0\0\0\0\x01\x11\x70", 8));
  EXPECT_EQ(l.size(), 13u + 70000);
}

TEST(RedisKeysTest, HashTagKeepsAFiltersKeysInOneSlot) {
  auto k = internal::KeysFor("orders", internal::KeyMode::kPlain);
  EXPECT_EQ(k.bitmap, "orders");
  EXPECT_EQ(k.meta, "{orders}:meta");
  EXPECT_EQ(k.scratch, "{orders}/add");
  k = internal::KeysFor("{user:1}seen", internal::KeyMode::kPlain);
  EXPECT_EQ(k.meta, "{user:1}seen:meta");
  EXPECT_EQ(k.scratch, "{user:1}seen/add");
}

TEST(RedisKeysTest, SlotsFollowRedisClusterHashing) {
  // Values from the Redis Cluster specification and its CRC16 reference.
  EXPECT_EQ(internal::KeySlot("123456789"), 0x31C3 & 16383);
  EXPECT_EQ(internal::KeySlot("foo"), 12182);
  EXPECT_EQ(internal::KeySlot("{user1000}.following"), internal::KeySlot("{user1000}.followers"));
  // An empty tag hashes the whole key; only the first '{' counts.
  EXPECT_NE(internal::KeySlot("foo{}{bar}"), internal::KeySlot("bar"));
  EXPECT_EQ(internal::KeySlot("foo{{bar}}zap"), internal::KeySlot("{bar"));
  EXPECT_EQ(internal::KeySlot("foo{bar}{zap}"), internal::KeySlot("bar"));
  for (uint16_t slot : {0, 1, 5000, 12182, 16383}) {
    const std::string& tag = internal::SlotTag(slot);
    EXPECT_EQ(internal::KeySlot(tag), slot) << tag;
    EXPECT_EQ(tag.find_first_of("{}"), std::string::npos);
  }
  EXPECT_EQ(internal::SlotTag(0), internal::SlotTag(0)) << "a fixed table";
}

// Every key of a filter is in its bitmap's slot, whatever braces its name
// holds, and a rebuild's temporary filter is in the slot of the filter it
// replaces (so the swap is one script on a cluster).
TEST(RedisKeysTest, EveryKeyOfAFilterSharesOneSlot) {
  for (const std::string& name :
       std::vector<std::string>{"orders", "{user:1}seen", "a{b", "x}", "}y{", "x{}y", "{}",
                                "pedido{ção", "a{b}c{d}", std::string(200, '{')}) {
    for (const std::string& n : std::vector<std::string>{name, TemporaryName(name)}) {
      const auto k = internal::KeysFor(n, internal::KeyMode::kPlain);
      const uint16_t slot =
          internal::KeySlot(internal::KeysFor(name, internal::KeyMode::kPlain).bitmap);
      EXPECT_EQ(internal::KeySlot(k.bitmap), slot) << n;
      EXPECT_EQ(internal::KeySlot(k.meta), slot) << n << " " << k.meta;
      EXPECT_EQ(internal::KeySlot(k.scratch), slot) << n;
      EXPECT_EQ(internal::KeySlot(k.parts), slot) << n;
      EXPECT_EQ(internal::KeySlot(internal::PartKeysFor(n, internal::KeyMode::kPlain, 7).bitmap),
                slot)
          << n;
      EXPECT_EQ(internal::KeySlot(internal::TempKeyFor(n, internal::KeyMode::kPlain, "abc")), slot)
          << n;
    }
    EXPECT_EQ(internal::KeysFor(name, internal::KeyMode::kPlain).bitmap, name)
        << "the bitmap keeps the name the Java side uses";
  }
}

// ---------------------------------------------------------------------------
// URLs and connections.

TEST(RedisUrlTest, ParsesEveryPart) {
  StoreOptions defaults;
  auto u = internal::ParseRedisUrl(
      "redis://alice:p%40ss%3Aw@db.example:6380/3?connect_timeout_ms=150&command_timeout_ms=900"
      "&pool_size=4&max_retries=0&batch_items=64&keys=jdk&idle_timeout_ms=0",
      defaults);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host(), "db.example");
  EXPECT_EQ(u->port(), 6380);
  EXPECT_EQ(u->user, "alice");
  EXPECT_EQ(u->password, "p@ss:w");
  EXPECT_EQ(u->db, 3);
  EXPECT_EQ(u->keys, internal::KeyMode::kJdk);
  EXPECT_EQ(u->options.connect_timeout.count(), 150);
  EXPECT_EQ(u->options.command_timeout.count(), 900);
  EXPECT_EQ(u->options.pool_size, 4);
  EXPECT_EQ(u->options.idle_timeout.count(), 0);
  EXPECT_EQ(defaults.idle_timeout.count(), 60000);
  EXPECT_EQ(u->options.max_retries, 0);
  EXPECT_EQ(u->options.batch_items, 64u);
  EXPECT_EQ(u->Redacted(), "redis://alice:***@db.example:6380/3?keys=jdk");

  u = internal::ParseRedisUrl("redis://:secret@[::1]", defaults);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host(), "::1");
  EXPECT_EQ(u->port(), 6379);
  EXPECT_TRUE(u->user.empty());
  EXPECT_EQ(u->password, "secret");
  EXPECT_EQ(u->Redacted(), "redis://:***@[::1]:6379/0");

  u = internal::ParseRedisUrl("redis://localhost/", defaults);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->db, 0);
  EXPECT_FALSE(u->password.has_value());
  EXPECT_EQ(u->options.batch_items, defaults.batch_items);
}

TEST(RedisUrlTest, ParsesClusterAndSentinelUrls) {
  StoreOptions defaults;
  auto c = internal::ParseRedisUrl(
      "redis-cluster://"
      ":pw@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002?wait_replicas=1&read_from=replica",
      defaults);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->mode, internal::RedisMode::kCluster);
  ASSERT_EQ(c->hosts.size(), 3u);
  EXPECT_EQ(c->hosts[2].Display(), "[::1]:7002");
  EXPECT_EQ(c->wait_replicas, 1);
  EXPECT_EQ(c->read_from, internal::ReadFrom::kReplica);
  EXPECT_EQ(c->Redacted(),
            "redis-cluster://:***@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002"
            "?wait_replicas=1&read_from=replica");

  auto s = internal::ParseRedisUrl(
      "rediss-sentinel://app:pw@s1,s2:5000/my%20master/2?sentinel_password=x%40y&cacert=%2Fca.pem",
      defaults);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->mode, internal::RedisMode::kSentinel);
  EXPECT_EQ(s->hosts[0].port, 26379) << "the sentinels' default port";
  EXPECT_EQ(s->hosts[1].port, 5000);
  EXPECT_EQ(s->master_name, "my master");
  EXPECT_EQ(s->db, 2);
  EXPECT_EQ(s->sentinel_password, "x@y");
  EXPECT_TRUE(s->tls.enabled);
  EXPECT_EQ(s->tls.cacert, "/ca.pem");
  EXPECT_EQ(s->Redacted(),
            "rediss-sentinel://app:***@s1:26379,s2:5000/my master/2"
            "?sentinel_password=***");
  // A master name with an '@' is a master name, not credentials.
  auto at = internal::ParseRedisUrl("redis-sentinel://127.0.0.1:26379/my@master", defaults);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(at->master_name, "my@master");
}

// redis+unix://: a local server's Unix socket, with credentials and options
// as for redis://, the database as db=N (the path is the socket's).
TEST(RedisUrlTest, ParsesUnixSocketUrls) {
  StoreOptions defaults;
  auto u = internal::ParseRedisUrl("redis+unix:///run/redis/redis.sock", defaults);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->mode, internal::RedisMode::kSingle);
  ASSERT_EQ(u->hosts.size(), 1u);
  EXPECT_EQ(u->hosts[0].unix_path, "/run/redis/redis.sock");
  EXPECT_EQ(u->hosts[0].Display(), "/run/redis/redis.sock");
  EXPECT_EQ(u->db, 0);
  EXPECT_FALSE(u->password.has_value());
  EXPECT_EQ(u->Redacted(), "redis+unix:///run/redis/redis.sock");

  u = internal::ParseRedisUrl(
      "redis+unix://app:p%40w@/tmp/my%20dir/r.sock?db=2&keys=jdk&pool_size=3", defaults);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->user, "app");
  EXPECT_EQ(u->password, "p@w");
  EXPECT_EQ(u->hosts[0].unix_path, "/tmp/my dir/r.sock");
  EXPECT_EQ(u->db, 2);
  EXPECT_EQ(u->keys, internal::KeyMode::kJdk);
  EXPECT_EQ(u->options.pool_size, 3);
  EXPECT_EQ(u->Redacted(), "redis+unix://app:***@/tmp/my%20dir/r.sock?db=2&keys=jdk");
  // The redacted form parses back to the same socket and database.
  auto back = internal::ParseRedisUrl(u->Redacted(), defaults);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->hosts[0].unix_path, "/tmp/my dir/r.sock");
  EXPECT_EQ(back->db, 2);

  u = internal::ParseRedisUrl("redis+unix://:pw@/r.sock", defaults);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_TRUE(u->user.empty());
  EXPECT_EQ(u->password, "pw");
  EXPECT_EQ(u->hosts[0].unix_path, "/r.sock");
}

TEST(RedisUrlTest, BadUrlsAreInvalidArgumentsNamingTheProblem) {
  struct Case {
    const char* url;
    const char* mentions;
  };
  for (const Case& c : {
           Case{"redis://", "host is missing"},
           Case{"redis://:6379", "host is missing"},
           Case{"redis://h:0", "port"},
           Case{"redis://h:65536", "port"},
           Case{"redis://h:12ab", "port"},
           Case{"redis://h:", "empty port"},
           Case{"redis://h/x", "database"},
           Case{"redis://h/-1", "database"},
           Case{"redis://user@h", "password"},
           Case{"redis://u:@h", "password"},
           Case{"redis://u:p%4@h", "%-escape"},
           Case{"redis://u:p%zz@h", "%-escape"},
           // Its advice quoted the '%', which the password holds: "'***'".
           Case{"redis://u:p%zz@h", "write a percent sign as %25"},
           Case{"redis://[::1", "'['"},
           // Refused for what they are: "the host is missing" and "port ':1:6379'".
           Case{"redis://::1:6379", "IPv6 host without brackets"},
           Case{"redis://u:p@::1:6379", "IPv6 host without brackets"},
           Case{"redis-cluster://::1:7000,::1:7001", "IPv6 host without brackets"},
           Case{"redis://fe80::1:6379", "IPv6 host without brackets"},
           // A port inside the brackets is another address, then tried on 6379.
           // (Not "[::1:6379]": that is an IPv6 address, 0::1:6379.)
           Case{"redis://[::1:62101]", "not an IPv6 address in brackets"},
           Case{"redis://[localhost]:6379", "not an IPv6 address in brackets"},
           Case{"redis://[127.0.0.1]:6379", "not an IPv6 address in brackets"},
           Case{"redis://h?pool_size=0", "pool_size"},
           Case{"redis://h?pool_size=many", "pool_size"},
           Case{"redis://h?idle_timeout_ms=-1", "idle_timeout_ms"},
           Case{"redis://h?idle_timeout_ms=86400001", "idle_timeout_ms"},
           Case{"redis://h?timeout=5", "unknown option"},
           Case{"redis://h?keys=xml", "keys"},
           Case{"redis://h?batch_items", "no '='"},
           Case{"redis://h?command_timeout_ms=0", "command_timeout_ms"},
           Case{"redis://a,b", "one host"},
           Case{"redis-cluster://a:7000/1", "database 0"},
           Case{"redis-sentinel://a:26379", "master's name"},
           Case{"redis://h?cacert=/x", "need TLS"},
           Case{"rediss://h?sni=[redis.test]", "not a name or an IPv6 address in brackets"},
           Case{"rediss://h?sni=[::1", "not a name or an IPv6 address in brackets"},
           Case{"rediss://h?cert=/x", "both cert= and key="},
           Case{"redis://h?sentinel_password=x", "redis-sentinel:// only"},
           Case{"redis://h?read_from=any", "read_from"},
           // Once silently ignored: every read went to the one server.
           Case{"redis://h?read_from=replica", "redis-sentinel:// or redis-cluster://"},
           // Once "the last wins": a URL built by appending hid the first.
           Case{"redis://h?pool_size=2&pool_size=3", "given twice"},
           Case{"redis://h?wait_replicas=-1", "wait_replicas"},
           Case{"redisx://h", "unknown store URL"},
           // Not "port 'pa' is not an integer": a piece of the password.
           Case{"redis://app:pa/ss@h:6379", "percent-encode them"},
           Case{"redis://app:pa?ss@h:6379", "percent-encode them"},
           Case{"redis://:pa#ss@h:6379", "percent-encode them"},
           Case{"redis+unix://", "absolute path"},
           Case{"redis+unix://localhost/r.sock", "not a host"},
           Case{"redis+unix://app@/r.sock", "password"},
           Case{"redis+unix:///r.sock?tls=1", "TLS on TCP ports only"},
           Case{"redis+unix:///r.sock?read_from=replica", "redis-sentinel://"},
           Case{"redis+unix:///r.sock?db=x", "database number"},
           Case{"redis+unix:///r%00.sock", "NUL"},
           Case{"redis://h?db=2", "redis+unix:// only"},
       }) {
    auto store = Store::Open(c.url);
    ASSERT_FALSE(store.ok()) << c.url;
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << c.url;
    EXPECT_NE(store.status().message().find(c.mentions), std::string::npos)
        << c.url << ": " << store.status().message();
    EXPECT_EQ(store.status().message().find("'pa'"), std::string::npos)
        << c.url << ": " << store.status().message();
  }
}

// No error about a URL quotes any piece of its password: a raw '@' in it
// made the parser read what followed as the port, the database or an
// option, and quote it; a mistyped scheme quoted the whole URL. Pieces that
// are not the password are still quoted.
TEST(RedisUrlTest, NoErrorQuotesAPieceOfThePassword) {
  for (const char* url : {
           "Redis://:FullS3cret@127.0.0.1:6379",
           "redis:/:FullS3cret@127.0.0.1:6379",
           "redis://:Tr0ub@dor/S3cret@127.0.0.1:6379",
           "redis://app:Tr0ub@dor:S3cret/x@127.0.0.1",
           "redis://:Tr0ub@dor?S3cret@127.0.0.1",
           "redis-sentinel://127.0.0.1:1/m?sentinel_password=Hunter&2S3cret",
           // A quote in the secret, which paired the message's quotes wrongly.
           "redis-sentinel://127.0.0.1:1/m?sentinel_password=x&y'zS3cret",
           "redis://h:12/3'S3cret@127.0.0.1:1",
       }) {
    auto store = Store::Open(url);
    ASSERT_FALSE(store.ok()) << url;
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << url;
    const std::string& m = store.status().message();
    EXPECT_EQ(m.find("S3cret"), std::string::npos) << url << ": " << m;
    EXPECT_EQ(m.find("dor"), std::string::npos) << url << ": " << m;
  }
  auto typo = Store::Open("redis://:pw@127.0.0.1:6379?pool_sise=3");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("unknown option 'pool_sise'"), std::string::npos)
      << typo.status().message();
}

// Options given in code get the same bounds as options in the URL.
TEST(RedisUrlTest, StoreOptionsOutOfRangeAreInvalidArguments) {
  for (size_t batch : {size_t{0}, size_t{1'000'001}}) {
    StoreOptions o;
    o.batch_items = batch;
    auto store = Store::Open("redis://127.0.0.1:1", o);
    ASSERT_FALSE(store.ok()) << batch;
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << batch;
    EXPECT_NE(store.status().message().find("batch_items"), std::string::npos)
        << store.status().message();
  }
  StoreOptions o;
  o.pool_size = 0;
  auto store = Store::Open("redis://127.0.0.1:1", o);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  // milliseconds::max() for "never" overflowed the pool's now - idle_timeout,
  // which then closed every connection at once; 0 is "never".
  for (auto idle : {std::chrono::milliseconds(-1), std::chrono::milliseconds::max()}) {
    StoreOptions options;
    options.idle_timeout = idle;
    const Status s = Store::Open("redis://127.0.0.1:1", options).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("idle_timeout"), std::string::npos) << s.ToString();
  }
}

TEST(RedisConnectionTest, UnreachableServerFailsFastWithUnavailable) {
  const int port = testing::FreePort();  // nothing listens there
  const auto start = std::chrono::steady_clock::now();
  auto store = Store::Open("redis://127.0.0.1:" + std::to_string(port));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(store.status().message().find("cannot connect"), std::string::npos)
      << store.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(RedisUrlTest, UnixSocketPathLongerThanTheKernelTakesIsRefused) {
  const std::string path = "/" + std::string(107, 's');
  auto store = Store::Open("redis+unix://" + path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("holds at most 107"), std::string::npos)
      << store.status().message();
  // 107 bytes fit: the store opens as far as connecting (nothing is there).
  auto fits = Store::Open("redis+unix://" + path.substr(0, 107));
  ASSERT_FALSE(fits.ok());
  EXPECT_EQ(fits.status().code(), StatusCode::kUnavailable) << fits.status().ToString();
}

// A server's Unix socket reaches the same keys as its TCP port; a path with
// nothing behind it is unavailable and says why, never "not present".
TEST(RedisConnectionTest, ConnectsOverAUnixSocket) {
  testing::TempDir dir;
  const std::string socket = dir.path() + "/redis.sock";
  RedisServer server({"--unixsocket", socket, "--unixsocketperm", "700"});
  server.Start();
  auto over_socket = Store::Open("redis+unix://" + socket + "?db=2");
  ASSERT_TRUE(over_socket.ok()) << over_socket.status().ToString();
  EXPECT_EQ((*over_socket)->url(), "redis+unix://" + socket + "?db=2");
  auto f = BloomFilter::Create(**over_socket, "local", Options());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (const char* item : {"a", "b", "c"}) ASSERT_TRUE((*f)->Add(item).ok());

  RawRedis raw(server.port());
  raw.Run({"SELECT", "2"});
  EXPECT_EQ(raw.Int({"EXISTS", "local"}), 1) << "the socket's db=2 is the TCP port's database 2";
  auto over_tcp = MustOpen(server.url() + "/2");
  auto g = BloomFilter::Open(*over_tcp, "local");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const char* item : {"a", "b", "c"}) {
    auto present = (*g)->Contains(item);
    ASSERT_TRUE(present.ok()) << present.status().ToString();
    EXPECT_TRUE(*present) << item;
  }

  auto missing = Store::Open("redis+unix://" + dir.path() + "/none.sock");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("no socket at that path"), std::string::npos)
      << missing.status().message();

  // A socket file nobody listens on (a server that stopped leaves one).
  const std::string stale = dir.path() + "/stale.sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", stale.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  auto refused = Store::Open("redis+unix://" + stale);
  ::close(fd);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("nothing listens there"), std::string::npos)
      << refused.status().message();
}

TEST(RedisConnectionTest, PasswordAuthentication) {
  RedisServer server({"--requirepass", "s3cret"});
  server.Start();
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  auto none = Store::Open("redis://" + host);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(none.status().message().find("authentication failed"), std::string::npos)
      << none.status().message();
  auto wrong = Store::Open("redis://:nope@" + host);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(wrong.status().message().find("authentication failed"), std::string::npos)
      << wrong.status().message();
  auto right = Store::Open("redis://:s3cret@" + host);
  ASSERT_TRUE(right.ok()) << right.status().ToString();
  EXPECT_EQ((*right)->url().find("s3cret"), std::string::npos) << (*right)->url();
  auto f = BloomFilter::Create(**right, "f", Options());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE((*f)->Add("x").ok());
}

TEST(RedisConnectionTest, AclUserAuthenticationAndPermissions) {
  // alice may do everything; bob may only read.
  RedisServer server({"--user", "alice", "on", ">alice-pw", "~*", "&*", "+@all", "--user", "bob",
                      "on", ">bob-pw", "~*", "&*", "+@read", "+@connection"});
  server.Start();
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  auto wrong = Store::Open("redis://alice:bad@" + host);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(wrong.status().message().find("authentication failed"), std::string::npos)
      << wrong.status().message();
  auto alice = Store::Open("redis://alice:alice-pw@" + host);
  ASSERT_TRUE(alice.ok()) << alice.status().ToString();
  auto f = BloomFilter::Create(**alice, "f", Options());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("x").ok());

  auto bob = Store::Open("redis://bob:bob-pw@" + host);
  ASSERT_TRUE(bob.ok()) << bob.status().ToString();
  const Status denied = (*bob)->Create("g", Config());
  EXPECT_EQ(denied.code(), StatusCode::kUnavailable);
  EXPECT_NE(denied.message().find("permission denied"), std::string::npos) << denied.message();
}

TEST(RedisConnectionTest, SelectsTheDatabaseAndRejectsOneThatDoesNotExist) {
  RedisServer server;
  server.Start();
  auto store = Store::Open(server.url() + "/3");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Create("in3", Config()).ok());
  RawRedis raw(server.port());
  EXPECT_EQ(raw.Int({"EXISTS", "in3"}), 0);
  raw.Run({"SELECT", "3"});
  EXPECT_EQ(raw.Int({"EXISTS", "in3"}), 1);
  auto bad = Store::Open(server.url() + "/99");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().ToString();
}

// wait_replicas: an add (or create, or bulk load) is acknowledged only once
// WAIT confirms that many replicas have it; fewer is an error, never a
// silent acknowledgement that a failover could take back.
TEST(RedisReplicationTest, WaitReplicasAcknowledgesOnlyReplicatedWrites) {
  // A diskless sync without its default 5 s delay: the replica is up at once.
  RedisServer master({"--repl-diskless-sync-delay", "0"});
  master.Start();
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  replica.Start();
  ASSERT_TRUE(replica.WaitForMasterLink());

  auto one = MustOpen(master.url() + "?wait_replicas=1&wait_timeout_ms=2000");
  auto f = BloomFilter::Create(*one, "f", Options(100000));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto items = Items(Encoding::kUtf8, 2000);
  ASSERT_TRUE((*f)->AddMany(Views(items)).ok());
  ASSERT_TRUE((*f)->Add("single").ok());
  // What was acknowledged is on the replica now, bit for bit.
  EXPECT_EQ(replica.Cli({"GET", "f"}), master.Cli({"GET", "f"}));

  auto two = MustOpen(master.url() + "?wait_replicas=2&wait_timeout_ms=100");
  auto g = BloomFilter::Open(*two, "f");
  ASSERT_TRUE(g.ok());
  const Status s = (*g)->Add("needs-two");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("only 1 of 2 replicas"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("may be lost in a failover"), std::string::npos) << s.message();
  const Status bulk = (*g)->AddMany(Views(Items(Encoding::kUtf8, 500, /*salt=*/9)));
  EXPECT_EQ(bulk.code(), StatusCode::kUnavailable) << bulk.ToString();
}

// wait_replicas below the number of replicas looks safe and is not: WAIT
// counts any replicas, and a Sentinel failover lost 28,100 of 599,900 adds
// acknowledged with wait_replicas=1 and two replicas. Above it, every write
// fails. Both are warnings (redbloom info, /readyz); equal, or 0 (no WAIT,
// the documented default), is none.
TEST(RedisReplicationTest, WarnsWhenWaitReplicasDoesNotCountEveryReplica) {
  RedisServer master({"--repl-diskless-sync-delay", "0"});
  master.Start();
  RedisServer first({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  first.Start();
  RedisServer second({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  second.Start();
  for (int i = 0; i < 500 && master.Cli({"INFO", "replication"}).find("connected_slaves:2") ==
                                 std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(master.Cli({"INFO", "replication"}).find("connected_slaves:2"), std::string::npos);
  const auto warnings = [&](const std::string& query) {
    auto store = MustOpen(master.url() + query);
    auto w = store->Warnings();
    EXPECT_TRUE(w.ok()) << query << ": " << w.status().ToString();
    return w.ok() ? *w : std::vector<std::string>{"(failed)"};
  };
  const auto one = warnings("?wait_replicas=1");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NE(one[0].find("2 connected replicas"), std::string::npos) << one[0];
  EXPECT_NE(one[0].find("set wait_replicas=2"), std::string::npos) << one[0];
  const auto three = warnings("?wait_replicas=3");
  ASSERT_EQ(three.size(), 1u);
  EXPECT_NE(three[0].find("fails until enough replicas"), std::string::npos) << three[0];
  EXPECT_TRUE(warnings("?wait_replicas=2").empty());
  EXPECT_TRUE(warnings("").empty());
  // A read-only replica (checks only) has no replicas to count; that it
  // is a replica, which refuses every write, is said (its /readyz called it
  // "master" and said no more: an audit).
  auto replica = MustOpen(first.url() + "?wait_replicas=1");
  auto on_replica = replica->Warnings();
  ASSERT_TRUE(on_replica.ok()) << on_replica.status().ToString();
  ASSERT_EQ(on_replica->size(), 1u);
  EXPECT_NE((*on_replica)[0].find("is a replica of"), std::string::npos) << (*on_replica)[0];
  EXPECT_EQ((*on_replica)[0].find("not in sync"), std::string::npos) << (*on_replica)[0];
}

// Redis drops a client whose replies pass its client-output-buffer-limit
// and gives it no reason: the error says what setting does that, and what
// to change (an audit found "closed the connection" alone).
TEST(RedisOutputBufferTest, AConnectionDroppedForItsRepliesSaysWhichSettingDoesThat) {
  RedisServer server({"--client-output-buffer-limit", "normal 65536 0 0"});
  server.Start();
  auto store = MustOpen(server.url() + "?batch_items=20000");
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "f", Options(100'000, 0.01)));
  const auto items = Items(Encoding::kUtf8, 20'000);
  const auto views = Views(items);
  std::vector<uint8_t> present;
  const Status dropped = f->ContainsMany(views, &present);
  EXPECT_EQ(dropped.code(), StatusCode::kUnavailable) << dropped.ToString();
  EXPECT_EQ(dropped.reason(), StatusReason::kConnectionLost) << dropped.ToString();
  EXPECT_NE(dropped.message().find("client-output-buffer-limit"), std::string::npos)
      << dropped.ToString();
  // Smaller batches have smaller replies.
  auto small = MustOpen(server.url() + "?batch_items=100");
  ASSERT_OK_AND_ASSIGN(auto g, BloomFilter::Open(*small, "f"));
  EXPECT_TRUE(g->ContainsMany(views, &present).ok());
}

// A server at its maxclients refuses a pool's next connection: callers share
// the connections the pool holds, as they share a full pool's, rather than
// fail (an audit: 3 to 5 of 12 concurrent adds through redbloomd answered
// 503 while the pool held 3 working connections).
TEST(RedisMaxclientsTest, CallersShareThePoolsConnectionsAtTheServersMaxclients) {
  RedisServer server({"--maxclients", "3"});
  server.Start();
  // A waiter may be passed over by threads taking back the connection they
  // just released: room for that under load and sanitizers.
  auto store = MustOpen(server.url() + "?pool_size=8&command_timeout_ms=20000");
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "f", Options(200'000, 0.01)));
  const auto items = Items(Encoding::kUtf8, 60'000);
  const auto views = Views(items);
  const std::vector<Status> results = testing::AddFromThreads(*f, views, 12, 500);
  for (size_t t = 0; t < results.size(); ++t) {
    EXPECT_TRUE(results[t].ok()) << t << ": " << results[t].ToString();
  }
  std::vector<uint8_t> present;
  ASSERT_TRUE(f->ContainsMany(views, &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 60'000);
}

// When the pool's own connections stay busy past command_timeout_ms at the
// server's maxclients, the wait ends as a full pool's does, and the error
// keeps the reason a caller can act on (raise maxclients).
TEST(RedisMaxclientsTest, AWaitThatOutlastsTheTimeoutAtMaxclientsSaysServerFull) {
  RedisServer server({"--maxclients", "2"});
  server.Start();
  Result<internal::RedisUrl> url =
      internal::ParseRedisUrl(server.url() + "?command_timeout_ms=300", StoreOptions());
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  internal::ConnectionPool pool(internal::ServerParamsFor(*url, url->hosts.front()), 4);
  std::vector<internal::ConnectionPool::Lease> held;
  Status refused;
  for (int i = 0; i < 4 && refused.ok(); ++i) {
    Result<internal::ConnectionPool::Lease> lease = pool.Acquire();
    if (lease.ok()) {
      held.push_back(std::move(lease).value());
    } else {
      refused = lease.status();
    }
  }
  ASSERT_FALSE(held.empty());
  EXPECT_EQ(refused.code(), StatusCode::kDeadlineExceeded) << refused.ToString();
  EXPECT_EQ(refused.reason(), StatusReason::kServerFull) << refused.ToString();
  EXPECT_NE(refused.message().find("raise the server's maxclients"), std::string::npos)
      << refused.ToString();
}

// A sharded add or create on a server whose replicas do not confirm waits
// wait_timeout_ms once, not once per shard (32 shards waited 32 times, one
// after another: an audit saw 6.9 s for a 200 ms wait, and up to 1024
// shards could hold a redbloomd worker for minutes).
TEST(RedisReplicationTest, AShardedCallWaitsForReplicasOnceWhenTheyDoNotConfirm) {
  RedisServer server;  // no replica: WAIT 1 times out
  server.Start();
  auto plain = MustOpen(server.url());
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*plain, "sh", [] {
                         FilterOptions o = Options(100'000, 0.01);
                         o.shards = 8;
                         return o;
                       }()));
  auto waiting = MustOpen(server.url() + "?wait_replicas=1&wait_timeout_ms=50");
  ASSERT_OK_AND_ASSIGN(auto g, BloomFilter::Open(*waiting, "sh"));
  const auto waits = [&] { return CommandCalls(server.Cli({"INFO", "commandstats"}), "wait"); };
  server.Cli({"CONFIG", "RESETSTAT"});
  const auto items = Items(Encoding::kUtf8, 400);
  const Status added = g->AddMany(Views(items));
  EXPECT_EQ(added.reason(), StatusReason::kNotReplicated) << added.ToString();
  EXPECT_EQ(waits(), 1) << "one WAIT per shard, each timing out";
  server.Cli({"CONFIG", "RESETSTAT"});
  const Status created = BloomFilter::Create(*waiting, "sh2",
                                             [] {
                                               FilterOptions o = Options(100'000, 0.01);
                                               o.shards = 8;
                                               return o;
                                             }())
                             .status();
  EXPECT_EQ(created.reason(), StatusReason::kNotReplicated) << created.ToString();
  EXPECT_EQ(waits(), 1);
}

// An add whose bits are all set already writes nothing: a repeated add of an
// item whose first add was not replicated must not be acknowledged either
// (by another client whose connection was open before, as in a pool). Redis
// 7.0 passes this with WAIT alone; the test keeps any client-side shortcut
// (no WAIT when nothing was new) from breaking it.
TEST(RedisReplicationTest, RepeatedAddIsNotAcknowledgedBeforeItsBitsAreReplicated) {
  RedisServer master({"--repl-diskless-sync-delay", "0"});
  master.Start();
  RedisServer replica(
      {"--replicaof", "127.0.0.1", std::to_string(master.port()), "--enable-debug-command", "yes"});
  replica.Start();
  ASSERT_TRUE(replica.WaitForMasterLink());
  // Made where the replica has time to confirm it: on a loaded machine 1 s
  // was once not enough (CI flaked so), and the create is not what is tested.
  ASSERT_TRUE(
      BloomFilter::Create(*MustOpen(master.url() + "?wait_replicas=1&wait_timeout_ms=20000"), "f",
                          Options(1000))
          .ok());
  // Two clients (two connections, as a pool has), both connected before the
  // first add.
  const std::string url = master.url() + "?wait_replicas=1&wait_timeout_ms=1000&pool_size=1";
  auto first = MustOpen(url);
  auto second = MustOpen(url);
  auto created = BloomFilter::Open(*first, "f");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto again = BloomFilter::Open(*second, "f");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  // The replica stops answering for 4 s: it receives nothing in that time.
  // From a connection opened before, so that the command is on its way at
  // once (a redis-cli started here could take longer than the wait below
  // under load, and the first add was then replicated: a flaky failure).
  RawRedis sleeper(replica.port());
  std::thread asleep([&] { sleeper.Run({"DEBUG", "SLEEP", "4"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const Status s1 = (*created)->Add("lagging");
  EXPECT_EQ(s1.code(), StatusCode::kUnavailable) << s1.ToString();
  // The bits are on the master only. The second client's add finds them all
  // set: it must not be acknowledged either.
  const Status s2 = (*again)->Add("lagging");
  EXPECT_EQ(s2.code(), StatusCode::kUnavailable) << s2.ToString();
  asleep.join();
}

// Transactions in flight behind one that Redis refused (maxmemory reached
// part way through a large add) carry the count of the transactions before
// them; refused too, that count was lost for good: the filter counted 2,000
// fewer items than the add had confirmed as new (an audit).
TEST_F(RedisStoreTest, AnAddRefusedPartWayKeepsTheCountOfWhatItAdded) {
  for (const bool counting : {false, true}) {
    SCOPED_TRACE(counting ? "counting" : "plain");
    const std::string name = counting ? "oomc" : "oom";
    FilterOptions o = Options(2'000'000, 0.01);
    if (counting) o.kind = FilterKind::kCounting;
    auto f = BloomFilter::Create(*store_, name, o);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    std::vector<std::string> items(1'500'000);
    for (size_t i = 0; i < items.size(); ++i) items[i] = name + "-" + std::to_string(i);
    const std::vector<std::string_view> views(items.begin(), items.end());
    std::vector<uint8_t> answers;
    Status added;
    std::thread adder([&] { added = (*f)->AddMany(views, &answers); });
    // Once transactions have answered (their count rides the next ones'
    // guards), the server refuses writes.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (raw_->Str({"HGET", "{" + name + "}:meta", "count"}) == "0" &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    raw_->Must({"CONFIG", "SET", "maxmemory", "1"});
    adder.join();
    raw_->Must({"CONFIG", "SET", "maxmemory", "0"});
    ASSERT_EQ(added.code(), StatusCode::kResourceExhausted) << added.ToString();
    const auto confirmed = static_cast<uint64_t>(std::count(answers.begin(), answers.end(), 1));
    ASSERT_GT(confirmed, 0u);
    ASSERT_LT(answers.size(), items.size());
    f->reset();  // sends the count it still holds
    auto reopened = BloomFilter::Open(*store_, name);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    auto info = (*reopened)->Info();
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_GE(info->items_added, counting ? answers.size() : confirmed)
        << answers.size() << " items confirmed added";
  }
}

// A window filter makes its slices later: one whose slice does not fit under
// maxmemory is refused at its create, as a plain filter is. It was created,
// and every add then answered 507 (an audit).
TEST_F(RedisStoreTest, AWindowWhoseSliceDoesNotFitUnderMaxmemoryIsRefusedAtCreate) {
  const uint64_t used = UsedMemory(raw_->Str({"INFO", "memory"}));
  raw_->Must({"CONFIG", "SET", "maxmemory", std::to_string(used + 1'000'000)});
  FilterOptions big = Window(3'600'000, 2);
  big.capacity = 3'000'000;  // slices of about 3.6 MB
  const Status refused = BloomFilter::Create(*store_, "bigw", big).status();
  const std::string left =
      raw_->Str({"EXISTS", internal::KeysFor("bigw", internal::KeyMode::kPlain).meta});
  // A window whose slices fit is created under the same limit, and adds.
  auto fits = BloomFilter::Create(*store_, "smallw", Window(3'600'000, 2));
  const Status added = fits.ok() ? (*fits)->Add("x") : fits.status();
  raw_->Must({"CONFIG", "SET", "maxmemory", "0"});
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_NE(refused.message().find("a slice's"), std::string::npos) << refused.message();
  EXPECT_EQ(left, "0") << "nothing made";
  EXPECT_TRUE(added.ok()) << added.ToString();
}

// A scaling filter's next layer that does not fit under maxmemory is
// refused before Redis allocates it, as a create is: resource_exhausted,
// with the server still under its limit and taking other filters' adds.
// Before, the layer's SETRANGE took the server past maxmemory (4.8 MB to
// 12.2 MB under 8 MB in the audit), and every write on it, to any filter,
// then failed with OOM.
TEST_F(RedisStoreTest, ALayerThatDoesNotFitUnderMaxmemoryIsRefusedBeforeItIsMade) {
  FilterOptions scaling = Options(20'000, 0.01);
  scaling.kind = FilterKind::kScaling;
  scaling.expansion = 16;  // layer 1: 320,000 items at 0.25%, about 580 kB
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "big", scaling));
  ASSERT_OK_AND_ASSIGN(auto other, BloomFilter::Create(*store_, "other", Options(1000, 0.01)));
  auto used_memory = [&] { return UsedMemory(raw_->Str({"INFO", "memory"})); };
  const auto items = Items(Encoding::kUtf8, 20'100);
  const auto views = Views(items);
  const std::span<const std::string_view> all(views);
  ASSERT_TRUE(f->AddMany(all.first(20'000)).ok());  // layer 0 full
  const uint64_t used = used_memory();
  // Room for an add's buffers, not for layer 1.
  const uint64_t max = used + 400'000;
  raw_->Must({"CONFIG", "SET", "maxmemory", std::to_string(max)});
  const Status grown = f->AddMany(all.subspan(20'000));
  const uint64_t used_after = used_memory();
  const Status other_add = other->Add("still-taken");
  raw_->Must({"CONFIG", "SET", "maxmemory", "0"});
  EXPECT_EQ(grown.code(), StatusCode::kResourceExhausted) << grown.ToString();
  EXPECT_NE(grown.message().find("has no room for part 1"), std::string::npos) << grown.message();
  EXPECT_LT(used_after, max) << "the layer was made past maxmemory";
  EXPECT_TRUE(other_add.ok()) << other_add.ToString();
  ASSERT_OK_AND_ASSIGN(FilterInfo info, f->Info());
  EXPECT_EQ(info.parts, 1u);
}

// A sharded filter that does not fit under maxmemory is refused with
// nothing left, as an unsharded one is. Only its first shard was checked:
// the others took the server past maxmemory (1.39 GB under 1 GB in an
// audit), the create then failed OOM, and its half-made filter stayed, so
// every write to every filter failed OOM until someone dropped it.
TEST_F(RedisStoreTest, AShardedFilterThatDoesNotFitIsRefusedWithNothingLeft) {
  ASSERT_OK_AND_ASSIGN(auto other, BloomFilter::Create(*store_, "other", Options(1000, 0.01)));
  const uint64_t used = UsedMemory(raw_->Str({"INFO", "memory"}));
  FilterOptions o = Options(4'000'000, 0.01);  // about 4.8 MB
  o.shards = 4;                                // 1.2 MB each
  const uint64_t max = used + 3'000'000;       // room for two shards
  raw_->Must({"CONFIG", "SET", "maxmemory", std::to_string(max)});
  const Status created = BloomFilter::Create(*store_, "spread", o).status();
  const Status other_add = other->Add("still-taken");
  const int64_t keys = raw_->Int({"DBSIZE"});
  raw_->Must({"CONFIG", "SET", "maxmemory", "0"});
  EXPECT_EQ(created.code(), StatusCode::kResourceExhausted) << created.ToString();
  EXPECT_TRUE(other_add.ok()) << other_add.ToString();
  EXPECT_EQ(keys, 2) << "the half-made filter's keys stayed";
  EXPECT_EQ(store_->ReadConfig("spread").status().code(), StatusCode::kNotFound);
  // All four shards go to this one server: refused before the first is
  // made, so the use it names is the server's own. Shard by shard, two were
  // placed first, and their 2.4 MB were named as the server's use.
  ASSERT_OK_AND_ASSIGN(FilterConfig config, MakeConfig(o));
  EXPECT_NE(created.message().find("its shards' " + std::to_string(4 * config.data_bytes())),
            std::string::npos)
      << created.message();
  const size_t at = created.message().find(" bytes and the ");
  ASSERT_NE(at, std::string::npos) << created.message();
  EXPECT_LT(std::stoull(created.message().substr(at + 15)), used + config.data_bytes() / 2)
      << created.message();
}

// A bitmap longer than the server's proto-max-bulk-len is out of room (exit
// 3, HTTP 507), not "internal" (500, which says a bug).
TEST_F(RedisStoreTest, ABitmapPastProtoMaxBulkLenIsOutOfRoom) {
  raw_->Must({"CONFIG", "SET", "proto-max-bulk-len", "1mb"});
  const Status created =
      BloomFilter::Create(*store_, "long", Options(2'000'000, 0.01)).status();  // 2.4 MB
  raw_->Must({"CONFIG", "SET", "proto-max-bulk-len", "512mb"});
  EXPECT_EQ(created.code(), StatusCode::kResourceExhausted) << created.ToString();
  EXPECT_NE(created.message().find("proto-max-bulk-len"), std::string::npos);
  EXPECT_EQ(store_->ReadConfig("long").status().code(), StatusCode::kNotFound);
}

// A server at maxmemory with noeviction refuses every command queued in
// MULTI, reads too, so checks failed (resource_exhausted) although they need
// no memory: a full Redis stopped answering "is it there?". Reads now go
// again as one no-writes script, which Redis runs while out of memory, with
// the same answers; writes still get resource_exhausted.
// While the server is out of memory, a connection whose read was refused
// and then ran as a script sends its next reads as scripts for a second:
// each refused MULTI cost the server as much as the script itself (stop 42:
// 1.0 us per checked block item at OOM against 0.33 normally). Counted by the
// server's own errorstat_OOM.
TEST_F(RedisStoreTest, ReadsAtOomGoStraightToTheScriptForASecond) {
  auto store = MustOpen(server_->url() + "?pool_size=1");
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "oom", Options(1000, 0.01)));
  ASSERT_TRUE(f->Add("x").ok());
  const auto refusals = [&] {
    const std::string info = raw_->Str({"INFO", "errorstats"});
    const size_t at = info.find("errorstat_OOM:count=");
    return at == std::string::npos ? 0 : std::stoi(info.substr(at + 20));
  };
  raw_->Must({"CONFIG", "SET", "maxmemory", "1"});
  struct Restore {
    RawRedis* raw;
    ~Restore() { raw->Must({"CONFIG", "SET", "maxmemory", "0"}); }
  } restore{raw_.get()};
  const int before = refusals();
  ASSERT_OK_AND_ASSIGN(bool present, f->Contains("x"));
  EXPECT_TRUE(present);
  const int learned = refusals();
  EXPECT_GT(learned, before) << "the first read was not refused: is the server out of memory?";
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(present, f->Contains("x"));
    EXPECT_TRUE(present);
  }
  EXPECT_EQ(refusals(), learned) << "reads drew another refused MULTI each";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_OK_AND_ASSIGN(present, f->Contains("x"));  // tries MULTI again, once
  EXPECT_EQ(refusals(), learned + (learned - before)) << "(each queued command counts)";
}

TEST_F(RedisStoreTest, ChecksAndReadsWorkWhileTheServerIsOutOfMemory) {
  FilterOptions counting = Options(3000, 0.01, Strategy::kBlock);
  counting.kind = FilterKind::kCounting;
  FilterOptions scaling = Options(1000, 0.01);
  scaling.kind = FilterKind::kScaling;  // 3000 items: layers 0 and 1
  // A check is one transaction of its 6 slices; the 3000 items go in one.
  FilterOptions window = Options(6 * 3000, 0.01);
  window.kind = FilterKind::kWindow;
  window.window_millis = 6 * 3'600'000;
  window.slices = 6;
  const std::vector<std::pair<std::string, FilterOptions>> filters = {
      {"full-guava", Options(3000, 0.01)},  // BITFIELD_RO of 21,000 GETs a batch
      {"full-block", Options(3000, 0.01, Strategy::kBlock)},
      {"full-redisson", Options(3000, 0.01, Strategy::kRedisson)},
      {"full-counting", counting},
      {"full-scaling", scaling},
      {"full-window", window},
  };
  const auto members = Items(Encoding::kUtf8, 3000);
  const auto others = Items(Encoding::kUtf8, 3000, 1);
  std::vector<std::unique_ptr<BloomFilter>> opened;
  for (const auto& [name, options] : filters) {
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, name, options));
    ASSERT_TRUE(f->AddMany(Views(members)).ok()) << name;
    opened.push_back(std::move(f));
  }
  // A reader without +eval cannot run the script: its check fails with the
  // server's OOM, as before, not with a permission error.
  raw_->Must(
      {"ACL", "SETUSER", "no-eval", "on", ">pw", "~*", "+@read", "+multi", "+exec", "+ping"});
  auto reader_store = MustOpen("redis://no-eval:pw@127.0.0.1:" + std::to_string(server_->port()));
  ASSERT_NE(reader_store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto reader, BloomFilter::Open(*reader_store, "full-block"));
  raw_->Must({"CONFIG", "SET", "maxmemory", "1"});
  struct Restore {
    RawRedis* raw;
    ~Restore() {
      raw->Must({"CONFIG", "SET", "maxmemory", "0"});
      raw->Run({"ACL", "DELUSER", "no-eval"});
    }
  } restore{raw_.get()};
  const Status refused = reader->Contains(members[0]).status();
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_NE(refused.message().find("OOM"), std::string::npos) << refused.ToString();
  for (size_t i = 0; i < filters.size(); ++i) {
    const std::string& name = filters[i].first;
    BloomFilter& f = *opened[i];
    std::vector<uint8_t> present;
    const Status checked = f.ContainsMany(Views(members), &present);
    ASSERT_TRUE(checked.ok()) << name << ": " << checked.ToString();
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), 3000) << name;
    ASSERT_TRUE(f.ContainsMany(Views(others), &present).ok()) << name;
    EXPECT_LT(std::count(present.begin(), present.end(), 1), 150) << name;
    ASSERT_OK_AND_ASSIGN(const bool one, f.Contains(members[7]));
    EXPECT_TRUE(one) << name;
    ASSERT_OK_AND_ASSIGN(FilterInfo info, f.Info());  // BITCOUNT, or the counters' bytes
    EXPECT_GT(info.items_added, 2900u) << name;       // not new: an add whose cells were all set
    EXPECT_LE(info.items_added, 3000u) << name;
    EXPECT_GT(info.bits_set, 0u) << name;
    std::ostringstream dump;
    const Status exported = ExportDump(f, dump);  // GETRANGE of the bitmap
    EXPECT_TRUE(exported.ok()) << name << ": " << exported.ToString();
    const Status added = f.Add("new-while-full");
    EXPECT_EQ(added.code(), StatusCode::kResourceExhausted) << name << ": " << added.ToString();
  }
  // Opening a filter while out of memory reads it the same way.
  ASSERT_OK_AND_ASSIGN(auto again, BloomFilter::Open(*store_, "full-guava"));
  ASSERT_OK_AND_ASSIGN(const bool one, again->Contains(members[0]));
  EXPECT_TRUE(one);
}

// A server that can evict filter keys is a warning (an evicted bitmap is
// data_loss on its next use); noeviction, or no maxmemory, is none.
TEST_F(RedisStoreTest, WarnsWhenTheServerCanEvictFilterKeys) {
  auto store = MustOpen(server_->url());
  auto none = store->Warnings();
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty()) << (*none)[0];
  raw_->Run({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  auto no_limit = store->Warnings();
  ASSERT_TRUE(no_limit.ok());
  EXPECT_TRUE(no_limit->empty()) << "without maxmemory nothing is ever evicted";
  raw_->Run({"CONFIG", "SET", "maxmemory", "1gb"});
  auto any = store->Warnings();
  raw_->Run({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"});
  auto volatile_only = store->Warnings();
  raw_->Run({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  raw_->Run({"CONFIG", "SET", "maxmemory", "0"});
  ASSERT_TRUE(any.ok());
  ASSERT_EQ(any->size(), 1u);
  EXPECT_NE((*any)[0].find("allkeys-lru"), std::string::npos) << (*any)[0];
  EXPECT_NE((*any)[0].find("noeviction"), std::string::npos) << (*any)[0];
  ASSERT_TRUE(volatile_only.ok());
  ASSERT_EQ(volatile_only->size(), 1u);
  EXPECT_NE((*volatile_only)[0].find("TTL"), std::string::npos) << (*volatile_only)[0];
  // At its maxmemory with noeviction every add is refused (507): /readyz
  // said "ready" without a word (an audit).
  raw_->Run({"CONFIG", "SET", "maxmemory", "1"});
  auto full = store->Warnings();
  raw_->Run({"CONFIG", "SET", "maxmemory", "0"});
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  ASSERT_EQ(full->size(), 1u);
  EXPECT_NE((*full)[0].find("is at its maxmemory"), std::string::npos) << (*full)[0];

  // A user that may not run INFO: the policy is unknown, which is said.
  raw_->Run({"ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "+@all", "-info"});
  auto limited = MustOpen("redis://noinfo:pw@127.0.0.1:" + std::to_string(server_->port()));
  auto unknown = limited->Warnings();
  raw_->Run({"ACL", "DELUSER", "noinfo"});
  ASSERT_TRUE(unknown.ok()) << unknown.status().ToString();
  ASSERT_EQ(unknown->size(), 1u);
  EXPECT_NE((*unknown)[0].find("INFO"), std::string::npos) << (*unknown)[0];

  // A user allowed INFO memory alone: no warning, and no error, unless
  // wait_replicas asks for INFO replication, which is then a warning too
  // (it failed redbloom info and /readyz with NOPERM whatever wait_replicas).
  raw_->Run(
      {"ACL", "SETUSER", "memonly", "on", ">pw", "~*", "&*", "+@all", "-info", "+info|memory"});
  const std::string memonly = "redis://memonly:pw@127.0.0.1:" + std::to_string(server_->port());
  // Denials in the server's ACL LOG: the first Warnings asks for INFO
  // replication, later ones do not (one denial per store, not per probe).
  const auto denials = [&] {
    long long total = 0;
    auto log = raw_->Run({"ACL", "LOG"});
    for (size_t e = 0; log->type == REDIS_REPLY_ARRAY && e < log->elements; ++e) {
      const redisReply* entry = log->element[e];
      for (size_t i = 0; i + 1 < entry->elements; i += 2) {
        if (std::string_view(entry->element[i]->str, entry->element[i]->len) == "count") {
          total += entry->element[i + 1]->integer;
        }
      }
    }
    return total;
  };
  auto memonly_store = MustOpen(memonly);
  auto plain = memonly_store->Warnings();
  const long long after_one = denials();
  auto plain_again = memonly_store->Warnings();
  const long long after_two = denials();
  auto waiting = MustOpen(memonly + "?wait_replicas=1")->Warnings();
  raw_->Run({"ACL", "DELUSER", "memonly"});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE(plain->empty()) << (*plain)[0];
  ASSERT_TRUE(plain_again.ok()) << plain_again.status().ToString();
  EXPECT_TRUE(plain_again->empty()) << (*plain_again)[0];
  EXPECT_GT(after_one, 0);
  EXPECT_EQ(after_two, after_one) << "INFO replication asked again";
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  ASSERT_EQ(waiting->size(), 1u);
  EXPECT_NE((*waiting)[0].find("wait_replicas"), std::string::npos) << (*waiting)[0];
}

// A master with min-replicas-to-write and no replica in sync refuses every
// write (NOREPLICAS); /readyz and `info` said nothing of it (an audit).
TEST_F(RedisStoreTest, WarnsWhileNoReplicaIsInSyncForMinReplicasToWrite) {
  auto store = MustOpen(server_->url());
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "norep", Options()));
  ASSERT_TRUE(f->Add("before").ok());
  raw_->Run({"CONFIG", "SET", "min-replicas-to-write", "1"});
  auto refusing = store->Warnings();
  const Status added = f->Add("during");
  auto kept = f->Contains("before");
  raw_->Run({"CONFIG", "SET", "min-replicas-to-write", "0"});
  ASSERT_TRUE(refusing.ok()) << refusing.status().ToString();
  ASSERT_EQ(refusing->size(), 1u);
  EXPECT_NE((*refusing)[0].find("min-replicas-to-write"), std::string::npos) << (*refusing)[0];
  EXPECT_EQ(added.code(), StatusCode::kUnavailable) << added.ToString();
  EXPECT_NE(added.message().find("min-replicas-to-write"), std::string::npos) << added.ToString();
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_TRUE(*kept) << "checks go on";
  auto writing = store->Warnings();
  ASSERT_TRUE(writing.ok()) << writing.status().ToString();
  EXPECT_TRUE(writing->empty()) << (*writing)[0];
}

TEST_F(RedisStoreTest, SlowServerIsDeadlineExceededAndTheConnectionRecovers) {
  auto store = MustOpen(server_->url() + "?command_timeout_ms=100");
  auto f = BloomFilter::Create(*store, "f", Options());
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Add("x").ok());
  // CLIENT PAUSE holds every client's commands for 600 ms.
  raw_->Run({"CLIENT", "PAUSE", "600", "ALL"});
  const Status s = (*f)->Contains("x").status();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  // The timed-out connection was discarded; a fresh one works.
  auto hit = (*f)->Contains("x");
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_TRUE(*hit);
}

TEST_F(RedisStoreTest, PoolServesConcurrentCallers) {
  auto store = MustOpen(server_->url() + "?pool_size=3&batch_items=100");
  constexpr int kThreads = 8;
  constexpr size_t kPerThread = 1000;
  auto created = BloomFilter::Create(*store, "shared", Options(kThreads * kPerThread, 0.01));
  ASSERT_TRUE(created.ok());
  std::atomic<uint64_t> new_items{0};
  std::vector<std::thread> threads;
  std::vector<Status> results(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto f = BloomFilter::Open(*store, "shared");
      if (!f.ok()) {
        results[t] = f.status();
        return;
      }
      const auto items = Items(Encoding::kUtf8, kPerThread, /*salt=*/t + 1);
      std::vector<uint8_t> added;
      results[t] = (*f)->AddMany(Views(items), &added);
      for (uint8_t a : added) new_items += a;
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& s : results) ASSERT_TRUE(s.ok()) << s.ToString();
  auto f = BloomFilter::Open(*store, "shared");
  ASSERT_TRUE(f.ok());
  for (int t = 0; t < kThreads; ++t) {
    const auto items = Items(Encoding::kUtf8, kPerThread, t + 1);
    std::vector<uint8_t> present;
    ASSERT_TRUE((*f)->ContainsMany(Views(items), &present).ok());
    for (size_t i = 0; i < kPerThread; ++i) ASSERT_EQ(present[i], 1) << t << "/" << i;
  }
  auto info = (*f)->Info();
  ASSERT_TRUE(info.ok());
  // Adds are atomic per item: concurrent writers never both count one item.
  EXPECT_EQ(info->items_added, new_items.load());
  // At most pool_size connections, plus store_'s one and raw_'s.
  const std::string clients = raw_->Str({"CLIENT", "LIST"});
  EXPECT_LE(std::count(clients.begin(), clients.end(), '\n'), 3 + 1 + 1) << clients;
}

// The pool closes connections left idle by a fall in traffic: they stayed
// open for the pool's life, so after one burst an idle redbloomd held
// pool_size of them and CLI runs against a server at maxclients were locked
// out.
TEST_F(RedisStoreTest, PoolClosesConnectionsLeftIdle) {
  auto store = MustOpen(server_->url() + "?pool_size=4&batch_items=10&idle_timeout_ms=1000");
  auto f = BloomFilter::Create(*store, "burst", Options(100000, 0.01));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto items = Items(Encoding::kUtf8, 20000, /*salt=*/1);
  const auto views = Views(items);
  // Slow batches (10 items per command) from 4 threads keep 4 connections
  // busy at once.
  for (const Status& s : testing::AddFromThreads(**f, views, 4, 2000)) {
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  auto ours = [&] {
    const std::string clients = raw_->Str({"CLIENT", "LIST"});
    return std::count(clients.begin(), clients.end(), '\n') - 2;  // not store_'s nor raw_'s
  };
  EXPECT_GE(ours(), 2) << "the burst did not open several connections";
  const auto offered = [&] {
    return internal::InfoField(raw_->Str({"INFO", "stats"}), "total_connections_received");
  };
  const std::string offered_before = offered();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // The next call closes those unused past the timeout, and reuses the last
  // one back rather than connect again.
  auto hit = (*f)->Contains(views[0]);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_TRUE(*hit);
  EXPECT_EQ(ours(), 1);
  EXPECT_EQ(offered(), offered_before);
}

TEST_F(RedisStoreTest, ReconnectsAfterTheServerRestarts) {
  auto f = BloomFilter::Create(*store_, "f", Options());
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Add("x").ok());
  server_->Restart();  // no persistence here: the data is gone, the store must cope
  raw_ = std::make_unique<RawRedis>(server_->port());
  // The first call learns of the restart and says so (writes acknowledged
  // before it are gone); after that the store works on the server as it is.
  const Status told = store_->Ping();
  EXPECT_EQ(told.code(), StatusCode::kUnavailable) << told.ToString();
  EXPECT_EQ(told.reason(), StatusReason::kRestarted) << told.ToString();
  EXPECT_TRUE(store_->Ping().ok());
  EXPECT_EQ((*f)->Contains("x").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->Create("f", Config()).ok());
}

// A server at its maxclients, or refusing writes for want of replicas
// (min-replicas-to-write), is a transient state an operator ends: it was
// kInternal ("a bug"), so redbloomd answered 500 and exited at start
// instead of retrying.
TEST_F(RedisStoreTest, AFullServerAndMissingReplicasAreUnavailableNotInternal) {
  RedisServer own;
  own.Start();
  std::unique_ptr<Store> store = MustOpen(own.url() + "?max_retries=0&pool_size=1");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Create("r", Config(100, 0.01)).ok());
  auto filter = BloomFilter::Open(*store, "r");
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();

  own.Cli({"CONFIG", "SET", "min-replicas-to-write", "1"});
  const Status refused = (*filter)->Add("x");
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
  EXPECT_NE(refused.message().find("min-replicas-to-write"), std::string::npos)
      << refused.ToString();
  own.Cli({"CONFIG", "SET", "min-replicas-to-write", "0"});
  ASSERT_TRUE((*filter)->Add("x").ok());

  // The one connection of `store` stays; a new store finds no room.
  own.Cli({"CONFIG", "SET", "maxclients", "1"});
  const Status full = Store::Open(own.url() + "?max_retries=0").status();
  EXPECT_EQ(full.code(), StatusCode::kUnavailable) << full.ToString();
  EXPECT_EQ(full.reason(), StatusReason::kServerFull) << full.ToString();
  EXPECT_NE(full.message().find("maxclients"), std::string::npos) << full.ToString();
  own.Stop();
}

// Creating a large bitmap holds the server while it zero-fills it (7.5 s
// for 512 MiB on a loaded host): the create waits that out instead of
// failing on the command timeout, which left the filter made behind an
// error (and a sharded one half made).
TEST_F(RedisStoreTest, ALargeCreateOutlastsTheCommandTimeout) {
  RedisServer own;
  own.Start();
  std::unique_ptr<Store> store = MustOpen(own.url() + "?command_timeout_ms=30&max_retries=0");
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(
      FilterConfig big,
      MakeConfig({.capacity = 110'000'000, .error_rate = 0.01, .strategy = Strategy::kGuava64}));
  ASSERT_GT(big.data_bytes(), uint64_t{120} << 20);
  const Status created = store->Create("big", big);
  EXPECT_TRUE(created.ok()) << created.ToString();
  EXPECT_EQ(own.Cli({"STRLEN", "big"}), std::to_string(big.data_bytes()) + "\n");
  own.Stop();
}

// The seven fields and "NAME TOKEN" a guarded script expects, read from the
// filter's metadata as a handle would have them.
std::vector<std::string> CheckedFields(RawRedis& raw, const std::string& meta) {
  std::vector<std::string> out;
  for (const char* field : {"format", "kind", "strategy", "encoding", "bits", "hashes"}) {
    out.push_back(raw.Str({"HGET", meta, field}));
  }
  out.push_back(raw.Str({"HGET", meta, "name"}) + " " + raw.Str({"HGET", meta, "incarnation"}));
  return out;
}

// Redis 7.0 reads its clock afresh for each script of a transaction, so a
// filter's expiry can fall between an add's guard and its commit: the commit
// says so (not_found), where it answered 0 and the add failed "internal:
// unexpected redis reply to the add transaction's commit" (an audit: 11 of 40
// adds meeting a 1 s TTL through redbloomd). Staged here: the guard moved the
// bitmap aside, then the metadata went.
TEST_F(RedisStoreTest, AnAddsCommitAfterItsFilterExpiredSaysGone) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "commit-gone", Options(1000, 0.01)).ok());
  const auto keys = internal::KeysFor("commit-gone", internal::KeyMode::kPlain);
  std::vector<std::string> args = {"EVAL",      std::string(internal::scripts::kAddCommit),
                                   "3",         keys.meta,
                                   keys.bitmap, keys.scratch};
  for (std::string& v : CheckedFields(*raw_, keys.meta)) args.push_back(std::move(v));
  args.push_back(std::to_string(raw_->Int({"STRLEN", keys.bitmap})));
  ASSERT_EQ(raw_->Str({"RENAME", keys.bitmap, keys.scratch}), "OK");
  ASSERT_EQ(raw_->Int({"DEL", keys.meta}), 1);
  auto r = raw_->Run(args);
  ASSERT_EQ(r->type, REDIS_REPLY_ERROR) << "the commit answered " << r->type;
  EXPECT_NE(std::string_view(r->str, r->len).find("REDBLOOM_GONE"), std::string_view::npos)
      << std::string_view(r->str, r->len);
  EXPECT_EQ(raw_->Int({"EXISTS", keys.scratch}), 0);
}

// A window's parts list gets its expiry from the call that makes it, never
// again: PEXPIREAT of a time the server's clock has reached deletes the key
// at once, and Redis 7.0 reads that clock afresh after the script's TIME, so
// re-arming the live list in the filter's last millisecond deleted it under
// its slices, and every read in that millisecond was data_loss ("its parts
// list ... does not name part ..., whose key holds bits"; an audit: 2 in 40
// trials). Staged here with an expiry the re-arm would visibly change.
TEST_F(RedisStoreTest, MakingAPartNeverReArmsThePartsListsExpiry) {
  FilterOptions o = Window(600'000, 3);
  o.ttl_seconds = 100;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "rearm", o));
  ASSERT_TRUE(f->Add("x").ok());
  const auto keys = internal::KeysFor("rearm", internal::KeyMode::kPlain);
  const std::string part = raw_->Str({"HGET", keys.meta, "newest_slice"});
  const std::string part_key = raw_->Str({"HGET", keys.meta, "newest_key"});
  ASSERT_FALSE(part.empty());
  ASSERT_GT(raw_->Int({"PTTL", keys.parts}), 90'000);
  const std::string sooner = std::to_string(WallMillis() + 50'000);
  std::vector<std::string> args = {
      "EVAL", std::string(internal::scripts::kCreatePart), "3", keys.meta, part_key, keys.parts};
  for (std::string& v : CheckedFields(*raw_, keys.meta)) args.push_back(std::move(v));
  for (const std::string& v : {part, std::to_string(raw_->Int({"STRLEN", part_key})), sooner,
                               sooner, std::string("0"), std::string("0")}) {
    args.push_back(v);
  }
  auto r = raw_->Run(args);
  ASSERT_EQ(r->type, REDIS_REPLY_INTEGER) << std::string_view(r->str, r->len);
  EXPECT_GT(raw_->Int({"PTTL", keys.parts}), 90'000) << "the list's expiry was set again";
  ASSERT_OK_AND_ASSIGN(const bool present, f->Contains("x"));
  EXPECT_TRUE(present);
}

// Another program's key at a filter's bitmap key (a Java service that
// reused the name for a hash or a list) is never deleted or overwritten, as
// docs/format.md says: a drop deleted it, a rebuild renamed over it (an
// audit), where every read already said conflict. A drop takes the rest of
// the filter and leaves it; a window filter has no bitmap at its name, so
// whatever is there is not its own.
TEST_F(RedisStoreTest, AnotherProgramsKeyAtTheBitmapIsNeitherDeletedNorReplaced) {
  const FilterOptions seed = Options(1000, 0.01, Strategy::kSeed);
  ASSERT_TRUE(BloomFilter::Create(*store_, "w1", seed).ok());
  raw_->Run({"DEL", "w1"});
  raw_->Run({"HSET", "w1", "java", "field"});
  const Status dropped = BloomFilter::Drop(*store_, "w1");
  EXPECT_TRUE(dropped.ok()) << dropped.ToString();
  EXPECT_EQ(raw_->Str({"HGET", "w1", "java"}), "field");
  EXPECT_EQ(BloomFilter::Open(*store_, "w1").status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(BloomFilter::Create(*store_, "w2", seed).ok());
  raw_->Run({"DEL", "w2"});
  raw_->Run({"RPUSH", "w2", "javas-item"});
  const Status rebuilt =
      BloomFilter::Rebuild(*store_, "w2", seed, [](BloomFilter& b) { return b.Add("a"); });
  EXPECT_EQ(rebuilt.code(), StatusCode::kConflict) << rebuilt.ToString();
  EXPECT_NE(rebuilt.message().find("holds a list"), std::string::npos) << rebuilt.ToString();
  EXPECT_EQ(raw_->Str({"LINDEX", "w2", "0"}), "javas-item");
  EXPECT_EQ(store_->ReadConfig(TemporaryName("w2")).status().code(), StatusCode::kNotFound);

  ASSERT_OK_AND_ASSIGN(auto w, BloomFilter::Create(*store_, "w3", Window(3'600'000, 4)));
  ASSERT_TRUE(w->Add("a").ok());
  const auto keys = internal::KeysFor("w3", internal::KeyMode::kPlain);
  const std::string slice = raw_->Str({"HGET", keys.meta, "newest_key"});
  raw_->Run({"SET", "w3", "another program's"});
  ASSERT_TRUE(BloomFilter::Drop(*store_, "w3").ok());
  EXPECT_EQ(raw_->Str({"GET", "w3"}), "another program's");
  EXPECT_EQ(raw_->Int({"EXISTS", keys.meta, keys.parts, slice}), 0);
}

// Of identical sharded creates racing, one is told it made the filter: each
// that found the filter's shards unplaced finished them, and was told
// "created" too (an audit: 2-6 of 6 concurrent PUTs answered 201 in 14 of
// 20 rounds).
TEST_F(RedisStoreTest, OfRacingShardedCreatesOneMadeTheFilter) {
  FilterOptions o = Options(50'000, 0.01);
  o.shards = 4;
  constexpr int kThreads = 6;
  int rounds_with_more = 0;
  for (int round = 0; round < 10; ++round) {
    const std::string name = "race" + std::to_string(round);
    std::atomic<int> created{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        bool made = false;
        auto f = BloomFilter::Create(*store_, name, o, &made);
        if (!f.ok()) {
          ++failed;
          ADD_FAILURE() << f.status().ToString();
        }
        if (made) ++created;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(created.load(), 1) << name;
    if (created.load() > 1) ++rounds_with_more;
    EXPECT_EQ(raw_->Str({"HGET", "{" + name + "}:meta", "shards_ready"}), "1") << name;
  }
  EXPECT_EQ(rounds_with_more, 0);
}

// A clear keeps the bitmap's expiry as a time: put back as a TTL after the
// new bitmap was allocated, it moved later by that time at every clear
// (1 s after ten clears of a 124 MB filter, an audit), and the bitmap then
// outlived its metadata and refused every create of the name.
TEST_F(RedisStoreTest, AClearKeepsTheBitmapsExpiryTime) {
  FilterOptions o = Options(10'000'000, 0.01);
  o.ttl_seconds = 3600;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "cleared", o));
  const long long at = raw_->Int({"PEXPIRETIME", "{cleared}:meta"});
  ASSERT_GT(at, 0);
  ASSERT_EQ(raw_->Int({"PEXPIRETIME", "cleared"}), at);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(f->Add("x").ok());
    ASSERT_TRUE(f->Clear().ok());
  }
  EXPECT_EQ(raw_->Int({"PEXPIRETIME", "cleared"}), at);
}

// A part made in the millisecond its expiry is reached is deleted by its
// PEXPIREAT as it is made (Redis 7.0 reads a fresh clock there); it was
// listed all the same, and the layer or slice read data_loss for the rest
// of that millisecond (an audit: 5 in 40 trials). Staged by a user denied
// TIME, so that the script's own check of the expiry is skipped: at the
// filter's own expiry the filter is gone; a slice's earlier expiry is the
// client's clock behind, as for a create (the review: my first version said
// a live filter was gone).
TEST_F(RedisStoreTest, APartDeletedAsItIsMadeIsNotListed) {
  FilterOptions o = Window(600'000, 3);
  o.ttl_seconds = 100;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store_, "asmade", o));
  ASSERT_TRUE(f->Add("x").ok());
  const auto keys = internal::KeysFor("asmade", internal::KeyMode::kPlain);
  const uint64_t newest = std::stoull(raw_->Str({"HGET", keys.meta, "newest_slice"}));
  const std::string bytes =
      std::to_string(raw_->Int({"STRLEN", raw_->Str({"HGET", keys.meta, "newest_key"})}));
  const std::string past = std::to_string(WallMillis() - 1000);
  raw_->Must({"ACL", "SETUSER", "notime2", "reset", "on", ">pw", "~*", "&*", "+@all", "-time"});
  RawRedis notime("redis://notime2:pw@127.0.0.1:" + std::to_string(server_->port()));
  struct Case {
    uint64_t part;
    bool at_filters_expiry;
  };
  for (const Case c : {Case{newest + 1, false}, Case{newest + 2, true}}) {
    if (c.at_filters_expiry) raw_->Must({"HSET", keys.meta, "expires_at_ms", past});
    const std::string part_key =
        internal::PartKeysFor("asmade", internal::KeyMode::kPlain, c.part).bitmap;
    std::vector<std::string> args = {
        "EVAL", std::string(internal::scripts::kCreatePart), "3", keys.meta, part_key, keys.parts};
    for (std::string& v : CheckedFields(*raw_, keys.meta)) args.push_back(std::move(v));
    for (const std::string& v :
         {std::to_string(c.part), bytes, past, raw_->Str({"HGET", keys.meta, "expires_at_ms"}),
          std::string("0"), std::string("0")}) {
      args.push_back(v);
    }
    auto r = notime.Run(args);
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR) << c.part << " answered " << r->type;
    const std::string_view text(r->str, r->len);
    EXPECT_NE(text.find(c.at_filters_expiry ? "REDBLOOM_GONE" : "REDBLOOM_PAST"),
              std::string_view::npos)
        << text;
    EXPECT_EQ(raw_->Int({"HEXISTS", keys.parts, std::to_string(c.part)}), 0) << "listed";
    EXPECT_EQ(raw_->Int({"EXISTS", part_key}), 0);
  }
}

}  // namespace
}  // namespace redbloom
