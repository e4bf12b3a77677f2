// The file store's on-disk contract: a corrupt, truncated or foreign file is a
// clear kDataLoss, never a filter that answers "absent"; and a writer killed
// with SIGKILL never leaves a torn header or loses an acknowledged add.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "test_util.h"

namespace redbloom {
namespace {

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open("file:" + dir_.path());
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
    auto f = BloomFilter::Create(*store_, "f", FilterOptions{.capacity = 1000, .error_rate = 0.01});
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Add("ORD-1").ok());
  }

  std::string Path() const { return dir_.path() + "/f.rbf"; }

  std::vector<uint8_t> ReadFile() {
    std::ifstream in(Path(), std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  void WriteFile(const std::vector<uint8_t>& bytes) {
    std::ofstream out(Path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  static void FixCrc(std::vector<uint8_t>& b) {
    const uint32_t crc = static_cast<uint32_t>(crc32(0L, b.data(), 124));
    for (int i = 0; i < 4; ++i) b[124 + i] = static_cast<uint8_t>(crc >> (8 * i));
  }
  void ExpectDataLoss(const std::string& needle) {
    auto f = BloomFilter::Open(*store_, "f");
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kDataLoss) << f.status().ToString();
    EXPECT_NE(f.status().message().find(needle), std::string::npos) << f.status().message();
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

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
  b[33] ^= 0x01;  // capacity
  WriteFile(b);
  ExpectDataLoss("checksum");
}

TEST_F(FileStoreTest, ForeignFileIsDataLoss) {
  auto b = ReadFile();
  std::memcpy(b.data(), "PNG\r\n\x1a\n\0", 8);
  WriteFile(b);
  ExpectDataLoss("bad magic");
}

TEST_F(FileStoreTest, NewerFormatVersionIsDataLoss) {
  auto b = ReadFile();
  b[8] = 2;
  FixCrc(b);
  WriteFile(b);
  ExpectDataLoss("format version 2");
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
  b[20] = 9;  // k = 9 where 1000/0.01 gives 7
  FixCrc(b);
  WriteFile(b);
  ExpectDataLoss("geometry");
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
    // Wait for the child's first acknowledgement rather than guessing how
    // long start-up takes (under ASan on a loaded machine, 20 ms was not
    // always enough), then kill it at a random moment after.
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
    EXPECT_FALSE(acked.empty()) << "round " << round
                                << " acknowledged nothing; kill came too early";
  }
}

}  // namespace
}  // namespace redbloom
