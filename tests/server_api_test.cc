// End-to-end tests of redbloomd's API over real HTTP on a loopback port: the
// real binary, on the file store and on a real redis-server. Every route,
// every error answer, auth, limits, malformed and truncated bodies.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/filter_config.h"
#include "redbloom/store.h"
#include "redis_server.h"
#include "server_process.h"
#include "test_util.h"

namespace redbloom::testing {
namespace {

using nlohmann::json;

enum class StoreKind { kFile, kRedis };

std::string Items(const std::vector<std::string>& items) { return json{{"items", items}}.dump(); }

std::vector<std::string> Numbered(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

size_t CountTrue(const json& array) {
  return static_cast<size_t>(std::count(array.begin(), array.end(), true));
}

class ServerApiTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  static void TearDownTestSuite() { redis_.reset(); }

  void SetUp() override {
    if (GetParam() == StoreKind::kRedis) {
      if (redis_ == nullptr) {
        redis_ = std::make_unique<RedisServer>();
        redis_->Start();
      }
      redis_->Cli({"FLUSHALL"});
      store_url_ = redis_->url();
    } else {
      store_url_ = "file:" + dir_.path() + "/store";
    }
  }

  void StartServer(const std::string& config_json = "", const std::string& token = "") {
    RedbloomdProcess::Options o;
    o.store = store_url_;
    o.token = token;
    o.config_json = config_json;
    server_ = std::make_unique<RedbloomdProcess>(o);
    server_->Start();
    client_ = server_->Client();
  }

  Answer Do(const std::string& method, const std::string& path, const std::string& body = "",
            httplib::Headers headers = {}) {
    return Call(*client_, method, path, body, std::move(headers));
  }

  void Create(const std::string& name, uint64_t capacity = 10000, double error_rate = 0.01,
              const std::string& encoding = "utf8") {
    Answer a =
        Do("PUT", "/v1/filters/" + name,
           json{{"capacity", capacity}, {"error_rate", error_rate}, {"encoding", encoding}}.dump());
    ASSERT_EQ(a.status, 201) << a.body;
  }

  static std::unique_ptr<RedisServer> redis_;
  TempDir dir_;
  std::string store_url_;
  std::unique_ptr<RedbloomdProcess> server_;
  std::unique_ptr<httplib::Client> client_;
};

std::unique_ptr<RedisServer> ServerApiTest::redis_;

TEST_P(ServerApiTest, PutCreatesThenIdenticalIsOkThenOtherParametersConflict) {
  StartServer();
  const std::string body = R"({"capacity":1000,"error_rate":0.01,"strategy":"seed"})";
  Answer created = Do("PUT", "/v1/filters/orders", body);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.header("Location"), "/v1/filters/orders");
  // The geometry is the library's, for the same options.
  auto expected = MakeConfig({.capacity = 1000, .error_rate = 0.01, .strategy = Strategy::kSeed});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(created.json["bits"], expected->geometry.bits);
  EXPECT_EQ(created.json["hashes"], expected->geometry.hashes);
  EXPECT_EQ(created.json["strategy"], "seed");

  Answer again = Do("PUT", "/v1/filters/orders", body);
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json, created.json);

  Answer other = Do("PUT", "/v1/filters/orders", R"({"capacity":2000,"error_rate":0.01})");
  EXPECT_EQ(other.status, 409) << other.body;
  EXPECT_EQ(other.error(), "conflict");
  EXPECT_NE(other.json["message"].get<std::string>().find("capacity=1000"), std::string::npos);

  // The conflict changed nothing.
  EXPECT_EQ(Do("GET", "/v1/filters/orders").json["capacity"], 1000);

  // The TTL too: 200 would tell the client its filter expires when it asked.
  Answer ttl = Do("PUT", "/v1/filters/orders",
                  R"({"capacity":1000,"error_rate":0.01,"strategy":"seed","ttl_seconds":9999})");
  EXPECT_EQ(ttl.status, 409) << ttl.body;
  EXPECT_EQ(ttl.error(), "conflict");
  EXPECT_NE(ttl.json["message"].get<std::string>().find("exists with no TTL"), std::string::npos)
      << ttl.body;
  EXPECT_EQ(Do("GET", "/v1/filters/orders").json["ttl_seconds"], 0);
}

TEST_P(ServerApiTest, PutRejectsInvalidParametersAndCreatesNothing) {
  StartServer();
  const std::vector<std::string> bad = {
      "",
      "   ",
      "{",
      "[]",
      R"({"capacity":0,"error_rate":0.01})",
      R"({"capacity":-5,"error_rate":0.01})",
      R"({"capacity":1.5,"error_rate":0.01})",
      R"({"capacity":"1000","error_rate":0.01})",
      R"({"capacity":1000,"error_rate":0})",
      R"({"capacity":1000,"error_rate":1})",
      R"({"capacity":1000,"error_rate":1.5})",
      R"({"capacity":1000,"error_rate":"0.01"})",
      R"({"error_rate":0.01})",
      R"({"capacity":1000})",
      R"({"capacity":1000,"error_rate":0.01,"strategy":"nope"})",
      R"({"capacity":1000,"error_rate":0.01,"encoding":"latin1"})",
      R"({"capacity":1000,"error_rate":0.01,"kind":"cuckoo"})",
      R"({"capacity":1000,"error_rate":0.01,"colour":"red"})",
      // A field twice (nlohmann would keep the last).
      R"({"capacity":1000,"error_rate":0.01,"capacity":2000})",
      R"({"capacity":1000,"error_rate":0.01,"kind":"plain","kind":"counting"})",
      // Another kind's field, even at its default (2 was ignored on a
      // counting filter, and window_ms 0 on a plain one).
      R"({"capacity":1000,"error_rate":0.01,"kind":"counting","expansion":2})",
      R"({"expansion":2,"capacity":1000,"error_rate":0.01})",
      R"({"capacity":1000,"error_rate":0.01,"window_ms":0})",
      R"({"capacity":1000,"error_rate":0.01,"kind":"scaling","slices":4})",
  };
  for (const std::string& body : bad) {
    Answer a = Do("PUT", "/v1/filters/orders", body);
    EXPECT_EQ(a.status, 400) << body << " -> " << a.body;
    EXPECT_EQ(a.error(), "invalid_argument") << body;
    EXPECT_FALSE(a.json["message"].get<std::string>().empty()) << body;
  }
  EXPECT_EQ(Do("GET", "/v1/filters/orders").status, 404);
  // A number past 2^64 is too large, whichever field holds it, said with the
  // field's own bound (not 2^64: a capacity must be below 2^63, a TTL is at
  // most 100 years).
  for (const auto& [field, bound] : std::vector<std::pair<std::string, std::string>>{
           {"capacity", "below 2^63"}, {"ttl_seconds", "at most 3153600000 (100 years)"}}) {
    Answer a =
        Do("PUT", "/v1/filters/orders",
           field == "capacity" ? R"({"capacity":1e20,"error_rate":0.01})"
                               : R"({"capacity":1000,"error_rate":0.01,"ttl_seconds":1e20})");
    EXPECT_EQ(a.status, 400) << a.body;
    EXPECT_NE(a.json.value("message", "").find(field + " 1e+20 is too large: it must be " + bound),
              std::string::npos)
        << a.body;
  }
  // 1e6 is a whole number written as a float: accepted, in every whole
  // number field (ttl_seconds took 3600 but not 3.6e3).
  EXPECT_EQ(Do("PUT", "/v1/filters/orders", R"({"capacity":1e6,"error_rate":0.01})").status, 201);
  EXPECT_EQ(
      Do("PUT", "/v1/filters/ttl", R"({"capacity":1e3,"error_rate":0.01,"ttl_seconds":3.6e3})")
          .status,
      201);
}

// nlohmann takes a NUL byte for the end of its input: a PUT body with one
// before an unknown field was created (201), the field never read.
TEST_P(ServerApiTest, ANulByteInAPutBodyIs400) {
  StartServer();
  const std::string body =
      std::string(R"({"capacity":10,"error_rate":0.01})") + '\0' + R"({"bogus":1})";
  Answer put = Do("PUT", "/v1/filters/nul", body);
  EXPECT_EQ(put.status, 400) << put.body;
  EXPECT_NE(put.body.find("malformed JSON at byte 33: a NUL byte"), std::string::npos) << put.body;
  EXPECT_EQ(Do("GET", "/v1/filters/nul").status, 404);
}

// Regression: nlohmann copies nested values recursively, and a PUT body
// nested 50000 deep overflowed a worker's stack (SIGSEGV: the service gone).
TEST_P(ServerApiTest, DeeplyNestedPutBodyIs400AndTheServiceAnswersAfterwards) {
  StartServer();
  const auto nested = [](int depth) {
    return R"({"capacity":)" + std::string(depth, '[') + std::string(depth, ']') +
           R"(,"error_rate":0.01})";
  };
  Answer deep = Do("PUT", "/v1/filters/orders", nested(50000));
  EXPECT_EQ(deep.status, 400) << deep.body;
  EXPECT_EQ(deep.error(), "invalid_argument") << deep.body;
  EXPECT_NE(deep.body.find("nested deeper than 32 levels"), std::string::npos) << deep.body;
  // 32 levels (the object and 31 arrays) are parsed, and refused for what they say.
  Answer at_limit = Do("PUT", "/v1/filters/orders", nested(31));
  EXPECT_EQ(at_limit.status, 400) << at_limit.body;
  EXPECT_EQ(at_limit.json["message"], "capacity must be a number") << at_limit.body;
  EXPECT_EQ(Do("GET", "/healthz").status, 200);
  EXPECT_EQ(Do("GET", "/v1/filters/orders").status, 404);
  Create("orders");
}

// A PUT body of many fields is refused once it is past any honest body,
// not after parsing it all: an ordered JSON object inserts a key in linear
// time, so 80,000 unknown fields (870 KB) held a worker and a core for
// 9.5 s, and 80,000 empty objects in an array 1.5 s, before "unknown field".
TEST_P(ServerApiTest, APutBodyOfManyFieldsIsRefusedUnparsed) {
  StartServer();
  std::string fields = R"({"capacity":1000,"error_rate":0.01)";
  for (int i = 0; i < 80000; ++i) fields += ",\"k" + std::to_string(i) + "\":1";
  fields += "}";
  std::string objects = R"({"capacity":1000,"error_rate":0.01,"x":[{})";
  for (int i = 1; i < 80000; ++i) objects += ",{}";
  objects += "]}";
  for (const std::string* body : {&fields, &objects}) {
    Answer a = Do("PUT", "/v1/filters/orders", *body);
    EXPECT_EQ(a.status, 400) << a.body;
    EXPECT_NE(a.body.find("more than 4096 JSON values"), std::string::npos) << a.body;
  }
  // A body near the limit is parsed, and refused for what it says.
  std::string some = R"({"capacity":1000,"error_rate":0.01)";
  for (int i = 0; i < 1000; ++i) some += ",\"k" + std::to_string(i) + "\":1";
  some += "}";
  Answer a = Do("PUT", "/v1/filters/orders", some);
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_EQ(a.json["message"].get<std::string>().rfind("unknown field \"k0\"", 0), 0u) << a.body;
  EXPECT_EQ(Do("GET", "/v1/filters/orders").status, 404);
}

TEST_P(ServerApiTest, GetFilterReportsTheCliInfoFields) {
  StartServer();
  Create("orders", 5000, 0.001);
  Answer added = Do("POST", "/v1/filters/orders/items", Items(Numbered("ORD-", 300)));
  ASSERT_EQ(added.status, 200) << added.body;
  Answer info = Do("GET", "/v1/filters/orders");
  ASSERT_EQ(info.status, 200) << info.body;
  std::vector<std::string> keys;
  const auto ordered = nlohmann::ordered_json::parse(info.body);
  for (const auto& [k, v] : ordered.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"name",
                                            "store",
                                            "kind",
                                            "strategy",
                                            "encoding",
                                            "capacity",
                                            "error_rate",
                                            "bits",
                                            "hashes",
                                            "capped",
                                            "geometry",
                                            "ttl_seconds",
                                            "shards",
                                            "parts",
                                            "memory_bytes",
                                            "bits_set",
                                            "bits_set_method",
                                            "items_added",
                                            "approximate_items",
                                            "fill_ratio",
                                            "current_fpp"}));
  EXPECT_EQ(info.json["name"], "orders");
  EXPECT_EQ(info.json["error_rate"], 0.001);
  EXPECT_EQ(info.json["items_added"], CountTrue(added.json["added"]));
  const double bits = info.json["bits"].get<double>();
  const double bits_set = info.json["bits_set"].get<double>();
  EXPECT_GT(bits_set, 0);
  EXPECT_DOUBLE_EQ(info.json["fill_ratio"].get<double>(), bits_set / bits);
  EXPECT_NEAR(info.json["approximate_items"].get<double>(), 300, 30);
  // The same view through the library.
  auto store = Store::Open(store_url_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto filter = BloomFilter::Open(**store, "orders");
  ASSERT_TRUE(filter.ok());
  auto lib = (*filter)->Info();
  ASSERT_TRUE(lib.ok());
  EXPECT_EQ(info.json["bits_set"], lib->bits_set);
  EXPECT_EQ(info.json["store"], (*store)->url());
#ifdef REDBLOOM_CLI_PATH
  // And byte for byte what `redbloom info --json` prints.
  CommandResult cli =
      RunCommand({REDBLOOM_CLI_PATH, "--store", store_url_, "info", "--json", "orders"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(json::parse(cli.out), info.json);
#endif
}

TEST_P(ServerApiTest, FilterKindsThroughTheApi) {
  StartServer();
  Answer counting =
      Do("PUT", "/v1/filters/tokens", R"({"capacity":1000,"error_rate":0.01,"kind":"counting"})");
  ASSERT_EQ(counting.status, 201) << counting.body;
  EXPECT_EQ(counting.json["kind"], "counting");
  ASSERT_EQ(Do("POST", "/v1/filters/tokens/items", Items({"t1", "t2", "t3"})).status, 200);
  Answer removed = Do("POST", "/v1/filters/tokens/remove", Items({"t1", "never"}));
  ASSERT_EQ(removed.status, 200) << removed.body;
  EXPECT_EQ(removed.json, json::parse(R"({"removed":[true,false]})"));
  // One item by URL, as the issue names it.
  Answer deleted = Do("DELETE", "/v1/filters/tokens/items/t2");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.json, json::parse(R"({"removed":true})"));
  EXPECT_EQ(Do("DELETE", "/v1/filters/tokens/items/never").json,
            json::parse(R"({"removed":false})"));
  EXPECT_EQ(Do("POST", "/v1/filters/tokens/check", Items({"t1", "t2", "t3"})).json["present"],
            json::parse("[false,false,true]"));
  EXPECT_EQ(Do("DELETE", "/v1/filters/missing/items/x").status, 404);

  Create("plain");
  for (const Answer& not_counting : {Do("POST", "/v1/filters/plain/remove", Items({"x"})),
                                     Do("DELETE", "/v1/filters/plain/items/x")}) {
    EXPECT_EQ(not_counting.status, 501) << not_counting.body;
    EXPECT_EQ(not_counting.error(), "unimplemented");
  }

  Answer scaling = Do("PUT", "/v1/filters/grow",
                      R"({"capacity":100,"error_rate":0.01,"kind":"scaling","expansion":4})");
  ASSERT_EQ(scaling.status, 201) << scaling.body;
  EXPECT_EQ(scaling.json["expansion"], 4);
  ASSERT_EQ(Do("POST", "/v1/filters/grow/items", Items(Numbered("g", 500))).status, 200);
  Answer grown = Do("POST", "/v1/filters/grow/check", Items(Numbered("g", 500)));
  EXPECT_EQ(CountTrue(grown.json["present"]), 500u) << grown.body.substr(0, 200);
  Answer grow_info = Do("GET", "/v1/filters/grow");
  EXPECT_GT(grow_info.json["parts"].get<int>(), 1);
  EXPECT_NEAR(grow_info.json["approximate_items"].get<double>(), 500, 50) << "cardinality";

  Answer window = Do("PUT", "/v1/filters/recent",
                     R"({"capacity":100,"error_rate":0.01,"kind":"window","window_ms":60000,)"
                     R"("slices":4,"ttl_seconds":3600})");
  ASSERT_EQ(window.status, 201) << window.body;
  EXPECT_EQ(window.json["window_ms"], 60000);
  EXPECT_EQ(window.json["slices"], 4);
  EXPECT_EQ(window.json["ttl_seconds"], 3600);
  ASSERT_EQ(Do("POST", "/v1/filters/recent/items", Items({"seen"})).status, 200);
  EXPECT_EQ(Do("GET", "/v1/filters/recent/items/seen").json["present"], true);
  EXPECT_EQ(
      Do("PUT", "/v1/filters/bad", R"({"capacity":100,"error_rate":0.01,"kind":"window"})").status,
      400);
  EXPECT_EQ(
      Do("PUT", "/v1/filters/bad", R"({"capacity":100,"error_rate":0.01,"slices":-1})").status,
      400);
}

TEST_P(ServerApiTest, ListAndDelete) {
  StartServer();
  EXPECT_EQ(Do("GET", "/v1/filters").json, json::parse(R"({"filters":[]})"));
  for (const char* name : {"b", "a", "c"}) Create(name);
  Answer list = Do("GET", "/v1/filters");
  ASSERT_EQ(list.status, 200);
  std::set<std::string> names(list.json["filters"].begin(), list.json["filters"].end());
  EXPECT_EQ(names, (std::set<std::string>{"a", "b", "c"}));

  Answer del = Do("DELETE", "/v1/filters/b");
  EXPECT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(del.json, json::parse(R"({"name":"b","deleted":true})"));
  for (const auto& [method, path, body] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"GET", "/v1/filters/b", ""},
           {"DELETE", "/v1/filters/b", ""},
           {"POST", "/v1/filters/b/items", Items({"x"})},
           {"POST", "/v1/filters/b/check", Items({"x"})},
           {"GET", "/v1/filters/b/items/x", ""}}) {
    Answer a = Do(method, path, body);
    EXPECT_EQ(a.status, 404) << method << " " << path << " -> " << a.body;
    EXPECT_EQ(a.error(), "not_found");
  }
  list = Do("GET", "/v1/filters");
  names = std::set<std::string>(list.json["filters"].begin(), list.json["filters"].end());
  EXPECT_EQ(names, (std::set<std::string>{"a", "c"}));
}

TEST_P(ServerApiTest, AddAndCheckBatchesHaveNoFalseNegatives) {
  StartServer();
  Create("orders", 10000, 0.01);
  const auto items = Numbered("ORD-", 2000);
  Answer first = Do("POST", "/v1/filters/orders/items", Items(items));
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_EQ(first.json["added"].size(), items.size());
  // An item is "not new" only if all its bits were already set: rare at 20% fill.
  EXPECT_GE(CountTrue(first.json["added"]), items.size() * 98 / 100);
  Answer second = Do("POST", "/v1/filters/orders/items", Items(items));
  EXPECT_EQ(CountTrue(second.json["added"]), 0u) << second.body.substr(0, 200);

  Answer present = Do("POST", "/v1/filters/orders/check", Items(items));
  ASSERT_EQ(present.status, 200);
  ASSERT_EQ(present.json["present"].size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_EQ(present.json["present"][i], true) << "false negative for " << items[i];
  }
  // At 2000 of 10000 items, the expected FPP is about 0.004%; 2% is a loose bound.
  Answer absent = Do("POST", "/v1/filters/orders/check", Items(Numbered("NEVER-", 2000)));
  EXPECT_LE(CountTrue(absent.json["present"]), 40u);
  // Empty batches are fine.
  EXPECT_EQ(Do("POST", "/v1/filters/orders/check", R"({"items":[]})").json,
            json::parse(R"({"present":[]})"));
}

TEST_P(ServerApiTest, SingleItemPathIsPercentDecoded) {
  StartServer();
  Create("urls");
  const std::vector<std::string> items = {"a/b",       "with space", "100%",
                                          "q?x=1&y=2", "hash#frag",  "plus+sign",
                                          "€uro",      "",           "https://example.com/p?q=1"};
  ASSERT_EQ(Do("POST", "/v1/filters/urls/items", Items(items)).status, 200);
  for (const std::string& item : items) {
    Answer a = Do("GET", "/v1/filters/urls/items/" + EncodePathSegment(item));
    EXPECT_EQ(a.status, 200) << item << " -> " << a.body;
    EXPECT_EQ(a.json, json::parse(R"({"present":true})")) << item;
  }
  // An unencoded '/' after items/ is part of the item.
  EXPECT_EQ(Do("GET", "/v1/filters/urls/items/a/b").json["present"], true);
  EXPECT_EQ(Do("GET", "/v1/filters/urls/items/a%2Fc").json["present"], false);
  // '+' is a plus in a path, not a space.
  EXPECT_EQ(Do("GET", "/v1/filters/urls/items/with+space").json["present"], false);
  // An unencoded '?' would check the item before it ("q" for "q?x=1&y=2"):
  // refused, on GET and DELETE alike, naming the escape.
  for (const char* method : {"GET", "DELETE"}) {
    Answer q = Do(method, "/v1/filters/urls/items/q?x=1&y=2");
    EXPECT_EQ(q.status, 400) << method << " " << q.body;
    EXPECT_NE(q.body.find("%3F"), std::string::npos) << q.body;
  }
  // HEAD answers like GET, without a body.
  Answer head = Do("HEAD", "/v1/filters/urls/items/a%2Fb");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
}

// Regression: httplib matches its handlers' patterns against the decoded path,
// and ".*" stops at a decoded LF or CR, so these items were 404 "no such route".
TEST_P(ServerApiTest, ItemsWithLineBreaksWorkOnSingleItemPaths) {
  StartServer();
  Answer counting =
      Do("PUT", "/v1/filters/lines", R"({"capacity":1000,"error_rate":0.01,"kind":"counting"})");
  ASSERT_EQ(counting.status, 201) << counting.body;
  const std::vector<std::string> items = {"line1\nline2", "cr\rhere", "crlf\r\n", "\n"};
  ASSERT_EQ(Do("POST", "/v1/filters/lines/items", Items(items)).status, 200);
  for (const std::string& item : items) {
    const std::string path = "/v1/filters/lines/items/" + EncodePathSegment(item);
    Answer get = Do("GET", path);
    EXPECT_EQ(get.status, 200) << path << " -> " << get.body;
    EXPECT_EQ(get.json, json::parse(R"({"present":true})")) << path;
    EXPECT_EQ(Do("HEAD", path).status, 200) << path;
    Answer removed = Do("DELETE", path);
    EXPECT_EQ(removed.status, 200) << path << " -> " << removed.body;
    EXPECT_EQ(removed.json, json::parse(R"({"removed":true})")) << path;
    // Now absent: the filter's own answer, not a routing error.
    EXPECT_EQ(Do("GET", path).json, json::parse(R"({"present":false})")) << path;
    EXPECT_EQ(Do("DELETE", path).json, json::parse(R"({"removed":false})")) << path;
  }
  // A name with a line break is an invalid name, like any other.
  for (const char* path : {"/v1/filters/a%0Ab", "/v1/filters/a%0Db/items/x"}) {
    for (const std::string method : {"GET", "HEAD", "DELETE"}) {
      Answer a = Do(method, path);
      EXPECT_EQ(a.status, 400) << method << " " << path << " -> " << a.body;
      if (method != "HEAD") {
        EXPECT_EQ(a.error(), "invalid_argument") << method << " " << path;
      }
    }
  }
}

TEST_P(ServerApiTest, IntegerFiltersTakeJsonIntegersAndDecimalStrings) {
  StartServer();
  Create("ids", 1000, 0.01, "int64");
  Create("small", 1000, 0.01, "int32");
  Answer added = Do("POST", "/v1/filters/ids/items", R"({"items":[1,"2",-3,9223372036854775807]})");
  ASSERT_EQ(added.status, 200) << added.body;
  Answer check = Do("POST", "/v1/filters/ids/check",
                    R"({"items":["1",2,"-3","9223372036854775807",-9223372036854775808]})");
  ASSERT_EQ(check.status, 200) << check.body;
  EXPECT_EQ(check.json["present"], json::parse("[true,true,true,true,false]"));
  EXPECT_EQ(Do("GET", "/v1/filters/ids/items/-3").json["present"], true);

  for (const char* body : {R"({"items":[1.5]})", R"({"items":["abc"]})", R"({"items":[1e3]})",
                           R"({"items":["9223372036854775808"]})"}) {
    Answer a = Do("POST", "/v1/filters/ids/items", body);
    EXPECT_EQ(a.status, 400) << body << " -> " << a.body;
  }
  EXPECT_EQ(Do("POST", "/v1/filters/small/items", R"({"items":[2147483648]})").status, 400);
  EXPECT_EQ(Do("GET", "/v1/filters/ids/items/abc").status, 400);
  // A string filter does not guess what a number means.
  Create("names");
  Answer a = Do("POST", "/v1/filters/names/items", R"({"items":[1]})");
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.json["message"].get<std::string>().find("string"), std::string::npos) << a.body;
}

TEST_P(ServerApiTest, RoutingErrorsAreJson) {
  StartServer();
  Create("orders");
  struct Case {
    std::string method, path, body;
    int status;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"GET", "/", "", 404, "not_found"},
      {"GET", "/v1", "", 404, "not_found"},
      {"GET", "/v1/filters/", "", 404, "not_found"},
      {"GET", "/v1/filters/orders/other", "", 404, "not_found"},
      {"GET", "/v2/filters", "", 404, "not_found"},
      {"PATCH", "/v1/filters/orders", "", 405, "method_not_allowed"},
      {"POST", "/v1/filters/orders", "{}", 405, "method_not_allowed"},
      {"DELETE", "/v1/filters", "", 405, "method_not_allowed"},
      {"GET", "/v1/filters/orders/items", "", 405, "method_not_allowed"},
      {"PUT", "/v1/filters/orders/check", "{}", 405, "method_not_allowed"},
      {"POST", "/healthz", "{}", 405, "method_not_allowed"},
      {"OPTIONS", "/v1/filters", "", 405, "method_not_allowed"},
      {"GET", "/v1/filters/.hidden", "", 400, "invalid_argument"},
      {"GET", "/v1/filters/a:meta", "", 400, "invalid_argument"},
      {"GET", "/v1/filters/a%2Fb", "", 400, "invalid_argument"},
      {"GET", "/v1/filters/a%20b", "", 400, "invalid_argument"},
      {"GET", "/v1/filters/" + std::string(201, 'n'), "", 400, "invalid_argument"},
      {"GET", "/v1/filters/orders/items/%zz", "", 400, "invalid_argument"},
      {"GET", "/v1/filters/orders/items/%E2", "", 400, "invalid_argument"},  // not UTF-8
      {"GET", "/v1/filters/orders", "{}", 400, "invalid_argument"},          // body on GET
      {"DELETE", "/v1/filters/orders", "{}", 400, "invalid_argument"},
  };
  for (const Case& c : cases) {
    Answer a = Do(c.method, c.path, c.body);
    EXPECT_EQ(a.status, c.status) << c.method << " " << c.path << " -> " << a.body;
    EXPECT_EQ(a.error(), c.error) << c.method << " " << c.path << " -> " << a.body;
    if (c.method != "HEAD") {
      EXPECT_FALSE(a.json["message"].get<std::string>().empty()) << c.method << " " << c.path;
    }
    if (c.status == 405) {
      EXPECT_FALSE(a.header("Allow").empty()) << c.path;
    }
  }
  EXPECT_EQ(Do("PATCH", "/v1/filters/orders").header("Allow"), "GET, HEAD, PUT, DELETE");
  // The filter survived all of it.
  EXPECT_EQ(Do("GET", "/v1/filters/orders").status, 200);
}

TEST_P(ServerApiTest, MalformedBodiesAre400AndAddNothing) {
  StartServer();
  Create("orders");
  const std::vector<std::string> bad = {
      "",
      R"({"items":["a")",
      R"({"items":"a"})",
      R"({"items":[true]})",
      R"({"items":[null]})",
      R"({"items":[["a"]]})",
      R"({"items":["a",]})",
      R"({"item":["a"]})",
      R"({})",
      R"(["a"])",
      R"({"items":["a"]} trailing)",
      R"({"items":["a"],"items":["b"]})",
      "{\"items\":[\"a\xff\"]}",
      "{\"items\":[\"a\x01\"]}",
      R"({"items":["\ud800"]})",
      R"({'items':['a']})",
  };
  for (const std::string& body : bad) {
    for (const char* route : {"/items", "/check"}) {
      Answer a = Do("POST", std::string("/v1/filters/orders") + route, body);
      EXPECT_EQ(a.status, 400) << route << " " << body << " -> " << a.body;
      EXPECT_EQ(a.error(), "invalid_argument") << body;
    }
  }
  // One bad item fails the whole batch before anything is written.
  EXPECT_EQ(Do("POST", "/v1/filters/orders/items", R"({"items":["good","a",1]})").status, 400);
  EXPECT_EQ(Do("GET", "/v1/filters/orders").json["bits_set"], 0);
  // Other media types and encodings are refused before the body is read.
  Answer text = Do("POST", "/v1/filters/orders/items", Items({"a"}),
                   {{"Content-Type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(text.status, 415) << text.body;
  EXPECT_EQ(text.error(), "unsupported_media_type");
  Answer gz = Do("POST", "/v1/filters/orders/items", Items({"a"}), {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(gz.status, 415) << gz.body;
  EXPECT_EQ(Do("POST", "/v1/filters/orders/items", Items({"a"}),
               {{"Content-Type", "application/json; charset=utf-8"}})
                .status,
            200);
  EXPECT_EQ(Do("POST", "/v1/filters/orders/items", Items({"b"}),
               {{"Content-Type", "application/merge-patch+json"}})
                .status,
            200);
}

// JSON that ends early is named "truncated" (400), for the items and for PUT.
TEST_P(ServerApiTest, TruncatedJsonSaysTruncated) {
  StartServer();
  Answer put = Do("PUT", "/v1/filters/orders", R"({"capacity":1000,"error_rate":0.01)");
  EXPECT_EQ(put.status, 400) << put.body;
  EXPECT_NE(put.json["message"].get<std::string>().find("truncated JSON"), std::string::npos)
      << put.body;
  Create("orders");
  Answer add = Do("POST", "/v1/filters/orders/items", R"({"items":["a","b")");
  EXPECT_EQ(add.status, 400) << add.body;
  EXPECT_NE(add.json["message"].get<std::string>().find("truncated JSON"), std::string::npos)
      << add.body;
}

TEST_P(ServerApiTest, LimitsAnswer413) {
  StartServer(R"({"max_body_bytes":2048,"max_items":10,"max_item_bytes":16})");
  Create("orders");
  EXPECT_EQ(Do("POST", "/v1/filters/orders/items", Items(Numbered("i", 10))).status, 200);
  Answer many = Do("POST", "/v1/filters/orders/items", Items(Numbered("i", 11)));
  EXPECT_EQ(many.status, 413) << many.body;
  EXPECT_EQ(many.error(), "too_large");
  EXPECT_EQ(Do("POST", "/v1/filters/orders/check", Items({std::string(16, 'x')})).status, 200);
  Answer longer = Do("POST", "/v1/filters/orders/check", Items({std::string(17, 'x')}));
  EXPECT_EQ(longer.status, 413) << longer.body;
  EXPECT_EQ(Do("GET", "/v1/filters/orders/items/" + std::string(17, 'x')).status, 413);
  Answer big = Do("POST", "/v1/filters/orders/check",
                  Items({std::string(2100, 'x')}));  // body over 2048 bytes
  EXPECT_EQ(big.status, 413) << big.body;
  EXPECT_EQ(big.header("Connection"), "close");
  // The limit is the largest body served: 2048 bytes are, 2049 are not.
  const std::string small = Items({"edge"});
  ASSERT_LT(small.size(), 2048u);
  const std::string at_limit = small + std::string(2048 - small.size(), ' ');
  Answer at = Do("POST", "/v1/filters/orders/items", at_limit);
  EXPECT_EQ(at.status, 200) << at.body;
  EXPECT_EQ(Do("POST", "/v1/filters/orders/items", at_limit + " ").status, 413);
  // A chunked body cannot dodge the limit.
  const std::string chunk(3000, ' ');
  char size_hex[16];
  std::snprintf(size_hex, sizeof(size_hex), "%zx", chunk.size());
  const std::string raw = RawExchange(
      server_->port(),
      "POST /v1/filters/orders/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
          std::string(size_hex) + "\r\n" + chunk + "\r\n0\r\n\r\n",
      /*shut_write=*/false, std::chrono::seconds(3));
  EXPECT_TRUE(raw.starts_with("HTTP/1.1 413")) << raw;
  EXPECT_NE(raw.find("too_large"), std::string::npos) << raw;
  // A chunked body under the limit works.
  const std::string ok_body = Items({"chunked"});
  std::snprintf(size_hex, sizeof(size_hex), "%zx", ok_body.size());
  const std::string ok = RawExchange(
      server_->port(),
      "POST /v1/filters/orders/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n" +
          std::string(size_hex) + "\r\n" + ok_body + "\r\n0\r\n\r\n",
      false, std::chrono::seconds(3));
  EXPECT_TRUE(ok.starts_with("HTTP/1.1 200")) << ok;
  EXPECT_EQ(Do("GET", "/v1/filters/orders/items/chunked").json["present"], true);
  // An oversized request is the client's doing, not a store error.
  const std::string metrics = Do("GET", "/metrics").body;
  EXPECT_EQ(Sample(metrics, R"(redbloomd_store_errors_total{code="resource_exhausted"})"), 0)
      << metrics;
}

TEST_P(ServerApiTest, TruncatedBodiesAreRejectedAndAddNothing) {
  StartServer(R"({"read_timeout_s":1})");
  Create("orders");
  const std::string body = Items({"truncated-item", "another"});
  const std::string head =
      "POST /v1/filters/orders/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size() + 100) + "\r\n\r\n";
  // The client sends less than Content-Length and closes its side.
  const std::string closed = RawExchange(server_->port(), head + body, /*shut_write=*/true);
  EXPECT_TRUE(closed.empty() || closed.starts_with("HTTP/1.1 400")) << closed;
  // The client sends less and waits: the read times out (1 s) with a 408
  // that names the limit.
  const std::string waited =
      RawExchange(server_->port(), head + body, /*shut_write=*/false, std::chrono::seconds(4));
  EXPECT_TRUE(waited.starts_with("HTTP/1.1 408")) << waited;
  EXPECT_NE(waited.find("\"request_timeout\""), std::string::npos) << waited;
  EXPECT_NE(waited.find("read_timeout_s"), std::string::npos) << waited;
  // Nothing was added, and the server is fine.
  Answer check = Do("POST", "/v1/filters/orders/check", body);
  ASSERT_EQ(check.status, 200) << check.body;
  EXPECT_EQ(check.json["present"], json::parse("[false,false]"));
  EXPECT_EQ(Do("GET", "/healthz").status, 200);
}

// Regression: a request whose body could end in two places was served, so a
// proxy in front that framed it the other way could smuggle a request in it.
TEST_P(ServerApiTest, AmbiguousBodyFramingIs400AndClosesTheConnection) {
  StartServer();
  Create("orders");
  const std::string body = Items({"smuggled"});
  char size_hex[16];
  std::snprintf(size_hex, sizeof(size_hex), "%zx", body.size());
  const std::string chunked = std::string(size_hex) + "\r\n" + body + "\r\n0\r\n\r\n";
  const std::string head =
      "POST /v1/filters/orders/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  const std::string length = "Content-Length: " + std::to_string(body.size()) + "\r\n";
  const std::vector<std::string> ambiguous = {
      head + length + "Content-Length: 1\r\n\r\n" + body,
      head + "Content-Length: 0\r\n" + length + "\r\n" + body,
      head + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked,
      head + "Transfer-Encoding: chunked\r\n" + length + "\r\n" + chunked,
      head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n" + chunked,
      // No length at all (once 413, "larger than 16777216 bytes").
      head + "Content-Length: -1\r\n\r\n" + body,
      head + "Content-Length: 1x\r\n\r\n" + body,
      // An empty length, which httplib drops as if it were not there.
      head + "Content-Length: \r\n\r\n" + body,
      head + length + "Content-Length:\r\n\r\n" + body,
      // A header line that is no "name: value" (httplib skipped it and
      // served the request).
      head + "NoColonHere\r\n" + length + "\r\n" + body,
      head + ": no-name\r\n" + length + "\r\n" + body,
      // A blank line ended by a bare LF inside the head: httplib skipped it
      // and read the lines after it, past the tidying (a Range was 416, a
      // malformed line served, an Accept-Encoding refusal ignored).
      head + "\nNoColonHere\r\n" + length + "\r\n" + body,
      // ... wherever it stands, and in HTTP/1.0 too (both were served).
      head + "Transfer-Encoding: chunked\r\nNoColonHere\r\n\r\n" + chunked,
      std::string("POST /v1/filters/orders/items HTTP/1.0\r\nContent-Type: application/json\r\n") +
          "NoColonHere\r\n" + length + "\r\n" + body,
      // A name that is no token (RFC 9112, 5.1): a space or tab before the
      // colon, which a proxy in front may take as the framing header while
      // httplib ignored it (a request in the body was served on its own).
      head + "Content-Length : " + std::to_string(body.size()) + "\r\n\r\n" + body,
      head + "Content-Length\t: " + std::to_string(body.size()) + "\r\n\r\n" + body,
      head + "Transfer-Encoding : chunked\r\n" + length + "\r\n" + chunked,
      // A folded line (obs-fold, RFC 9112, 5.2), which continues the one before.
      head + "X-Note: a\r\n Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
      // A header line ended by a bare LF (the head never ended for httplib).
      head + "X-Note: a\n" + length + "\r\n" + body,
      // Framing values httplib percent-decoded: 1%35 framed 15 bytes, and
      // chunke%64 was chunked, where a proxy reads neither so.
      head + "Content-Length: " + std::to_string(body.size() / 10) + "%" +
          std::to_string(30 + body.size() % 10) + "\r\n\r\n" + body,
      head + "Transfer-Encoding: chunke%64\r\n\r\n" + chunked,
      // NUL and a bare CR in a value (RFC 9110, 5.5), which httplib kept.
      head + "X-Note: a" + std::string(1, '\0') + "b\r\n" + length + "\r\n" + body,
      head + "X-Note: a\rb\r\n" + length + "\r\n" + body,
      head + "X-Note: a\r\r\n" + length + "\r\n" + body,
      // No Host in HTTP/1.1, or two (RFC 9112, 3.2), which httplib served.
      "POST /v1/filters/orders/items HTTP/1.1\r\nContent-Type: application/json\r\n" + length +
          "\r\n" + body,
      head + "Host: y\r\n" + length + "\r\n" + body,
      // A fragment in the target, which httplib cut off and served the rest
      // (GET .../items/a#b answered for the item "a").
      "POST /v1/filters/orders/items#x HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\n" +
          length + "\r\n" + body,
  };
  for (const std::string& request : ambiguous) {
    RawConnection c(server_->port());
    // A second request after the body: it must not be served.
    c.Send(request + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string answer = c.ReadResponse();
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << request << "\n->\n" << answer;
    EXPECT_NE(answer.find("\"invalid_argument\""), std::string::npos) << answer;
    EXPECT_NE(answer.find("\r\nConnection: close\r\n"), std::string::npos) << answer;
    EXPECT_TRUE(c.WaitClosed(std::chrono::seconds(3))) << request;
  }
  // Each is counted once: by the HTTP layer's requests_total, or, answered
  // before it (a bare LF, a malformed or empty framing header), by
  // requests_malformed_total. Those left no trace at all.
  const auto answered_400 = [&] {
    const std::string text = Do("GET", "/metrics").body;
    double sum = Sample(text, "redbloomd_requests_malformed_total");
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("redbloomd_http_requests_total{") &&
          line.find("code=\"400\"}") != std::string::npos) {
        sum += std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return sum;
  };
  double counted = 0;
  for (int i = 0; i < 100 && (counted = answered_400()) < ambiguous.size(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(counted, ambiguous.size());
  EXPECT_GE(Sample(Do("GET", "/metrics").body, "redbloomd_requests_malformed_total"), 5);
  EXPECT_EQ(Do("GET", "/v1/filters/orders/items/smuggled").json["present"], false);
  // Repeating the same length is not ambiguous.
  const std::string same = RawExchange(
      server_->port(), head + length + length + "Connection: close\r\n\r\n" + body, false);
  EXPECT_TRUE(same.starts_with("HTTP/1.1 200")) << same;
  EXPECT_EQ(Do("GET", "/v1/filters/orders/items/smuggled").json["present"], true);
}

// "close" is honoured in any case and anywhere in a Connection list (RFC
// 9110, 7.6.1): httplib honoured the exact value "close" only, so a client
// sending "Close" (Apache HttpClient, .NET) got its pipelined request served
// and waited keep_alive_timeout_s for the end of the connection. An HTTP/1.0
// connection carries one request, whatever it asks.
TEST_P(ServerApiTest, ConnectionCloseIsHonouredInAnyForm) {
  StartServer(R"({"keep_alive_timeout_s": 30})");
  const std::string next = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string connection :
       {"Connection: Close\r\n", "Connection: CLOSE\r\n", "Connection: keep-alive, close\r\n",
        "Connection: TE, close\r\n", "Connection: TE\r\nConnection: close\r\n"}) {
    RawConnection c(server_->port());
    c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n" + connection + "\r\n" + next);
    int error = -1;
    const std::string all = c.ReadToEnd(&error, std::chrono::seconds(10));
    EXPECT_EQ(CountResponses(all), 1) << connection << all;
    EXPECT_NE(all.find("\r\nConnection: close\r\n"), std::string::npos) << connection << all;
  }
  for (const std::string connection :
       {"Connection: keep-alive\r\n", "Connection: Keep-Alive\r\n"}) {
    RawConnection c(server_->port());
    c.Send("GET /healthz HTTP/1.0\r\n" + connection + "\r\n");
    const auto sent = std::chrono::steady_clock::now();
    int error = -1;
    const std::string all = c.ReadToEnd(&error, std::chrono::seconds(20));
    EXPECT_EQ(CountResponses(all), 1) << connection << all;
    EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(10))
        << connection << ": an HTTP/1.0 client reads its answer to the end of the connection";
    // Said so: "Keep-Alive: timeout=..." alone made ab -k reuse it.
    EXPECT_NE(all.find("\r\nConnection: close\r\n"), std::string::npos) << connection << all;
  }
}

// An answer that ends its connection says so once, and offers no
// keep-alive: httplib added its own "Connection: close" (the client asked
// for it) or "Keep-Alive: timeout=5, max=1000" beside the service's.
TEST_P(ServerApiTest, AnAnswerThatClosesSaysSoOnce) {
  StartServer();
  const std::string refused =  // 415, answered before its body is read
      "POST /v1/filters/orders/items HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
      "Content-Length: 1\r\n";
  for (const std::string& request :
       {refused + "\r\nx", refused + "Connection: close\r\n\r\nx",
        std::string("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        std::string("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: CLOSE\r\n\r\n")}) {
    RawConnection c(server_->port());
    c.Send(request);
    const std::string answer = c.ReadResponse();
    const std::string head = answer.substr(0, answer.find("\r\n\r\n") + 2);
    size_t said = 0;
    for (size_t at = head.find("\r\nConnection:"); at != std::string::npos;
         at = head.find("\r\nConnection:", at + 1)) {
      ++said;
    }
    EXPECT_EQ(said, 1u) << request << "\n->\n" << head;
    EXPECT_NE(head.find("\r\nConnection: close\r\n"), std::string::npos) << head;
    EXPECT_EQ(head.find("Keep-Alive"), std::string::npos) << request << "\n->\n" << head;
    EXPECT_TRUE(c.WaitClosed(std::chrono::seconds(3))) << request;
  }
}

// No answer may be kept by a cache: a check cached by a proxy (Varnish keeps
// a 200 for 120 s by default) read "present": false after the item's add.
TEST_P(ServerApiTest, NoAnswerMayBeCached) {
  StartServer();
  Create("orders");
  RawConnection c(server_->port());
  for (const auto& [request, status] : std::vector<std::pair<std::string, std::string>>{
           {"POST /v1/filters/orders/check HTTP/1.1\r\nHost: x\r\nContent-Type: "
            "application/json\r\nContent-Length: 15\r\n\r\n{\"items\":[\"a\"]}",
            "HTTP/1.1 200"},
           {"GET /v1/filters/orders/items/a HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200"},
           {"GET /v1/filters/none HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404"}}) {
    c.Send(request);
    const std::string answer = c.ReadResponse();
    EXPECT_TRUE(answer.starts_with(status)) << answer;
    EXPECT_NE(answer.find("\r\nCache-Control: no-store\r\n"), std::string::npos) << answer;
    // With the date it was made (RFC 9110, 6.6.1), in the IMF-fixdate form.
    const size_t date = answer.find("\r\nDate: ");
    ASSERT_NE(date, std::string::npos) << answer;
    std::tm tm{};
    const char* end = ::strptime(answer.c_str() + date + 8, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    ASSERT_NE(end, nullptr) << answer;
    EXPECT_EQ(std::string(end, 2), "\r\n") << answer;
    EXPECT_LT(std::abs(static_cast<double>(::timegm(&tm) - std::time(nullptr))), 60.0) << answer;
  }
  // A connection-level answer too.
  const std::string bad =
      RawExchange(server_->port(), "GET /healthz HTTP/1.1\r\nNoColonHere\r\n\r\n", false);
  EXPECT_TRUE(bad.starts_with("HTTP/1.1 400")) << bad;
  EXPECT_NE(bad.find("\r\nCache-Control: no-store\r\n"), std::string::npos) << bad;
  EXPECT_NE(bad.find("\r\nDate: "), std::string::npos) << bad;
}

// A token holding "%41" authenticates as itself: httplib percent-decoded the
// Authorization value, so such a token (printable ASCII, as documented)
// could never match, and "%2541" did.
TEST_P(ServerApiTest, HeaderValuesReachTheServiceAsSent) {
  const std::string token = "ab%41cd";
  StartServer("", token);
  for (const auto& [presented, status] : std::vector<std::pair<std::string, int>>{
           {"ab%41cd", 200}, {"abAcd", 401}, {"ab%2541cd", 401}}) {
    httplib::Client c("127.0.0.1", server_->port());
    auto res = c.Get("/v1/filters", {{"Authorization", "Bearer " + presented}});
    ASSERT_TRUE(res) << presented;
    EXPECT_EQ(res->status, status) << presented << ": " << res->body;
  }
  // A header the service does not read is left as sent: escaped, a cookie of
  // 3,000 '%' passed httplib's 8 KiB per line and the request was refused.
  httplib::Client c("127.0.0.1", server_->port());
  auto res = c.Get("/v1/filters", {{"Authorization", "Bearer " + token},
                                   {"Cookie", "k=" + std::string(3000, '%')}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

// A request refused at its Expect: 100-continue (here, no route) with no
// body: its answer had no Content-Length and the connection stayed open, so
// the next answer ran into it. It ends with the connection now.
TEST_P(ServerApiTest, ARefusalAtExpectWithoutABodyEndsTheConnection) {
  StartServer();
  RawConnection c(server_->port());
  c.Send(
      "POST /v1/nosuch HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  int error = -1;
  const std::string all = c.ReadToEnd(&error, std::chrono::seconds(10));
  EXPECT_TRUE(all.starts_with("HTTP/1.1 404")) << all;
  EXPECT_EQ(CountResponses(all), 1) << all;
  EXPECT_NE(all.find("\r\nConnection: close\r\n"), std::string::npos) << all;
}

TEST_P(ServerApiTest, BearerTokenGuardsApiAndMetrics) {
  const std::string token = "s3cret-Token_1";
  StartServer("", token);
  auto anon = server_->Client(/*auth=*/false);
  EXPECT_EQ(Call(*anon, "GET", "/healthz").status, 200);
  EXPECT_EQ(Call(*anon, "GET", "/readyz").status, 200);
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/metrics"},
                                                        {"GET", "/v1/filters"},
                                                        {"PUT", "/v1/filters/x"},
                                                        {"GET", "/v1/filters/x/items/y"},
                                                        {"GET", "/nope"}}) {
    Answer a = Call(*anon, method, path);
    EXPECT_EQ(a.status, 401) << method << " " << path;
    EXPECT_EQ(a.error(), "unauthenticated");
    EXPECT_EQ(a.header("WWW-Authenticate"), "Bearer realm=\"redbloomd\"");
  }
  for (const std::string& auth :
       std::vector<std::string>{"Bearer wrong", "Bearer " + token + "x",
                                "Bearer " + token.substr(1), "Basic " + token, token, "Bearer"}) {
    Answer a = Call(*anon, "GET", "/v1/filters", "", {{"Authorization", auth}});
    EXPECT_EQ(a.status, 401) << auth;
    // Basic, or a bare token, is told which scheme to use.
    const bool bearer = auth.starts_with("Bearer");
    EXPECT_EQ(a.json.value("message", "").find("not of the Bearer scheme") == std::string::npos,
              bearer)
        << auth << ": " << a.body;
  }
  // A rejected request with a body closes the connection: the body was not read.
  Answer with_body = Call(*anon, "POST", "/v1/filters/x/items", Items({"a"}));
  EXPECT_EQ(with_body.status, 401);
  EXPECT_EQ(with_body.header("Connection"), "close");
  // The right token, with the scheme in any case.
  EXPECT_EQ(Do("GET", "/v1/filters").status, 200);
  EXPECT_EQ(Do("GET", "/metrics").status, 200);
  EXPECT_EQ(Call(*anon, "GET", "/v1/filters", "", {{"Authorization", "bearer " + token}}).status,
            200);
  Create("orders");
  EXPECT_EQ(Do("POST", "/v1/filters/orders/items", Items({"a"})).status, 200);
}

TEST_P(ServerApiTest, PublicMetricsNeedNoToken) {
  StartServer(R"({"public_metrics":true})", "tok");
  auto anon = server_->Client(/*auth=*/false);
  EXPECT_EQ(Call(*anon, "GET", "/metrics").status, 200);
  EXPECT_EQ(Call(*anon, "GET", "/v1/filters").status, 401);
}

TEST_P(ServerApiTest, MetricsCountRequestsItemsAndLatency) {
  StartServer();
  Create("orders");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Do("POST", "/v1/filters/orders/items", Items(Numbered("a", 10))).status, 200);
  }
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(Do("POST", "/v1/filters/orders/check", Items(Numbered("a", 5))).status, 200);
  }
  ASSERT_EQ(Do("GET", "/v1/filters/orders/items/a1").status, 200);
  ASSERT_EQ(Do("GET", "/v1/filters/orders/items/zzz").status, 200);
  ASSERT_EQ(Do("GET", "/v1/filters/missing").status, 404);
  ASSERT_EQ(Do("GET", "/no/such/route").status, 404);
  // A request is counted when its response has been written, just after the
  // client has it: scrape until the last one shows (in-flight back to 1,
  // this scrape).
  Answer m;
  for (int i = 0; i < 200; ++i) {
    m = Do("GET", "/metrics");
    ASSERT_EQ(m.status, 200);
    if (Sample(m.body, "redbloomd_http_requests_in_flight") == 1 &&
        Sample(m.body,
               R"(redbloomd_http_requests_total{route="unmatched",method="GET",code="404"})") ==
            1) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(m.header("Content-Type").starts_with("text/plain; version=0.0.4"))
      << m.header("Content-Type");
  const std::string& t = m.body;
  EXPECT_EQ(Sample(t, R"(redbloomd_http_requests_total{route="/v1/filters/{name}/items",)"
                      R"(method="POST",code="200"})"),
            3);
  EXPECT_EQ(Sample(t, R"(redbloomd_http_requests_total{route="/v1/filters/{name}/check",)"
                      R"(method="POST",code="200"})"),
            4);
  EXPECT_EQ(Sample(t, R"(redbloomd_http_requests_total{route="/v1/filters/{name}",)"
                      R"(method="GET",code="404"})"),
            1);
  EXPECT_EQ(
      Sample(t, R"(redbloomd_http_requests_total{route="unmatched",method="GET",code="404"})"), 1);
  EXPECT_EQ(
      Sample(t,
             R"(redbloomd_http_request_duration_seconds_count{route="/v1/filters/{name}/check"})"),
      4);
  EXPECT_EQ(
      Sample(
          t,
          R"(redbloomd_http_request_duration_seconds_bucket{route="/v1/filters/{name}/check",le="+Inf"})"),
      4);
  EXPECT_GT(
      Sample(t, R"(redbloomd_http_request_duration_seconds_sum{route="/v1/filters/{name}/check"})"),
      0);
  EXPECT_EQ(Sample(t, "redbloomd_items_added_total"), 30);
  EXPECT_EQ(Sample(t, "redbloomd_items_new_total"), 10);
  EXPECT_EQ(Sample(t, "redbloomd_items_checked_total"), 22);
  EXPECT_EQ(Sample(t, "redbloomd_items_present_total"), 21);
  EXPECT_EQ(Sample(t, R"(redbloomd_store_errors_total{code="unavailable"})"), 0);
  EXPECT_EQ(Sample(t, "redbloomd_http_requests_in_flight"), 1);  // this scrape
  EXPECT_EQ(Sample(t, "redbloomd_store_open"), 1);
}

// A filter dropped and re-created by another client (here the library, as
// the CLI would) must be used with its new geometry, never the cached one.
// Redis checks the stored config on every call; the file store flags the
// file it unlinks. Either way the handle answers kConflict or kNotFound and
// reopens, so this holds even with revalidation practically off.
TEST_P(ServerApiTest, FilterRecreatedElsewhereIsNotWrittenWithStaleGeometry) {
  StartServer(R"({"filter_revalidate_ms":600000})");
  Create("orders", 1000, 0.01);
  ASSERT_EQ(Do("POST", "/v1/filters/orders/items", Items({"before"})).status, 200);

  auto store = Store::Open(store_url_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE(BloomFilter::Drop(**store, "orders").ok());
  // Dropped elsewhere: 404, not a write into the old bits.
  EXPECT_EQ(Do("POST", "/v1/filters/orders/items", Items({"x"})).status, 404);
  EXPECT_EQ(Do("GET", "/v1/filters/orders/items/before").status, 404);

  auto recreated = BloomFilter::Create(**store, "orders", {.capacity = 50000, .error_rate = 0.001});
  ASSERT_TRUE(recreated.ok());
  Answer added = Do("POST", "/v1/filters/orders/items", Items({"after"}));
  ASSERT_EQ(added.status, 200) << added.body;
  auto seen = (*recreated)->Contains("after");
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(*seen) << "the add went to the old filter's bits";
  EXPECT_EQ(Do("GET", "/v1/filters/orders").json["capacity"], 50000);
  EXPECT_EQ(Do("GET", "/v1/filters/orders/items/before").json["present"], false);
}

// A file: filter's file replaced by hand (a backup moved over it, as rsync
// does) is followed within filter_revalidate_ms: the server went on adding
// to the old, unlinked file, and every add after the restore was lost (the
// next process to open the filter read the backup without them).
TEST_P(ServerApiTest, AFileMovedOverAFiltersOwnIsFollowed) {
  if (GetParam() != StoreKind::kFile) GTEST_SKIP() << "a file: store's files";
  StartServer(R"({"filter_revalidate_ms":0})");
  Create("orders", 1000, 0.01);
  ASSERT_EQ(Do("POST", "/v1/filters/orders/items", Items({"kept"})).status, 200);
  const std::string file = dir_.path() + "/store/orders.rbf";
  const std::string backup = dir_.path() + "/store/orders.rbf.backup";
  std::filesystem::copy_file(file, backup);
  ASSERT_EQ(Do("POST", "/v1/filters/orders/items", Items({"lost-by-the-restore"})).status, 200);
  std::filesystem::rename(backup, file);
  Answer added = Do("POST", "/v1/filters/orders/items", Items({"after"}));
  ASSERT_EQ(added.status, 200) << added.body;
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(store_url_));
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*store, "orders"));
  EXPECT_TRUE(testing::ValueOrFail(f->Contains("after"))) << "the add went to the replaced file";
  EXPECT_TRUE(testing::ValueOrFail(f->Contains("kept")));
  EXPECT_EQ(Do("GET", "/v1/filters/orders/items/after").json["present"], true);
  std::filesystem::remove(file);
  EXPECT_EQ(Do("GET", "/v1/filters/orders/items/after").status, 404);
}

// A rebuild that changes only the TTL (a CLI's `rebuild --ttl`/`--no-ttl`)
// is followed within filter_revalidate_ms: the cached handle kept the TTL
// it opened with, and GET said 600 s for a filter that had none (or "no
// TTL" for one about to expire), where `redbloom info` and a PUT saw the new.
TEST_P(ServerApiTest, ARebuildThatChangesOnlyTheTtlIsFollowed) {
  StartServer(R"({"filter_revalidate_ms":0})");
  Answer made = Do("PUT", "/v1/filters/orders",
                   json{{"capacity", 1000}, {"error_rate", 0.01}, {"ttl_seconds", 600}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  ASSERT_EQ(Do("GET", "/v1/filters/orders").json["ttl_seconds"], 600);
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(store_url_));
  for (const uint64_t ttl : {uint64_t{0}, uint64_t{900}}) {
    SCOPED_TRACE(ttl);
    ASSERT_TRUE(BloomFilter::Rebuild(*store, "orders",
                                     {.capacity = 1000, .error_rate = 0.01, .ttl_seconds = ttl},
                                     [](BloomFilter& f) { return f.Add("x"); })
                    .ok());
    EXPECT_EQ(Do("GET", "/v1/filters/orders").json["ttl_seconds"], ttl);
    EXPECT_EQ(Do("GET", "/v1/filters/orders/items/x").json["present"], true);
  }
}

// This service's own DELETEs are no vanished filters: requests racing one
// found the filter gone, and each was counted in
// redbloomd_filters_vanished_total and logged as "dropped by another
// client, or lost", firing the alert the docs suggest. A drop by another
// client still counts.
TEST_P(ServerApiTest, ItsOwnDeletesAreNoVanishedFilters) {
  StartServer(R"({"filter_revalidate_ms":0})");
  std::atomic<bool> stop{false};
  std::atomic<int> gone{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 2; ++t) {
    users.emplace_back([&, t] {
      auto c = server_->Client();
      while (!stop.load()) {
        const Answer a = t == 0 ? Call(*c, "POST", "/v1/filters/r/items", Items({"x", "y"}))
                                : Call(*c, "GET", "/v1/filters/r/items/x");
        gone += a.status == 404;
      }
    });
  }
  auto deleter = server_->Client();
  for (int round = 0; round < 60; ++round) {
    ASSERT_EQ(
        Call(*deleter, "PUT", "/v1/filters/r", R"({"capacity":1000,"error_rate":0.01})").status,
        201);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    ASSERT_EQ(Call(*deleter, "DELETE", "/v1/filters/r").status, 200);
  }
  stop = true;
  for (auto& u : users) u.join();
  EXPECT_GT(gone.load(), 0) << "no request raced a DELETE";
  EXPECT_EQ(Sample(Do("GET", "/metrics").body, "redbloomd_filters_vanished_total"), 0)
      << server_->Stderr();
  EXPECT_EQ(server_->Stderr().find("open here, is gone"), std::string::npos) << server_->Stderr();
  // Dropped by another client while open here: that one counts.
  Create("other");
  ASSERT_EQ(Do("POST", "/v1/filters/other/items", Items({"x"})).status, 200);
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(store_url_));
  ASSERT_TRUE(BloomFilter::Drop(*store, "other").ok());
  EXPECT_EQ(Do("GET", "/v1/filters/other/items/x").status, 404);
  EXPECT_EQ(Sample(Do("GET", "/metrics").body, "redbloomd_filters_vanished_total"), 1);
}

// Mappings of deleted files in the store's directory that the server holds.
int DeletedMappings(pid_t pid, const std::string& dir) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  int deleted = 0;
  for (std::string line; std::getline(maps, line);) {
    deleted += line.find(dir) != std::string::npos && line.find("(deleted)") != std::string::npos;
  }
  return deleted;
}

// Handles of filters gone without a request for them are let go of: on
// file: a handle maps its file, and one expired (removed by a listing) or
// dropped by another process stayed mapped, its disk space taken, until a
// restart or 4096 other filters (an audit: 20 filters, 237 MiB that df
// counted and du did not).
TEST_P(ServerApiTest, HandlesOfFiltersGoneElsewhereOrIdleAreLetGo) {
  StartServer(R"({"filter_revalidate_ms":600000,"filter_idle_ms":300})");
  Create("dropped", 100000, 0.01);
  ASSERT_EQ(Do("POST", "/v1/filters/dropped/items", Items({"x"})).status, 200);
  ASSERT_EQ(
      Do("PUT", "/v1/filters/expiring", R"({"capacity":100000,"error_rate":0.01,"ttl_seconds":1})")
          .status,
      201);
  ASSERT_EQ(Do("POST", "/v1/filters/expiring/items", Items({"x"})).status, 200);
  EXPECT_EQ(Sample(Do("GET", "/metrics").body, "redbloomd_filter_handles"), 2);
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(store_url_));
  ASSERT_TRUE(BloomFilter::Drop(*store, "dropped").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the TTL passes
  // The listing removes the expired filter (file:, mem:) and lets go of both.
  Answer listed = Do("GET", "/v1/filters");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(listed.json["filters"].size(), 0u) << listed.body;
  EXPECT_EQ(Sample(Do("GET", "/metrics").body, "redbloomd_filter_handles"), 0);
  if (GetParam() == StoreKind::kFile) {
    EXPECT_EQ(DeletedMappings(server_->pid(), dir_.path()), 0);
  }
  // A handle no request used for filter_idle_ms goes at the next probe.
  Create("idle", 100000, 0.01);
  ASSERT_EQ(Do("POST", "/v1/filters/idle/items", Items({"x"})).status, 200);
  EXPECT_EQ(Sample(Do("GET", "/metrics").body, "redbloomd_filter_handles"), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(Do("GET", "/readyz").status, 200);
  EXPECT_EQ(Sample(Do("GET", "/metrics").body, "redbloomd_filter_handles"), 0);
  EXPECT_EQ(Do("GET", "/v1/filters/idle/items/x").json["present"], true);  // reopened
}

// A filter rebuilt by another process is served from the new filter, and
// the service lets go of the old one. Before, the cached handle followed each
// swap and kept every old state for its life: on file:, each rebuilt file
// deleted but open and mapped, its disk space never freed (a nightly rebuild
// of a 12 GB filter: 12 GB more each day until a restart).
TEST_P(ServerApiTest, FilterRebuiltElsewhereIsServedAndTheOldOneLetGo) {
  StartServer(R"({"filter_revalidate_ms":600000})");
  Create("rb", 10000, 0.01);
  ASSERT_EQ(Do("POST", "/v1/filters/rb/items", Items({"old"})).status, 200);
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(store_url_));
  ASSERT_OK_AND_ASSIGN(auto handle, BloomFilter::Open(*store, "rb"));
  for (int i = 0; i < 4; ++i) {
    const std::string item = "new-" + std::to_string(i);
    ASSERT_TRUE(
        BloomFilter::Rebuild(*store, "rb", OptionsOf(handle->config()), [&](BloomFilter& f) {
          return f.Add(item);
        }).ok());
    Answer seen = Do("GET", "/v1/filters/rb/items/" + item);
    EXPECT_EQ(seen.json["present"], true) << i << ": " << seen.body;
    EXPECT_EQ(Do("POST", "/v1/filters/rb/items", Items({"after-" + item})).status, 200);
  }
  EXPECT_EQ(Do("GET", "/v1/filters/rb/items/old").json["present"], false);
  EXPECT_EQ(Do("GET", "/v1/filters/rb/items/after-new-3").json["present"], true);
  if (GetParam() != StoreKind::kFile) return;
  int deleted = 0;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(server_->pid()) + "/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    deleted += !ec && target.find(dir_.path()) != std::string::npos &&
               target.find("(deleted)") != std::string::npos;
  }
  EXPECT_EQ(deleted, 0) << "rebuilt files the service still holds open";
}

// Answers are whole JSON documents: a Range header does not cut them (it
// once gave a 200 with Content-Range and the first 11 bytes of the JSON).
TEST_P(ServerApiTest, RangeHeadersDoNotCutAnswers) {
  StartServer();
  Create("orders");
  for (const char* range : {"bytes=0-10", "bytes=0-1,5-9", "bytes=99999-"}) {
    Answer a = Do("GET", "/v1/filters/orders", "", {{"Range", range}});
    EXPECT_EQ(a.status, 200) << range << ": " << a.body;
    EXPECT_EQ(a.json["name"], "orders") << range << ": " << a.body;
    EXPECT_EQ(a.header("Content-Range"), "") << range;
  }
  // Nor does one that does not parse: it was 416 on every route, before the
  // token check and on /healthz too.
  for (const char* path : {"/healthz", "/v1/filters/orders"}) {
    Answer a = Do("GET", path, "", {{"Range", "bytes=zz"}});
    EXPECT_EQ(a.status, 200) << path << ": " << a.body;
  }
}

// A target in absolute form is served as its path (RFC 9112, 3.2.2: a
// server must accept it); it was answered 404.
TEST_P(ServerApiTest, AbsoluteFormTargetsAreServedAsTheirPath) {
  StartServer();
  Create("orders");
  const std::string authority = "127.0.0.1:" + std::to_string(server_->port());
  for (const std::string& target : std::vector<std::string>{
           "http://" + authority + "/v1/filters/orders", "HTTPS://elsewhere/v1/filters/orders",
           "http://" + authority + "/v1/filters/orders?x=1"}) {
    const std::string answer = RawExchange(
        server_->port(), "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        /*shut_write=*/false);
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0u) << target << ": " << answer.substr(0, 200);
    EXPECT_NE(answer.find("\"name\":\"orders\""), std::string::npos) << target;
  }
  // No path is the root, which serves nothing; nor is "http:/x" absolute.
  for (const std::string& target :
       std::vector<std::string>{"http://" + authority, "http:/v1/filters/orders"}) {
    const std::string answer = RawExchange(
        server_->port(), "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        /*shut_write=*/false);
    EXPECT_EQ(answer.rfind("HTTP/1.1 404 ", 0), 0u) << target << ": " << answer.substr(0, 200);
  }
}

// An answer may be compressed (Accept-Encoding: gzip or br), so every one
// says it varies with Accept-Encoding; none did, and a shared cache could
// hand a gzip body to a client that never asked for one.
TEST_P(ServerApiTest, AnswersVaryWithAcceptEncoding) {
  StartServer();
  Create("orders");
  for (const char* path : {"/v1/openapi.json", "/v1/filters/orders", "/v1/filters/missing"}) {
    for (const char* accept : {"gzip", "identity"}) {
      Answer a = Do("GET", path, "", {{"Accept-Encoding", accept}});
      EXPECT_EQ(a.header("Vary"), "Accept-Encoding") << path << " " << accept;
    }
  }
}

// An answer is compressed only with a coding the client accepts, weights
// and case as RFC 9110 reads them: "gzip;q=0" refuses gzip, and was given
// it (httplib looks for the substring), while "GZIP" and "*" were not.
TEST_P(ServerApiTest, AnswersAreCompressedOnlyAsTheClientAccepts) {
  StartServer();
  Create("orders");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"gzip"}, "gzip"},
      {{"GZIP"}, "gzip"},
      {{"x-gzip"}, "gzip"},
      {{"gzip;q=0"}, ""},
      {{"gzip; Q=0.000"}, ""},
      {{"gzip;q=0.001"}, "gzip"},
      {{"gzip;q=2"}, ""},
      {{"br;q=0, gzip;q=0"}, ""},
      {{"br;q=0.5, gzip;q=0.8"}, "gzip"},
      {{"br, gzip"}, "br"},
      {{"*"}, "br"},
      {{"*;q=0.5, br;q=0"}, "gzip"},
      {{"identity;q=1, *;q=0"}, ""},
      {{"deflate"}, ""},
      {{"identity", "gzip"}, "gzip"},
      {{"gzip", "gzip;q=0"}, "gzip"},
  };
  for (const auto& [lines, coding] : cases) {
    std::string request = "GET /v1/filters/orders HTTP/1.1\r\nHost: x\r\n";
    std::string label;
    for (const std::string& line : lines) {
      request += "Accept-Encoding: " + line + "\r\n";
      label += "[" + line + "]";
    }
    request += "Connection: close\r\n\r\n";
    const std::string answer = RawExchange(server_->port(), request, /*shut_write=*/false);
    ASSERT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0u) << label << ": " << answer.substr(0, 200);
    const std::string head = answer.substr(0, answer.find("\r\n\r\n"));
    if (coding.empty()) {
      EXPECT_EQ(head.find("Content-Encoding"), std::string::npos) << label << ": " << head;
      EXPECT_NE(answer.find("\"name\":\"orders\""), std::string::npos) << label;
    } else {
      EXPECT_NE(head.find("Content-Encoding: " + coding + "\r\n"), std::string::npos)
          << label << ": " << head;
    }
  }
}

// An access log that cannot be written (a full disk) drops its lines
// rather than fail requests: they were dropped without a word or a count.
TEST_P(ServerApiTest, AccessLogLinesLostToAFullDiskAreCountedAndSaid) {
  StartServer(json{{"access_log", "/dev/full"}, {"access_log_flush_ms", 0}}.dump());
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Do("GET", "/healthz").status, 200);
  double lost = 0;
  for (int i = 0; i < 100 && (lost = Sample(Do("GET", "/metrics").body,
                                            "redbloomd_access_log_lines_lost_total")) < 3;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(lost, 3);
  ASSERT_EQ(server_->Stop(SIGTERM), 0) << server_->Stderr();
  const std::string said = "cannot write the access log /dev/full: ";
  const std::string err = server_->Stderr();
  ASSERT_NE(err.find(said), std::string::npos) << err;
  EXPECT_EQ(err.find(said, err.find(said) + 1), std::string::npos) << "once, not per line:\n"
                                                                   << err;
}

TEST_P(ServerApiTest, AccessLogHasOneLinePerRequestWithItemsRedacted) {
  const std::string log = dir_.path() + "/access.log";
  StartServer(json{{"access_log", log}}.dump());
  Create("orders");
  ASSERT_EQ(Do("GET", "/v1/filters/orders/items/card-4111111111111111").status, 200);
  ASSERT_EQ(Do("GET", "/nope").status, 404);
  // A request the HTTP parser rejects (a header line past 8 KiB) is logged
  // too, its item redacted all the same.
  const std::string rejected = RawExchange(
      server_->port(),
      "GET /v1/filters/orders/items/card-5500000000000004 HTTP/1.1\r\nHost: x\r\nX-Big: " +
          std::string(9000, 'a') + "\r\n\r\n",
      /*shut_write=*/true);
  ASSERT_NE(rejected.find(" 400 "), std::string::npos) << rejected.substr(0, 200);
  // So is one whose request line is past 8 KiB (414): it was logged as
  // '"  " 414', with neither method nor target.
  const std::string too_long =
      RawExchange(server_->port(),
                  "GET /v1/filters/orders/items/card-3400000000000009" + std::string(9000, 'b') +
                      " HTTP/1.1\r\nHost: x\r\n\r\n",
                  /*shut_write=*/true);
  ASSERT_NE(too_long.find(" 414 "), std::string::npos) << too_long.substr(0, 200);
  // Items in paths no route matches (an empty name, as a client's empty
  // variable makes), and in a request line the parser could not split
  // (tabs for spaces, logged whole as the method), were logged in full.
  // A filter may be named "items": its other routes are logged whole.
  Create("items");
  ASSERT_EQ(Do("POST", "/v1/filters/items/check", Items({"x"})).status, 200);
  ASSERT_EQ(Do("GET", "/v1/filters//items/card-6011000000000004").status, 404);
  ASSERT_EQ(Do("GET", "/v1/filters/orders//items/card-3530111333300000").status, 404);
  const std::string tabs = RawExchange(
      server_->port(),
      "GET\t/v1/filters/orders/items/card-6304000000000000\tHTTP/1.1\r\nHost: x\r\n\r\n",
      /*shut_write=*/true);
  ASSERT_NE(tabs.find(" 400 "), std::string::npos) << tabs.substr(0, 200);
  const std::string long_name = std::string(3000, 'n');
  ASSERT_EQ(Do("GET", "/v1/filters/" + long_name + std::string(6000, 'm')).status, 414);
  // A HEAD sends no body, whatever length its answer announces.
  Answer head = Do("HEAD", "/v1/openapi.json");
  ASSERT_EQ(head.status, 200);
  ASSERT_NE(head.header("Content-Length"), "0");
  // No answer honours a range, so none offers them (httplib said "bytes").
  EXPECT_EQ(head.header("Accept-Ranges"), "none");
  ASSERT_EQ(server_->Stop(SIGTERM), 0) << server_->Stderr();
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  // Lines are written as responses complete, so requests served on
  // different connections may log in either order: look for each line.
  const std::vector<std::string> lines = Lines(ss.str());
  const auto line_with = [&](const std::string& text) -> std::string {
    for (const std::string& l : lines) {
      if (l.find(text) != std::string::npos) return l;
    }
    return "";
  };
  const std::string put = line_with("\"PUT /v1/filters/orders HTTP/1.1\" 201 ");
  EXPECT_FALSE(put.empty()) << ss.str();
  EXPECT_TRUE(put.ends_with("ms")) << put;
  // UTC timestamp, then the client address.
  EXPECT_EQ(put.find("Z 127.0.0.1:"), 23u) << put;
  EXPECT_FALSE(line_with("\"GET /v1/filters/orders/items/<redacted> HTTP/1.1\" 200 ").empty())
      << ss.str();
  EXPECT_FALSE(line_with("\"GET /nope HTTP/1.1\" 404 ").empty()) << ss.str();
  EXPECT_EQ(ss.str().find("4111111111111111"), std::string::npos);
  EXPECT_EQ(ss.str().find("5500000000000004"), std::string::npos) << ss.str();
  const std::string rejected_line = line_with("/items/<redacted> HTTP/1.1\" 400 ");
  EXPECT_FALSE(rejected_line.empty()) << ss.str();
  // With the client's address, though the parser stopped before filling it.
  EXPECT_EQ(rejected_line.find("Z 127.0.0.1:"), 23u) << rejected_line;
  EXPECT_EQ(rejected_line.find(":-1 "), std::string::npos) << rejected_line;
  EXPECT_EQ(ss.str().find("3400000000000009"), std::string::npos) << ss.str();
  for (const char* card : {"6011000000000004", "3530111333300000", "6304000000000000"}) {
    EXPECT_EQ(ss.str().find(card), std::string::npos) << card << "\n" << ss.str();
  }
  EXPECT_FALSE(line_with("\"GET /v1/filters//items/<redacted> HTTP/1.1\" 404 ").empty())
      << ss.str();
  EXPECT_FALSE(line_with("\"POST /v1/filters/items/check HTTP/1.1\" 200 ").empty()) << ss.str();
  EXPECT_FALSE(line_with("\"GET /v1/filters/orders/items/<redacted> HTTP/1.1\" 414 ").empty())
      << ss.str();
  // A target too long to log whole is cut, and says so.
  const std::string cut_line = line_with("\"GET /v1/filters/" + long_name.substr(0, 100));
  EXPECT_NE(cut_line.find("... HTTP/1.1\" 414 "), std::string::npos) << cut_line;
  EXPECT_FALSE(line_with("\"HEAD /v1/openapi.json HTTP/1.1\" 200 0 ").empty()) << ss.str();
  // One line per request: the harness's /healthz probes, PUT, GET item, GET
  // /nope, the rejected GET, PUT and check of "items", the two unmatched
  // item paths, the tabbed line, the two 414s, the HEAD.
  size_t non_probe = 0;
  for (const std::string& l : lines) non_probe += l.find("/healthz") == std::string::npos ? 1 : 0;
  EXPECT_EQ(non_probe, 12u) << ss.str();
}

INSTANTIATE_TEST_SUITE_P(Stores, ServerApiTest,
                         ::testing::Values(StoreKind::kFile, StoreKind::kRedis),
                         [](const ::testing::TestParamInfo<StoreKind>& p) {
                           return p.param == StoreKind::kFile ? "File" : "Redis";
                         });

}  // namespace
}  // namespace redbloom::testing
