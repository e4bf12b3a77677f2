// Unit tests of redbloomd's pieces that need no socket: the items-body
// reader (against nlohmann::json as the reference), configuration
// precedence and validation, path decoding and token comparison.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config.h"
#include "http_server.h"
#include "http_status.h"
#include "items_body.h"
#include "metrics.h"
#include "redbloom/filter_config.h"
#include "service.h"
#include "test_util.h"
#include "util/sanitizers.h"

namespace redbloom::server {
namespace {

using nlohmann::json;
using testing::ValueOrFail;

ItemLimits Big() { return ItemLimits{.max_items = 1000000, .max_item_bytes = 1 << 20}; }

std::vector<std::string> ParseOk(const std::string& body, bool ints = false) {
  ItemsBody b;
  Status s = b.Parse(body, ints, Big());
  EXPECT_TRUE(s.ok()) << s.ToString() << "\nbody: " << body;
  return std::vector<std::string>(b.items().begin(), b.items().end());
}

Status ParseStatus(const std::string& body, bool ints = false, ItemLimits limits = Big()) {
  ItemsBody b;
  return b.Parse(body, ints, limits);
}

// A full handle cache evicts its least recently used handle. It evicted
// begin(), most often the newest in libstdc++: a new working set evicted
// itself while old handles stayed (an audit: 280 opens for 50 hot filters
// where 50 would do).
// Full, the oldest name goes (a std::set let the alphabetically first go,
// so names early in the alphabet were never remembered for long); one
// added again counts as new.
TEST(RememberedNamesTest, TheOldestNameMakesRoom) {
  RememberedNames names(2);
  const std::vector<std::string> b = {"b"}, a = {"a"}, c = {"c"};
  names.Add(b);
  names.Add(a);
  names.Add(b);  // the newest again
  names.Add(c);  // "a" is the oldest now
  EXPECT_EQ(names.size(), 2u);
  EXPECT_FALSE(names.Remove("a"));
  EXPECT_TRUE(names.Remove("b"));
  EXPECT_FALSE(names.Remove("b"));
  EXPECT_TRUE(names.Remove("c"));
  EXPECT_EQ(names.size(), 0u);
}

TEST(FilterCacheTest, AFullCacheEvictsTheLeastRecentlyUsed) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  Metrics metrics;
  FilterCache cache(std::chrono::hours(1), 3, &metrics);
  const auto open = [&](const std::string& name) {
    auto f = BloomFilter::Create(**store, name, {.capacity = 10, .error_rate = 0.1});
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return std::shared_ptr<BloomFilter>(std::move(f).value());
  };
  for (int i = 0; i < 8; ++i) {
    const std::string name = "f" + std::to_string(i);
    cache.Put(name, open(name));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (i < 2) continue;
    // The three last put are kept, whatever the map's order.
    for (int back = 0; back < 3; ++back) {
      bool cached = false;
      const std::string kept = "f" + std::to_string(i - back);
      auto got = cache.Get(**store, kept, &cached);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(cached) << kept << " was evicted after " << name << " was put";
    }
  }
}

// A large full cache samples for its least recently used handle (a whole
// scan per eviction stalled every request at 100,000 handles): what it
// evicts is among the oldest, never the newly used.
TEST(FilterCacheTest, ALargeFullCacheEvictsAmongTheOldest) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  Metrics metrics;
  constexpr int kSize = 4000, kMore = 100;
  FilterCache cache(std::chrono::hours(1), kSize, &metrics);
  for (int i = 0; i < kSize + kMore; ++i) {
    const std::string name = "f" + std::to_string(i);
    auto f = BloomFilter::Create(**store, name, {.capacity = 10, .error_rate = 0.1});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    cache.Put(name, std::shared_ptr<BloomFilter>(std::move(f).value()));
  }
  std::set<std::string> cached;
  for (const auto& f : cache.Snapshot()) cached.insert(f->name());
  EXPECT_EQ(cached.size(), size_t{kSize});
  // The newest quarter stays whole.
  for (int i = kSize + kMore - kSize / 4; i < kSize + kMore; ++i) {
    EXPECT_EQ(cached.count("f" + std::to_string(i)), 1u) << "f" << i << " was evicted";
  }
}

// The request (or probe) that runs a sweep frees the handles it evicts: a
// few per sweep, and the next request sweeps on at once. Every idle handle
// at once cost one request 125 ms at 4096 filters and a /readyz 1.6 s at
// 2,040 scaling filters, past a probe's timeout.
TEST(FilterCacheTest, ASweepFreesAFewIdleHandlesAtATime) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  Metrics metrics;
  FilterCache cache(std::chrono::hours(1), 1000, &metrics, std::chrono::milliseconds(1));
  for (int i = 0; i < 200; ++i) {
    const std::string name = "f" + std::to_string(i);
    auto f = BloomFilter::Create(**store, name, {.capacity = 10, .error_rate = 0.1});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    cache.Put(name, std::shared_ptr<BloomFilter>(std::move(f).value()));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  cache.SweepIdle();
  EXPECT_EQ(cache.size(), 200u - 64u);
  for (int i = 0; i < 3; ++i) cache.SweepIdle();
  EXPECT_EQ(cache.size(), 0u) << "the rest waited for the next interval";
}

TEST(ItemsBodyTest, ReadsStringsWithAndWithoutEscapes) {
  EXPECT_EQ(ParseOk(R"({"items":[]})"), std::vector<std::string>{});
  EXPECT_EQ(ParseOk(" \n{ \"items\" : [ \"a\" , \"\" ,\"ORD-99821\" ] }\r\n"),
            (std::vector<std::string>{"a", "", "ORD-99821"}));
  EXPECT_EQ(ParseOk(R"({"items":["a\"b","c\\d","\/","\b\f\n\r\t","\u00e9\u20ac","\ud83d\ude00"]})"),
            (std::vector<std::string>{"a\"b", "c\\d", "/", "\b\f\n\r\t", "é€", "😀"}));
  // Raw multi-byte UTF-8 around escapes, and long strings that take the
  // 8-bytes-at-a-time path on both sides of an escape.
  const std::string long_a(100, 'a');
  EXPECT_EQ(ParseOk("{\"items\":[\"" + long_a + "é\\n€" + long_a + "\"]}"),
            (std::vector<std::string>{long_a + "é\n€" + long_a}));
}

TEST(ItemsBodyTest, IntegersOnlyWhenAllowed) {
  EXPECT_EQ(ParseOk(R"({"items":[1,-2,0,"3",9223372036854775807]})", true),
            (std::vector<std::string>{"1", "-2", "0", "3", "9223372036854775807"}));
  Status s = ParseStatus(R"({"items":[1]})", false);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("item 1"), std::string::npos) << s.message();
  EXPECT_EQ(ParseStatus(R"({"items":[1.5]})", true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseStatus(R"({"items":[1e3]})", true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseStatus(R"({"items":[01]})", true).code(), StatusCode::kInvalidArgument);
}

TEST(ItemsBodyTest, RejectsWhatJsonRejects) {
  const std::vector<std::string> bad = {
      "",
      "   ",
      "{",
      "{\"items\":[\"a\"",
      "{\"items\":[\"a\",]}",
      "{\"items\":[,]}",
      "{\"items\":[\"a\"]",
      "{\"items\":[\"a\"]} x",
      "{\"items\":[\"a\"]}{}",
      "{'items':['a']}",
      "{items:[\"a\"]}",
      "{\"items\":[\"a\nb\"]}",     // raw control character
      "{\"items\":[\"a\\x\"]}",     // bad escape
      "{\"items\":[\"\\u12\"]}",    // short \u
      "{\"items\":[\"\\ud800\"]}",  // lone high surrogate
      "{\"items\":[\"\\udc00\"]}",  // lone low surrogate
      "{\"items\":[\"\\ud800\\u0041\"]}",
      "{\"items\":[\"\xff\"]}",          // not UTF-8
      "{\"items\":[\"\xc0\xaf\"]}",      // overlong
      "{\"items\":[\"\xed\xa0\x80\"]}",  // UTF-8 encoded surrogate
      "{\"items\":[\"a\"] \"x\":1}",
      "{\"items\" [\"a\"]}",
      // The same faults past the first 16 bytes of a string (the vector scan).
      "{\"items\":[\"0123456789abcdefghij\x01\"]}",
      "{\"items\":[\"0123456789abcdefghij\xff\"]}",
      "{\"items\":[\"0123456789abcdefghij\xc3\"]}",
      "{\"items\":[\"0123456789abcdefghij\\q\"]}",
      "{\"items\":[\"0123456789abcdefghij",
  };
  for (const std::string& body : bad) {
    EXPECT_TRUE(json::accept(body) == false) << "reference accepts: " << body;
    EXPECT_EQ(ParseStatus(body, true).code(), StatusCode::kInvalidArgument) << body;
  }
}

// A body that ends early says "truncated", not just "malformed".
TEST(ItemsBodyTest, TruncatedBodiesSayTruncated) {
  for (const std::string body : {"{", R"({"items":["a","b")", R"({"items":["a","b)",
                                 R"({"items":[)", R"({"items":["a"])", R"({"items")"}) {
    Status s = ParseStatus(body);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << body;
    EXPECT_NE(
        s.message().find("truncated JSON: the body ends at byte " + std::to_string(body.size())),
        std::string::npos)
        << body << ": " << s.ToString();
  }
  Status mid = ParseStatus(R"({"items":["a",]})");
  EXPECT_EQ(mid.message().find("truncated"), std::string::npos) << mid.ToString();
}

TEST(ItemsBodyTest, RejectsValidJsonOfTheWrongShape) {
  for (const std::string body :
       {"{}", R"({"items":"a"})", R"({"items":[true]})", R"({"items":[null]})",
        R"({"items":[["a"]]})", R"({"items":[{"a":1}]})", R"({"item":["a"]})",
        R"({"items":["a"],"items":["b"]})", R"({"items":["a"],"extra":1})", R"(["a"])", R"("a")"}) {
    EXPECT_TRUE(json::accept(body)) << body;
    EXPECT_EQ(ParseStatus(body, true).code(), StatusCode::kInvalidArgument) << body;
  }
}

TEST(ItemsBodyTest, EnforcesLimitsAsTooLarge) {
  ItemLimits limits{.max_items = 3, .max_item_bytes = 5};
  EXPECT_TRUE(ParseStatus(R"({"items":["a","b","12345"]})", false, limits).ok());
  EXPECT_EQ(ParseStatus(R"({"items":["a","b","c","d"]})", false, limits).code(),
            StatusCode::kTooLarge);
  EXPECT_EQ(ParseStatus(R"({"items":["123456"]})", false, limits).code(), StatusCode::kTooLarge);
  // The limit is on the unescaped item: "\u00e9" is 2 bytes, 6 of them 12.
  EXPECT_EQ(ParseStatus(R"({"items":["\u00e9\u00e9\u00e9"]})", false, limits).code(),
            StatusCode::kTooLarge);
}

// Random strings (ASCII, multi-byte, control characters, quotes) serialized by
// nlohmann must come back byte-identical.
TEST(ItemsBodyTest, RoundTripsRandomStringsSerializedByReference) {
  std::mt19937 rng(42);
  const std::vector<std::string> pieces = {"a",  "Z",    "0",    " ", "\"", "\\", "/",    "\n",
                                           "\t", "\x01", "\x1f", "é", "€",  "😀",  "ORD-", "\x7f"};
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> items(rng() % 20);
    for (auto& item : items) {
      const size_t len = rng() % 40;
      for (size_t i = 0; i < len; ++i) item += pieces[rng() % pieces.size()];
    }
    const std::string body = json{{"items", items}}.dump(round % 2 == 0 ? -1 : 2, ' ',
                                                         /*ensure_ascii=*/round % 3 == 0);
    EXPECT_EQ(ParseOk(body), items) << body;
  }
}

TEST(ItemsBodyTest, AppendJsonStringIsValidJsonEvenForInvalidUtf8) {
  for (const std::string& s : {std::string("plain"), std::string("q\"b\\s\n\x01"),
                               std::string("\xff\xfe bad"), std::string("é€😀")}) {
    std::string out;
    AppendJsonString(s, &out);
    ASSERT_TRUE(json::accept(out)) << out;
    if (s.find('\xff') == std::string::npos) {
      EXPECT_EQ(json::parse(out).get<std::string>(), s);
    }
  }
}

// Every code has its HTTP status; a store out of room is 507 and a store
// error, an oversized request 413 and the client's error.
TEST(HttpStatusTest, MapsEveryCode) {
  const std::map<StatusCode, int> expected = {
      {StatusCode::kOk, 200},
      {StatusCode::kInvalidArgument, 400},
      {StatusCode::kNotFound, 404},
      {StatusCode::kAlreadyExists, 409},
      {StatusCode::kConflict, 409},
      {StatusCode::kUnavailable, 503},
      {StatusCode::kDeadlineExceeded, 504},
      {StatusCode::kResourceExhausted, 507},
      {StatusCode::kTooLarge, 413},
      {StatusCode::kDataLoss, 500},
      {StatusCode::kUnimplemented, 501},
      {StatusCode::kInternal, 500},
  };
  for (const auto& [code, http] : expected) {
    EXPECT_EQ(HttpStatusFor(Status(code, "x")), http) << StatusCodeName(code);
  }
  EXPECT_TRUE(IsStoreFault(StatusCode::kResourceExhausted));
  EXPECT_TRUE(IsStoreFault(StatusCode::kUnavailable));
  EXPECT_FALSE(IsStoreFault(StatusCode::kTooLarge));
  EXPECT_FALSE(IsStoreFault(StatusCode::kInvalidArgument));
}

TEST(HttpHelpersTest, TokenMatches) {
  EXPECT_TRUE(TokenMatches("s3cret", "s3cret"));
  EXPECT_FALSE(TokenMatches("s3cre", "s3cret"));
  EXPECT_FALSE(TokenMatches("s3cretX", "s3cret"));
  EXPECT_FALSE(TokenMatches("S3cret", "s3cret"));
  EXPECT_FALSE(TokenMatches("", "s3cret"));
  // A prefix repeated to the expected length must not match.
  EXPECT_FALSE(TokenMatches("s3", "s3s3s3"));
  EXPECT_FALSE(TokenMatches("", ""));  // an empty expected token never matches
}

TEST(ConfigTest, ParseListen) {
  std::string host;
  int port = -1;
  ASSERT_TRUE(ParseListen("127.0.0.1:8080", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(ParseListen("[::1]:0", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(ParseListen("[fe80::1%lo]:0", &host, &port).ok());  // a zone id, as getaddrinfo takes
  EXPECT_EQ(host, "fe80::1%lo");
  for (const char* bad : {"8080", ":8080", "host:", "host:70000", "host:-1", "::1:80", "[::1]80",
                          "host:8x", "[localhost]:80", "[127.0.0.1]:80", "[::1:62101]:80"}) {
    EXPECT_EQ(ParseListen(bad, &host, &port).code(), StatusCode::kInvalidArgument) << bad;
  }
}

class FakeEnv {
 public:
  explicit FakeEnv(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  std::function<const char*(const char*)> fn() const {
    return [this](const char* name) -> const char* {
      auto it = vars_.find(name);
      return it == vars_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> vars_;
};

TEST(ConfigTest, DefaultsWithoutFlagsEnvOrFile) {
  FakeEnv env({});
  auto c = ResolveConfig(Flags{}, env.fn());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->http.host, "127.0.0.1");
  EXPECT_EQ(c->http.port, 8080);
  EXPECT_EQ(c->store, DefaultStoreUrl());
  EXPECT_EQ(c->http.token, "");
  EXPECT_EQ(c->listen_source, "default");
  // Stores flag retired filters, so a periodic re-read is enough.
  EXPECT_EQ(c->service.revalidate_after.count(), 1000);
}

TEST(ConfigTest, ApplyConfigJsonSetsEveryKeyAndRejectsUnknownOnes) {
  ServerConfig c;
  ASSERT_TRUE(ApplyConfigJson(R"({"listen":"0.0.0.0:9000","store":"mem:","token":"t",
      "access_log":"off","access_log_flush_ms":0,"log_items":true,"public_metrics":true,"threads":4,
      "keep_alive_timeout_s":2,"keep_alive_max_requests":50,"read_timeout_s":3,
      "write_timeout_s":4,"max_body_bytes":2048,"max_items":7,"max_item_bytes":9,
      "filter_revalidate_ms":250,"filter_cache_size":3,"filter_idle_ms":5000,"sync_interval_ms":250,
      "expiry_sweep_ms":0,"store_connect_timeout_ms":100,
      "store_command_timeout_ms":200,"store_idle_timeout_ms":0,"store_pool_size":2,"store_max_retries":0,
      "store_batch_items":10,"header_timeout_s":6,"body_timeout_s":7,"max_connections":8,
      "max_connections_per_client":0,"max_filter_bytes":4096,"body_buffer_bytes":0})",
                              &c)
                  .ok());
  EXPECT_EQ(c.listen, "0.0.0.0:9000");
  EXPECT_EQ(c.store, "mem:");
  EXPECT_EQ(c.http.token, "t");
  EXPECT_EQ(c.access_log, "off");
  EXPECT_EQ(c.access_log_flush.count(), 0);
  EXPECT_TRUE(c.http.log_items);
  EXPECT_TRUE(c.http.public_metrics);
  EXPECT_EQ(c.http.threads, 4);
  EXPECT_EQ(c.http.keep_alive_timeout_s, 2);
  EXPECT_EQ(c.http.keep_alive_max_requests, 50);
  EXPECT_EQ(c.http.read_timeout_s, 3);
  EXPECT_EQ(c.http.write_timeout_s, 4);
  EXPECT_EQ(c.http.max_body_bytes, 2048u);
  EXPECT_EQ(c.service.limits.max_items, 7u);
  EXPECT_EQ(c.service.limits.max_item_bytes, 9u);
  EXPECT_EQ(c.filter_revalidate_ms, 250);
  EXPECT_EQ(c.service.filter_cache_size, 3u);
  EXPECT_EQ(c.service.idle_after.count(), 5000);
  EXPECT_EQ(c.service.sync_interval.count(), 250);
  EXPECT_EQ(c.service.expiry_sweep.count(), 0);
  EXPECT_EQ(c.service.store_options.connect_timeout.count(), 100);
  EXPECT_EQ(c.service.store_options.command_timeout.count(), 200);
  EXPECT_EQ(c.service.store_options.idle_timeout.count(), 0);
  EXPECT_EQ(c.service.store_options.pool_size, 2);
  EXPECT_EQ(c.service.store_options.max_retries, 0);
  EXPECT_EQ(c.service.store_options.batch_items, 10u);
  EXPECT_EQ(c.http.header_timeout_s, 6);
  EXPECT_EQ(c.http.body_timeout_s, 7);
  EXPECT_EQ(c.http.max_connections, 8);
  EXPECT_EQ(c.http.max_connections_per_client, 0);
  EXPECT_EQ(c.max_filter_bytes, 4096u);
  EXPECT_EQ(c.max_filter_bytes_source, "config");
  EXPECT_EQ(c.http.body_buffer_bytes, 0u);

  for (const char* bad :
       {R"({"listn":"x"})", R"({"threads":0})", R"({"threads":"4"})", R"({"threads":1.5})",
        R"({"max_body_bytes":10})", R"({"log_items":1})", R"([1])", R"({"token":5})",
        R"({"store_pool_size":99999})", R"({"store_idle_timeout_ms":-1})",
        R"({"header_timeout_s":0})", R"({"max_connections":60001})",
        R"({"max_connections_per_client":-1})", R"({"max_connections_per_client":60001})",
        R"({"max_filter_bytes":-1})", R"({"body_buffer_bytes":-1})",
        R"({"body_buffer_bytes":2000000000000})", "{",
        // Past 2^63 (it read as 2^63 - 1), empty strings (an empty token or
        // token file turned authentication off, an empty store fell back
        // to the default), and a key given twice (the last one counted).
        R"({"max_filter_bytes":18446744073709551615})", R"({"token":""})", R"({"token_file":""})",
        R"({"store":""})", R"({"listen":""})", R"({"access_log":""})",
        R"({"token":"s3cret-value","threads":2,"token":""})", R"({"threads":2,"threads":3})"}) {
    ServerConfig d;
    EXPECT_EQ(ApplyConfigJson(bad, &d).code(), StatusCode::kInvalidArgument) << bad;
  }
}

// Behind a proxy every client shares one address: the per-client limit may
// be raised as far as max_connections may (the docs say so), not to 1000.
TEST(ConfigTest, ThePerClientLimitReachesMaxConnections) {
  ServerConfig c;
  const Status s =
      ApplyConfigJson(R"({"max_connections":60000,"max_connections_per_client":60000})", &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.http.max_connections_per_client, 60000);
}

TEST(ConfigTest, TruncatedConfigSaysTruncated) {
  ServerConfig d;
  Status s = ApplyConfigJson(R"({"listen":"127.0.0.1:1")", &d);
  EXPECT_NE(s.message().find("config file is truncated JSON"), std::string::npos) << s.ToString();
  Status bad = ApplyConfigJson(R"({"listen":"127.0.0.1:1",,})", &d);
  EXPECT_NE(bad.message().find("not valid JSON"), std::string::npos) << bad.ToString();
}

// nlohmann takes a NUL byte for the end of its input, and "\u0000" in a
// string is valid JSON: a token after a NUL byte was dropped unread, and an
// access_log path with \u0000 in it wrote to the part before it.
TEST(ConfigTest, NulBytesAndNulCharactersAreRefused) {
  ServerConfig d;
  Status raw = ApplyConfigJson(std::string(R"({"threads":3})") + '\0' + R"({"token":"x"})", &d);
  EXPECT_EQ(raw.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(raw.message().find("a NUL byte at byte 13"), std::string::npos) << raw.ToString();
  for (const char* key : {"access_log", "store", "listen", "token", "token_file"}) {
    Status s = ApplyConfigJson(std::string(R"({")") + key + R"(":"/tmp/a\u0000b"})", &d);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(s.message().find("holds a NUL character"), std::string::npos) << s.ToString();
  }
}

TEST(ConfigTest, ParseByteSize) {
  EXPECT_EQ(ValueOrFail(ParseByteSize("0")), 0u);
  EXPECT_EQ(ValueOrFail(ParseByteSize("1073741824")), uint64_t{1} << 30);
  EXPECT_EQ(ValueOrFail(ParseByteSize("1GiB")), uint64_t{1} << 30);
  EXPECT_EQ(ValueOrFail(ParseByteSize("512m")), uint64_t{512} << 20);
  EXPECT_EQ(ValueOrFail(ParseByteSize("2K")), 2048u);
  EXPECT_EQ(ValueOrFail(ParseByteSize("3TiB")), uint64_t{3} << 40);
  EXPECT_EQ(ValueOrFail(ParseByteSize("9223372036854775807")), uint64_t{INT64_MAX});
  for (const char* bad : {"", "G", "1.5G", "-1", "10X", "1 GiB", "99999999999999999999",
                          "16777216T", "512ib", "1iB"}) {
    EXPECT_EQ(ParseByteSize(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // The config file's bound, said as such (the flag took up to 2^64 - 1, and
  // a number past that was "not a byte size").
  for (const char* large : {"9223372036854775808", "99999999999999999999", "8388608T"}) {
    const Status s = ParseByteSize(large).status();
    EXPECT_NE(s.message().find("larger than 9223372036854775807"), std::string::npos)
        << large << ": " << s.ToString();
  }
}

// The default limit is sized to the machine for the stores this process
// maps, and left to the Redis server's maxmemory otherwise; a flag or the
// config file overrides it.
TEST(ConfigTest, MaxFilterBytesDefaultsToAQuarterOfMemoryForLocalStores) {
  constexpr uint64_t kRam = uint64_t{16} << 30;
  EXPECT_EQ(DefaultMaxFilterBytes("file:/var/lib/redbloom", kRam), kRam / 4);
  EXPECT_EQ(DefaultMaxFilterBytes("mem:", kRam), kRam / 4);
  EXPECT_EQ(DefaultMaxFilterBytes("redis://127.0.0.1:6379", kRam), 0u);
  EXPECT_EQ(DefaultMaxFilterBytes("redis-cluster://127.0.0.1:7000", kRam), 0u);
  ASSERT_GT(PhysicalMemoryBytes(), 0u);

  FakeEnv env({});
  Flags flags;
  flags.store = "file:/tmp/x";
  auto c = ResolveConfig(flags, env.fn());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->service.max_filter_bytes, PhysicalMemoryBytes() / 4);
  EXPECT_EQ(c->max_filter_bytes_source, "default");
  flags.max_filter_bytes = "2GiB";
  c = ResolveConfig(flags, env.fn());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->service.max_filter_bytes, uint64_t{2} << 30);
  EXPECT_EQ(c->max_filter_bytes_source, "flag");
  flags.max_filter_bytes = "lots";
  EXPECT_EQ(ResolveConfig(flags, env.fn()).status().code(), StatusCode::kInvalidArgument);
}

TEST(ServiceTest, FilterBytesCountsEveryShardAndSliceButOneLayer) {
  FilterOptions o{.capacity = 1'000'000, .error_rate = 0.01};
  ASSERT_OK_AND_ASSIGN(FilterConfig plain, MakeConfig(o));
  EXPECT_EQ(ValueOrFail(FilterBytes(plain)), plain.data_bytes());
  o.kind = FilterKind::kCounting;
  ASSERT_OK_AND_ASSIGN(FilterConfig counting, MakeConfig(o));
  EXPECT_EQ(ValueOrFail(FilterBytes(counting)), counting.data_bytes());
  EXPECT_EQ(counting.data_bytes(), (counting.geometry.bits * 4 + 7) / 8);
  o.kind = FilterKind::kScaling;
  ASSERT_OK_AND_ASSIGN(FilterConfig scaling, MakeConfig(o));
  EXPECT_EQ(ValueOrFail(FilterBytes(scaling)), scaling.data_bytes());  // the first layer
  o.kind = FilterKind::kWindow;
  o.window_millis = 60000;
  o.slices = 10;
  ASSERT_OK_AND_ASSIGN(FilterConfig window, MakeConfig(o));
  // Each slice is kept one slice past the window: 11 are stored at once.
  EXPECT_EQ(ValueOrFail(FilterBytes(window)), 11 * window.data_bytes());
  o.slices = 1;
  ASSERT_OK_AND_ASSIGN(FilterConfig one_slice, MakeConfig(o));
  EXPECT_EQ(ValueOrFail(FilterBytes(one_slice)), 2 * one_slice.data_bytes());
  o = FilterOptions{.capacity = 1'000'000, .error_rate = 0.01, .shards = 4};
  ASSERT_OK_AND_ASSIGN(FilterConfig sharded, MakeConfig(o));
  uint64_t shards = 0;
  for (uint64_t p = 0; p < 4; ++p) shards += ValueOrFail(SizePart(sharded, p)).bytes(1);
  EXPECT_EQ(ValueOrFail(FilterBytes(sharded)), shards);
  EXPECT_GE(shards, plain.data_bytes() - 64);
}

TEST(HttpHelpersTest, LanesSeparateProbesAndReadinessFromOtherRequests) {
  for (const char* probe :
       {"GET /healthz HTTP/1.1", "GET /metrics HTTP/1.0", "GET /healthz?verbose HTTP/1.1"}) {
    EXPECT_EQ(LaneOf(probe), Lane::kProbe) << probe;
  }
  for (const char* ready : {"HEAD /readyz HTTP/1.1", "GET /readyz?x HTTP/1.1"}) {
    EXPECT_EQ(LaneOf(ready), Lane::kReadiness) << ready;
  }
  for (const char* no :
       {"POST /healthz HTTP/1.1", "GET /healthzz HTTP/1.1", "GET /v1/filters HTTP/1.1",
        "GET /v1/filters/healthz HTTP/1.1", "GET", "", "get /healthz HTTP/1.1"}) {
    EXPECT_EQ(LaneOf(no), Lane::kGeneral) << no;
  }
}

TEST(ConfigTest, PrecedenceIsFlagThenEnvThenFileThenDefault) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/redbloomd-precedence.json";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"listen":"127.0.0.1:1111","store":"file:/from-config","token":"from-config"})",
               f);
    std::fclose(f);
  }
  Flags flags;
  flags.config = path;
  {
    FakeEnv env({});
    auto c = ResolveConfig(flags, env.fn());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->http.port, 1111);
    EXPECT_EQ(c->store, "file:/from-config");
    EXPECT_EQ(c->http.token, "from-config");
    EXPECT_EQ(c->store_source, "config");
  }
  FakeEnv env({{"REDBLOOMD_LISTEN", "127.0.0.1:2222"},
               {"REDBLOOM_STORE", "redis://127.0.0.1:1"},
               {"REDBLOOMD_TOKEN", "from-env"}});
  {
    auto c = ResolveConfig(flags, env.fn());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->http.port, 2222);
    EXPECT_EQ(c->store, "redis://127.0.0.1:1");
    EXPECT_EQ(c->http.token, "from-env");
    EXPECT_EQ(c->listen_source, "env");
    // A network store re-reads stored configs at most once a second.
    EXPECT_EQ(c->service.revalidate_after.count(), 1000);
  }
  flags.listen = "127.0.0.1:3333";
  flags.store = "mem:";
  flags.token = "";  // an explicit empty flag turns auth off
  {
    auto c = ResolveConfig(flags, env.fn());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->http.port, 3333);
    EXPECT_EQ(c->store, "mem:");
    EXPECT_EQ(c->http.token, "");
    EXPECT_EQ(c->token_source, "flag");
  }
  std::remove(path.c_str());
}

TEST(ConfigTest, RejectsBadTokensAndListen) {
  Flags flags;
  flags.token = "has space";
  FakeEnv env({});
  EXPECT_EQ(ResolveConfig(flags, env.fn()).status().code(), StatusCode::kInvalidArgument);
  flags.token = std::nullopt;
  flags.listen = "nope";
  EXPECT_EQ(ResolveConfig(flags, env.fn()).status().code(), StatusCode::kInvalidArgument);
  flags.listen = std::nullopt;
  flags.config = "/nonexistent/redbloomd.json";
  EXPECT_EQ(ResolveConfig(flags, env.fn()).status().code(), StatusCode::kInvalidArgument);
  flags.config = std::nullopt;
  // `--store "$URL"` with the variable unset served the default file store.
  flags.store = "";
  const auto empty_store = ResolveConfig(flags, env.fn());
  EXPECT_EQ(empty_store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty_store.status().message().find("--store is empty"), std::string::npos)
      << empty_store.status().ToString();
}

// A token file that cannot be a token is named, with why: a second line
// (a file of two secrets) read "token from config must be printable ASCII
// without spaces".
TEST(ConfigTest, ABadTokenFileIsNamed) {
  testing::TempDir dir;
  const std::string two = dir.path() + "/two-lines";
  std::ofstream(two) << "first-secret\nsecond-secret\n";
  const std::string spaced = dir.path() + "/spaced";
  std::ofstream(spaced) << "has space\n";
  ServerConfig c;
  Status s = ApplyConfigJson(R"({"token_file":")" + two + R"("})", &c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("token file " + two + " holds more than one line"), std::string::npos)
      << s.ToString();
  s = ApplyConfigJson(R"({"token_file":")" + spaced + R"("})", &c);
  EXPECT_NE(s.message().find("token from token file " + spaced + " must be printable ASCII"),
            std::string::npos)
      << s.ToString();
}

// An empty REDBLOOM_STORE, as the CLI refuses it, and the natural slip
// REDBLOOMD_STORE, were both ignored: the default file store served, every
// item absent. An unknown scheme passed --print-config.
TEST(ConfigTest, RefusesStoreSettingsThatWouldServeTheWrongStore) {
  Flags flags;
  auto message = [&](std::map<std::string, std::string> vars) {
    FakeEnv env(std::move(vars));
    const auto c = ResolveConfig(flags, env.fn());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
    return c.status().message();
  };
  EXPECT_NE(message({{"REDBLOOM_STORE", ""}}).find("REDBLOOM_STORE is set but empty"),
            std::string::npos);
  EXPECT_NE(message({{"REDBLOOMD_STORE", "redis://127.0.0.1:6379"}})
                .find("the store comes from REDBLOOM_STORE"),
            std::string::npos);
  EXPECT_NE(message({{"REDBLOOM_STORE", "foo://x"}})
                .find("store (from env): unknown store URL 'foo://x' (expected mem:"),
            std::string::npos);
  // An empty variable below a flag or a config file's store is unset, as
  // the docs say of every variable.
  flags.store = "mem:";
  FakeEnv empty(std::map<std::string, std::string>{{"REDBLOOM_STORE", ""}});
  ASSERT_OK_AND_ASSIGN(ServerConfig from_flag, ResolveConfig(flags, empty.fn()));
  EXPECT_EQ(from_flag.store, "mem:");
  flags.store = std::nullopt;
  testing::TempDir dir;
  const std::string config = dir.path() + "/c.json";
  std::ofstream(config) << R"({"store": "mem:"})";
  flags.config = config;
  ASSERT_OK_AND_ASSIGN(ServerConfig from_file, ResolveConfig(flags, empty.fn()));
  EXPECT_EQ(from_file.store, "mem:");
  // A directory or a missing file says why it cannot be read.
  flags.config = dir.path();
  EXPECT_NE(message({}).find("it is a directory"), std::string::npos);
  flags.config = dir.path() + "/missing.json";
  EXPECT_NE(message({}).find("No such file or directory"), std::string::npos);
}

// The packaged unit stops redbloomd with SIGKILL after TimeoutStopSec; a
// shutdown may wait body_timeout_s for a slow body, so the packaged config
// keeps it under that with room for the final sync (both were 30 s: a slow
// upload got the service killed before its msync).
TEST(ConfigTest, PackagedConfigStopsWithinThePackagedUnitsTimeout) {
  std::ifstream unit(REDBLOOM_SOURCE_DIR "/packaging/redbloomd.service");
  ASSERT_TRUE(unit);
  int stop_s = -1;
  for (std::string line; std::getline(unit, line);) {
    if (line.starts_with("TimeoutStopSec=")) stop_s = std::stoi(line.substr(15));
  }
  ASSERT_GT(stop_s, 0) << "no TimeoutStopSec in the unit";
  Flags flags;
  flags.config = REDBLOOM_SOURCE_DIR "/packaging/redbloomd.json";
  FakeEnv env({});
  ASSERT_OK_AND_ASSIGN(ServerConfig c, ResolveConfig(flags, env.fn()));
  EXPECT_LE(c.http.body_timeout_s + 5, stop_s) << "a slow body outlasts the unit's stop timeout";
}

TEST(ConfigTest, IsLoopbackHost) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "localhost",
                           "LOCALHOST", "LocalHost"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.5", "128.0.0.1", "::ffff:10.0.0.1", "::2",
                           "example.internal", "127.0.0.1.example", "", "localhost2", "localhos"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

// The packaged config ships kPlaceholderToken; a service that would expose it
// beyond loopback must not start, whichever source the token came from.
TEST(ConfigTest, RefusesThePlaceholderTokenBeyondLoopback) {
  const std::string path = ::testing::TempDir() + "/redbloomd-placeholder.json";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, R"({"listen":"127.0.0.1:8080","token":"%s"})",
                 std::string(kPlaceholderToken).c_str());
    std::fclose(f);
  }
  FakeEnv no_env({});
  Flags flags;
  flags.config = path;
  auto c = ResolveConfig(flags, no_env.fn());
  ASSERT_TRUE(c.ok()) << c.status().ToString();  // loopback: starts (with a warning)
  EXPECT_EQ(c->http.token, kPlaceholderToken);

  for (const char* listen : {"0.0.0.0:8080", "[::]:8080", "10.0.0.5:80", "example.internal:80"}) {
    flags.listen = listen;
    auto refused = ResolveConfig(flags, no_env.fn());
    ASSERT_FALSE(refused.ok()) << listen;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("placeholder"), std::string::npos)
        << refused.status().message();
    EXPECT_NE(refused.status().message().find(listen), std::string::npos)
        << refused.status().message();
  }

  // From the environment or a flag just the same; a changed token, or none,
  // starts (no token beyond loopback is only warned about).
  flags = Flags{};
  flags.listen = "0.0.0.0:8080";
  FakeEnv env_placeholder({{"REDBLOOMD_TOKEN", std::string(kPlaceholderToken)}});
  EXPECT_EQ(ResolveConfig(flags, env_placeholder.fn()).status().code(),
            StatusCode::kInvalidArgument);
  flags.token = std::string(kPlaceholderToken);
  EXPECT_EQ(ResolveConfig(flags, no_env.fn()).status().code(), StatusCode::kInvalidArgument);
  flags.token = "a-real-secret";
  EXPECT_TRUE(ResolveConfig(flags, env_placeholder.fn()).ok());
  flags.token = "";
  EXPECT_TRUE(ResolveConfig(flags, env_placeholder.fn()).ok());
  std::remove(path.c_str());
}

// A scrape taken while requests complete shows each histogram whole: its
// _count is its +Inf bucket. It read the buckets, then the count, and a
// request recorded in between made them differ (2 of 4,430 scrapes).
TEST(MetricsTest, HistogramCountIsItsInfBucketInAScrapeUnderLoad) {
  Metrics metrics;
  std::atomic<bool> stop{false};
  std::vector<std::thread> recorders;
  for (int t = 0; t < 2; ++t) {
    recorders.emplace_back([&] {
      while (!stop.load()) {
        metrics.RecordRequest(Route::kCheck, "POST", 200, std::chrono::microseconds(300));
      }
    });
  }
  const std::string count_prefix =
      "redbloomd_http_request_duration_seconds_count{route=\"/v1/filters/{name}/check\"} ";
  const std::string inf_prefix =
      "redbloomd_http_request_duration_seconds_bucket{route=\"/v1/filters/{name}/check\","
      "le=\"+Inf\"} ";
  const auto value_after = [](const std::string& text, const std::string& prefix) {
    const size_t at = text.find(prefix);
    if (at == std::string::npos) return std::string("absent");
    const size_t begin = at + prefix.size();
    return text.substr(begin, text.find('\n', begin) - begin);
  };
  int scrapes = 0, differed = 0;
  std::string example;
  for (; scrapes < 20000; ++scrapes) {
    const std::string text = metrics.Render(0, true);
    const std::string count = value_after(text, count_prefix);
    if (count == "absent") continue;
    const std::string inf = value_after(text, inf_prefix);
    if (count != inf) {
      ++differed;
      example = count + " != " + inf;
    }
  }
  stop = true;
  for (std::thread& t : recorders) t.join();
  const std::string last = metrics.Render(0, true);
  ASSERT_NE(value_after(last, count_prefix), "absent") << last;
  EXPECT_EQ(differed, 0) << "of " << scrapes << " scrapes, e.g. " << example;
}

TEST(ConfigTest, RedactUrlHidesPasswords) {
  EXPECT_EQ(RedactUrl("redis://user:pw@host:6379/0"), "redis://user:***@host:6379/0");
  EXPECT_EQ(RedactUrl("redis://:pw@host"), "redis://:***@host");
  EXPECT_EQ(RedactUrl("redis://pw@host"), "redis://***@host");
  EXPECT_EQ(RedactUrl("redis://host:6379"), "redis://host:6379");
  EXPECT_EQ(RedactUrl("file:./data"), "file:./data");
  // A file: path may hold an '@'; only a Redis URL has credentials.
  EXPECT_EQ(RedactUrl("file:/srv/a@b"), "file:/srv/a@b");
  EXPECT_EQ(RedactUrl("redis:/:pw@host"), "redis:/:***@host");
  // A raw '@' in the password: the last '@' ends it, as the parser reads it
  // (the first left "ssWORDtail" in the clear).
  EXPECT_EQ(RedactUrl("redis://app:P@ssWORDtail@host:6379"), "redis://app:***@host:6379");
  // A raw '/' in it, which makes the URL invalid: still hidden when shown.
  EXPECT_EQ(RedactUrl("redis://app:pa/ss@host:6379/0"), "redis://app:***@host:6379/0");
  // Secrets among the options.
  EXPECT_EQ(RedactUrl("redis-sentinel://h:26379/m?sentinel_password=S3&sentinel_user=u"),
            "redis-sentinel://h:26379/m?sentinel_password=***&sentinel_user=u");
  EXPECT_EQ(RedactUrl("rediss://u:p@h?cacert=/x/ca.pem&sentinel_password=S3"),
            "rediss://u:***@h?cacert=/x/ca.pem&sentinel_password=***");
  EXPECT_EQ(RedactUrl("redis://h?"), "redis://h?");
  // A raw '?' in the password (the first '?' no longer starts the options).
  EXPECT_EQ(RedactUrl("redis://u:pa?ss@host:6379"), "redis://u:***@host:6379");
  EXPECT_EQ(RedactUrl("redis://u:pa?ss@host:6379?sentinel_password=x"),
            "redis://u:***@host:6379?sentinel_password=***");
}

// A file: filter the process cannot map for want of memory mappings
// (vm.max_map_count: one per open filter file) was answered 507 while the
// cache's handles held the mappings: the least recently used quarter of the
// handles goes, and the open is tried once more. A forked child takes every
// mapping it has left, then asks for a filter it has not opened.
TEST(ServiceMappingLimitTest, AnOpenAtTheMappingLimitLetsOldHandlesGoAndServes) {
  if (internal::kAddressSanitizer || internal::kThreadSanitizer) {
    GTEST_SKIP() << "the sanitizers' allocators map memory as they go, and fail at the limit: "
                    "this runs in the normal build";
  }
  // 40 filters cached, then 20 more asked for at the limit: a freed malloc
  // block may leave a mapping or two, which the first opens take. Made
  // through a store of their own, which maps them and lets them go.
  constexpr int kCached = 40;
  constexpr int kFilters = 60;
  testing::TempDir dir;
  {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir.path()));
    for (int i = 0; i < kFilters; ++i) {
      ASSERT_TRUE(BloomFilter::Create(*store, "f" + std::to_string(i),
                                      FilterOptions{.capacity = 100, .error_rate = 0.01})
                      .ok());
    }
  }
  Metrics metrics;
  ServiceOptions options;
  options.store_url = "file:" + dir.path();
  Service service(options, &metrics);
  ASSERT_TRUE(service.Start().ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int i = 0; i < kCached; ++i) {  // a mapping each
      if (service.CheckItem("f" + std::to_string(i), "x").status != 200) ::_exit(10);
    }
    if (!testing::TakeEveryMapping()) ::_exit(11);
    for (int i = kCached; i < kFilters; ++i) {
      const Reply r = service.CheckItem("f" + std::to_string(i), "x");
      if (r.status == 507) ::_exit(12);
      if (r.status != 200) ::_exit(13);
    }
    // The most recent handles stayed.
    if (service.CheckItem("f" + std::to_string(kFilters - 2), "x").status != 200) ::_exit(14);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: a check failed; 11: the limit was not reached; 12: 507 at the limit; 13: another "
         "answer; 14: a recent handle was let go of and could not reopen";
}

}  // namespace
}  // namespace redbloom::server
