// A Redis restart in the middle of a load: errors reach the caller, and no
// acknowledged item is lost without the caller hearing of it.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "redis_server.h"
#include "test_util.h"

namespace redbloom {
namespace {

std::vector<std::string> Batch(size_t b, size_t n) {
  std::vector<std::string> items;
  for (size_t i = 0; i < n; ++i)
    items.push_back("ORD-" + std::to_string(b) + "-" + std::to_string(i));
  return items;
}

TEST(RedisRestartTest, ErrorsAreSurfacedAndAcknowledgedItemsSurvive) {
  // appendfsync always: Redis writes and fsyncs the AOF before it answers, so
  // an acknowledged add survives even SIGKILL.
  testing::RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
  server.Start();
  // Few retries with short backoff, so the outage below outlasts them.
  // batch_items=400 splits each 2000-item AddMany into five pipelined
  // transactions, so the kill lands with one in flight and one queued.
  auto store = Store::Open(server.url() + "?max_retries=1&connect_timeout_ms=200&batch_items=400");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  constexpr size_t kBatch = 2000;
  auto f =
      BloomFilter::Create(**store, "load", FilterOptions{.capacity = 500'000, .error_rate = 0.01});
  ASSERT_TRUE(f.ok()) << f.status().ToString();

  std::atomic<bool> restarted{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    server.Stop(/*hard=*/true);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    server.Start();
    restarted = true;
  });

  std::vector<size_t> acknowledged;
  size_t failures = 0;
  Status last_error;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  size_t b = 0;
  // Keep loading until the server has come back and taken some more batches.
  for (size_t after_restart = 0; after_restart < 20 && std::chrono::steady_clock::now() < deadline;
       ++b) {
    const auto items = Batch(b, kBatch);
    std::vector<std::string_view> views(items.begin(), items.end());
    const Status s = (*f)->AddMany(views);
    if (s.ok()) {
      acknowledged.push_back(b);
    } else {
      // Meanwhile a check of an acknowledged item answers "present" or fails:
      // never "absent".
      if (!acknowledged.empty()) {
        auto hit = (*f)->Contains(Batch(acknowledged.front(), 1)[0]);
        EXPECT_TRUE(!hit.ok() || *hit) << "an acknowledged item read as absent";
      }
      ++failures;
      last_error = s;
      // A store failure is transient or a clear error, never a silent drop.
      EXPECT_TRUE(s.IsTransient() || s.code() == StatusCode::kNotFound) << s.ToString();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (restarted) ++after_restart;
  }
  killer.join();
  ASSERT_TRUE(restarted);
  EXPECT_GT(failures, 0u) << "the outage was never reported to the caller";
  ASSERT_GT(acknowledged.size(), 2u);
  std::cout << "batches: " << b << ", acknowledged: " << acknowledged.size()
            << ", failed: " << failures << " (last: " << last_error.ToString() << ")\n";

  // Every acknowledged item is there, read through a brand-new client.
  auto fresh = Store::Open(server.url());
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  auto g = BloomFilter::Open(**fresh, "load");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (size_t a : acknowledged) {
    const auto items = Batch(a, kBatch);
    std::vector<std::string_view> views(items.begin(), items.end());
    std::vector<uint8_t> present;
    ASSERT_TRUE((*g)->ContainsMany(views, &present).ok());
    for (size_t i = 0; i < kBatch; ++i) ASSERT_EQ(present[i], 1) << "batch " << a << " item " << i;
  }
  // And the old handle works again too.
  auto hit = (*f)->Contains(Batch(acknowledged.back(), 1)[0]);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_TRUE(*hit);
}

// Without persistence, a restart loses every acknowledged add. The client
// cannot undo that, but it must not hide it: the first call after the
// restart fails ("restarted"), instead of reconnecting and reporting success
// on the emptied server.
TEST(RedisRestartTest, ARestartIsReportedNotRetriedOver) {
  testing::RedisServer server;
  server.Start();
  auto store = Store::Open(server.url());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto f = BloomFilter::Create(**store, "f", FilterOptions{.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("acknowledged").ok());
  server.Stop(/*hard=*/true);
  server.Start();  // same port, empty dataset, a new run_id
  // The same filter re-created by someone else, so that an add would succeed.
  auto other = Store::Open(server.url());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(
      BloomFilter::Create(**other, "f", FilterOptions{.capacity = 1000, .error_rate = 0.01}).ok());

  const Status s = (*f)->Add("after");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.reason(), StatusReason::kRestarted) << s.ToString();
  // Told once; then the store works on the server as it is now.
  auto lost = (*f)->Contains("acknowledged");
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  EXPECT_FALSE(*lost) << "the dataset is the empty one; the caller was told above";
}

// The case through the CLI: `add --file` streaming while Redis
// restarts from an older RDB. Before, the client reconnected and exited 0
// with acknowledged items gone; now it exits 3 and says the server restarted.
TEST(RedisRestartTest, CliAddAcrossARestartFromAnOlderSnapshotExitsNonZero) {
  testing::RedisServer server({"--dbfilename", "dump.rdb"});
  server.Start();
  const std::string cli = REDBLOOM_CLI_PATH;
  const std::string url = server.url() + "?max_retries=5&connect_timeout_ms=300";
  ASSERT_EQ(testing::RunCommand({cli, "--store", url, "create", "f", "-n", "3000000", "-p", "0.01"})
                .exit_code,
            0);
  ASSERT_NE(server.Cli({"SAVE"}).find("OK"), std::string::npos);  // the snapshot: no items
  std::string input;
  for (int i = 0; i < 2'000'000; ++i) input += "ORD-" + std::to_string(i) + "\n";
  std::atomic<bool> restarted{false};
  std::thread restarter([&] {
    // Once the add has acknowledged some items, kill and restart from the
    // snapshot (as a crash between two saves would).
    while (server.Cli({"HGET", "{f}:meta", "count"}).find_first_not_of("0\n") ==
           std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    server.Stop(/*hard=*/true);
    server.Start();
    restarted = true;
  });
  const testing::CommandResult r =
      testing::RunCommand({cli, "--store", url, "add", "f", "--quiet", "--file", "-"}, input);
  restarter.join();
  ASSERT_TRUE(restarted);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("restarted"), std::string::npos) << r.err;
}

// A master demoted while an add's WAIT blocks on it (a failover, or an
// operator's REPLICAOF) answers UNBLOCKED: unavailable, which a caller may
// retry, not internal (it was 500 "a bug" at every Cluster failover with
// wait_replicas, and exit 3 with "internal" from the CLI).
TEST(RedisRestartTest, AMasterDemotedDuringAWaitIsUnavailable) {
  testing::RedisServer other;
  other.Start();
  testing::RedisServer master;
  master.Start();
  testing::RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  replica.Start();
  ASSERT_TRUE(replica.WaitForMasterLink());
  auto store = Store::Open(master.url() + "?wait_replicas=1&wait_timeout_ms=20000&max_retries=0");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto f = BloomFilter::Create(**store, "w", FilterOptions{.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("before").ok());
  // The replica stops acknowledging, so the next add's WAIT blocks.
  ASSERT_EQ(::kill(replica.pid(), SIGSTOP), 0);
  Status added;
  std::thread add([&] { added = (*f)->Add("during"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  master.Cli({"REPLICAOF", "127.0.0.1", std::to_string(other.port())});
  add.join();
  ASSERT_EQ(::kill(replica.pid(), SIGCONT), 0);
  EXPECT_EQ(added.code(), StatusCode::kUnavailable) << added.ToString();
  EXPECT_NE(added.message().find("stopped being a master"), std::string::npos) << added.ToString();
}

}  // namespace
}  // namespace redbloom
