// A test suite on one shared redis-server, with the raw client of
// raw_redis.h.
#ifndef REDBLOOM_TESTS_REDIS_TEST_RAW_H_
#define REDBLOOM_TESTS_REDIS_TEST_RAW_H_

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
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

  static inline RedisServer* server_ = nullptr;
  std::unique_ptr<RawRedis> raw_;
};

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_REDIS_TEST_RAW_H_
