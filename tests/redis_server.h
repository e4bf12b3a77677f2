// Starts a real redis-server on a free loopback port for a test, and stops it.
#ifndef REDBLOOM_TESTS_REDIS_SERVER_H_
#define REDBLOOM_TESTS_REDIS_SERVER_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace redbloom::testing {

// A process per test binary kills the server processes registered here
// (redis-server, sentinels, redbloomd) if the binary dies without stopping
// them (see redis_server.cc). Register a server as soon as it is forked;
// forget it before killing and reaping it.
void WatchServerProcess(pid_t pid);
void ForgetServerProcess(pid_t pid);
// That process's pid, once this process has registered a server (else -1).
pid_t ReaperPid();

class RedisServer {
 public:
  // `extra_args` are passed to redis-server (e.g. {"--requirepass", "s3cret"}).
  explicit RedisServer(std::vector<std::string> extra_args = {});
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer();

  // Starts redis-server (from $REDIS_SERVER or PATH) and waits until it
  // answers PING. Throws std::runtime_error if it cannot.
  void Start();
  // Kills the server (SIGKILL when `hard`, else SHUTDOWN NOSAVE) and waits.
  void Stop(bool hard = false);
  void Restart() {
    Stop();
    Start();
  }
  bool running() const { return pid_ > 0; }
  // The server's process id, or -1 when it is not running. If the test
  // binary dies without stopping it, a reaper process kills it.
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  // "redis://127.0.0.1:PORT"
  std::string url() const;
  // The server's working directory (its RDB, logs, cluster config).
  const std::string& dir() const { return dir_; }
  // Runs redis-cli against this server and returns its stdout.
  std::string Cli(const std::vector<std::string>& args) const;
  // For a replica: waits up to 30 s (a loaded machine's first sync) until
  // its link to its master is up. False if it never was.
  bool WaitForMasterLink() const;

 private:
  std::vector<std::string> extra_args_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string dir_;
};

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_REDIS_SERVER_H_
