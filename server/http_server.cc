#include "http_server.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "header_text.h"
#include "openapi.h"
#include "redbloom/store.h"
#include "util/percent.h"

namespace redbloom::server {
namespace {

using Clock = std::chrono::steady_clock;
using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;

struct Target {
  Route route = Route::kUnmatched;
  std::string name;  // decoded
  std::string item;  // decoded
};

// Bytes of a request target kept for the log (LoggedTarget logs 1 KiB).
constexpr size_t kMaxLoggedLine = 2048;

// The method, target and version of a request line as it came, for the log
// of a request httplib rejected before it filled them (a request line past
// its 8 KiB, answered 414). The target keeps its first kMaxLoggedLine bytes
// (`whole` is false when it had more).
struct RawRequestLine {
  std::string method, target, version;
  bool whole = true;
};

// What the pre-routing step learned about the request being served on this
// thread. httplib runs pre-routing, the handler and the logger of one
// request on one thread, one request at a time, within Serve, so a
// thread_local pointer to Serve's own carries the parsed target and the
// start time between them.
struct RequestContext {
  bool active = false;
  Clock::time_point start;
  Target target;
  // Set by the logger, which httplib calls after writing each response: the
  // response did not say "Connection: close".
  bool keep_alive = false;
  // The client's address, for the log of a request httplib rejected before
  // it filled the request's own.
  std::string peer;
  int peer_port = 0;
  // The request's first line as it came (SplitRequestLine).
  RawRequestLine request_line;
  // When the connection layer had read its headers: its latency starts
  // there, so that waiting for a worker or for the body counts.
  Clock::time_point head_read;
  // Screen already passed this request (as the Expect handler).
  bool screened = false;
  // A 5xx answer's JSON body as Apply set it, for the service log: httplib
  // compresses res.body before the logger sees it (Accept-Encoding: gzip,
  // as most HTTP clients send), and the log read those bytes as the error.
  std::string failure_body;
};
// Serve's, while it runs. A plain pointer, not a thread_local object (see
// src/thread_scratch.h).
thread_local RequestContext* t_ctx = nullptr;
RequestContext& Ctx() { return *t_ctx; }

constexpr std::string_view kFiltersPrefix = "/v1/filters";

// Routes on the raw target rather than httplib's decoded path, so that an
// item may contain an encoded '/' (%2F) and a name is decoded exactly once.
Status ParseTarget(std::string_view target, Target* t) {
  *t = Target();
  std::string_view path = target.substr(0, target.find('?'));
  if (path == "/healthz") {
    t->route = Route::kHealthz;
  } else if (path == "/readyz") {
    t->route = Route::kReadyz;
  } else if (path == "/metrics") {
    t->route = Route::kMetrics;
  } else if (path == "/v1/openapi.json") {
    t->route = Route::kOpenApi;
  } else if (path == kFiltersPrefix) {
    t->route = Route::kFilters;
  } else if (path.starts_with(kFiltersPrefix) && path.size() > kFiltersPrefix.size() &&
             path[kFiltersPrefix.size()] == '/') {
    std::string_view rest = path.substr(kFiltersPrefix.size() + 1);
    const size_t slash = rest.find('/');
    const std::string_view name = rest.substr(0, slash);
    if (name.empty()) return Status::Ok();  // "/v1/filters/" and "/v1/filters//x" are unmatched
    std::string_view item;
    if (slash == std::string_view::npos) {
      t->route = Route::kFilter;
    } else {
      const std::string_view sub = rest.substr(slash + 1);
      if (sub == "items") {
        t->route = Route::kItems;
      } else if (sub == "check") {
        t->route = Route::kCheck;
      } else if (sub == "remove") {
        t->route = Route::kRemove;
      } else if (sub.starts_with("items/")) {
        // Everything after "items/" is the item, so an unencoded '/' is kept.
        t->route = Route::kItem;
        item = sub.substr(6);
      } else {
        return Status::Ok();
      }
    }
    Result<std::string> decoded = internal::PercentDecode(name, "the path");
    if (!decoded.ok()) return decoded.status().WithContext("filter name");
    t->name = std::move(decoded).value();
    if (t->route == Route::kItem) {
      // The item is the rest of the path, so an unencoded '?' in it would
      // silently check (or remove) the item before it: refused, as a query
      // string means nothing here.
      if (const size_t q = target.find('?'); q != std::string_view::npos) {
        return Status::InvalidArgument(
            "the item's path has a query string ('" + std::string(target.substr(q, 32)) +
            (target.size() - q > 32 ? "..." : "") +
            "'), which the item route does not take: percent-encode '?' in an item as %3F "
            "(and '#' as %23, '%' as %25)");
      }
      decoded = internal::PercentDecode(item, "the path");
      if (!decoded.ok()) return decoded.status().WithContext("item");
      t->item = std::move(decoded).value();
    }
  }
  return Status::Ok();
}

// Where a request's body ends must be decidable one way only (RFC 9112,
// section 6.3). With Content-Length headers that disagree, or Content-Length
// beside Transfer-Encoding, a proxy in front may end the body elsewhere than
// httplib does (it takes the first Content-Length, and Transfer-Encoding only
// when it is exactly "chunked"), and what one takes for body the other serves
// as a request of its own: request smuggling.
Status CheckBodyFraming(const Request& req) {
  const size_t lengths = req.get_header_value_count("Content-Length");
  // "-1" or "1x" is no length at all (it was answered 413, "larger than").
  for (size_t i = 0; i < lengths; ++i) {
    const std::string cl = req.get_header_value("Content-Length", i);
    if (cl.empty() || cl.find_first_not_of("0123456789") != std::string::npos) {
      return Status::InvalidArgument("the request's Content-Length is not a number: " +
                                     cl.substr(0, 40));
    }
  }
  for (size_t i = 1; i < lengths; ++i) {
    if (req.get_header_value("Content-Length", i) != req.get_header_value("Content-Length")) {
      return Status::InvalidArgument("the request has Content-Length headers that disagree");
    }
  }
  const size_t encodings = req.get_header_value_count("Transfer-Encoding");
  if (encodings == 0) return Status::Ok();
  if (lengths > 0) {
    return Status::InvalidArgument("the request has both Content-Length and Transfer-Encoding");
  }
  if (encodings > 1) {
    return Status::InvalidArgument("the request has more than one Transfer-Encoding header");
  }
  if (!EqualsIgnoreCase(req.get_header_value("Transfer-Encoding"), "chunked")) {
    return Status::InvalidArgument("Transfer-Encoding must be chunked, not " +
                                   req.get_header_value("Transfer-Encoding"));
  }
  return Status::Ok();
}

// Methods each route answers; HEAD goes wherever GET does (httplib answers it
// with the GET handler, without a body).
std::string_view AllowedMethods(Route route) {
  switch (route) {
    case Route::kHealthz:
    case Route::kReadyz:
    case Route::kMetrics:
    case Route::kFilters:
    case Route::kOpenApi:
      return "GET, HEAD";
    case Route::kItem:
      return "GET, HEAD, DELETE";  // DELETE: remove from a counting filter
    case Route::kFilter:
      return "GET, HEAD, PUT, DELETE";
    case Route::kItems:
    case Route::kCheck:
    case Route::kRemove:
      return "POST";
    case Route::kUnmatched:
      return "";
  }
  return "";
}

bool MethodAllowed(Route route, std::string_view method) {
  if (method == "HEAD") method = "GET";
  const std::string_view allowed = AllowedMethods(route);
  size_t pos = 0;
  while (pos < allowed.size()) {
    size_t end = allowed.find(", ", pos);
    if (end == std::string_view::npos) end = allowed.size();
    if (allowed.substr(pos, end - pos) == method) return true;
    pos = end + 2;
  }
  return false;
}

bool RouteHasName(Route route) {
  return route == Route::kFilter || route == Route::kItems || route == Route::kCheck ||
         route == Route::kItem || route == Route::kRemove;
}

// A JSON content type, or none (then the body is taken as JSON). Form
// encodings are refused early because httplib would parse them as forms,
// with an 8 KiB limit of its own, and the result would be a baffling error.
bool AcceptableContentType(std::string_view ct) {
  ct = Trim(ct.substr(0, ct.find(';')));
  if (ct.empty()) return true;
  if (EqualsIgnoreCase(ct, "application/json")) return true;
  return ct.size() > 5 && EqualsIgnoreCase(ct.substr(ct.size() - 5), "+json") &&
         EqualsIgnoreCase(ct.substr(0, 12), "application/");
}

void Apply(Reply reply, Response& res) {
  res.status = reply.status;
  if (reply.status >= 500 && t_ctx != nullptr) t_ctx->failure_body = reply.body;
  res.body = std::move(reply.body);
  res.set_header("Content-Type", reply.content_type);
  // cpp-httplib compresses an answer when the request's Accept-Encoding
  // names gzip or br: a shared cache must not give that body to a client
  // that did not ask for it.
  res.set_header("Vary", "Accept-Encoding");
  // Every answer is of the moment: a check cached by a proxy (Varnish's
  // default keeps a 200 for 120 s) read "present": false for an item added
  // since, a false negative through no fault of the filter.
  res.set_header("Cache-Control", "no-store");
  // An origin server with a clock sends one (RFC 9110, 6.6.1); caches and
  // clients judge an answer's age by it.
  res.set_header("Date", std::string(HttpDate()));
  // No answer honours a Range (Screen clears them); httplib would otherwise
  // tell a HEAD "Accept-Ranges: bytes".
  res.set_header("Accept-Ranges", "none");
  for (auto& [k, v] : reply.headers) res.set_header(k, v);
}

std::string DefaultErrorCode(int status) {
  switch (status) {
    case 400:
      return "invalid_argument";
    case 401:
      return "unauthenticated";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 408:
      return "request_timeout";
    case 413:
    case 414:
    case 431:
      return "too_large";
    case 415:
      return "unsupported_media_type";
    case 503:
      return "unavailable";
    default:
      return status >= 500 ? "internal" : "invalid_argument";
  }
}

std::string DefaultErrorMessage(int status, size_t max_body) {
  switch (status) {
    case 400:
      return "malformed HTTP request";
    case 404:
      return "no such route";
    case 413:
      return "request body is larger than " + std::to_string(max_body) + " bytes";
    case 414:
      return "request target is longer than " + std::to_string(CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) +
             " bytes";
    case 431:
      return "request headers are too large";
    default:
      return "HTTP " + std::to_string(status);
  }
}

// Where LoggedTarget looks for an item to redact: after a single-item
// route's filter name, or anywhere in text no route matched (an empty name,
// a request line not split at spaces), which may hold one all the same.
enum class Redact { kNone, kItemRoute, kAnywhere };

// The target as logged: printable ASCII only, bounded, and with everything
// from an "/items/" on redacted as `redact` says. `whole` is false for a
// target cut short (it is logged with "...").
std::string LoggedTarget(std::string_view target, Redact redact, bool whole = true) {
  std::string_view suffix;
  if (redact != Redact::kNone) {
    const size_t items =
        target.find("/items/", redact == Redact::kItemRoute ? kFiltersPrefix.size() + 1 : 0);
    if (items != std::string_view::npos) {
      target = target.substr(0, items + 7);
      suffix = "<redacted>";
    }
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  constexpr size_t kMaxLogged = 1024;
  for (unsigned char c : target.substr(0, kMaxLogged)) {
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out.append("\\x");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (target.size() > kMaxLogged || (!whole && suffix.empty())) out.append("...");
  out.append(suffix);
  return out;
}

void SplitRequestLine(std::string_view line, RawRequestLine* r) {
  const size_t first = line.find(' ');
  const size_t last = line.rfind(' ');
  r->method.assign(line.substr(0, std::min(first, kMaxLoggedLine)));
  r->target.clear();
  r->version.clear();
  r->whole = true;
  if (first == std::string_view::npos) return;
  std::string_view target = line.substr(first + 1);
  if (last > first && line.substr(last + 1).starts_with("HTTP/")) {
    r->version.assign(line.substr(last + 1, 16));
    target = line.substr(first + 1, last - first - 1);
  }
  r->whole = target.size() <= kMaxLoggedLine;
  r->target.assign(target.substr(0, kMaxLoggedLine));
}

// The service log's line for an answer the server or its store failed
// (5xx): the access log says only that it failed, this says why. One line
// per status, error code and reason per kInterval at most, so an outage that fails
// every request is told, not flooded; the next line counts the ones left
// out. A data loss is one filter's, for its own action, so it is limited per
// filter too: one filter failing twice a second hid every other filter's
// loss from the log. (An internal error is mostly the store's, such as an
// error reply nobody expected, and fails every filter alike.)
class FailureLog {
 public:
  static constexpr std::chrono::seconds kInterval{5};
  // Filters given a limit of their own; past them, they share one.
  static constexpr size_t kMaxFilters = 1024;

  void Note(int status, std::string_view method, std::string_view target, const std::string& body) {
    std::string code = "internal", message = body;
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("error") && j["error"].is_string() && j.contains("message") &&
        j["message"].is_string()) {
      code = j["error"].get<std::string>();
      message = j["message"].get<std::string>();
      // A reason is another cause, limited apart: a Redis back from a
      // restart that may have lost acknowledged adds ("restarted") was
      // left out of the log behind the outage's "cannot connect" line.
      if (j.contains("reason") && j["reason"].is_string()) {
        code += " (" + j["reason"].get<std::string>() + ")";
      }
    }
    Key key{status, code, ""};
    if (code.starts_with("data_loss")) key.filter = FilterOf(target);
    const auto now = Clock::now();
    uint64_t left_out = 0;
    {
      std::lock_guard lock(mu_);
      if (!key.filter.empty() && filters_ >= kMaxFilters && !entries_.contains(key)) {
        DropQuietFilters(now);
        if (filters_ >= kMaxFilters) key.filter.clear();
      }
      auto [it, made] = entries_.try_emplace(key);
      if (made && !key.filter.empty()) ++filters_;
      Entry& e = it->second;
      if (e.logged && now - e.last < kInterval) {
        ++e.left_out;
        return;
      }
      e.logged = true;
      e.last = now;
      left_out = std::exchange(e.left_out, 0);
    }
    std::string line = "redbloomd: ";
    line.append(method).append(" ").append(target).append(": ");
    line.append(std::to_string(status)).append(" ").append(code).append(": ").append(message);
    if (left_out > 0) {
      line.append(" (and " + std::to_string(left_out) + " more " + std::to_string(status) + " " +
                  code + " answers" + (key.filter.empty() ? "" : " for this filter") +
                  " since the last such line)");
    }
    for (char& ch : line) {
      if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';  // one line, whatever the message
    }
    line.push_back('\n');
    [[maybe_unused]] const size_t n = std::fwrite(line.data(), 1, line.size(), stderr);
  }

 private:
  struct Key {
    int status;
    std::string code;
    std::string filter;  // "" for failures of the store, not of one filter
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    bool logged = false;
    Clock::time_point last;
    uint64_t left_out = 0;
  };

  // Forgets the filters with nothing left to say (no line within kInterval,
  // none left out). Called with mu_ held.
  void DropQuietFilters(Clock::time_point now) {
    std::erase_if(entries_, [&](const auto& entry) {
      const bool quiet = !entry.first.filter.empty() && entry.second.left_out == 0 &&
                         now - entry.second.last >= kInterval;
      if (quiet) --filters_;
      return quiet;
    });
  }

  // NAME in a logged target "/v1/filters/NAME[/...]"; "" for other targets.
  static std::string FilterOf(std::string_view target) {
    constexpr std::string_view kPrefix = "/v1/filters/";
    if (!target.starts_with(kPrefix)) return "";
    target.remove_prefix(kPrefix.size());
    return std::string(target.substr(0, target.find_first_of("/?")));
  }

  std::mutex mu_;
  std::map<Key, Entry> entries_;  // guarded by mu_
  size_t filters_ = 0;            // entries_ with a filter; mu_
};

FailureLog& Failures() {
  static FailureLog* log = new FailureLog();  // never destroyed: workers may log at exit
  return *log;
}

std::string UtcTimestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms.count()));
  return buf;
}

}  // namespace

// httplib::Server keeps request parsing, routing and writing in
// process_request(), protected; ConnectionServer owns the sockets and calls it.
class RequestProcessor : public httplib::Server {
 public:
  bool Process(httplib::Stream& stream, bool last, bool* closed) {
    return process_request(stream, last, *closed, nullptr);
  }
};

Lane LaneOf(std::string_view line) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return Lane::kGeneral;
  const std::string_view method = line.substr(0, sp);
  if (method != "GET" && method != "HEAD") return Lane::kGeneral;
  std::string_view target = line.substr(sp + 1);
  target = target.substr(0, target.find(' '));
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/healthz" || path == "/metrics") return Lane::kProbe;
  if (path == "/readyz") return Lane::kReadiness;
  return Lane::kGeneral;
}

std::vector<RouteSpec> Routes() {
  std::vector<RouteSpec> routes;
  for (size_t r = 0; r < kRouteCount; ++r) {
    const Route route = static_cast<Route>(r);
    if (route == Route::kUnmatched) continue;
    routes.push_back({route, RouteLabel(route), AllowedMethods(route)});
  }
  return routes;
}

bool TokenMatches(std::string_view presented, std::string_view expected);

namespace {
// Whether an Authorization header's value is of the Bearer scheme
// ("Bearer" alone, or "Bearer <credentials>"), in any case.
bool HasBearerScheme(std::string_view authorization) {
  return authorization.size() >= 6 && EqualsIgnoreCase(authorization.substr(0, 6), "Bearer") &&
         (authorization.size() == 6 || authorization[6] == ' ');
}
}  // namespace

// An Authorization header's value that carries `token` ("Bearer <token>").
bool BearerMatches(std::string_view authorization, std::string_view token) {
  return HasBearerScheme(authorization) && authorization.size() > 7 &&
         TokenMatches(Trim(authorization.substr(7)), token);
}

bool TokenMatches(std::string_view presented, std::string_view expected) {
  // Every byte of the expected token is folded in whatever the input, and
  // volatile keeps the compiler from stopping at the first difference.
  volatile unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char p =
        presented.empty() ? 0 : static_cast<unsigned char>(presented[i % presented.size()]);
    diff = diff | (p ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0 && !expected.empty();
}

// ---------------------------------------------------------------------------
// HttpServer

HttpServer::HttpServer(Service* service, Metrics* metrics, AccessLog* log, HttpOptions options)
    : service_(service),
      metrics_(metrics),
      log_(log),
      options_(std::move(options)),
      processor_(std::make_unique<RequestProcessor>()) {
  using std::chrono::seconds;
  ConnectionOptions c;
  c.host = options_.host;
  c.port = options_.port;
  c.workers = options_.threads;
  c.header_timeout = seconds(options_.header_timeout_s);
  c.body_timeout = seconds(options_.body_timeout_s);
  c.read_timeout = seconds(options_.read_timeout_s);
  c.write_timeout = seconds(options_.write_timeout_s);
  c.keep_alive_timeout = seconds(options_.keep_alive_timeout_s);
  c.keep_alive_max_requests = options_.keep_alive_max_requests;
  c.max_connections = options_.max_connections;
  c.max_connections_per_client = options_.max_connections_per_client;
  c.max_body_bytes = options_.max_body_bytes;
  c.body_buffer_bytes = options_.body_buffer_bytes;
  // A request that will be answered 401 unread spends no one's budget.
  if (!options_.token.empty()) {
    c.read_ahead = [token = options_.token](std::string_view authorization) {
      return BearerMatches(authorization, token);
    };
  }
  connections_ = std::make_unique<ConnectionServer>(
      std::move(c),
      [this](httplib::Stream& stream, const RequestStart& start, bool last) {
        return Serve(stream, start, last);
      },
      LaneOf, metrics_);
  Install();
}

HttpServer::~HttpServer() = default;

Status HttpServer::Bind() { return connections_->Bind(); }

void HttpServer::Run() { connections_->Run(); }

void HttpServer::Stop() { connections_->Stop(); }

bool HttpServer::Serve(httplib::Stream& stream, const RequestStart& start, bool last) {
  RequestContext ctx;
  // This request's context while Serve runs; one that was never logged
  // (httplib threw, out of memory) leaves the in-flight gauge as it found it.
  struct Current {
    Current(RequestContext* c, Metrics* m) : ctx(c), metrics(m), outer(std::exchange(t_ctx, c)) {}
    ~Current() {
      if (ctx->active) metrics->RequestFinished();
      t_ctx = outer;
    }
    RequestContext* const ctx;
    Metrics* const metrics;
    RequestContext* const outer;
  } current(&ctx, metrics_);
  ctx.head_read = start.head_read;
  SplitRequestLine(start.line, &ctx.request_line);
  stream.get_remote_ip_and_port(ctx.peer, ctx.peer_port);
  bool closed = false;
  const bool written = processor_->Process(stream, last, &closed);
  return written && !closed && ctx.keep_alive;
}

// Everything decided about a request from its line and headers alone
// (framing, auth, route, method, name, body size, type), before its body is
// read; a refusal is answered here. Runs as the pre-routing handler, or
// earlier as the Expect handler for a client that waits for "100 Continue",
// so that a request about to be refused is refused before its upload.
bool HttpServer::Screen(const Request& req, Response& res) {
  // Once per request (the Expect handler's pass is skipped by routing); a
  // request never logged is settled by Serve's Current.
  RequestContext& ctx = Ctx();
  ctx.active = true;
  ctx.start = ctx.head_read;
  metrics_->RequestStarted();
  // Every answer is one JSON document: httplib would cut a 200's body to
  // a Range header's bytes (or wrap it in multipart/byteranges), leaving
  // invalid JSON. The request is process_request's own, not const there.
  const_cast<Request&>(req).ranges.clear();

  uint64_t content_length = 0;
  const std::string cl = req.get_header_value("Content-Length");
  if (!cl.empty()) {
    auto [ptr, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), content_length);
    if (ec != std::errc() || ptr != cl.data() + cl.size()) content_length = UINT64_MAX;
  }
  const bool has_body = content_length > 0 || req.has_header("Transfer-Encoding");
  // An answer given before the body is read leaves the body unread on the
  // connection; closing it keeps the next request from parsing body bytes.
  const auto answer = [&](Reply reply) {
    if (has_body) reply.headers.emplace_back("Connection", "close");
    Apply(std::move(reply), res);
    return true;
  };

  Target& t = ctx.target;
  const Status parsed = ParseTarget(req.target, &t);
  // Checked first: where this request ends is unknown, so nothing after it
  // on the connection can be trusted to be a request.
  if (const Status framing = CheckBodyFraming(req); !framing.ok()) {
    Reply r = ErrorReply(framing);
    r.headers.emplace_back("Connection", "close");
    Apply(std::move(r), res);
    return true;
  }
  const bool open_route = t.route == Route::kHealthz || t.route == Route::kReadyz ||
                          (t.route == Route::kMetrics && options_.public_metrics);
  if (!options_.token.empty() && !open_route) {
    const std::string auth = req.get_header_value("Authorization");
    if (!BearerMatches(auth, options_.token)) {
      // A token sent without the scheme, or as Basic, is a client to fix,
      // not a wrong token to rotate.
      Reply r = ErrorReply(401, "unauthenticated",
                           auth.empty()            ? "missing Authorization: Bearer <token>"
                           : HasBearerScheme(auth) ? "invalid bearer token"
                                                   : "the Authorization header is not of the "
                                                     "Bearer scheme: send Authorization: Bearer "
                                                     "<token>");
      r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"redbloomd\"");
      return answer(std::move(r));
    }
  }
  if (!parsed.ok()) return answer(ErrorReply(parsed));
  if (t.route == Route::kUnmatched) {
    const std::string_view path = std::string_view(req.target).substr(0, 200);
    return answer(ErrorReply(404, "not_found", "no route for " + std::string(path)));
  }
  if (!MethodAllowed(t.route, req.method)) {
    Reply r = ErrorReply(
        405, "method_not_allowed",
        req.method + " is not allowed here; allowed: " + std::string(AllowedMethods(t.route)));
    r.headers.emplace_back("Allow", std::string(AllowedMethods(t.route)));
    return answer(std::move(r));
  }
  if (RouteHasName(t.route)) {
    const Status valid = ValidateFilterName(t.name);
    if (!valid.ok()) return answer(ErrorReply(valid));
  }
  const bool takes_body = req.method == "POST" || req.method == "PUT";
  if (!takes_body && has_body) {
    return answer(ErrorReply(400, "invalid_argument", req.method + " requests take no body"));
  }
  if (has_body) {
    if (content_length != 0 && content_length > options_.max_body_bytes) {
      return answer(ErrorReply(
          413, "too_large",
          "request body is larger than " + std::to_string(options_.max_body_bytes) + " bytes"));
    }
    const std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && !EqualsIgnoreCase(Trim(encoding), "identity")) {
      // Decompressing would let a small body expand past the limit.
      return answer(ErrorReply(415, "unsupported_media_type",
                               "Content-Encoding " + encoding + " is not accepted"));
    }
    if (!AcceptableContentType(req.get_header_value("Content-Type"))) {
      return answer(
          ErrorReply(415, "unsupported_media_type",
                     "send the body as Content-Type: application/json (curl: -H 'Content-Type: "
                     "application/json'), not " +
                         req.get_header_value("Content-Type")));
    }
  }
  return false;
}

namespace {

// A body through httplib's ContentReader, into *body; false when it is
// refused (too large, timed out, cut short), with `res` holding the answer.
bool ReadBody(const Request& req, const httplib::ContentReader& reader, size_t max_body,
              std::string* body, Response& res) {
  // Reading through a ContentReader enforces the limit on chunked bodies
  // too, which httplib's own body reading does not.
  body->reserve(std::min<uint64_t>(req.get_header_value<uint64_t>("Content-Length"), max_body));
  bool too_large = false;
  const bool ok = reader([&](const char* data, size_t n) {
    if (body->size() + n > max_body) {
      too_large = true;
      return false;
    }
    body->append(data, n);
    return true;
  });
  if (!ok) {
    const std::optional<std::string> timed_out = RequestReadTimeout();
    Reply r = too_large
                  ? ErrorReply(413, "too_large",
                               "request body is larger than " + std::to_string(max_body) + " bytes")
              : timed_out ? ErrorReply(408, "request_timeout", *timed_out)
                          : ErrorReply(400, "invalid_argument",
                                       "the request body was truncated or could not be read");
    r.headers.emplace_back("Connection", "close");
    Apply(std::move(r), res);
    return false;
  }
  return true;
}

// The answer to a handler's exception: 503 for a process short of memory,
// which another instance or a later try may serve; 500 otherwise.
void AnswerException(const Request& req, Response& res, std::exception_ptr ep) {
  std::string what = "unknown exception";
  bool no_memory = false;
  try {
    if (ep) std::rethrow_exception(ep);
  } catch (const std::bad_alloc& e) {
    what = e.what();
    no_memory = true;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  std::fprintf(stderr, "redbloomd: exception while serving %s: %s\n", req.method.c_str(),
               what.c_str());
  if (no_memory) {
    // The process, not the request, is short of memory: another instance
    // or a later try may serve it.
    res.set_header("Retry-After", "1");
    Apply(ErrorReply(503, "unavailable",
                     "redbloomd ran out of memory serving the request; retry on another "
                     "instance or later"),
          res);
    return;
  }
  Apply(ErrorReply(500, "internal", "internal error: " + what), res);
}

}  // namespace

void HttpServer::Install() {
  httplib::Server& s = *processor_;
  // Only for the Keep-Alive response header: ConnectionServer enforces both.
  s.set_keep_alive_max_count(static_cast<size_t>(options_.keep_alive_max_requests));
  s.set_keep_alive_timeout(options_.keep_alive_timeout_s);
  s.set_payload_max_length(options_.max_body_bytes);

  // httplib adds its own "Connection: close" (the client asked for it) or
  // "Keep-Alive" after the handlers, beside a "Connection: close" of ours: the
  // answer said close twice, or close and keep-alive at once.
  s.set_post_routing_handler([](const Request&, Response& res) {
    const auto [first, last] = res.headers.equal_range("Connection");
    if (std::none_of(first, last, [](const auto& h) { return h.second == "close"; })) return;
    res.headers.erase(first, last);
    res.headers.erase("Keep-Alive");
    res.set_header("Connection", "close");
  });
  s.set_pre_routing_handler([this](const Request& req, Response& res) {
    if (RequestContext& ctx = Ctx(); ctx.screened) {
      ctx.screened = false;  // the Expect handler let it through
      return HandlerResponse::Unhandled;
    }
    return Screen(req, res) ? HandlerResponse::Handled : HandlerResponse::Unhandled;
  });
  // httplib sends "100 Continue" to a client that expects it (one the event
  // thread did not read ahead for) before routing; a request about to be
  // refused unread (401, 404, 413, 415, ...) is refused instead, so the
  // client does not upload its body for nothing.
  s.set_expect_100_continue_handler([this](const Request& req, Response& res) {
    if (Screen(req, res)) {
      // httplib writes this answer without a Content-Length when the
      // request has no body, so the client could not tell where it ends
      // (the next answer ran into it): it ends with the connection.
      res.set_header("Connection", "close");
      return res.status;
    }
    Ctx().screened = true;
    return 100;
  });

  const auto dispatch = [this](const Request& req, std::string_view body, Response& res) {
    Apply(Dispatch(req, body), res);
  };

  const auto plain = [dispatch](const Request& req, Response& res) {
    dispatch(req, req.body, res);
  };
  const size_t max_body = options_.max_body_bytes;
  const auto streamed = [dispatch, max_body](const Request& req, Response& res,
                                             const httplib::ContentReader& reader) {
    std::string body;
    if (ReadBody(req, reader, max_body, &body, res)) dispatch(req, body, res);
  };
  // Routing is ParseTarget's, in the pre-routing handler; httplib's patterns
  // only have to take every request it let through. They match httplib's
  // decoded path, where an item's %0A or %0D is a real LF or CR, which '.'
  // does not match (ECMAScript): "[\s\S]" is any byte.
  constexpr const char* kAnyPath = R"([\s\S]*)";
  s.Get(kAnyPath, plain);
  s.Delete(kAnyPath, plain);
  s.Put(kAnyPath, plain);
  s.Post(kAnyPath, plain);
  s.Put(kAnyPath, streamed);
  s.Post(kAnyPath, streamed);

  // httplib answers some requests itself (malformed request line, URI too
  // long, payload too large) with an empty body; give those a JSON body too.
  s.set_error_handler(
      httplib::Server::HandlerWithResponse([max_body](const Request&, Response& res) {
        // A request httplib refused before Screen saw it (a request line or
        // a header line it cannot parse, a target over 8 KiB, a Range it
        // cannot parse) can have left part of itself unread: its headers,
        // its body. Kept open, the connection would read that rest as the
        // next request: a body run as a request, every later answer one off.
        if (!Ctx().active) res.set_header("Connection", "close");
        if (!res.body.empty()) return HandlerResponse::Unhandled;
        Apply(ErrorReply(res.status, DefaultErrorCode(res.status),
                         DefaultErrorMessage(res.status, max_body)),
              res);
        return HandlerResponse::Handled;
      }));
  s.set_exception_handler(AnswerException);

  s.set_logger([this](const Request& req, const Response& res) { LogRequest(req, res); });
}

Reply HttpServer::Dispatch(const Request& req, std::string_view body) {
  const RequestContext& ctx = Ctx();
  if (!ctx.active) return ErrorReply(500, "internal", "request reached a handler without routing");
  const Target& t = ctx.target;
  const std::string& m = req.method;
  switch (t.route) {
    case Route::kHealthz:
      return service_->Health();
    case Route::kReadyz:
      return service_->Ready();
    case Route::kMetrics:
      return service_->MetricsText();
    case Route::kFilters:
      return service_->ListFilters();
    case Route::kFilter:
      if (m == "PUT") return service_->PutFilter(t.name, body);
      if (m == "DELETE") return service_->DeleteFilter(t.name);
      return service_->GetFilter(t.name);
    case Route::kItems:
      return service_->AddItems(t.name, body);
    case Route::kCheck:
      return service_->CheckItems(t.name, body);
    case Route::kItem:
      return m == "DELETE" ? service_->RemoveItem(t.name, t.item)
                           : service_->CheckItem(t.name, t.item);
    case Route::kRemove:
      return service_->RemoveItems(t.name, body);
    case Route::kOpenApi: {
      Reply r;
      r.body = OpenApiJson();
      return r;
    }
    case Route::kUnmatched:
      break;
  }
  return ErrorReply(404, "not_found", "no such route");
}

void HttpServer::LogRequest(const Request& req, const Response& res) {
  RequestContext& ctx = Ctx();
  ctx.keep_alive = res.get_header_value("Connection") != "close";
  std::chrono::nanoseconds latency{0};
  Route route = Route::kUnmatched;
  // A request the parser rejected (a header line too long, a space in
  // the target) was never routed (kUnmatched): its target may still name
  // an item.
  if (ctx.active) {
    latency = Clock::now() - ctx.start;
    route = ctx.target.route;
    metrics_->RecordRequest(route, req.method, res.status, latency);
    metrics_->RequestFinished();
    ctx.active = false;
  } else {
    latency = Clock::now() - ctx.head_read;
    metrics_->CountRequest(route, req.method, res.status);
  }
  const bool failed = res.status >= 500;
  if (!failed && !log_->enabled()) return;
  const bool parsed = !req.method.empty();
  const RawRequestLine& raw = ctx.request_line;
  // Other routes hold no item: a filter may be named "items"
  // (/v1/filters/items/check).
  const Redact redact = options_.log_items           ? Redact::kNone
                        : route == Route::kItem      ? Redact::kItemRoute
                        : route == Route::kUnmatched ? Redact::kAnywhere
                                                     : Redact::kNone;
  // A request line not split at spaces (tabs) is all in the method.
  const std::string method = LoggedTarget(parsed ? req.method : raw.method,
                                          options_.log_items ? Redact::kNone : Redact::kAnywhere);
  const std::string target =
      LoggedTarget(parsed ? req.target : raw.target, redact, parsed || raw.whole);
  if (failed) {
    Failures().Note(res.status, method, target,
                    ctx.failure_body.empty() ? res.body : ctx.failure_body);
  }
  if (!log_->enabled()) return;
  char tail[96];
  // The body bytes sent: none for HEAD, whose answer carries the length
  // a GET's body would have.
  const size_t sent = req.method == "HEAD" ? 0 : res.body.size();
  std::snprintf(tail, sizeof(tail), "\" %d %zu %.3fms\n", res.status, sent,
                std::chrono::duration<double, std::milli>(latency).count());
  std::string line = UtcTimestamp();
  const std::string& peer = req.remote_addr.empty() ? ctx.peer : req.remote_addr;
  const bool v6 = peer.find(':') != std::string::npos;  // [::1]:P, not ::1:P
  line.append(v6 ? " [" : " ")
      .append(peer)
      .append(v6 ? "]:" : ":")
      .append(std::to_string(req.remote_addr.empty() ? ctx.peer_port : req.remote_port))
      .append(" \"")
      .append(method)
      .append(" ")
      .append(target)
      .append(" ")
      .append(LoggedTarget(parsed ? req.version : raw.version, Redact::kNone))
      .append(tail);
  log_->Write(line);
}

}  // namespace redbloom::server
