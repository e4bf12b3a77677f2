#include "redis/transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/errno_text.h"
#include "util/fd_above_stdio.h"

namespace redbloom::internal {
namespace {

// Keepalive notices a peer that vanished without a FIN (a dead host): the
// first probe after 15 s idle, then every 5 s, given up after 3, as hiredis'
// redisEnableKeepAlive did.
constexpr int kKeepAliveIdleS = 15;
constexpr int kKeepAliveIntervalS = 5;
constexpr int kKeepAliveProbes = 3;

void SetSocketOptions(int fd) {
  const int on = 1;
  // Commands are written whole; Nagle would hold a small one back for the
  // previous one's ACK (40 ms on Linux).
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepAliveIdleS, sizeof(kKeepAliveIdleS));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepAliveIntervalS,
                     sizeof(kKeepAliveIntervalS));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepAliveProbes, sizeof(kKeepAliveProbes));
}

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// What a failed connect() to a Unix socket most likely means.
const char* UnixConnectHint(int err) {
  switch (err) {
    case ENOENT:
      return "no socket at that path: is unixsocket set in redis.conf?";
    case EACCES:
      return "see unixsocketperm in redis.conf, and the directories' permissions";
    case ECONNREFUSED:
      return "nothing listens there: a server that stopped leaves its socket file";
    default:
      return "";
  }
}

// Waits for one address's non-blocking connect() to finish.
bool FinishConnect(int fd, Deadline deadline, IoFailure* failure) {
  for (;;) {
    pollfd p{fd, POLLOUT, 0};
    const int n = ::poll(&p, 1, MillisLeft(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *failure = {IoFailure::Kind::kConnect, ErrnoText(errno), ""};
      return false;
    }
    if (n == 0) {
      *failure = {IoFailure::Kind::kConnectTimeout, "", ""};
      return false;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      *failure = {IoFailure::Kind::kConnect, ErrnoText(err), ""};
      return false;
    }
    return true;
  }
}

class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(Socket socket) : socket_(std::move(socket)) {
    const int fd = socket_.get();
    (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  }

  ssize_t Read(char* buf, size_t n, IoFailure* failure) override {
    for (;;) {
      const ssize_t got = ::recv(socket_.get(), buf, n, 0);
      if (got > 0) return got;
      if (got == 0) {
        *failure = {IoFailure::Kind::kClosed, "", ""};
        return -1;
      }
      if (errno == EINTR) continue;
      return Failed(errno, failure);
    }
  }

  ssize_t Write(const char* data, size_t n, IoFailure* failure) override {
    for (;;) {
      // MSG_NOSIGNAL: a peer that closed the connection is an error, not a
      // SIGPIPE that kills a process which did not ignore it.
      const ssize_t put = ::send(socket_.get(), data, n, MSG_NOSIGNAL);
      if (put >= 0) return put;
      if (errno == EINTR) continue;
      return Failed(errno, failure);
    }
  }

  bool InputReady() override {
    pollfd p{socket_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  // An idle connection has nothing to read: readable means EOF, a reset, or
  // data nobody asked for (e.g. a server that restarted and sent an error).
  bool LooksClosed() override {
    pollfd p{socket_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) != 0;
  }

  void SetTimeout(std::chrono::milliseconds timeout) override {
    // A zero SO_RCVTIMEO would mean "wait forever".
    const timeval tv = ToTimeval(std::max(timeout, std::chrono::milliseconds(1)));
    (void)::setsockopt(socket_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)::setsockopt(socket_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }

  int fd() const override { return socket_.get(); }

 private:
  // An expired SO_RCVTIMEO/SO_SNDTIMEO shows as EAGAIN.
  static ssize_t Failed(int err, IoFailure* failure) {
    if (err == EAGAIN || err == EWOULDBLOCK) {
      *failure = {IoFailure::Kind::kTimeout, "", ""};
    } else {
      *failure = {IoFailure::Kind::kIo, ErrnoText(err), ""};
    }
    return -1;
  }

  Socket socket_;
};

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.Release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

int MillisLeft(Deadline deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= left.zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
}

Socket ConnectTcp(const std::string& host, int port, Deadline deadline, IoFailure* failure) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    *failure = {IoFailure::Kind::kConnect, ::gai_strerror(rc), ""};
    return Socket();
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  *failure = {IoFailure::Kind::kConnect, "the name has no address", ""};
  // Every address in turn ("localhost" may be ::1 first, where a server bound
  // to 127.0.0.1 refuses), each within what is left of the deadline.
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    Socket s(AboveStdio(
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol)));
    if (s.get() < 0) {
      *failure = {IoFailure::Kind::kConnect, ErrnoText(errno), ""};
      continue;
    }
    if (::connect(s.get(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        *failure = {IoFailure::Kind::kConnect, ErrnoText(errno), ""};
        continue;
      }
      if (!FinishConnect(s.get(), deadline, failure)) {
        if (failure->kind == IoFailure::Kind::kConnectTimeout) return Socket();
        continue;
      }
    }
    SetSocketOptions(s.get());
    *failure = IoFailure();
    return s;
  }
  return Socket();
}

Socket ConnectUnix(const std::string& path, Deadline deadline, IoFailure* failure) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // The URL parser refuses longer paths; a caller in code may not have.
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    *failure = {
        IoFailure::Kind::kConnect,
        "a Unix socket path must hold 1 to " + std::to_string(sizeof(addr.sun_path) - 1) + " bytes",
        ""};
    return Socket();
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  Socket s(AboveStdio(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
  if (s.get() < 0) {
    *failure = {IoFailure::Kind::kConnect, ErrnoText(errno), ""};
    return Socket();
  }
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    if (err == EAGAIN) {  // a Unix socket's full backlog: no EINPROGRESS to wait on
      *failure = {IoFailure::Kind::kConnect, ErrnoText(err),
                  "the server's listen backlog is full: it is overloaded or stalled"};
      return Socket();
    }
    if (err != EINPROGRESS) {
      *failure = {IoFailure::Kind::kConnect, ErrnoText(err), UnixConnectHint(err)};
      return Socket();
    }
    if (!FinishConnect(s.get(), deadline, failure)) return Socket();
  }
  *failure = IoFailure();
  return s;
}

std::unique_ptr<Transport> NewPlainTransport(Socket socket) {
  return std::make_unique<PlainTransport>(std::move(socket));
}

}  // namespace redbloom::internal
