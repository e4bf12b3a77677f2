// redis-sentinel://: the store on the master a real Redis Sentinel names,
// with a real replica, through failovers (SENTINEL FAILOVER) while adds run.
// Each test starts its own master, replica and sentinel, since a failover
// changes who is who.
#include "redis_sentinel.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "redis/redis_client.h"
#include "redis_server.h"
#include "redis_test_raw.h"
#include "slow_relay.h"
#include "test_util.h"
#include "tls_certs.h"
#ifdef REDBLOOMD_PATH
#include "server_process.h"
#endif

namespace redbloom {
namespace {

using testing::ExitCodeOfChild;
using testing::RawRedis;
using testing::RedisSentinel;
using testing::RedisServer;
using Clock = std::chrono::steady_clock;

constexpr char kMaster[] = "mymaster";

// Polls `fn` until it returns true or `timeout` passes.
template <typename Fn>
bool Eventually(Fn fn, std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (fn()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

FilterOptions Options(uint64_t n) {
  return FilterOptions{.capacity = n, .error_rate = 0.01, .strategy = Strategy::kGuava64};
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// calls=N of one command in INFO commandstats (0 if never called).
int64_t Calls(RedisServer& server, const std::string& command) {
  const std::string info = server.Cli({"INFO", "commandstats"});
  const size_t at = info.find("cmdstat_" + command + ":calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + std::string("cmdstat_:calls=").size() + command.size()));
}

class RedisSentinelTest : public ::testing::Test {
 protected:
  // A master, a replica of it in sync, and a sentinel that knows both.
  // `server_args` go to both servers (either may be master later);
  // `sentinel_config` lines to sentinel.conf. Throws if the set-up fails,
  // so that the test stops there.
  // `front`, if given, is called with the master once it runs and returns
  // the port the sentinel is to watch as the master's (a relay's).
  void StartAll(std::vector<std::string> server_args = {},
                std::vector<std::string> sentinel_config = {},
                const std::function<int(RedisServer&)>& front = nullptr) {
    // Diskless sync waits 5 s by default for more replicas to join.
    server_args.insert(server_args.end(), {"--repl-diskless-sync-delay", "0"});
    master_ = std::make_unique<RedisServer>(server_args);
    master_->Start();
    std::vector<std::string> replica_args = server_args;
    replica_args.insert(replica_args.end(),
                        {"--replicaof", "127.0.0.1", std::to_string(master_->port())});
    replica_ = std::make_unique<RedisServer>(replica_args);
    replica_->Start();
    if (!Eventually([&] { return InSync(*replica_) && Online(*master_); })) {
      throw std::runtime_error("the replica never came in sync with the master");
    }
    sentinel_ = std::make_unique<RedisSentinel>(front ? front(*master_) : master_->port(), kMaster,
                                                sentinel_config);
    sentinel_->Start();
    sentinel_->WaitForReplica(replica_->port(), sentinel_auth_);
  }

  std::string Info(RedisServer& server, const std::string& section) {
    if (server_auth_.empty()) return server.Cli({"INFO", section});
    return server.Cli({"--no-auth-warning", "-a", server_auth_, "INFO", section});
  }
  bool InSync(RedisServer& replica) {
    return Info(replica, "replication").find("master_link_status:up") != std::string::npos;
  }
  // The master counts the replica for WAIT only once it is online, which
  // after a diskless sync is at its first ACK, up to a second later.
  bool Online(RedisServer& master) {
    return Info(master, "replication").find("state=online") != std::string::npos;
  }

  std::string Url(const std::string& options = "") const {
    return "redis-sentinel://127.0.0.1:" + std::to_string(sentinel_->port()) + "/" + kMaster +
           (options.empty() ? "" : "?" + options);
  }

  static std::string Address(const RedisServer& server) {
    return "127.0.0.1:" + std::to_string(server.port());
  }

  std::unique_ptr<Store> MustOpen(const std::string& url) {
    Result<std::unique_ptr<Store>> store = Store::Open(url);
    EXPECT_TRUE(store.ok()) << url << ": " << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // SENTINEL FAILOVER, then waits until the sentinel names the replica.
  void FailOver() {
    ASSERT_NE(sentinel_->Cli({"SENTINEL", "FAILOVER", kMaster}, sentinel_auth_).find("OK"),
              std::string::npos);
    ASSERT_TRUE(Eventually([&] {
      return sentinel_->MasterPort(sentinel_auth_) == replica_->port();
    })) << "the sentinel never switched to the replica";
  }

  std::unique_ptr<RedisServer> master_;
  std::unique_ptr<RedisServer> replica_;
  std::unique_ptr<RedisSentinel> sentinel_;
  std::string sentinel_auth_;
  std::string server_auth_;
};

TEST_F(RedisSentinelTest, UsesTheMasterTheSentinelNames) {
  StartAll();
  auto store = MustOpen(Url());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Master(), Address(*master_));
  auto filter = BloomFilter::Create(*store, "orders", Options(1000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("ORD-1").ok());
  EXPECT_TRUE(*(*filter)->Contains("ORD-1"));
  EXPECT_EQ(master_->Cli({"EXISTS", "orders"}), "1\n");
  EXPECT_EQ(Calls(*replica_, "bitfield_ro"), 0) << "read_from=master reads from the master";
}

// A program started with stdout closed (`cmd >&-`) keeps it closed while a
// Sentinel store is open: the store's descriptors stay off 0, 1 and 2
// (fd_above_stdio.h). Its watcher's wake-up eventfd took descriptor 1: the
// program's output went into the counter, which stayed readable, and the
// watcher, woken each time it waited, reconnected to the sentinel about 50
// times a second for the store's life.
TEST_F(RedisSentinelTest, TheStoresDescriptorsStayOffAClosedStdout) {
  StartAll();
  const int exit_code = ExitCodeOfChild([&] {
    ::close(1);
    auto store = Store::Open(Url());
    if (!store.ok()) return 10;
    auto filter = BloomFilter::Create(**store, "orders", Options(1000));
    if (!filter.ok() || !(*filter)->Add("ORD-1").ok()) return 11;
    return ::fcntl(1, F_GETFD) == -1 && errno == EBADF ? 0 : 12;
  });
  EXPECT_EQ(exit_code, 0) << "10: no store, 11: no add, 12: a descriptor on 1";
}

// A child of fork() that lets go of a Sentinel store it never called leaves
// the parent's failover watcher alone. Its stop went into the parent's
// eventfd, which nothing reads: the parent's watcher, woken at every wait
// from then on, reconnected to the sentinel about 50 times a second.
TEST_F(RedisSentinelTest, AChildLettingGoOfTheStoreLeavesTheParentsWatcherAlone) {
  StartAll();
  auto store = MustOpen(Url());
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "orders", Options(1000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_EQ(ExitCodeOfChild([&] {
              filter->reset();
              store.reset();
              return 0;
            }),
            0);
  const auto received = [&] {
    return std::stoull(internal::InfoField(sentinel_->Cli({"INFO", "stats"}, sentinel_auth_),
                                           "total_connections_received"));
  };
  const uint64_t before = received();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  // One is the second redis-cli's.
  EXPECT_LE(received() - before, 3u) << "the parent's watcher kept reconnecting";
  EXPECT_TRUE((*filter)->Add("ORD-1").ok());
}

// A create, or a counting add, whose answer a lost connection took has run:
// none is sent again on the master the sentinels name (a relay in front of
// it drops the answer), as on a single server (RedisStoreTest's
// ACreateOrACountingWriteWhoseAnswerWasLostIsNotSentAgain). Sent again, the
// create answered "exists" for the filter it made, and the add counted its
// item twice, so that one remove left it present. (A test longer than the
// sentinel's ~3 s would also see it move the replica behind the relay,
// +fix-slave-config; neither sends EVAL, and this test uses no replica.)
TEST_F(RedisSentinelTest, AWriteWhoseAnswerWasLostIsNotSentAgain) {
  std::unique_ptr<testing::SlowRelay> relay;
  StartAll({}, {}, [&](RedisServer& master) {
    relay = std::make_unique<testing::SlowRelay>(master.port(), std::chrono::milliseconds(0));
    return relay->port();
  });
  auto via = MustOpen(Url("max_retries=8"));
  ASSERT_NE(via, nullptr);
  EXPECT_EQ(via->Master(), "127.0.0.1:" + std::to_string(relay->port()));
  FilterOptions o = Options(1000);
  o.kind = FilterKind::kCounting;
  ASSERT_TRUE(BloomFilter::Create(*via, "warm", o).ok());
  relay->DropReplyOnce("$4\r\nEVAL\r\n");
  auto created = BloomFilter::Create(*via, "lost-answer", o);
  ASSERT_TRUE(relay->dropped());
  EXPECT_EQ(created.status().code(), StatusCode::kUnavailable) << created.status().ToString();

  auto direct = MustOpen(master_->url());
  ASSERT_NE(direct, nullptr);
  ASSERT_OK_AND_ASSIGN(auto mine, BloomFilter::Open(*direct, "lost-answer"));
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*via, "lost-answer"));
  const std::vector<std::string_view> item = {"ORD-1"};
  ASSERT_NO_FATAL_FAILURE(
      testing::ExpectALostAddRanOnce(*relay, *f, *mine, item, "$4\r\nEVAL\r\n"));
}

TEST_F(RedisSentinelTest, FailoverDuringAddsLosesNoAcknowledgedAdd) {
  StartAll();
  // wait_replicas=1: an add is acknowledged once the replica has it, so the
  // replica that becomes master has every acknowledged add. Retries ride out
  // the failover (about a second).
  auto store = MustOpen(Url("wait_replicas=1&wait_timeout_ms=2000&max_retries=20"));
  ASSERT_NE(store, nullptr);
  auto created = BloomFilter::Create(*store, "orders", Options(1'000'000));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::shared_ptr<BloomFilter> filter = std::move(created).value();

  std::mutex mu;
  std::vector<std::string> acknowledged;  // mu
  std::vector<std::string> failures;      // mu
  std::atomic<bool> stop{false};
  // Several adders, so that some add is in flight whenever the master
  // changes.
  auto adder = [&](int thread) {
    for (int batch = 0; !stop; ++batch) {
      std::vector<std::string> items;
      for (int i = 0; i < 50; ++i) {
        items.push_back("ORD-" + std::to_string(thread) + "-" + std::to_string(batch) + "-" +
                        std::to_string(i));
      }
      Status s = filter->AddMany(Views(items));
      std::lock_guard lock(mu);
      if (s.ok()) {
        acknowledged.insert(acknowledged.end(), items.begin(), items.end());
      } else {
        failures.push_back(s.ToString());  // not acknowledged: may or may not be there
      }
    }
  };
  std::vector<std::thread> adders;
  for (int t = 0; t < 3; ++t) adders.emplace_back(adder, t);
  auto acked = [&] {
    std::lock_guard lock(mu);
    return acknowledged.size();
  };
  ASSERT_TRUE(Eventually([&] { return acked() >= 1000; }));
  const auto t0 = Clock::now();
  FailOver();
  const auto t1 = Clock::now();
  const size_t at_switch = acked();
  // Adds go on, acknowledged by the new master, without reopening anything.
  const bool went_on = Eventually([&] { return acked() >= at_switch + 1000; });
  const auto t2 = Clock::now();
  std::printf("switch after %lld ms, 1000 more acknowledged adds %lld ms later\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count()),
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(t2 - t1).count()));
  stop = true;
  for (auto& t : adders) t.join();
  ASSERT_TRUE(went_on) << "adds stopped after the failover";
  EXPECT_EQ(store->Master(), Address(*replica_));

  std::vector<uint8_t> present;
  ASSERT_TRUE(filter->ContainsMany(Views(acknowledged), &present).ok());
  size_t lost = 0;
  for (size_t i = 0; i < acknowledged.size(); ++i) {
    if (present[i] != 1 && ++lost <= 5) ADD_FAILURE() << "lost " << acknowledged[i];
  }
  EXPECT_EQ(lost, 0u) << "of " << acknowledged.size() << " acknowledged adds";
  // The answers came from the new master, which holds the bits itself.
  EXPECT_EQ(replica_->Cli({"EXISTS", "orders"}), "1\n");
  std::string failed_text;
  for (size_t i = 0; i < failures.size() && i < 3; ++i) failed_text += failures[i] + "\n";
  std::printf("%zu adds acknowledged, %zu batches failed during the failover\n%s",
              acknowledged.size(), failures.size(), failed_text.c_str());

  // Checks and adds keep working on the same filter object.
  ASSERT_TRUE(filter->Add("after-the-switch").ok());
  EXPECT_TRUE(*filter->Contains("after-the-switch"));
}

TEST_F(RedisSentinelTest, SwitchMasterNoticeMovesTheStoreAtOnce) {
  StartAll();
  auto store = MustOpen(Url());
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Master(), Address(*master_));
  FailOver();
  // No operation runs: only the +switch-master notice can move the store.
  EXPECT_TRUE(
      Eventually([&] { return store->Master() == Address(*replica_); }, std::chrono::seconds(5)))
      << "still on " << store->Master();
}

TEST_F(RedisSentinelTest, ReadonlyFromADemotedMasterIsSentToTheNewOne) {
  StartAll();
  auto store = MustOpen(Url("max_retries=2"));
  ASSERT_NE(store, nullptr);
  auto config = MakeConfig(Options(1000));
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(store->Create("before", *config).ok());  // a pooled connection to the master
  // The roles swap behind the store's back, and the sentinel is told to
  // watch the new master, without a +switch-master notice.
  ASSERT_NE(replica_->Cli({"REPLICAOF", "NO", "ONE"}).find("OK"), std::string::npos);
  ASSERT_NE(master_->Cli({"REPLICAOF", "127.0.0.1", std::to_string(replica_->port())}).find("OK"),
            std::string::npos);
  ASSERT_NE(sentinel_->Cli({"SENTINEL", "REMOVE", kMaster}).find("OK"), std::string::npos);
  ASSERT_NE(sentinel_
                ->Cli({"SENTINEL", "MONITOR", kMaster, "127.0.0.1",
                       std::to_string(replica_->port()), "1"})
                .find("OK"),
            std::string::npos);
  ASSERT_TRUE(Eventually([&] { return InSync(*master_) && Online(*replica_); }));
  // A create is not idempotent (sent twice it would answer "exists"), but
  // READONLY means the old master ran none of it: it goes to the new one.
  Status s = store->Create("after", *config);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(store->Master(), Address(*replica_));
  EXPECT_EQ(replica_->Cli({"EXISTS", "{after}:meta"}), "1\n");
}

TEST_F(RedisSentinelTest, AMasterThatIsAReplicaNowIsRefused) {
  StartAll();
  // The roles swap; the sentinel learns of it only at its next INFO (every
  // 10 s), so for now it still names the old master, which is a replica.
  ASSERT_NE(replica_->Cli({"REPLICAOF", "NO", "ONE"}).find("OK"), std::string::npos);
  ASSERT_NE(master_->Cli({"REPLICAOF", "127.0.0.1", std::to_string(replica_->port())}).find("OK"),
            std::string::npos);
  ASSERT_EQ(sentinel_->MasterPort(), master_->port());
  auto store = Store::Open(Url("max_retries=0"));
  ASSERT_FALSE(store.ok()) << "a store opened on a replica would fail every write";
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable) << store.status().ToString();
  EXPECT_NE(store.status().message().find("is a slave, not a master"), std::string::npos)
      << store.status().ToString();
}

TEST_F(RedisSentinelTest, ReadFromReplicaReadsThereAndFallsBackToTheMaster) {
  StartAll();
  auto store = MustOpen(Url("read_from=replica&wait_replicas=1&max_retries=2"));
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "orders", Options(10'000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  std::vector<std::string> items;
  for (int i = 0; i < 1000; ++i) items.push_back("ORD-" + std::to_string(i));
  ASSERT_TRUE((*filter)->AddMany(Views(items)).ok());

  const int64_t master_reads = Calls(*master_, "bitfield_ro");
  std::vector<uint8_t> present;
  ASSERT_TRUE((*filter)->ContainsMany(Views(items), &present).ok());
  for (size_t i = 0; i < items.size(); ++i) ASSERT_EQ(present[i], 1) << items[i];
  EXPECT_GT(Calls(*replica_, "bitfield_ro"), 0) << "the checks did not go to the replica";
  EXPECT_EQ(Calls(*master_, "bitfield_ro"), master_reads) << "the checks went to the master";

  // A stalled replica's read times out and goes on to the master: it was
  // deadline_exceeded (504) while the master could answer.
  {
    auto quick = MustOpen(Url("read_from=replica&command_timeout_ms=500&connect_timeout_ms=500"));
    ASSERT_NE(quick, nullptr);
    auto f = BloomFilter::Open(*quick, "orders");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->ContainsMany(Views(items), &present).ok());  // on the replica
    const int64_t before = Calls(*master_, "bitfield_ro");
    ASSERT_EQ(::kill(replica_->pid(), SIGSTOP), 0);
    const Status stalled = (*f)->ContainsMany(Views(items), &present);
    ::kill(replica_->pid(), SIGCONT);
    ASSERT_TRUE(stalled.ok()) << stalled.ToString();
    for (size_t i = 0; i < items.size(); ++i) ASSERT_EQ(present[i], 1) << items[i];
    EXPECT_GT(Calls(*master_, "bitfield_ro"), before);
  }

  // Without a replica, checks go to the master.
  replica_->Stop(/*hard=*/true);
  ASSERT_TRUE((*filter)->ContainsMany(Views(items), &present).ok());
  for (size_t i = 0; i < items.size(); ++i) ASSERT_EQ(present[i], 1) << items[i];
  EXPECT_GT(Calls(*master_, "bitfield_ro"), master_reads);
}

// redis:// pointed at a sentinel is refused when the store opens: a
// sentinel holds no data, and every command failed 500 "unknown command"
// while /readyz said ready.
TEST_F(RedisSentinelTest, ARedisUrlNamingASentinelIsRefusedAtOpen) {
  StartAll();
  auto store = Store::Open("redis://127.0.0.1:" + std::to_string(sentinel_->port()));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
  EXPECT_NE(store.status().message().find("redis-sentinel://"), std::string::npos)
      << store.status().ToString();
}

// A sentinel given as a Redis Cluster node: it was "unknown command
// 'CLUSTER'", which named neither the mistake nor the URL to use.
TEST_F(RedisSentinelTest, AClusterUrlNamingASentinelIsRefusedAtOpen) {
  StartAll();
  auto store = Store::Open("redis-cluster://127.0.0.1:" + std::to_string(sentinel_->port()));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
  EXPECT_NE(store.status().message().find("is a Sentinel, not a Redis Cluster node"),
            std::string::npos)
      << store.status().ToString();
  EXPECT_NE(store.status().message().find("redis-sentinel://"), std::string::npos)
      << store.status().ToString();
}

// The reverse mistake: a data server given as the sentinel. It read as a
// sentinel down ("command not offered ... renamed with rename-command"),
// exit 3, and redbloomd waited for it forever.
TEST_F(RedisSentinelTest, ASentinelUrlNamingADataServerIsRefusedAtOpen) {
  StartAll();
  auto store = Store::Open("redis-sentinel://" + Address(*master_) + "/" + kMaster);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
  EXPECT_NE(store.status().message().find("is not a Sentinel"), std::string::npos)
      << store.status().ToString();
  EXPECT_EQ(store.status().message().find("rename-command"), std::string::npos)
      << store.status().ToString();
}

TEST_F(RedisSentinelTest, UnknownMasterNameIsAnInvalidArgument) {
  StartAll();
  auto store = Store::Open("redis-sentinel://127.0.0.1:" + std::to_string(sentinel_->port()) +
                           "/nosuchmaster");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
  EXPECT_NE(store.status().message().find("no master named 'nosuchmaster'"), std::string::npos)
      << store.status().ToString();
}

// A sentinel that does not know the master's name (new, reset, or given
// another name) sends the question on to the next: it was an invalid
// argument that made redbloomd exit 2 at start, and answer 400 later.
TEST_F(RedisSentinelTest, ASentinelThatKnowsNoSuchMasterSendsTheQuestionOn) {
  StartAll();
  RedisSentinel other(master_->port(), kMaster);
  other.Start();
  ASSERT_NE(other.Cli({"SENTINEL", "REMOVE", kMaster}).find("OK"), std::string::npos);
  const std::string both = "redis-sentinel://127.0.0.1:" + std::to_string(other.port()) +
                           ",127.0.0.1:" + std::to_string(sentinel_->port()) + "/" + kMaster;
  auto store = MustOpen(both);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Master(), Address(*master_));
  // None knows it when the store opens: the URL's fault, said as before.
  auto alone =
      Store::Open("redis-sentinel://127.0.0.1:" + std::to_string(other.port()) + "/" + kMaster);
  EXPECT_EQ(alone.status().code(), StatusCode::kInvalidArgument) << alone.status().ToString();
  EXPECT_NE(alone.status().message().find("knows no master named 'mymaster'"), std::string::npos)
      << alone.status().ToString();
  other.Stop();
}

// With no sentinel answering, the master they named last serves on: every
// call failed "no sentinel ... answered" once a connection to a healthy
// master was lost, and with stopped (not dead) sentinels each waiting call
// asked them again in turn (8 checks took 68-97 s).
TEST_F(RedisSentinelTest, TheLastKnownMasterServesWhileNoSentinelAnswers) {
  StartAll();
  auto store = MustOpen(Url("connect_timeout_ms=300&command_timeout_ms=300&max_retries=0"));
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "kept", Options(1000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("before").ok());

  ASSERT_EQ(::kill(sentinel_->pid(), SIGSTOP), 0);
  // A call the master leaves unanswered for a while: it is looked up again
  // before the next use.
  ASSERT_NE(master_->Cli({"CLIENT", "PAUSE", "700"}).find("OK"), std::string::npos);
  const Status timed_out = (*filter)->Add("while-paused");
  EXPECT_FALSE(timed_out.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  std::vector<std::thread> threads;
  std::atomic<int> answered{0};
  std::mutex mu;
  std::string failures;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Result<bool> present = (*filter)->Contains("before");
      Status added = (*filter)->Add("during-" + std::to_string(t));
      if (present.ok() && *present && added.ok()) {
        ++answered;
      } else {
        std::lock_guard lock(mu);
        failures += present.status().ToString() + " / " + added.ToString() + "\n";
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const Status ping = store->Ping();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  // Readiness says what is going on.
  Result<std::vector<std::string>> warnings = store->Warnings();
  ASSERT_TRUE(warnings.ok()) << warnings.status().ToString();
  EXPECT_TRUE(std::any_of(warnings->begin(), warnings->end(), [](const std::string& w) {
    return w.find("no sentinel of master 'mymaster' answers") != std::string::npos;
  })) << ::testing::PrintToString(*warnings);
  // The sentinels are asked again once per 5 s, by one call, past the first
  // 5 s too: the wait was renewed only when the failure read differently,
  // so after 5 s every call asked them again (300 ms each here).
  int slow = 0;
  for (int i = 0; i < 65; ++i) {
    const auto call = std::chrono::steady_clock::now();
    ASSERT_TRUE((*filter)->Contains("before").ok()) << i;
    slow += std::chrono::steady_clock::now() - call > std::chrono::milliseconds(250);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LE(slow, 3) << "calls that asked the stopped sentinel in 6.5 s";
  ::kill(sentinel_->pid(), SIGCONT);
  EXPECT_EQ(answered.load(), 8) << failures;
  EXPECT_TRUE(ping.ok()) << ping.ToString();
  EXPECT_EQ(store->Master(), Address(*master_));
  // Bounded by the timeouts, not by a lookup per waiting call (8 of them
  // took 68-97 s with 2 s timeouts before).
  EXPECT_LT(elapsed, std::chrono::seconds(8));
  EXPECT_TRUE(*(*filter)->Contains("during-7"));
}

// Readiness warns whenever no sentinel answers, as the README says: it
// warned only once a lookup had failed, which a healthy master never needs,
// so with every sentinel down (and failovers unheard) /readyz said ready
// with no warning (an audit: 40 s of it).
TEST_F(RedisSentinelTest, ReadinessWarnsWhileTheWatcherReachesNoSentinel) {
  StartAll();
  auto store = MustOpen(Url());
  ASSERT_NE(store, nullptr);
  auto warned = [&] {
    Result<std::vector<std::string>> warnings = store->Warnings();
    return warnings.ok() && std::any_of(warnings->begin(), warnings->end(), [](const auto& w) {
             return w.find("failover watcher of master 'mymaster'") != std::string::npos;
           });
  };
  EXPECT_FALSE(warned());
  sentinel_->Stop();
  bool seen = false;
  for (int i = 0; i < 300 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = warned();
  }
  EXPECT_TRUE(seen) << "no warning 30 s after the only sentinel died";
  auto filter = BloomFilter::Create(*store, "unwatched", Options(1000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  EXPECT_TRUE((*filter)->Add("x").ok()) << "the master serves on";
}

// A data user without +role or +ping: the role comes from INFO
// replication, and PING's refusal is no failure (as for a single server).
// Both failed every call before, and the README's rules grant neither.
TEST_F(RedisSentinelTest, AUserWithoutRoleOrPingIsServedAndOneWithoutInfoToldWhy) {
  StartAll({"--user", "app", "on", ">app-pw", "~*", "&*", "+@all", "-role", "-ping", "--user",
            "blind", "on", ">blind-pw", "~*", "&*", "+@all", "-role", "-info"});
  const std::string at = "@127.0.0.1:" + std::to_string(sentinel_->port()) + "/" + kMaster;
  auto store = MustOpen("redis-sentinel://app:app-pw" + at);
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "roles", Options(100));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("x").ok());
  EXPECT_TRUE(*(*filter)->Contains("x"));
  EXPECT_TRUE(store->Ping().ok());
  const Status blind = Store::Open("redis-sentinel://blind:blind-pw" + at).status();
  EXPECT_EQ(blind.code(), StatusCode::kUnavailable) << blind.ToString();
  EXPECT_NE(blind.message().find("grant the user +role"), std::string::npos) << blind.ToString();
}

TEST_F(RedisSentinelTest, SentinelsAreTriedInTurn) {
  StartAll();
  const int dead = testing::FreePort();
  // Nothing listens on the first: the second answers.
  auto store = MustOpen("redis-sentinel://127.0.0.1:" + std::to_string(dead) +
                        ",127.0.0.1:" + std::to_string(sentinel_->port()) + "/" + kMaster);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Master(), Address(*master_));
  // With none answering, the store is unavailable, and says who was asked.
  auto none = Store::Open("redis-sentinel://127.0.0.1:" + std::to_string(dead) + "/" + kMaster);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable) << none.status().ToString();
  EXPECT_NE(none.status().message().find("no sentinel of master 'mymaster' answered"),
            std::string::npos)
      << none.status().ToString();
  EXPECT_NE(none.status().message().find(std::to_string(dead)), std::string::npos);
}

// A stale sentinel listed first (here one that monitors the replica under
// the master's name, as one restarted with an old config does after a
// failover) names a server that says it is a replica: the next sentinel is
// asked. The store never opened while the other named the master (an audit).
TEST_F(RedisSentinelTest, AStaleSentinelListedFirstSendsTheLookupOn) {
  StartAll();
  RedisSentinel stale(replica_->port(), kMaster);
  stale.Start();
  ASSERT_EQ(stale.MasterPort(), replica_->port());
  auto store = MustOpen("redis-sentinel://127.0.0.1:" + std::to_string(stale.port()) +
                        ",127.0.0.1:" + std::to_string(sentinel_->port()) + "/" + kMaster);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Master(), Address(*master_));
  auto filter = BloomFilter::Create(*store, "orders", Options(100));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("x").ok());
  EXPECT_TRUE(testing::ValueOrFail((*filter)->Contains("x")));
  // Named by every sentinel, a replica is the error.
  auto only_stale =
      Store::Open("redis-sentinel://127.0.0.1:" + std::to_string(stale.port()) + "/" + kMaster);
  ASSERT_FALSE(only_stale.ok());
  EXPECT_NE(only_stale.status().message().find("not a master"), std::string::npos)
      << only_stale.status().ToString();
  stale.Stop();
}

TEST_F(RedisSentinelTest, SentinelsAndServersHaveTheirOwnPasswords) {
  sentinel_auth_ = "sentinel-pw";
  server_auth_ = "data-pw";
  StartAll({"--requirepass", "data-pw", "--masterauth", "data-pw"},
           {"requirepass sentinel-pw", std::string("sentinel auth-pass ") + kMaster + " data-pw"});
  // Without the sentinel's password, the sentinel refuses.
  auto store = Store::Open(
      "redis-sentinel://:data-pw@127.0.0.1:" + std::to_string(sentinel_->port()) + "/" + kMaster);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("authentication failed"), std::string::npos)
      << store.status().ToString();
  EXPECT_NE(store.status().message().find("is a sentinel: its password is sentinel_password="),
            std::string::npos)
      << store.status().ToString();
  EXPECT_EQ(store.status().message().find("user:password@"), std::string::npos)
      << "the data servers' password is no sentinel's: " << store.status().ToString();
  // With both.
  auto good = MustOpen("redis-sentinel://:data-pw@127.0.0.1:" + std::to_string(sentinel_->port()) +
                       "/" + kMaster + "?sentinel_password=sentinel-pw");
  ASSERT_NE(good, nullptr);
  auto filter = BloomFilter::Create(*good, "secret", Options(100));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("x").ok());
  EXPECT_TRUE(*(*filter)->Contains("x"));
}

// sentinel_user: an ACL user of the sentinels' own. The default user's
// password does not open the named user, so the user must be sent.
TEST_F(RedisSentinelTest, SentinelsTakeAnAclUser) {
  sentinel_auth_ = "sentinel-pw";
  StartAll({}, {"requirepass sentinel-pw", "user watcher on >watch-pw +@all"});
  const std::string base =
      "redis-sentinel://127.0.0.1:" + std::to_string(sentinel_->port()) + "/" + kMaster;
  auto wrong = Store::Open(base + "?sentinel_user=watcher&sentinel_password=sentinel-pw");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("authentication failed"), std::string::npos)
      << wrong.status().ToString();
  auto good = MustOpen(base + "?sentinel_user=watcher&sentinel_password=watch-pw");
  ASSERT_NE(good, nullptr);
  auto filter = BloomFilter::Create(*good, "watched", Options(100));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("x").ok());
  EXPECT_TRUE(*(*filter)->Contains("x"));
}

// A sentinel user without +subscribe serves lookups, but the failover
// watcher is refused every time: redbloomd said ready and nothing else (an
// audit: 37 refused connections in 20 s). Readiness now warns, with why.
TEST_F(RedisSentinelTest, AWatcherRefusedBySentinelAclIsReported) {
  sentinel_auth_ = "sentinel-pw";
  StartAll({}, {"requirepass sentinel-pw", "user deaf on >deaf-pw +@all -subscribe"});
  auto store = MustOpen("redis-sentinel://127.0.0.1:" + std::to_string(sentinel_->port()) + "/" +
                        kMaster + "?sentinel_user=deaf&sentinel_password=deaf-pw");
  ASSERT_NE(store, nullptr);
  std::string warning;
  for (int i = 0; i < 100 && warning.empty(); ++i) {
    Result<std::vector<std::string>> warnings = store->Warnings();
    if (warnings.ok() && !warnings->empty()) warning = warnings->front();
    if (warning.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(warning.find("failover watcher of master 'mymaster'"), std::string::npos) << warning;
  EXPECT_NE(warning.find("subscribe"), std::string::npos) << "names the refusal: " << warning;
}

// rediss-sentinel://: TLS to the sentinel and to the servers. The sentinel
// watches the master's TLS port (tls-replication yes), so that is the
// address it names.
TEST_F(RedisSentinelTest, SentinelsAndServersOverTls) {
  testing::TestCertificates certs;
  const int master_tls = testing::FreePort();
  const int replica_tls = testing::FreePort();
  std::vector<std::string> master_args = certs.ServerArgs(master_tls, /*auth_clients=*/false);
  master_args.insert(master_args.end(),
                     {"--tls-replication", "yes", "--repl-diskless-sync-delay", "0"});
  master_ = std::make_unique<RedisServer>(master_args);
  master_->Start();
  std::vector<std::string> replica_args = certs.ServerArgs(replica_tls, /*auth_clients=*/false);
  replica_args.insert(replica_args.end(), {"--tls-replication", "yes", "--replicaof", "127.0.0.1",
                                           std::to_string(master_tls)});
  replica_ = std::make_unique<RedisServer>(replica_args);
  replica_->Start();
  ASSERT_TRUE(Eventually([&] { return InSync(*replica_); }));
  const int sentinel_tls = testing::FreePort();
  sentinel_ = std::make_unique<RedisSentinel>(
      master_tls, kMaster,
      std::vector<std::string>{
          "tls-port " + std::to_string(sentinel_tls), "tls-cert-file " + certs.server_cert(),
          "tls-key-file " + certs.server_key(), "tls-ca-cert-file " + certs.ca(),
          "tls-auth-clients no", "tls-replication yes"});
  sentinel_->Start();
  ASSERT_EQ(sentinel_->MasterPort(), master_tls);

  // wait_replicas=1: an add is acknowledged once the replica has it, so that
  // the failover below loses none (replication alone is asynchronous).
  const std::string tls_url = "rediss-sentinel://127.0.0.1:" + std::to_string(sentinel_tls) + "/" +
                              kMaster + "?cacert=" + certs.ca() + "&wait_replicas=1";
  auto store = MustOpen(tls_url);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Master(), "127.0.0.1:" + std::to_string(master_tls));
  auto filter = BloomFilter::Create(*store, "orders", Options(1000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("ORD-1").ok());
  EXPECT_TRUE(*(*filter)->Contains("ORD-1"));
  EXPECT_EQ(master_->Cli({"EXISTS", "orders"}), "1\n");
  // The sentinel's TLS port refuses plain text, and its certificate is checked.
  auto plain =
      Store::Open("redis-sentinel://127.0.0.1:" + std::to_string(sentinel_tls) + "/" + kMaster);
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("rediss://"), std::string::npos)
      << plain.status().ToString();
  auto untrusted = Store::Open("rediss-sentinel://127.0.0.1:" + std::to_string(sentinel_tls) + "/" +
                               kMaster + "?cacert=" + certs.other_ca());
  ASSERT_FALSE(untrusted.ok());
  EXPECT_NE(untrusted.status().message().find("does not verify"), std::string::npos)
      << untrusted.status().ToString();

  // A failover over TLS: the +switch-master notice comes over the TLS
  // subscription and names the replica's TLS port, which the store then
  // reaches with the same certificate checks.
  sentinel_->WaitForReplica(replica_tls);
  ASSERT_NE(sentinel_->Cli({"SENTINEL", "FAILOVER", kMaster}).find("OK"), std::string::npos);
  ASSERT_TRUE(Eventually([&] { return sentinel_->MasterPort() == replica_tls; }))
      << "the sentinel never switched to the replica";
  const std::string promoted = "127.0.0.1:" + std::to_string(replica_tls);
  EXPECT_TRUE(Eventually([&] { return store->Master() == promoted; }, std::chrono::seconds(5)))
      << "still on " << store->Master();
  EXPECT_TRUE(*(*filter)->Contains("ORD-1"));
  // Adds need a replica again (wait_replicas): the old master, made one of
  // the new master here, as the sentinel would do at its next look at it
  // (up to 10 s later), over TLS.
  ASSERT_NE(master_->Cli({"REPLICAOF", "127.0.0.1", std::to_string(replica_tls)}).find("OK"),
            std::string::npos);
  ASSERT_TRUE(Eventually([&] { return InSync(*master_) && Online(*replica_); }))
      << "the old master never came in sync with the new one";
  Status added = (*filter)->Add("ORD-2");
  ASSERT_TRUE(added.ok()) << added.ToString();
  EXPECT_TRUE(*(*filter)->Contains("ORD-2"));
  EXPECT_EQ(store->Master(), promoted);
}

// ---- The CLI and the service -----------------------------------------------

testing::CommandResult Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {REDBLOOM_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunCommand(argv);
}

TEST_F(RedisSentinelTest, CliTakesSentinelUrls) {
  StartAll();
  const std::string url = Url();
  auto r = Cli({"--store", url, "create", "cli", "--capacity", "1000", "--error", "0.01"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"--store", url, "add", "cli", "a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"--store", url, "check", "cli", "a", "b"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "1\ta\n0\tb\n");
  r = Cli({"--store", "redis-sentinel://127.0.0.1:" + std::to_string(sentinel_->port()) + "/nope",
           "list"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  sentinel_->Stop();
  r = Cli({"--store", url, "list"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no sentinel"), std::string::npos) << r.err;
}

#ifdef REDBLOOMD_PATH
TEST_F(RedisSentinelTest, ReadyzReportsTheCurrentMaster) {
  StartAll();
  testing::RedbloomdProcess server(Url());
  server.Start();
  auto client = server.Client();
  auto master = [&] {
    testing::Answer a = testing::Call(*client, "GET", "/readyz");
    return a.status == 200 && a.json.contains("master") ? a.json["master"].get<std::string>()
                                                        : "status " + std::to_string(a.status);
  };
  EXPECT_EQ(master(), Address(*master_));
  FailOver();
  EXPECT_TRUE(Eventually([&] { return master() == Address(*replica_); }))
      << "/readyz still says " << master();
}
#endif

}  // namespace
}  // namespace redbloom
