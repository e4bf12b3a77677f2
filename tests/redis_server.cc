#include "redis_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "test_util.h"

namespace redbloom::testing {

RedisServer::RedisServer(std::vector<std::string> extra_args) : extra_args_(std::move(extra_args)) {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/redbloom-redis-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  port_ = FreePort();
}

RedisServer::~RedisServer() {
  Stop(/*hard=*/true);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string RedisServer::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

void RedisServer::Start() {
  if (pid_ > 0) return;
  const char* env = std::getenv("REDIS_SERVER");
  std::string binary = env != nullptr ? env : "redis-server";
  std::vector<std::string> args = {binary,
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--daemonize",
                                   "no",
                                   "--loglevel",
                                   "warning",
                                   "--logfile",
                                   dir_ + "/redis.log"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Holds none of the test's output open: ctest waits for every holder of
    // a test's stdout, so a server left by a crashed test kept ctest waiting
    // until its timeout. (No PR_SET_PDEATHSIG: it fires when the forking
    // *thread* ends, and tests restart servers from helper threads.)
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      ::dup2(null_fd, 0);
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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited at start; is it installed? (see " + dir_ +
                               "/redis.log)");
    }
    // redis-cli PING answers "NOAUTH" under requirepass, which still means "up".
    const std::string out =
        RunCommand({"/usr/bin/env", "redis-cli", "-p", std::to_string(port_), "PING"}).out;
    if (out.find("PONG") != std::string::npos || out.find("NOAUTH") != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Stop(true);
  throw std::runtime_error("redis-server did not answer PING within 10 s");
}

void RedisServer::Stop(bool hard) {
  if (pid_ <= 0) return;
  ::kill(pid_, hard ? SIGKILL : SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string RedisServer::Cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/env", "redis-cli", "-p", std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv).out;
}

}  // namespace redbloom::testing
