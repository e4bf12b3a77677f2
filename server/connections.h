// The connection layer of redbloomd: accepts TCP connections, reads each
// request's header block (and a body with a Content-Length) on one event
// thread (epoll), and hands a request to a worker thread only once those are
// all there. httplib parses and answers the request on the worker (see
// HttpServer); this layer owns the sockets, the deadlines and the limits.
//
// Why not httplib's own loop: cpp-httplib 0.11 (Debian 12) gives each
// connection a pool thread for its whole keep-alive life, and its read
// timeout applies to each recv() alone. Twenty clients sending a header byte
// every 2 s held all sixteen threads forever, and /healthz waited behind them
// (issue #15.7). Here a connection costs a thread only while a complete
// request is being served:
//   - headers must arrive within header_timeout of the first byte (of the
//     connection, for a new one), or the client gets 408 and is closed;
//   - a body must arrive within body_timeout of the headers (408), and no
//     read may wait longer than read_timeout (408); a body with a
//     Content-Length is read here too, within a memory budget, so a slow
//     one holds no worker either;
//   - an idle keep-alive connection is closed after keep_alive_timeout;
//   - at most max_connections are open, and at most
//     max_connections_per_client from one address (503 / 429 at accept);
//   - requests that a RequestLane puts in a lane of their own go to workers
//     reserved for it: liveness and metrics to two, readiness (which waits
//     on the store) to two others, so that each answers while every other
//     worker is busy, and /healthz while /readyz waits on a stalled store.
#ifndef REDBLOOM_SERVER_CONNECTIONS_H_
#define REDBLOOM_SERVER_CONNECTIONS_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "metrics.h"
#include "redbloom/status.h"

namespace httplib {
class Stream;
}  // namespace httplib

namespace redbloom::server {

struct ConnectionOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 picks a free port; see ConnectionServer::port()
  // Threads serving requests (besides the event thread and the two reserved
  // workers); bounds the requests in progress, not the open connections.
  int workers = 16;
  // From a request's first byte (a new connection: from accept) to the end
  // of its headers. 5 s is ample for any client (headers are < 1 KB) and
  // frees a slowloris connection's slot in bounded time.
  std::chrono::milliseconds header_timeout{5000};
  // From the end of the headers to the end of the body: 30 s moves the
  // largest default body (16 MiB) at 0.5 MiB/s.
  std::chrono::milliseconds body_timeout{30000};
  // A body with a Content-Length is read by the event thread, before a
  // worker takes the request, so that a slow one holds no worker: up to
  // max_body_bytes for one request (a larger one is refused unread by the
  // worker), and body_buffer_bytes of what has arrived for all connections
  // together. Past that, or when it is chunked, a body is read (on) by its
  // worker.
  size_t max_body_bytes = 16 << 20;
  size_t body_buffer_bytes = 64 << 20;
  // Whether a request whose Authorization header has this value (empty when
  // it has none) may have its body read ahead; unset: every request may. A
  // request that will be refused unread goes straight to its worker.
  std::function<bool(std::string_view authorization)> read_ahead;
  // Longest wait for any one read (of the body) or write.
  std::chrono::milliseconds read_timeout{5000};
  std::chrono::milliseconds write_timeout{5000};
  // An idle keep-alive connection is closed after this.
  std::chrono::milliseconds keep_alive_timeout{5000};
  int keep_alive_max_requests = 1000;
  // Open connections, all addresses together. Each is a file descriptor and
  // up to 64 KiB of header buffer. (Any descriptor number is served: Debian's
  // httplib is built to poll(), not select().)
  int max_connections = 512;
  // Open connections from one client address; 0 = no limit. A load balancer
  // or a local proxy shows as one address for all its clients, so behind one
  // this must cover its whole connection pool.
  int max_connections_per_client = 256;
};

// What the connection layer knows of a request it hands a worker.
struct RequestStart {
  // Its first line, without the line end, for the log of a request httplib
  // rejects before it parses it.
  std::string_view line;
  // When its headers had been read: where its latency starts, so that the
  // time it waited for a worker (and for its body) counts.
  std::chrono::steady_clock::time_point head_read;
};

// Serves one request read from `stream` (httplib parses, routes, answers).
// `last` asks for "Connection: close". Returns true when the connection may
// carry another request.
using RequestHandler =
    std::function<bool(httplib::Stream& stream, const RequestStart& start, bool last)>;
// Which workers serve a request: the general ones, or a lane's reserved ones.
enum class Lane { kGeneral, kProbe, kReadiness };
// The lane of a request line ("GET /healthz HTTP/1.1").
using RequestLane = std::function<Lane(std::string_view request_line)>;

// When the request being served on this thread stopped reading its body
// because a deadline passed: a message naming the limit, for a 408 answer.
// nullopt otherwise (no read timed out, or not on a worker).
std::optional<std::string> RequestReadTimeout();

class ConnectionServer {
 public:
  ConnectionServer(ConnectionOptions options, RequestHandler handler, RequestLane lane,
                   Metrics* metrics);
  ConnectionServer(const ConnectionServer&) = delete;
  ConnectionServer& operator=(const ConnectionServer&) = delete;
  ~ConnectionServer();

  // Binds and listens on every address the host resolves to (kUnavailable
  // if any of them is taken, or none can be bound).
  Status Bind();
  int port() const { return port_; }
  // Serves until Stop() and every connection has gone: requests already
  // received are answered (with "Connection: close"), and idle keep-alive
  // connections are closed within keep_alive_timeout, or 5 s once stopping.
  void Run();
  // Stops accepting connections at once; may be called from any thread.
  void Stop();

 private:
  class Loop;
  ConnectionOptions options_;
  RequestHandler handler_;
  RequestLane lane_;
  Metrics* metrics_;
  // One per address the listen host resolves to (localhost: ::1 and
  // 127.0.0.1), all on one port.
  std::vector<int> listen_fds_;
  int wake_fd_ = -1;  // eventfd: Stop() and workers wake the event thread
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<Loop> loop_;
};

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_CONNECTIONS_H_
