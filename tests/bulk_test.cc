// Bulk load, Guava import/export against real Guava, dumps between every pair
// of stores, and merge.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "config_codec.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/clock.h"
#include "redbloom/transfer.h"
#include "redis_server.h"
#include "test_util.h"

namespace redbloom {
namespace {

using testing::RunCommand;

std::vector<std::string> Items(const std::string& prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

std::string Hex(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs GuavaFiles with `items` on stdin (hex for utf8, decimal for int64).
std::string Java(const std::vector<std::string>& args, const std::vector<std::string>& items,
                 bool hex) {
  std::vector<std::string> argv = {JAVA, "-cp", std::string(GUAVA_JAR) + ":" + GUAVA_FILES_CLASSDIR,
                                   "GuavaFiles"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string input;
  for (const auto& i : items) input += (hex ? Hex(i) : i) + "\n";
  auto r = RunCommand(argv, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(BitmapBuilderTest, LoadEqualsPerItemAdds) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  const FilterOptions o{.capacity = 20000, .error_rate = 0.01};
  auto a = BloomFilter::Create(**store, "a", o);
  auto b = BloomFilter::Create(**store, "b", o);
  ASSERT_TRUE(a.ok() && b.ok());
  const auto items = Items("ORD-", 20000);
  ASSERT_TRUE((*a)->AddMany(Views(items)).ok());
  BitmapBuilder builder((*b)->config());
  ASSERT_TRUE(builder.Add(Views(items)).ok());
  ASSERT_TRUE((*b)->OrBitmap(builder.bitmap(), builder.new_items()).ok());
  std::string bits_a, bits_b;
  ASSERT_TRUE((*a)->ReadBitmap(&bits_a).ok());
  ASSERT_TRUE((*b)->ReadBitmap(&bits_b).ok());
  EXPECT_EQ(bits_a, bits_b);
  EXPECT_EQ(testing::ValueOrFail((*a)->Info()).items_added,
            testing::ValueOrFail((*b)->Info()).items_added);
}

TEST(BitmapBuilderTest, BadItemChangesNothing) {
  auto config = MakeConfig({.capacity = 100, .error_rate = 0.01, .encoding = Encoding::kInt64});
  ASSERT_TRUE(config.ok());
  BitmapBuilder builder(*config);
  std::vector<std::string_view> items = {"1", "x"};
  EXPECT_EQ(builder.Add(items).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(builder.bitmap().find_first_not_of('\0'), std::string::npos);
  EXPECT_EQ(builder.items(), 0u);
}

// A builder starts only from its own filter's bitmap: one of another length
// was cut or padded with zeros, and built on as if it were.
TEST(BitmapBuilderTest, AStartingBitmapOfAnotherLengthIsRefused) {
  auto config = MakeConfig({.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(config.ok());
  const std::string own(config->data_bytes(), '\x01');
  BitmapBuilder builder(*config, own);
  EXPECT_EQ(builder.bitmap(), own);
  for (const size_t size : {size_t{0}, size_t{5}, own.size() - 1, own.size() + 1, size_t{100000}}) {
    EXPECT_THROW(BitmapBuilder(*config, std::string(size, '\x01')), std::invalid_argument) << size;
  }
}

// A builder makes one bit array, which OrBitmap takes only from a filter of
// one: a scaling, window or sharded filter's builder built bits for nothing.
TEST(BitmapBuilderTest, AConfigOfSeveralArraysIsRefused) {
  const FilterOptions several[] = {
      {.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kScaling},
      {.capacity = 1000,
       .error_rate = 0.01,
       .kind = FilterKind::kWindow,
       .window_millis = 60000,
       .slices = 6},
      {.capacity = 1000, .error_rate = 0.01, .shards = 4},
  };
  for (const FilterOptions& o : several) {
    auto config = MakeConfig(o);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto made = BitmapBuilder::Make(*config);
    EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument) << FilterKindName(o.kind);
    EXPECT_NE(made.status().message().find("several"), std::string::npos)
        << made.status().ToString();
  }
  auto counting = MakeConfig({.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kCounting});
  ASSERT_TRUE(counting.ok());
  EXPECT_TRUE(BitmapBuilder::Make(*counting).ok());
}

// Nor from a counting filter's counters: its OrBitmap adds the builder's to
// its own, so a builder that started from them counted every earlier item
// twice, and that item stayed present after its one Remove.
TEST(BitmapBuilderTest, ACountingFiltersCountersAreNoStartingBitmap) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  auto f = BloomFilter::Create(
      **store, "cnt", {.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kCounting});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("a").ok());
  std::string counters;
  ASSERT_TRUE((*f)->ReadBitmap(&counters).ok());
  EXPECT_THROW(BitmapBuilder((*f)->config(), counters), std::invalid_argument);
  // What a caller builds instead: an empty builder, whose counters add.
  BitmapBuilder builder((*f)->config());
  const std::vector<std::string_view> b = {"b"};
  ASSERT_TRUE(builder.Add(b).ok());
  ASSERT_TRUE((*f)->OrBitmap(builder.bitmap(), builder.items()).ok());
  ASSERT_TRUE((*f)->Remove("a").ok());
  EXPECT_FALSE(testing::ValueOrFail((*f)->Contains("a")));
  EXPECT_TRUE(testing::ValueOrFail((*f)->Contains("b")));
}

class GuavaFormatTest : public ::testing::TestWithParam<std::string> {
 protected:
  testing::TempDir dir_;
};

// A file written by Guava, once imported, gives exactly Guava's mightContain
// answers (false positives included); exported again, Guava reads it back to
// the same answers and rewrites it to the same bytes.
TEST_P(GuavaFormatTest, ImportAndExportMatchGuavaExactly) {
  const bool ints = GetParam() == "int64";
  std::vector<std::string> added, probes;
  for (int i = 0; i < 3000; ++i)
    added.push_back(ints ? std::to_string(i * 7919LL - 500000)
                         : "ORD-" + std::to_string(i) + "-ação-订单");
  for (int i = 0; i < 30000; ++i)
    probes.push_back(ints ? std::to_string(i * 104729LL + 1) : "never-" + std::to_string(i));
  probes.insert(probes.end(), added.begin(), added.end());

  const std::string guava_file = dir_.path() + "/java.bf";
  Java({"write", "3000", "0.03", GetParam(), guava_file}, added, !ints);
  const std::string java_answers = Java({"query", guava_file, GetParam()}, probes, !ints);

  auto store = Store::Open("file:" + dir_.path() + "/store");
  ASSERT_TRUE(store.ok());
  std::ifstream in(guava_file, std::ios::binary);
  auto filter = ImportGuava(**store, "imported", in,
                            {.capacity = 3000,
                             .error_rate = 0.03,
                             .encoding = ints ? Encoding::kInt64 : Encoding::kUtf8});
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  std::vector<uint8_t> present;
  ASSERT_TRUE((*filter)->ContainsMany(Views(probes), &present).ok());
  std::string ours;
  int false_positives = 0;
  for (size_t i = 0; i < present.size(); ++i) {
    ours += present[i] ? "1\n" : "0\n";
    if (i < 30000) false_positives += present[i];
  }
  EXPECT_EQ(ours, java_answers);
  EXPECT_GT(false_positives, 0) << "the comparison needs false positives to have teeth";

  const std::string exported = dir_.path() + "/ours.bf";
  {
    std::ofstream out(exported, std::ios::binary);
    ASSERT_TRUE(ExportGuava(**filter, out).ok());
  }
  EXPECT_EQ(ReadFile(exported), ReadFile(guava_file)) << "export must give Guava's bytes";
  EXPECT_EQ(Java({"query", exported, GetParam()}, probes, !ints), java_answers);
  const std::string rewritten = dir_.path() + "/rewritten.bf";
  Java({"rewrite", exported, GetParam(), rewritten}, {}, !ints);
  EXPECT_EQ(ReadFile(rewritten), ReadFile(exported));
}

// Guava's readFrom needs only the file and the funnel; so does import. The
// filter takes the file's m and k, derives its capacity and error rate, and
// answers exactly as Guava; exported, it is Guava's file again. Given values
// are still checked against the file.
TEST_P(GuavaFormatTest, ImportWithoutCapacityTakesTheFilesGeometry) {
  const bool ints = GetParam() == "int64";
  std::vector<std::string> added, probes;
  for (int i = 0; i < 2000; ++i)
    added.push_back(ints ? std::to_string(i * 7919LL - 500000) : "pedido-" + std::to_string(i));
  for (int i = 0; i < 20000; ++i)
    probes.push_back(ints ? std::to_string(i * 104729LL + 1) : "never-" + std::to_string(i));
  probes.insert(probes.end(), added.begin(), added.end());
  const std::string guava_file = dir_.path() + "/java.bf";
  Java({"write", "2500", "0.02", GetParam(), guava_file}, added, !ints);
  const std::string java_answers = Java({"query", guava_file, GetParam()}, probes, !ints);
  // Guava sizes 2500 at 2%: m = 20416 (rounded up to 64) and k = 6.
  const std::string encoding = ints ? "int64" : "utf8";
  const auto run = [&](std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", "file:" + dir_.path() + "/s"});
    return RunCommand(args, input);
  };

  auto wrong = run({"import", "g", "--format", "guava", "--file", guava_file, "--encoding",
                    encoding, "-n", "3000", "-p", "0.02"});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("m=20416 bits and k=6"), std::string::npos) << wrong.err;
  EXPECT_EQ(run({"list"}).out, "") << "a refused import creates nothing";

  auto imp =
      run({"import", "g", "--format", "guava", "--file", guava_file, "--encoding", encoding});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  std::string input;
  for (const auto& item : probes) input += item + "\n";
  auto check = run({"check", "g", "--file", "-"}, input);
  ASSERT_EQ(check.exit_code, 1) << check.err;  // the never- probes are mostly absent
  std::string ours;
  for (const auto& line : testing::Lines(check.out)) ours += line.substr(0, 1) + "\n";
  EXPECT_EQ(ours, java_answers) << "every Java item found, and Guava's false positives too";

  auto info = run({"info", "g", "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["bits"], 20416);
  EXPECT_EQ(j["hashes"], 6);
  EXPECT_EQ(j["geometry"], "given");
  EXPECT_EQ(j["capacity"], 2359);        // round(20416 ln 2 / 6)
  EXPECT_EQ(j["error_rate"], 0.015625);  // 2^-6
  auto text = run({"info", "g"});
  EXPECT_NE(text.out.find("capacity:          2359 (derived"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("error_rate:        0.015625 (derived"), std::string::npos) << text.out;

  // The same file again, with or without the values: the bits fit.
  EXPECT_EQ(run({"import", "g", "--format", "guava", "--file", guava_file, "--encoding", encoding})
                .exit_code,
            0);
  EXPECT_EQ(run({"import", "g", "--format", "guava", "--file", guava_file, "--encoding", encoding,
                 "-n", "2500", "-p", "0.02"})
                .exit_code,
            4)
      << "a filter of given geometry is not the one created with -n -p";

  const std::string exported = dir_.path() + "/ours.bf";
  auto exp = run({"export", "g", "--format", "guava", "--file", exported});
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  EXPECT_EQ(ReadFile(exported), ReadFile(guava_file)) << "export must give Guava's bytes";
  EXPECT_EQ(Java({"query", exported, GetParam()}, probes, !ints), java_answers);
}

INSTANTIATE_TEST_SUITE_P(Funnels, GuavaFormatTest, ::testing::Values("utf8", "int64"));

TEST(GuavaFormatErrorsTest, ClearErrorsAndNothingWritten) {
  testing::TempDir dir;
  const std::string guava_file = dir.path() + "/java.bf";
  Java({"write", "1000", "0.01", "utf8", guava_file}, {"a", "b"}, true);
  const std::string bytes = ReadFile(guava_file);
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  auto import = [&](const std::string& data, uint64_t n) {
    std::istringstream in(data);
    return ImportGuava(**store, "g", in, {.capacity = n, .error_rate = 0.01});
  };
  EXPECT_EQ(import(bytes, 5000).status().code(), StatusCode::kInvalidArgument)
      << "m/k must match the given capacity";
  EXPECT_EQ(import(bytes.substr(0, bytes.size() - 3), 1000).status().code(), StatusCode::kDataLoss);
  std::string negative = bytes;  // Java's int -1 words: an invalid length, not a short file
  negative.replace(2, 4, "\xff\xff\xff\xff");
  const Status minus_one = import(negative, 1000).status();
  EXPECT_EQ(minus_one.code(), StatusCode::kDataLoss);
  EXPECT_NE(minus_one.message().find("negative bit-array length (-1 words)"), std::string::npos)
      << minus_one.ToString();
  std::string mitz32 = bytes;
  mitz32[0] = 0;
  EXPECT_EQ(import(mitz32, 1000).status().code(), StatusCode::kInvalidArgument);
  // The same m with another k (a writer's other parameters): every item it
  // added would test other bits here. k is byte 1 of Guava's header.
  std::string other_k = bytes;
  other_k[1] = static_cast<char>(other_k[1] == 3 ? 4 : 3);
  const Status k_mismatch = import(other_k, 1000).status();
  EXPECT_EQ(k_mismatch.code(), StatusCode::kInvalidArgument) << k_mismatch.ToString();
  EXPECT_NE(k_mismatch.message().find("k="), std::string::npos) << k_mismatch.ToString();
  EXPECT_EQ((*store)->ReadConfig("g").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(import(bytes, 1000).ok());

  auto seed = BloomFilter::Create(**store, "seed",
                                  {.capacity = 10, .error_rate = 0.1, .strategy = Strategy::kSeed});
  ASSERT_TRUE(seed.ok());
  std::ostringstream out;
  EXPECT_EQ(ExportGuava(**seed, out).code(), StatusCode::kInvalidArgument);
}

// A full disk is out of room (kResourceExhausted, as everywhere), not a
// retryable "unavailable: write failed"; a stream that never opened is
// said so, not "the input is empty".
TEST(TransferStreamTest, AFullDiskAndAnUnopenedStreamAreSaidSo) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  auto f = BloomFilter::Create(
      **store, "g", {.capacity = 1000, .error_rate = 0.01, .strategy = Strategy::kGuava64});
  ASSERT_TRUE(f.ok());
  for (const bool guava : {true, false}) {
    std::ofstream full("/dev/full", std::ios::binary);
    ASSERT_TRUE(full.is_open());
    const Status s = guava ? ExportGuava(**f, full) : ExportDump(**f, full);
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
    EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.ToString();
  }
  testing::TempDir dir;
  for (const bool guava : {true, false}) {
    std::ofstream unopened(dir.path() + "/no/such/dir.bin", std::ios::binary);
    const Status s = guava ? ExportGuava(**f, unopened) : ExportDump(**f, unopened);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("had failed before it was written"), std::string::npos)
        << s.ToString();
  }
  for (const bool guava : {true, false}) {
    std::ifstream missing(dir.path() + "/missing.bin", std::ios::binary);
    const Status s =
        guava ? ImportGuava(**store, "h", missing, {.capacity = 1000, .error_rate = 0.01}).status()
              : ImportDump(**store, "h", missing).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("failed before it was read"), std::string::npos) << s.ToString();
  }
  EXPECT_EQ((*store)->ReadConfig("h").status().code(), StatusCode::kNotFound);
  // An option of the caller's is the caller's error, not the file's.
  std::ostringstream exported;
  ASSERT_TRUE(ExportGuava(**f, exported).ok());
  std::istringstream in(exported.str());
  const Status bad_encoding =
      ImportGuava(**store, "h", in, {.encoding = static_cast<Encoding>(99)}).status();
  EXPECT_EQ(bad_encoding.code(), StatusCode::kInvalidArgument) << bad_encoding.ToString();
  EXPECT_EQ((*store)->ReadConfig("h").status().code(), StatusCode::kNotFound);
}

// The stores a dump must move between: memory, a file directory, a Redis
// server, and another Redis server.
class DumpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    redis_a_ = new testing::RedisServer();
    redis_b_ = new testing::RedisServer();
    redis_a_->Start();
    redis_b_->Start();
  }
  static void TearDownTestSuite() {
    delete redis_a_;
    delete redis_b_;
  }
  // A mem: store (*store) with a plain filter "f" holding "x", and its dump.
  // ImportDump of `bytes` into `store` as "copy".
  static Status ImportCopy(Store& store, const std::string& bytes) {
    std::istringstream in(bytes);
    return ImportDump(store, "copy", in).status();
  }
  static std::string DumpOfOneItem(std::unique_ptr<Store>* store) {
    *store = testing::ValueOrFail(Store::Open("mem:"));
    auto f = testing::ValueOrFail(
        BloomFilter::Create(**store, "f", {.capacity = 1000, .error_rate = 0.01}));
    EXPECT_TRUE(f->Add("x").ok());
    std::stringstream dump;
    EXPECT_TRUE(ExportDump(*f, dump).ok());
    return dump.str();
  }
  std::vector<std::pair<std::string, std::string>> Urls() {
    return {{"mem", "mem:"},
            {"file", "file:" + dir_.path()},
            {"redis", redis_a_->url()},
            {"redis2", redis_b_->url() + "/3"}};
  }

  static testing::RedisServer* redis_a_;
  static testing::RedisServer* redis_b_;
  testing::TempDir dir_;
};
testing::RedisServer* DumpTest::redis_a_ = nullptr;
testing::RedisServer* DumpTest::redis_b_ = nullptr;

// A config of given geometry reads back the same from every store (file
// header, Redis metadata) and through a dump, and a fresh client sees it too.
TEST_F(DumpTest, GivenGeometrySurvivesEveryStoreAndDumps) {
  auto config = MakeConfig({.strategy = Strategy::kGuava64, .bits = 9600, .hashes = 5});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->geometry_given);
  EXPECT_EQ(config->capacity, 1331u);  // round(9600 ln 2 / 5)
  EXPECT_EQ(config->error_rate, 0.03125);
  EXPECT_EQ(testing::ValueOrFail(MakeConfig(OptionsOf(*config))), *config);
  const auto items = Items("ORD-", 500);
  for (const auto& [src_label, src_url] : Urls()) {
    auto src = Store::Open(src_url);
    ASSERT_TRUE(src.ok()) << src_label;
    ASSERT_TRUE((*src)->Create("given", *config).ok()) << src_label;
    auto again = Store::Open(src_url);  // a second client reads what the first wrote
    ASSERT_TRUE(again.ok()) << src_label;
    auto stored = (*again)->ReadConfig("given");
    if (src_label != "mem") {
      ASSERT_TRUE(stored.ok()) << src_label << ": " << stored.status().ToString();
      EXPECT_EQ(*stored, *config) << src_label;
    }
    auto f = BloomFilter::Open(**src, "given");
    ASSERT_TRUE(f.ok()) << src_label << ": " << f.status().ToString();
    ASSERT_TRUE((*f)->AddMany(Views(items)).ok());
    std::stringstream dump;
    ASSERT_TRUE(ExportDump(**f, dump).ok()) << src_label;
    EXPECT_NE(dump.str().find("geometry=given\n"), std::string::npos);
    for (const auto& [dst_label, dst_url] : Urls()) {
      auto dst = Store::Open(dst_url);
      ASSERT_TRUE(dst.ok());
      std::stringstream in(dump.str());
      auto r = ImportDump(**dst, "copy", in);
      ASSERT_TRUE(r.ok()) << src_label << " -> " << dst_label << ": " << r.status().ToString();
      EXPECT_EQ((*r)->config(), *config) << src_label << " -> " << dst_label;
      std::vector<uint8_t> present;
      ASSERT_TRUE((*r)->ContainsMany(Views(items), &present).ok());
      EXPECT_EQ(std::count(present.begin(), present.end(), 1), 500) << dst_label;
      ASSERT_TRUE(BloomFilter::Drop(**dst, "copy").ok());
    }
    ASSERT_TRUE(BloomFilter::Drop(**src, "given").ok());
  }
}

TEST_F(DumpTest, RoundTripsAcrossEveryPairOfStores) {
  std::vector<std::pair<std::string, std::unique_ptr<Store>>> stores;
  for (const auto& [label, url] : Urls()) {
    auto s = Store::Open(url);
    ASSERT_TRUE(s.ok()) << label << ": " << s.status().ToString();
    stores.emplace_back(label, std::move(s).value());
  }
  const auto items = Items("ORD-", 5000);
  for (auto& [src_label, src] : stores) {
    auto f = BloomFilter::Create(*src, "src",
                                 {.capacity = 5000,
                                  .error_rate = 0.01,
                                  .strategy = Strategy::kSeed,
                                  .encoding = Encoding::kUtf8x2});
    ASSERT_TRUE(f.ok()) << src_label << ": " << f.status().ToString();
    ASSERT_TRUE((*f)->AddMany(Views(items)).ok());
    std::stringstream dump;
    ASSERT_TRUE(ExportDump(**f, dump).ok()) << src_label;
    std::string src_bits;
    ASSERT_TRUE((*f)->ReadBitmap(&src_bits).ok());
    for (auto& [dst_label, dst] : stores) {
      const std::string name = "from-" + src_label;
      std::stringstream in(dump.str());
      auto restored = ImportDump(*dst, name, in);
      ASSERT_TRUE(restored.ok()) << src_label << " -> " << dst_label << ": "
                                 << restored.status().ToString();
      EXPECT_EQ((*restored)->config(), (*f)->config());
      std::string dst_bits;
      ASSERT_TRUE((*restored)->ReadBitmap(&dst_bits).ok());
      EXPECT_EQ(dst_bits, src_bits) << src_label << " -> " << dst_label;
      std::vector<uint8_t> present;
      ASSERT_TRUE((*restored)->ContainsMany(Views(items), &present).ok());
      for (size_t i = 0; i < items.size(); ++i) {
        ASSERT_EQ(present[i], 1) << src_label << " -> " << dst_label << " " << items[i];
      }
      EXPECT_EQ(testing::ValueOrFail((*restored)->Info()).items_added,
                testing::ValueOrFail((*f)->Info()).items_added);
      ASSERT_TRUE(BloomFilter::Drop(*dst, name).ok());
    }
    ASSERT_TRUE(BloomFilter::Drop(*src, "src").ok());
  }
}

// A bulk load ORs bits in; adds running at the same time must all survive.
// 2e6 items at 1% make a 2.3 MiB bitmap, so Redis merges it in several pieces
// while the writer's adds land between them.
TEST_F(DumpTest, LoadNeverClearsConcurrentAdds) {
  for (const auto& [label, url] : Urls()) {
    auto store = Store::Open(url);
    ASSERT_TRUE(store.ok()) << label;
    auto f = BloomFilter::Create(**store, "load", {.capacity = 2000000, .error_rate = 0.01});
    ASSERT_TRUE(f.ok()) << label << ": " << f.status().ToString();
    BitmapBuilder builder((*f)->config());
    const auto loaded = Items("loaded-", 200000);
    ASSERT_TRUE(builder.Add(Views(loaded)).ok());
    const auto written = Items("written-", 20000);
    std::thread writer([&] {
      auto w = BloomFilter::Open(**store, "load");
      ASSERT_TRUE(w.ok());
      for (size_t i = 0; i < written.size(); i += 50) {
        std::vector<std::string_view> batch(written.begin() + i, written.begin() + i + 50);
        ASSERT_TRUE((*w)->AddMany(batch).ok());
      }
    });
    for (int round = 0; round < 3; ++round) {
      Status s = (*f)->OrBitmap(builder.bitmap(), builder.new_items());
      ASSERT_TRUE(s.ok()) << label << ": " << s.ToString();
    }
    writer.join();
    std::vector<uint8_t> present;
    for (const auto* items : {&loaded, &written}) {
      ASSERT_TRUE((*f)->ContainsMany(Views(*items), &present).ok());
      for (size_t i = 0; i < items->size(); ++i) {
        ASSERT_EQ(present[i], 1) << label << ": " << (*items)[i];
      }
    }
    ASSERT_TRUE(BloomFilter::Drop(**store, "load").ok());
  }
}

TEST_F(DumpTest, CorruptDumpsAreDataLossAndWriteNothing) {
  std::unique_ptr<Store> store;
  const std::string good = DumpOfOneItem(&store);
  auto import = [&](const std::string& bytes) { return ImportCopy(*store, bytes); };
  for (size_t cut : {size_t{5}, size_t{40}, good.size() - 30, good.size() - 1}) {
    EXPECT_EQ(import(good.substr(0, cut)).code(), StatusCode::kDataLoss) << "cut at " << cut;
  }
  for (size_t pos : {size_t{20}, good.size() / 2, good.size() - 10}) {
    std::string bad = good;
    bad[pos] ^= 0x40;
    EXPECT_EQ(import(bad).code(), StatusCode::kDataLoss) << "flip at " << pos;
  }
  EXPECT_EQ(store->ReadConfig("copy").status().code(), StatusCode::kNotFound);
  // Restoring onto a filter with other parameters is a conflict.
  ASSERT_TRUE(BloomFilter::Create(*store, "other", {.capacity = 999, .error_rate = 0.01}).ok());
  std::istringstream in(good);
  EXPECT_EQ(ImportDump(*store, "other", in).status().code(), StatusCode::kConflict);
}

// A dump's big-endian integer of `bytes` bytes at `at`, and one written so.
uint64_t GetBE(const std::string& dump, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | uint8_t(dump[at + i]);
  return v;
}
std::string PutBE(uint64_t v, int bytes) {
  std::string out(bytes, '\0');
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) out[i] = char(v & 0xFF);
  return out;
}
// zlib's CRC-32 of `bytes`, continuing from `seed`, as a dump's checksums.
uint32_t Crc32(const std::string& bytes, uint32_t seed = 0) {
  return static_cast<uint32_t>(
      ::crc32(seed, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

// `dump` with its first chunk's offset set to `offset`, every checksum made
// again (docs/dump-format.md: a chunk's CRC-32 runs over its offset, length
// and bytes; the end marker's over the chunks' CRCs), so that only the
// reader's bounds stand between the chunk and the filter.
std::string WithFirstChunkAt(const std::string& dump, uint64_t offset) {
  size_t at = 16 + GetBE(dump, 12, 4) + 4;  // past the magic, version, header and its CRC
  std::string out = dump.substr(0, at);
  uint32_t running = 0;
  for (bool first = true; GetBE(dump, at, 8) != UINT64_MAX; first = false) {
    const size_t length = GetBE(dump, at + 8, 4);
    const std::string frame =
        PutBE(first ? offset : GetBE(dump, at, 8), 8) + dump.substr(at + 8, 4);
    const std::string bytes = dump.substr(at + 12, length);
    const std::string chunk_crc = PutBE(Crc32(bytes, Crc32(frame)), 4);
    out += frame + bytes + chunk_crc;
    running = Crc32(chunk_crc, running);
    at += 12 + length + 4;
  }
  return out + dump.substr(at, 16) + PutBE(running, 4);
}

// A chunk placed past the filter's bitmap, its checksums right, is
// data_loss: its bytes belong to no part, and an import that skipped them
// would answer success without them. The coverage audit: a mutation taking
// the bound out survived.
TEST_F(DumpTest, AChunkPastTheBitmapIsDataLossWithItsChecksumsRight) {
  std::unique_ptr<Store> store;
  const std::string dump = DumpOfOneItem(&store);
  const uint64_t bytes = testing::ValueOrFail(store->ReadConfig("f")).data_bytes();
  auto import = [&](const std::string& bytes) { return ImportCopy(*store, bytes); };
  ASSERT_TRUE(import(WithFirstChunkAt(dump, 0)).ok()) << "the checksums are made right";
  ASSERT_TRUE(BloomFilter::Drop(*store, "copy").ok());
  for (uint64_t offset : {bytes, bytes + 1, bytes - 1, uint64_t{1} << 62}) {
    const Status s = import(WithFirstChunkAt(dump, offset));
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << offset << ": " << s.ToString();
    EXPECT_NE(s.message().find("lies outside the filter's bitmap"), std::string::npos)
        << offset << ": " << s.ToString();
  }
  EXPECT_EQ(store->ReadConfig("copy").status().code(), StatusCode::kNotFound);
}

// `dump` with its version set to `version` and its header text passed
// through `edit`, the header's length and CRC made again
// (docs/dump-format.md), so that only the reader's checks of what the header
// says stand between it and the store.
std::string WithHeader(const std::string& dump, uint32_t version,
                       const std::function<void(std::string*)>& edit) {
  const auto length = static_cast<size_t>(GetBE(dump, 12, 4));
  std::string header = dump.substr(16, length);
  edit(&header);
  return dump.substr(0, 8) + PutBE(version, 4) + PutBE(header.size(), 4) + header +
         PutBE(Crc32(header), 4) + dump.substr(16 + length + 4);
}

// A dump of another format version, or whose part table does not add up to
// its data's length, is data_loss, its checksums right: read as version 1,
// or with its bytes put where the table does not say, it would import as a
// filter with other bits. The mutation audit: taking either check out
// failed no test.
TEST_F(DumpTest, AnotherVersionOrATableThatDoesNotAddUpIsDataLoss) {
  std::unique_ptr<Store> store;
  const std::string dump = DumpOfOneItem(&store);
  auto import = [&](const std::string& bytes) { return ImportCopy(*store, bytes); };
  ASSERT_TRUE(import(WithHeader(dump, 1, [](std::string*) {})).ok()) << "the checksums are right";
  ASSERT_TRUE(BloomFilter::Drop(*store, "copy").ok());

  Status s = import(WithHeader(dump, 2, [](std::string*) {}));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("version 2 is not supported"), std::string::npos) << s.ToString();

  s = import(WithHeader(dump, 1, [](std::string* header) {
    const size_t at = header->find("data_bytes=");
    ASSERT_NE(at, std::string::npos) << *header;
    const size_t end = header->find('\n', at);
    const uint64_t bytes = std::stoull(header->substr(at + 11, end - at - 11));
    header->replace(at, end - at, "data_bytes=" + std::to_string(bytes + 8));
  }));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("does not add up to data_bytes"), std::string::npos) << s.ToString();
  EXPECT_EQ(store->ReadConfig("copy").status().code(), StatusCode::kNotFound);
}

// The library answers in a Status: a caller's stream with exceptions() set
// throws nothing out of an import or export (std::ios_base::failure escaped
// ImportDump at the end of a truncated dump), and gets its mask back.
TEST_F(DumpTest, AStreamThatThrowsOnFailureGetsAStatusAndItsMaskBack) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  auto f = BloomFilter::Create(**store, "f", {.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Add("x").ok());
  const auto all = std::ios::failbit | std::ios::badbit | std::ios::eofbit;
  std::stringstream dump;
  dump.exceptions(all);
  ASSERT_NO_THROW(EXPECT_TRUE(ExportDump(**f, dump).ok()));
  EXPECT_EQ(dump.exceptions(), all);
  const std::string good = dump.str();
  for (const std::string& bytes : {good.substr(0, good.size() - 5), good.substr(0, 20), good}) {
    std::istringstream in(bytes);
    in.exceptions(all);
    Status s;
    ASSERT_NO_THROW(s = ImportDump(**store, "copy", in).status()) << bytes.size();
    EXPECT_EQ(s.code(), bytes == good ? StatusCode::kOk : StatusCode::kDataLoss) << s.ToString();
    EXPECT_EQ(in.exceptions(), all);
  }
  EXPECT_TRUE((*store)->ReadConfig("copy").ok());
  auto g = BloomFilter::Create(
      **store, "g", {.capacity = 1000, .error_rate = 0.01, .strategy = Strategy::kGuava64});
  ASSERT_TRUE(g.ok());
  std::stringstream guava;
  guava.exceptions(all);
  ASSERT_NO_THROW(EXPECT_TRUE(ExportGuava(**g, guava).ok()));
  std::istringstream cut(guava.str().substr(0, 9));
  cut.exceptions(all);
  Status s;
  ASSERT_NO_THROW(s = ImportGuava(**store, "g2", cut, {}).status());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  // A stream that cannot be written is an error, not an exception.
  std::filebuf unopened;
  std::ostream nowhere(&unopened);
  nowhere.exceptions(all);
  ASSERT_NO_THROW(EXPECT_FALSE(ExportDump(**f, nowhere).ok()));
  EXPECT_EQ(nowhere.exceptions(), all);
}

// An import that made its filter and then failed drops it again: a filter
// holding part of a dump would answer "absent" for the rest of its items to
// every reader. Into a filter that was there, it keeps what was there.
TEST_F(DumpTest, AFailedImportDropsTheFilterItCreated) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  auto f = BloomFilter::Create(**store, "f", {.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < 300; ++i) ASSERT_TRUE((*f)->Add("item-" + std::to_string(i)).ok());
  std::stringstream dump;
  ASSERT_TRUE(ExportDump(**f, dump).ok());
  const std::string good = dump.str();
  std::string changed = good;
  changed[good.size() / 2] ^= 0x40;  // in the data, checked on the first pass as it was

  testing::ChangingBuf buf(good, changed);
  std::istream in(&buf);
  auto copy = ImportDump(**store, "copy", in);
  ASSERT_FALSE(copy.ok());
  EXPECT_EQ(copy.status().code(), StatusCode::kDataLoss) << copy.status().ToString();
  EXPECT_NE(copy.status().message().find("'copy' was created for this import and dropped again"),
            std::string::npos)
      << copy.status().message();
  EXPECT_EQ((*store)->ReadConfig("copy").status().code(), StatusCode::kNotFound);

  // Nor does it drop a filter another client has added to since it was made:
  // that client's acknowledged add would go with it. It is left, and said so.
  testing::ChangingBuf raced(good, changed, [&] {
    auto other = BloomFilter::Open(**store, "raced");
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    ASSERT_TRUE((*other)->Add("theirs").ok());
  });
  std::istream in_raced(&raced);
  auto raced_import = ImportDump(**store, "raced", in_raced);
  ASSERT_FALSE(raced_import.ok());
  EXPECT_NE(raced_import.status().message().find("other clients have added to it since"),
            std::string::npos)
      << raced_import.status().message();
  auto theirs = BloomFilter::Open(**store, "raced");
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  EXPECT_TRUE(testing::ValueOrFail((*theirs)->Contains("theirs")));

  // The same failure into a filter that existed leaves it there, with its items.
  auto kept = BloomFilter::Create(**store, "kept", {.capacity = 1000, .error_rate = 0.01});
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE((*kept)->Add("mine").ok());
  testing::ChangingBuf again(good, changed);
  std::istream in2(&again);
  auto into = ImportDump(**store, "kept", in2);
  ASSERT_FALSE(into.ok());
  EXPECT_EQ(into.status().message().find("dropped"), std::string::npos) << into.status().message();
  auto reopened = BloomFilter::Open(**store, "kept");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  auto mine = (*reopened)->Contains("mine");
  ASSERT_TRUE(mine.ok());
  EXPECT_TRUE(*mine);
}

// Counting filters merge by adding counters, saturating at 15, on every store
// (word CAS loops for mem and file, a Lua script on Redis). Random counter
// bytes, merged twice, must read back as the byte-wise saturating sum.
TEST_F(DumpTest, CountersMergeBySaturatingAddition) {
  std::mt19937_64 rng(42);
  const FilterOptions o{.capacity = 20000, .error_rate = 0.01, .kind = FilterKind::kCounting};
  for (const auto& [label, url] : Urls()) {
    auto store = Store::Open(url);
    ASSERT_TRUE(store.ok()) << label;
    auto f = BloomFilter::Create(**store, "cnt", o);
    ASSERT_TRUE(f.ok()) << label << ": " << f.status().ToString();
    const size_t bytes = (*f)->config().data_bytes();
    ASSERT_GT(bytes, size_t{64 << 10}) << "spans several Redis merge pieces (16 KiB)";
    std::string a(bytes, '\0'), b(bytes, '\0'), expected(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) {
      a[i] = static_cast<char>(rng());
      b[i] = static_cast<char>(rng());
      if (i % 7 == 0) a[i] = 0;  // some bytes untouched by the first merge
      const auto x = static_cast<uint8_t>(a[i]), y = static_cast<uint8_t>(b[i]);
      expected[i] =
          static_cast<char>(std::min(15, x / 16 + y / 16) * 16 + std::min(15, x % 16 + y % 16));
    }
    ASSERT_TRUE((*f)->OrBitmap(a, 3).ok()) << label;
    ASSERT_TRUE((*f)->OrBitmap(b, 4).ok()) << label;
    std::string got;
    ASSERT_TRUE((*f)->ReadBitmap(&got).ok()) << label;
    ASSERT_EQ(got.size(), expected.size()) << label;
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(static_cast<int>(static_cast<uint8_t>(got[i])),
                static_cast<int>(static_cast<uint8_t>(expected[i])))
          << label << ": byte " << i;
    }
    EXPECT_EQ(testing::ValueOrFail((*f)->Info()).items_added, 7u) << label;
    ASSERT_TRUE(BloomFilter::Drop(**store, "cnt").ok());
  }
}

// A counting filter's dump carries its counters: restored anywhere, an item
// added twice needs two removes, and merging two counting filters sums them.
TEST_F(DumpTest, CountingFiltersDumpAndMergeWithTheirCounts) {
  const FilterOptions o{.capacity = 5000, .error_rate = 0.01, .kind = FilterKind::kCounting};
  const auto once = Items("once-", 1000), twice = Items("twice-", 1000);
  for (const auto& [src_label, src_url] : Urls()) {
    auto src = Store::Open(src_url);
    ASSERT_TRUE(src.ok());
    auto f = BloomFilter::Create(**src, "src", o);
    ASSERT_TRUE(f.ok()) << src_label << ": " << f.status().ToString();
    ASSERT_TRUE((*f)->AddMany(Views(once)).ok());
    ASSERT_TRUE((*f)->AddMany(Views(twice)).ok());
    ASSERT_TRUE((*f)->AddMany(Views(twice)).ok());
    std::stringstream dump;
    ASSERT_TRUE(ExportDump(**f, dump).ok()) << src_label;
    for (const auto& [dst_label, dst_url] : Urls()) {
      const std::string where = src_label + " -> " + dst_label;
      auto dst = Store::Open(dst_url);
      ASSERT_TRUE(dst.ok());
      std::stringstream in(dump.str());
      auto r = ImportDump(**dst, "copy", in);
      ASSERT_TRUE(r.ok()) << where << ": " << r.status().ToString();
      EXPECT_EQ((*r)->config(), (*f)->config()) << where;
      EXPECT_EQ(testing::ValueOrFail((*r)->Info()).items_added, 3000u) << where;
      std::vector<uint8_t> removed;
      ASSERT_TRUE((*r)->RemoveMany(Views(once), &removed).ok()) << where;
      ASSERT_TRUE((*r)->RemoveMany(Views(twice), &removed).ok()) << where;
      std::vector<uint8_t> present;
      ASSERT_TRUE((*r)->ContainsMany(Views(twice), &present).ok());
      for (size_t i = 0; i < twice.size(); ++i) {
        ASSERT_EQ(present[i], 1) << where << ": " << twice[i] << " was added twice";
      }
      ASSERT_TRUE(BloomFilter::Drop(**dst, "copy").ok());
    }
    // Merge "src" with a copy of itself: every count doubles.
    std::stringstream in(dump.str());
    ASSERT_TRUE(ImportDump(**src, "again", in).ok());
    ASSERT_TRUE(Merge(**src, "sum", std::vector<std::string>{"src", "again"}).ok()) << src_label;
    auto sum = BloomFilter::Open(**src, "sum");
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(testing::ValueOrFail((*sum)->Info()).items_added, 6000u) << src_label;
    std::vector<uint8_t> removed;
    for (int round = 0; round < 3; ++round)
      ASSERT_TRUE((*sum)->RemoveMany(Views(twice), &removed).ok());
    std::vector<uint8_t> present;
    ASSERT_TRUE((*sum)->ContainsMany(Views(twice), &present).ok());
    for (size_t i = 0; i < twice.size(); ++i) {
      ASSERT_EQ(present[i], 1) << src_label << ": " << twice[i] << " was counted four times";
    }
    // A source named twice is refused before anything is made: its counters
    // were added twice, so items removed once stayed present.
    const Status twice_named = Merge(**src, "dup", std::vector<std::string>{"src", "again", "src"});
    EXPECT_EQ(twice_named.code(), StatusCode::kInvalidArgument) << twice_named.ToString();
    EXPECT_NE(twice_named.message().find("source 'src' is named twice"), std::string::npos)
        << twice_named.message();
    EXPECT_EQ((*src)->ReadConfig("dup").status().code(), StatusCode::kNotFound) << src_label;
    for (const char* name : {"src", "again", "sum"})
      ASSERT_TRUE(BloomFilter::Drop(**src, name).ok());
  }
}

// Scaling and window filters dump as several parts (layers, slices) and
// restore on every store with every part, count and answer intact.
TEST_F(DumpTest, ScalingAndWindowFiltersRoundTripAcrossEveryPairOfStores) {
  // Every store reads one clock, which the test moves into the next slice.
  auto clock = std::make_shared<ManualClock>(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count()));
  StoreOptions options;
  options.clock = clock;
  std::vector<std::pair<std::string, std::unique_ptr<Store>>> stores;
  for (const auto& [label, url] : Urls()) {
    auto s = Store::Open(url, options);
    ASSERT_TRUE(s.ok()) << label;
    stores.emplace_back(label, std::move(s).value());
  }
  const FilterOptions scaling{.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kScaling};
  // 15 s slices: the second batch lands in the next slice, and both are
  // still in the window while the dumps move. (Redis expires the slices by
  // its own clock: an 8 s window expired a slice mid-test on a loaded host.)
  const FilterOptions window{.capacity = 4000,
                             .error_rate = 0.01,
                             .kind = FilterKind::kWindow,
                             .window_millis = 60000,
                             .slices = 4};
  const auto grown = Items("grown-", 5000);  // 1000 + 2000 + 4000: three layers
  const auto early = Items("early-", 500), late = Items("late-", 500);
  for (auto& [label, store] : stores) {
    auto f = BloomFilter::Create(*store, "scaled", scaling);
    ASSERT_TRUE(f.ok()) << label << ": " << f.status().ToString();
    ASSERT_TRUE((*f)->AddMany(Views(grown)).ok());
    ASSERT_TRUE(BloomFilter::Create(*store, "recent", window).ok()) << label;
    auto w = BloomFilter::Open(*store, "recent");
    ASSERT_TRUE(w.ok()) << label << ": " << w.status().ToString();
    ASSERT_TRUE((*w)->AddMany(Views(early)).ok());
  }
  clock->Advance(std::chrono::milliseconds(15100));
  for (auto& [label, store] : stores) {
    auto w = BloomFilter::Open(*store, "recent");
    ASSERT_TRUE(w.ok()) << label << ": " << w.status().ToString();
    ASSERT_TRUE((*w)->AddMany(Views(late)).ok());
  }
  for (auto& [src_label, src] : stores) {
    for (const char* name : {"scaled", "recent"}) {
      auto f = BloomFilter::Open(*src, name);
      ASSERT_TRUE(f.ok());
      std::vector<BloomFilter::Part> src_parts;
      ASSERT_TRUE((*f)->ReadParts(&src_parts).ok());
      EXPECT_EQ(src_parts.size(), std::string(name) == "scaled" ? 3u : 2u) << src_label << name;
      std::stringstream dump;
      ASSERT_TRUE(ExportDump(**f, dump).ok()) << src_label << " " << name;
      for (auto& [dst_label, dst] : stores) {
        const std::string where = std::string(name) + " " + src_label + " -> " + dst_label;
        std::stringstream in(dump.str());
        auto r = ImportDump(*dst, "copy", in);
        ASSERT_TRUE(r.ok()) << where << ": " << r.status().ToString();
        EXPECT_EQ((*r)->config(), (*f)->config()) << where;
        std::vector<BloomFilter::Part> dst_parts;
        ASSERT_TRUE((*r)->ReadParts(&dst_parts).ok()) << where;
        ASSERT_EQ(dst_parts.size(), src_parts.size()) << where;
        for (size_t i = 0; i < dst_parts.size(); ++i) {
          EXPECT_EQ(dst_parts[i].id, src_parts[i].id) << where;
          EXPECT_EQ(dst_parts[i].items, src_parts[i].items) << where;
          EXPECT_TRUE(dst_parts[i].bytes == src_parts[i].bytes) << where << " part " << i;
        }
        std::vector<uint8_t> present;
        for (const auto* items : {&grown, &early, &late}) {
          if ((items == &grown) != (std::string(name) == "scaled")) continue;
          ASSERT_TRUE((*r)->ContainsMany(Views(*items), &present).ok());
          for (size_t i = 0; i < items->size(); ++i) {
            ASSERT_EQ(present[i], 1) << where << ": " << (*items)[i];
          }
        }
        ASSERT_TRUE(BloomFilter::Drop(*dst, "copy").ok());
      }
    }
  }
  // Merging scaling filters unions them layer by layer; one with another
  // expansion is refused before anything is created.
  Store& mem = *stores.front().second;
  auto other = BloomFilter::Create(mem, "other", scaling);
  ASSERT_TRUE(other.ok());
  const auto more = Items("more-", 1500);
  ASSERT_TRUE((*other)->AddMany(Views(more)).ok());
  ASSERT_TRUE(Merge(mem, "both", std::vector<std::string>{"scaled", "other"}).ok());
  auto both = BloomFilter::Open(mem, "both");
  ASSERT_TRUE(both.ok());
  std::vector<uint8_t> present;
  for (const auto* items : {&grown, &more}) {
    ASSERT_TRUE((*both)->ContainsMany(Views(*items), &present).ok());
    for (size_t i = 0; i < items->size(); ++i) ASSERT_EQ(present[i], 1) << (*items)[i];
  }
  // Counts add up, as far as bits can tell: a layer from one source keeps
  // its count, a layer both hold counts what its fill grew by, at most the
  // sum of theirs (the two hold different items here).
  auto scaled = BloomFilter::Open(mem, "scaled");
  ASSERT_TRUE(scaled.ok());
  const uint64_t sum = testing::ValueOrFail((*scaled)->Info()).items_added +
                       testing::ValueOrFail((*other)->Info()).items_added;
  const uint64_t merged = testing::ValueOrFail((*both)->Info()).items_added;
  EXPECT_LE(merged, sum);
  EXPECT_GE(merged, sum * 97 / 100);
  FilterOptions wider = scaling;
  wider.expansion = 4;
  ASSERT_TRUE(BloomFilter::Create(mem, "wider", wider).ok());
  const Status refused = Merge(mem, "nowhere", std::vector<std::string>{"scaled", "wider"});
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();
  EXPECT_NE(refused.message().find("wider"), std::string::npos) << refused.message();
  EXPECT_EQ(mem.ReadConfig("nowhere").status().code(), StatusCode::kNotFound);
  for (auto& [label, store] : stores) {
    ASSERT_TRUE(BloomFilter::Drop(*store, "scaled").ok());
    ASSERT_TRUE(BloomFilter::Drop(*store, "recent").ok());
  }
}

// `dump` with its header text passed through `edit` and its checksum fixed,
// so only the header's field checks can catch what `edit` changed.
std::string ForgeDumpHeader(const std::string& dump,
                            const std::function<std::string(std::string)>& edit) {
  const uint32_t header_len = static_cast<uint8_t>(dump[14]) << 8 | static_cast<uint8_t>(dump[15]);
  const std::string h = edit(dump.substr(16, header_len));
  std::string out = dump.substr(0, 12);
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((h.size() >> (8 * i)) & 0xff));
  out += h;
  const uint32_t crc =
      crc32(0, reinterpret_cast<const Bytef*>(h.data()), static_cast<uInt>(h.size()));
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return out + dump.substr(16 + header_len + 4);
}

// The value of header line `key`.
std::string HeaderField(const std::string& header, const std::string& key) {
  const size_t at = header.find("\n" + key + "=");
  if (at == std::string::npos) return "";
  const size_t from = at + key.size() + 2;
  return header.substr(from, header.find('\n', from) - from);
}

std::string SetHeaderField(std::string header, const std::string& key, const std::string& value) {
  const size_t from = header.find("\n" + key + "=") + key.size() + 2;
  return header.replace(from, header.find('\n', from) - from, value);
}

uint64_t BigEndian(std::string_view bytes) {
  uint64_t v = 0;
  for (unsigned char c : bytes) v = v << 8 | c;
  return v;
}

void PutBigEndian(std::string* out, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t Crc32(std::string_view bytes, uint32_t crc = 0) {
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

// `dump` with part `id` left out, everywhere a dump says it (docs/dump-
// format.md): its entry in the header's table, its bytes in data_bytes, its
// chunks (those after it moved down), and the end marker's count and
// checksum. What an export would have written had the part not been there.
std::string WithoutPart(const std::string& dump, uint64_t id) {
  uint64_t base = 0, size = 0;
  std::string header_text;
  std::string out = ForgeDumpHeader(dump, [&](std::string header) {
    header_text = header;
    std::string table;
    std::istringstream entries(HeaderField(header, "parts"));
    bool found = false;
    for (std::string entry; std::getline(entries, entry, ',');) {
      const uint64_t bytes = std::stoull(entry.substr(entry.rfind(':') + 1));
      if (entry.starts_with(std::to_string(id) + ":")) {
        found = true;
        size = bytes;
        continue;
      }
      if (!found) base += bytes;
      table += (table.empty() ? "" : ",") + entry;
    }
    EXPECT_TRUE(found) << "no part " << id << " in " << header;
    const uint64_t data = std::stoull(HeaderField(header, "data_bytes"));
    return SetHeaderField(SetHeaderField(header, "parts", table), "data_bytes",
                          std::to_string(data - size));
  });
  // The chunks: offset (8), length (4), the bytes, a CRC of all three (4).
  const size_t data_start = 16 + header_text.size() + 4;
  std::string_view rest = std::string_view(dump).substr(data_start);
  out.resize(out.size() - rest.size());
  uint64_t chunks = 0;
  uint32_t running = 0;
  while (BigEndian(rest.substr(0, 8)) != UINT64_MAX) {
    uint64_t offset = BigEndian(rest.substr(0, 8));
    const uint64_t len = BigEndian(rest.substr(8, 4));
    const std::string_view bytes = rest.substr(12, len);
    rest.remove_prefix(12 + len + 4);
    if (offset >= base && offset < base + size) continue;
    if (offset >= base + size) offset -= size;
    std::string frame;
    PutBigEndian(&frame, offset, 8);
    PutBigEndian(&frame, len, 4);
    std::string crc;
    PutBigEndian(&crc, Crc32(bytes, Crc32(frame)), 4);
    out += frame;
    out += bytes;
    out += crc;
    running = Crc32(crc, running);
    ++chunks;
  }
  PutBigEndian(&out, UINT64_MAX, 8);
  PutBigEndian(&out, chunks, 8);
  PutBigEndian(&out, running, 4);
  return out;
}

// A dump's header rewritten (checksum fixed, so only the field checks can
// catch it) is refused before anything is created.
TEST(DumpHeaderTest, InconsistentHeadersAreDataLossAndCreateNothing) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  auto f = BloomFilter::Create(**store, "s",
                               {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling});
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->AddMany(Views(Items("x-", 300))).ok());  // two layers
  std::stringstream dump;
  ASSERT_TRUE(ExportDump(**f, dump).ok());
  auto forge = [&](const std::string& from, const std::string& to) {
    return ForgeDumpHeader(dump.str(), [&](std::string h) {
      const size_t at = h.find(from);
      EXPECT_NE(at, std::string::npos) << from << " in " << h;
      if (at != std::string::npos) h.replace(at, from.size(), to);
      return h;
    });
  };
  {
    std::istringstream same(forge("kind=", "kind="));
    ASSERT_TRUE(ImportDump(**store, "fine", same).ok()) << "the forging itself is sound";
  }
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"parts=0:", "parts=1:"},        // layers must start at 0
           {"expansion=2", "expansion=4"},  // layer 1 would be another size
           {"kind=scaling", "kind=plain"},  // one part only
           {"capacity=100", "capacity=1000"}}) {
    std::istringstream in(forge(from, to));
    const Status s = ImportDump(**store, "forged", in).status();
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << from << " -> " << to << ": " << s.ToString();
    EXPECT_EQ((*store)->ReadConfig("forged").status().code(), StatusCode::kNotFound) << from;
  }
}

// A window dump whose part table is gone, or names a slice past any time a
// clock reads (its expiry wraps), imported as nothing: the part read as
// slice 0 of 1970, or as long expired, was dropped and the import answered
// ok. Refused before anything is created.
TEST(DumpHeaderTest, AWindowDumpsSlicesMustBeListedAndInTime) {
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("mem:"));
  FilterOptions window{.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kWindow};
  window.window_millis = 60000;
  window.slices = 4;
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "w", window));
  ASSERT_TRUE(f->Add("x").ok());
  std::stringstream dump;
  ASSERT_TRUE(ExportDump(*f, dump).ok());
  const std::string table = HeaderField(dump.str(), "parts");
  ASSERT_EQ(table.find(','), std::string::npos) << "one slice: " << table;
  const std::string rest = table.substr(table.find(':'));
  const std::vector<std::pair<std::string, std::function<std::string(std::string)>>> forgeries = {
      {"no part table",
       [](std::string h) {
         const size_t at = h.find("\nparts=");
         return h.erase(at + 1, h.find('\n', at + 1) - at);
       }},
      {"slice near 2^64",
       [&](std::string h) { return SetHeaderField(h, "parts", "18446744073709551614" + rest); }},
      {"slice past 2^63 ms",
       [&](std::string h) { return SetHeaderField(h, "parts", "614891469123651" + rest); }}};
  for (const auto& [label, edit] : forgeries) {
    std::istringstream in(ForgeDumpHeader(dump.str(), edit));
    const Status s = ImportDump(*store, "forged", in).status();
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << label << ": " << s.ToString();
    EXPECT_EQ(store->ReadConfig("forged").status().code(), StatusCode::kNotFound) << label;
  }
  std::istringstream same(ForgeDumpHeader(dump.str(), [](std::string h) { return h; }));
  ASSERT_OK_AND_ASSIGN(auto copy, ImportDump(*store, "copy", same));
  ASSERT_OK_AND_ASSIGN(bool found, copy->Contains("x"));
  EXPECT_TRUE(found) << "the forging itself is sound";
}

// A dump whose part table leaves out a shard, or a scaling filter's layer
// below its last, would import as a filter without that part's items (every
// one of them a false negative), though the table adds up: refused, naming
// the part, before anything is created. A scaling filter's last layers may
// be absent (it had not grown yet).
TEST_F(DumpTest, APartTheFilterAlwaysHasCannotBeLeftOut) {
  auto store = Store::Open(redis_a_->url());  // shards are Redis's
  ASSERT_TRUE(store.ok());
  auto dump_of = [&](const std::string& name, FilterOptions options, int items) {
    auto f = BloomFilter::Create(**store, name, options);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (!f.ok()) return std::string();
    EXPECT_TRUE((*f)->AddMany(Views(Items(name + "-", items))).ok());
    std::stringstream out;
    EXPECT_TRUE(ExportDump(**f, out).ok());
    return out.str();
  };
  auto import = [&](const std::string& bytes, const std::string& name) {
    std::istringstream in(bytes);
    return ImportDump(**store, name, in).status();
  };
  const std::string sharded =
      dump_of("sh", {.capacity = 4000, .error_rate = 0.01, .shards = 4}, 2000);
  const std::string scaling = dump_of(
      "sc", {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling}, 700);  // 3 layers
  ASSERT_NE(HeaderField(scaling, "parts").find(",2:"), std::string::npos)
      << "the test needs three layers";
  for (const auto& [label, dump, part] : std::vector<std::tuple<std::string, std::string, int>>{
           {"shard 2", sharded, 2}, {"shard 0", sharded, 0}, {"layer 1", scaling, 1}}) {
    const std::string forged = WithoutPart(dump, part);
    const Status s = import(forged, "forged");
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << label << ": " << s.ToString();
    EXPECT_NE(s.message().find("part " + std::to_string(part) + " "), std::string::npos)
        << label << ": " << s.message();
    EXPECT_NE(s.message().find("missing"), std::string::npos) << label << ": " << s.message();
    EXPECT_EQ((*store)->ReadConfig("forged").status().code(), StatusCode::kNotFound) << label;
  }
  // A scaling filter's last layer left out, the same way, imports (as a
  // filter that had not grown yet): the refusals above are the missing
  // parts', not the forging's.
  ASSERT_TRUE(import(WithoutPart(scaling, 2), "two-layers").ok());
  auto two = BloomFilter::Open(**store, "two-layers");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(testing::ValueOrFail((*two)->Info()).parts, 2u);
}

TEST(MergeTest, UnionOfIdenticalGeometryAndClearErrorsOtherwise) {
  auto store = Store::Open("mem:");
  ASSERT_TRUE(store.ok());
  const FilterOptions o{.capacity = 5000, .error_rate = 0.01};
  auto a = BloomFilter::Create(**store, "a", o);
  auto b = BloomFilter::Create(**store, "b", o);
  ASSERT_TRUE(a.ok() && b.ok());
  const auto items_a = Items("a-", 2000), items_b = Items("b-", 2000);
  ASSERT_TRUE((*a)->AddMany(Views(items_a)).ok());
  ASSERT_TRUE((*b)->AddMany(Views(items_b)).ok());
  const std::vector<std::string> sources = {"a", "b"};
  size_t merged_in = 0;
  ASSERT_TRUE(Merge(**store, "ab", sources, &merged_in).ok());
  EXPECT_EQ(merged_in, 2u);
  auto ab = BloomFilter::Open(**store, "ab");
  ASSERT_TRUE(ab.ok());
  std::vector<uint8_t> present;
  for (const auto* items : {&items_a, &items_b}) {
    ASSERT_TRUE((*ab)->ContainsMany(Views(*items), &present).ok());
    for (size_t i = 0; i < items->size(); ++i) ASSERT_EQ(present[i], 1) << (*items)[i];
  }
  // Into one of its own sources, which adds nothing of its own.
  ASSERT_TRUE(Merge(**store, "a", std::vector<std::string>{"a", "b"}, &merged_in).ok());
  EXPECT_EQ(merged_in, 1u);
  ASSERT_TRUE((*a)->ContainsMany(Views(items_b), &present).ok());
  for (uint8_t p : present) ASSERT_EQ(p, 1);

  ASSERT_TRUE(BloomFilter::Create(**store, "bigger", {.capacity = 6000, .error_rate = 0.01}).ok());
  ASSERT_TRUE(
      BloomFilter::Create(**store, "seed",
                          {.capacity = 5000, .error_rate = 0.01, .strategy = Strategy::kSeed})
          .ok());
  ASSERT_TRUE(
      BloomFilter::Create(**store, "ints",
                          {.capacity = 5000, .error_rate = 0.01, .encoding = Encoding::kInt32})
          .ok());
  for (const char* other : {"bigger", "seed", "ints"}) {
    const Status s = Merge(**store, "x", std::vector<std::string>{"a", other});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << other;
    EXPECT_NE(s.message().find(other), std::string::npos) << s.message();
    // The destination is named as such (it said "into 'a'", the first source).
    EXPECT_NE(s.message().find("into 'x'"), std::string::npos) << s.message();
  }
  // A destination with other parameters is a conflict, as for import and create.
  const Status into_bigger = Merge(**store, "bigger", std::vector<std::string>{"a"});
  EXPECT_EQ(into_bigger.code(), StatusCode::kConflict) << into_bigger.ToString();
  EXPECT_NE(into_bigger.message().find("cannot merge into 'bigger'"), std::string::npos)
      << into_bigger.message();
  EXPECT_EQ(Merge(**store, "x", std::vector<std::string>{"a", "missing"}).code(),
            StatusCode::kNotFound);
  EXPECT_EQ((*store)->ReadConfig("x").status().code(), StatusCode::kNotFound)
      << "a failed merge creates nothing";
}

// The bulk CLI commands, end to end on the file store.
class BulkCliTest : public ::testing::Test {
 protected:
  testing::CommandResult Run(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", "file:" + dir_.path() + "/s"});
    return RunCommand(args, input);
  }
  // The filter's items_added, from `info --json`.
  uint64_t ItemsAdded(const std::string& name) {
    auto info = Run({"info", "--json", name});
    EXPECT_EQ(info.exit_code, 0) << info.err;
    auto json = nlohmann::json::parse(info.out, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object() || !json.contains("items_added")) {
      ADD_FAILURE() << "info --json " << name << ": " << info.out;
      return 0;
    }
    return json["items_added"].get<uint64_t>();
  }
  testing::TempDir dir_;
};

TEST_F(BulkCliTest, LoadImportExportMergeDedup) {
  // guava64: the filter is exported as a Guava file below.
  ASSERT_EQ(Run({"create", "f", "-n", "50000", "-p", "0.01", "--strategy", "guava64"}).exit_code,
            0);
  std::string input;
  for (int i = 0; i < 40000; ++i) input += "ORD-" + std::to_string(i) + "\n";
  auto load = Run({"load", "f", "--file", "-"}, input);
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_NE(load.err.find("loaded 40000 items"), std::string::npos) << load.err;
  EXPECT_EQ(Run({"check", "-q", "f", "-f", "-"}, input).exit_code, 0);

  const std::string guava = dir_.path() + "/f.guava", dump = dir_.path() + "/f.dump";
  ASSERT_EQ(Run({"export", "f", "--format", "guava", "--file", guava}).exit_code, 0);
  ASSERT_EQ(Run({"export", "f", "--format", "redbloom", "--file", dump}).exit_code, 0);
  auto imp =
      Run({"import", "g", "--format", "guava", "--file", guava, "-n", "50000", "-p", "0.01"});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  EXPECT_EQ(Run({"check", "-q", "g", "-f", "-"}, input).exit_code, 0);
  ASSERT_EQ(Run({"import", "h", "--format", "redbloom", "--file", dump}).exit_code, 0);
  EXPECT_EQ(Run({"check", "-q", "h", "-f", "-"}, input).exit_code, 0);
  EXPECT_EQ(Run({"import", "x", "--format", "guava", "--file", guava, "-n", "50000"}).exit_code, 2)
      << "a capacity without an error rate";
  EXPECT_EQ(Run({"import", "x", "--format", "xml", "--file", guava}).exit_code, 2);
  EXPECT_EQ(Run({"import", "x", "--format", "redbloom", "--file", guava}).exit_code, 2)
      << "a Guava file is not a dump: bad input";

  ASSERT_EQ(Run({"create", "other", "-n", "10", "-p", "0.1"}).exit_code, 0);
  EXPECT_EQ(Run({"merge", "m", "f", "other"}).exit_code, 2);
  ASSERT_EQ(Run({"merge", "m", "f", "g"}).exit_code, 0);
  EXPECT_EQ(Run({"check", "-q", "m", "-f", "-"}, input).exit_code, 0);
  EXPECT_EQ(Run({"merge", "other", "f"}).exit_code, 4)
      << "a destination with other parameters, as import and create say it";

  auto dedup = Run({"dedup", "f"}, "ORD-1\nnew-1\nnew-2\nnew-1\nORD-2\n");
  ASSERT_EQ(dedup.exit_code, 0) << dedup.err;
  EXPECT_EQ(dedup.out, "new-1\nnew-2\n");
  EXPECT_EQ(Run({"dedup", "f"}, "new-1\n").out, "");
  EXPECT_EQ(Run({"load", "missing", "--file", "-"}, "a\n").exit_code, 4);
}

// Loading, importing and merging what a filter already holds adds nothing to
// its count (issue #15.9): a plain filter counts items that set a new bit,
// as `add` does, and a counting filter every item, as its adds do.
TEST_F(BulkCliTest, RepeatedLoadsImportsAndMergesCountOnlyNewItems) {
  ASSERT_EQ(Run({"create", "f", "-n", "50000", "-p", "0.01", "--strategy", "guava64"}).exit_code,
            0);
  std::string input;
  for (int i = 0; i < 1000; ++i) input += "ORD-" + std::to_string(i) + "\n";
  auto first = Run({"load", "f", "--file", "-"}, input);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const uint64_t once = ItemsAdded("f");
  EXPECT_GE(once, 990u);
  EXPECT_LE(once, 1000u);
  EXPECT_NE(first.err.find("loaded 1000 items into f: " + std::to_string(once) + " new"),
            std::string::npos)
      << first.err;
  EXPECT_EQ(first.err.find("distinct"), std::string::npos) << first.err;
  // Again, and with every line repeated: nothing is new.
  auto second = Run({"load", "f", "--file", "-"}, input + input);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("loaded 2000 items into f: 0 new"), std::string::npos) << second.err;
  EXPECT_EQ(ItemsAdded("f"), once) << "the same 1,000 items loaded twice";

  const std::string guava = dir_.path() + "/f.guava", dump = dir_.path() + "/f.dump";
  ASSERT_EQ(Run({"export", "f", "--format", "guava", "--file", guava}).exit_code, 0);
  ASSERT_EQ(Run({"export", "f", "--format", "redbloom", "--file", dump}).exit_code, 0);
  // Into the filter the dump came from, twice: nothing new.
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(Run({"import", "f", "--format", "redbloom", "--file", dump}).exit_code, 0);
    EXPECT_EQ(ItemsAdded("f"), once) << "dump import " << round;
    ASSERT_EQ(Run({"import", "f", "--format", "guava", "--file", guava}).exit_code, 0);
    EXPECT_EQ(ItemsAdded("f"), once) << "Guava import " << round;
  }
  // Into a new filter the dump's count comes along exactly; a second import
  // adds nothing.
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(Run({"import", "h", "--format", "redbloom", "--file", dump}).exit_code, 0);
    EXPECT_EQ(ItemsAdded("h"), once) << "round " << round;
    ASSERT_EQ(Run({"merge", "m", "f"}).exit_code, 0);
    EXPECT_EQ(ItemsAdded("m"), once) << "merge round " << round;
  }
  ASSERT_EQ(Run({"merge", "m", "f", "h"}).exit_code, 0);
  EXPECT_EQ(ItemsAdded("m"), once) << "h holds the same items as f";

  // A counting filter counts every add: each needs its own remove.
  ASSERT_EQ(Run({"create", "c", "-n", "50000", "-p", "0.01", "--counting"}).exit_code, 0);
  auto counted = Run({"load", "c", "--file", "-"}, input);
  ASSERT_EQ(counted.exit_code, 0) << counted.err;
  EXPECT_NE(counted.err.find("loaded 1000 items into c: 1000 counted"), std::string::npos)
      << counted.err;
  ASSERT_EQ(Run({"load", "c", "--file", "-"}, input).exit_code, 0);
  EXPECT_EQ(ItemsAdded("c"), 2000u);
}

// Importing into a filter that already holds the bits adds nothing to its
// count, on every store (fill before and after, not the dump's count).
TEST_F(DumpTest, ReimportingWhatAFilterHoldsAddsNoCount) {
  const auto items = Items("k-", 3000);
  for (const FilterKind kind : {FilterKind::kPlain, FilterKind::kScaling}) {
    for (const auto& [label, url] : Urls()) {
      const std::string where = label + " " + std::string(FilterKindName(kind));
      ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
      ASSERT_OK_AND_ASSIGN(
          auto f,
          BloomFilter::Create(*store, "src", {.capacity = 2000, .error_rate = 0.01, .kind = kind}));
      ASSERT_TRUE(f->AddMany(Views(kind == FilterKind::kPlain ? Items("k-", 2000) : items)).ok());
      const uint64_t before = testing::ValueOrFail(f->Info()).items_added;
      std::stringstream dump;
      ASSERT_TRUE(ExportDump(*f, dump).ok()) << where;
      for (int round = 0; round < 2; ++round) {
        std::istringstream in(dump.str());
        auto r = ImportDump(*store, "src", in);
        ASSERT_TRUE(r.ok()) << where << ": " << r.status().ToString();
        EXPECT_EQ(testing::ValueOrFail(f->Info()).items_added, before) << where;
        std::istringstream again(dump.str());
        ASSERT_TRUE(ImportDump(*store, "copy", again).ok()) << where;
        auto copy = BloomFilter::Open(*store, "copy");
        ASSERT_TRUE(copy.ok());
        EXPECT_EQ(testing::ValueOrFail((*copy)->Info()).items_added, before)
            << where << ", round " << round;
      }
      ASSERT_TRUE(Merge(*store, "copy", std::vector<std::string>{"src"}).ok()) << where;
      auto copy = BloomFilter::Open(*store, "copy");
      ASSERT_TRUE(copy.ok());
      EXPECT_EQ(testing::ValueOrFail((*copy)->Info()).items_added, before) << where;
      ASSERT_TRUE(BloomFilter::Drop(*store, "src").ok());
      ASSERT_TRUE(BloomFilter::Drop(*store, "copy").ok());
    }
  }
}

// An import killed after writing its bits and before its count, run again,
// counted only how much the estimate grew (nothing: the bits were there), so
// a scaling layer went on filling past its capacity. Bits no count stands
// for are counted by the next merge of them.
TEST_F(DumpTest, AReRunOfAnImportKilledBeforeItsCountCountsWhatItWrote) {
  const auto items = Items("k-", 3000);
  for (const auto& [label, url] : Urls()) {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
    const FilterOptions o{.capacity = 2000, .error_rate = 0.01, .kind = FilterKind::kScaling};
    ASSERT_OK_AND_ASSIGN(auto src, BloomFilter::Create(*store, "src", o));
    ASSERT_TRUE(src->AddMany(Views(items)).ok());
    const uint64_t count = testing::ValueOrFail(src->Info()).items_added;
    std::stringstream dump;
    ASSERT_TRUE(ExportDump(*src, dump).ok()) << label;
    // What the killed import left: every bit, no count.
    std::vector<BloomFilter::Part> parts;
    ASSERT_TRUE(src->ReadParts(&parts).ok()) << label;
    ASSERT_GE(parts.size(), 2u) << label;
    for (auto& part : parts) part.items = 0;
    ASSERT_OK_AND_ASSIGN(auto half, BloomFilter::Create(*store, "half", o));
    ASSERT_TRUE(half->MergeParts(parts).ok()) << label;
    ASSERT_EQ(testing::ValueOrFail(half->Info()).items_added, 0u) << label;
    std::istringstream in(dump.str());
    ASSERT_TRUE(ImportDump(*store, "half", in).ok()) << label;
    const uint64_t counted = testing::ValueOrFail(half->Info()).items_added;
    EXPECT_GE(counted, count * 95 / 100) << label << ": the re-run counted too little";
    EXPECT_LE(counted, count) << label;
    ASSERT_TRUE(BloomFilter::Drop(*store, "src").ok());
    ASSERT_TRUE(BloomFilter::Drop(*store, "half").ok());
  }
}

// Imports stream a part in pieces (BloomFilter::MergePartBytes): pieces of
// any size, at any offset (inside a word, too), give what merging the whole
// part at once gives, on every store, for bits and for counters.
TEST_F(DumpTest, PiecesAtAnyOffsetMergeLikeTheWholePart) {
  std::mt19937_64 rng(7);
  for (const FilterKind kind : {FilterKind::kPlain, FilterKind::kCounting}) {
    for (const auto& [label, url] : Urls()) {
      const std::string where = label + " " + std::string(FilterKindName(kind));
      ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
      ASSERT_OK_AND_ASSIGN(
          auto whole, BloomFilter::Create(*store, "whole",
                                          {.capacity = 20000, .error_rate = 0.01, .kind = kind}));
      ASSERT_OK_AND_ASSIGN(
          auto pieces, BloomFilter::Create(*store, "pieces",
                                           {.capacity = 20000, .error_rate = 0.01, .kind = kind}));
      const size_t bytes = whole->config().data_bytes();
      std::string base(bytes, '\0'), merged(bytes, '\0');
      for (size_t i = 0; i < bytes; ++i) {
        base[i] = static_cast<char>(rng() & 0x11);
        merged[i] = static_cast<char>(rng() & 0x13);
      }
      for (auto* f : {whole.get(), pieces.get()}) ASSERT_TRUE(f->OrBitmap(base, 0).ok()) << where;
      ASSERT_TRUE(whole->OrBitmap(merged, 0).ok()) << where;
      for (size_t at = 0; at < bytes;) {
        const size_t n = std::min<size_t>(bytes - at, 1 + rng() % 40000);
        Status s = pieces->MergePartBytes(0, at, std::string_view(merged).substr(at, n), 0);
        ASSERT_TRUE(s.ok()) << where << " at " << at << ": " << s.ToString();
        at += n;
      }
      EXPECT_TRUE(pieces->MergePartBytes(0, 0, "", 5).ok()) << where;
      EXPECT_EQ(pieces->MergePartBytes(0, bytes - 1, "ab", 0).code(), StatusCode::kInvalidArgument)
          << where << ": past the part's end";
      std::string a, b;
      ASSERT_TRUE(whole->ReadBitmap(&a).ok());
      ASSERT_TRUE(pieces->ReadBitmap(&b).ok());
      EXPECT_TRUE(a == b) << where;
      if (kind == FilterKind::kPlain) {
        // Bits: the OR of the two, byte for byte (the whole part takes the
        // word-at-a-time loop of a merge that holds the filter alone).
        std::string ored(bytes, '\0');
        for (size_t i = 0; i < bytes; ++i) ored[i] = static_cast<char>(base[i] | merged[i]);
        EXPECT_TRUE(a == ored) << where;
      }
      EXPECT_EQ(testing::ValueOrFail(pieces->Info()).items_added, 5u) << where;
      ASSERT_TRUE(BloomFilter::Drop(*store, "whole").ok());
      ASSERT_TRUE(BloomFilter::Drop(*store, "pieces").ok());
    }
  }
}

// A child's exit and its peak resident memory (wait4's ru_maxrss).
struct Measured {
  int exit_code = -1;  // -1: killed by a signal
  std::string err;
  uint64_t max_rss_bytes = 0;
};

// Runs argv with stdin read from `stdin_file` (a regular file: seekable), or,
// when `piped` is given, fed through a pipe (a stream of unknown length, as
// `cat dump | redbloom import ... --file -` gives).
Measured RunMeasured(const std::vector<std::string>& argv, const std::string& stdin_file,
                     const std::string* piped = nullptr) {
  testing::TempDir tmp;
  const std::string err_path = tmp.path() + "/stderr";
  int in_pipe[2] = {-1, -1};
  if (piped != nullptr && ::pipe2(in_pipe, O_CLOEXEC) != 0) return {};
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  const pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    const int in = piped != nullptr ? in_pipe[0] : ::open(stdin_file.c_str(), O_RDONLY | O_CLOEXEC);
    const int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    const int err = ::open(err_path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::signal(SIGPIPE, SIG_DFL);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  if (piped != nullptr) {
    ::close(in_pipe[0]);
    size_t done = 0;
    while (done < piped->size()) {
      const ssize_t w = ::write(in_pipe[1], piped->data() + done, piped->size() - done);
      if (w <= 0) break;  // the child stopped reading
      done += static_cast<size_t>(w);
    }
    ::close(in_pipe[1]);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  Measured m;
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.err = ReadFile(err_path);
  m.max_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  return m;
}

void PutBE(std::string* out, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A dump's header for `config` with no data: valid as far as it goes (the
// checksum is right), 200-odd bytes that claim the whole filter.
std::string DumpHead(const FilterConfig& config) {
  const uint64_t bytes = testing::ValueOrFail(PartBytes(config, 0));
  auto fields = internal::ConfigToFields(config);
  fields.emplace_back("items_added", "0");
  fields.emplace_back("data_bytes", std::to_string(bytes));
  fields.emplace_back("parts", "0:0:" + std::to_string(bytes));
  const std::string header = internal::FieldsToLines(fields);
  std::string out = "RBDUMP\r\n";
  PutBE(&out, 1, 4);
  PutBE(&out, header.size(), 4);
  out += header;
  PutBE(&out,
        crc32(0, reinterpret_cast<const Bytef*>(header.data()), static_cast<uInt>(header.size())),
        4);
  return out;
}

class ImportBoundsTest : public ::testing::Test {
 protected:
  Measured Import(const std::string& name, const std::string& format, const std::string& file,
                  const std::string* piped = nullptr) {
    return RunMeasured({REDBLOOM_CLI_PATH, "--store", store_, "import", name, "--format", format,
                        "--file", piped != nullptr ? "-" : file},
                       file, piped);
  }
  // What the CLI takes to start, open this store and list it.
  uint64_t BaselineRss() {
    const std::string empty = dir_.path() + "/empty";
    std::ofstream(empty).flush();
    Measured m = RunMeasured({REDBLOOM_CLI_PATH, "--store", store_, "list"}, empty);
    EXPECT_EQ(m.exit_code, 0) << m.err;
    return m.max_rss_bytes;
  }
  void Write(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  // A 48 MB guava64 filter "big" in the store holding `item`; its bytes.
  uint64_t MakeBigFilter(const std::string& item) {
    auto store = Store::Open(store_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return 0;
    auto f = BloomFilter::Create(
        **store, "big",
        {.capacity = 40'000'000, .error_rate = 0.01, .strategy = Strategy::kGuava64});
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (!f.ok()) return 0;
    EXPECT_TRUE((*f)->Add(item).ok());
    return (*f)->config().data_bytes();
  }

  testing::TempDir dir_;
  const std::string store_ = "file:" + dir_.path() + "/s";
};

// A 200-byte dump that claims a filter of a billion items (1.2 GB) is refused
// as truncated before anything of that size is allocated (issue #15.6).
TEST_F(ImportBoundsTest, ShortDumpClaimingAHugeFilterIsTruncatedWithoutAllocating) {
  ASSERT_OK_AND_ASSIGN(FilterConfig huge,
                       MakeConfig({.capacity = 1'000'000'000, .error_rate = 0.01}));
  ASSERT_GT(huge.data_bytes(), 1'000'000'000u);
  const uint64_t baseline = BaselineRss();
  std::string hostile = DumpHead(huge);
  // One chunk frame at the end of the claimed bitmap, and then nothing.
  PutBE(&hostile, huge.data_bytes() - 4096, 8);
  PutBE(&hostile, 4096, 4);
  ASSERT_LT(hostile.size(), 300u);
  const std::string path = dir_.path() + "/hostile.dump";
  Write(path, hostile);
  for (const bool piped : {false, true}) {
    Measured m = Import("h", "redbloom", path, piped ? &hostile : nullptr);
    EXPECT_EQ(m.exit_code, 3) << m.err;
    EXPECT_NE(m.err.find("truncated"), std::string::npos) << m.err;
    EXPECT_LT(m.max_rss_bytes, baseline + (16 << 20))
        << "peak RSS " << m.max_rss_bytes << " against " << baseline << " for `list`";
  }
  auto list = RunCommand({REDBLOOM_CLI_PATH, "--store", store_, "list"});
  EXPECT_EQ(list.out, "") << "nothing was created";
}

// The same for a Guava file that declares 2^25 words (256 MiB) and holds one.
TEST_F(ImportBoundsTest, ShortGuavaFileClaimingAHugeArrayIsTruncatedWithoutAllocating) {
  const uint64_t baseline = BaselineRss();
  std::string hostile;
  hostile.push_back(1);  // MURMUR128_MITZ_64
  hostile.push_back(7);  // k
  PutBE(&hostile, uint64_t{1} << 25, 4);
  PutBE(&hostile, 0x0123456789abcdef, 8);
  const std::string path = dir_.path() + "/hostile.guava";
  Write(path, hostile);
  for (const bool piped : {false, true}) {
    Measured m = Import("g", "guava", path, piped ? &hostile : nullptr);
    EXPECT_EQ(m.exit_code, 3) << m.err;
    EXPECT_NE(m.err.find("truncated"), std::string::npos) << m.err;
    EXPECT_LT(m.max_rss_bytes, baseline + (16 << 20))
        << "peak RSS " << m.max_rss_bytes << " against " << baseline << " for `list`";
  }
  EXPECT_EQ(RunCommand({REDBLOOM_CLI_PATH, "--store", store_, "list"}).out, "");
}

// A real 48 MB filter imports from a file at about its own size in memory
// (the store's mapping of the new filter), not several times it; from a
// pipe, the input is held once more.
TEST_F(ImportBoundsTest, ImportMemoryIsBoundedByTheFilterNotAMultipleOfIt) {
  if (testing::kThreadSanitizer) {
    GTEST_SKIP() << "ThreadSanitizer's shadow memory is about 4x more than a process touches; "
                    "the normal and ASan builds bound the import's memory";
  }
  const std::string dump = dir_.path() + "/big.dump", guava = dir_.path() + "/big.guava";
  uint64_t filter_bytes = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir_.path() + "/src"));
    ASSERT_OK_AND_ASSIGN(
        auto f, BloomFilter::Create(
                    *store, "big",
                    {.capacity = 40'000'000, .error_rate = 0.01, .strategy = Strategy::kGuava64}));
    filter_bytes = f->config().data_bytes();
    // Enough items that every 1 MiB chunk of the dump holds bits.
    ASSERT_TRUE(f->AddMany(Views(Items("big-", 300000))).ok());
    std::ofstream d(dump, std::ios::binary), g(guava, std::ios::binary);
    ASSERT_TRUE(ExportDump(*f, d).ok());
    ASSERT_TRUE(ExportGuava(*f, g).ok());
  }
  ASSERT_GT(filter_bytes, 40u << 20);
  ASSERT_GT(ReadFile(dump).size(), filter_bytes * 9 / 10) << "the dump is not sparse";
  const uint64_t baseline = BaselineRss();
  const auto bound = [&](double times) {
    return baseline + static_cast<uint64_t>(times * static_cast<double>(filter_bytes));
  };
  Measured from_file = Import("d", "redbloom", dump);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_LT(from_file.max_rss_bytes, bound(1.4)) << "filter " << filter_bytes << " bytes";
  Measured guava_file = Import("g", "guava", guava);
  ASSERT_EQ(guava_file.exit_code, 0) << guava_file.err;
  EXPECT_LT(guava_file.max_rss_bytes, bound(1.4)) << "filter " << filter_bytes << " bytes";
  const std::string piped = ReadFile(dump);
  Measured from_pipe = Import("p", "redbloom", dump, &piped);
  ASSERT_EQ(from_pipe.exit_code, 0) << from_pipe.err;
  EXPECT_LT(from_pipe.max_rss_bytes, bound(2.4)) << "filter " << filter_bytes << " bytes";
  for (const char* name : {"d", "g", "p"}) {
    EXPECT_EQ(RunCommand({REDBLOOM_CLI_PATH, "--store", store_, "check", "-q", name, "big-0",
                          "big-299999"})
                  .exit_code,
              0)
        << name;
  }
}

// load reads the filter's bits straight into its builder: one copy of
// them in memory besides the store's mapping. It read them into a string
// first and copied that, so a file: filter past a third of memory could not
// be loaded (an audit: 2.1 GB of heap for a 1 GiB filter).
TEST_F(ImportBoundsTest, LoadHoldsOneCopyOfTheFilterBesidesItsMapping) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << "ThreadSanitizer's shadow memory";
  const uint64_t filter_bytes = MakeBigFilter("before");
  ASSERT_GT(filter_bytes, 0u);
  const std::string items = dir_.path() + "/items.txt";
  Write(items, "a\nb\nbefore\n");
  const uint64_t baseline = BaselineRss();
  Measured m =
      RunMeasured({REDBLOOM_CLI_PATH, "--store", store_, "load", "big", "--file", items}, items);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.err.find("3 items into big: 2 new"), std::string::npos) << m.err;
  // The builder and the mapping the bits were read from: twice, not three times.
  EXPECT_LT(m.max_rss_bytes, baseline + filter_bytes * 5 / 2)
      << "peak RSS " << m.max_rss_bytes << " for a filter of " << filter_bytes << " bytes";
  EXPECT_EQ(
      RunCommand({REDBLOOM_CLI_PATH, "--store", store_, "check", "-q", "big", "a", "b", "before"})
          .exit_code,
      0);
}

// export streams: it holds a piece of the filter's bits at a time, beside
// the mapping it reads them from. It built the file in a string first
// (about three times the filter at its peak), then held a copy of the bits
// (twice), so a file: filter past half of memory could not be exported.
// Also the file is whole: Guava reads it back.
TEST_F(ImportBoundsTest, ExportHoldsTheBitsNotTheWholeFile) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << "ThreadSanitizer's shadow memory";
  const uint64_t filter_bytes = MakeBigFilter("kept");
  ASSERT_GT(filter_bytes, 0u);
  const uint64_t baseline = BaselineRss();
  const std::string out = dir_.path() + "/big.guava";
  Measured m = RunMeasured(
      {REDBLOOM_CLI_PATH, "--store", store_, "export", "big", "--format", "guava", "--file", out},
      dir_.path() + "/empty");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(std::filesystem::file_size(out), 6 + filter_bytes);
  // The mapping the bits are read from and a few MiB, not a copy of them.
  EXPECT_LT(m.max_rss_bytes, baseline + filter_bytes * 3 / 2)
      << "peak RSS " << m.max_rss_bytes << " for a filter of " << filter_bytes << " bytes";
  Measured back = Import("copy", "guava", out);
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(
      RunCommand({REDBLOOM_CLI_PATH, "--store", store_, "check", "-q", "copy", "kept"}).exit_code,
      0);
}

// Long lines: a batch ends after 16 MiB of items as well as after 65,536
// of them. 65,536 items of up to 1 MiB each were up to 64 GiB in memory (an
// audit: 594 MB for 6000 lines of 100 KB, and bad_alloc under 400 MB).
TEST_F(ImportBoundsTest, ABatchOfLongLinesIsBoundedInBytes) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << "ThreadSanitizer's shadow memory";
  {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open(store_));
    ASSERT_OK_AND_ASSIGN(auto f,
                         BloomFilter::Create(*store, "f", {.capacity = 10000, .error_rate = 0.01}));
  }
  const uint64_t baseline = BaselineRss();
  const std::string items = dir_.path() + "/long.txt";
  {
    std::ofstream out(items, std::ios::binary);
    const std::string pad(100'000, 'y');
    for (int i = 0; i < 1000; ++i) out << i << pad << "\n";  // 100 MB
  }
  Measured m =
      RunMeasured({REDBLOOM_CLI_PATH, "--store", store_, "add", "-q", "f", "--file", items}, items);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_LT(m.max_rss_bytes, baseline + (64u << 20)) << "peak RSS " << m.max_rss_bytes;
  EXPECT_EQ(RunCommand({REDBLOOM_CLI_PATH, "--store", store_, "check", "-q", "f",
                        "999" + std::string(100'000, 'y')})
                .exit_code,
            0);
}

}  // namespace
}  // namespace redbloom
