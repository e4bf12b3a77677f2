// The one raw Redis client of the tests and benchmarks: commands sent as
// given, replies returned as Redis sent them, over the library's own
// internal::Connection (so TLS, AUTH and reply parsing are the code under
// test, not a second copy). Binary-safe: JDK-serialized keys hold NUL bytes,
// which redis-cli arguments cannot. For checking what redbloom stored
// without going through redbloom, and for a benchmark's baselines and INFO.
//
// Failures throw std::runtime_error: a test reports it, a benchmark dies.
#ifndef REDBLOOM_TESTS_RAW_REDIS_H_
#define REDBLOOM_TESTS_RAW_REDIS_H_

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "redbloom/store.h"
#include "redis/connection_source.h"
#include "redis/redis_client.h"
#include "redis/redis_url.h"

namespace redbloom::testing {

class RawRedis {
 public:
  using Reply = internal::ReplyPtr;

  // 127.0.0.1:port, with a password for the default user if given.
  explicit RawRedis(int port, const std::string& password = "") {
    internal::ServerParams p;
    p.host = "127.0.0.1";
    p.port = port;
    if (!password.empty()) p.password = password;
    p.display = "127.0.0.1:" + std::to_string(port);
    Connect(std::move(p));
  }
  // The first host of a redis:// or rediss:// URL, with its credentials and
  // TLS options.
  explicit RawRedis(const std::string& url) {
    auto u = internal::ParseRedisUrl(url, StoreOptions());
    if (!u.ok()) throw std::runtime_error(u.status().ToString());
    Connect(internal::ServerParamsFor(*u, u->hosts.front()));
  }

  // Any reply, error replies included.
  Reply Run(const std::vector<std::string>& args) {
    internal::CommandBuffer cmd;
    cmd.Begin(args.size());
    for (const auto& a : args) cmd.Arg(std::string_view(a));
    Append(cmd);
    return Read();
  }
  // A reply that is not an error.
  Reply Must(const std::vector<std::string>& args) { return Ok(Run(args), args[0]); }
  long long Int(const std::vector<std::string>& args) {
    Reply r = Run(args);
    if (r->type != REDIS_REPLY_INTEGER) {
      throw std::runtime_error(args[0] + " answered " + Text(r) + ", not an integer");
    }
    return r->integer;
  }
  // A string reply, "(nil)" for nil, the digits of an integer, an error's text.
  std::string Str(const std::vector<std::string>& args) {
    Reply r = Run(args);
    if (r->type == REDIS_REPLY_NIL) return "(nil)";
    if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
    return Text(r);
  }

  // Pipelining: queue commands, then read their replies in order.
  void Append(const internal::CommandBuffer& cmd) { Check(conn_->Append(cmd)); }
  Reply Read() {
    auto r = conn_->Read();
    Check(r.status());
    return std::move(r).value();
  }
  Reply ReadOk() { return Ok(Read(), "reply"); }

  // used_cpu_user + used_cpu_sys of the server, in seconds.
  double ServerCpu() {
    const std::string info = Text(Must({"INFO", "CPU"}));
    auto field = [&](const char* name) {
      const size_t at = info.find(name);
      if (at == std::string::npos) throw std::runtime_error(std::string("INFO CPU lacks ") + name);
      return std::strtod(info.c_str() + at + std::strlen(name) + 1, nullptr);
    };
    return field("used_cpu_user") + field("used_cpu_sys");
  }

 private:
  void Connect(internal::ServerParams p) {
    // The test's own reads (a 46 MiB GET) may take longer than the store's
    // 5 s under ThreadSanitizer; what they check is the data, not the time.
    p.command_timeout = std::chrono::seconds(60);
    params_ = std::make_unique<internal::ServerParams>(std::move(p));
    auto c = internal::Connection::Open(*params_);
    Check(c.status());
    conn_ = std::move(c).value();
  }
  static void Check(const Status& s) {
    if (!s.ok()) throw std::runtime_error("redis: " + s.ToString());
  }
  static std::string Text(const Reply& r) {
    return r->str != nullptr ? std::string(r->str, r->len) : std::string();
  }
  static Reply Ok(Reply r, const std::string& what) {
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(what + ": " + Text(r));
    return r;
  }

  std::unique_ptr<internal::ServerParams> params_;  // the connection points at it
  std::unique_ptr<internal::Connection> conn_;
};

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_RAW_REDIS_H_
