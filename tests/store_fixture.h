// One test body over every store: derive a fixture from StoreFixture, write
// TEST_P bodies against store_, and instantiate with AllStores(). Redis runs
// on a redis-server of the suite's own, and Redis Cluster on a cluster of six
// nodes (3 masters, 3 replicas) of its own (each started before the suite's
// first test that needs it, flushed before each); every store reads the
// fixture's ManualClock, so tests move time instead of sleeping.
#ifndef REDBLOOM_TESTS_STORE_FIXTURE_H_
#define REDBLOOM_TESTS_STORE_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "redbloom/clock.h"
#include "redbloom/store.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "test_util.h"

namespace redbloom::testing {

inline uint64_t WallMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

class StoreFixture : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {}
  static void TearDownTestSuite() {
    delete redis_;
    redis_ = nullptr;
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    // Redis turns expiries into PEXPIREAT times: start at the real time, so
    // that the server's own clock agrees until a test moves this one.
    clock_ = std::make_shared<ManualClock>(WallMillis());
    if (GetParam() == "redis") {
      if (redis_ == nullptr) redis_ = Started<RedisServer>().release();
      redis_->Cli({"FLUSHALL"});
    }
    if (GetParam() == "cluster") {
      if (cluster_ == nullptr) cluster_ = Started<RedisCluster>().release();
      cluster_->FlushAll();
    }
    store_ = Open();
    ASSERT_NE(store_, nullptr);
  }

  // Another handle on the same store (another client).
  std::unique_ptr<Store> Open() {
    StoreOptions options;
    options.clock = clock_;
    auto s = Store::Open(url(), options);
    EXPECT_TRUE(s.ok()) << url() << ": " << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string url() const {
    if (GetParam() == "file") return "file:" + dir_.path();
    if (GetParam() == "redis") return redis_->url();
    if (GetParam() == "cluster") return cluster_->url();
    return "mem:";
  }
  // redis-cli against the Redis store (following a cluster's redirects).
  std::string Cli(const std::vector<std::string>& args) const {
    if (GetParam() == "redis") return redis_->Cli(args);
    std::vector<std::string> argv = {"/usr/bin/env", "redis-cli", "-c", "-p",
                                     std::to_string(cluster_->node(0).port())};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv).out;
  }

  // Redis semantics (server-side expiries), on one server or a cluster.
  bool is_redis() const { return GetParam() == "redis" || GetParam() == "cluster"; }
  bool is_cluster() const { return GetParam() == "cluster"; }
  bool shares_across_handles() const { return GetParam() != "mem"; }

  static inline RedisServer* redis_ = nullptr;
  static inline RedisCluster* cluster_ = nullptr;
  TempDir dir_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Store> store_;
};

inline auto AllStores() { return ::testing::Values("mem", "file", "redis", "cluster"); }
inline std::string StoreName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_STORE_FIXTURE_H_
