#include "test_util.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "util/errno_text.h"

extern char** environ;

namespace redbloom::testing {

TempDir::TempDir() {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/redbloom-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input,
                         const std::vector<std::string>& env) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  for (const auto& e : env) envs.push_back(e);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  // A child that exits before reading all its input must not kill the test
  // with SIGPIPE; the write then fails with EPIPE, which is handled below.
  ::signal(SIGPIPE, SIG_IGN);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  CommandResult result;
  size_t written = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) {
    ::close(in_fd);
    in_fd = -1;
  } else {
    ::fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        ssize_t w = ::write(in_fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) written = input.size();
        if (written >= input.size()) {
          ::close(in_fd);
          in_fd = -1;
        }
      } else {
        ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
        if (r > 0) {
          (fds[i].fd == out_fd ? result.out : result.err).append(buf, static_cast<size_t>(r));
        } else if (r == 0 || errno != EINTR) {
          ::close(fds[i].fd);
          (fds[i].fd == out_fd ? out_fd : err_fd) = -1;
        }
      }
    }
  }
  if (in_fd >= 0) ::close(in_fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string FileTail(const std::string& path, size_t max) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) return "(empty)";
  return text.size() > max ? "..." + text.substr(text.size() - max) : text;
}

namespace {

// The kernel's range for ports it picks itself: an outgoing connection's
// source port, or a bind to port 0.
std::pair<int, int> EphemeralRange() {
  int low = 32768, high = 60999;  // Linux's default
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int l = 0, h = 0;
  if (in >> l >> h && l > 0 && l <= h) {
    low = l;
    high = h;
  }
  return {low, high};
}

bool CanBind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// Two test binaries under `ctest -j2` draw from the same range, and a port
// drawn but not yet bound, or one a test keeps while it restarts a server
// on it, looked free to the other. The claim is a write lock on byte `port`
// of one file per user, an open file description lock (F_OFD_SETLK): one
// descriptor per process however many ports it claims, held until the
// process exits (the kernel drops the locks then, however it ends).
bool ClaimPort(int port) {
  static const int fd = [] {
    const std::string path = PortClaimsPath();
    const int f = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0) throw std::runtime_error("cannot open " + path + ": " + internal::ErrnoText(errno));
    return f;
  }();
  return LockByte(fd, port);
}

}  // namespace

std::string PortClaimsPath() {
  return std::filesystem::temp_directory_path().string() + "/redbloom-test-ports-" +
         std::to_string(::getuid());
}

bool LockByte(int fd, int offset) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = offset;
  lock.l_len = 1;
  if (::fcntl(fd, F_OFD_SETLK, &lock) == 0) return true;
  if (errno == EAGAIN || errno == EACCES) return false;
  throw std::runtime_error("cannot lock a byte: " + internal::ErrnoText(errno));
}

int FreePort() {
  // Not a port the kernel would pick (bind to 0): between this call and the
  // server's bind, any outgoing connection (redis-cli's PING, a cluster's bus,
  // another test's client) may be given that port as its source, and the
  // server then fails with "Address already in use". CI lost a cluster that
  // way. A random port below the ephemeral range is never handed out by the
  // kernel; this process never returns one twice, and one something listens
  // on (or that lingers in TIME_WAIT) is skipped, as is one another test
  // process has claimed (ClaimPort).
  static std::mutex mu;
  static std::set<int> given;
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  const auto [eph_low, eph_high] = EphemeralRange();
  // As scripts/lib/ports.sh's free_port. An unusual range leaves fewer
  // than 1000 below it: the ports above it, then any unprivileged port.
  int low = 10000, high = eph_low - 1;
  if (high - low < 1000) std::tie(low, high) = std::pair(eph_high + 1, 65535);
  if (high - low < 1000) std::tie(low, high) = std::pair(1024, 65535);
  std::lock_guard lock(mu);
  std::uniform_int_distribution<int> pick(low, high);
  for (int attempt = 0; attempt < 10000; ++attempt) {
    const int port = pick(rng);
    if (given.count(port) != 0 || !CanBind(port) || !ClaimPort(port)) continue;
    given.insert(port);
    return port;
  }
  throw std::runtime_error("no free TCP port on 127.0.0.1 in " + std::to_string(low) + "-" +
                           std::to_string(high));
}

int ExitCodeOfChild(const std::function<int()>& child) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork: " + internal::ErrnoText(errno));
  if (pid == 0) ::_exit(child());
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid: " + internal::ErrnoText(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool TakeEveryMapping() {
  const long page = ::sysconf(_SC_PAGESIZE);
  constexpr size_t kPages = 2 * 1024 * 1024;  // address space only
  auto* region = static_cast<char*>(::mmap(nullptr, kPages * page, PROT_NONE,
                                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (region == MAP_FAILED) return false;
  bool full = false;
  for (size_t i = 1; i < kPages && !full; i += 2) {
    full = ::mprotect(region + i * page, page, PROT_READ) != 0 && errno == ENOMEM;
  }
  // The split that failed may have left a mapping or two: take them.
  const int fd = ::memfd_create("fill", 0);
  if (!full || fd < 0 || ::ftruncate(fd, page) != 0) return false;
  for (int i = 0; i < 64 && ::mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0) != MAP_FAILED;) {
    ++i;
  }
  return true;
}

std::vector<Status> AddFromThreads(BloomFilter& filter, std::span<const std::string_view> items,
                                   int threads, size_t per_call) {
  std::vector<Status> results(threads);
  std::vector<std::thread> running;
  const size_t share = items.size() / threads;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      const std::span<const std::string_view> mine = items.subspan(t * share, share);
      for (size_t i = 0; i < mine.size() && results[t].ok(); i += per_call) {
        results[t] = filter.AddMany(mine.subspan(i, std::min(per_call, mine.size() - i)));
      }
    });
  }
  for (auto& th : running) th.join();
  return results;
}

}  // namespace redbloom::testing
