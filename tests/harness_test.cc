// The test harness's own promise: every process a test starts is stopped,
// even when the test binary dies without stopping it (an abort, a crash, a
// timeout's SIGKILL). Redis servers started from a helper thread are the
// hard case: PR_SET_PDEATHSIG fires when the forking thread ends.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.h"
#include "test_util.h"
#include "util/errno_text.h"

namespace redbloom::testing {
namespace {

// Whether `pid` is a running process (a zombie has ended: it only waits for
// its parent, which for an orphan is init, to reap it).
bool Running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

struct Started {
  pid_t server = -1;
  pid_t reaper = -1;
  char dir[256] = {};
};

// Forks a test binary that starts a server from a helper thread and is then
// killed without stopping it: no destructor, no atexit handler runs. `first`
// is called with what the binary started before it is killed. Whether the
// server outlived the binary by 10 s (if so, it is stopped here, by its id).
bool ServerOutlivesItsBinary(const std::function<void(const Started&)>& first) {
  int report[2], go[2];
  if (::pipe(report) != 0 || ::pipe(go) != 0) throw std::runtime_error("pipe");
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork");
  if (child == 0) {
    ::close(report[0]);
    ::close(go[1]);
    Started started;
    std::thread([&] {
      auto* server = new RedisServer();
      server->Start();
      started.server = server->pid();
      std::strncpy(started.dir, server->dir().c_str(), sizeof started.dir - 1);
    }).join();
    started.reaper = ReaperPid();
    (void)::write(report[1], &started, sizeof started);
    char byte;
    (void)::read(go[0], &byte, 1);
    ::raise(SIGKILL);
  }
  ::close(report[1]);
  ::close(go[0]);
  Started started;
  const ssize_t n = ::read(report[0], &started, sizeof started);
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof started)) first(started);
  ::close(go[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(n, static_cast<ssize_t>(sizeof started)) << "the child did not start its server";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  if (started.server <= 0) return false;

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Running(started.server) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool left_running = Running(started.server);
  if (left_running) ::kill(started.server, SIGKILL);
  std::error_code ec;
  std::filesystem::remove_all(started.dir, ec);
  return left_running;
}

TEST(HarnessTest, ServersOfABinaryThatDiesAreKilled) {
  EXPECT_FALSE(ServerOutlivesItsBinary([](const Started&) {}))
      << "a redis-server outlived the test process that started it";
}

// `pkill -f tests/kinds_test` or `killall` reach the reaper as well as the
// binary (its command line is the binary's): it ended, and the servers it
// was to kill stayed up (seven redis-servers, once). Every signal a name
// can send is tried.
TEST(HarnessTest, SignalsToTheWholeBinaryLeaveNoServer) {
  EXPECT_FALSE(ServerOutlivesItsBinary([](const Started& started) {
    ASSERT_GT(started.reaper, 0);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::kill(started.reaper, sig);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  })) << "a redis-server outlived the test process that started it";
}

// A port the kernel may hand to an outgoing connection can be taken between
// FreePort and the server's bind: CI once lost a cluster node to "Address
// already in use" that way.
TEST(HarnessTest, FreePortsAreOutsideTheKernelsRangeAndNeverRepeat) {
  int low = 0, high = 0;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  ASSERT_TRUE(range >> low >> high);
  std::set<int> seen;
  for (int i = 0; i < 500; ++i) {
    const int port = FreePort();
    ASSERT_TRUE(port < low || port > high)
        << port << " is in the kernel's range " << low << "-" << high;
    ASSERT_GT(port, 1024);
    ASSERT_LE(port, 65535);
    ASSERT_TRUE(seen.insert(port).second) << port << " was given twice";
  }
}

// Ports are drawn from one range by every test binary that ctest runs at
// once. A port this process was given is claimed against any other, and a
// port another has claimed is never given here, even while nothing listens
// on it. The claims are open file description locks, which a second
// description conflicts with even in one process: a fresh open of the
// claims file here stands for another test process.
TEST(HarnessTest, TestProcessesNeverShareAPort) {
  const int other = ::open(PortClaimsPath().c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(other, 0) << PortClaimsPath() << ": " << internal::ErrnoText(errno);
  const int given = FreePort();
  EXPECT_FALSE(LockByte(other, given)) << given << " was given but not claimed";

  // "Another process" claims every port but those within 1000 of `given`:
  // no port drawn here may be one it holds. (Not "every port drawn is
  // within 1000": a test binary running beside this one may hold a port
  // when `other` tries it and let go of it before the draw; CI drew one so.)
  const int low = given - 1000, high = given + 1000;
  std::vector<bool> held(65536, false);
  int holds = 0;
  for (int port = 1; port <= 65535; ++port) {
    if (port < low || port > high) holds += (held[port] = LockByte(other, port)) ? 1 : 0;
  }
  ASSERT_GT(holds, 60000) << "nearly every port outside the window is held";
  for (int i = 0; i < 20; ++i) {
    const int port = FreePort();
    EXPECT_FALSE(held[port]) << port << " is claimed by another process";
  }
  ::close(other);  // drops its claims
}

// What CI lost a cluster node to: a port already taken. The error names the
// port and quotes the server's log, which goes with its directory.
TEST(HarnessTest, AServerThatCannotBindQuotesItsLog) {
  RedisServer first;
  first.Start();
  RedisServer second({"--port", std::to_string(first.port())});  // the later --port wins
  try {
    second.Start();
    FAIL() << "a second redis-server bound port " << first.port();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("exited at start"), std::string::npos) << what;
    EXPECT_NE(what.find("Address already in use"), std::string::npos) << what;
  }
  EXPECT_NE(first.Cli({"PING"}).find("PONG"), std::string::npos);
}

}  // namespace
}  // namespace redbloom::testing
