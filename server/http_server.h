// HTTP front of redbloomd on cpp-httplib: routing on the raw request target,
// bearer-token auth, request limits, JSON error bodies for every failure
// (including the ones httplib answers itself), access log and metrics.
//
// Connections, deadlines and limits are ConnectionServer's (connections.h):
// httplib parses and answers each request on a worker once its headers have
// arrived, so `threads` bounds the requests in progress, not the open
// connections (max_connections does).
#ifndef REDBLOOM_SERVER_HTTP_SERVER_H_
#define REDBLOOM_SERVER_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "access_log.h"
#include "connections.h"
#include "metrics.h"
#include "redbloom/status.h"
#include "service.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace redbloom::server {

class RequestProcessor;  // httplib's request parsing and routing (http_server.cc)

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 picks a free port; see HttpServer::port()
  // Empty disables auth. Otherwise every route but /healthz and /readyz (and
  // /metrics when public_metrics) needs "Authorization: Bearer <token>".
  std::string token;
  bool public_metrics = false;
  // Largest request body; larger ones get 413 before they are read.
  size_t max_body_bytes = 16 << 20;
  // Bodies read ahead of a worker, all connections together (see
  // ConnectionOptions).
  size_t body_buffer_bytes = 64 << 20;
  int threads = 16;
  int keep_alive_timeout_s = 5;
  int keep_alive_max_requests = 1000;
  // Longest wait for one read of a body, or one write.
  int read_timeout_s = 5;
  int write_timeout_s = 5;
  // See ConnectionOptions for these four.
  int header_timeout_s = 5;
  int body_timeout_s = 30;
  int max_connections = 512;
  int max_connections_per_client = 256;  // 0: no limit
  // Log single-item paths in full. Off by default: items are often card
  // numbers, tokens or e-mail addresses.
  bool log_items = false;
};

class HttpServer {
 public:
  HttpServer(Service* service, Metrics* metrics, AccessLog* log, HttpOptions options);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();

  // Binds the listening socket (kUnavailable if the address is taken).
  Status Bind();
  int port() const { return connections_->port(); }
  // Serves until Stop(); returns after in-flight requests are answered.
  void Run();
  // Stops accepting connections. Idle keep-alive connections are closed
  // within keep_alive_timeout_s; requests already received are answered.
  void Stop();

 private:
  void Install();
  // The checks of a request's line and headers (http_server.cc); true when
  // it refused the request and `res` holds the answer.
  bool Screen(const httplib::Request& req, httplib::Response& res);
  // The answer of the route Screen found for the request, `body` read.
  Reply Dispatch(const httplib::Request& req, std::string_view body);
  // Metrics for every request, and its access-log line (failures always).
  void LogRequest(const httplib::Request& req, const httplib::Response& res);
  // Serves one request from `stream` (ConnectionServer's RequestHandler).
  bool Serve(httplib::Stream& stream, const RequestStart& start, bool last);

  Service* service_;
  Metrics* metrics_;
  AccessLog* log_;
  HttpOptions options_;
  std::unique_ptr<RequestProcessor> processor_;
  std::unique_ptr<ConnectionServer> connections_;
};

// The lane of a request line: GET or HEAD of /healthz and /metrics is a
// probe, of /readyz readiness, each served by reserved workers, so that
// probes and scrapes answer while every other worker is busy, and liveness
// while readiness waits on a stalled store; anything else is general.
Lane LaneOf(std::string_view request_line);

// A route as docs/openapi.json names it: the path template and the methods
// answered ("GET, HEAD, DELETE"; HEAD wherever GET).
struct RouteSpec {
  Route route;
  std::string_view path;
  std::string_view methods;
};
// Every route the server answers (not kUnmatched), so that a test can hold
// the OpenAPI document to them.
std::vector<RouteSpec> Routes();

// Constant-time comparison of a presented token with the expected one: the
// time depends only on the expected token's length.
bool TokenMatches(std::string_view presented, std::string_view expected);

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_HTTP_SERVER_H_
