// Holds docs/openapi.json to the real redbloomd, so the document cannot
// drift: the server's route table must be exactly the document's paths and
// methods, and real answers over loopback (every success and every error
// shape of every operation) must validate against the document's schemas.
// The validation itself is tests/openapi_check.py on Debian's
// python3-jsonschema; this file produces the answers.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "http_server.h"
#include "openapi.h"
#include "redbloom/filter_config.h"
#include "redbloom/funnel.h"
#include "redbloom/status.h"
#include "redbloom/strategy.h"
#include "redis_server.h"
#include "server_process.h"
#include "test_util.h"

namespace redbloom::testing {
namespace {

using nlohmann::json;

constexpr char kToken[] = "s3cret";
const httplib::Headers kNoHeaders;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class ServerOpenApiTest : public ::testing::Test {
 protected:
  // Sends one request, checks the status the case is meant to produce, and
  // records the exchange for openapi_check.py.
  Answer Expect(int status, httplib::Client& client, const std::string& method,
                const std::string& target, const std::string& body = "",
                const httplib::Headers& headers = kNoHeaders) {
    Answer a = Call(client, method, target, body, headers);
    EXPECT_EQ(a.status, status) << method << " " << target.substr(0, 100) << "\n" << a.body;
    json h = json::object();
    for (const auto& [name, value] : a.headers) h[Lower(name)] = value;
    exchanges_.push_back({{"method", method},
                          {"target", target},
                          {"status", a.status},
                          {"headers", h},
                          {"body", a.body},
                          {"request_body", body}});
    return a;
  }

  // Records an exchange made over a raw socket (for answers a client library
  // cannot provoke, such as a body that stops arriving).
  void RecordRaw(const std::string& method, const std::string& target, const std::string& raw) {
    const size_t end = raw.find("\r\n\r\n");
    ASSERT_NE(end, std::string::npos) << raw;
    ASSERT_TRUE(raw.starts_with("HTTP/1.1 ")) << raw;
    const int status = std::stoi(raw.substr(9, 3));
    json h = json::object();
    size_t line = raw.find("\r\n") + 2;
    while (line < end) {
      const size_t next = raw.find("\r\n", line);
      const std::string header = raw.substr(line, next - line);
      const size_t colon = header.find(':');
      if (colon != std::string::npos) {
        h[Lower(header.substr(0, colon))] = header.substr(header.find_first_not_of(' ', colon + 1));
      }
      line = next + 2;
    }
    exchanges_.push_back({{"method", method},
                          {"target", target},
                          {"status", status},
                          {"headers", h},
                          {"body", raw.substr(end + 4)},
                          {"request_body", ""}});
  }

  // Runs openapi_check.py over the recorded exchanges; its output is the
  // failure message.
  void CheckAgainstDocument(const json& unexercised) {
    json routes = json::array();
    for (const server::RouteSpec& r : server::Routes()) {
      routes.push_back({{"path", std::string(r.path)}, {"methods", std::string(r.methods)}});
    }
    const std::string path = dir_.path() + "/exchanges.json";
    std::ofstream(path)
        << json{{"routes", routes}, {"exchanges", exchanges_}, {"unexercised", unexercised}}.dump(
               1, ' ', false, json::error_handler_t::replace);
    CommandResult r = RunCommand({REDBLOOM_PYTHON3, REDBLOOM_SOURCE_DIR "/tests/openapi_check.py",
                                  REDBLOOM_SOURCE_DIR "/docs/openapi.json", path});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    if (r.exit_code == 0) std::printf("%s", r.out.c_str());
  }

  TempDir dir_;
  json exchanges_ = json::array();
};

TEST_F(ServerOpenApiTest, ServesTheSourceDocument) {
  const std::string source = ReadFile(REDBLOOM_SOURCE_DIR "/docs/openapi.json");
  ASSERT_FALSE(source.empty());
  EXPECT_EQ(server::OpenApiJson(), source) << "the embedded document is stale; rebuild";
  EXPECT_TRUE(json::accept(source));

  RedbloomdProcess server("mem:");
  server.Start();
  auto client = server.Client();
  Answer a = Call(*client, "GET", "/v1/openapi.json");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, source);
  EXPECT_EQ(a.header("Content-Type"), "application/json");
}

// The document's enums are the library's tables: a strategy, encoding, kind
// or status code added to the library and not to the document would be
// refused by a client generated from it (nothing tied them but a reader).
TEST(OpenApiDocumentTest, EnumsAreTheLibrarysTables) {
  const json doc = json::parse(server::OpenApiJson());
  const json& schemas = doc.at("components").at("schemas");
  auto enum_of = [&](const char* schema) {
    std::set<std::string> values;
    for (const json& v : schemas.at(schema).at("enum")) values.insert(v.get<std::string>());
    return values;
  };
  std::set<std::string> strategies, encodings, kinds;
  for (Strategy s : Strategies()) strategies.insert(std::string(StrategyName(s)));
  for (Encoding e : AllEncodings()) encodings.insert(std::string(EncodingName(e)));
  for (FilterKind k : FilterKinds()) kinds.insert(std::string(FilterKindName(k)));
  EXPECT_EQ(enum_of("Strategy"), strategies);
  EXPECT_EQ(enum_of("Encoding"), encodings);
  EXPECT_EQ(enum_of("Kind"), kinds);
  const std::set<std::string> error_codes = enum_of("ErrorCode");
  // Every code StatusCodeName knows, to the first it does not ("unknown"):
  // a code added after kInternal is covered too.
  int codes = 0;
  for (int c = static_cast<int>(StatusCode::kInvalidArgument);; ++c) {
    const std::string name(StatusCodeName(static_cast<StatusCode>(c)));
    if (name == "unknown") break;
    EXPECT_TRUE(error_codes.contains(name)) << name << " is not in ErrorCode";
    ++codes;
  }
  EXPECT_GE(codes, static_cast<int>(StatusCode::kInternal));
  // And every reason, to the first StatusReasonName does not know.
  std::set<std::string> reasons;
  for (int r = static_cast<int>(StatusReason::kNone) + 1;; ++r) {
    const std::string name(StatusReasonName(static_cast<StatusReason>(r)));
    if (name == "unknown") break;
    reasons.insert(name);
  }
  EXPECT_GE(reasons.size(), static_cast<size_t>(StatusReason::kMappingLimit));
  EXPECT_EQ(enum_of("ErrorReason"), reasons);
}

// One server with a token and small limits on a file store answers every
// success and client error; one whose Redis is not there answers 503.
TEST_F(ServerOpenApiTest, RoutesAndRealAnswersMatchTheDocument) {
  const std::string store_dir = dir_.path() + "/store";
  RedbloomdProcess::Options o;
  o.store = "file:" + store_dir;
  o.token = kToken;
  o.config_json = R"({"max_items": 5, "max_item_bytes": 64, "max_body_bytes": 1024,
                      "filter_revalidate_ms": 0, "max_filter_bytes": 1048576,
                      "read_timeout_s": 1})";
  RedbloomdProcess server(o);
  server.Start();
  auto c = server.Client();
  auto anon = server.Client(/*auth=*/false);
  const std::string big_body = json{{"items", {std::string(2000, 'x')}}}.dump();
  const std::string six_items = R"({"items":["1","2","3","4","5","6"]})";
  const std::string long_item(65, 'i');
  const std::string too_long_target = "/v1/filters/orders/items/" + std::string(9000, 'x');
  const httplib::Headers text_plain = {{"Content-Type", "text/plain"}};

  // Operations.
  Expect(200, *c, "GET", "/healthz");
  Expect(400, *c, "GET", "/healthz", "{}");
  Expect(200, *c, "GET", "/readyz");
  Expect(400, *c, "GET", "/readyz", "{}");
  Expect(200, *c, "GET", "/metrics");
  Expect(401, *anon, "GET", "/metrics");
  Expect(400, *c, "GET", "/metrics", "{}");
  Expect(200, *c, "GET", "/v1/openapi.json");
  Expect(401, *anon, "GET", "/v1/openapi.json");
  Expect(400, *c, "GET", "/v1/openapi.json", "{}");

  // Filters, of every kind (the info schema has kind-specific fields).
  Expect(201, *c, "PUT", "/v1/filters/orders", R"({"capacity":1000,"error_rate":0.01})");
  Expect(200, *c, "PUT", "/v1/filters/orders", R"({"capacity":1e3,"error_rate":0.01})");
  Expect(409, *c, "PUT", "/v1/filters/orders", R"({"capacity":2000,"error_rate":0.01})");
  Expect(201, *c, "PUT", "/v1/filters/counts",
         R"({"capacity":1000,"error_rate":0.01,"kind":"counting","strategy":"seed"})");
  Expect(201, *c, "PUT", "/v1/filters/grows",
         R"({"capacity":100,"error_rate":0.01,"kind":"scaling","expansion":2})");
  Expect(201, *c, "PUT", "/v1/filters/recent",
         R"({"capacity":1000,"error_rate":0.01,"kind":"window","window_ms":60000,"slices":6,
             "ttl_seconds":3600})");
  Expect(201, *c, "PUT", "/v1/filters/ids",
         R"({"capacity":1000,"error_rate":0.01,"encoding":"int64"})");
  // Redisson takes 0 (as Double.MIN_VALUE), and info says 0.
  Expect(201, *c, "PUT", "/v1/filters/rz",
         R"({"capacity":10,"error_rate":0,"strategy":"redisson"})");
  Expect(400, *c, "PUT", "/v1/filters/bad", R"({"capacity":0,"error_rate":0.01})");
  Expect(400, *c, "PUT", "/v1/filters/bad", R"({"capacity":10,"error_rate":0.01,"colour":1})");
  Expect(400, *c, "PUT", "/v1/filters/bad", "{not json");
  Expect(401, *anon, "PUT", "/v1/filters/bad", R"({"capacity":10,"error_rate":0.01})");
  Expect(413, *c, "PUT", "/v1/filters/bad", big_body);
  Expect(413, *c, "PUT", "/v1/filters/huge", R"({"capacity":1e7,"error_rate":0.01})");
  Expect(415, *c, "PUT", "/v1/filters/bad", "capacity=10", text_plain);
  Expect(200, *c, "GET", "/v1/filters");
  Expect(401, *anon, "GET", "/v1/filters");
  Expect(400, *c, "GET", "/v1/filters", "{}");
  for (const char* name : {"orders", "counts", "grows", "recent", "ids", "rz"}) {
    Expect(200, *c, "GET", std::string("/v1/filters/") + name);
  }
  Expect(404, *c, "GET", "/v1/filters/missing");
  Expect(400, *c, "GET", "/v1/filters/.hidden");
  Expect(400, *c, "GET", "/v1/filters/bad%zz");
  Expect(401, *anon, "GET", "/v1/filters/orders");

  // Batches.
  Expect(200, *c, "POST", "/v1/filters/orders/items", R"({"items":["ORD-1","ORD-2"]})");
  Expect(200, *c, "POST", "/v1/filters/ids/items", R"({"items":[7,"-8"]})");
  Expect(200, *c, "POST", "/v1/filters/counts/items", R"({"items":["a","b"]})");
  Expect(200, *c, "POST", "/v1/filters/grows/items", R"({"items":["a","b","c"]})");
  Expect(200, *c, "POST", "/v1/filters/recent/items", R"({"items":["a"]})");
  Expect(200, *c, "POST", "/v1/filters/orders/check", R"({"items":["ORD-1","ORD-404"]})");
  Expect(200, *c, "POST", "/v1/filters/counts/remove", R"({"items":["a","never-added"]})");
  for (const char* route : {"items", "check", "remove"}) {
    const std::string orders = std::string("/v1/filters/orders/") + route;
    const std::string counts = std::string("/v1/filters/counts/") + route;
    Expect(404, *c, "POST", std::string("/v1/filters/missing/") + route, R"({"items":["a"]})");
    Expect(400, *c, "POST", counts, R"({"itemz":["a"]})");
    Expect(400, *c, "POST", counts, R"({"items":"a"})");
    Expect(413, *c, "POST", counts, six_items);
    Expect(413, *c, "POST", counts, big_body);
    Expect(415, *c, "POST", counts, R"({"items":["a"]})", text_plain);
    Expect(401, *anon, "POST", counts, R"({"items":["a"]})");
    Expect(405, *c, "GET", orders);
  }
  Expect(501, *c, "POST", "/v1/filters/orders/remove", R"({"items":["ORD-1"]})");
  // A body that stops arriving: 408 after read_timeout_s.
  RecordRaw("POST", "/v1/filters/orders/items",
            RawExchange(server.port(),
                        "POST /v1/filters/orders/items HTTP/1.1\r\nHost: x\r\nAuthorization: "
                        "Bearer " +
                            std::string(kToken) +
                            "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
                        /*shut_write=*/false));

  // Single items.
  Expect(200, *c, "GET", "/v1/filters/orders/items/ORD-1");
  Expect(200, *c, "GET", "/v1/filters/orders/items/ORD-404");
  Expect(200, *c, "GET", "/v1/filters/orders/items/" + EncodePathSegment("a/b c"));
  Expect(200, *c, "DELETE", "/v1/filters/counts/items/b");
  Expect(200, *c, "DELETE", "/v1/filters/counts/items/never-added");
  Expect(501, *c, "DELETE", "/v1/filters/orders/items/ORD-1");
  for (const char* method : {"GET", "DELETE"}) {
    Expect(404, *c, method, "/v1/filters/missing/items/a");
    Expect(413, *c, method, "/v1/filters/counts/items/" + long_item);
    Expect(414, *c, method, too_long_target);
    Expect(400, *c, method, "/v1/filters/counts/items/%zz");
    Expect(400, *c, method, "/v1/filters/counts/items/a", "{}");
    Expect(401, *anon, method, "/v1/filters/counts/items/a");
  }

  // A filter file that is not one: data_loss (500).
  std::ofstream(store_dir + "/corrupt.rbf") << std::string(4096, 'x');
  Expect(500, *c, "GET", "/v1/filters/corrupt");
  Expect(500, *c, "POST", "/v1/filters/corrupt/items", R"({"items":["a"]})");
  Expect(500, *c, "POST", "/v1/filters/corrupt/check", R"({"items":["a"]})");
  Expect(500, *c, "POST", "/v1/filters/corrupt/remove", R"({"items":["a"]})");
  Expect(500, *c, "GET", "/v1/filters/corrupt/items/a");
  Expect(500, *c, "DELETE", "/v1/filters/corrupt/items/a");
  Expect(500, *c, "PUT", "/v1/filters/corrupt", R"({"capacity":1000,"error_rate":0.01})");
  // Each is a store error of its own code, for the operator's alerts.
  const std::string metrics = Call(*c, "GET", "/metrics", "", kNoHeaders).body;
  EXPECT_EQ(Sample(metrics, R"(redbloomd_store_errors_total{code="data_loss"})"), 7) << metrics;
  Expect(200, *c, "DELETE", "/v1/filters/corrupt");  // unlinked unread (see unexercised below)

  // Dropping, and what is not a route.
  Expect(200, *c, "DELETE", "/v1/filters/grows");
  Expect(404, *c, "DELETE", "/v1/filters/grows");
  Expect(400, *c, "DELETE", "/v1/filters/.hidden");
  Expect(401, *anon, "DELETE", "/v1/filters/orders");
  Expect(405, *c, "PATCH", "/v1/filters/orders", R"({"capacity":1})");
  Expect(405, *c, "POST", "/healthz");
  Expect(405, *c, "DELETE", "/v1/filters");
  Expect(404, *c, "GET", "/v1/nothing");
  Expect(404, *c, "GET", "/v1/filters/orders/elsewhere");

  // No Redis on this port: every store call is 503, and so is /readyz.
  RedbloomdProcess::Options down;
  down.store = "redis://127.0.0.1:" + std::to_string(FreePort());
  down.config_json = R"({"store_connect_timeout_ms": 200})";
  RedbloomdProcess unavailable(down);
  unavailable.Start();
  auto u = unavailable.Client();
  const std::string params = R"({"capacity":1000,"error_rate":0.01})";
  Expect(503, *u, "GET", "/readyz");
  Expect(503, *u, "GET", "/v1/filters");
  Expect(503, *u, "PUT", "/v1/filters/orders", params);
  Expect(503, *u, "GET", "/v1/filters/orders");
  Expect(503, *u, "DELETE", "/v1/filters/orders");
  for (const char* route : {"items", "check", "remove"}) {
    Expect(503, *u, "POST", std::string("/v1/filters/orders/") + route, R"({"items":["a"]})");
  }
  Expect(503, *u, "GET", "/v1/filters/orders/items/a");
  Expect(503, *u, "DELETE", "/v1/filters/orders/items/a");

  // A Redis without room for the filter asked for: 507, nothing created.
  RedisServer small({"--maxmemory", "4mb", "--maxmemory-policy", "noeviction"});
  small.Start();
  RedbloomdProcess::Options full;
  full.store = small.url();
  RedbloomdProcess no_room(full);
  no_room.Start();
  auto n = no_room.Client();
  Expect(507, *n, "PUT", "/v1/filters/huge", R"({"capacity":5000000,"error_rate":0.01})");
  Expect(404, *n, "GET", "/v1/filters/huge");

  // A filter changed under redbloomd: a Redisson client re-created one with
  // another size, and another's bitmap key now holds a list. Every route on
  // them is 409, and the DELETE leaves the Java side's keys alone.
  Expect(201, *n, "PUT", "/v1/filters/theirs",
         R"({"capacity":100,"error_rate":0.01,"strategy":"redisson"})");
  small.Cli({"HSET", "{theirs}:config", "size", "959"});
  Expect(409, *n, "GET", "/v1/filters/theirs");
  Expect(409, *n, "POST", "/v1/filters/theirs/items", R"({"items":["a"]})");
  Expect(409, *n, "POST", "/v1/filters/theirs/check", R"({"items":["a"]})");
  Expect(409, *n, "GET", "/v1/filters/theirs/items/a");
  Expect(409, *n, "DELETE", "/v1/filters/theirs");
  EXPECT_EQ(small.Cli({"HGET", "{theirs}:config", "size"}), "959\n");
  Expect(201, *n, "PUT", "/v1/filters/counts",
         R"({"capacity":100,"error_rate":0.01,"kind":"counting"})");
  small.Cli({"DEL", "counts"});
  small.Cli({"RPUSH", "counts", "x"});
  Expect(409, *n, "POST", "/v1/filters/counts/remove", R"({"items":["a"]})");
  Expect(409, *n, "DELETE", "/v1/filters/counts/items/a");

  CheckAgainstDocument(json::array({
      {{"operation", "*"},
       {"status", "507"},
       {"why",
        "adds and removes (and, for a user without EVAL, checks and info) meet Redis's own OOM "
        "only once the server is over maxmemory, which no create lets it reach; redis_cli_test "
        "and server_redis_test fill a server for that, and PUT's 507 here checks the body"}},
      {{"operation", "*"},
       {"status", "504"},
       {"why",
        "needs a store that accepts a command and never answers; server_redis_test produces it "
        "with a stopped redis-server, and its body is the Error schema checked here for 503"}},
      {{"operation", "GET /readyz"},
       {"status", "500"},
       {"why", "a Ping that fails with data_loss or internal: no store does that on demand"}},
      {{"operation", "GET /v1/filters"},
       {"status", "500"},
       {"why", "listing reads names only, so a corrupt filter does not fail it"}},
      {{"operation", "DELETE /v1/filters/{name}"},
       {"status", "500"},
       {"why", "dropping a corrupt filter succeeds: it unlinks the file without reading it"}},
      {{"operation", "PUT /v1/filters/{name}"},
       {"status", "408"},
       {"why", "every body is read by one reader; POST .../items checks its 408 here"}},
      {{"operation", "POST /v1/filters/{name}/check"},
       {"status", "408"},
       {"why", "every body is read by one reader; POST .../items checks its 408 here"}},
      {{"operation", "POST /v1/filters/{name}/remove"},
       {"status", "408"},
       {"why", "every body is read by one reader; POST .../items checks its 408 here"}},
      {{"operation", "PUT /v1/filters/{name}"},
       {"status", "501"},
       {"why", "every store supports every kind today; a store without one answers 501"}},
  }));
}

}  // namespace
}  // namespace redbloom::testing
