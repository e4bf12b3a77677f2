// Starts a real Redis Sentinel (redis-server sentinel.conf --sentinel) on a
// free loopback port for a test, watching one master, and stops it.
#ifndef REDBLOOM_TESTS_REDIS_SENTINEL_H_
#define REDBLOOM_TESTS_REDIS_SENTINEL_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace redbloom::testing {

class RedisSentinel {
 public:
  // Watches the master at 127.0.0.1:master_port as `name`, with quorum 1 and
  // short timeouts (down after 1 s, failover timeout 3 s), so that a test's
  // failover takes seconds. `extra_config` lines are appended to
  // sentinel.conf (e.g. "requirepass s3cret").
  RedisSentinel(int master_port, std::string name, std::vector<std::string> extra_config = {});
  RedisSentinel(const RedisSentinel&) = delete;
  RedisSentinel& operator=(const RedisSentinel&) = delete;
  ~RedisSentinel();

  // Writes sentinel.conf, starts the sentinel and waits until it answers
  // PING. Throws std::runtime_error if it cannot.
  void Start();
  void Stop();
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }
  // Runs redis-cli against the sentinel (with `auth` if it needs a
  // password) and returns its stdout.
  std::string Cli(const std::vector<std::string>& args, const std::string& auth = "") const;
  // The port of the master it names now (SENTINEL get-master-addr-by-name).
  int MasterPort(const std::string& auth = "") const;
  // Waits up to 10 s until the sentinel lists the replica on `replica_port`
  // as up (SENTINEL FAILOVER refuses to run before). Throws if it does not.
  void WaitForReplica(int replica_port, const std::string& auth = "") const;

 private:
  int master_port_;
  std::string name_;
  std::vector<std::string> extra_config_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string dir_;
};

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_REDIS_SENTINEL_H_
