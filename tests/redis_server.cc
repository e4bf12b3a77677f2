#include "redis_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "test_util.h"

namespace redbloom::testing {
namespace {

// The reaper: a process per test binary that kills the servers the binary
// started if the binary dies without stopping them (an abort, a crash, a
// timeout's SIGKILL). PR_SET_PDEATHSIG cannot do it: it fires when the
// forking *thread* ends, and tests start servers from helper threads.
//
// The binary keeps one end of a socket pair and sends each server's pid as
// it starts it and the negated pid before it stops it; the reaper keeps the
// other end and the set of live pids. When the binary's end closes, however
// the binary ended, the reaper reads end-of-file and SIGKILLs what is left.
// A pid is dropped before its server is reaped, so a recycled pid is never
// killed. The reaper is forked from a process that may have threads, so it
// only uses read, kill and _exit and a fixed array, never malloc.
class Reaper {
 public:
  void Started(pid_t pid) { Send(pid); }
  void Stopping(pid_t pid) { Send(-pid); }
  pid_t pid() {
    std::lock_guard lock(mu_);
    return owner_ == ::getpid() ? pid_ : -1;
  }

 private:
  static constexpr int kMaxPids = 4096;

  void Send(int32_t record) {
    std::lock_guard lock(mu_);
    if (owner_ != ::getpid()) Fork();
    if (fd_ < 0) return;  // no reaper: the servers are stopped as before
    // MSG_NOSIGNAL: a reaper that died must not take the test with it.
    (void)::send(fd_, &record, sizeof record, MSG_NOSIGNAL);
  }

  // (Re)creates the reaper in this process: a forked test process starts its
  // own, and closes its copy of its parent's end.
  void Fork() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    pid_ = -1;
    owner_ = ::getpid();
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return;
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return;
    }
    if (pid == 0) Run(fds[1]);
    ::close(fds[1]);
    fd_ = fds[0];
    pid_ = pid;
  }

  [[noreturn]] static void Run(int fd) {
    // Its own session, so that a signal to the test's process group (a
    // terminal's ^C) does not end the reaper before it reaps. Standard
    // streams to /dev/null, every other descriptor closed: ctest waits for
    // every holder of a test's output, and inherited sockets must not stay
    // open here.
    ::setsid();
    // Only the binary's end closing ends it: a signal sent by name reaches
    // the reaper too (`pkill -f` of the binary's name or `killall`: its
    // command line is the binary's), and ended it before it could kill
    // anything. (setsid() above keeps a terminal's ^C and hangup away.)
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::sigaction(sig, &ignore, nullptr);
    ::dup2(fd, 0);
    const int null_fd = ::open("/dev/null", O_RDWR);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    ::close_range(3, ~0U, 0);
    static pid_t live[kMaxPids];
    int count = 0;
    int32_t record = 0;
    size_t have = 0;
    while (true) {
      const ssize_t n = ::read(0, reinterpret_cast<char*>(&record) + have, sizeof record - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      have += static_cast<size_t>(n);
      if (have < sizeof record) continue;
      have = 0;
      if (record > 0 && count < kMaxPids) {
        live[count++] = record;
      } else if (record < 0) {
        for (int i = 0; i < count; ++i) {
          if (live[i] == -record) {
            live[i] = live[--count];
            break;
          }
        }
      }
    }
    for (int i = 0; i < count; ++i) ::kill(live[i], SIGKILL);
    ::_exit(0);
  }

  std::mutex mu_;
  pid_t owner_ = -1;
  pid_t pid_ = -1;
  int fd_ = -1;
};

Reaper& TheReaper() {
  static Reaper* reaper = new Reaper;  // never destroyed: servers may outlive statics
  return *reaper;
}

}  // namespace

void WatchServerProcess(pid_t pid) { TheReaper().Started(pid); }
void ForgetServerProcess(pid_t pid) { TheReaper().Stopping(pid); }
pid_t ReaperPid() { return TheReaper().pid(); }

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
  WatchServerProcess(pid_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      ForgetServerProcess(pid_);
      pid_ = -1;
      throw std::runtime_error(
          "redis-server on port " + std::to_string(port_) +
          " exited at start; is it installed? Its log: " + FileTail(dir_ + "/redis.log"));
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
  ForgetServerProcess(pid_);  // before the wait: after it the pid may be reused
  ::kill(pid_, hard ? SIGKILL : SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool RedisServer::WaitForMasterLink() const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Cli({"INFO", "replication"}).find("master_link_status:up") == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::string RedisServer::Cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/env", "redis-cli", "-p", std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv).out;
}

}  // namespace redbloom::testing
