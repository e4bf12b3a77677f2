// Strategy redisson against Redisson itself: the reference vectors produced by
// running Redisson's own classes (tests/data/redisson: HighwayHash, tryInit's
// sizing and config hash, every codec's indexes), and Redisson's arithmetic
// (sizing, count(), Double.toString of falseProbability) on a real JVM
// (tests/java/RedissonMath.java) for inputs the vectors do not cover.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/filter_config.h"
#include "redbloom/funnel.h"
#include "redbloom/sizing.h"
#include "redbloom/store.h"
#include "redbloom/strategy.h"
#include "strategy/strategy_def.h"
#include "test_util.h"

namespace redbloom {
namespace {

using Json = nlohmann::ordered_json;  // keeps the config hash's field order

std::vector<Json> ReadVectors(const std::string& file) {
  const std::string path = std::string(REDBLOOM_SOURCE_DIR) + "/tests/data/redisson/" + file;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<Json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string ToHex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// Java's signed longs as the vectors print them.
uint64_t Long(const Json& v) { return static_cast<uint64_t>(v.get<int64_t>()); }

const internal::CompanionHash& ConfigHash() {
  return *internal::StrategyOf(Strategy::kRedisson).companion;
}

TEST(RedissonTest, HighwayHashMatchesRedissonsHash128) {
  const auto vectors = ReadVectors("highway.jsonl");
  ASSERT_GE(vectors.size(), 150u);
  for (const Json& v : vectors) {
    const std::string bytes = FromHex(v["hex"]);
    const Hash128 h = HashBytes(Strategy::kRedisson, bytes);
    EXPECT_EQ(h.h1, Long(v["h1"])) << v["kind"] << " len " << bytes.size();
    EXPECT_EQ(h.h2, Long(v["h2"])) << v["kind"] << " len " << bytes.size();
  }
}

TEST(RedissonTest, SizingAndConfigHashMatchTryInit) {
  const auto vectors = ReadVectors("params.jsonl");
  ASSERT_GE(vectors.size(), 60u);
  int refused = 0;
  for (const Json& v : vectors) {
    const uint64_t n = v["n"].get<uint64_t>();
    const double p = v["p"].get<double>();
    ASSERT_EQ(*ParseDouble(v["p_java"].get<std::string>()), p);
    const std::string where = "n=" + std::to_string(n) + " p=" + v["p_java"].get<std::string>();
    auto g = GeometryFor(Strategy::kRedisson, n, p);
    auto config = MakeConfig({.capacity = n, .error_rate = p, .strategy = Strategy::kRedisson});
    if (!v["ok"].get<bool>()) {
      ++refused;
      ASSERT_FALSE(g.ok()) << where;
      EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(g.status().message(), v["message"].get<std::string>()) << where;
      ASSERT_FALSE(config.ok()) << where;
      EXPECT_EQ(config.status().message(), v["message"].get<std::string>()) << where;
      continue;
    }
    ASSERT_TRUE(g.ok()) << where << ": " << g.status().ToString();
    EXPECT_EQ(g->bits, v["size"].get<uint64_t>()) << where;
    EXPECT_EQ(g->hashes, v["hashIterations"].get<uint32_t>()) << where;
    ASSERT_TRUE(config.ok()) << where;
    EXPECT_EQ(config->geometry, *g) << where;
    // The hash tryInit writes, field for field and in its order.
    std::vector<std::pair<std::string, std::string>> want;
    for (const auto& [field, value] : v["config_fields"].items()) {
      want.emplace_back(field, value.get<std::string>());
    }
    EXPECT_EQ(ConfigHash().fields(n, p, *g), want) << where;
  }
  EXPECT_GE(refused, 10);  // the vectors do cover the size limit
}

TEST(RedissonTest, IndexesMatchEveryCodec) {
  const auto vectors = ReadVectors("indexes.jsonl");
  ASSERT_GE(vectors.size(), 800u);
  std::map<std::string, int> per_codec;
  for (const Json& v : vectors) {
    const std::string codec = v["codec"];
    // StringCodec writes the string's UTF-8, LongCodec the long's decimal
    // string (both utf8 here), ByteArrayCodec the bytes themselves.
    const Encoding encoding = codec == "ByteArrayCodec" ? Encoding::kBytes : Encoding::kUtf8;
    const std::string item = codec == "StringCodec" ? v["item"].get<std::string>()
                             : codec == "LongCodec" ? v["item_long"].get<std::string>()
                                                    : FromHex(v["bytes_hex"]);
    const std::string where = codec + " '" + item + "' in " + v["config"].get<std::string>();
    std::string scratch;
    std::string_view bytes;
    ASSERT_TRUE(EncodeItem(encoding, item, &scratch, &bytes).ok()) << where;
    EXPECT_EQ(ToHex(bytes), v["bytes_hex"].get<std::string>()) << where;
    const Hash128 h = HashBytes(Strategy::kRedisson, bytes);
    EXPECT_EQ(h.h1, Long(v["h1"])) << where;
    EXPECT_EQ(h.h2, Long(v["h2"])) << where;

    auto config = MakeConfig({.capacity = v["n"].get<uint64_t>(),
                              .error_rate = v["p"].get<double>(),
                              .strategy = Strategy::kRedisson,
                              .encoding = encoding});
    ASSERT_TRUE(config.ok()) << where;
    ASSERT_EQ(config->geometry.bits, v["size"].get<uint64_t>()) << where;
    ASSERT_EQ(config->geometry.hashes, v["hashIterations"].get<uint32_t>()) << where;
    auto offsets = ItemOffsets(*config, item);
    ASSERT_TRUE(offsets.ok()) << where;
    EXPECT_EQ(*offsets, v["indexes"].get<std::vector<uint64_t>>()) << where;
    ++per_codec[codec];
  }
  // Every codec, and more than a handful of items each.
  EXPECT_GE(per_codec["StringCodec"], 100);
  EXPECT_GE(per_codec["LongCodec"], 100);
  EXPECT_GE(per_codec["ByteArrayCodec"], 50);
}

TEST(RedissonTest, TakesOnlyTheEncodingsOfRedissonsByteCodecs) {
  for (Encoding e : AllEncodings()) {
    const bool takes = e == Encoding::kUtf8 || e == Encoding::kBytes;
    EXPECT_EQ(CheckStrategyEncoding(Strategy::kRedisson, e).ok(), takes) << EncodingName(e);
  }
  EXPECT_EQ(*ParseStrategy("redisson"), Strategy::kRedisson);
}

TEST(RedissonTest, CliOffsetsPrintRedissonsIndexesInItsOrder) {
  // StringCodec and ByteArrayCodec vectors of the 1000 / 1% config (byte
  // strings that can be command-line arguments: no NUL, no line breaks).
  std::vector<std::string> text_items, text_want, byte_items, byte_want;
  for (const Json& v : ReadVectors("indexes.jsonl")) {
    if (v["config"] != "1000_0.01") continue;
    std::string line;
    for (uint64_t o : v["indexes"].get<std::vector<uint64_t>>()) {
      line += (line.empty() ? "" : " ") + std::to_string(o);
    }
    const std::string raw = FromHex(v["bytes_hex"]);
    if (v["codec"] == "StringCodec" && text_items.size() < 5) {
      text_items.push_back(v["item"]);
      text_want.push_back(line);
    }
    if (v["codec"] == "ByteArrayCodec" && byte_items.size() < 5 && !raw.empty() &&
        raw.find_first_of(std::string("\0\n\r", 3)) == std::string::npos) {
      byte_items.push_back(raw);
      byte_want.push_back(line);
    }
  }
  ASSERT_EQ(text_items.size(), 5u);
  ASSERT_EQ(byte_items.size(), 5u);
  for (const auto* set : {&text_items, &byte_items}) {
    std::vector<std::string> argv = {REDBLOOM_CLI_PATH, "offsets",
                                     "--strategy",      "redisson",
                                     "--encoding",      set == &text_items ? "utf8" : "bytes",
                                     "--capacity",      "1000",
                                     "--error",         "0.01"};
    argv.insert(argv.end(), set->begin(), set->end());
    auto r = testing::RunCommand(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(testing::Lines(r.out), set == &text_items ? text_want : byte_want);
  }

  // Redisson has no little-endian number codec.
  auto r =
      testing::RunCommand({REDBLOOM_CLI_PATH, "offsets", "--strategy", "redisson", "--encoding",
                           "int64", "--capacity", "1000", "--error", "0.01", "7"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not take encoding int64"), std::string::npos) << r.err;
}

TEST(RedissonTest, ConfigHashReadsBackAndRefusesWhatRedissonWouldNotWrite) {
  const Geometry g = *RedissonGeometry(1000, 0.01);
  internal::FieldMap fields;
  for (auto& [k, v] : ConfigHash().fields(1000, 0.01, g)) fields[k] = v;
  uint64_t n = 0;
  double p = 0;
  ASSERT_TRUE(ConfigHash().parameters(fields, "cfg", &n, &p).ok());
  EXPECT_EQ(n, 1000u);
  EXPECT_EQ(p, 0.01);

  auto refused = [&](const std::string& field, const std::string& value, const std::string& why) {
    internal::FieldMap bad = fields;
    if (value.empty()) {
      bad.erase(field);
    } else {
      bad[field] = value;
    }
    const Status s = ConfigHash().parameters(bad, "cfg", &n, &p);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << field << "=" << value;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  refused("size", "", "field 'size' is missing");
  refused("falseProbability", "", "field 'falseProbability' is missing");
  refused("size", "9584", "do not follow");
  refused("size", "09585", "do not follow");  // Redisson compares the text
  refused("hashIterations", "8", "do not follow");
  refused("expectedInsertions", "1e3", "is not a count");
  refused("falseProbability", "one percent", "is not a number");
  refused("falseProbability", "2.0", "can't be greater than 1");
}

TEST(RedissonTest, ZeroErrorRateIsDoubleMinValueAsInRedisson) {
  // Guava and the seed helper refuse p = 0; Redisson reads it as
  // Double.MIN_VALUE: -ln(4.9e-324) / ln^2 2 = 1549.45 bits per item (the
  // JVM agrees: SizingAgreesWithTheJvmEverywhere).
  auto g = GeometryFor(Strategy::kRedisson, 1000, 0.0);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->bits, 1549454u);
  EXPECT_EQ(g->hashes, 1074u);
  EXPECT_FALSE(GeometryFor(Strategy::kGuava64, 1000, 0.0).ok());
  auto config = MakeConfig({.capacity = 1000, .error_rate = 0, .strategy = Strategy::kRedisson});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  // Its tryInit writes the p it was given, not MIN_VALUE.
  EXPECT_EQ(ConfigHash().fields(1000, 0.0, *g)[3].second, "0.0");
  auto offsets = ItemOffsets(*config, "ORD-1");
  ASSERT_TRUE(offsets.ok());
  EXPECT_EQ(offsets->size(), 1074u);
}

TEST(RedissonTest, MemoryAndFileStoresSetRedissonsBits) {
  // The same strategy on stores without a config hash: the bits Redisson
  // would set, and a counting filter too (Redis keeps redisson filters plain).
  testing::TempDir dir;
  for (const std::string& url : {std::string("mem:"), "file:" + dir.path()}) {
    auto store = Store::Open(url);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto f = BloomFilter::Create(
        **store, "r", {.capacity = 1000, .error_rate = 0.01, .strategy = Strategy::kRedisson});
    ASSERT_TRUE(f.ok()) << url << ": " << f.status().ToString();
    std::set<uint64_t> want;
    std::vector<std::string> items;
    for (const Json& v : ReadVectors("indexes.jsonl")) {
      if (v["config"] != "1000_0.01" || v["codec"] != "StringCodec") continue;
      items.push_back(v["item"]);
      for (uint64_t o : v["indexes"].get<std::vector<uint64_t>>()) want.insert(o);
    }
    std::vector<std::string_view> views(items.begin(), items.end());
    ASSERT_TRUE((*f)->AddMany(views).ok());
    std::string bitmap;
    ASSERT_TRUE((*f)->ReadBitmap(&bitmap).ok());
    ASSERT_EQ(bitmap.size(), (9585u + 7) / 8) << url;
    std::set<uint64_t> got;
    for (uint64_t i = 0; i < 9585; ++i) {
      if (static_cast<uint8_t>(bitmap[i / 8]) & (0x80u >> (i % 8))) got.insert(i);
    }
    EXPECT_EQ(got, want) << url;
    auto info = (*f)->Info();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->approximate_items, RedissonCount(want.size(), 9585, 7)) << url;

    auto counting = BloomFilter::Create(**store, "c",
                                        {.capacity = 1000,
                                         .error_rate = 0.01,
                                         .strategy = Strategy::kRedisson,
                                         .kind = FilterKind::kCounting});
    ASSERT_TRUE(counting.ok()) << url << ": " << counting.status().ToString();
    ASSERT_TRUE((*counting)->Add("ORD-1").ok());
    bool removed = false;
    ASSERT_TRUE((*counting)->Remove("ORD-1", &removed).ok());
    EXPECT_TRUE(removed) << url;
  }
}

// ---- Redisson's arithmetic on the JVM ---------------------------------------

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Runs RedissonMath once over all requests; one answer line per request.
std::vector<std::string> AskJava(const std::vector<std::string>& requests) {
  std::string input;
  for (const auto& r : requests) input += r + "\n";
  auto r = testing::RunCommand({JAVA, "-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                "-cp", REDISSON_MATH_CLASSDIR, "RedissonMath"},
                               input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = testing::Lines(r.out);
  EXPECT_EQ(lines.size(), requests.size());
  lines.resize(requests.size());
  return lines;
}

std::string Bits(double p) { return std::to_string(std::bit_cast<int64_t>(p)); }

TEST(RedissonJavaTest, SizingAgreesWithTheJvmEverywhere) {
  Rng rng(14);
  std::vector<std::pair<uint64_t, double>> cases = {
      {1000, 0.0},        {1, 0.0},     {3000000, 0.0}, {1000, 1.0},   {0, 0.01},
      {1000, 1.5},        {1000, -0.1}, {1, 1e-300},    {1, 0.999999}, {2, 0.9},
      {1, 0.6},           {12345, 0.5}, {1, 0.691},     {7, 0.691},    {4294967294 / 10, 0.001},
      {430000000, 0.0099}};
  for (int i = 0; i < 4000; ++i) {
    // Capacities over 1 .. 1e10 on a log scale, error rates from 0.9 down
    // to 1e-12 on a log scale, plus some typed-looking ones.
    const uint64_t n = static_cast<uint64_t>(std::pow(10.0, rng.Unit() * 10.0));
    const double p = i % 4 == 0 ? static_cast<double>(1 + rng.Below(999)) / 1000.0
                                : std::pow(10.0, -12.0 * rng.Unit()) * 0.9;
    cases.emplace_back(std::max<uint64_t>(n, 1), p);
  }
  std::vector<std::string> requests;
  for (auto [n, p] : cases) requests.push_back("size " + std::to_string(n) + " " + Bits(p));
  const auto answers = AskJava(requests);
  int refused = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    auto [n, p] = cases[i];
    auto g = GeometryFor(Strategy::kRedisson, n, p);
    const std::string got = g.ok() ? std::to_string(g->bits) + " " + std::to_string(g->hashes)
                                   : "refused " + g.status().message();
    EXPECT_EQ(got, answers[i]) << "n=" << n << " p=" << p;
    refused += g.ok() ? 0 : 1;
  }
  EXPECT_GE(refused, 20);
}

TEST(RedissonJavaTest, ApproximateItemsIsRedissonsCount) {
  Rng rng(1403);
  struct Case {
    uint64_t m;
    uint32_t k;
    uint64_t c;
  };
  std::vector<Case> cases;
  for (auto [n, p] : {std::pair<uint64_t, double>{1000, 0.01},
                      {10, 0.5},
                      {100, 0.03},
                      {1000000, 0.001},
                      {12345, 1e-6}}) {
    const Geometry g = *RedissonGeometry(n, p);
    // g.bits + 3: bits set past m (never by Redisson): Math.round(NaN) = 0.
    for (uint64_t c : {uint64_t{0}, uint64_t{1}, g.bits / 2, g.bits - 1, g.bits, g.bits + 3}) {
      cases.push_back({g.bits, g.hashes, c});
    }
    for (int i = 0; i < 400; ++i) cases.push_back({g.bits, g.hashes, rng.Below(g.bits + 1)});
  }
  std::vector<std::string> requests;
  for (const Case& c : cases) {
    requests.push_back("count " + std::to_string(c.m) + " " + std::to_string(c.k) + " " +
                       std::to_string(c.c));
  }
  const auto answers = AskJava(requests);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const uint64_t got =
        EstimateItems(Strategy::kRedisson, c.c, Geometry{.bits = c.m, .hashes = c.k});
    // Every bit set: Redisson answers Long.MAX_VALUE, redbloom "unbounded".
    const std::string want =
        answers[i] == "9223372036854775807" ? std::to_string(UINT64_MAX) : answers[i];
    EXPECT_EQ(std::to_string(got), want) << "m=" << c.m << " k=" << c.k << " c=" << c.c;
  }
}

TEST(RedissonJavaTest, FalseProbabilityIsWrittenAsJavasDoubleToString) {
  // Error rates people type: 1 to 3 significant digits from 0.9 down to
  // 1e-15, and the edges. (JDK 17 prints more digits than the shortest for
  // some doubles far from any short decimal; see JavaDoubleToString.)
  std::vector<double> ps = {0.0,
                            0.5,
                            1.0,
                            0.1,
                            0.25,
                            1e-7,
                            3e-3,
                            0.0125,
                            1e-3,
                            9.99e-4,
                            std::numeric_limits<double>::denorm_min()};
  for (int e = 1; e <= 15; ++e) {
    for (int d : {1, 2, 3, 5, 7, 9, 11, 15, 25, 33, 50, 75, 99, 101, 125, 333, 999}) {
      ps.push_back(d / std::pow(10.0, e + (d >= 100 ? 2 : d >= 10 ? 1 : 0)));
    }
  }
  std::vector<std::string> requests;
  for (double p : ps) requests.push_back("string " + Bits(p));
  const auto answers = AskJava(requests);
  const Geometry g = {.bits = 1, .hashes = 1};
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(ConfigHash().fields(1, ps[i], g)[3].second, answers[i]) << ps[i];
  }
}

}  // namespace
}  // namespace redbloom
