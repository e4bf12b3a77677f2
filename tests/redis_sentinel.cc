#include "redis_sentinel.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "redis_server.h"
#include "test_util.h"

namespace redbloom::testing {

RedisSentinel::RedisSentinel(int master_port, std::string name,
                             std::vector<std::string> extra_config)
    : master_port_(master_port), name_(std::move(name)), extra_config_(std::move(extra_config)) {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/redbloom-sentinel-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  port_ = FreePort();
}

RedisSentinel::~RedisSentinel() {
  Stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void RedisSentinel::Start() {
  if (pid_ > 0) return;
  const std::string conf = dir_ + "/sentinel.conf";
  {
    // Sentinel rewrites its config file, so it lives in the sentinel's
    // directory. down-after 1 s and failover-timeout 3 s are far below the
    // defaults (30 s, 3 min) so that tests take seconds.
    std::ofstream out(conf);
    out << "port " << port_ << "\nbind 127.0.0.1\ndaemonize no\ndir " << dir_ << "\nlogfile "
        << dir_ << "/sentinel.log\n"
        << "sentinel monitor " << name_ << " 127.0.0.1 " << master_port_ << " 1\n"
        << "sentinel down-after-milliseconds " << name_ << " 1000\n"
        << "sentinel failover-timeout " << name_ << " 3000\n";
    for (const auto& line : extra_config_) out << line << "\n";
  }
  const char* env = std::getenv("REDIS_SERVER");
  std::vector<std::string> args = {env != nullptr ? env : "redis-server", conf, "--sentinel"};
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Dies with the test, and does not hold the test's output open: a test
    // that crashes must not leave ctest waiting for EOF until its timeout.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      ::dup2(null_fd, 1);
      ::dup2(null_fd, 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  WatchServerProcess(pid_);  // PDEATHSIG misses a start from a helper thread
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      ForgetServerProcess(pid_);
      pid_ = -1;
      throw std::runtime_error("redis sentinel on port " + std::to_string(port_) +
                               " exited at start; its log: " + FileTail(dir_ + "/sentinel.log"));
    }
    const std::string out = Cli({"PING"});
    if (out.find("PONG") != std::string::npos || out.find("NOAUTH") != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Stop();
  throw std::runtime_error("redis sentinel did not answer PING within 10 s");
}

void RedisSentinel::Stop() {
  if (pid_ <= 0) return;
  ForgetServerProcess(pid_);  // before the wait: after it the pid may be reused
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string RedisSentinel::Cli(const std::vector<std::string>& args,
                               const std::string& auth) const {
  std::vector<std::string> argv = {"/usr/bin/env", "redis-cli", "-p", std::to_string(port_)};
  if (!auth.empty()) argv.insert(argv.end(), {"--no-auth-warning", "-a", auth});
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv).out;
}

int RedisSentinel::MasterPort(const std::string& auth) const {
  const std::vector<std::string> lines =
      Lines(Cli({"SENTINEL", "get-master-addr-by-name", name_}, auth));
  if (lines.size() != 2) return 0;
  return std::atoi(lines[1].c_str());
}

void RedisSentinel::WaitForReplica(int replica_port, const std::string& auth) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    // redis-cli prints the replicas' fields one per line: "name", value, ...
    const std::vector<std::string> lines = Lines(Cli({"SENTINEL", "replicas", name_}, auth));
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      if (lines[i] == "port" && lines[i + 1] == std::to_string(replica_port)) {
        for (size_t j = i; j + 1 < lines.size() && lines[j] != "name"; ++j) {
          if (lines[j] == "flags" && lines[j + 1] == "slave") return;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("sentinel did not list replica " + std::to_string(replica_port));
}

}  // namespace redbloom::testing
