#include "connections.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "header_text.h"
#include "request_head.h"
#include "util/errno_text.h"
#include "util/start_thread.h"

namespace redbloom::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Largest header block read ahead of a worker. httplib allows an 8 KiB
// request line and 8 KiB per header line; 64 KiB leaves room for a few dozen
// long headers and bounds what 512 slow connections can pin (32 MiB).
constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kReadChunk = 16 * 1024;
// Reads of one connection per wake-up: a large body arriving fast does not
// hold up other connections' heads (1 MiB at a time).
constexpr int kReadsPerWake = 64;
// Workers reserved for each lane (RequestLane). Readiness has its own: a
// /readyz waits on the store (up to its command timeout), and two of them
// held up /healthz and /metrics for as long when they shared two workers.
constexpr int kLaneWorkers = 2;
constexpr int kReservedWorkers = 2 * kLaneWorkers;
// After accept() fails for want of descriptors, how long to stop accepting:
// the listening socket stays readable, so retrying at once would spin.
constexpr milliseconds kAcceptPause{100};
// Descriptors kept free for the store beside the connections: file: opens
// a file for each filter it opens, reads or makes, Redis pools connect on
// demand. A connection accepted on a descriptor past the limit less this
// is refused 503 at accept; taking the last ones, it left every request
// it carried failing "Too many open files" on the store, while /readyz
// said ready (an audit: 7,014 of 8,000 requests at `ulimit -n 64`).
// An eighth of the limit, 64 to 1024, and never more than half of it.
int DescriptorHeadroom(int limit) { return std::min(std::clamp(limit / 8, 64, 1024), limit / 2); }

// The process's descriptor limit (the soft RLIMIT_NOFILE), or nullopt when
// it cannot be read or is past what a descriptor number reaches.
std::optional<int> DescriptorLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      limit.rlim_cur > static_cast<rlim_t>(INT_MAX)) {
    return std::nullopt;
  }
  return static_cast<int>(limit.rlim_cur);
}

// The first descriptor number a connection is refused on (see
// DescriptorHeadroom); INT_MAX without a limit.
int RefusedFrom() {
  const std::optional<int> limit = DescriptorLimit();
  return limit ? *limit - DescriptorHeadroom(*limit) : INT_MAX;
}

// How long a connection the server ends may still be read from (Loop::
// Linger): a client told early that its request is refused (413 before its
// body was read, 431) reads the answer, then closes, well within it.
constexpr milliseconds kLingerTime{5000};
// How long a shutdown keeps an idle keep-alive connection open at most: a
// load balancer polling /readyz on it still sees 503 and drains, but a
// keep_alive_timeout_s of up to an hour no longer holds the exit (the
// packaged unit kills redbloomd after 30 s, before it syncs its filters).
constexpr milliseconds kShutdownIdleGrace{5000};

// How a read of this thread's request timed out, for RequestReadTimeout's
// message. Plain values, not a thread_local string (see
// src/thread_scratch.h: glibc ends the process when it cannot record a
// thread_local object's destructor).
struct ReadTimeout {
  bool timed_out = false;
  bool body_deadline = false;  // BodyTimeoutMessage's `whole`
  const ConnectionOptions* options = nullptr;
};
thread_local ReadTimeout t_read_timeout;

std::string SecondsText(milliseconds d) {
  char buf[32];
  if (d.count() % 1000 == 0) {
    std::snprintf(buf, sizeof(buf), "%lld s", static_cast<long long>(d.count() / 1000));
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g s", static_cast<double>(d.count()) / 1000);
  }
  return buf;
}

// Why a body stopped arriving: its whole deadline passed, or one read's.
std::string BodyTimeoutMessage(bool whole, const ConnectionOptions& o) {
  return whole ? "the request body did not arrive within body_timeout_s (" +
                     SecondsText(o.body_timeout) + ")"
               : "no byte of the request body arrived for read_timeout_s (" +
                     SecondsText(o.read_timeout) + ")";
}

int CeilMillis(Clock::duration d) {
  if (d <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<milliseconds>(d).count();
  return static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

// A complete answer written by the connection layer itself, before httplib
// has a request: messages are fixed ASCII, so no JSON escaping is needed.
std::string ErrorResponse(int status, std::string_view phrase, std::string_view code,
                          std::string_view message) {
  std::string body = "{\"error\":\"";
  body.append(code).append("\",\"message\":\"").append(message).append("\"}");
  std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
  out.append(phrase).append("\r\nContent-Type: application/json\r\nContent-Length: ");
  out.append(std::to_string(body.size()));
  if (status == 429 || status == 503) out.append("\r\nRetry-After: 1");
  out.append("\r\nDate: ").append(HttpDate());
  out.append("\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n").append(body);
  return out;
}

// Best effort on a non-blocking socket: a few hundred bytes fit any fresh
// socket buffer, and a client that does not read them loses nothing it can
// use.
void SendAndClose(int fd, std::string_view bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  // FIN after the answer, so that the client reads it before the close.
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

// The answer to a connection this process had no memory to serve: made
// without allocating, sent (best effort) and the connection closed.
#define REDBLOOM_OOM_BODY                                                                      \
  "{\"error\":\"unavailable\",\"message\":\"redbloomd ran out of memory; retry on another or " \
  "later\"}"
constexpr std::string_view kOutOfMemoryAnswer =
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: application/json\r\n"
    "Retry-After: 1\r\n"
    "Cache-Control: no-store\r\n"
    "Connection: close\r\n"
    "Content-Length: 90\r\n"
    "\r\n" REDBLOOM_OOM_BODY;
static_assert(std::string_view(REDBLOOM_OOM_BODY).size() == 90, "Content-Length");
#undef REDBLOOM_OOM_BODY

// Numeric host of a socket address; an IPv4-mapped IPv6 address is given as
// IPv4, so that one client counts once on a dual-stack socket.
std::pair<std::string, int> AddressOf(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      ::inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], host, sizeof(host));
    } else {
      ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    }
    port = ntohs(a->sin6_port);
  }
  return {host, port};
}

struct Connection {
  int fd = -1;
  // The next connection a worker handed back (Loop::returned_): a list
  // through the connections themselves, so handing one back allocates
  // nothing and cannot fail when memory runs out.
  Connection* returned_next = nullptr;
  std::string peer;  // numeric address: the per-client key
  int peer_port = 0;
  std::string local;
  int local_port = 0;
  std::string buf;  // received, not yet consumed
  size_t pos = 0;   // buf[pos..] is unread
  // Header scan of the request that starts at `pos` (absolute indexes).
  size_t scan = 0;
  size_t line_start = 0;
  bool request_line = false;
  bool bare_lf = false;         // a line of the head ended in '\n' alone (HeadComplete)
  size_t head_end = 0;          // once the head is complete: where its body starts
  Clock::time_point head_read;  // when the head was complete
  // When the body must have arrived: body_timeout after the head did.
  Clock::time_point body_deadline;
  // Once the event thread has begun the body (see Loop::OnHead): where it
  // ends (0: no such body), and the bytes of it read here, which count
  // against body_buffer_bytes until the request is answered.
  size_t body_end = 0;
  size_t held = 0;
  bool idle = false;  // no byte of the next request yet (keep-alive wait)
  bool registered = false;
  bool in_worker = false;
  bool keep = false;       // the worker's verdict: may carry another request
  bool lingering = false;  // answered and shut for writing (Loop::Linger)
  int served = 0;
  Clock::time_point deadline;
};

// Writes a connection-level answer; the caller then lingers or closes.
void Answer(const Connection& c, const std::string& bytes) {
  // One small write on a socket with nothing else queued: it fits.
  [[maybe_unused]] const ssize_t n = ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

// The socket as httplib reads and writes it on a worker: bytes the event
// thread already read come first, and every wait is bounded by read_timeout
// and by the request's body deadline (or write_timeout).
// The first line of the request that starts at c.pos, without its line end
// (the head is complete once a request is dispatched).
std::string_view RequestLine(const Connection& c) {
  std::string_view line(c.buf);
  line = line.substr(c.pos, line.find('\n', c.pos) - c.pos);
  if (line.ends_with('\r')) line.remove_suffix(1);
  return line;
}

class ConnectionStream final : public httplib::Stream {
 public:
  // The body's deadline runs from the end of the headers (Loop::OnHead),
  // also while the request waited for a worker or the event thread read
  // part of its body.
  ConnectionStream(Connection& c, const ConnectionOptions& o)
      : c_(c), o_(o), deadline_(c.body_deadline) {}

  bool is_readable() const override {
    return c_.pos < c_.buf.size() || Wait(POLLIN, std::min(o_.read_timeout, Left()));
  }
  bool is_writable() const override { return Wait(POLLOUT, o_.write_timeout); }

  ssize_t read(char* ptr, size_t size) override {
    if (c_.pos == c_.buf.size()) {
      const ssize_t n = Fill();
      if (n <= 0) return n;
    }
    const size_t n = std::min(size, c_.buf.size() - c_.pos);
    std::memcpy(ptr, c_.buf.data() + c_.pos, n);
    c_.pos += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    while (true) {
      const ssize_t n = ::send(c_.fd, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !Wait(POLLOUT, o_.write_timeout)) {
        broken_ = true;
        return -1;
      }
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.peer;
    port = c_.peer_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.local;
    port = c_.local_port;
  }
  socket_t socket() const override { return c_.fd; }

  // A read or write failed: the connection cannot carry another request.
  bool broken() const { return broken_; }

 private:
  // Rounded up, so that a wait never ends before the deadline.
  milliseconds Left() const { return milliseconds(CeilMillis(deadline_ - Clock::now())); }

  bool Wait(short events, milliseconds timeout) const {
    const auto until = Clock::now() + timeout;
    while (true) {
      pollfd p{c_.fd, events, 0};
      const int r = ::poll(&p, 1, CeilMillis(until - Clock::now()));
      if (r > 0) return true;
      if (r == 0 || errno != EINTR) return false;
    }
  }

  // Reads more into the (consumed) buffer: > 0 bytes, 0 at the end of the
  // stream, -1 on an error or a timeout (then t_read_timeout says which).
  ssize_t Fill() {
    c_.buf.clear();
    c_.pos = 0;
    while (true) {
      const milliseconds left = Left();
      const bool body_deadline = left <= o_.read_timeout;
      if (!Wait(POLLIN, std::min(o_.read_timeout, left))) {
        broken_ = true;
        t_read_timeout = {.timed_out = true, .body_deadline = body_deadline, .options = &o_};
        return -1;
      }
      c_.buf.resize(kReadChunk);
      const ssize_t n = ::recv(c_.fd, c_.buf.data(), kReadChunk, 0);
      c_.buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
      if (n > 0) return n;
      if (n == 0) {
        broken_ = true;
        return 0;
      }
      if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        broken_ = true;
        return -1;
      }
    }
  }

  Connection& c_;
  const ConnectionOptions& o_;
  const Clock::time_point deadline_;
  bool broken_ = false;
};

class WorkQueue {
 public:
  void Push(Connection* c) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(c);
    }
    cv_.notify_one();
  }
  // The next connection, or null once closed and drained.
  Connection* Pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty() || closed_; });
    if (queue_.empty()) return nullptr;
    Connection* c = queue_.front();
    queue_.pop_front();
    return c;
  }
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Connection*> queue_;
  bool closed_ = false;
};

}  // namespace

std::optional<std::string> RequestReadTimeout() {
  const ReadTimeout& t = t_read_timeout;
  if (!t.timed_out) return std::nullopt;
  return BodyTimeoutMessage(t.body_deadline, *t.options);
}

// The event thread's state. Everything here but the queues and `returned_`
// is touched by the event thread only, so the bookkeeping takes no lock.
class ConnectionServer::Loop {
 public:
  explicit Loop(ConnectionServer& s) : s_(s), o_(s.options_) {}

  void Run();

 private:
  void Watch(Connection& c);
  void Unwatch(Connection& c);
  void SetDeadline(Connection& c, Clock::time_point t);
  void ClearDeadline(Connection& c);
  void Accept(int listen_fd);
  void Admit(int fd, const sockaddr_storage& peer);
  void OnReadable(Connection& c);
  bool HeadComplete(Connection& c);
  bool OnHead(Connection& c);
  bool BodyRead(Connection& c);
  void Release(Connection& c);
  void Dispatch(Connection& c);
  void Resume(Connection& c);
  void Close(Connection& c);
  void Linger(Connection& c);
  void Drain(Connection& c);
  void Expire(Clock::time_point now);
  // The event loop, until a stop has closed every connection.
  void RunEvents();
  void TakeReturned();
  // Answers 503 and closes connection `fd` (admitted or not) after an
  // allocation failed while the event thread handled it.
  void OutOfMemory(int fd);
  void StopListening();
  void Work(WorkQueue* queue);
  void Serve(Connection& c);

  ConnectionServer& s_;
  const ConnectionOptions& o_;
  int epoll_fd_ = -1;
  bool listening_ = false;
  std::optional<Clock::time_point> accept_paused_until_;
  // Connections on descriptors from here are refused (DescriptorHeadroom).
  const int refused_from_ = RefusedFrom();
  // When running out of descriptors was last logged (once per 10 s).
  std::optional<Clock::time_point> accept_failure_logged_;
  // Once the server stops: no connection's deadline passes this (RunEvents).
  std::optional<Clock::time_point> grace_until_;
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;
  std::unordered_map<std::string, int> per_client_;
  std::set<std::pair<Clock::time_point, int>> deadlines_;
  size_t buffered_ = 0;  // the bodies' bytes read here (Connection::held)
  WorkQueue general_;
  WorkQueue probe_;
  WorkQueue readiness_;
  std::mutex returned_mu_;
  Connection* returned_ = nullptr;  // newest first; guarded by returned_mu_
};

void ConnectionServer::Loop::Watch(Connection& c) {
  if (c.registered) return;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = c.fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev) == 0) c.registered = true;
}

void ConnectionServer::Loop::Unwatch(Connection& c) {
  if (!c.registered) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  c.registered = false;
}

void ConnectionServer::Loop::SetDeadline(Connection& c, Clock::time_point t) {
  ClearDeadline(c);
  if (grace_until_ && t > *grace_until_) t = *grace_until_;
  c.deadline = t;
  deadlines_.emplace(t, c.fd);
}

void ConnectionServer::Loop::ClearDeadline(Connection& c) { deadlines_.erase({c.deadline, c.fd}); }

void ConnectionServer::Loop::StopListening() {
  if (!listening_) return;
  for (int fd : s_.listen_fds_) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  listening_ = false;
}

void ConnectionServer::Loop::Accept(int listen_fd) {
  while (true) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      try {
        Admit(fd, peer);
      } catch (const std::bad_alloc&) {
        OutOfMemory(fd);
      }
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      const int err = errno;
      const auto now = Clock::now();
      StopListening();
      accept_paused_until_ = now + kAcceptPause;
      // New connections wait in the backlog meanwhile: said, or an operator
      // saw clients hang with nothing in the log (an audit).
      if (!accept_failure_logged_ || now - *accept_failure_logged_ >= std::chrono::seconds(10)) {
        accept_failure_logged_ = now;
        std::fprintf(stderr,
                     "redbloomd: cannot accept connections: %s (%zu open); new ones wait until "
                     "some close%s\n",
                     internal::ErrnoText(err).c_str(), conns_.size(),
                     err == EMFILE || err == ENFILE
                         ? " (raise the descriptor limit, LimitNOFILE= under systemd, or lower "
                           "max_connections)"
                         : "");
      }
    }
    return;  // EAGAIN: all taken
  }
}

void ConnectionServer::Loop::Admit(int fd, const sockaddr_storage& peer) {
  auto [host, port] = AddressOf(peer);
  const int limit = o_.max_connections_per_client;
  // Descriptors are handed out lowest first: this one's number says how
  // few are left for the store.
  if (fd >= refused_from_) {
    s_.metrics_->ConnectionRefused(Refusal::kDescriptors);
    SendAndClose(fd, ErrorResponse(503, "Service Unavailable", "too_many_connections",
                                   "the server is near its descriptor limit (the rest are kept "
                                   "for its store); retry later"));
    return;
  }
  if (conns_.size() >= static_cast<size_t>(o_.max_connections)) {
    s_.metrics_->ConnectionRefused(Refusal::kTotal);
    SendAndClose(
        fd, ErrorResponse(503, "Service Unavailable", "too_many_connections",
                          "the server has max_connections (" + std::to_string(o_.max_connections) +
                              ") connections open; retry later"));
    return;
  }
  if (const auto it = per_client_.find(host);
      limit > 0 && it != per_client_.end() && it->second >= limit) {
    s_.metrics_->ConnectionRefused(Refusal::kPerClient);
    SendAndClose(
        fd, ErrorResponse(429, "Too Many Requests", "too_many_connections",
                          "this address has max_connections_per_client (" + std::to_string(limit) +
                              ") connections open; reuse them (keep-alive) or close "
                              "some"));
    return;
  }
  int yes = 1;
  // Responses go out as headers then body; without TCP_NODELAY, Nagle holds
  // the body until the client's delayed ACK (40 ms on Linux).
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  auto c = std::make_unique<Connection>();
  c->fd = fd;
  c->peer = std::move(host);
  c->peer_port = port;
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    std::tie(c->local, c->local_port) = AddressOf(local);
  }
  Connection& ref = *c;
  conns_.emplace(fd, std::move(c));
  // Counted once the connection is held, so that Close, which an allocation
  // failing from here on leads to (OutOfMemory), takes back exactly this.
  s_.metrics_->ConnectionOpened();
  ++per_client_[ref.peer];
  // A new connection is held to the header deadline from the start: one
  // that sends nothing is as much a slow client as one that sends a byte.
  SetDeadline(ref, Clock::now() + o_.header_timeout);
  Watch(ref);
}

void ConnectionServer::Loop::OnReadable(Connection& c) {
  if (c.lingering) {
    Drain(c);
    return;
  }
  // Epoll is level-triggered: a connection whose data is not all read here
  // is reported again, after the others.
  for (int reads = 0; reads < kReadsPerWake; ++reads) {
    const bool body = c.body_end != 0;
    if (!body && c.buf.size() - c.pos >= kMaxHeaderBytes) {
      s_.metrics_->RequestMalformed();
      Answer(c, ErrorResponse(431, "Request Header Fields Too Large", "too_large",
                              "request headers are larger than " + std::to_string(kMaxHeaderBytes) +
                                  " bytes"));
      Linger(c);
      return;
    }
    // A head is read no further than the limit: one that ended within a
    // read past it was served, so the limit depended on how TCP cut the
    // bytes, and a connection's head held up to a read more than it says.
    const size_t old = c.buf.size();
    const size_t want = body ? kReadChunk : std::min(kReadChunk, kMaxHeaderBytes - (old - c.pos));
    c.buf.resize(old + want);
    const ssize_t n = ::recv(c.fd, c.buf.data() + old, want, 0);
    c.buf.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n > 0) {
      if (body) {
        if (BodyRead(c)) return;
        SetDeadline(c, std::min(c.body_deadline, Clock::now() + o_.read_timeout));
        continue;
      }
      if (c.idle) {
        c.idle = false;
        SetDeadline(c, Clock::now() + o_.header_timeout);
      }
      if (HeadComplete(c)) {
        if (OnHead(c)) return;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n == 0 && body) {
      // The client stopped sending part-way through its body: the worker
      // reads what came and answers that it is short (400), as it would
      // have had it read the body itself.
      Dispatch(c);
      return;
    }
    Close(c);  // the client closed (or reset) before finishing its headers
    return;
  }
}

// Mirrors httplib's reading: the request line is the first line ending in
// '\n'; the headers end at the first later line that is exactly "\r\n"
// (httplib skips lines ending in a bare '\n'). Empty lines before a request
// line are dropped (RFC 9112, 2.2: a client may end a body with an extra
// CRLF), as httplib would answer them 400 and the request after them would
// get that answer.
bool ConnectionServer::Loop::HeadComplete(Connection& c) {
  while (true) {
    const size_t nl = c.buf.find('\n', c.scan);
    if (nl == std::string::npos) {
      c.scan = c.buf.size();
      return false;
    }
    if (!c.request_line) {
      if (nl == c.line_start || (nl == c.line_start + 1 && c.buf[c.line_start] == '\r')) {
        c.buf.erase(c.line_start, nl + 1 - c.line_start);
        c.scan = c.line_start;
        continue;
      }
      c.request_line = true;
    } else if (nl == c.line_start + 1 && c.buf[c.line_start] == '\r') {
      c.head_end = nl + 1;
      return true;
    }
    if (c.buf[nl - 1] != '\r' || nl == c.line_start) {
      // A line ended by a bare LF: httplib wants CRLF, and a head of such
      // lines never ended for it, so the client waited header_timeout_s for
      // a 408 that blamed its speed. OnHead answers 400 at once.
      c.bare_lf = true;
      c.head_end = nl + 1;
      return true;
    }
    c.line_start = c.scan = nl + 1;
  }
}

// Reads the body here when it can (see ParseFraming), so that a client
// trickling its body holds no worker, only memory: the bytes it has sent,
// at most max_body_bytes for one request (a larger body is the worker's to
// refuse unread), and body_buffer_bytes for all of them together. Bodies are
// counted as they arrive, not by their Content-Length, which costs a client
// nothing to inflate. Past the budget a body goes to the worker with what
// was read of it, and the worker reads the rest, as it does a chunked one.
// True when the connection has left the event thread's hands (dispatched,
// or closed: `c` is then gone).
bool ConnectionServer::Loop::OnHead(Connection& c) {
  const auto now = Clock::now();
  c.head_read = now;
  c.body_deadline = now + o_.body_timeout;
  if (c.bare_lf) {
    s_.metrics_->RequestMalformed();
    Answer(c, ErrorResponse(400, "Bad Request", "invalid_argument",
                            "a line of the request's head ends in a bare LF: HTTP/1.1 needs CRLF"));
    Linger(c);
    return true;
  }
  // A fragment is no part of a request target (RFC 9112, 3.2): httplib cut
  // it off, so GET .../items/a#b answered for the item "a".
  const std::string_view request_line(c.buf.data() + c.pos, c.buf.find('\n', c.pos) - c.pos);
  if (request_line.find('#') != std::string_view::npos) {
    s_.metrics_->RequestMalformed();
    Answer(c, ErrorResponse(400, "Bad Request", "invalid_argument",
                            "the request's target holds a '#' (a fragment, which a request does "
                            "not carry): percent-encode '#' in a name or an item as %23"));
    Linger(c);
    return true;
  }
  // Read before TidyHead, which may rewrite the line (OriginForm).
  const bool http_1_1 = request_line.ends_with(" HTTP/1.1\r");
  bool malformed_header = false;
  int hosts = 0;
  c.head_end = TidyHead(c.buf, c.pos, c.head_end, &malformed_header, &hosts);
  // RFC 9112, 3.2: a request of HTTP/1.1 without a Host, or any with two,
  // is answered 400 (httplib served both).
  if (hosts > 1 || (hosts == 0 && http_1_1)) {
    s_.metrics_->RequestMalformed();
    Answer(c, ErrorResponse(400, "Bad Request", "invalid_argument",
                            hosts > 1 ? "the request has more than one Host header"
                                      : "an HTTP/1.1 request needs a Host header"));
    Linger(c);
    return true;
  }
  const BodyFraming f = ParseFraming(c.buf, c.pos, c.head_end);
  if (f.empty_length) {
    // Where the body ends cannot be told (the HTTP layer answers the other
    // framings that are not one way only).
    s_.metrics_->RequestMalformed();
    Answer(c, ErrorResponse(400, "Bad Request", "invalid_argument",
                            "the request's Content-Length is empty"));
    Linger(c);
    return true;
  }
  if (malformed_header) {
    s_.metrics_->RequestMalformed();
    Answer(c, ErrorResponse(
                  400, "Bad Request", "invalid_argument",
                  "a header line of the request is malformed: not 'name: value' with a token "
                  "for a name, a value holding a NUL byte or a bare CR, or a Content-Length "
                  "that is not a number"));
    Linger(c);
    return true;
  }
  if (f.unframed) {
    // The HTTP layer reads a POST or PUT without either header until the
    // connection closes: a bodyless POST (curl -X POST without -d) waited
    // read_timeout_s for a 408, took requests pipelined behind it as its
    // body, and held a worker meanwhile. It has none; the HTTP layer is
    // told so. (`f`'s views into the head are not used past this.)
    static constexpr std::string_view kNoBody = "Content-Length: 0\r\n";
    c.buf.insert(c.head_end - 2, kNoBody);
    c.head_end += kNoBody.size();
    Dispatch(c);
    return true;
  }
  if (!f.length || *f.length > o_.max_body_bytes || buffered_ >= o_.body_buffer_bytes ||
      (o_.read_ahead && !o_.read_ahead(f.authorization))) {
    Dispatch(c);
    return true;
  }
  if (f.expect_end != f.expect_begin) {
    // The client waits for this before it sends the body. The line goes, so
    // that httplib does not send a second one.
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    [[maybe_unused]] const ssize_t n =
        ::send(c.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL);
    c.buf.erase(f.expect_begin, f.expect_end - f.expect_begin);
    c.head_end -= f.expect_end - f.expect_begin;
  }
  c.body_end = c.head_end + *f.length;
  if (BodyRead(c)) return true;
  SetDeadline(c, std::min(c.body_deadline, now + o_.read_timeout));
  return false;
}

// Counts what has arrived of the body; dispatches the request, and returns
// true, once the body is whole or the budget is spent.
bool ConnectionServer::Loop::BodyRead(Connection& c) {
  const size_t held = std::min(c.buf.size(), c.body_end) - c.head_end;
  buffered_ += held - c.held;
  c.held = held;
  s_.metrics_->SetBodyBufferBytes(buffered_);
  if (c.buf.size() < c.body_end && buffered_ < o_.body_buffer_bytes) return false;
  Dispatch(c);
  return true;
}

void ConnectionServer::Loop::Release(Connection& c) {
  if (c.held != 0) {
    buffered_ -= c.held;
    s_.metrics_->SetBodyBufferBytes(buffered_);
  }
  c.held = 0;
  c.body_end = 0;
}

void ConnectionServer::Loop::Dispatch(Connection& c) {
  ClearDeadline(c);
  Unwatch(c);
  c.in_worker = true;
  const Lane lane = s_.lane_ ? s_.lane_(RequestLine(c)) : Lane::kGeneral;
  s_.metrics_->RequestQueued();
  (lane == Lane::kProbe ? probe_ : lane == Lane::kReadiness ? readiness_ : general_).Push(&c);
}

void ConnectionServer::Loop::Resume(Connection& c) {
  Release(c);
  c.buf.erase(0, c.pos);
  c.pos = c.scan = c.line_start = c.head_end = 0;
  c.request_line = c.bare_lf = false;
  if (c.buf.empty()) {
    c.idle = true;
    const milliseconds wait = std::chrono::duration_cast<milliseconds>(o_.keep_alive_timeout);
    SetDeadline(c,
                Clock::now() + (s_.stopping_.load() ? std::min(wait, kShutdownIdleGrace) : wait));
  } else {
    c.idle = false;  // a pipelined request has begun
    SetDeadline(c, Clock::now() + o_.header_timeout);
    if (HeadComplete(c)) {
      if (OnHead(c)) return;
    }
  }
  Watch(c);
}

void ConnectionServer::Loop::Close(Connection& c) {
  Release(c);
  ClearDeadline(c);
  Unwatch(c);
  ::close(c.fd);
  auto it = per_client_.find(c.peer);
  if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
  s_.metrics_->ConnectionClosed();
  conns_.erase(c.fd);  // destroys c
}

// Ends a connection the server is done with while its client may still be
// sending: a request answered without its body read (413, or any answer
// that closes the connection), or a connection-level answer (431, 400).
// The write side is shut at once, so the client reads the answer and then
// the end of the stream; what it still sends is read and dropped (Drain)
// until it closes, for at most kLingerTime. Closing a socket with unread
// bytes would reset the connection instead, and a client still uploading
// could lose the answer to the reset.
void ConnectionServer::Loop::Linger(Connection& c) {
  if (s_.stopping_.load()) {
    Close(c);
    return;
  }
  ::shutdown(c.fd, SHUT_WR);
  Release(c);
  c.lingering = true;
  std::string().swap(c.buf);
  c.pos = 0;
  SetDeadline(c, Clock::now() + kLingerTime);
  Watch(c);
}

void ConnectionServer::Loop::Drain(Connection& c) {
  char scratch[kReadChunk];
  for (int reads = 0; reads < kReadsPerWake; ++reads) {
    const ssize_t n = ::recv(c.fd, scratch, sizeof(scratch), 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    Close(c);  // the client closed, or the connection failed
    return;
  }
  // More is waiting: epoll reports the connection again, after the others.
}

void ConnectionServer::Loop::Expire(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const int fd = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    auto it = conns_.find(fd);
    if (it == conns_.end()) continue;
    Connection& c = *it->second;
    if (c.lingering) {
      Close(c);
      continue;
    }
    bool answered = false;
    if (s_.stopping_.load() && !c.idle && (c.body_end != 0 || c.buf.size() > c.pos)) {
      // A request the shutdown's grace cut short (see RunEvents).
      Answer(c, ErrorResponse(503, "Service Unavailable", "unavailable",
                              "shutting down: the request did not arrive in time"));
      answered = true;
    } else if (c.body_end != 0) {
      s_.metrics_->RequestTimedOut(TimeoutPhase::kBody);
      Answer(c, ErrorResponse(408, "Request Timeout", "request_timeout",
                              BodyTimeoutMessage(now >= c.body_deadline, o_)));
      answered = true;
    } else if (!c.idle) {
      // The header deadline: the client gets a 408 if it had started a
      // request, and the connection goes either way.
      s_.metrics_->RequestTimedOut(TimeoutPhase::kHeaders);
      if (c.buf.size() > c.pos) {
        Answer(c, ErrorResponse(408, "Request Timeout", "request_timeout",
                                "the request headers did not arrive within header_timeout_s (" +
                                    SecondsText(o_.header_timeout) + ")"));
        answered = true;
      }
    }
    // A late client may still be sending: a 408 lingers like any answer
    // given with the request unread, so that it is read and not reset away.
    if (answered) {
      Linger(c);
    } else {
      Close(c);
    }
  }
}

void ConnectionServer::Loop::TakeReturned() {
  Connection* newest = nullptr;
  {
    std::lock_guard lock(returned_mu_);
    newest = std::exchange(returned_, nullptr);
  }
  Connection* back = nullptr;  // oldest first
  while (newest != nullptr) {
    Connection* next = std::exchange(newest->returned_next, back);
    back = std::exchange(newest, next);
  }
  while (back != nullptr) {
    Connection* c = std::exchange(back, back->returned_next);
    c->returned_next = nullptr;
    c->in_worker = false;
    try {
      if (c->keep) {
        Resume(*c);
      } else {
        Linger(*c);
      }
    } catch (const std::bad_alloc&) {
      Close(*c);
    }
  }
}

void ConnectionServer::Loop::OutOfMemory(int fd) {
  if (auto it = conns_.find(fd); it != conns_.end()) {
    [[maybe_unused]] const ssize_t n = ::send(
        fd, kOutOfMemoryAnswer.data(), kOutOfMemoryAnswer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    Close(*it->second);
    return;
  }
  SendAndClose(fd, kOutOfMemoryAnswer);
}

void ConnectionServer::Loop::Serve(Connection& c) {
  t_read_timeout = {};
  ConnectionStream stream(c, o_);
  const bool last = s_.stopping_.load() || c.served + 1 >= o_.keep_alive_max_requests;
  bool keep = false;
  try {
    keep = s_.handler_(stream, RequestStart{RequestLine(c), c.head_read}, last);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redbloomd: exception while serving a request: %s\n", e.what());
  }
  ++c.served;
  if (t_read_timeout.timed_out) s_.metrics_->RequestTimedOut(TimeoutPhase::kBody);
  c.keep = keep && !last && !stream.broken() && !t_read_timeout.timed_out;
  t_read_timeout = {};
}

void ConnectionServer::Loop::Work(WorkQueue* queue) {
  while (Connection* c = queue->Pop()) {
    s_.metrics_->RequestDequeued();
    Serve(*c);
    {
      std::lock_guard lock(returned_mu_);
      c->returned_next = std::exchange(returned_, c);
    }
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = ::write(s_.wake_fd_, &one, sizeof(one));
  }
}

void ConnectionServer::Loop::RunEvents() {
  std::vector<epoll_event> events(64);
  while (true) {
    if (s_.stopping_.load() && !s_.listen_fds_.empty()) {
      StopListening();
      accept_paused_until_.reset();
      for (int fd : s_.listen_fds_) ::close(fd);  // new connections are refused from here on
      s_.listen_fds_.clear();
      // Lingering connections are answered already: a shutdown does not
      // wait for their clients (Linger closes the later ones at once).
      // Nor does it wait out the deadlines of the others the event thread
      // holds: an idle keep-alive connection, one that connected and sent
      // nothing (a pool's spare socket, a TCP health check: it waited
      // header_timeout_s), and one still sending its head or a body at a
      // trickle (body_timeout_s: 29 s against the unit's 30 s to stop) get
      // kShutdownIdleGrace at most; a request cut short so is answered 503.
      // (SetDeadline keeps every later deadline within the grace: a body
      // read a byte at a time moved its deadline on with each byte.)
      std::vector<Connection*> lingering;
      grace_until_ = Clock::now() + kShutdownIdleGrace;
      for (auto& [fd, c] : conns_) {
        if (c->lingering) lingering.push_back(c.get());
        if (!c->lingering && !c->in_worker && c->deadline > *grace_until_) {
          SetDeadline(*c, *grace_until_);
        }
      }
      for (Connection* c : lingering) Close(*c);
    }
    if (s_.stopping_.load() && conns_.empty()) break;
    int timeout = -1;
    if (!deadlines_.empty()) timeout = CeilMillis(deadlines_.begin()->first - Clock::now());
    if (accept_paused_until_) {
      const int pause = CeilMillis(*accept_paused_until_ - Clock::now());
      timeout = timeout < 0 ? pause : std::min(timeout, pause);
    }
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout);
    if (n < 0 && errno != EINTR) {
      std::fprintf(stderr, "redbloomd: epoll_wait: %s\n", internal::ErrnoText(errno).c_str());
      break;
    }
    // Answered requests first, so that the bodies they held are released
    // before new bytes are counted against body_buffer_bytes.
    TakeReturned();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == s_.wake_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t r = ::read(s_.wake_fd_, &count, sizeof(count));
      } else if (std::find(s_.listen_fds_.begin(), s_.listen_fds_.end(), fd) !=
                 s_.listen_fds_.end()) {
        if (listening_) Accept(fd);
      } else if (auto it = conns_.find(fd); it != conns_.end() && !it->second->in_worker) {
        // No memory to read or parse this connection's request: it is
        // answered 503 and closed, and the others go on (an exception here
        // ended the process, every mem: filter with it).
        try {
          OnReadable(*it->second);
        } catch (const std::bad_alloc&) {
          OutOfMemory(fd);
        }
      }
    }
    TakeReturned();
    const auto now = Clock::now();
    try {
      Expire(now);  // a timed-out request's 408 is built here
    } catch (const std::bad_alloc&) {
      // The rest expire at the next turn; a moment for memory to come back.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (accept_paused_until_ && now >= *accept_paused_until_ && !s_.listen_fds_.empty()) {
      accept_paused_until_.reset();
      for (int listen_fd : s_.listen_fds_) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = listen_fd;
        if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd, &ev) == 0) listening_ = true;
      }
    }
  }
}

void ConnectionServer::Loop::Run() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    std::fprintf(stderr, "redbloomd: epoll_create1: %s\n", internal::ErrnoText(errno).c_str());
    return;
  }
  std::vector<int> watched = s_.listen_fds_;
  watched.push_back(s_.wake_fd_);
  for (int fd : watched) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  listening_ = true;
  std::vector<std::thread> threads;
  // The workers leave once their queues are closed and drained.
  auto stop_workers = [&] {
    general_.Close();
    probe_.Close();
    readiness_.Close();
    for (auto& t : threads) t.join();
  };
  try {
    for (int i = 0; i < o_.workers; ++i) threads.emplace_back([this] { Work(&general_); });
    for (int i = 0; i < kLaneWorkers; ++i) {
      threads.emplace_back([this] { Work(&probe_); });
      threads.emplace_back([this] { Work(&readiness_); });
    }
  } catch (const std::system_error& e) {
    // No thread for the next worker (EAGAIN: a thread or memory limit): stop
    // the ones started, which wait on empty queues, so that the error reaches
    // main instead of a joinable thread's destructor terminating the process.
    const size_t started = threads.size();
    stop_workers();
    ::close(epoll_fd_);
    epoll_fd_ = -1;
    throw std::runtime_error("cannot start request worker " + std::to_string(started + 1) + " of " +
                             std::to_string(o_.workers + kReservedWorkers) + ": " +
                             redbloom::internal::ThreadStartError(e));
  }

  // Anything else the loop throws (no memory where a connection could not
  // be told apart) ends the process in order, through main's "fatal", not
  // in std::terminate from the workers' joinable threads.
  try {
    RunEvents();
  } catch (...) {
    stop_workers();
    ::close(epoll_fd_);
    epoll_fd_ = -1;
    throw;
  }
  stop_workers();
  TakeReturned();
  while (!conns_.empty()) Close(*conns_.begin()->second);
  ::close(epoll_fd_);
  epoll_fd_ = -1;
}

// ---------------------------------------------------------------------------
// ConnectionServer

ConnectionServer::ConnectionServer(ConnectionOptions options, RequestHandler handler,
                                   RequestLane lane, Metrics* metrics)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      lane_(std::move(lane)),
      metrics_(metrics),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

ConnectionServer::~ConnectionServer() {
  for (int fd : listen_fds_) ::close(fd);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status ConnectionServer::Bind() {
  const bool v6 = options_.host.find(':') != std::string::npos;  // [::1]:P, not ::1:P
  const std::string where =
      (v6 ? "[" + options_.host + "]" : options_.host) + ":" + std::to_string(options_.port);
  if (wake_fd_ < 0) {
    return Status::Unavailable("eventfd: " + internal::ErrnoText(errno));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options_.port);
  if (int rc = ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    // A name that does not resolve is configuration (exit 2, which the
    // packaged unit does not restart every 2 s); a resolver that failed
    // (EAI_AGAIN) may answer on the next start.
    const std::string message = "cannot listen on " + where + ": " + ::gai_strerror(rc);
    if (rc == EAI_NONAME) return Status::InvalidArgument(message);
    return Status::Unavailable(message);
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  // Every address the name gives, once each (a hosts file may list one
  // twice). A name with several (localhost: ::1 and 127.0.0.1) is served on
  // all of them: on the first alone, clients of the other family were
  // refused, and a second redbloomd on the same port started on the other
  // address and took its clients.
  std::vector<const addrinfo*> addresses;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const bool seen = std::any_of(addresses.begin(), addresses.end(), [&](const addrinfo* a) {
      return a->ai_addrlen == ai->ai_addrlen &&
             std::memcmp(a->ai_addr, ai->ai_addr, a->ai_addrlen) == 0;
    });
    if (!seen) addresses.push_back(ai);
  }
  const auto fail = [&](const std::string& why) {
    for (int fd : listen_fds_) ::close(fd);
    listen_fds_.clear();
    return Status::Unavailable("cannot listen on " + where + ": " + why);
  };
  int error = 0;
  int bound_port = options_.port;  // port 0: the one the first bind gets, for all
  for (const addrinfo* ai : addresses) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    // SO_REUSEADDR allows a quick restart over TIME_WAIT; not SO_REUSEPORT,
    // which would let a second redbloomd silently take half the connections.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (ai->ai_family == AF_INET6) {
      // "::" alone takes IPv4 too, as httplib's listener did; beside an IPv4
      // address of the same name, each family is bound on its own.
      int only = addresses.size() > 1 ? 1 : 0;
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof(only));
    }
    sockaddr_storage addr{};
    std::memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
    if (addr.ss_family == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&addr)->sin_port = htons(static_cast<uint16_t>(bound_port));
    } else if (addr.ss_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = htons(static_cast<uint16_t>(bound_port));
    }
    // A deep backlog: connections are taken at once and refused explicitly
    // past the limits, rather than left in SYN retries.
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), ai->ai_addrlen) != 0 ||
        ::listen(fd, SOMAXCONN) != 0) {
      error = errno;
      ::close(fd);
      // Taken: another process serves this address, so this one must not
      // start on the others.
      if (error == EADDRINUSE) {
        return fail(AddressOf(addr).first + " port " + std::to_string(bound_port) + ": " +
                    internal::ErrnoText(error));
      }
      continue;  // e.g. an address family this host has no interface for
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    listen_fds_.push_back(fd);
    bound_port = AddressOf(bound).second;
  }
  if (listen_fds_.empty()) return fail(internal::ErrnoText(error));
  port_ = bound_port;
  // Said at start, not found under load: a limit below max_connections
  // beside the store's headroom refuses connections before it.
  if (const std::optional<int> limit = DescriptorLimit();
      limit && *limit < options_.max_connections + DescriptorHeadroom(*limit) + 16) {
    std::fprintf(stderr,
                 "redbloomd: warning: the descriptor limit (%d) is below max_connections (%d) "
                 "plus the %d kept for the store: connections past about %d are refused 503 at "
                 "accept (raise the limit, LimitNOFILE= under systemd, or lower "
                 "max_connections)\n",
                 *limit, options_.max_connections, DescriptorHeadroom(*limit),
                 std::max(0, RefusedFrom() - 16));
  }
  return Status::Ok();
}

void ConnectionServer::Run() {
  if (listen_fds_.empty()) return;
  loop_ = std::make_unique<Loop>(*this);
  loop_->Run();
}

void ConnectionServer::Stop() {
  stopping_.store(true);
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = ::write(wake_fd_, &one, sizeof(one));
}

}  // namespace redbloom::server
