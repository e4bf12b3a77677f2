// A test suite on one shared redis-server, with the raw client of
// raw_redis.h.
#ifndef REDBLOOM_TESTS_REDIS_TEST_RAW_H_
#define REDBLOOM_TESTS_REDIS_TEST_RAW_H_

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "raw_redis.h"
#include "redis_server.h"

namespace redbloom::testing {

// A test suite on one redis-server of its own, started before its first test
// and stopped after its last, flushed before each test, with a raw client.
class SharedRedisTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new RedisServer();
    server_->Start();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    raw_ = std::make_unique<RawRedis>(server_->port());
    raw_->Run({"FLUSHALL"});
  }

  // A fault inside a running add: once `key` has a bit set (a first
  // transaction of the add was applied), pauses every client's writes for
  // `ms`. False if no bit appeared within 30 s. For a thread of its own; the
  // test's thread must not use raw_ meanwhile.
  bool PauseWritesOnceBitsAppear(const std::string& key, int ms) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      if (raw_->Int({"BITCOUNT", key}) > 0) {
        raw_->Run({"CLIENT", "PAUSE", std::to_string(ms), "WRITE"});
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  static inline RedisServer* server_ = nullptr;
  std::unique_ptr<RawRedis> raw_;
};

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_REDIS_TEST_RAW_H_
