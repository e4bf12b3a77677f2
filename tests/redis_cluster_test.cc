// The Redis Cluster store against a real local cluster (3 masters, 3
// replicas) that the test starts: routing, sharded filters, resharding and
// failover while clients work. (Every store operation and every filter kind
// also runs on the cluster in store_test and kinds_test.)
#include "redis_cluster.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "raw_redis.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "redis/redis_keys.h"
#include "redis_server.h"
#include "slow_relay.h"
#include "test_util.h"

namespace redbloom {
namespace {

using testing::RedisCluster;
using testing::RedisServer;

std::vector<std::string> Items(const std::string& prefix, int n, int from = 0) {
  std::vector<std::string> v;
  for (int i = from; i < from + n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}
std::vector<std::string_view> Views(const std::vector<std::string>& v, size_t from = 0,
                                    size_t n = SIZE_MAX) {
  n = std::min(n, v.size() - from);
  return {v.begin() + from, v.begin() + from + n};
}

std::unique_ptr<Store> MustOpen(const std::string& url) {
  auto s = Store::Open(url);
  EXPECT_TRUE(s.ok()) << url << ": " << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

int CountPresent(BloomFilter& f, const std::vector<std::string>& items) {
  std::vector<uint8_t> present;
  Status s = f.ContainsMany(Views(items), &present);
  EXPECT_TRUE(s.ok()) << s.ToString();
  int n = 0;
  for (uint8_t p : present) n += p;
  return n;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// The cluster's node timeout at 1 s while it lives (the suite's is 5 s), so
// a killed master is failed over in ~2 s: a call rides out a failover for
// 10 s, which 5 s of timeout and the election came close to.
class FastFailovers {
 public:
  explicit FastFailovers(RedisCluster& cluster) : cluster_(cluster) {
    cluster_.SetNodeTimeout(1000);
  }
  ~FastFailovers() { cluster_.SetNodeTimeout(RedisCluster::kSteadyNodeTimeoutMs); }
  FastFailovers(const FastFailovers&) = delete;
  FastFailovers& operator=(const FastFailovers&) = delete;

 private:
  RedisCluster& cluster_;
};

class RedisClusterTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (cluster_ == nullptr) cluster_ = testing::Started<RedisCluster>().release();
    cluster_->WaitUntilOk();
    cluster_->FlushAll();
    store_ = MustOpen(cluster_->url());
    ASSERT_NE(store_, nullptr);
  }
  // What the nodes did (a failover, a resync) tells a failure of the code
  // from one of the test's cluster, which a loaded host can cause.
  void TearDown() override {
    if (HasFailure() && cluster_ != nullptr) std::cerr << cluster_->Describe();
  }

  // redis-cli in cluster mode (follows redirects).
  static std::string Cli(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/env", "redis-cli", "-c", "-p",
                                     std::to_string(cluster_->Masters().front()->port())};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv).out;
  }

  // Moves every key of `slot` from its master to another master and leaves
  // the migration unfinished (MIGRATING on the old owner, IMPORTING on the
  // new one, every map unchanged), so that the old owner answers ASK. The
  // new owner's id, for FinishMigration. `per_step` keys a MIGRATE, with
  // `pause` after each (a migration in progress while a client writes).
  static std::string MigrateKeysOf(int slot, int per_step = 100,
                                   std::chrono::milliseconds pause = {}) {
    const Migration m = StartMigration(slot);
    if (m.to == nullptr) return "";
    MoveKeys(m, per_step, pause);
    return m.to_id;
  }
  // A migration of `slot` begun (MIGRATING on its master `from`, IMPORTING
  // on another, `to`), no key moved yet.
  struct Migration {
    int slot = -1;
    RedisServer* from = nullptr;
    RedisServer* to = nullptr;
    std::string to_id;
  };
  // The master of one of a sharded filter's shards 1.. that is not the
  // master of its metadata, or null.
  static RedisServer* OtherShardsMaster(const std::string& name, uint32_t shards) {
    const int home =
        cluster_
            ->MasterOf(internal::KeySlot(internal::KeysFor(name, internal::KeyMode::kPlain).meta))
            .port();
    for (uint32_t s = 1; s < shards; ++s) {
      const auto k = internal::ShardKeysFor(name, internal::KeyMode::kPlain, s, shards);
      RedisServer& owner = cluster_->MasterOf(internal::KeySlot(k.meta));
      if (owner.port() != home) return &owner;
    }
    return nullptr;
  }
  static Migration StartMigration(int slot) {
    Migration m;
    m.slot = slot;
    m.from = &cluster_->MasterOf(slot);
    for (RedisServer* master : cluster_->Masters()) {
      if (master != m.from) m.to = master;
    }
    EXPECT_NE(m.to, nullptr);
    if (m.to == nullptr) return m;
    const std::string from_id = Trim(m.from->Cli({"CLUSTER", "MYID"}));
    m.to_id = Trim(m.to->Cli({"CLUSTER", "MYID"}));
    m.to->Cli({"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", from_id});
    m.from->Cli({"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", m.to_id});
    return m;
  }
  // MIGRATEs every key of the slot, `per_step` keys a command, with `pause`
  // after each.
  static void MoveKeys(const Migration& m, int per_step = 100,
                       std::chrono::milliseconds pause = {}) {
    const std::string slot = std::to_string(m.slot);
    for (;;) {
      std::istringstream keys(
          m.from->Cli({"CLUSTER", "GETKEYSINSLOT", slot, std::to_string(per_step)}));
      std::string key;
      if (!std::getline(keys, key) || key.empty()) break;
      m.from->Cli({"MIGRATE", "127.0.0.1", std::to_string(m.to->port()), key, "0", "5000"});
      std::this_thread::sleep_for(pause);
    }
  }
  // Gives `slot` to the node `to_id` in every master's map, the new owner's
  // first (as redis-cli --cluster does).
  static void FinishMigration(int slot, const std::string& to_id) {
    std::vector<RedisServer*> masters = cluster_->Masters();
    std::stable_partition(masters.begin(), masters.end(), [&](RedisServer* m) {
      return Trim(m->Cli({"CLUSTER", "MYID"})) == to_id;
    });
    for (RedisServer* m : masters) {
      m->Cli({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", to_id});
    }
  }

  static inline RedisCluster* cluster_ = nullptr;
  std::unique_ptr<Store> store_;
};

TEST_F(RedisClusterTest, SlotsAgreeWithTheServers) {
  RedisServer& node = cluster_->node(0);
  for (const std::string key : {"orders", "{orders}:meta", "a{b", "x}", "{user1000}.following",
                                "foo{}{bar}", "订单", "{rb42}x/shard/3:meta", ""}) {
    EXPECT_EQ(Trim(node.Cli({"CLUSTER", "KEYSLOT", key})), std::to_string(internal::KeySlot(key)))
        << "'" << key << "'";
  }
}

// redis:// pointed at a cluster node is refused when the store opens: the
// node holds only its own slots' keys, so a listing silently missed the
// other nodes' filters (exit 0) and /readyz said ready.
TEST_F(RedisClusterTest, ARedisUrlNamingAClusterNodeIsRefusedAtOpen) {
  auto store = Store::Open("redis://127.0.0.1:" + std::to_string(cluster_->node(0).port()));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
  EXPECT_NE(store.status().message().find("redis-cluster://"), std::string::npos)
      << store.status().ToString();
}

// The old layout of a braced name kept its metadata in another slot than
// its bitmap: it is looked for on the node that holds it (it was asked of
// the bitmap's node, which answered MOVED, and the filter read as a bare
// bitmap to attach).
TEST_F(RedisClusterTest, AFilterInTheOldLayoutIsNamedFromAnotherSlot) {
  const auto node_of = [](const std::string& key) {
    return cluster_->MasterOf(internal::KeySlot(key)).port();
  };
  std::string name;
  for (char c = 'a'; c <= 'z' && name.empty(); ++c) {
    const std::string candidate = std::string("a{") + c;
    if (node_of(candidate) != node_of(candidate + ":meta")) name = candidate;
  }
  ASSERT_FALSE(name.empty()) << "no name with its old metadata on another master";
  Cli({"SETBIT", name, "100", "1"});
  Cli({"HSET", name + ":meta", "kind", "plain"});
  const Status s = BloomFilter::Open(*store_, name).status();
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s.ToString();
  EXPECT_NE(s.message().find("'" + name + ":meta'"), std::string::npos) << s.message();
}

TEST_F(RedisClusterTest, FiltersLandOnEveryMasterAndListAsksThemAll) {
  std::set<int> ports;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "f" + std::to_string(i);
    auto f = BloomFilter::Create(*store_, name, {.capacity = 1000, .error_rate = 0.01});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->Add("x").ok());
    RedisServer& owner = cluster_->MasterOf(internal::KeySlot(name));
    ports.insert(owner.port());
    // Every key of the filter is on its bitmap's node.
    for (const std::string& key : std::vector<std::string>{name, "{" + name + "}:meta"}) {
      EXPECT_EQ(Trim(owner.Cli({"EXISTS", key})), "1") << key;
    }
  }
  EXPECT_EQ(ports.size(), 3u) << "30 filters should use all three masters";
  auto names = store_->List();
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_EQ(names->size(), 30u);
}

// A sharded filter: its shards in slots spread over the slot space, so over
// the masters; it keeps the rate asked for, and drop removes every key.
TEST_F(RedisClusterTest, ShardedFilterSpreadsOverMastersAndKeepsItsRate) {
  auto f =
      BloomFilter::Create(*store_, "big", {.capacity = 40000, .error_rate = 0.01, .shards = 8});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto items = Items("ORD-", 40000);
  for (size_t i = 0; i < items.size(); i += 1000) {
    ASSERT_TRUE((*f)->AddMany(Views(items, i, 1000)).ok());
  }
  EXPECT_EQ(CountPresent(**f, items), 40000) << "no false negatives";
  const double fpp = CountPresent(**f, Items("never-", 50000)) / 50000.0;
  EXPECT_LE(fpp, 0.0115) << "the shards together keep the rate";
  auto info = (*f)->Info();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->parts, 8u);
  EXPECT_EQ(info->items_added + 0, info->items_added);
  EXPECT_NEAR(static_cast<double>(info->approximate_items), 40000, 1000);
  std::set<int> ports;
  for (uint32_t s = 1; s < 8; ++s) {
    const auto k = internal::ShardKeysFor("big", internal::KeyMode::kPlain, s, 8);
    RedisServer& owner = cluster_->MasterOf(internal::KeySlot(k.bitmap));
    ports.insert(owner.port());
    EXPECT_EQ(Trim(owner.Cli({"EXISTS", k.bitmap, k.meta})), "2") << s;
  }
  EXPECT_EQ(ports.size(), 3u) << "shards spread over every master";
  // Each shard holds about an eighth of the items.
  std::vector<uint8_t> present;
  auto config = store_->ReadConfig("big");
  ASSERT_TRUE(config.ok());
  auto bits = store_->OpenBits("big", *config);
  ASSERT_TRUE(bits.ok());
  for (uint64_t p = 0; p < 8; ++p) {
    EXPECT_NEAR(static_cast<double>(*(*bits)->ItemCount(p)), 5000, 500) << "shard " << p;
  }
  ASSERT_TRUE(store_->Drop("big").ok());
  for (RedisServer* m : cluster_->Masters()) {
    EXPECT_EQ(Trim(m->Cli({"DBSIZE"})), "0") << "keys left on " << m->port();
  }
}

// A shard refused by another node than the metadata's is said to be that
// node's and that shard's: it named the URL's seed node and the whole
// filter's bytes, with the refusing node's use. The shards placed go.
TEST_F(RedisClusterTest, AShardRefusedByAnotherNodeNamesThatNodeAndOneShard) {
  const FilterOptions options{.capacity = 2'000'000, .error_rate = 0.01, .shards = 8};
  ASSERT_OK_AND_ASSIGN(FilterConfig config, MakeConfig(options));
  RedisServer* other = OtherShardsMaster("cs", 8);
  ASSERT_NE(other, nullptr);
  const std::string memory = other->Cli({"INFO", "memory"});
  const uint64_t used = std::stoull(memory.substr(memory.find("used_memory:") + 12));
  struct Restore {
    RedisServer* m;
    ~Restore() { m->Cli({"CONFIG", "SET", "maxmemory", "0"}); }
  } restore{other};
  other->Cli({"CONFIG", "SET", "maxmemory", std::to_string(used + config.data_bytes() / 2)});
  const Status created = BloomFilter::Create(*store_, "cs", options).status();
  EXPECT_EQ(created.code(), StatusCode::kResourceExhausted) << created.ToString();
  EXPECT_NE(
      created.message().find("redis 127.0.0.1:" + std::to_string(other->port()) + " has no room"),
      std::string::npos)
      << created.message();
  EXPECT_NE(created.message().find("a shard's " + std::to_string(config.data_bytes()) + " bytes"),
            std::string::npos)
      << created.message();
  for (RedisServer* m : cluster_->Masters()) {
    EXPECT_EQ(Trim(m->Cli({"DBSIZE"})), "0") << "keys left on " << m->port();
  }
}

// A drop that deletes the metadata and then cannot delete a shard on
// another node (a long migration, a failover; here an ACL that denies the
// script) says the filter is gone and what is left, which a second drop
// cannot find. It said "retry", and the retry answered not_found (an audit).
TEST_F(RedisClusterTest, ADropThatLeavesShardsBehindSaysSo) {
  const FilterOptions options{.capacity = 10'000, .error_rate = 0.01, .shards = 8};
  ASSERT_TRUE(BloomFilter::Create(*store_, "ds", options).ok());
  RedisServer* other = OtherShardsMaster("ds", 8);
  ASSERT_NE(other, nullptr);
  struct Restore {
    RedisServer* m;
    ~Restore() { m->Cli({"ACL", "SETUSER", "default", "+@all"}); }
  } restore{other};
  other->Cli({"ACL", "SETUSER", "default", "-eval", "-evalsha"});
  const Status dropped = store_->Drop("ds");
  other->Cli({"ACL", "SETUSER", "default", "+@all"});
  ASSERT_FALSE(dropped.ok());
  EXPECT_NE(dropped.message().find("'ds' is dropped"), std::string::npos) << dropped.ToString();
  EXPECT_NE(dropped.message().find("a second drop does not find them"), std::string::npos)
      << dropped.ToString();
  EXPECT_EQ(store_->ReadConfig("ds").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Drop("ds").code(), StatusCode::kNotFound);
  // As it says, a create of the name with as many shards replaces them.
  auto again = BloomFilter::Create(*store_, "ds", options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE((*again)->Add("x").ok());
  EXPECT_TRUE(testing::ValueOrFail((*again)->Contains("x")));
  EXPECT_TRUE(store_->Drop("ds").ok());
  for (RedisServer* m : cluster_->Masters()) {
    EXPECT_EQ(Trim(m->Cli({"DBSIZE"})), "0") << "keys left on " << m->port();
  }
}

// Past one key's 2^32 bits (512 MiB): 16 shards of 34 MB each. Created and
// described, not filled. Each shard is on its master's replica before the
// create answers (wait_replicas=1): CI once found the last shard of one
// master missing right after the create (data_loss), as a failover of a
// master starved by the loaded host would leave it, the replica promoted
// before the shard reached it; a create must ask for WAIT to outlive that
// (README: Durability).
TEST_F(RedisClusterTest, ShardedFilterPassesOneKeysLimit) {
  const FilterOptions big{.capacity = 450'000'000, .error_rate = 0.01, .shards = 16};
  auto one = BloomFilter::Create(*store_, "one", {.capacity = 450'000'000, .error_rate = 0.01});
  EXPECT_EQ(one.status().code(), StatusCode::kInvalidArgument) << "one key cannot hold it";
  auto waiting = MustOpen(cluster_->url() + "?wait_replicas=1&wait_timeout_ms=10000");
  ASSERT_NE(waiting, nullptr);
  auto f = BloomFilter::Create(*waiting, "huge", big);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto info = (*f)->Info();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_GT(info->bits, uint64_t{1} << 32);
  EXPECT_EQ(info->parts, 16u);
  EXPECT_EQ(info->bits_set, 0u);
  ASSERT_TRUE((*f)->AddMany(Views(Items("x", 100))).ok());
  EXPECT_EQ(CountPresent(**f, Items("x", 100)), 100);
  ASSERT_TRUE(store_->Drop("huge").ok());
}

// Every CLI command on a redis-cluster:// URL, every kind included: the text
// contract does not depend on the deployment.
TEST_F(RedisClusterTest, EveryCliCommandWorksOnTheCluster) {
  testing::TempDir dir;
  auto run = [&](std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", cluster_->url()});
    return testing::RunCommand(args, input);
  };
  auto ok = [&](std::vector<std::string> args, const std::string& input = "") {
    auto r = run(args, input);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    return r;
  };
  // guava64 for the two filters exported as Guava files and merged below.
  ok({"create", "plain", "-n", "1000", "-p", "0.01", "--strategy", "guava64"});
  ok({"create", "counts", "-n", "1000", "-p", "0.01", "--counting"});
  ok({"create", "grows", "-n", "100", "-p", "0.01", "--scaling"});
  ok({"create", "recent", "-n", "1000", "-p", "0.01", "--window", "1h", "--slices", "6"});
  ok({"create", "spread", "-n", "1000", "-p", "0.01", "--shards", "4"});
  ok({"create", "brief", "-n", "1000", "-p", "0.01", "--ttl", "1h"});
  std::string many;
  for (int i = 0; i < 500; ++i) many += "item-" + std::to_string(i) + "\n";
  for (const char* f : {"plain", "counts", "grows", "recent", "spread", "brief"}) {
    ok({"add", f, "--quiet", "--file", "-"}, many);
    auto check = run({"check", f, "--quiet", "--file", "-"}, many);
    EXPECT_EQ(check.exit_code, 0) << f << ": every added item is found";
    EXPECT_EQ(run({"check", f, "never-added-x"}).exit_code, 1) << f;
    auto info = ok({"info", f, "--json"});
    EXPECT_NE(info.out.find("\"items_added\""), std::string::npos) << info.out;
  }
  EXPECT_EQ(testing::Lines(ok({"remove", "counts", "item-1"}).out),
            (std::vector<std::string>{"1\titem-1"}));
  EXPECT_EQ(ok({"list"}).out, "brief\ncounts\ngrows\nplain\nrecent\nspread\n");
  // Bulk: load, export and import in both formats, merge, dedup, rebuild.
  ok({"create", "loaded", "-n", "1000", "-p", "0.01", "--strategy", "guava64"});
  ok({"load", "loaded", "--file", "-"}, many);
  EXPECT_EQ(run({"check", "loaded", "--quiet", "--file", "-"}, many).exit_code, 0);
  for (const char* format : {"redbloom", "guava"}) {
    const std::string path = dir.path() + "/" + format;
    ok({"export", "loaded", "--format", format, "--file", path});
    ok({"import", std::string("from-") + format, "--format", format, "--file", path});
    EXPECT_EQ(
        run({"check", std::string("from-") + format, "--quiet", "--file", "-"}, many).exit_code, 0)
        << format;
  }
  const std::string spread_dump = dir.path() + "/spread";
  ok({"export", "spread", "--format", "redbloom", "--file", spread_dump});
  ok({"import", "spread-copy", "--format", "redbloom", "--file", spread_dump});
  EXPECT_EQ(run({"check", "spread-copy", "--quiet", "--file", "-"}, many).exit_code, 0);
  ok({"merge", "merged", "plain", "loaded"});
  EXPECT_EQ(run({"check", "merged", "--quiet", "--file", "-"}, many).exit_code, 0);
  EXPECT_EQ(ok({"dedup", "plain"}, "item-1\nfresh-1\nfresh-1\n").out, "fresh-1\n");
  ok({"rebuild", "plain", "--file", "-", "-n", "5000", "-p", "0.001"}, many);
  EXPECT_EQ(run({"check", "plain", "--quiet", "--file", "-"}, many).exit_code, 0);
  auto rebuilt = ok({"info", "plain", "--json"});
  EXPECT_NE(rebuilt.out.find("\"capacity\": 5000"), std::string::npos) << rebuilt.out;
  for (const char* f : {"plain", "counts", "grows", "recent", "spread", "brief", "loaded"}) {
    ok({"drop", f});
  }
  EXPECT_EQ(run({"check", "plain", "x"}).exit_code, 4);
}

// read_from=replica: checks go to the replicas (READONLY), adds to the
// masters; with wait_replicas the replicas hold every acknowledged add.
TEST_F(RedisClusterTest, ChecksCanReadFromReplicas) {
  auto store = MustOpen(cluster_->url() + "?read_from=replica&wait_replicas=1");
  ASSERT_NE(store, nullptr);
  auto f = BloomFilter::Create(*store, "replicated", {.capacity = 10000, .error_rate = 0.01});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto items = Items("rep-", 5000);
  ASSERT_TRUE((*f)->AddMany(Views(items)).ok());
  // A check reads with BITFIELD_RO, or GETRANGE for block filters.
  auto calls = [](RedisServer& node) {
    const std::string stats = node.Cli({"INFO", "commandstats"});
    long total = 0;
    for (const std::string command : {"bitfield_ro", "getrange"}) {
      const std::string field = "cmdstat_" + command + ":calls=";
      const size_t at = stats.find(field);
      if (at != std::string::npos) total += std::stol(stats.substr(at + field.size()));
    }
    return total;
  };
  RedisServer& master = cluster_->MasterOf(internal::KeySlot("replicated"));
  std::vector<RedisServer*> replicas;
  for (size_t i = 0; i < cluster_->size(); ++i) {
    RedisServer& n = cluster_->node(i);
    if (!n.running() || &n == &master) continue;
    if (n.Cli({"INFO", "replication"}).find("master_port:" + std::to_string(master.port())) !=
        std::string::npos) {
      replicas.push_back(&n);
    }
  }
  ASSERT_FALSE(replicas.empty());
  const long master_before = calls(master);
  long replica_before = 0;
  for (RedisServer* r : replicas) replica_before += calls(*r);
  EXPECT_EQ(CountPresent(**f, items), 5000);
  long replica_after = 0;
  for (RedisServer* r : replicas) replica_after += calls(*r);
  EXPECT_GT(replica_after, replica_before) << "checks went to a replica";
  EXPECT_EQ(calls(master), master_before) << "no check went to the master";
}

// read_from=replica while a filter's slot is half migrated: its keys have
// left the old owner, whose replica has lost them too but answers no ASK (a
// replica serves only what it holds). Checks read "a part is missing"
// (data_loss) or "dropped" (an audit: 14 of 24 checks of a scaling filter
// failed). A replica read that fails or misses a key is now tried again on
// the master, which answers ASK.
TEST_F(RedisClusterTest, ReplicaReadsFallBackToTheMasterWhileTheirSlotMigrates) {
  auto store = MustOpen(cluster_->url() + "?read_from=replica&wait_replicas=1");
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(
      auto plain, BloomFilter::Create(*store, "halfway", {.capacity = 10000, .error_rate = 0.01}));
  ASSERT_OK_AND_ASSIGN(
      auto layered,
      BloomFilter::Create(*store, "halfway-layers",
                          {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling}));
  const auto items = Items("half-", 1000);
  ASSERT_TRUE(plain->AddMany(Views(items)).ok());
  ASSERT_TRUE(layered->AddMany(Views(items)).ok());
  ASSERT_OK_AND_ASSIGN(const FilterInfo info, layered->Info());
  ASSERT_GT(info.parts, 3u);
  for (const std::string slot_of : {"halfway", "{halfway-layers}"}) {
    const int slot = internal::KeySlot(slot_of);
    RedisServer& from = cluster_->MasterOf(slot);
    const std::string to_id = MigrateKeysOf(slot);
    ASSERT_FALSE(to_id.empty());
    from.Cli({"WAIT", "1", "5000"});  // the replica has lost the keys too
    EXPECT_EQ(CountPresent(*plain, items), 1000) << slot_of;
    EXPECT_EQ(CountPresent(*layered, items), 1000) << slot_of;
    FinishMigration(slot, to_id);
  }
  EXPECT_EQ(CountPresent(*plain, items), 1000);
  EXPECT_EQ(CountPresent(*layered, items), 1000);
}

// A node that left the cluster kept its pool's idle connections for the
// store's life (CLOSE-WAIT once it stopped; where nodes change address, as
// pods do, one pool per address ever seen). A map learnt again closes the
// idle connections of the nodes it no longer lists.
TEST_F(RedisClusterTest, ANodeThatLeftTheClusterKeepsNoConnection) {
  auto store = MustOpen(cluster_->url() + "?read_from=replica");
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(
      auto f, BloomFilter::Create(*store, "leaving", {.capacity = 1000, .error_rate = 0.01}));
  const auto items = Items("left-", 100);
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  RedisServer& master = cluster_->MasterOf(internal::KeySlot("leaving"));
  RedisServer* replica = nullptr;
  for (size_t i = 0; i < cluster_->size(); ++i) {
    RedisServer& n = cluster_->node(i);
    if (n.running() && &n != &master &&
        n.Cli({"INFO", "replication"}).find("master_port:" + std::to_string(master.port())) !=
            std::string::npos) {
      replica = &n;
    }
  }
  ASSERT_NE(replica, nullptr);
  master.Cli({"WAIT", "1", "5000"});
  // Clients of the replica other than redis-cli asking and its master link.
  auto ours = [&] {
    std::istringstream lines(replica->Cli({"CLIENT", "LIST"}));
    int n = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.find("cmd=client|list") == std::string::npos &&
          line.find("flags=M") == std::string::npos && line.find("id=") == 0) {
        ++n;
      }
    }
    return n;
  };
  ASSERT_EQ(CountPresent(*f, items), 100);
  ASSERT_GE(ours(), 1) << "the check read from the replica";
  // The replica leaves: it forgets the cluster and the cluster forgets it.
  const std::string id = Trim(replica->Cli({"CLUSTER", "MYID"}));
  replica->Cli({"CLUSTER", "RESET", "HARD"});
  for (size_t i = 0; i < cluster_->size(); ++i) {
    RedisServer& n = cluster_->node(i);
    if (n.running() && &n != replica) n.Cli({"CLUSTER", "FORGET", id});
  }
  // The next check meets CLUSTERDOWN there and learns the map again.
  EXPECT_EQ(CountPresent(*f, items), 100);
  int open = ours();  // the server sees the close a moment after the client
  for (int i = 0; i < 50 && open != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    open = ours();
  }
  EXPECT_EQ(open, 0) << "a connection to the node that left is still open";
  // It comes back as a replica.
  replica->Stop();
  cluster_->ReplaceAsReplica(*replica, master);
  ASSERT_TRUE(store->Drop("leaving").ok());
}

// Masters at maxmemory (noeviction) refuse reads queued in MULTI; the
// checks of a filter sharded over all of them go again as no-writes scripts,
// routed by their keys' slots, and answer as before.
TEST_F(RedisClusterTest, ChecksWorkOnMastersThatAreOutOfMemory) {
  ASSERT_OK_AND_ASSIGN(
      auto f,
      BloomFilter::Create(
          *store_, "full",
          {.capacity = 4000, .error_rate = 0.01, .strategy = Strategy::kGuava64, .shards = 6}));
  const auto items = Items("full-", 4000);
  ASSERT_TRUE(f->AddMany(Views(items)).ok());
  struct Restore {
    ~Restore() {
      for (RedisServer* m : cluster_->Masters()) m->Cli({"CONFIG", "SET", "maxmemory", "0"});
    }
  } restore;
  for (RedisServer* m : cluster_->Masters()) m->Cli({"CONFIG", "SET", "maxmemory", "1"});
  EXPECT_EQ(CountPresent(*f, items), 4000);
  EXPECT_LT(CountPresent(*f, Items("never-", 4000)), 200);
  EXPECT_EQ(f->Add("one-more").code(), StatusCode::kResourceExhausted);
}

// Moves a filter's slot to another master key by key (as redis-cli
// --cluster reshard does) while a client keeps adding to it and another
// filter spread over shards: no call fails and nothing is lost.
// A slot whose keys have all moved but whose migration is not finalised:
// the old owner answers ASK, and the client follows it to the importing node
// (with ASKING) at once, instead of waiting for the map to change.
TEST_F(RedisClusterTest, AskIsFollowedToTheImportingNode) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "asked", {.capacity = 10000, .error_rate = 0.01}).ok());
  auto f = BloomFilter::Open(*store_, "asked");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->AddMany(Views(Items("before-", 1000))).ok());

  const int slot = internal::KeySlot("asked");
  const std::string to_id = MigrateKeysOf(slot);
  ASSERT_FALSE(to_id.empty());
  // Half way: every key on `to`, the slot still `from`'s in every map.
  // Checks (single-key commands in a transaction) follow ASK at once.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(CountPresent(**f, Items("before-", 1000)), 1000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5))
      << "ASK was waited out, not followed";
  // Adds name their scratch key, which exists on neither node, so the
  // importing node answers TRYAGAIN until the migration is finalised: they
  // wait, then complete.
  Status added;
  std::thread adder([&] { added = (*f)->AddMany(Views(Items("during-", 1000))); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  FinishMigration(slot, to_id);
  adder.join();
  EXPECT_TRUE(added.ok()) << added.ToString();
  EXPECT_EQ(CountPresent(**f, Items("during-", 1000)), 1000);
  EXPECT_EQ(CountPresent(**f, Items("before-", 1000)), 1000);
  EXPECT_EQ(Trim(cluster_->MasterOf(slot).Cli({"CLUSTER", "MYID"})), to_id);
}

// Calls of several commands on one connection (opening a filter, info,
// listing a scaling filter's layers) while their slot is half migrated:
// ASKING covers only the command after it, so the importing node sends the
// second back to the old owner (MOVED), which answers ASK again. They wait
// for the migration to finish, then complete; a migration that never
// finishes fails them with what is going on. Before, they refreshed the map
// 200 times, then said the store was "a Redis Cluster node" and to "use a
// redis-cluster:// URL".
TEST_F(RedisClusterTest, CallsOfSeveralCommandsWaitOutAMigration) {
  auto created = BloomFilter::Create(
      *store_, "multi", {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE((*created)->AddMany(Views(Items("in-", 400))).ok());
  const int slot = internal::KeySlot("{multi}");
  const std::string to_id = MigrateKeysOf(slot);
  ASSERT_FALSE(to_id.empty());
  // A migration left unfinished.
  auto stuck = BloomFilter::Open(*store_, "multi");
  ASSERT_FALSE(stuck.ok());
  EXPECT_EQ(stuck.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(stuck.status().message().find("slot " + std::to_string(slot) + " "), std::string::npos)
      << stuck.status().message();
  EXPECT_NE(stuck.status().message().find("migrat"), std::string::npos) << stuck.status().message();
  EXPECT_EQ(stuck.status().message().find("redis-cluster://"), std::string::npos)
      << stuck.status().message();
  // One that finishes while the calls wait.
  Status opened, listed;
  std::thread caller([&] {
    auto f = BloomFilter::Open(*store_, "multi");
    opened = f.status();
    if (f.ok()) listed = (*f)->Info().status();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  FinishMigration(slot, to_id);
  caller.join();
  EXPECT_TRUE(opened.ok()) << opened.ToString();
  EXPECT_TRUE(listed.ok()) << listed.ToString();
}

// A bulk merge (load, import) whose slot starts migrating: each piece's
// upload lands on the importing node (ASK: a new key), its merge meets
// TRYAGAIN (the filter's keys not moved yet), and the call is run again
// until the migration is done. Each run uploaded under a new name, and the
// importing node kept every upload (1 MiB each, for their hour: 23-30 per
// load in an audit). One name for the call now, which its last run's merge
// deletes.
TEST_F(RedisClusterTest, AMergeRetriedAcrossAMigrationLeavesNoUploadBehind) {
  auto f = BloomFilter::Create(
      *store_, "ld", {.capacity = 1500000, .error_rate = 0.01, .strategy = Strategy::kGuava64});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const size_t bytes = (*f)->config().data_bytes();
  ASSERT_GT(bytes, size_t{1} << 20) << "the test needs two pieces";
  std::string bitmap(bytes, '\0');
  bitmap[3] = '\x5a';
  bitmap[bytes - 2] = '\x81';
  const Migration migration = StartMigration(internal::KeySlot("{ld}"));
  ASSERT_NE(migration.to, nullptr);
  Status merged;
  std::thread merge([&] { merged = (*f)->OrBitmap(bitmap, 2); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  MoveKeys(migration);
  FinishMigration(migration.slot, migration.to_id);
  merge.join();
  ASSERT_TRUE(merged.ok()) << merged.ToString();
  for (RedisServer* m : cluster_->Masters()) {
    EXPECT_EQ(Trim(m->Cli({"KEYS", "*/tmp/*"})), "") << "uploads left on :" << m->port();
  }
  std::string back;
  ASSERT_TRUE((*f)->ReadBitmap(&back).ok());
  EXPECT_EQ(back, bitmap);
}

// A counting filter's merge (load, import) whose slot starts migrating
// after its first pieces merged: the run meets ASK, is followed and waits
// out the migration, and runs again from the first piece it did not see
// merged. It started over at the first piece, and the counters of every
// piece merged before the redirect were added twice (an audit).
TEST_F(RedisClusterTest, ACountingMergeRedirectedPartWayAddsEachPieceOnce) {
  // About ten 1 MiB pieces: with two, a slow client (TSan) saw the merge end
  // before its migration began.
  auto f = BloomFilter::Create(
      *store_, "cm", {.capacity = 4'000'000, .error_rate = 0.01, .kind = FilterKind::kCounting});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const size_t bytes = (*f)->config().data_bytes();
  ASSERT_GT(bytes, size_t{8} << 20) << "the test needs many pieces";
  // Every counter 1: every piece is sent, and a piece added twice reads 2.
  const std::string counters(bytes, '\x11');
  const int slot = internal::KeySlot("cm");
  testing::RawRedis raw(cluster_->MasterOf(slot).port());

  Status merged;
  std::atomic<bool> done{false};
  std::thread merge([&] {
    merged = (*f)->OrBitmap(counters, 0);
    done = true;
  });
  // The migration starts once the first piece is in, the last not yet.
  while (!done && raw.Int({"BITCOUNT", "cm", "0", "0"}) == 0) {
  }
  const Migration migration = StartMigration(slot);
  // The last piece not merged yet once the slot is migrating: the run met it.
  const bool part_way = raw.Int({"BITCOUNT", "cm", "-1", "-1"}) == 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  MoveKeys(migration);
  FinishMigration(slot, migration.to_id);
  merge.join();
  ASSERT_TRUE(part_way) << "the merge ended before the migration began: make the filter larger";
  ASSERT_TRUE(merged.ok()) << merged.ToString();
  std::string back;
  ASSERT_TRUE((*f)->ReadBitmap(&back).ok());
  ASSERT_EQ(back.size(), counters.size());
  size_t twice = 0;
  for (size_t i = 0; i < back.size(); ++i) twice += back[i] != counters[i];
  EXPECT_EQ(twice, 0u) << "bytes whose counters were added more than once";
}

// A remove of several batches (batch_items=10) while its filter's slot is
// half migrated: each batch is followed to the importing node with ASKING,
// and the next draws MOVED back, so the source runs the remove again. A new
// run resumes at the first batch not done: before, every run started over at
// the first batch (removing again whatever of it still read present) and drew
// the same MOVED, until the remove failed after 200 redirects.
TEST_F(RedisClusterTest, ARemoveFollowedAcrossAMigrationRemovesEachBatchOnce) {
  auto store = MustOpen(cluster_->url() + "?batch_items=10");
  ASSERT_NE(store, nullptr);
  auto f = BloomFilter::Create(
      *store, "counted", {.capacity = 300, .error_rate = 0.01, .kind = FilterKind::kCounting});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto gone = Items("gone-", 100), kept = Items("kept-", 100);
  ASSERT_TRUE((*f)->AddMany(Views(gone)).ok());
  ASSERT_TRUE((*f)->AddMany(Views(kept)).ok());

  const int slot = internal::KeySlot("counted");
  const std::string to_id = MigrateKeysOf(slot);
  ASSERT_FALSE(to_id.empty());
  std::vector<uint8_t> removed;
  const Status s = (*f)->RemoveMany(Views(gone), &removed);
  FinishMigration(slot, to_id);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (s.ok()) {
    EXPECT_EQ(std::count(removed.begin(), removed.end(), 1), 100);
  }
  EXPECT_EQ(CountPresent(**f, kept), 100) << "items still added read absent";
}

// A create, or a counting add, whose answer a lost connection took has run:
// none is sent again on the Cluster (its node announces a relay that drops
// the answer), as on a single server (RedisStoreTest's
// ACreateOrACountingWriteWhoseAnswerWasLostIsNotSentAgain). Sent again, the
// create answered "exists" for the filter it made, and the add counted its
// item twice, so that one remove left it present.
TEST_F(RedisClusterTest, AWriteWhoseAnswerWasLostIsNotSentAgain) {
  const std::string name = "lost-answer";
  RedisServer& master = cluster_->MasterOf(
      internal::KeySlot(internal::KeysFor(name, internal::KeyMode::kPlain).meta));
  testing::SlowRelay relay(master.port(), std::chrono::milliseconds(0));
  // Every node tells clients the relay's port for the master's slots (its
  // replica follows it there too), until the test ends.
  const auto announce = [&](int port) {
    const std::string seen = "127.0.0.1:" + std::to_string(port == 0 ? master.port() : port) + "@";
    for (int i = 0; i < 400; ++i) {
      if (i % 40 == 0) master.Cli({"CONFIG", "SET", "cluster-announce-port", std::to_string(port)});
      bool everywhere = true;
      for (size_t n = 0; n < cluster_->size(); ++n) {
        everywhere = everywhere &&
                     (!cluster_->node(n).running() ||
                      cluster_->node(n).Cli({"CLUSTER", "NODES"}).find(seen) != std::string::npos);
      }
      if (everywhere) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  };
  // Later tests reach the cluster by the ports it announces: one that
  // cannot be put back costs the suite its cluster (the next test starts
  // another), not every later test.
  struct Restore {
    std::function<bool(int)> announce;
    ~Restore() {
      if (announce(0)) return;
      ADD_FAILURE() << "the master's own port is not back\n" << cluster_->Describe();
      delete cluster_;
      cluster_ = nullptr;
    }
  } restore{announce};
  ASSERT_TRUE(announce(relay.port())) << "the nodes never learnt the relay's port";
  auto via = MustOpen(cluster_->url() + "?max_retries=8");
  ASSERT_NE(via, nullptr);

  FilterOptions o{.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kCounting};
  relay.DropReplyOnce("$4\r\nEVAL\r\n");
  auto created = BloomFilter::Create(*via, name, o);
  ASSERT_TRUE(relay.dropped());
  EXPECT_EQ(created.status().code(), StatusCode::kUnavailable) << created.status().ToString();

  ASSERT_OK_AND_ASSIGN(auto mine, BloomFilter::Open(*store_, name));
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*via, name));
  const std::vector<std::string_view> item = {"ORD-1"};
  ASSERT_NO_FATAL_FAILURE(testing::ExpectALostAddRanOnce(relay, *f, *mine, item, "$4\r\nEVAL\r\n"));
}

TEST_F(RedisClusterTest, ReshardingWhileAddingLosesNothing) {
  ASSERT_TRUE(BloomFilter::Create(*store_, "moving", {.capacity = 40000, .error_rate = 0.01}).ok());
  ASSERT_TRUE(
      BloomFilter::Create(*store_, "spread", {.capacity = 40000, .error_rate = 0.01, .shards = 6})
          .ok());
  const auto items = Items("r-", 30000);
  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::string first_error;
  std::thread writer([&] {
    auto store = MustOpen(cluster_->url());
    auto moving = BloomFilter::Open(*store, "moving");
    auto spread = BloomFilter::Open(*store, "spread");
    ASSERT_TRUE(moving.ok() && spread.ok());
    for (size_t i = 0; i < items.size(); i += 500) {
      for (auto* f : {&*moving, &*spread}) {
        Status s = (*f)->AddMany(Views(items, i, 500));
        if (!s.ok() && errors++ == 0) first_error = s.ToString();
      }
      std::vector<uint8_t> present;
      Status s = (*moving)->ContainsMany(Views(items, 0, i + 500), &present);
      if (!s.ok() && errors++ == 0) first_error = s.ToString();
      if (s.ok() && std::count(present.begin(), present.end(), 1) != int(i + 500)) ++errors;
    }
    done = true;
  });

  const int slot = internal::KeySlot("moving");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the writer start
  // A key at a time, 20 ms apart: a migration in progress.
  const std::string to_id = MigrateKeysOf(slot, 1, std::chrono::milliseconds(20));
  ASSERT_FALSE(to_id.empty());
  FinishMigration(slot, to_id);
  writer.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(errors, 0) << first_error;
  EXPECT_EQ(Trim(cluster_->MasterOf(slot).Cli({"CLUSTER", "MYID"})), to_id) << "the slot moved";
  auto fresh = MustOpen(cluster_->url());
  for (const char* name : {"moving", "spread"}) {
    auto f = BloomFilter::Open(*fresh, name);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(CountPresent(**f, items), 30000) << name;
  }
}

// redis-cli --cluster reshard, the way operators move slots, while CLI loads
// run into a plain and a sharded filter: no load fails, nothing is lost. The
// plain filter's slot is among the slots moved (reshard takes a node's lowest
// slots first).
TEST_F(RedisClusterTest, RedisCliReshardWhileLoadsRunLosesNothing) {
  RedisServer* from = cluster_->Masters().front();
  RedisServer* to = cluster_->Masters().back();
  ASSERT_NE(from, to);
  const auto ranges = RedisCluster::SlotsOf(*from);
  ASSERT_FALSE(ranges.empty());
  const int first = std::min_element(ranges.begin(), ranges.end())->first;
  constexpr int kMoved = 300;
  std::string name;
  for (int i = 0; i < 100000 && name.empty(); ++i) {
    const std::string candidate = "loaded-" + std::to_string(i);
    const int slot = internal::KeySlot(candidate);
    if (slot >= first && slot < first + kMoved / 2) name = candidate;
  }
  ASSERT_FALSE(name.empty());
  testing::TempDir dir;
  auto cli = [&](std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", cluster_->url()});
    return testing::RunCommand(args, input);
  };
  ASSERT_EQ(cli({"create", name, "-n", "400000", "-p", "0.01"}).exit_code, 0);
  ASSERT_EQ(
      cli({"create", "loaded-spread", "-n", "400000", "-p", "0.01", "--shards", "6"}).exit_code, 0);

  std::atomic<bool> resharded{false};
  std::vector<std::string> failures;
  int rounds = 0;
  std::thread loader([&] {
    // Loads of 10,000 new items each, until the reshard is over (and at
    // least three).
    for (; rounds < 40 && (rounds < 3 || !resharded); ++rounds) {
      std::string input;
      for (const std::string& item : Items("L" + std::to_string(rounds) + "-", 10000)) {
        input += item + "\n";
      }
      for (const std::string& f : {name, std::string("loaded-spread")}) {
        auto r = cli({"load", f, "--file", "-"}, input);
        if (r.exit_code != 0) failures.push_back(f + ": " + r.err);
      }
    }
  });
  const std::string from_id = Trim(from->Cli({"CLUSTER", "MYID"}));
  const std::string to_id = Trim(to->Cli({"CLUSTER", "MYID"}));
  auto reshard = testing::RunCommand({"/usr/bin/env", "redis-cli", "--cluster", "reshard",
                                      "127.0.0.1:" + std::to_string(from->port()), "--cluster-from",
                                      from_id, "--cluster-to", to_id, "--cluster-slots",
                                      std::to_string(kMoved), "--cluster-yes"});
  resharded = true;
  loader.join();
  EXPECT_EQ(reshard.exit_code, 0) << reshard.out << reshard.err;
  EXPECT_EQ(&cluster_->MasterOf(internal::KeySlot(name)), to) << "the filter's slot moved";
  EXPECT_TRUE(failures.empty()) << failures.size() << " loads failed, the first: " << failures[0];
  std::string all;
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& item : Items("L" + std::to_string(r) + "-", 10000)) all += item + "\n";
  }
  for (const std::string& f : {name, std::string("loaded-spread")}) {
    auto check = cli({"check", f, "--quiet", "--file", "-"}, all);
    EXPECT_EQ(check.exit_code, 0) << f << ": every loaded item is found; " << check.err;
  }
}

// A check sent to a master that was just killed rides out the failover:
// with max_retries=0 the call gave up after 5 retries' backoff (0.8 s),
// and with the default after ~3 s, before a cluster (here with a
// cluster-node-timeout of 1 s, by default 15 s) had promoted the replica.
// It retries for 10 s now, whatever max_retries.
//
// A client idle through the failover, whose pool knew the old master, goes to
// the promoted replica: the old master, back as its replica (another run_id),
// answered its first call 503 "restarted", a warning about writes the old
// master owned, which the promoted replica has.
TEST_F(RedisClusterTest, ACallToAKilledMasterRidesOutTheFailover) {
  FastFailovers fast(*cluster_);
  auto store = MustOpen(cluster_->url() + "?max_retries=0");
  ASSERT_NE(store, nullptr);
  auto f = BloomFilter::Create(*store, "ride", {.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("x").ok());
  auto idle_store = MustOpen(cluster_->url());
  ASSERT_NE(idle_store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto idle, BloomFilter::Open(*idle_store, "ride"));
  ASSERT_TRUE(idle->Contains("x").ok());
  RedisServer& master = cluster_->MasterOf(internal::KeySlot("ride"));
  master.Stop(/*hard=*/true);
  const Result<bool> found = (*f)->Contains("x");
  RedisServer& promoted = cluster_->WaitForFailover(internal::KeySlot("ride"), master);
  cluster_->ReplaceAsReplica(master, promoted);
  ASSERT_TRUE(found.ok()) << "the call gave up before the failover: " << found.status().ToString();
  EXPECT_TRUE(*found);
  const Result<bool> after_idle = idle->Contains("x");
  ASSERT_TRUE(after_idle.ok()) << after_idle.status().ToString();
  EXPECT_TRUE(*after_idle);
  EXPECT_TRUE(idle->Add("y").ok());
}

// A master killed with SIGKILL while adds run with wait_replicas=1: its
// replica takes over, every acknowledged add is there, failed calls were
// errors (never "absent"), and the same store object goes on working once
// the killed node is back as the new master's replica.
TEST_F(RedisClusterTest, KilledMasterLosesNoAcknowledgedAdd) {
  FastFailovers fast(*cluster_);
  auto store = MustOpen(cluster_->url() + "?wait_replicas=1&wait_timeout_ms=500");
  ASSERT_NE(store, nullptr);
  auto f = BloomFilter::Create(*store, "durable", {.capacity = 200000, .error_rate = 0.01});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto items = Items("d-", 200000);
  std::set<size_t> acked;  // batch starts
  std::atomic<size_t> acked_count{0};
  std::atomic<int> failed{0};
  std::atomic<bool> stop{false};
  std::atomic<size_t> next{0};
  std::string first_error;
  std::thread writer([&] {
    // Round and round until told to stop: on a loaded machine the failover
    // and the replacement replica took so long that the writer ran out of
    // items before the adds after them could be counted (CI flaked so).
    for (size_t i = 0, round = 0; !stop; i += 200) {
      if (i >= items.size()) {
        i = 0;
        ++round;
      }
      next = round * items.size() + i;
      Status s = (*f)->AddMany(Views(items, i, 200));
      if (s.ok()) {
        acked.insert(i);
        ++acked_count;
      } else if (failed++ == 0) {
        first_error = s.ToString();
      }
    }
  });
  while (next < 4000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RedisServer& master = cluster_->MasterOf(internal::KeySlot("durable"));
  master.Stop(/*hard=*/true);
  RedisServer& promoted = cluster_->WaitForFailover(internal::KeySlot("durable"), master);
  // Checks work at once on the new master; adds need a replica to confirm
  // them, so until one is back they fail (as errors, never silently).
  const Result<bool> first = (*f)->Contains(items[0]);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(*first);
  // A replacement replica joins, and adds are acknowledged again: waited
  // for as such (a loaded machine may take seconds to sync the replica),
  // not as a number of attempts, which a slow sync could use up in failures.
  cluster_->ReplaceAsReplica(master, promoted);
  const size_t acked_before = acked_count;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (acked_count < acked_before + 10 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  writer.join();
  EXPECT_GE(acked_count, acked_before + 10)
      << "adds were not acknowledged again once a replica was back (" << failed
      << " calls failed, the first: " << first_error << ")";
  // The same handle adds and checks after the switch.
  const Status after = (*f)->Add("after");
  ASSERT_TRUE(after.ok()) << after.ToString();
  EXPECT_TRUE(*(*f)->Contains("after"));
  std::vector<std::string> must;
  for (size_t start : acked) {
    for (size_t j = start; j < start + 200; ++j) must.push_back(items[j]);
  }
  EXPECT_GT(acked.size(), 30u);
  EXPECT_EQ(CountPresent(**f, must), static_cast<int>(must.size()))
      << "acknowledged adds lost in the failover (" << failed
      << " calls failed, the first: " << first_error << ")";
}

}  // namespace
}  // namespace redbloom
