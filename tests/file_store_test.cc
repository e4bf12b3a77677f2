// The file store's on-disk contract: a corrupt, truncated or foreign file is a
// clear kDataLoss, never a filter that answers "absent"; and a writer killed
// with SIGKILL never leaves a torn header or loses an acknowledged add.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "test_util.h"

namespace redbloom {
namespace {

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The wall clock's time, moved by hand: a scaling filter's handle lists
    // its layers again once a second has passed on it.
    StoreOptions options;
    options.clock = clock_;
    auto s = Store::Open("file:" + dir_.path(), options);
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
    // guava64: the tests below edit its header's text (k = 7, m = 9600).
    auto f = BloomFilter::Create(
        *store_, "f",
        FilterOptions{.capacity = 1000, .error_rate = 0.01, .strategy = Strategy::kGuava64});
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Add("ORD-1").ok());
  }

  std::string Path() const { return dir_.path() + "/f.rbf"; }

  // Creates scaling filter "sc" (100 items in its first layer) and adds
  // scaling_items_ (2000) to it, which grows it past four layers.
  void GrowScalingFilter(std::unique_ptr<BloomFilter>* f) {
    auto created = BloomFilter::Create(
        *store_, "sc",
        FilterOptions{.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    *f = std::move(created).value();
    for (int i = 0; i < 2000; ++i) scaling_items_.push_back("S-" + std::to_string(i));
    scaling_views_.assign(scaling_items_.begin(), scaling_items_.end());
    ASSERT_TRUE((*f)->AddMany(scaling_views_).ok());
  }
  std::vector<std::string> scaling_items_;
  std::vector<std::string_view> scaling_views_;

  // 4000 items "PREFIX-i" added to "sc" through a store of its own (as
  // another process's), into *items; they take "sc" past its last layer (the
  // record of the layers made, which *recorded_before gets, grows).
  void AddThroughAnotherStore(const std::string& prefix, std::vector<std::string>* items,
                              uint64_t* recorded_before) {
    *recorded_before = LayersRecorded();
    StoreOptions options;
    options.clock = clock_;
    ASSERT_OK_AND_ASSIGN(auto other_store, Store::Open("file:" + dir_.path(), options));
    ASSERT_OK_AND_ASSIGN(auto writer, BloomFilter::Open(*other_store, "sc"));
    for (int i = 0; i < 4000; ++i) items->push_back(prefix + "-" + std::to_string(i));
    ASSERT_TRUE(writer->AddMany(std::vector<std::string_view>(items->begin(), items->end())).ok());
    ASSERT_GT(LayersRecorded(), *recorded_before) << "the writer made no new layer";
  }

  // "sc"'s main-file record of the layers made (its header at byte 4072),
  // read, or written as a writer that keeps no record or died before
  // recording would leave it.
  uint64_t LayersRecorded() const {
    std::ifstream in(dir_.path() + "/sc.rbf", std::ios::binary);
    in.seekg(4072);
    uint64_t v = 0;
    in.read(reinterpret_cast<char*>(&v), 8);
    return v;
  }
  void SetLayersRecorded(uint64_t v) const {
    std::fstream io(dir_.path() + "/sc.rbf", std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(4072);
    io.write(reinterpret_cast<const char*>(&v), 8);
  }

  std::vector<uint8_t> ReadFile() {
    std::ifstream in(Path(), std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  void WriteFile(const std::vector<uint8_t>& bytes) {
    std::ofstream out(Path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  // Version 2: CRC-32 at 44 of bytes [0, 44) and the config text at 64.
  static void FixCrc(std::vector<uint8_t>& b) {
    const uint32_t len = b[40] | b[41] << 8 | b[42] << 16 | static_cast<uint32_t>(b[43]) << 24;
    uLong crc = crc32(0L, b.data(), 44);
    crc = crc32(crc, b.data() + 64, len);
    for (int i = 0; i < 4; ++i) b[44 + i] = static_cast<uint8_t>(crc >> (8 * i));
  }
  // The config text of a version-2 header.
  static std::string Text(const std::vector<uint8_t>& b) {
    const uint32_t len = b[40] | b[41] << 8 | b[42] << 16 | static_cast<uint32_t>(b[43]) << 24;
    return std::string(b.begin() + 64, b.begin() + 64 + len);
  }
  static void SetText(std::vector<uint8_t>& b, const std::string& text) {
    std::fill(b.begin() + 64, b.begin() + 4080, 0);
    std::copy(text.begin(), text.end(), b.begin() + 64);
    for (int i = 0; i < 4; ++i) b[40 + i] = static_cast<uint8_t>(text.size() >> (8 * i));
    FixCrc(b);
  }
  void ExpectDataLoss(const std::string& needle) {
    auto f = BloomFilter::Open(*store_, "f");
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kDataLoss) << f.status().ToString();
    EXPECT_NE(f.status().message().find(needle), std::string::npos) << f.status().message();
  }

  testing::TempDir dir_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count()));
  std::unique_ptr<Store> store_;
};

// A filter missing from a store directory that does not exist says so: a
// mistyped file: URL read as "filter 'orders' does not exist", no more. A
// create makes the directory, and a filter missing from it is said plainly.
TEST_F(FileStoreTest, AFilterMissingFromAMissingDirectorySaysTheDirectoryIsMissing) {
  const std::string missing = dir_.path() + "/typo";
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + missing));
  for (const Status& s : {BloomFilter::Open(*store, "orders").status(), store->Drop("orders")}) {
    EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
    EXPECT_NE(s.message().find("the store directory " + missing + " does not exist"),
              std::string::npos)
        << s.ToString();
  }
  EXPECT_FALSE(std::filesystem::exists(missing)) << "reading made nothing";
  ASSERT_TRUE(
      BloomFilter::Create(*store, "other", FilterOptions{.capacity = 10, .error_rate = 0.1}).ok());
  const Status s = BloomFilter::Open(*store, "orders").status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_EQ(s.message().find("store directory"), std::string::npos) << s.ToString();
}

// The store names its directory and its own files for front ends that
// write files (export --file refuses them), so that none decides by a URL's
// prefix; a link or a `..` leads to the same files.
TEST_F(FileStoreTest, ItNamesItsDirectoryAndOwnFiles) {
  const std::string dir = dir_.path() + "/store";
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir));
  EXPECT_EQ(store->directory(), dir);
  ASSERT_TRUE(
      BloomFilter::Create(*store, "x", FilterOptions{.capacity = 10, .error_rate = 0.1}).ok());
  std::filesystem::create_directory_symlink(dir, dir_.path() + "/link");
  for (const std::string& own : {dir + "/x.rbf", dir + "/y.rbf", dir + "/.x.parts/3.rbf",
                                 dir_.path() + "/link/x.rbf", dir + "/../store/x.rbf"}) {
    EXPECT_TRUE(store->OwnsPath(own)) << own;
  }
  for (const std::string& other :
       {dir + "/x.txt", dir + "/sub/x.rbf", dir_.path() + "/x.rbf", dir + "/.x.part/3.rbf", dir}) {
    EXPECT_FALSE(store->OwnsPath(other)) << other;
  }
  ASSERT_OK_AND_ASSIGN(auto mem, Store::Open("mem:"));
  EXPECT_EQ(mem->directory(), "");
  EXPECT_FALSE(mem->OwnsPath(dir + "/x.rbf"));
}

// Store::Sync covers what a filter handle's Flush cannot: filters written
// through handles since closed (redbloomd's cache lets go of them). Whether
// the bits reach the disk no test here can see (strace: one syncfs at
// redbloomd's shutdown); what it must do is work on a usable store and on
// one whose directory was never made, and fail where the directory is not.
TEST_F(FileStoreTest, SyncCoversTheWholeStore) {
  EXPECT_TRUE(store_->Sync().ok());
  ASSERT_OK_AND_ASSIGN(auto unmade, Store::Open("file:" + dir_.path() + "/not-yet"));
  EXPECT_TRUE(unmade->Sync().ok());
  // A store whose directory became something else cannot be synced: said.
  { std::ofstream(dir_.path() + "/not-yet") << "a file"; }
  const Status s = unmade->Sync();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("Not a directory"), std::string::npos) << s.ToString();
}

TEST_F(FileStoreTest, ReopensWithItsBits) {
  auto f = BloomFilter::Open(*store_, "f");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(testing::ValueOrFail((*f)->Contains("ORD-1")));
  EXPECT_EQ(testing::ValueOrFail((*f)->Info()).items_added, 1u);
}

TEST_F(FileStoreTest, BitsAreInRedisOrder) {
  auto f = BloomFilter::Open(*store_, "f");
  ASSERT_TRUE(f.ok());
  auto offsets = (*f)->Offsets("ORD-1");
  ASSERT_TRUE(offsets.ok());
  const auto bytes = ReadFile();
  for (uint64_t o : *offsets) {
    EXPECT_TRUE(bytes[4096 + o / 8] & (0x80 >> (o % 8))) << "offset " << o;
  }
}

TEST_F(FileStoreTest, FlippedHeaderByteIsDataLoss) {
  auto b = ReadFile();
  const std::string text = Text(b);
  const size_t at = text.find("capacity=1000");
  ASSERT_NE(at, std::string::npos) << text;
  b[64 + at + 9] ^= 0x01;  // capacity 1000 -> 0000
  WriteFile(b);
  ExpectDataLoss("checksum");
  b = ReadFile();
  b[20] ^= 0x01;  // the expiry, in the binary prefix
  WriteFile(b);
  ExpectDataLoss("checksum");
}

// The same for a scaling layer's file and a window slice's: a check through
// the batch kernels read a part that failed to open as data_loss only
// because a test said so for the main file (a mutation that took it for
// "absent" survived every test).
TEST_F(FileStoreTest, AFlippedHeaderByteOfALayerOrSliceIsDataLoss) {
  std::unique_ptr<BloomFilter> sc;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&sc));
  auto w = BloomFilter::Create(*store_, "w",
                               FilterOptions{.capacity = 1000,
                                             .error_rate = 0.01,
                                             .kind = FilterKind::kWindow,
                                             .window_millis = 3'600'000,
                                             .slices = 2});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->AddMany(scaling_views_).ok());
  for (const auto& [name, dir] : std::vector<std::pair<std::string, std::string>>{
           {"sc", dir_.path() + "/.sc.parts"}, {"w", dir_.path() + "/.w.parts"}}) {
    std::string part;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().filename() != "0.rbf") part = entry.path().string();
    }
    ASSERT_FALSE(part.empty()) << name;
    std::fstream io(part, std::ios::binary | std::ios::in | std::ios::out);
    io.seekg(0x48);
    char byte = 0;
    io.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x01);
    io.seekp(0x48);
    io.write(&byte, 1);
    io.close();
    auto fresh = Store::Open("file:" + dir_.path());
    ASSERT_TRUE(fresh.ok());
    auto f = BloomFilter::Open(**fresh, name);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    std::vector<uint8_t> present;
    const Status checked = (*f)->ContainsMany(scaling_views_, &present);
    EXPECT_EQ(checked.code(), StatusCode::kDataLoss)
        << name << ": never \"absent\": " << checked.ToString();
  }
}

TEST_F(FileStoreTest, ForeignFileIsDataLoss) {
  auto b = ReadFile();
  std::memcpy(b.data(), "PNG\r\n\x1a\n\0", 8);
  WriteFile(b);
  ExpectDataLoss("bad magic");
}

TEST_F(FileStoreTest, NewerFormatVersionIsDataLoss) {
  auto b = ReadFile();
  b[8] = 3;
  FixCrc(b);
  WriteFile(b);
  ExpectDataLoss("format version 3");
}

// A config text length past what the header holds is data_loss, whatever
// its CRC says: the checksum was taken over the length given, over the
// header's mutable fields and on into the filter's bits (the mutation
// audit: taking the bound out failed no test), and a length near 4 GiB read
// past the file's mapping (SIGSEGV).
TEST_F(FileStoreTest, AConfigTextLongerThanTheHeaderIsDataLoss) {
  auto b = ReadFile();
  // One byte past the most the header holds (4,016 from byte 64, its
  // mutable fields after them), its CRC made again.
  const uint32_t len = 4017;
  for (int i = 0; i < 4; ++i) b[40 + i] = static_cast<uint8_t>(len >> (8 * i));
  FixCrc(b);
  WriteFile(b);
  ExpectDataLoss("config text is longer than the header");
  // Near 4 GiB: its checksum is not even taken.
  for (int i = 0; i < 4; ++i) b[40 + i] = 0xFF;
  WriteFile(b);
  ExpectDataLoss("config text is longer than the header");
}

TEST_F(FileStoreTest, TruncatedFileIsDataLoss) {
  auto b = ReadFile();
  b.resize(b.size() - 8);
  WriteFile(b);
  ExpectDataLoss("truncated");
  b.resize(100);
  WriteFile(b);
  ExpectDataLoss("too short");
}

TEST_F(FileStoreTest, InconsistentGeometryIsDataLoss) {
  auto b = ReadFile();
  std::string text = Text(b);
  const size_t at = text.find("hashes=7\n");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 9, "hashes=9\n");  // k = 9 where 1000/0.01 gives 7
  SetText(b, text);
  WriteFile(b);
  ExpectDataLoss("geometry");
}

TEST_F(FileStoreTest, UnknownOrMissingConfigFieldsAreDataLoss) {
  const std::string text = Text(ReadFile());
  for (const auto& [from, to, needle] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"strategy=guava64\n", "strategy=murmur\n", "unknown strategy"},
           {"kind=plain\n", "", "field 'kind' is missing"},
           {"error_rate=0.01\n", "error_rate=1.5\n", "invalid parameters"},
           {"expansion=0\n", "expansion=2\n", "expansion is set"}}) {
    auto b = ReadFile();
    std::string t = text;
    const size_t at = t.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    SetText(b, t);
    WriteFile(b);
    ExpectDataLoss(needle);
  }
}

// Builds before the 100-year limit on a TTL or window stored longer ones:
// such a filter still opens, with its config as stored (it was data_loss on
// every call, its intact items out of reach); past 10,000 years it is not
// a config any build wrote.
TEST_F(FileStoreTest, ATtlStoredPastTheCreationLimitStillOpens) {
  const std::string text = Text(ReadFile());
  const size_t at = text.find("ttl_seconds=0\n");
  ASSERT_NE(at, std::string::npos) << text;
  const uint64_t forty_thousand_days = uint64_t{40000} * 86400;
  ASSERT_GT(forty_thousand_days, kMaxTtlSeconds);
  {
    auto b = ReadFile();
    std::string t = text;
    t.replace(at, 14, "ttl_seconds=" + std::to_string(forty_thousand_days) + "\n");
    SetText(b, t);
    WriteFile(b);
  }
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*store_, "f"));
  EXPECT_TRUE(*f->Contains("ORD-1"));
  EXPECT_EQ(f->config().ttl_seconds, forty_thousand_days);
  ASSERT_TRUE(f->Add("ORD-2").ok());
  // Creating one is still refused.
  FilterOptions o{.capacity = 1000,
                  .error_rate = 0.01,
                  .strategy = Strategy::kGuava64,
                  .ttl_seconds = forty_thousand_days};
  EXPECT_EQ(BloomFilter::Create(*store_, "g", o).status().code(), StatusCode::kInvalidArgument);
  // A create of the stored one opens it, as for any filter (it was "a TTL
  // ... is more than 100 years", exit 2 to a deploy script's create), the
  // TTL not compared: it keeps its own, which the front ends compare.
  bool created = true;
  ASSERT_OK_AND_ASSIGN(auto again, BloomFilter::Create(*store_, "f", o, &created));
  EXPECT_FALSE(created);
  EXPECT_TRUE(*again->Contains("ORD-2"));
  o.ttl_seconds += 1;
  ASSERT_OK_AND_ASSIGN(auto other_ttl, BloomFilter::Create(*store_, "f", o, &created));
  EXPECT_FALSE(created);
  EXPECT_EQ(other_ttl->config().ttl_seconds, forty_thousand_days);
  auto b = ReadFile();
  std::string t = text;
  t.replace(at, 14, "ttl_seconds=" + std::to_string(uint64_t{20000} * 365 * 86400) + "\n");
  SetText(b, t);
  WriteFile(b);
  ExpectDataLoss("10,000 years");
}

TEST_F(FileStoreTest, AWindowStoredPastTheCreationLimitStillOpens) {
  const uint64_t forty_thousand_days_ms = uint64_t{40000} * 86400 * 1000;
  FilterOptions o{.capacity = 1000,
                  .error_rate = 0.01,
                  .kind = FilterKind::kWindow,
                  .window_millis = 86400 * 1000,
                  .slices = 2};
  ASSERT_OK_AND_ASSIGN(auto w, BloomFilter::Create(*store_, "w", o));
  ASSERT_TRUE(w->Add("ORD-1").ok());
  w.reset();
  const std::string path = dir_.path() + "/w.rbf";
  std::vector<uint8_t> b;
  {
    std::ifstream in(path, std::ios::binary);
    b.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string t = Text(b);
  const size_t at = t.find("window_ms=86400000\n");
  ASSERT_NE(at, std::string::npos) << t;
  t.replace(at, 19, "window_ms=" + std::to_string(forty_thousand_days_ms) + "\n");
  const std::vector<uint8_t> parts_made(b.begin() + 4072, b.begin() + 4080);
  SetText(b, t);
  std::copy(parts_made.begin(), parts_made.end(), b.begin() + 4072);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  ASSERT_OK_AND_ASSIGN(auto opened, BloomFilter::Open(*store_, "w"));
  EXPECT_EQ(opened->config().window_millis, forty_thousand_days_ms);
  ASSERT_TRUE(opened->Add("ORD-2").ok());
  EXPECT_TRUE(*opened->Contains("ORD-2"));
  // A create of it opens it (it was "a window filter's window must be at
  // most 100 years"); a new one is still refused.
  o.window_millis = forty_thousand_days_ms;
  bool created = true;
  ASSERT_OK_AND_ASSIGN(auto again, BloomFilter::Create(*store_, "w", o, &created));
  EXPECT_FALSE(created);
  EXPECT_TRUE(*again->Contains("ORD-2"));
  EXPECT_EQ(BloomFilter::Create(*store_, "w2", o).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(opened->Info().ok()) << opened->Info().status().ToString();
}

// Files written before the config codec (format version 1, an all-binary
// header) still open, with their bits, through the same validation.
TEST_F(FileStoreTest, VersionOneFilesStillOpen) {
  std::vector<uint8_t> b = ReadFile();  // keeps the cells; the header is rewritten
  ASSERT_EQ(b.size(), 4096u + 1200u);
  std::fill(b.begin(), b.begin() + 4096, 0);
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
  };
  std::memcpy(b.data(), "REDBLOOM", 8);
  put(8, 1, 4);      // version
  put(12, 4096, 4);  // header size
  b[16] = 0;         // plain
  b[17] = 1;         // guava64
  b[18] = 0;         // utf8
  b[19] = 1;         // cell bits
  put(20, 7, 4);
  put(24, 9600, 8);
  put(32, 1000, 8);
  double p = 0.01;
  uint64_t p_bits;
  std::memcpy(&p_bits, &p, 8);
  put(40, p_bits, 8);
  put(48, 1200, 8);        // data bytes
  put(96, UINT64_MAX, 8);  // the main file
  put(124, crc32(0L, b.data(), 124), 4);
  put(256, 1, 8);  // item count
  WriteFile(b);
  auto f = BloomFilter::Open(*store_, "f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(*(*f)->Contains("ORD-1"));
  EXPECT_EQ((*f)->Info()->items_added, 1u);
  ASSERT_TRUE((*f)->Add("ORD-2").ok());
  EXPECT_EQ((*f)->Info()->items_added, 2u) << "the count lives where version 1 kept it";
  b[124] ^= 1;
  WriteFile(b);
  ExpectDataLoss("checksum");
}

// Reading a store creates nothing: `list`, `info` and `check` on a store
// directory that does not exist answer (an empty list, not found) and leave
// no directory behind; the first create makes it.
// The "dropped or replaced" flag (outside the header's CRC) set on the file
// its path still names is damage: kDataLoss, not a kConflict that reopening
// can never clear.
TEST_F(FileStoreTest, AReplacedFlagOnTheLiveFileIsDataLoss) {
  std::vector<uint8_t> b = ReadFile();
  ASSERT_GE(b.size(), 4096u);
  b[4088] = 1;  // version 2: the flag is the header's last word
  WriteFile(b);
  auto f = BloomFilter::Open(*store_, "f");
  const Status s = f.ok() ? (*f)->Contains("ORD-1").status() : f.status();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.ToString().find("the header is damaged"), std::string::npos) << s.ToString();
}

// The highest part number among the files of a parts directory.
uint64_t LastPart(const std::string& parts) {
  uint64_t last = 0;
  for (const auto& e : std::filesystem::directory_iterator(parts)) {
    last = std::max<uint64_t>(last, std::stoull(e.path().stem().string()));
  }
  return last;
}

// Rewrites a version-2 main file's header as version 1 (the all-binary
// header of files written before the config codec), whose layer count at
// 272 says how many layers were made, the main file's included.
void RewriteAsVersionOne(const std::string& path, uint64_t layers) {
  std::vector<uint8_t> b;
  {
    std::ifstream in(path, std::ios::binary);
    b.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GE(b.size(), 4096u);
  auto get = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[at + i];
    return v;
  };
  std::map<std::string, std::string> fields;
  std::istringstream text(std::string(b.begin() + 64, b.begin() + 64 + get(40, 4)));
  for (std::string line; std::getline(text, line);) {
    fields[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
  }
  const uint64_t part = get(16, 8), expires = get(24, 8), data = get(32, 8), count = get(4080, 8);
  std::vector<uint8_t> h(4096, 0);
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) h.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
  };
  auto put_double = [&](size_t at, const std::string& v) {
    const double d = std::stod(v);
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    put(at, bits, 8);
  };
  const auto id = [](const std::string& name, std::vector<std::string> names) {
    return static_cast<uint8_t>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  std::memcpy(h.data(), "REDBLOOM", 8);
  put(8, 1, 4);
  put(12, 4096, 4);
  h[16] = id(fields["kind"], {"plain", "counting", "scaling", "window"});
  h[17] = id(fields["strategy"], {"seed", "guava64", "redisson", "block"});
  h[18] = id(fields["encoding"], {"utf8", "utf8x2", "int32", "int64", "bytes"});
  h[19] = h[16] == 1 ? 4 : 1;
  put(20, std::stoull(fields["hashes"]), 4);
  put(24, std::stoull(fields["bits"]), 8);
  put(32, std::stoull(fields["capacity"]), 8);
  put_double(40, fields["error_rate"]);
  put(48, data, 8);
  put(56, (fields["capped"] == "1" ? 1 : 0) | (fields["geometry"] == "given" ? 2 : 0), 4);
  put(60, std::stoull(fields["slices"]), 4);
  put_double(64, fields["expansion"]);
  put(72, std::stoull(fields["window_ms"]), 8);
  put(80, std::stoull(fields["ttl_seconds"]), 8);
  put(88, expires, 8);
  put(96, part, 8);
  put(124, crc32(0L, h.data(), 124), 4);
  put(256, count, 8);
  put(272, layers, 8);
  std::copy(h.begin(), h.end(), b.begin());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A scaling filter written as version 1 kept its layer count at 272, which
// was read as nothing: a lost last layer made a smaller filter whose items
// read as absent (397 of 700 in an audit), and layers this build grew were
// not counted there, so a build that wrote the file read them as absent.
TEST_F(FileStoreTest, AVersionOneScalingFiltersLayerCountIsReadAndKept) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  f.reset();
  const std::string parts = dir_.path() + "/.sc.parts";
  const uint64_t last = LastPart(parts);
  ASSERT_GE(last, 2u);
  const std::string main_file = dir_.path() + "/sc.rbf";
  ASSERT_NO_FATAL_FAILURE(RewriteAsVersionOne(main_file, last + 1));
  auto layer_count = [&] {
    std::ifstream in(main_file, std::ios::binary);
    in.seekg(272);
    uint64_t v = 0;
    in.read(reinterpret_cast<char*>(&v), 8);
    return v;
  };
  {
    ASSERT_OK_AND_ASSIGN(auto opened, BloomFilter::Open(*store_, "sc"));
    std::vector<uint8_t> present;
    ASSERT_TRUE(opened->ContainsMany(scaling_views_, &present).ok());
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), 2000) << "the file reads whole";
    // It grows, and counts the layer where version 1 keeps it.
    std::vector<std::string> more;
    for (int i = 0; i < 4000; ++i) more.push_back("M-" + std::to_string(i));
    ASSERT_TRUE(opened->AddMany(std::vector<std::string_view>(more.begin(), more.end())).ok());
  }
  const uint64_t now_last = LastPart(parts);
  ASSERT_GT(now_last, last);
  EXPECT_EQ(layer_count(), now_last + 1);
  // Its last layer lost is data loss, never a smaller filter.
  std::filesystem::remove(parts + "/" + std::to_string(now_last) + ".rbf");
  ASSERT_OK_AND_ASSIGN(auto reopened, BloomFilter::Open(*store_, "sc"));
  std::vector<uint8_t> present;
  const Status check = reopened->ContainsMany(scaling_views_, &present);
  EXPECT_EQ(check.code(), StatusCode::kDataLoss) << "never \"absent\": " << check.ToString();
}

// A scaling filter whose layer file was deleted is kDataLoss on every check
// and add, not a filter whose items in that layer read as absent.
TEST_F(FileStoreTest, LostLayerOfAScalingFilterIsDataLoss) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  const std::vector<std::string_view>& views = scaling_views_;
  const std::string layer = dir_.path() + "/.sc.parts/2.rbf";
  ASSERT_TRUE(std::filesystem::exists(layer)) << "the filter grew past three layers";
  ASSERT_TRUE(std::filesystem::exists(dir_.path() + "/.sc.parts/3.rbf"));
  // f lists its layers once the directory's stamp has settled, and trusts
  // them while it stays (no listing per check).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(f->Contains("x").ok());
  std::filesystem::remove(layer);
  auto reopened = BloomFilter::Open(*store_, "sc");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  std::vector<uint8_t> present;
  Status check = (*reopened)->ContainsMany(views, &present);
  EXPECT_EQ(check.code(), StatusCode::kDataLoss) << "never \"absent\": " << check.ToString();
  EXPECT_NE(check.ToString().find("has lost layer 2"), std::string::npos) << check.ToString();
  EXPECT_EQ((*reopened)->Add("new").code(), StatusCode::kDataLoss);
  // The handle that knew the layer says so too: the removal moved the parts
  // directory's stamp.
  EXPECT_EQ(f->ContainsMany(views, &present).code(), StatusCode::kDataLoss);
  // And so does info, which a dump and a merge read their layers from: a
  // dump without the layer would make its items absent wherever it went.
  const auto info = (*reopened)->Info();
  EXPECT_EQ(info.status().code(), StatusCode::kDataLoss)
      << (info.ok() ? std::to_string(info->parts) + " layers" : info.status().ToString());
}

// A layer file past the 32 a chain can have (a stray copy, one named for
// 2^64 - 1) is data_loss naming it: it failed every check "reached its limit
// of 32 layers", resource_exhausted (507), or, named 2^64 - 1, wrapped the
// layer count to 0 and blamed layer 0.
TEST_F(FileStoreTest, AStrayLayerFilePastTheChainsLimitIsDataLossNamingIt) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  const std::string parts = dir_.path() + "/.sc.parts/";
  for (const std::string stray : {"40", "18446744073709551615"}) {
    std::filesystem::copy_file(parts + "1.rbf", parts + stray + ".rbf");
    clock_->Advance(std::chrono::milliseconds(1000));  // f lists its layers again
    auto reopened = BloomFilter::Open(*store_, "sc");
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    for (BloomFilter* h : {f.get(), reopened->get()}) {
      const auto check = h->Contains("x");
      EXPECT_EQ(check.status().code(), StatusCode::kDataLoss)
          << stray << ": " << check.status().ToString();
      EXPECT_NE(check.status().message().find("lists a layer " + stray), std::string::npos)
          << check.status().message();
      EXPECT_EQ(h->Info().status().code(), StatusCode::kDataLoss) << stray;
    }
    std::filesystem::remove(parts + stray + ".rbf");
  }
  auto check = f->Contains("x");
  EXPECT_TRUE(check.ok()) << "without the stray file: " << check.status().ToString();
}

// A copy under a name the store never writes ("01", "1e0": ParseUint64
// reads both as 1) is not one of its layers: it was listed as a second
// layer 1, and the filter failed every call "has lost layer 2 of 5".
TEST_F(FileStoreTest, AStrayCopyUnderAnotherSpellingOfALayerIsNoLayer) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  const std::string parts = dir_.path() + "/.sc.parts/";
  const uint64_t layers = testing::ValueOrFail(f->Info()).parts;
  for (const std::string stray : {"01", "1e0", "1.0"}) {
    std::filesystem::copy_file(parts + "1.rbf", parts + stray + ".rbf");
  }
  clock_->Advance(std::chrono::milliseconds(1000));  // f lists its layers again
  auto reopened = BloomFilter::Open(*store_, "sc");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  for (BloomFilter* h : {f.get(), reopened->get()}) {
    std::vector<uint8_t> present;
    const Status check = h->ContainsMany(scaling_views_, &present);
    ASSERT_TRUE(check.ok()) << check.ToString();
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), std::ssize(scaling_views_));
    const auto info = h->Info();
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->parts, layers);
  }
}

// With the whole parts directory gone, the record of the layers made says
// they were lost: kDataLoss, and an add makes no new empty layers in their
// place (which would have hidden the loss for good).
TEST_F(FileStoreTest, LostPartsDirectoryOfAScalingFilterIsDataLoss) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  std::filesystem::remove_all(dir_.path() + "/.sc.parts");
  auto reopened = BloomFilter::Open(*store_, "sc");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  std::vector<uint8_t> present;
  EXPECT_EQ((*reopened)->ContainsMany(scaling_views_, &present).code(), StatusCode::kDataLoss);
  EXPECT_EQ((*reopened)->Info().status().code(), StatusCode::kDataLoss);
  EXPECT_EQ((*reopened)->Add("new").code(), StatusCode::kDataLoss);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/.sc.parts/1.rbf"));
}

// The last layer's file deleted leaves no gap to see: the main file records
// how many layers were made, so that is kDataLoss too, while a file written
// before that record (zero there) still opens, and records its next layer.
TEST_F(FileStoreTest, LostLastLayerOfAScalingFilterIsDataLoss) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  const std::vector<std::string_view>& views = scaling_views_;
  const std::string parts = dir_.path() + "/.sc.parts";
  const uint64_t last = LastPart(parts);
  ASSERT_GE(last, 2u);
  EXPECT_EQ(LayersRecorded(), last + 1);
  std::filesystem::rename(parts + "/" + std::to_string(last) + ".rbf", dir_.path() + "/kept");
  const std::string lost =
      "has lost layer " + std::to_string(last) + " of " + std::to_string(last + 1);
  auto expect_lost = [&](BloomFilter& filter) {
    std::vector<uint8_t> present;
    Status check = filter.ContainsMany(views, &present);
    EXPECT_EQ(check.code(), StatusCode::kDataLoss) << "never \"absent\": " << check.ToString();
    EXPECT_NE(check.ToString().find(lost), std::string::npos) << check.ToString();
    EXPECT_EQ(filter.Add("new").code(), StatusCode::kDataLoss);
  };
  clock_->Advance(std::chrono::milliseconds(1000));  // f lists its layers again
  expect_lost(*f);                                   // the handle that knew the layer
  auto reopened = BloomFilter::Open(*store_, "sc");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  expect_lost(**reopened);
  // The same filter as a version-2 file from before the record: read as a
  // smaller filter (nothing can tell), and the next layer made is recorded.
  SetLayersRecorded(0);
  auto old = BloomFilter::Open(*store_, "sc");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  std::vector<std::string> more;
  for (int i = 0; i < 4000; ++i) more.push_back("T-" + std::to_string(i));
  ASSERT_TRUE((*old)->AddMany(std::vector<std::string_view>(more.begin(), more.end())).ok());
  EXPECT_GE(LayersRecorded(), last + 1) << "the layer remade and those after it are recorded";
}

// A scaling filter from before the record of its layers (a version-2 file
// that kept none) that lost a middle layer is data_loss: layers are made in
// order, so a gap is a layer lost, whose items would read absent. The file
// store's listing says so; the scaling kind's own gap check stands behind
// it (the mutation audit found no test that fails without that check: none
// can, on a store that reports the gap first).
TEST_F(FileStoreTest, AMiddleLayerLostWithoutARecordIsDataLoss) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  f.reset();
  ASSERT_GE(LastPart(dir_.path() + "/.sc.parts"), 2u);
  SetLayersRecorded(0);
  ASSERT_TRUE(std::filesystem::remove(dir_.path() + "/.sc.parts/1.rbf"));
  ASSERT_OK_AND_ASSIGN(auto old, BloomFilter::Open(*store_, "sc"));
  std::vector<uint8_t> present;
  const Status check = old->ContainsMany(scaling_views_, &present);
  EXPECT_EQ(check.code(), StatusCode::kDataLoss) << "never \"absent\": " << check.ToString();
  EXPECT_NE(check.message().find("has lost layer 1 of"), std::string::npos) << check.ToString();
}

// A scaling check on file: lists its layers only when the main file's record
// of the layers made or the parts directory's stamp says they changed, and
// at least once a second (a listing cost a single check 14 us at one layer).
// A layer another writer makes is recorded before any item goes in, so the
// handle finds that writer's items at once.
TEST_F(FileStoreTest, AScalingHandleSeesAnotherWritersNewLayerAtOnce) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  std::vector<uint8_t> present;
  ASSERT_TRUE(f->ContainsMany(scaling_views_, &present).ok());
  std::vector<std::string> more;
  uint64_t before = 0;
  ASSERT_NO_FATAL_FAILURE(AddThroughAnotherStore("N", &more, &before));
  const std::vector<std::string_view> views(more.begin(), more.end());
  // No time has passed for f: it learns of the layers from the record.
  ASSERT_TRUE(f->ContainsMany(views, &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 4000);
}

// A writer that keeps no record of the layers it makes (a build from before
// the record) adds to a layer it made: a handle that trusted the record alone
// missed those items for up to a second (an audit: 50 of 300 found). The
// parts directory's stamp moved with the new layer's file, so the handle
// lists again and finds them all at once.
TEST_F(FileStoreTest, AScalingHandleSeesALayerAWriterLeftUnrecordedAtOnce) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the stamp settles
  std::vector<uint8_t> present;
  ASSERT_TRUE(f->ContainsMany(scaling_views_, &present).ok());
  std::vector<std::string> more;
  uint64_t before = 0;
  ASSERT_NO_FATAL_FAILURE(AddThroughAnotherStore("U", &more, &before));
  const std::vector<std::string_view> views(more.begin(), more.end());
  SetLayersRecorded(before);  // as a writer that keeps no record leaves it
  ASSERT_TRUE(f->ContainsMany(views, &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 4000);
}

// A layer made but not recorded (its maker killed between its file and the
// record) and found by a listing that could not record it is recorded by
// the first add to it, before the item goes in: handles trusting the record
// would otherwise miss that item for up to a second.
TEST_F(FileStoreTest, AnAddToAnUnrecordedLayerRecordsItFirst) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  const uint64_t last = LastPart(dir_.path() + "/.sc.parts");
  ASSERT_EQ(LayersRecorded(), last + 1);
  // A listing records the lagging layer, once per process and count.
  SetLayersRecorded(last);
  ASSERT_OK_AND_ASSIGN(auto lister, BloomFilter::Open(*store_, "sc"));
  ASSERT_TRUE(lister->Contains("x").ok());
  ASSERT_EQ(LayersRecorded(), last + 1);
  // Lagging again: this process's listings leave it, its adds record it.
  SetLayersRecorded(last);
  ASSERT_OK_AND_ASSIGN(auto adder, BloomFilter::Open(*store_, "sc"));
  ASSERT_TRUE(adder->Contains("x").ok());
  ASSERT_EQ(LayersRecorded(), last);
  ASSERT_TRUE(adder->Add("into-the-last-layer").ok());
  EXPECT_EQ(LayersRecorded(), last + 1);
  ASSERT_OK_AND_ASSIGN(const bool present, f->Contains("into-the-last-layer"));
  EXPECT_TRUE(present);
}

// A process at its limit of memory mappings (vm.max_map_count: each open
// filter file is one) maps no more filters, and says why: it read "Cannot
// allocate memory" (507) with gigabytes free. A drop there still flags the
// file for the handles that map it: the flag was set through a new mapping,
// so the file went unflagged and those handles went on using it. The child
// process fills its mappings (pages of alternating protection, each its own
// mapping) and reports by exit code.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define REDBLOOM_SANITIZED_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define REDBLOOM_SANITIZED_ALLOCATOR 1
#endif
#endif
// In a child process holding every mapping it may: opens `name` and adds
// to it; 0 when that fails saying why (the limit, its reason), else 13-15.
int OpenAtTheMappingLimit(Store& store, const std::string& name) {
  auto opened = BloomFilter::Open(store, name);
  const Status s = opened.ok() ? (*opened)->Add("y") : opened.status();
  if (s.code() != StatusCode::kResourceExhausted) return 13;
  if (s.message().find("vm.max_map_count") == std::string::npos) return 14;
  if (s.reason() != StatusReason::kMappingLimit) return 15;
  return 0;
}

TEST_F(FileStoreTest, AtTheMappingLimitADropStillFlagsAndAnOpenSaysWhy) {
#ifdef REDBLOOM_SANITIZED_ALLOCATOR
  GTEST_SKIP() << "the sanitizers' allocators map memory as they go, and fail at the limit: "
                  "this runs in the normal build";
#endif
  const FilterOptions o{.capacity = 1000, .error_rate = 0.01};
  ASSERT_OK_AND_ASSIGN(auto dropped, BloomFilter::Create(*store_, "a", o));
  ASSERT_TRUE(dropped->Add("x").ok());
  ASSERT_TRUE(BloomFilter::Create(*store_, "b", o).ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!testing::TakeEveryMapping()) ::_exit(11);
    if (!store_->Drop("a").ok()) ::_exit(12);
    ::_exit(OpenAtTheMappingLimit(*store_, "b"));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "11: the limit was not reached; 12: the drop failed; 13, 14, 15: the open did not say "
         "why";
  // The handle that mapped the dropped file learns of it.
  EXPECT_EQ(dropped->Contains("x").status().code(), StatusCode::kNotFound);
}

// The packaged unit hides /proc/sys (ProcSubset=pid), where the limit is
// read: the open still says why, with the reason the service's recovery
// needs (it answered 507 "Cannot allocate memory" there: an audit). The
// child hides the setting with a bind mount in a mount namespace of its
// own, as root can.
TEST_F(FileStoreTest, AtTheMappingLimitWithTheSettingHiddenAnOpenStillSaysWhy) {
#ifdef REDBLOOM_SANITIZED_ALLOCATOR
  GTEST_SKIP() << "the sanitizers' allocators map memory as they go, and fail at the limit: "
                  "this runs in the normal build";
#endif
  if (::geteuid() != 0) GTEST_SKIP() << "hiding /proc/sys/vm/max_map_count needs root";
  ASSERT_TRUE(BloomFilter::Create(*store_, "b", {.capacity = 1000, .error_rate = 0.01}).ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Root without CAP_SYS_ADMIN (a container's) cannot: 9, a skip.
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(9);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("/dev/null", "/proc/sys/vm/max_map_count", nullptr, MS_BIND, nullptr) != 0) {
      ::_exit(10);
    }
    std::ifstream hidden("/proc/sys/vm/max_map_count");
    std::string text;
    if (hidden >> text) ::_exit(10);  // still readable
    if (!testing::TakeEveryMapping()) ::_exit(11);
    ::_exit(OpenAtTheMappingLimit(*store_, "b"));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  if (WEXITSTATUS(status) == 9) GTEST_SKIP() << "no mount namespace to be had (CAP_SYS_ADMIN)";
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: the setting could not be hidden; 11: the limit was not reached; 13, 14, 15: the "
         "open did not say why";
}

// A layer file that holds another layer (copied or moved by hand) is lost
// data, not a filter re-created meanwhile: it read as conflict (exit 4,
// 409), which a client that reopens on conflict retried for ever.
TEST_F(FileStoreTest, ALayerFileHoldingAnotherLayerIsDataLoss) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  const std::string parts = dir_.path() + "/.sc.parts/";
  ASSERT_GE(LastPart(parts), 2u);
  std::filesystem::copy_file(parts + "1.rbf", parts + "2.rbf",
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_OK_AND_ASSIGN(auto reopened, BloomFilter::Open(*store_, "sc"));
  std::vector<uint8_t> present;
  const Status check = reopened->ContainsMany(scaling_views_, &present);
  EXPECT_EQ(check.code(), StatusCode::kDataLoss) << check.ToString();
  EXPECT_NE(check.message().find("holds part 1 of filter 'sc', where part 2 belongs"),
            std::string::npos)
      << check.ToString();
  std::filesystem::remove(parts + "2.rbf");
}

// A copy of the last layer at the next number is data_loss while it is
// there, and is never recorded as a layer made: a record raised for it made
// the filter data_loss for good once the copy was removed.
TEST_F(FileStoreTest, AStrayCopyAtTheNextLayerNumberIsNeverRecorded) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  const std::string parts = dir_.path() + "/.sc.parts/";
  const uint64_t last = LastPart(parts);
  const std::string stray = parts + std::to_string(last + 1) + ".rbf";
  std::filesystem::copy_file(parts + std::to_string(last) + ".rbf", stray);
  ASSERT_OK_AND_ASSIGN(auto reopened, BloomFilter::Open(*store_, "sc"));
  std::vector<uint8_t> present;
  EXPECT_EQ(reopened->ContainsMany(scaling_views_, &present).code(), StatusCode::kDataLoss);
  std::filesystem::remove(stray);
  ASSERT_OK_AND_ASSIGN(auto after, BloomFilter::Open(*store_, "sc"));
  const Status check = after->ContainsMany(scaling_views_, &present);
  EXPECT_TRUE(check.ok()) << "the stray copy was recorded: " << check.ToString();
}

// A layer's maker killed between linking its file and recording it left the
// record behind for good: nothing but a new layer raised it, so a later loss
// of that layer's file read as a smaller filter, its items absent. The next
// listing that finds the layers records them.
TEST_F(FileStoreTest, ALayerMadeButNotRecordedIsRecordedByTheNextReader) {
  std::unique_ptr<BloomFilter> f;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&f));
  const std::string parts = dir_.path() + "/.sc.parts";
  const uint64_t last = LastPart(parts);
  ASSERT_GE(last, 2u);
  SetLayersRecorded(1);  // layers 1..last made, none recorded
  ASSERT_OK_AND_ASSIGN(auto reader, BloomFilter::Open(*store_, "sc"));
  std::vector<uint8_t> present;
  ASSERT_TRUE(reader->ContainsMany(scaling_views_, &present).ok());
  EXPECT_EQ(LayersRecorded(), last + 1) << "the layers found were not recorded";
  std::filesystem::rename(parts + "/" + std::to_string(last) + ".rbf", dir_.path() + "/kept");
  ASSERT_OK_AND_ASSIGN(auto after, BloomFilter::Open(*store_, "sc"));
  EXPECT_EQ(after->ContainsMany(scaling_views_, &present).code(), StatusCode::kDataLoss)
      << "a lost layer read as absent";
}

// The parts of a filter whose main file is gone (a drop cut short, a file
// deleted by hand) are not a new filter's of the same name: one of other
// parameters works (it met them as "re-created" on every call), and one of
// the same parameters starts empty (it adopted their layers, with items it
// was never given).
// Whoever can write the store's directory cannot make the store work
// outside it (a security audit): a filter file that is a symbolic link to
// another directory's filter was added to and flagged "replaced" through
// the link; a parts directory that is a link had *.rbf files deleted or
// made through it; and a FIFO named as a filter held every list for ever.
TEST_F(FileStoreTest, TheStoreFollowsNoLinksAndOpensNoFifos) {
  testing::TempDir other;
  ASSERT_OK_AND_ASSIGN(auto other_store, Store::Open("file:" + other.path()));
  ASSERT_OK_AND_ASSIGN(auto victim, BloomFilter::Create(*other_store, "victim",
                                                        {.capacity = 1000, .error_rate = 0.01}));
  victim.reset();
  std::filesystem::create_symlink(other.path() + "/victim.rbf", dir_.path() + "/evil.rbf");
  auto evil = BloomFilter::Open(*store_, "evil");
  ASSERT_FALSE(evil.ok());
  EXPECT_NE(evil.status().message().find("symbolic link"), std::string::npos)
      << evil.status().ToString();
  EXPECT_FALSE(BloomFilter::Drop(*store_, "evil").ok());
  ASSERT_OK_AND_ASSIGN(auto victim_again, BloomFilter::Open(*other_store, "victim"));
  EXPECT_TRUE(victim_again->Add("still-mine").ok()) << "not flagged replaced through the link";
  std::filesystem::remove(dir_.path() + "/evil.rbf");

  // A parts directory that is a link: nothing it points at is touched.
  const std::string outside = other.path() + "/outside";
  std::filesystem::create_directory(outside);
  std::ofstream(outside + "/important.rbf") << "data";
  std::filesystem::create_directory_symlink(outside, dir_.path() + "/.grow.parts");
  ASSERT_OK_AND_ASSIGN(
      auto grow,
      BloomFilter::Create(*store_, "grow",
                          {.capacity = 10, .error_rate = 0.01, .kind = FilterKind::kScaling}));
  EXPECT_TRUE(std::filesystem::exists(outside + "/important.rbf")) << "deleted by the create";
  std::filesystem::create_directory_symlink(outside, dir_.path() + "/.grow.parts");
  std::vector<std::string> items;
  for (int i = 0; i < 100; ++i) items.push_back("g" + std::to_string(i));
  const Status grown = grow->AddMany(std::vector<std::string_view>(items.begin(), items.end()));
  EXPECT_FALSE(grown.ok()) << "grew a layer through the link";
  EXPECT_FALSE(std::filesystem::exists(outside + "/1.rbf"));
  EXPECT_EQ(BloomFilter::Drop(*store_, "nosuch").code(), StatusCode::kNotFound);
  ASSERT_TRUE(BloomFilter::Drop(*store_, "grow").ok());
  EXPECT_TRUE(std::filesystem::exists(outside + "/important.rbf")) << "deleted by the drop";

  // Nor is one read through: B's parts directory linked to A's made A's
  // layers read as B's (300 of A's 400 items present in B) and B's adds
  // write into them.
  const FilterOptions scaling{.capacity = 10, .error_rate = 0.01, .kind = FilterKind::kScaling};
  ASSERT_OK_AND_ASSIGN(auto a, BloomFilter::Create(*store_, "a", scaling));
  ASSERT_OK_AND_ASSIGN(auto b, BloomFilter::Create(*store_, "b", scaling));
  ASSERT_TRUE(a->AddMany(std::vector<std::string_view>(items.begin(), items.end())).ok());
  b.reset();
  std::filesystem::create_directory_symlink(dir_.path() + "/.a.parts", dir_.path() + "/.b.parts");
  ASSERT_OK_AND_ASSIGN(auto b_again, BloomFilter::Open(*store_, "b"));
  std::vector<uint8_t> present;
  const Status read =
      b_again->ContainsMany(std::vector<std::string_view>(items.begin(), items.end()), &present);
  EXPECT_FALSE(read.ok() && std::count(present.begin(), present.end(), 1) > 10)
      << "b read a's layers: " << std::count(present.begin(), present.end(), 1) << " present";
  (void)b_again->Add("only-for-b");
  EXPECT_FALSE(testing::ValueOrFail(a->Contains("only-for-b"))) << "b's add went into a";
  std::filesystem::remove(dir_.path() + "/.b.parts");

  // A FIFO is refused at once, not opened and waited on.
  const std::string fifo = dir_.path() + "/zz.rbf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto listed = std::async(std::launch::async, [&] { return store_->List().status(); });
  const bool answered = listed.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!answered) {
    const int release = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the open return
    if (release >= 0) ::close(release);
  }
  EXPECT_TRUE(answered) << "List waited on a FIFO";
  listed.wait();
  auto opened = BloomFilter::Open(*store_, "zz");
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("not a regular file"), std::string::npos)
      << opened.status().ToString();
}

// Files and directories take the process's umask: under 002 a group may
// share the store. Fixed modes (0644, 0755) made that impossible (an audit).
// Others never get write, even under umask 0 (the review).
TEST_F(FileStoreTest, ModesFollowTheUmask) {
  const FilterOptions scaling{.capacity = 10, .error_rate = 0.01, .kind = FilterKind::kScaling};
  const auto mode = [&](const std::string& name) {
    struct stat st {};
    EXPECT_EQ(::stat((dir_.path() + "/" + name).c_str(), &st), 0) << name;
    return st.st_mode & 0777;  // not the setgid bit a shared TMPDIR passes on
  };
  for (const mode_t umask : {mode_t{002}, mode_t{022}, mode_t{077}, mode_t{0}}) {
    SCOPED_TRACE(umask);
    const std::string store_dir = "s" + std::to_string(umask);
    const mode_t was = ::umask(umask);
    auto store = Store::Open("file:" + dir_.path() + "/" + store_dir);
    Status grown = store.status();
    if (store.ok()) {
      auto f = BloomFilter::Create(**store, "f", scaling);
      grown = f.ok() ? (*f)->AddMany(std::vector<std::string_view>(100, "x")) : f.status();
      for (int i = 0; grown.ok() && i < 100; ++i) grown = (*f)->Add("g" + std::to_string(i));
    }
    ::umask(was);
    ASSERT_TRUE(grown.ok()) << grown.ToString();
    // Never writable by others, even under umask 0.
    EXPECT_EQ(mode(store_dir), 0775 & ~umask);
    EXPECT_EQ(mode(store_dir + "/f.rbf"), 0664 & ~umask);
    EXPECT_EQ(mode(store_dir + "/.f.parts"), 0775 & ~umask);
    EXPECT_EQ(mode(store_dir + "/.f.parts/1.rbf"), 0664 & ~umask);
  }
}

// Something the store never makes, at a filter's path (a symbolic link, a
// FIFO, a directory), is refused as kDataLoss: it was kUnavailable, which
// callers retry and redbloomd answered 503 "retry" for ever.
TEST_F(FileStoreTest, SomethingElseAtAFiltersPathIsDataLossNotAnOutage) {
  ASSERT_OK_AND_ASSIGN(auto real,
                       BloomFilter::Create(*store_, "real", {.capacity = 10, .error_rate = 0.01}));
  real.reset();
  std::filesystem::create_symlink(dir_.path() + "/real.rbf", dir_.path() + "/link.rbf");
  ASSERT_EQ(::mkfifo((dir_.path() + "/fifo.rbf").c_str(), 0600), 0);
  std::filesystem::create_directory(dir_.path() + "/dir.rbf");
  // A socket, whose open fails (ENXIO) before the regular-file check can.
  const int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un at{};
  at.sun_family = AF_UNIX;
  const std::string sock_path = dir_.path() + "/sock.rbf";
  ASSERT_LT(sock_path.size(), sizeof(at.sun_path));
  std::memcpy(at.sun_path, sock_path.c_str(), sock_path.size() + 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0);
  ::close(sock);
  for (const std::string name : {"link", "fifo", "dir", "sock"}) {
    SCOPED_TRACE(name);
    auto opened = BloomFilter::Open(*store_, name);
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.status().code(), StatusCode::kDataLoss) << opened.status().ToString();
    EXPECT_FALSE(opened.status().IsTransient());
    const Status dropped = BloomFilter::Drop(*store_, name);
    EXPECT_EQ(dropped.code(), StatusCode::kDataLoss) << dropped.ToString();
    auto created = BloomFilter::Create(*store_, name, {.capacity = 10, .error_rate = 0.01});
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.status().code(), StatusCode::kDataLoss) << created.status().ToString();
  }
  EXPECT_TRUE(std::filesystem::is_directory(dir_.path() + "/dir.rbf"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir_.path() + "/link.rbf"));
  ASSERT_OK_AND_ASSIGN(real, BloomFilter::Open(*store_, "real"));

  // A parts directory that is a link: the scaling filter's open fails so.
  ASSERT_OK_AND_ASSIGN(
      auto grow,
      BloomFilter::Create(*store_, "grow",
                          {.capacity = 10, .error_rate = 0.01, .kind = FilterKind::kScaling}));
  grow.reset();
  std::filesystem::remove_all(dir_.path() + "/.grow.parts");
  std::filesystem::create_directory_symlink(dir_.path(), dir_.path() + "/.grow.parts");
  auto grow_again = BloomFilter::Open(*store_, "grow");
  const Status grown = grow_again.ok() ? (*grow_again)->Add("x") : grow_again.status();
  EXPECT_EQ(grown.code(), StatusCode::kDataLoss) << grown.ToString();

  // A loop of links in the store's own path is no foreign file, nor said to be
  // one ("a symbolic link, which the store does not follow"): DIR may be a link.
  std::filesystem::create_symlink(dir_.path() + "/loop-a", dir_.path() + "/loop-b");
  std::filesystem::create_symlink(dir_.path() + "/loop-b", dir_.path() + "/loop-a");
  auto looped = Store::Open("file:" + dir_.path() + "/loop-a");
  const Status listed = looped.ok() ? (*looped)->List().status() : looped.status();
  EXPECT_NE(listed.code(), StatusCode::kDataLoss) << listed.ToString();
  EXPECT_EQ(listed.message().find("does not follow"), std::string::npos) << listed.ToString();
}

// Temporary names cannot be taken in advance: files named .tmp.PID.0 to
// .tmp.PID.1999, made by whoever could write the directory, refused every
// create ("File exists") while the process lived.
TEST_F(FileStoreTest, TemporaryNamesMadeInAdvanceDoNotBlockCreates) {
  testing::TempDir fresh;
  for (int n = 0; n < 2000; ++n) {
    std::ofstream(fresh.path() + "/.tmp." + std::to_string(::getpid()) + "." + std::to_string(n));
  }
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + fresh.path()));
  for (int i = 0; i < 3; ++i) {
    auto created =
        BloomFilter::Create(*store, "t" + std::to_string(i), {.capacity = 100, .error_rate = 0.01});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
  }
}

TEST_F(FileStoreTest, ANewFilterTakesNoPartsOfAVanishedOne) {
  for (const uint64_t capacity : {200, 100}) {
    std::unique_ptr<BloomFilter> old;
    ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&old));
    old.reset();
    ASSERT_TRUE(std::filesystem::exists(dir_.path() + "/.sc.parts/1.rbf"));
    std::filesystem::remove(dir_.path() + "/sc.rbf");
    auto f = BloomFilter::Create(
        *store_, "sc",
        FilterOptions{.capacity = capacity, .error_rate = 0.01, .kind = FilterKind::kScaling});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    std::vector<uint8_t> present;
    const Status check = (*f)->ContainsMany(scaling_views_, &present);
    ASSERT_TRUE(check.ok()) << capacity << ": " << check.ToString();
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), 0) << capacity;
    ASSERT_OK_AND_ASSIGN(const FilterInfo info, (*f)->Info());
    EXPECT_EQ(info.parts, 1u) << capacity;
    EXPECT_TRUE((*f)->Add("new").ok()) << capacity;
    ASSERT_TRUE(store_->Drop("sc").ok());
    scaling_items_.clear();
  }
}

// Dropping such a name answers that there is no filter, and clears the
// parts all the same.
TEST_F(FileStoreTest, DropClearsThePartsOfAVanishedFilter) {
  std::unique_ptr<BloomFilter> old;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&old));
  old.reset();
  std::filesystem::remove(dir_.path() + "/sc.rbf");
  EXPECT_EQ(store_->Drop("sc").code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/.sc.parts"));
}

// Makes a file one the store cannot open to write, as another user's is,
// while it lives: immutable for root (whom modes do not stop), mode 0444
// otherwise.
class Unwritable {
 public:
  explicit Unwritable(std::string path) : path_(std::move(path)) {
    if (::geteuid() != 0) {
      done_ = ::chmod(path_.c_str(), 0444) == 0;
      if (!done_) why_ = "chmod: " + std::string(std::strerror(errno));
      return;
    }
    done_ = SetImmutable(true);
  }
  ~Unwritable() { Undo(); }
  Unwritable(const Unwritable&) = delete;
  Unwritable& operator=(const Unwritable&) = delete;

  bool ok() const { return done_; }
  const std::string& why() const { return why_; }
  void Undo() {
    if (!done_) return;
    done_ = false;
    if (::geteuid() != 0) {
      (void)::chmod(path_.c_str(), 0644);
    } else {
      (void)SetImmutable(false);
    }
  }

 private:
  bool SetImmutable(bool on) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      why_ = "open: " + std::string(std::strerror(errno));
      return false;
    }
    int flags = 0;
    bool set = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (set) {
      flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
      set = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    if (!set) why_ = "the immutable flag (chattr +i): " + std::string(std::strerror(errno));
    ::close(fd);
    return set;
  }

  std::string path_;
  bool done_ = false;
  std::string why_;
};

// A part the store cannot open to flag stays, and says so. A drop unlinked
// it unflagged all the same (remove_all) and answered OK, or, where that
// failed too, left it for the next create of the name to adopt as its layer
// 1 (an audit).
TEST_F(FileStoreTest, APartThatCannotBeFlaggedStaysAndBlocksACreate) {
  std::unique_ptr<BloomFilter> old;
  ASSERT_NO_FATAL_FAILURE(GrowScalingFilter(&old));
  old.reset();
  const std::string layer = dir_.path() + "/.sc.parts/1.rbf";
  Unwritable pinned(layer);
  ASSERT_TRUE(pinned.ok()) << "cannot make " << layer << " unwritable: " << pinned.why();
  const FilterOptions options{.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling};

  const Status dropped = store_->Drop("sc");
  EXPECT_EQ(dropped.code(), StatusCode::kUnavailable) << dropped.ToString();
  EXPECT_NE(dropped.message().find("was dropped, but its parts"), std::string::npos)
      << dropped.message();
  EXPECT_NE(dropped.message().find(layer), std::string::npos) << dropped.message();
  EXPECT_TRUE(std::filesystem::exists(layer));
  auto blocked = BloomFilter::Create(*store_, "sc", options);
  ASSERT_FALSE(blocked.ok()) << "a create adopted the parts of a dropped filter";
  EXPECT_NE(blocked.status().message().find("an earlier filter's parts"), std::string::npos)
      << blocked.status().ToString();
  EXPECT_EQ(store_->Drop("sc").code(), StatusCode::kUnavailable);

  pinned.Undo();
  EXPECT_EQ(store_->Drop("sc").code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/.sc.parts"));
  ASSERT_OK_AND_ASSIGN(auto made, BloomFilter::Create(*store_, "sc", options));
  ASSERT_OK_AND_ASSIGN(const FilterInfo info, made->Info());
  EXPECT_EQ(info.parts, 1u);
}

// How many of this process's mappings (deleted files' too) are of files
// under `dir`.
int MappedUnder(const std::string& dir) {
  int n = 0;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) n += line.find(dir) != std::string::npos;
  return n;
}
// How many of this process's descriptors are on files under `dir`.
int OpenUnder(const std::string& dir) {
  int n = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(fd.path(), ec);
    n += !ec && target.string().find(dir) != std::string::npos;
  }
  return n;
}

// A window filter that is only added to and checked deletes its expired
// slices and lets go of them. Before, only a listing of its parts (info, an
// export, a clear) deleted them, and a handle kept every slice it had opened
// mapped and open: a file on disk, a mapping and a descriptor more per
// slice, for as long as the handle lived (redbloomd keeps its handles).
// file:///abs and file://localhost/abs name an absolute directory; any
// other host is a missing slash (file://var/lib/x), which made a relative
// directory under whatever the working directory was.
TEST(FileStoreUrlTest, AHostInAFileUrlIsRefusedButLocalhost) {
  testing::TempDir dir;
  const Status host = Store::Open("file://var/lib/redbloom").status();
  EXPECT_EQ(host.code(), StatusCode::kInvalidArgument) << host.ToString();
  EXPECT_NE(host.message().find("names a host ('var')"), std::string::npos) << host.ToString();
  EXPECT_NE(host.message().find("file:///var/lib/redbloom"), std::string::npos) << host.ToString();
  for (const std::string& url :
       {"file://" + dir.path() + "/a", "file://localhost" + dir.path() + "/a",
        // Host names are case-insensitive (RFC 8089): "names a host ('LOCALHOST')".
        "file://LOCALHOST" + dir.path() + "/a"}) {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
    ASSERT_TRUE(
        store->Create("f", testing::ValueOrFail(MakeConfig({.capacity = 10, .error_rate = 0.01})))
            .ok() ||
        store->ReadConfig("f").ok())
        << url;
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/a/f.rbf")) << url;
  }
}

TEST(FileStoreWindowTest, ExpiredSlicesLeaveTheDiskAndTheProcess) {
  constexpr int kSlice = 60'000, kSlices = 2;
  testing::TempDir dir;
  auto clock = std::make_shared<ManualClock>(1'800'000'000'000);
  StoreOptions options;
  options.clock = clock;
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir.path(), options));
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, "w",
                                                   {.capacity = 100,
                                                    .error_rate = 0.01,
                                                    .kind = FilterKind::kWindow,
                                                    .window_millis = kSlice * kSlices,
                                                    .slices = kSlices}));
  const std::string parts = dir.path() + "/.w.parts/";
  for (int i = 0; i < 30; ++i) {
    const std::string item = "item-" + std::to_string(i);
    ASSERT_TRUE(f->Add(item).ok());
    EXPECT_TRUE(testing::ValueOrFail(f->Contains(item))) << item;
    clock->Advance(std::chrono::milliseconds(kSlice));
  }
  // A slice expires one slice after it left the window: kSlices + 1 of them
  // are kept.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(parts)) files += e.is_regular_file();
  EXPECT_LE(files, kSlices + 1) << "expired slices left in " << parts;
  EXPECT_LE(MappedUnder(parts), kSlices + 1) << "expired slices still mapped";
  EXPECT_LE(OpenUnder(parts), kSlices + 1) << "expired slices still open";
  EXPECT_TRUE(testing::ValueOrFail(f->Contains("item-29")));
}

// Reads `before` for its first `calls` readings, then `after`.
class FlipClock final : public Clock {
 public:
  FlipClock(uint64_t before, uint64_t after) : before_(before), after_(after) {}
  void FlipAfter(int calls) { left_ = calls; }
  uint64_t NowMillis() const override { return left_-- > 0 ? before_ : after_; }

 private:
  uint64_t before_, after_;
  mutable std::atomic<int> left_{1 << 30};
};

// A listing of a scaling filter's layers that its TTL ran out during (the
// clock read per layer file, in directory order, or another process
// deleting the expired files meanwhile) saw a gap: layers 0-4 and 6-29, say,
// which the kind reports as data_loss, "has lost layer 5" (an audit: 3 in
// 34,000 checks across the expiry). Every layer expires with the filter, so
// such a listing now finds the filter expired: not_found.
TEST(FileStoreTtlTest, ALayerListingThatAFiltersExpiryCutsIsNotFound) {
  testing::TempDir dir;
  constexpr uint64_t kStart = 1'800'000'000'000;
  auto clock = std::make_shared<FlipClock>(kStart, kStart + 3'600'001);
  StoreOptions options;
  options.clock = clock;
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir.path(), options));
  const FilterOptions o{
      .capacity = 10, .error_rate = 0.01, .kind = FilterKind::kScaling, .ttl_seconds = 3600};
  std::vector<std::string> items;
  for (int i = 0; i < 3000; ++i) items.push_back("L-" + std::to_string(i));
  // The main file read before the expiry, then `seen` layers, then the rest
  // after it, for each number of layers seen.
  for (int seen = 1; seen < 8; ++seen) {
    clock->FlipAfter(1 << 30);
    const std::string name = "sttl" + std::to_string(seen);
    ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Create(*store, name, o));
    ASSERT_TRUE(f->AddMany(std::vector<std::string_view>(items.begin(), items.end())).ok());
    ASSERT_OK_AND_ASSIGN(FilterInfo info, f->Info());
    ASSERT_GE(info.parts, 8u);
    ASSERT_OK_AND_ASSIGN(auto bits, store->OpenBits(name, f->config()));
    clock->FlipAfter(1 + seen);
    const auto parts = bits->ListParts();
    std::string listed;
    if (parts.ok()) {
      for (uint64_t p : *parts) listed += " " + std::to_string(p);
    }
    EXPECT_EQ(parts.status().code(), StatusCode::kNotFound)
        << seen << " layers seen; listed:" << listed;
  }
}

// A file store in `dir` whose clock is `clock`.
std::unique_ptr<Store> StoreWithClock(const std::string& dir, std::shared_ptr<const Clock> clock) {
  StoreOptions options;
  options.clock = std::move(clock);
  auto store = Store::Open("file:" + dir, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// A window check skips the slices its store's directory does not hold (one
// directory read, where it tried to open each of them: 23 failed opens a
// check for a day's window of 24 slices made an hour ago). A slice made by
// another client after a check is still seen by the next one, an older
// slice too (that client's clock runs a slice behind), and the skip must not
// hide it.
TEST(FileStoreWindowTest, ASliceAnotherClientMakesIsSeenByTheNextCheck) {
  constexpr int kSlice = 60'000, kSlices = 24;
  testing::TempDir dir;
  auto clock_a = std::make_shared<ManualClock>(1'800'000'000'000);
  auto clock_b = std::make_shared<ManualClock>(1'800'000'000'000 - kSlice);
  auto store_a = StoreWithClock(dir.path(), clock_a);
  auto store_b = StoreWithClock(dir.path(), clock_b);
  ASSERT_TRUE(store_a && store_b);
  ASSERT_OK_AND_ASSIGN(auto a, BloomFilter::Create(*store_a, "w",
                                                   {.capacity = 2400,
                                                    .error_rate = 0.01,
                                                    .kind = FilterKind::kWindow,
                                                    .window_millis = kSlice * kSlices,
                                                    .slices = kSlices}));
  ASSERT_OK_AND_ASSIGN(auto b, BloomFilter::Open(*store_b, "w"));
  EXPECT_FALSE(testing::ValueOrFail(a->Contains("late"))) << "no slice exists yet";
  ASSERT_TRUE(a->Add("now").ok());
  EXPECT_FALSE(testing::ValueOrFail(a->Contains("late")));
  ASSERT_TRUE(b->Add("late").ok());  // into the slice before a's current one
  EXPECT_TRUE(testing::ValueOrFail(a->Contains("late"))) << "a slice made since was not checked";
  const std::vector<std::string_view> both = {"now", "late"};
  std::vector<uint8_t> present;
  ASSERT_TRUE(a->ContainsMany(both, &present).ok());
  EXPECT_EQ(present, (std::vector<uint8_t>{1, 1}));
  // A slice file deleted from under the handles (by hand) reads as expired
  // (docs/file-format.md), and the check still answers from the others.
  clock_b->Advance(std::chrono::milliseconds(kSlice));
  ASSERT_TRUE(b->Add("newer").ok());
  std::filesystem::remove(dir.path() + "/.w.parts/" +
                          std::to_string(1'800'000'000'000 / kSlice - 1) + ".rbf");
  ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Open(*store_a, "w"));
  EXPECT_TRUE(testing::ValueOrFail(fresh->Contains("newer")));
  EXPECT_TRUE(testing::ValueOrFail(fresh->Contains("now")));
}

// A program that runs with stdout closed and then writes its output (as a
// CLI started with `>&-` does) must not write into a filter: the store's
// descriptors stay off 0, 1 and 2. Before, the filter file opened on
// descriptor 1, and the output went over its header ("not a redbloom filter
// file (bad magic)" from then on, its items gone).
TEST(FileStoreStdioTest, OutputToAClosedStdoutNeverLandsInAFilter) {
  testing::TempDir dir;
  const std::string url = "file:" + dir.path();
  {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
    ASSERT_OK_AND_ASSIGN(auto f,
                         BloomFilter::Create(*store, "f", {.capacity = 1000, .error_rate = 0.01}));
    ASSERT_TRUE(f->Add("kept").ok());
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(1);
    auto store = Store::Open(url);
    if (!store.ok()) ::_exit(10);
    auto f = BloomFilter::Open(**store, "f");
    if (!f.ok()) ::_exit(11);
    auto g = BloomFilter::Create(**store, "g", {.capacity = 1000, .error_rate = 0.01});
    if (!g.ok()) ::_exit(12);
    auto kept = (*f)->Contains("kept");
    if (!kept.ok() || !*kept) ::_exit(13);
    const char output[] = "1\tkept\n";  // what `check` would print
    (void)!::write(1, output, sizeof(output) - 1);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
  for (const char* name : {"f", "g"}) {
    auto f = BloomFilter::Open(*store, name);
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().ToString();
  }
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*store, "f"));
  EXPECT_TRUE(testing::ValueOrFail(f->Contains("kept")));
}

// Open filters hold no descriptor: before, every mapping kept one, so a
// window filter's slices and a scaling filter's layers (and then a counting
// filter, for its removes' flock()) cost redbloomd a descriptor each, for
// every filter in its cache, until EMFILE turned requests into 503s.
TEST(FileStoreFdTest, NoFilterHoldsADescriptor) {
  testing::TempDir dir;
  auto clock = std::make_shared<ManualClock>(1'800'000'000'000);
  auto store = StoreWithClock(dir.path(), clock);
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto plain,
                       BloomFilter::Create(*store, "p", {.capacity = 1000, .error_rate = 0.01}));
  ASSERT_OK_AND_ASSIGN(
      auto scaling,
      BloomFilter::Create(*store, "s",
                          {.capacity = 100, .error_rate = 0.01, .kind = FilterKind::kScaling}));
  ASSERT_OK_AND_ASSIGN(auto window, BloomFilter::Create(*store, "w",
                                                        {.capacity = 1000,
                                                         .error_rate = 0.01,
                                                         .kind = FilterKind::kWindow,
                                                         .window_millis = 8 * 60'000,
                                                         .slices = 8}));
  std::vector<std::string> items;
  for (int i = 0; i < 500; ++i) items.push_back("i" + std::to_string(i));
  const std::vector<std::string_view> views(items.begin(), items.end());
  ASSERT_TRUE(plain->AddMany(views).ok());
  ASSERT_TRUE(scaling->AddMany(views).ok());  // several layers
  for (int slice = 0; slice < 6; ++slice) {
    ASSERT_TRUE(window->Add(items[slice]).ok());
    clock->Advance(std::chrono::minutes(1));
  }
  std::vector<uint8_t> present;
  for (BloomFilter* f : {plain.get(), scaling.get(), window.get()}) {
    ASSERT_TRUE(f->ContainsMany(views, &present).ok());
  }
  EXPECT_EQ(OpenUnder(dir.path()), 0);
  ASSERT_OK_AND_ASSIGN(
      auto counting,
      BloomFilter::Create(*store, "c",
                          {.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kCounting}));
  ASSERT_TRUE(counting->Add("x").ok());
  // Nor does a counting filter: its removes lock its file through a
  // descriptor opened for each (one per cached counting filter ran
  // redbloomd out of descriptors under ulimit -n 1024, and every create
  // failed until a restart).
  EXPECT_EQ(OpenUnder(dir.path()), 0);
  ASSERT_TRUE(counting->Remove("x").ok());
  EXPECT_FALSE(testing::ValueOrFail(counting->Contains("x")));
  EXPECT_EQ(OpenUnder(dir.path()), 0);
  EXPECT_TRUE(testing::ValueOrFail(scaling->Contains("i499")));
  // A remove through a handle whose file was replaced since is refused, and
  // the handle follows the name (the facade reopens it).
  ASSERT_TRUE(counting->Add("y").ok());
  ASSERT_TRUE(BloomFilter::Drop(*store, "c").ok());
  ASSERT_OK_AND_ASSIGN(
      auto again,
      BloomFilter::Create(*store, "c",
                          {.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kCounting}));
  ASSERT_TRUE(again->Add("z").ok());
  bool removed = false;
  ASSERT_TRUE(counting->Remove("z", &removed).ok());
  EXPECT_TRUE(removed);
  EXPECT_FALSE(testing::ValueOrFail(again->Contains("z")));
}

// Removes from two processes at once are serialised by the file's lock,
// now taken through a descriptor opened for each remove: every item added
// once is removed once, never by both (which would take a counter at 1 to 0
// twice, and report the item removed twice).
TEST(FileStoreFdTest, RemovesFromTwoProcessesRemoveEachItemOnce) {
  testing::TempDir dir;
  const std::string url = "file:" + dir.path();
  std::vector<std::string> items;
  for (int i = 0; i < 3000; ++i) items.push_back("r" + std::to_string(i));
  const std::vector<std::string_view> views(items.begin(), items.end());
  {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
    ASSERT_OK_AND_ASSIGN(
        auto c,
        BloomFilter::Create(
            *store, "c", {.capacity = 100000, .error_rate = 0.001, .kind = FilterKind::kCounting}));
    ASSERT_TRUE(c->AddMany(views).ok());
  }
  // Each process removes the items one at a time, so that the two
  // interleave, and counts those it was told it removed.
  const auto remove_all = [&]() -> int {
    auto store = Store::Open(url);
    if (!store.ok()) return -1;
    auto c = BloomFilter::Open(**store, "c");
    if (!c.ok()) return -1;
    int removed = 0;
    for (std::string_view item : views) {
      bool was = false;
      if (!(*c)->Remove(item, &was).ok()) return -1;
      removed += was ? 1 : 0;
    }
    return removed;
  };
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    const int n = remove_all();
    [[maybe_unused]] const ssize_t w = ::write(fds[1], &n, sizeof(n));
    ::_exit(0);
  }
  ::close(fds[1]);
  const int mine = remove_all();
  int theirs = -1;
  [[maybe_unused]] const ssize_t r = ::read(fds[0], &theirs, sizeof(theirs));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_GE(mine, 0);
  ASSERT_GE(theirs, 0);
  EXPECT_EQ(mine + theirs, 3000) << mine << " + " << theirs;
}

// An expired filter is removed only while its name still holds it. The
// removal read the header, then took the directory lock and unlinked
// whatever the name held by then: a filter made meanwhile by another process
// (which had removed the expired one first) or swapped in by a rebuild was
// deleted, with its items.
TEST(FileStoreExpiryTest, AFilterMadeWhileAnExpiredOneIsRemovedSurvives) {
  testing::TempDir dir;
  auto clock = std::make_shared<ManualClock>(1'800'000'000'000);
  StoreOptions options;
  options.clock = clock;
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir.path(), options));
  ASSERT_TRUE(
      BloomFilter::Create(*store, "x", {.capacity = 100, .error_rate = 0.01, .ttl_seconds = 60})
          .ok());
  {
    ASSERT_OK_AND_ASSIGN(auto y,
                         BloomFilter::Create(*store, "y", {.capacity = 200, .error_rate = 0.01}));
    ASSERT_TRUE(y->Add("kept").ok());
  }
  clock->Advance(std::chrono::minutes(2));  // x has expired
  // The store's directory lock, held here so that the removal waits for it.
  const int lock = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);
  Result<FilterConfig> read = Status::Internal("not read");
  std::thread reader([&] { read = store->ReadConfig("x"); });
  // It reads x's header (expired) and waits for the lock to remove it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Meanwhile another process makes a new filter of the name, as a
  // rebuild's swap does.
  EXPECT_EQ(::rename((dir.path() + "/y.rbf").c_str(), (dir.path() + "/x.rbf").c_str()), 0);
  ::close(lock);
  reader.join();
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->capacity, 200u);
  ASSERT_OK_AND_ASSIGN(auto x, BloomFilter::Open(*store, "x"));
  EXPECT_TRUE(testing::ValueOrFail(x->Contains("kept")));
}

// Out of descriptors, every filter's open fails: the store is not ready.
// Ping asked access(), which needs none, and redbloomd's /readyz said ready
// while its requests failed "Too many open files".
TEST(FileStoreDirTest, OutOfDescriptorsIsNotReady) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir.path()));
  ASSERT_TRUE(BloomFilter::Create(*store, "f", {.capacity = 100, .error_rate = 0.01}).ok());
  EXPECT_TRUE(store->Ping().ok());
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit low = before;
  low.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> held;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) held.push_back(fd);
  const int err = errno;
  const Status out = store->Ping();
  for (int fd : held) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &before);
  ASSERT_EQ(err, EMFILE);
  EXPECT_EQ(out.code(), StatusCode::kUnavailable) << out.ToString();
  EXPECT_NE(out.message().find("Too many open files"), std::string::npos) << out.ToString();
  EXPECT_TRUE(store->Ping().ok());
}

// A relative store path in a working directory that was removed (or a
// store directory removed): access() still passes there, but nothing can be
// made, and Ping said ready while every create failed (an audit).
TEST(FileStoreDirTest, AStoreInARemovedDirectoryIsNotReady) {
  testing::TempDir dir;
  const std::string gone = dir.path() + "/gone";
  ASSERT_EQ(::mkdir(gone.c_str(), 0700), 0);
  const std::string here = std::filesystem::current_path().string();
  ASSERT_EQ(::chdir(gone.c_str()), 0);
  auto under = Store::Open("file:./s");  // its directory not made yet
  auto at = Store::Open("file:.");       // the removed directory itself
  const Status ready_before = under.ok() ? (*under)->Ping() : under.status();
  ::rmdir(gone.c_str());
  const Status under_gone = under.ok() ? (*under)->Ping() : under.status();
  const Status at_gone = at.ok() ? (*at)->Ping() : at.status();
  ASSERT_EQ(::chdir(here.c_str()), 0);
  EXPECT_TRUE(ready_before.ok()) << ready_before.ToString();
  EXPECT_EQ(under_gone.code(), StatusCode::kUnavailable) << under_gone.ToString();
  EXPECT_NE(under_gone.message().find("was removed"), std::string::npos) << under_gone.ToString();
  EXPECT_EQ(at_gone.code(), StatusCode::kUnavailable) << at_gone.ToString();
}

// A store URL with white space around it is refused, by Open and by
// CheckScheme (redbloomd's config check): "file:DIR " was a directory named
// "DIR ", made silently beside DIR by the first create (an audit).
TEST(FileStoreDirTest, AStoreUrlWithWhiteSpaceAroundIsRefused) {
  testing::TempDir dir;
  const std::string base = dir.path() + "/s";
  for (const std::string url : {"file:" + base + " ", " file:" + base, "file:" + base + "\r",
                                std::string("mem:\n"), std::string("redis://127.0.0.1:1\t")}) {
    SCOPED_TRACE(url);
    auto store = Store::Open(url);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
    EXPECT_NE(store.status().message().find("white space"), std::string::npos)
        << store.status().ToString();
    EXPECT_EQ(Store::CheckScheme(url).code(), StatusCode::kInvalidArgument);
  }
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ADD_FAILURE() << "made: '" << e.path().filename().string() << "'";
  }
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + base));
  EXPECT_TRUE(Store::CheckScheme("file:" + base).ok());
}

TEST(FileStoreDirTest, OnlyCreateMakesTheStoreDirectory) {
  testing::TempDir dir;
  const std::string store = dir.path() + "/d";
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", "file:" + store});
    return testing::RunCommand(args);
  };
  auto list = cli({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out, "");
  EXPECT_EQ(cli({"info", "f"}).exit_code, 4);
  EXPECT_EQ(cli({"check", "f", "x"}).exit_code, 4);
  EXPECT_FALSE(std::filesystem::exists(store)) << "a read created " << store;
  {
    ASSERT_OK_AND_ASSIGN(auto s, Store::Open("file:" + store));
    EXPECT_TRUE(testing::ValueOrFail(s->List()).empty());
    EXPECT_TRUE(s->Ping().ok()) << "the directory can be created: ready";
    EXPECT_FALSE(std::filesystem::exists(store));
  }
  auto created = cli({"create", "f", "-n", "100", "-p", "0.01"});
  EXPECT_EQ(created.exit_code, 0) << created.err;
  EXPECT_TRUE(std::filesystem::is_regular_file(store + "/f.rbf"));
  EXPECT_EQ(cli({"list"}).out, "f\n");
  // A path that is not a directory is still refused when the store opens.
  EXPECT_EQ(testing::RunCommand({REDBLOOM_CLI_PATH, "--store", "file:" + store + "/f.rbf", "list"})
                .exit_code,
            2);
}

// A child creates filters and adds items in a loop, writing the index of each
// acknowledged batch to a pipe; we SIGKILL it at a random moment, several
// times. Every file left must open cleanly, and every acknowledged item must
// be present.
TEST(FileStoreCrashTest, KillNineNeverTearsAHeaderOrLosesAnAck) {
  testing::TempDir dir;
  std::mt19937 rng(12345);
  for (int round = 0; round < 6; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto store = Store::Open("file:" + dir.path());
      if (!store.ok()) ::_exit(2);
      for (int batch = 0;; ++batch) {
        const std::string name = "r" + std::to_string(round) + "-" + std::to_string(batch % 50);
        auto f =
            BloomFilter::Create(**store, name, FilterOptions{.capacity = 5000, .error_rate = 0.01});
        if (!f.ok()) ::_exit(3);
        std::vector<std::string> items;
        for (int i = 0; i < 100; ++i)
          items.push_back("b" + std::to_string(batch) + "-" + std::to_string(i));
        std::vector<std::string_view> views(items.begin(), items.end());
        if (!(*f)->AddMany(views).ok()) ::_exit(4);
        const int32_t ack = batch;
        if (::write(fds[1], &ack, sizeof(ack)) != sizeof(ack)) ::_exit(5);
      }
    }
    ::close(fds[1]);
    // Kill at a random moment after the first acknowledgement (waiting for
    // it, not for a fixed time, so a loaded machine cannot kill too early).
    std::vector<int32_t> acked;
    int32_t ack;
    if (::read(fds[0], &ack, sizeof(ack)) == sizeof(ack)) acked.push_back(ack);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 80));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with " << WEXITSTATUS(status);
    while (::read(fds[0], &ack, sizeof(ack)) == sizeof(ack)) acked.push_back(ack);
    ::close(fds[0]);

    auto store = Store::Open("file:" + dir.path());
    ASSERT_TRUE(store.ok());
    auto names = (*store)->List();
    ASSERT_TRUE(names.ok());
    for (const auto& name : *names) {
      auto f = BloomFilter::Open(**store, name);
      ASSERT_TRUE(f.ok()) << name << ": " << f.status().ToString();
    }
    for (int32_t batch : acked) {
      const std::string name = "r" + std::to_string(round) + "-" + std::to_string(batch % 50);
      auto f = BloomFilter::Open(**store, name);
      ASSERT_TRUE(f.ok()) << name;
      for (int i = 0; i < 100; ++i) {
        const std::string item = "b" + std::to_string(batch) + "-" + std::to_string(i);
        ASSERT_TRUE(testing::ValueOrFail((*f)->Contains(item))) << name << " " << item;
      }
    }
    EXPECT_FALSE(acked.empty()) << "round " << round << " acknowledged nothing";
  }
}

}  // namespace
// A window handle that has read no slice yet (nothing added when it
// checked) maps no file of its filter: after a drop and a create by another
// process, its checks read the new filter's slices by the old numbering
// (another window) or missed them until it listed its slices again.
TEST_F(FileStoreTest, AWindowHandleWithNoSliceReadFollowsAReCreate) {
  for (const uint64_t window : {20000, 60000}) {
    const std::string name = "wn" + std::to_string(window);
    FilterOptions before{.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kWindow};
    before.window_millis = 60000;
    before.slices = 4;
    FilterOptions after = before;
    after.window_millis = window;
    ASSERT_OK_AND_ASSIGN(auto stale, BloomFilter::Create(*store_, name, before));
    ASSERT_OK_AND_ASSIGN(bool absent, stale->Contains("zz"));
    EXPECT_FALSE(absent);
    StoreOptions options;
    options.clock = clock_;
    ASSERT_OK_AND_ASSIGN(auto other, Store::Open("file:" + dir_.path(), options));
    ASSERT_TRUE(other->Drop(name).ok());
    ASSERT_OK_AND_ASSIGN(auto fresh, BloomFilter::Create(*other, name, after));
    ASSERT_TRUE(fresh->Add("X").ok());
    ASSERT_OK_AND_ASSIGN(bool found, stale->Contains("X"));
    EXPECT_TRUE(found) << name;
  }
}

}  // namespace redbloom
