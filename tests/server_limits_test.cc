// redbloomd under hostile or oversized load, as a real process on loopback:
// slow clients (slowloris) are cut off at the header and body deadlines and
// never keep /healthz from answering; one client address cannot hold more
// than its share of connections; a filter larger than the configured limit
// is refused before anything is created; info on a big filter does not read
// its whole bitmap; and requests the parser refuses, or sends to wait with
// Expect, cannot make a connection answer the wrong request.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server_process.h"
#include "test_util.h"

namespace redbloom::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t MillisSince(Clock::time_point t0) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
}

// Resident set of a process in bytes (VmRSS), or -1.
int64_t ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::stoll(line.substr(6)) * 1024;  // "NNN kB"
  }
  return -1;
}

// Sends `piece` on every connection each `period` until stopped: the pace of
// a slow client, well inside the per-read timeout, so only a deadline over
// the whole header (or body) can end it.
class Trickler {
 public:
  Trickler(std::vector<std::unique_ptr<RawConnection>>* conns, std::string piece,
           milliseconds period)
      : thread_([this, conns, piece = std::move(piece), period] {
          std::unique_lock lock(mu_);
          while (!stop_) {
            for (auto& c : *conns) c->Send(piece);
            cv_.wait_for(lock, period, [this] { return stop_; });
          }
        }) {}
  Trickler(const Trickler&) = delete;
  Trickler& operator=(const Trickler&) = delete;
  ~Trickler() { Stop(); }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// GET /healthz on a fresh connection, as a load balancer's probe does, with
// `budget` for connecting and for the answer. Returns the status (0 if none)
// and the time it took.
std::pair<int, int64_t> ProbeHealth(int port, milliseconds budget) {
  httplib::Client probe("127.0.0.1", port);
  probe.set_connection_timeout(budget);
  probe.set_read_timeout(budget);
  const auto t0 = Clock::now();
  auto res = probe.Get("/healthz");
  return {res ? res->status : 0, MillisSince(t0)};
}

// redbloomd_body_buffer_bytes once it reads `want`, else its last reading
// after about 2 s: the event thread moves it as bytes arrive and as answered
// requests come back to it.
double BufferedBodyBytes(int port, double want, const std::string& token = "") {
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  double now = -1;
  for (int i = 0; i < 100 && now != want; ++i) {
    if (i > 0) std::this_thread::sleep_for(milliseconds(20));
    httplib::Client c("127.0.0.1", port);
    auto res = c.Get("/metrics", headers);
    now = res ? Sample(res->body, "redbloomd_body_buffer_bytes") : -1;
  }
  return now;
}

class ServerLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"REDBLOOMD_LISTEN", "REDBLOOM_STORE", "REDBLOOMD_TOKEN"}) ::unsetenv(v);
  }

  std::string StoreUrl() const { return "file:" + dir_.path() + "/store"; }

  static std::string Metrics(RedbloomdProcess& server) {
    auto c = server.Client();
    return Call(*c, "GET", "/metrics").body;
  }

  // Creates filter "f" (capacity 100, 1%) through the API.
  static void CreateF(RedbloomdProcess& server) {
    auto c = server.Client();
    ASSERT_EQ(Call(*c, "PUT", "/v1/filters/f", R"({"capacity":100,"error_rate":0.01})").status,
              201);
  }

  TempDir dir_;
};

// The issue's attack: more slow connections than worker threads, each
// sending a byte of its headers now and then. With the defaults (16 workers,
// 5 s to send the headers), /healthz keeps answering at once, and each slow
// connection is answered 408 and closed when its 5 s are up, not before.
TEST_F(ServerLimitsTest, SlowlorisIsCutOffAtTheHeaderDeadlineAndHealthStillAnswers) {
  RedbloomdProcess server(StoreUrl());
  server.Start();
  constexpr int kSlow = 24;  // more than the default 16 workers
  constexpr int64_t kHeaderTimeoutMs = 5000;
  const auto t0 = Clock::now();
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server.port()));
    slow.back()->Send("GET /v1/filters HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  }
  Trickler trickle(&slow, "a", milliseconds(250));

  // Probe for most of the header deadline, while every slow connection is
  // open. A starved probe waits for a worker until the slow connections are
  // cut at 5 s: the first probe then takes about 5 s, so a bound at half of
  // that tells starvation from a loaded host's slow answer (1 s flaked once
  // under a parallel build).
  int probes = 0;
  while (MillisSince(t0) < kHeaderTimeoutMs - 1500) {
    const auto [status, ms] = ProbeHealth(server.port(), milliseconds(2500));
    EXPECT_EQ(status, 200) << "probe " << probes << " at " << MillisSince(t0) << " ms";
    EXPECT_LT(ms, 2500) << "probe " << probes;
    ++probes;
    if (status != 200) break;  // one starved probe says it all
  }
  EXPECT_GE(probes, 3);

  for (int i = 0; i < kSlow; ++i) {
    const std::string response =
        slow[i]->ReadResponse(milliseconds(kHeaderTimeoutMs + 3000 - MillisSince(t0)));
    const int64_t at = MillisSince(t0);
    EXPECT_TRUE(response.starts_with("HTTP/1.1 408")) << "connection " << i << ": " << response;
    EXPECT_NE(response.find("\"request_timeout\""), std::string::npos) << response;
    // Each connection was opened after t0, so its deadline is after t0 + 5 s.
    EXPECT_GE(at, kHeaderTimeoutMs) << "connection " << i << " was cut before its deadline";
    EXPECT_TRUE(slow[i]->WaitClosed(milliseconds(2000))) << "connection " << i;
  }
  trickle.Stop();
  const std::string metrics = Metrics(server);
  EXPECT_EQ(Sample(metrics, R"(redbloomd_request_timeouts_total{phase="headers"})"), kSlow)
      << metrics;
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Stderr();
}

// A body with a Content-Length is read by the event thread, so clients
// trickling their bodies hold no worker: with more of them than workers, API
// requests (not only the probes, which have workers of their own) answer at
// once; once the bodies are whole they are served.
TEST_F(ServerLimitsTest, SlowBodiesHoldNoWorker) {
  RedbloomdProcess server(StoreUrl(), R"({"threads": 2})");
  server.Start();
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  const std::string head =
      "POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: ";
  std::vector<std::unique_ptr<RawConnection>> slow;
  std::vector<std::string> bodies;
  for (int i = 0; i < 4; ++i) {
    bodies.push_back(R"({"items":["slow-)" + std::to_string(i) + R"("]})");
    slow.push_back(std::make_unique<RawConnection>(server.port()));
    // Two of them repeat their (same) Content-Length, which frames the body
    // just as well, and two are HTTP/1.0: those went to a worker, and held it.
    const std::string length = std::to_string(bodies.back().size());
    std::string line = head;
    if (i >= 2) line.replace(line.find("HTTP/1.1"), 8, "HTTP/1.0");
    slow.back()->Send(line + length + (i % 2 == 1 ? "\r\nContent-Length: " + length : "") +
                      "\r\n\r\n{");
  }
  size_t sent = 1;
  const auto t0 = Clock::now();
  int calls = 0;
  while (MillisSince(t0) < 2500) {
    for (size_t i = 0; i < slow.size(); ++i) slow[i]->Send(bodies[i].substr(sent, 1));
    ++sent;
    httplib::Client api("127.0.0.1", server.port());
    api.set_read_timeout(milliseconds(1000));
    const auto t = Clock::now();
    auto res = api.Get("/v1/filters/f/items/x");
    ASSERT_TRUE(res) << "call " << calls << " got no answer within 1 s";
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_LT(MillisSince(t), 1000) << "call " << calls;
    ++calls;
    std::this_thread::sleep_for(milliseconds(200));
  }
  ASSERT_GE(calls, 2);
  // What has arrived of the bodies is held, not their announced lengths.
  const auto held = static_cast<double>(slow.size() * sent);
  EXPECT_EQ(BufferedBodyBytes(server.port(), held), held);
  for (size_t i = 0; i < slow.size(); ++i) {
    ASSERT_LT(sent, bodies[i].size()) << "the bodies finished while the calls ran";
    slow[i]->Send(bodies[i].substr(sent));
    const std::string response = slow[i]->ReadResponse(seconds(5));
    EXPECT_TRUE(response.starts_with("HTTP/1.1 200")) << response;
  }
  // Released as each request is answered (the event thread learns of it
  // just after the answer is written).
  EXPECT_EQ(BufferedBodyBytes(server.port(), 0), 0);
  auto c = server.Client();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Call(*c, "GET", "/v1/filters/f/items/slow-" + std::to_string(i)).json["present"],
              true);
  }
}

// body_buffer_bytes bounds the bytes of bodies read ahead, all connections
// together. Past it a body goes to its worker with what has arrived of it,
// and the worker reads the rest (so, with one worker, a request behind it
// waits until that body is whole). A client that sent
// "Expect: 100-continue" gets one 100 Continue, from the event thread or
// from httplib, never two.
TEST_F(ServerLimitsTest, BodiesPastTheBufferBudgetGoToTheirWorkerPartRead) {
  RedbloomdProcess server(StoreUrl(), R"({"threads": 1, "body_buffer_bytes": 100})");
  server.Start();
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  auto request = [](const std::string& body, bool expect) {
    return "POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           std::string(expect ? "Expect: 100-continue\r\n" : "") +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  };
  auto body_of = [](const std::string& item, size_t size) {
    std::string b = R"({"items":[")" + item + R"("]})";
    return b + std::string(size - b.size(), ' ');
  };
  // The PUT's body is released once its answer is back on the event thread.
  ASSERT_EQ(BufferedBodyBytes(server.port(), 0), 0);
  // 90 bytes of a 200-byte body: held by the event thread, no worker.
  const std::string a = body_of("a", 200);
  RawConnection slow_a(server.port());
  slow_a.Send(request(a, false) + a.substr(0, 90));
  ASSERT_EQ(BufferedBodyBytes(server.port(), 90), 90);
  // 20 more from another client spend the budget: its request goes to the
  // one worker, which waits for the rest of its body.
  const std::string b = body_of("b", 200);
  RawConnection slow_b(server.port());
  slow_b.Send(request(b, true));
  EXPECT_EQ(slow_b.ReadResponse(seconds(3)), "HTTP/1.1 100 Continue\r\n\r\n");
  slow_b.Send(b.substr(0, 20));
  ASSERT_EQ(BufferedBodyBytes(server.port(), 110), 110);
  RawConnection quick(server.port());
  const std::string q = body_of("q", 40);
  quick.Send(request(q, true));
  // The head is answered at once: the budget is spent, so httplib, on the
  // worker, sends the 100 once the worker is free.
  EXPECT_EQ(quick.ReadResponse(milliseconds(300)), "") << "the worker was free";
  slow_b.Send(b.substr(20));
  const std::string answer_b = slow_b.ReadResponse(seconds(5));
  EXPECT_TRUE(answer_b.ends_with(R"({"added":[true]})")) << answer_b;
  EXPECT_EQ(quick.ReadResponse(seconds(3)), "HTTP/1.1 100 Continue\r\n\r\n");
  quick.Send(q);
  const std::string answer_q = quick.ReadResponse(seconds(5));
  EXPECT_TRUE(answer_q.ends_with(R"({"added":[true]})")) << answer_q;
  slow_a.Send(a.substr(90));
  const std::string answer_a = slow_a.ReadResponse(seconds(5));
  EXPECT_TRUE(answer_a.ends_with(R"({"added":[true]})")) << answer_a;
  EXPECT_EQ(BufferedBodyBytes(server.port(), 0), 0);
}

// With a token set, only a request that presents it has its body read
// ahead: one without is answered 401 at once, unread, and spends none of
// the budget, which an anonymous client could otherwise fill.
TEST_F(ServerLimitsTest, OnlyAuthenticatedBodiesAreReadAhead) {
  RedbloomdProcess server(StoreUrl(), R"({"token": "sekrit"})");
  server.Start();
  auto post = [&](const std::string& auth) {
    return "POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           auth + "Content-Length: 1000\r\n\r\n{\"items\":[";
  };
  RawConnection anon(server.port());
  const auto t0 = Clock::now();
  anon.Send(post(""));
  const std::string refused = anon.ReadResponse(seconds(4));
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 401")) << refused;
  EXPECT_LT(MillisSince(t0), 2000) << "answered only when the body timed out";
  EXPECT_EQ(BufferedBodyBytes(server.port(), 0, "sekrit"), 0);
  // The token's holder is read ahead as before.
  RawConnection known(server.port());
  known.Send(post("Authorization: Bearer sekrit\r\n"));
  EXPECT_EQ(BufferedBodyBytes(server.port(), 10, "sekrit"), 10);
}

// A client that ends its side of the connection before its body is whole
// is answered 400 (not just closed), and nothing of the body is added.
TEST_F(ServerLimitsTest, ABodyCutShortByTheClientIs400) {
  RedbloomdProcess server(StoreUrl());
  server.Start();
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  RawConnection c(server.port());
  c.Send(
      "POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 100\r\n\r\n{\"items\":[\"cut\"]}");
  c.ShutdownWrite();
  const std::string response = c.ReadResponse(seconds(5));
  EXPECT_TRUE(response.starts_with("HTTP/1.1 400")) << response;
  auto client = server.Client();
  EXPECT_EQ(Call(*client, "GET", "/v1/filters/f/items/cut").json["present"], false);
}

TEST_F(ServerLimitsTest, BodyNotReceivedWithinBodyTimeoutIs408) {
  RedbloomdProcess server(StoreUrl(), R"({"body_timeout_s": 1})");
  server.Start();
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  std::vector<std::unique_ptr<RawConnection>> slow;
  slow.push_back(std::make_unique<RawConnection>(server.port()));
  const auto t0 = Clock::now();
  slow[0]->Send(
      "POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 1000\r\n\r\n{\"items\":[\"slow\"");
  Trickler trickle(&slow, " ", milliseconds(200));
  const std::string response = slow[0]->ReadResponse(seconds(5));
  const int64_t at = MillisSince(t0);
  trickle.Stop();
  EXPECT_TRUE(response.starts_with("HTTP/1.1 408")) << response;
  EXPECT_NE(response.find("body_timeout_s"), std::string::npos) << response;
  EXPECT_GE(at, 1000);
  EXPECT_LT(at, 4000);
  auto c = server.Client();
  EXPECT_EQ(Call(*c, "GET", "/v1/filters/f/items/slow").json["present"], false);
  EXPECT_EQ(Sample(Metrics(server), R"(redbloomd_request_timeouts_total{phase="body"})"), 1);
}

// body_timeout_s runs from the end of the headers, also for a body its
// worker reads (none is read ahead here) after the request waited for that
// worker: a slow body queued behind another is cut off at its own deadline,
// not a whole body_timeout_s after its turn came.
TEST_F(ServerLimitsTest, AQueuedBodysDeadlineRunsFromItsHeaders) {
  RedbloomdProcess server(
      StoreUrl(),
      R"({"threads": 1, "body_buffer_bytes": 0, "body_timeout_s": 2, "read_timeout_s": 5})");
  server.Start();
  const std::string head =
      "POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 100\r\n\r\n{\"items\":[";
  RawConnection first(server.port());
  first.Send(head);
  std::this_thread::sleep_for(milliseconds(100));  // the one worker takes it
  RawConnection queued(server.port());
  const auto t0 = Clock::now();
  queued.Send(head);
  const std::string response = queued.ReadResponse(seconds(6));
  const int64_t at = MillisSince(t0);
  EXPECT_TRUE(response.starts_with("HTTP/1.1 408")) << response;
  EXPECT_NE(response.find("body_timeout_s (2 s)"), std::string::npos) << response;
  EXPECT_LT(at, 3200) << "its deadline ran from its turn, not its headers";
  EXPECT_TRUE(first.ReadResponse(seconds(1)).starts_with("HTTP/1.1 408"));
}

// A request's latency runs from its headers, so the time it waits for a
// worker counts: with the one worker held by a body still arriving, a GET
// queued behind it for a second was logged, and timed, at 0.3 ms. The
// queue shows in redbloomd_http_requests_queued meanwhile.
TEST_F(ServerLimitsTest, LatencyCountsTheWaitForAWorker) {
  const std::string log = dir_.path() + "/access.log";
  RedbloomdProcess server(
      StoreUrl(),
      json{
          {"threads", 1}, {"body_buffer_bytes", 0}, {"access_log", log}, {"access_log_flush_ms", 0}}
          .dump());
  server.Start();
  {  // the connections close before the server stops, which waits for idle ones
    const std::string body = R"({"items":["a"]})";
    RawConnection first(server.port());
    first.Send(
        "POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: "
        "application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body.substr(0, 5));
    std::this_thread::sleep_for(milliseconds(200));  // the one worker takes it
    RawConnection queued(server.port());
    queued.Send("GET /v1/filters/queued-behind HTTP/1.1\r\nHost: x\r\n\r\n");
    double waiting = -1;
    for (int i = 0; i < 50 && waiting != 1; ++i) {
      std::this_thread::sleep_for(milliseconds(20));
      waiting = Sample(Metrics(server), "redbloomd_http_requests_queued");
    }
    EXPECT_EQ(waiting, 1);
    std::this_thread::sleep_for(milliseconds(1000));
    first.Send(body.substr(5));
    ASSERT_TRUE(first.ReadResponse().starts_with("HTTP/1.1 404")) << "filter f was never made";
    const std::string answer = queued.ReadResponse();
    ASSERT_TRUE(answer.starts_with("HTTP/1.1 404")) << answer;
  }
  EXPECT_EQ(Sample(Metrics(server), "redbloomd_http_requests_queued"), 0);
  const std::string metrics = Metrics(server);
  const double sum =
      Sample(metrics, "redbloomd_http_request_duration_seconds_sum{route=\"/v1/filters/{name}\"}");
  EXPECT_GE(sum, 0.9) << metrics;
  ASSERT_EQ(server.Stop(SIGTERM), 0) << server.Stderr();
  std::ifstream in(log);
  std::string line;
  double logged_ms = -1;
  while (std::getline(in, line)) {
    if (line.find("GET /v1/filters/queued-behind ") == std::string::npos) continue;
    logged_ms = std::stod(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_GE(logged_ms, 900) << "the queued GET's logged latency";
}

// A connection that got 200 for GET /healthz and stays open (keep-alive).
// Start()'s readiness probe closed its connection, but the server may not
// have seen that close yet and still count it against a cap, so a refusal is
// retried, up to 100 times 20 ms apart (a cap that is really full refuses
// them all). Null if none got in; *answer holds the last answer.
std::unique_ptr<RawConnection> HeldConnection(int port, std::string* answer) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(milliseconds(20));
    auto c = std::make_unique<RawConnection>(port);
    c->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    *answer = c->ReadResponse();
    if (answer->starts_with("HTTP/1.1 200")) return c;
  }
  return nullptr;
}

// One address may hold max_connections_per_client connections; the next is
// answered 429 and closed, and counted. Closing one makes room again.
TEST_F(ServerLimitsTest, ConnectionsPerClientAddressAreCapped) {
  RedbloomdProcess server(StoreUrl(), R"({"max_connections_per_client": 4})");
  server.Start();
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 4; ++i) {
    std::string answer;
    held.push_back(HeldConnection(server.port(), &answer));
    ASSERT_NE(held.back(), nullptr) << "connection " << i << ": " << answer;
  }
  RawConnection extra(server.port());
  extra.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string refused = extra.ReadResponse();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 429")) << refused;
  EXPECT_NE(refused.find("\"too_many_connections\""), std::string::npos) << refused;
  EXPECT_NE(refused.find("max_connections_per_client"), std::string::npos) << refused;
  EXPECT_TRUE(extra.WaitClosed(seconds(2)));

  // The held connections still work.
  held[0]->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(held[0]->ReadResponse().starts_with("HTTP/1.1 200"));

  // Once one closes (and the server has seen it close), a new one is let in.
  held.pop_back();
  std::string admitted;
  for (int attempt = 0; attempt < 100 && !admitted.starts_with("HTTP/1.1 200"); ++attempt) {
    RawConnection again(server.port());
    again.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    admitted = again.ReadResponse();
    if (!admitted.starts_with("HTTP/1.1 200")) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(admitted.starts_with("HTTP/1.1 200")) << admitted;

  held.clear();
  std::string metrics;
  for (int attempt = 0; attempt < 100; ++attempt) {
    metrics = Metrics(server);
    if (Sample(metrics, "redbloomd_connections_open") == 1) break;  // just the metrics request
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(Sample(metrics, "redbloomd_connections_open"), 1) << metrics;
  const double refusals =
      Sample(metrics, R"(redbloomd_connections_refused_total{reason="per_client"})");
  EXPECT_GE(refusals, 1) << metrics;
  EXPECT_EQ(Sample(metrics, R"(redbloomd_connections_refused_total{reason="total"})"), 0)
      << metrics;
}

// The server-wide cap: max_connections open at once, whatever the address.
TEST_F(ServerLimitsTest, ConnectionsBeyondTheServerCapAre503) {
  RedbloomdProcess server(StoreUrl(), R"({"max_connections": 3})");
  server.Start();
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 3; ++i) {
    std::string answer;
    held.push_back(HeldConnection(server.port(), &answer));
    ASSERT_NE(held.back(), nullptr) << "connection " << i << ": " << answer;
  }
  RawConnection extra(server.port());
  const std::string refused = extra.ReadResponse();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("max_connections"), std::string::npos) << refused;
  held.clear();
  // Until the server has seen the three close, this request may be refused too.
  Answer metrics;
  for (int attempt = 0; attempt < 100 && metrics.status != 200; ++attempt) {
    auto c = server.Client();
    metrics = Call(*c, "GET", "/metrics");
    if (metrics.status != 200) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(metrics.status, 200) << metrics.body;
  EXPECT_GE(Sample(metrics.body, R"(redbloomd_connections_refused_total{reason="total"})"), 1)
      << metrics.body;
  EXPECT_EQ(Sample(metrics.body, R"(redbloomd_connections_refused_total{reason="per_client"})"), 0)
      << metrics.body;
}

// The connection layer reads ahead of httplib; bytes of the next request
// read with this one are kept for it, so pipelined requests are answered in
// order, and a header block past 64 KiB is refused without waiting for more.
TEST_F(ServerLimitsTest, PipelinedRequestsAreAnsweredInOrderAndHugeHeadersAre431) {
  RedbloomdProcess server(StoreUrl());
  server.Start();
  RawConnection c(server.port());
  c.Send(
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /v1/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string all;
  for (int i = 0; i < 3; ++i) all += c.ReadResponse();
  EXPECT_TRUE(c.WaitClosed(seconds(2)));
  const size_t first = all.find("{\"status\":\"ok\"}");
  const size_t second = all.find("{\"status\":\"ready\"}");
  const size_t third = all.find("HTTP/1.1 404");
  ASSERT_NE(first, std::string::npos) << all;
  ASSERT_NE(second, std::string::npos) << all;
  ASSERT_NE(third, std::string::npos) << all;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);

  // Requests with bodies, sent in one write: each body is read ahead and
  // ends where its Content-Length says, and the next request starts there.
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  auto post = [](const std::string& body) {
    return "POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  RawConnection bodies(server.port());
  bodies.Send(post(R"({"items":["a","b"]})") + post(R"({"items":["b","c"]})") +
              "GET /v1/filters/f/items/c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  // (A read may return more than one answer: look for each, in order.)
  std::string answers;
  for (int i = 0; i < 3; ++i) answers += bodies.ReadResponse();
  EXPECT_TRUE(bodies.WaitClosed(seconds(2)));
  const size_t a = answers.find(R"({"added":[true,true]})");
  const size_t b = answers.find(R"({"added":[false,true]})");
  const size_t c3 = answers.find(R"({"present":true})");
  ASSERT_NE(a, std::string::npos) << answers;
  ASSERT_NE(b, std::string::npos) << answers;
  ASSERT_NE(c3, std::string::npos) << answers;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c3);

  RawConnection big(server.port());
  big.Send("GET /healthz HTTP/1.1\r\n");
  for (int i = 0; i < 40; ++i)
    big.Send("X-Filler-" + std::to_string(i) + ": " + std::string(2000, 'f') + "\r\n");
  const std::string refused = big.ReadResponse();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 431")) << refused;
  EXPECT_TRUE(big.WaitClosed(seconds(2)));

  // The limit holds however the head arrives: one that ended within the
  // last 16 KiB read past 64 KiB was served (a 77 KB head, its last
  // 11 KB sent after a pause, answered 200).
  std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 11; ++i)
    head += "X-Filler-" + std::to_string(i) + ": " + std::string(7000, 'f') + "\r\n";
  head += "\r\n";
  ASSERT_GT(head.size(), size_t{64 << 10});
  RawConnection split(server.port());
  split.Send(head.substr(0, (64 << 10) - 100));
  std::this_thread::sleep_for(milliseconds(200));
  split.Send(head.substr((64 << 10) - 100));
  const std::string split_answer = split.ReadResponse();
  EXPECT_TRUE(split_answer.starts_with("HTTP/1.1 431")) << split_answer;
}

// A request with neither Content-Length nor Transfer-Encoding has no body
// (RFC 9112, 6.3). cpp-httplib reads a POST's until the connection closes:
// `curl -X POST` without -d waited read_timeout_s for a false 408 ("no byte
// of the body arrived"), and a request pipelined behind it was read as its
// body and never answered (an audit). It is now an empty body, at once.
TEST_F(ServerLimitsTest, ARequestWithoutLengthOrChunksHasNoBody) {
  RedbloomdProcess server(StoreUrl(), R"({"read_timeout_s": 30})");
  server.Start();
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  // Also with headers that turn the event thread's read-ahead off (a
  // review: those still waited for a body).
  for (const std::string extra :
       {"", "Expect: something\r\n", "Authorization: a\r\nAuthorization: b\r\n"}) {
    RawConnection c(server.port());
    const auto sent = std::chrono::steady_clock::now();
    c.Send("POST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           extra +
           "\r\nGET /v1/filters/f/items/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // Until the second answer's (JSON) body is in: one read can end with
    // the first answer whole and the second's headers alone.
    std::string answers;
    for (int i = 0; i < 4 && !(CountResponses(answers) == 2 && answers.ends_with('}')); ++i) {
      answers += c.ReadResponse();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - sent, seconds(20)) << "waited for a body";
    ASSERT_EQ(CountResponses(answers), 2) << extra << answers;
    EXPECT_TRUE(answers.starts_with("HTTP/1.1 4")) << answers;
    EXPECT_NE(answers.find(R"({"present":false})"), std::string::npos) << extra << answers;
    EXPECT_TRUE(c.WaitClosed(seconds(2)));
  }
}

// A request httplib refuses before routing it (a target over 8 KiB: 414; a
// request line it cannot parse: 400) may have left part of itself unread,
// here a body that is itself a request. The connection is closed after the
// answer, so that rest is never run: before, the 414's connection stayed
// open and its body was answered as a second request (one request, two
// answers: what a proxy pooling connections hands to its next client).
TEST_F(ServerLimitsTest, RequestsRefusedBeforeRoutingCloseTheirConnection) {
  RedbloomdProcess server(StoreUrl());
  server.Start();
  const std::string smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  RawConnection long_target(server.port());
  ASSERT_EQ(long_target.SendAll("POST /v1/filters/" + std::string(9000, 'a') +
                                "/items HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                std::to_string(smuggled.size()) + "\r\n\r\n" + smuggled),
            0);
  int error = -1;
  std::string all = long_target.ReadToEnd(&error);
  EXPECT_EQ(error, 0) << all;
  EXPECT_TRUE(all.starts_with("HTTP/1.1 414")) << all;
  EXPECT_EQ(CountResponses(all), 1) << all;
  EXPECT_NE(all.find("Connection: close"), std::string::npos) << all;

  RawConnection bad_line(server.port());
  ASSERT_EQ(bad_line.SendAll("NOT A REQUEST\r\n" + smuggled), 0);
  all = bad_line.ReadToEnd(&error);
  EXPECT_EQ(error, 0) << all;
  EXPECT_TRUE(all.starts_with("HTTP/1.1 400")) << all;
  EXPECT_EQ(CountResponses(all), 1) << all;
}

// Empty lines before a request line are ignored (RFC 9112, 2.2), as a
// client may end a body with an extra CRLF: before, httplib answered them
// 400 and every later answer on the connection was one request off.
TEST_F(ServerLimitsTest, EmptyLinesBeforeARequestAreIgnored) {
  RedbloomdProcess server(StoreUrl());
  server.Start();
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  const std::string body = R"({"items":["a"]})";
  RawConnection c(server.port());
  ASSERT_EQ(c.SendAll("\r\n\nPOST /v1/filters/f/items HTTP/1.1\r\nHost: x\r\n"
                      "Content-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body +
                      "\r\nGET /v1/filters/f/items/a HTTP/1.1\r\nHost: x\r\n"
                      "Connection: close\r\n\r\n"),
            0);
  int error = -1;
  const std::string all = c.ReadToEnd(&error);
  EXPECT_EQ(error, 0) << all;
  EXPECT_EQ(CountResponses(all), 2) << all;
  const size_t added = all.find(R"({"added":[true]})");
  const size_t present = all.find(R"({"present":true})");
  ASSERT_NE(added, std::string::npos) << all;
  ASSERT_NE(present, std::string::npos) << all;
  EXPECT_LT(added, present);
  EXPECT_EQ(all.find("HTTP/1.1 400"), std::string::npos) << all;
}

// A client that sends "Expect: 100-continue" and waits is refused before it
// uploads when its request would be refused unread (413 over max_body_bytes,
// 401 without the token, 404 for no route), instead of being told to send a
// body that is then dropped. A request that passes is told to continue.
TEST_F(ServerLimitsTest, ExpectContinueIsRefusedBeforeTheUpload) {
  RedbloomdProcess::Options options;
  options.store = StoreUrl();
  options.token = "s3cret";
  options.config_json = R"({"max_body_bytes": 4096})";
  RedbloomdProcess server(std::move(options));
  server.Start();
  const auto head = [](const std::string& target, const std::string& auth, size_t length) {
    return "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth +
           "Expect: 100-continue\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
  };
  const std::string bearer = "Authorization: Bearer s3cret\r\n";
  struct Case {
    std::string head;
    const char* status;
  };
  for (const Case& k : {Case{head("/v1/filters/f/items", bearer, 1 << 20), "HTTP/1.1 413"},
                        Case{head("/v1/filters/f/items", "", 100), "HTTP/1.1 401"},
                        Case{head("/v1/nothing", bearer, 1 << 20), "HTTP/1.1 404"}}) {
    RawConnection c(server.port());
    c.Send(k.head);
    const std::string first = c.ReadResponse();
    EXPECT_TRUE(first.starts_with(k.status)) << k.head << "\n--\n" << first;
    EXPECT_TRUE(c.WaitClosed(seconds(7))) << k.head;
  }
  RawConnection ok(server.port());
  ok.Send(head("/v1/filters/f/items", bearer, 14));
  EXPECT_EQ(ok.ReadResponse(), "HTTP/1.1 100 Continue\r\n\r\n");
}

// Starts `server`; "" or why it did not start (the caller restores what it
// changed for the start before it asserts).
std::string StartOrSayWhy(RedbloomdProcess& server) {
  try {
    server.Start();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Connections on descriptors past FD_SETSIZE (1024) are served: a file
// store keeps a descriptor open per cached filter, so a busy server's
// connections get such numbers. They were refused 503 "max_connections"
// with a handful open, from a rule for a select() that Debian's httplib
// does not use.
TEST_F(ServerLimitsTest, ConnectionsOnDescriptorsPast1024AreServed) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  constexpr rlim_t kNeeded = 1400;
  ASSERT_GE(limit.rlim_max, kNeeded) << "the hard RLIMIT_NOFILE is too low for this test";
  const rlimit before = limit;
  limit.rlim_cur = std::max(limit.rlim_cur, kNeeded);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  // Inherited by redbloomd (no O_CLOEXEC), so its own descriptors start past 1100.
  std::vector<int> held;
  for (int i = 0; i < 1100; ++i) {
    const int fd = ::open("/dev/null", O_RDONLY);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    held.push_back(fd);
  }
  RedbloomdProcess server(StoreUrl());
  const std::string started = StartOrSayWhy(server);
  for (int fd : held) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &before);
  ASSERT_EQ(started, "");
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  RawConnection c(server.port());
  c.Send("GET /v1/filters/f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string answer = c.ReadResponse();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  // The connection's descriptor was past 1024: the server has that many open.
  size_t open = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(server.pid()) + "/fd")) {
    ++open;
  }
  EXPECT_GT(open, 1100u);
}

// Near its descriptor limit, redbloomd refuses new connections 503 at
// accept and keeps the rest for its store: taking the last descriptors, it
// left the requests it had accepted failing "Too many open files" on the
// file store, while /readyz said ready (an audit: 7,014 of 8,000 requests
// at `ulimit -n 64`). A limit that cannot hold max_connections is said at
// start, and connections that close make room again.
TEST_F(ServerLimitsTest, NearTheDescriptorLimitConnectionsAreRefusedNotTheStore) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlimit before = limit;
  limit.rlim_cur = 128;  // inherited by redbloomd
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  RedbloomdProcess server(StoreUrl());
  const std::string started = StartOrSayWhy(server);
  ::setrlimit(RLIMIT_NOFILE, &before);
  ASSERT_EQ(started, "");
  EXPECT_NE(server.Stderr().find(
                "warning: the descriptor limit (128) is below max_connections (512) plus the 64 "
                "kept for the store"),
            std::string::npos)
      << server.Stderr();
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 160; ++i) held.push_back(std::make_unique<RawConnection>(server.port()));
  // The last ones were refused at accept, and say why.
  const std::string refused = held.back()->ReadResponse();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("near its descriptor limit"), std::string::npos) << refused;
  // The first ones were taken, and what they ask of the store is done:
  // creates open files (each a descriptor, for a moment).
  for (int i = 0; i < 8; ++i) {
    const std::string body = R"({"capacity":100,"error_rate":0.01})";
    held[i]->Send("PUT /v1/filters/g" + std::to_string(i) +
                  " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body);
    const std::string answer = held[i]->ReadResponse();
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 201")) << answer;
  }
  held[8]->Send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string ready = held[8]->ReadResponse();
  EXPECT_TRUE(ready.starts_with("HTTP/1.1 200")) << ready;
  EXPECT_EQ(server.Stderr().find("Too many open files"), std::string::npos) << server.Stderr();
  held.clear();
  RawConnection c(server.port());
  c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string answer = c.ReadResponse();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  // Counted apart from max_connections' refusals.
  const std::string metrics = Metrics(server);
  EXPECT_GT(Sample(metrics, R"(redbloomd_connections_refused_total{reason="descriptors"})"), 0);
  EXPECT_EQ(Sample(metrics, R"(redbloomd_connections_refused_total{reason="total"})"), 0);
}

// A client still uploading a body the server refused unread (413, over
// max_body_bytes) reads the answer and then the end of the stream, and its
// upload is never cut off by a reset: the server shuts its side and drops
// what still arrives until the client closes (Loop::Linger). Closing at once
// with unread bytes sent a reset, which failed the client's next send and
// could discard the 413 before the client read it. Likewise for a header
// block refused 431 while more of it is on the way. A shutdown does not wait
// for lingering clients.
TEST_F(ServerLimitsTest, RefusedUploadsGetTheirAnswerAndNoReset) {
  RedbloomdProcess server(StoreUrl(), R"({"max_body_bytes": 4096})");
  server.Start();
  ASSERT_NO_FATAL_FAILURE(CreateF(server));
  const std::string body(8 << 20, ' ');  // more than the sockets' buffers hold
  RawConnection upload(server.port());
  EXPECT_EQ(upload.SendAll("POST /v1/filters/f/check HTTP/1.1\r\nHost: x\r\n"
                           "Content-Type: application/json\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body),
            0)
      << "the upload was cut off";
  upload.ShutdownWrite();
  int error = -1;
  const std::string answer = upload.ReadToEnd(&error);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer;
  EXPECT_NE(answer.find("too_large"), std::string::npos) << answer;
  EXPECT_EQ(error, 0) << "the connection ended in a reset: " << std::strerror(error);

  RawConnection headers(server.port());
  std::string huge = "GET /healthz HTTP/1.1\r\n";
  for (int i = 0; i < 2000; ++i)
    huge += "X-Filler-" + std::to_string(i) + ": " + std::string(1000, 'f') + "\r\n";
  EXPECT_EQ(headers.SendAll(huge), 0) << "the header block was cut off";
  headers.ShutdownWrite();
  const std::string refused = headers.ReadToEnd(&error);
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 431")) << refused;
  EXPECT_EQ(error, 0) << "the connection ended in a reset: " << std::strerror(error);

  // A client that never closes is not waited for by a shutdown (its
  // connection would otherwise linger for 5 s).
  RawConnection idle(server.port());
  EXPECT_EQ(idle.SendAll(std::string("GET /healthz HTTP/1.1\r\nHost: x\r\n") +
                         "Connection: close\r\n\r\n"),
            0);
  const std::string healthy = idle.ReadToEnd(&error);  // up to the server's FIN
  EXPECT_TRUE(healthy.starts_with("HTTP/1.1 200")) << healthy;
  const auto stop_began = Clock::now();
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  EXPECT_LT(Clock::now() - stop_began, seconds(3));
}

// A client past its header deadline that is still sending reads its 408
// and a clean end, not a reset: the 408 lingers like the other answers given
// with the request unread. (It closed at once before, and the client's late
// bytes drew a reset, which failed its sends.)
TEST_F(ServerLimitsTest, LateClientsReadTheir408AndNoReset) {
  RedbloomdProcess server(StoreUrl(), R"({"header_timeout_s": 1})");
  server.Start();
  RawConnection late(server.port());
  late.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n");
  std::this_thread::sleep_for(milliseconds(1600));  // past the deadline: the 408 is sent
  // More than the sockets' buffers hold, as a header line that never ends.
  const std::string more = "X-Late: " + std::string(8 << 20, 'l');
  EXPECT_EQ(late.SendAll(more), 0) << "the late bytes were cut off";
  late.ShutdownWrite();
  int error = -1;
  const std::string answer = late.ReadToEnd(&error);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 408")) << answer;
  EXPECT_EQ(error, 0) << "the connection ended in a reset: " << std::strerror(error);
}

// A filter over max_filter_bytes is refused with 413 before anything is
// created; the message names the limit and how to raise it. Window filters
// count every slice.
TEST_F(ServerLimitsTest, FiltersOverMaxFilterBytesAre413AndNotCreated) {
  RedbloomdProcess server(StoreUrl(), R"({"max_filter_bytes": 1048576})");
  server.Start();
  auto c = server.Client();
  // 1e6 items at 1% with guava64: 9,585,059 bits, 1.2 MB.
  Answer big = Call(*c, "PUT", "/v1/filters/big",
                    R"({"capacity":1e6,"error_rate":0.01,"strategy":"guava64"})");
  EXPECT_EQ(big.status, 413) << big.body;
  EXPECT_EQ(big.error(), "too_large");
  const std::string message = big.json.value("message", "");
  EXPECT_NE(message.find("1198136 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("max_filter_bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("--max-filter-bytes"), std::string::npos) << message;
  EXPECT_EQ(Call(*c, "GET", "/v1/filters/big").status, 404);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/store/big.rbf"));

  // Each slice of this window is under the limit, all ten are not.
  Answer window = Call(*c, "PUT", "/v1/filters/window",
                       R"({"capacity":1000000,"error_rate":0.01,"kind":"window",
                           "window_ms":60000,"slices":10})");
  EXPECT_EQ(window.status, 413) << window.body;
  EXPECT_EQ(Call(*c, "GET", "/v1/filters/window").status, 404);

  Answer small = Call(*c, "PUT", "/v1/filters/small", R"({"capacity":1e5,"error_rate":0.01})");
  EXPECT_EQ(small.status, 201) << small.body;
  EXPECT_EQ(Call(*c, "GET", "/v1/filters").json["filters"], json::parse(R"(["small"])"));
}

// Info on a 2^31-bit filter estimates the fill from a sample rather than
// reading 256 MiB: the server's resident memory barely grows, where a scan
// would map in the whole file.
TEST_F(ServerLimitsTest, InfoOnABigFilterSamplesInsteadOfReadingEveryPage) {
  RedbloomdProcess server(StoreUrl(), R"({"max_filter_bytes": 1073741824})");
  server.Start();
  auto c = server.Client();
  const int64_t before = ResidentBytes(server.pid());
  ASSERT_GT(before, 0);
  // 2^31 bits at k = 7 (Guava sizes 224,100,000 items at 1% so).
  Answer created =
      Call(*c, "PUT", "/v1/filters/big", R"({"capacity":224100000,"error_rate":0.01})");
  ASSERT_EQ(created.status, 201) << created.body;
  const uint64_t bits = created.json["bits"].get<uint64_t>();
  ASSERT_GE(bits, uint64_t{1} << 31);
  EXPECT_EQ(created.json["bits_set_method"], "sampled") << created.body;
  ASSERT_EQ(
      Call(*c, "POST", "/v1/filters/big/items", R"({"items":["a","b","c","d","e","f"]})").status,
      200);
  Answer info = Call(*c, "GET", "/v1/filters/big");
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(info.json["bits_set_method"], "sampled") << info.body;
  EXPECT_EQ(info.json["items_added"], 6);
  const int64_t grown = ResidentBytes(server.pid()) - before;
  // A scan maps all 256 MiB; the sample reads about 4 MiB.
  EXPECT_LT(grown, 32 << 20) << "resident memory grew by " << grown << " bytes";

  // A small filter is still counted exactly.
  Answer small = Call(*c, "PUT", "/v1/filters/small", R"({"capacity":1000,"error_rate":0.01})");
  EXPECT_EQ(small.json["bits_set_method"], "exact") << small.body;
}

// What large requests freed goes back to the system once none is in
// progress. Each of the 16 workers kept the peak of the largest requests it
// had served in its own malloc arena: 285 MB resident for 12 MB of filters
// after varied batches of up to 80,000 items, idle or not; here 60 MB more
// than before the load, where now 15 MB (2 cores; with 64 arenas allowed,
// as on a large machine, 60 MB, then 32 MB after the trim). (glibc's
// allocator: the sanitizers bring their own.)
TEST_F(ServerLimitsTest, WhatLargeRequestsFreedGoesBackOnceIdle) {
  if (kAddressSanitizer || kThreadSanitizer) {
    GTEST_SKIP() << "the sanitizers' allocator is not glibc's";
  }
  RedbloomdProcess server("mem:");
  server.Start();
  {
    auto c = server.Client();
    ASSERT_EQ(Call(*c, "PUT", "/v1/filters/m", R"({"capacity":2000000,"error_rate":0.01})").status,
              201);
  }
  const int64_t before = ResidentBytes(server.pid());
  ASSERT_GT(before, 0);
  // 16 clients at once, so that every worker serves some: 60,000 items a
  // request, added then checked, twice.
  std::vector<std::thread> clients;
  std::atomic<int> failed{0};
  for (int t = 0; t < 16; ++t) {
    clients.emplace_back([&, t] {
      auto c = server.Client();
      for (int round = 0; round < 2; ++round) {
        json items = json::array();
        for (int i = 0; i < 60000; ++i) {
          items.push_back("item-" + std::to_string(t) + "-" + std::to_string(round) + "-" +
                          std::to_string(i) + "-padding-padding");
        }
        const std::string body = json{{"items", items}}.dump();
        if (Call(*c, "POST", "/v1/filters/m/items", body).status != 200) ++failed;
        Answer checked = Call(*c, "POST", "/v1/filters/m/check", body);
        if (checked.status != 200 || checked.body.find("false") != std::string::npos) ++failed;
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_EQ(failed.load(), 0);
  const int64_t loaded = ResidentBytes(server.pid());
  // The trim runs at a 10 s tick that finds no request in progress.
  int64_t now = loaded;
  for (int i = 0; i < 250 && now - before > (40 << 20); ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    now = ResidentBytes(server.pid());
  }
  EXPECT_LT(now - before, 40 << 20)
      << "resident after the load: " << (loaded - before) / 1024
      << " KiB more than before it; 25 s later: " << (now - before) / 1024 << " KiB";
}

}  // namespace
}  // namespace redbloom::testing
