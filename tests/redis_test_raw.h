// Raw access to a test's redis-server, binary-safe (JDK-serialized keys hold
// NUL bytes, which redis-cli arguments cannot), for checking what redbloom
// stored without going through redbloom.
#ifndef REDBLOOM_TESTS_REDIS_TEST_RAW_H_
#define REDBLOOM_TESTS_REDIS_TEST_RAW_H_

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "redis_server.h"

namespace redbloom::testing {

class RawRedis {
 public:
  explicit RawRedis(int port, const std::string& password = "") {
    ctx_.reset(redisConnect("127.0.0.1", port));
    if (ctx_ == nullptr || ctx_->err != 0) throw std::runtime_error("cannot connect to redis");
    if (!password.empty()) Run({"AUTH", password});
  }

  struct Freer {
    void operator()(redisReply* r) const { freeReplyObject(r); }
    void operator()(redisContext* c) const { redisFree(c); }
  };
  using Reply = std::unique_ptr<redisReply, Freer>;

  Reply Run(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(ctx_.get(), static_cast<int>(argv.size()), argv.data(), lens.data()));
    if (r == nullptr) throw std::runtime_error(std::string("redis: ") + ctx_->errstr);
    return Reply(r);
  }
  long long Int(const std::vector<std::string>& args) {
    Reply r = Run(args);
    EXPECT_EQ(r->type, REDIS_REPLY_INTEGER) << args[0] << ": " << (r->str ? r->str : "");
    return r->integer;
  }
  std::string Str(const std::vector<std::string>& args) {
    Reply r = Run(args);
    if (r->type == REDIS_REPLY_NIL) return "(nil)";
    if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
    return std::string(r->str, r->len);
  }

 private:
  std::unique_ptr<redisContext, Freer> ctx_;
};

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
