// Interop through Redis with the Java seed service: a real JVM runs the blog
// posts' BloomFilterHelper with Guava and talks to the test's redis-server
// with one SETBIT/GETBIT per offset (tests/java/SeedRedis.java), exactly as
// the posts' Spring RedisService does. Both directions, both funnels, and the
// key bytes of Spring's default RedisTemplate (JDK serialization).
//
// Nothing is hard-coded: Java writes, redbloom must find every item; redbloom
// writes, Java must find every item; and each check has teeth (items never
// added must mostly be reported absent).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "redis/redis_keys.h"
#include "redis_server.h"
#include "redis_test_raw.h"
#include "test_util.h"

namespace redbloom {
namespace {

using testing::RawRedis;
using testing::RedisServer;
using testing::SharedRedisTest;

std::vector<std::string> Items(std::string_view prefix, size_t from, size_t to) {
  std::vector<std::string> out;
  for (size_t i = from; i < to; ++i) out.push_back(std::string(prefix) + std::to_string(i));
  return out;
}

std::string JoinLines(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += i + "\n";
  return s;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// One filter shared with Java: the parameters both sides are given.
struct Shared {
  std::string key;
  std::string funnel;  // SeedRedis funnel name == redbloom encoding name
  uint64_t capacity;
  double error_rate;
  std::string keys;  // plain | jdk

  FilterOptions Options() const {
    return FilterOptions{.capacity = capacity,
                         .error_rate = error_rate,
                         .strategy = Strategy::kSeed,
                         .encoding = funnel == "utf8" ? Encoding::kUtf8 : Encoding::kUtf8x2};
  }
};

class RedisJavaTest : public SharedRedisTest {
 protected:
  // Runs SeedRedis; fails the test if Java does.
  static std::string Java(const std::vector<std::string>& args, const std::string& input) {
    std::vector<std::string> argv = {
        JAVA, "-cp", std::string(GUAVA_JAR) + ":" + SEED_REDIS_CLASSPATH, "SeedRedis"};
    argv.insert(argv.end(), args.begin(), args.end());
    const testing::CommandResult r = testing::RunCommand(argv, input);
    EXPECT_EQ(r.exit_code, 0) << "java failed: " << r.err;
    return r.out;
  }
  static void JavaAdd(const Shared& f, const std::vector<std::string>& items) {
    Java({std::to_string(server_->port()), "add", f.funnel, std::to_string(f.capacity),
          FormatDouble(f.error_rate), f.keys, f.key},
         JoinLines(items));
  }
  // Java's answers, one 0/1 per item.
  static std::vector<int> JavaCheck(const Shared& f, const std::vector<std::string>& items) {
    const std::string out =
        Java({std::to_string(server_->port()), "check", f.funnel, std::to_string(f.capacity),
              FormatDouble(f.error_rate), f.keys, f.key},
             JoinLines(items));
    std::vector<int> answers;
    for (const auto& line : testing::Lines(out)) answers.push_back(line == "1" ? 1 : 0);
    EXPECT_EQ(answers.size(), items.size());
    return answers;
  }

  std::unique_ptr<Store> OpenStore(const Shared& f) {
    auto s = Store::Open(server_->url() + (f.keys == "jdk" ? "?keys=jdk" : ""));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }
  std::string KeyBytes(const Shared& f) {
    return f.keys == "jdk" ? internal::JdkSerializedString(f.key) : f.key;
  }

  // Java writes `a`; redbloom attaches, finds every item of `a` and adds
  // `b`; Java finds every item of both, and reports most of `c` (never
  // added) absent.
  void BothDirections(const Shared& f) {
    // Java pays a round trip per bit (~7 per item), so the sets stay small.
    const size_t n = std::min<size_t>(f.capacity / 2, 300);
    const auto a = Items("ORD-java-", 0, n);
    const auto b = Items("订单-cpp-", 0, n);
    const auto c = Items("pedido-ção-never-", 0, 500);
    JavaAdd(f, a);
    const std::string java_bits = raw_->Str({"GET", KeyBytes(f)});
    ASSERT_FALSE(java_bits.empty()) << "Java wrote nothing to " << f.key;

    auto store = OpenStore(f);
    auto filter = BloomFilter::Attach(*store, f.key, f.Options());
    ASSERT_TRUE(filter.ok()) << filter.status().ToString();
    // Attaching changed no bit (it may only zero-extend the string).
    const std::string attached_bits = raw_->Str({"GET", KeyBytes(f)});
    EXPECT_EQ(attached_bits.substr(0, java_bits.size()), java_bits);
    EXPECT_EQ(attached_bits.find_first_not_of('\0', java_bits.size()), std::string::npos);

    std::vector<uint8_t> present;
    ASSERT_TRUE((*filter)->ContainsMany(Views(a), &present).ok());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(present[i], 1) << "Java's item " << a[i];
    ASSERT_TRUE((*filter)->AddMany(Views(b)).ok());

    // One JVM answers for all three sets (a JVM start costs ~0.5 s).
    std::vector<std::string> all = a;
    all.insert(all.end(), b.begin(), b.end());
    all.insert(all.end(), c.begin(), c.end());
    const auto java = JavaCheck(f, all);
    ASSERT_EQ(java.size(), all.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(java[i], 1) << a[i];
    for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(java[a.size() + i], 1) << "redbloom's " << b[i];
    const std::vector<int> java_c(java.begin() + a.size() + b.size(), java.end());
    size_t java_fp = 0;
    for (int v : java_c) java_fp += v;
    // Teeth: at or below capacity about 1% of never-added items look present.
    EXPECT_LT(java_fp, c.size() / 10) << "Java's check answers 1 for everything";
    // And both sides agree on those false positives, bit for bit.
    ASSERT_TRUE((*filter)->ContainsMany(Views(c), &present).ok());
    for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(present[i], java_c[i]) << c[i];
  }
};

// The Portuguese post: StringRedisTemplate, putString(UTF_8), 1000 items at 1%.
TEST_F(RedisJavaTest, PortuguesePostUtf8BothDirections) {
  BothDirections({"blacklist:pedidos", "utf8", 1000, 0.01, "plain"});
}

// The Chinese post: putString twice, key "order", 100 items at 1%.
TEST_F(RedisJavaTest, ChinesePostUtf8x2BothDirections) {
  BothDirections({"order", "utf8x2", 100, 0.01, "plain"});
}

// The Chinese post's service uses Spring's default RedisTemplate, whose key
// bytes are the JDK serialization of the String: redbloom reaches them with
// ?keys=jdk.
TEST_F(RedisJavaTest, RedisTemplateJdkSerializedKeyBothDirections) {
  BothDirections({"order", "utf8x2", 1000, 0.01, "jdk"});
  // The bitmap lives under the serialized bytes, not the plain name.
  EXPECT_EQ(raw_->Int({"EXISTS", "order"}), 0);
  EXPECT_EQ(raw_->Int({"EXISTS", internal::JdkSerializedString("order")}), 1);
}

// A filter redbloom creates (pre-sized, with metadata) reads the same in Java.
TEST_F(RedisJavaTest, FilterCreatedByRedbloomReadsTheSameInJava) {
  const Shared f{"blacklist:pedidos", "utf8", 5000, 0.001, "jdk"};
  auto store = OpenStore(f);
  auto filter = BloomFilter::Create(*store, f.key, f.Options());
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  const auto items = Items("ORD-", 0, 600);
  ASSERT_TRUE((*filter)->AddMany(Views(items)).ok());
  const auto answers = JavaCheck(f, items);
  for (size_t i = 0; i < answers.size(); ++i) ASSERT_EQ(answers[i], 1) << items[i];
}

// redbloom's JDK key bytes equal ObjectOutputStream's, including modified
// UTF-8 (NUL, astral characters as surrogate pairs) and the long-string form.
TEST_F(RedisJavaTest, JdkKeyBytesMatchObjectOutputStream) {
  std::vector<std::string> names = {
      "order",
      "blacklist:pedidos",
      "订单",
      "pedido-ção",
      "🎉party",
      std::string("nul\0inside", 10),
      "{tag}x:meta",
      std::string(65535, 'a'),
      std::string(70000, 'b'),
      std::string(30000, 'x') + "订单订单订单" + std::string(40000, 'y')};
  const auto java = testing::Lines(Java({"0", "jdkkey"}, JoinLines(names)));
  ASSERT_EQ(java.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(Hex(internal::JdkSerializedString(names[i])), java[i])
        << "name " << i << " (" << names[i].size() << " bytes)";
  }
}

}  // namespace
}  // namespace redbloom
