// The file store at the edges of its file system, with real mounts (the tests
// run as root; a mount that fails fails the test): a full disk (a 2 MB tmpfs)
// must give clear errors, never SIGBUS, and a read-only mount must still serve
// checks and info.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/clock.h"
#include "redbloom/store.h"
#include "server_process.h"
#include "test_util.h"

namespace redbloom::testing {
namespace {

// A tmpfs of `size` mounted on a fresh directory, unmounted (lazily, so a
// process that still holds a file cannot keep it) when the test ends.
class TmpfsMount {
 public:
  explicit TmpfsMount(std::string size) : size_(std::move(size)) {
    path_ = dir_.path() + "/mnt";
    std::filesystem::create_directory(path_);
    const std::string options = "size=" + size_;
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      error_ = std::string("mount -t tmpfs -o ") + options + " " + path_ + ": " +
               std::strerror(errno) + " (these tests need root)";
    }
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  ~TmpfsMount() {
    if (error_.empty()) ::umount2(path_.c_str(), MNT_DETACH);
  }

  // "" once mounted, else why not.
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

  // mount -o remount,ro: every write now fails with EROFS, even for root.
  std::string RemountReadOnly() {
    const std::string options = "size=" + size_;
    if (::mount(nullptr, path_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, options.c_str()) != 0) {
      return std::string("remount,ro: ") + std::strerror(errno);
    }
    return "";
  }

  // Writes a file until the file system is full; true if it is full then.
  bool Fill(const std::string& name = "filler") {
    const std::string file = path_ + "/" + name;
    const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return 0;
    std::vector<char> block(4096, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    ::close(fd);
    struct statvfs st {};
    return ::statvfs(path_.c_str(), &st) == 0 && st.f_bavail == 0;
  }

 private:
  TempDir dir_;
  std::string size_;
  std::string path_;
  std::string error_;
};

std::string Items(const std::string& prefix, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += prefix + std::to_string(i) + "\n";
  return out;
}

class FileDiskTest : public ::testing::Test {
 protected:
  TempDir dir_;  // beside the mounts, for files the tests keep outside them
  // What stores opened with OpenOnClock read: time moves when a test says.
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(1'000'000'000'000);
  Result<std::unique_ptr<Store>> OpenOnClock(const std::string& url) {
    StoreOptions options;
    options.clock = clock_;
    return Store::Open(url, options);
  }
  CommandResult Run(const std::string& store, std::vector<std::string> args,
                    const std::string& input = "") {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", "file:" + store});
    return RunCommand(args, input);
  }
  // Scaling filter `name` (20,000 items in its first layer) in `store` on
  // `disk`, which is then filled: the next layer finds no room.
  void ScalingFilterOnAFullDisk(TmpfsMount& disk, const std::string& store,
                                const std::string& name) {
    ASSERT_EQ(disk.error(), "");
    ASSERT_EQ(Run(store, {"create", name, "-n", "20000", "-p", "0.01", "--scaling"}).exit_code, 0);
    ASSERT_TRUE(disk.Fill());
  }
};

TEST_F(FileDiskTest, CreateThatDoesNotFitIsExitThreeAndLeavesNoFile) {
  TmpfsMount disk("2m");
  ASSERT_EQ(disk.error(), "");
  const std::string store = disk.path() + "/s";
  // 10 million items at 1% is 12 MB of bits: more than the whole disk.
  auto big = Run(store, {"create", "big", "-n", "10000000", "-p", "0.01"});
  EXPECT_EQ(big.exit_code, 3) << big.err;
  EXPECT_NE(big.err.find("No space left on device"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("big"), std::string::npos) << "the message names the filter: " << big.err;
  // Nothing half-created: no filter, no temporary file.
  EXPECT_EQ(Run(store, {"list"}).out, "");
  for (const auto& e : std::filesystem::directory_iterator(store)) {
    ADD_FAILURE() << "left behind: " << e.path();
  }
  // A filter that fits is still created (the failed one took no space).
  auto small = Run(store, {"create", "small", "-n", "10000", "-p", "0.01"});
  EXPECT_EQ(small.exit_code, 0) << small.err;
}

TEST_F(FileDiskTest, FiltersThatExistStillTakeAddsAndLoadsOnAFullDisk) {
  TmpfsMount disk("2m");
  ASSERT_EQ(disk.error(), "");
  const std::string store = disk.path() + "/s";
  // 100,000 items at 1%: 120 kB each.
  ASSERT_EQ(Run(store, {"create", "f", "-n", "100000", "-p", "0.01"}).exit_code, 0);
  ASSERT_EQ(Run(store, {"create", "g", "-n", "100000", "-p", "0.01", "--counting"}).exit_code, 0);
  ASSERT_TRUE(disk.Fill());

  const std::string items = Items("ORD-", 100000);
  auto add = Run(store, {"add", "-q", "f", "--file", "-"}, items);
  EXPECT_EQ(add.exit_code, 0) << "exit -1 is a signal (SIGBUS): " << add.err;
  auto load = Run(store, {"load", "g", "--file", "-"}, items);
  EXPECT_EQ(load.exit_code, 0) << "exit -1 is a signal (SIGBUS): " << load.err;
  EXPECT_EQ(Run(store, {"check", "-q", "f", "--file", "-"}, items).exit_code, 0);
  EXPECT_EQ(Run(store, {"check", "-q", "g", "--file", "-"}, items).exit_code, 0);
}

TEST_F(FileDiskTest, ScalingGrowthOnAFullDiskIsExitThree) {
  TmpfsMount disk("2m");
  const std::string store = disk.path() + "/s";
  ASSERT_NO_FATAL_FAILURE(ScalingFilterOnAFullDisk(disk, store, "s"));
  // Layer 0 holds 20,000 items; the next layer needs room the disk lacks.
  auto add = Run(store, {"add", "-q", "s", "--file", "-"}, Items("x", 60000));
  EXPECT_EQ(add.exit_code, 3) << "exit -1 is a signal (SIGBUS): " << add.err;
  EXPECT_NE(add.err.find("No space left on device"), std::string::npos) << add.err;
  // Every acknowledged layer still answers.
  auto check = Run(store, {"check", "-q", "s", "--file", "-"}, Items("x", 20000));
  EXPECT_EQ(check.exit_code, 0) << check.err;
  auto info = Run(store, {"info", "s"});
  EXPECT_EQ(info.exit_code, 0) << info.err;
}

// dedup into a scaling filter whose next layer the full disk refuses: the
// 20,000 lines that went into the first layer were added and not printed
// (the failed batch gave no answers), so a second run, finding them
// present, would never print them. They are printed, and the message names
// only the lines after them.
TEST_F(FileDiskTest, DedupIntoAScalingFilterOnAFullDiskPrintsTheLinesItAdded) {
  TmpfsMount disk("2m");
  const std::string store = disk.path() + "/s";
  ASSERT_NO_FATAL_FAILURE(ScalingFilterOnAFullDisk(disk, store, "d"));
  auto r = Run(store, {"dedup", "d"}, Items("q", 30000));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  // dedup streams: where its batches end depends on how the pipe delivered
  // the input, so the failed batch runs to its own end (the whole input
  // when it came at once; line 29674 in one CI run), and starts after the
  // lines the first layer took: 20,000 new ones, and a line or two more
  // where a batch boundary let a false positive in uncounted (line 20002 in
  // one run).
  std::smatch range;
  ASSERT_TRUE(std::regex_search(
      r.err, range,
      std::regex(R"(line (\d+) of stdin to line (\d+) of stdin \((\d+) lines\) may have been)")))
      << r.err;
  const int first = std::stoi(range[1]);
  const int last = std::stoi(range[2]);
  EXPECT_GE(first, 20001) << r.err;
  EXPECT_LE(first, 20100) << r.err;
  EXPECT_LE(last, 30000) << r.err;
  EXPECT_EQ(std::stoi(range[3]), last - first + 1) << r.err;
  const size_t printed = static_cast<size_t>(std::count(r.out.begin(), r.out.end(), '\n'));
  // The first layer's lines, but its false positives (about 1%: "may have
  // been there", as dedup leaves out).
  EXPECT_GE(printed, 19700u);
  EXPECT_LE(printed, static_cast<size_t>(first - 1));
  EXPECT_TRUE(r.out.starts_with("q0\nq1\n")) << r.out.substr(0, 40);
  // Each printed line is in the filter.
  EXPECT_EQ(Run(store, {"check", "-q", "d", "--file", "-"}, r.out).exit_code, 0);
}

// The service's add on a scaling filter that a full disk stops at its next
// layer answers 507 with the answers of the items placed in the first: a
// client retrying the batch would read each of them as not new.
TEST_F(FileDiskTest, ServiceAnswersTheItemsAScalingFilterPlacedBeforeTheDiskFilled) {
  TmpfsMount disk("2m");
  const std::string store = disk.path() + "/s";
  ASSERT_NO_FATAL_FAILURE(ScalingFilterOnAFullDisk(disk, store, "d"));
  RedbloomdProcess server("file:" + store);
  server.Start();
  auto client = server.Client();
  std::string items = R"({"items":[)";
  for (int i = 0; i < 30000; ++i) items += (i ? ",\"q" : "\"q") + std::to_string(i) + "\"";
  items += "]}";
  Answer add = Call(*client, "POST", "/v1/filters/d/items", items);
  EXPECT_EQ(add.status, 507) << add.body.substr(0, 300);
  EXPECT_EQ(add.error(), "resource_exhausted");
  ASSERT_TRUE(add.json.contains("added") && add.json["added"].is_array())
      << add.body.substr(0, 300);
  const auto& added = add.json["added"];
  // Layer 0 holds 20,000 items: those were placed, all but its false
  // positives new; the rest met the full disk.
  EXPECT_EQ(added.size(), 20000u);
  const auto fresh = static_cast<size_t>(std::count(added.begin(), added.end(), true));
  EXPECT_GE(fresh, 19700u);
  // Each item answered is in the filter, and the answers are the items'.
  std::string placed = R"({"items":[)";
  for (size_t i = 0; i < added.size(); ++i) {
    placed += (i ? ",\"q" : "\"q") + std::to_string(i) + "\"";
  }
  placed += "]}";
  Answer check = Call(*client, "POST", "/v1/filters/d/check", placed);
  ASSERT_EQ(check.status, 200) << check.body.substr(0, 300);
  EXPECT_EQ(std::count(check.json["present"].begin(), check.json["present"].end(), false), 0);
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Stderr();
}

// An export to a full disk is resource_exhausted, as the stores say a full
// disk (it was unavailable), and leaves no partial file.
TEST_F(FileDiskTest, ExportToAFullDiskIsResourceExhausted) {
  TmpfsMount disk("2m");
  ASSERT_EQ(disk.error(), "");
  ASSERT_EQ(Run(dir_.path(), {"create", "f", "-n", "100000", "-p", "0.01"}).exit_code, 0);
  ASSERT_TRUE(disk.Fill());
  const std::string out = disk.path() + "/f.dump";
  auto r = Run(dir_.path(), {"export", "f", "--format", "redbloom", "-f", out});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("[resource_exhausted]"), std::string::npos) << r.err;
  for (const auto& e : std::filesystem::directory_iterator(disk.path())) {
    EXPECT_EQ(e.path().filename(), "filler") << "left behind: " << e.path();
  }
}

TEST_F(FileDiskTest, ServiceAnswers507WhenTheDiskIsFull) {
  TmpfsMount disk("2m");
  ASSERT_EQ(disk.error(), "");
  RedbloomdProcess server("file:" + disk.path() + "/s");
  server.Start();
  auto client = server.Client();
  Answer created =
      Call(*client, "PUT", "/v1/filters/f", R"({"capacity":100000,"error_rate":0.01})");
  ASSERT_EQ(created.status, 201) << created.body;
  Answer big =
      Call(*client, "PUT", "/v1/filters/big", R"({"capacity":10000000,"error_rate":0.01})");
  EXPECT_EQ(big.status, 507) << big.body;
  EXPECT_EQ(big.error(), "resource_exhausted") << big.body;

  ASSERT_TRUE(disk.Fill());
  std::string items = R"({"items":[)";
  for (int i = 0; i < 20000; ++i) items += (i ? ",\"ORD-" : "\"ORD-") + std::to_string(i) + "\"";
  items += "]}";
  Answer add = Call(*client, "POST", "/v1/filters/f/items", items);
  EXPECT_EQ(add.status, 200) << add.body;
  ASSERT_TRUE(server.running());
  Answer health = Call(*client, "GET", "/healthz");
  EXPECT_EQ(health.status, 200) << "the service survived the adds: " << health.body;
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Stderr();
}

// This process's file-size limit (RLIMIT_FSIZE, `ulimit -f`) lowered to
// `bytes` while it lives, for the processes it starts meanwhile.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ok_ = ::getrlimit(RLIMIT_FSIZE, &old_) == 0;
    rlimit lowered = old_;
    lowered.rlim_cur = bytes;
    ok_ = ok_ && ::setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~FileSizeLimit() { (void)::setrlimit(RLIMIT_FSIZE, &old_); }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  bool ok_ = false;
};

// A file past the process's file-size limit (`ulimit -f`, a container's
// fsize, a unit's LimitFSIZE) is "File too large", answered as a full disk
// (exit 3, 507) with nothing left behind: SIGXFSZ killed the CLI (153, no
// message) and would have killed redbloomd.
TEST_F(FileDiskTest, AFileSizeLimitIsResourceExhaustedNotAKill) {
  const std::string store = dir_.path() + "/s";
  ASSERT_EQ(Run(store, {"create", "f", "-n", "500000", "-p", "0.01"}).exit_code, 0);  // 600 kB
  ASSERT_EQ(Run(store, {"add", "f", "a"}).exit_code, 0);
  const std::string dump = dir_.path() + "/f.dump";
  {
    FileSizeLimit limit(100 * 1024);
    ASSERT_TRUE(limit.ok()) << std::strerror(errno);
    auto big = Run(store, {"create", "big", "-n", "500000", "-p", "0.01"});
    EXPECT_EQ(big.exit_code, 3) << big.err;
    EXPECT_NE(big.err.find("File too large [resource_exhausted]"), std::string::npos) << big.err;
    auto exported = Run(store, {"export", "f", "--format", "redbloom", "-f", dump});
    EXPECT_EQ(exported.exit_code, 3) << exported.err;
    EXPECT_NE(exported.err.find("File too large [resource_exhausted]"), std::string::npos)
        << exported.err;
    EXPECT_EQ(Run(store, {"create", "small", "-n", "1000", "-p", "0.01"}).exit_code, 0)
        << "a filter under the limit is still made";
  }
  EXPECT_FALSE(std::filesystem::exists(dump));
  EXPECT_EQ(Run(store, {"list"}).out, "f\nsmall\n") << "a half-made filter was left";
  for (const auto& e : std::filesystem::directory_iterator(store)) {
    const std::string file = e.path().filename();
    EXPECT_TRUE(file == "f.rbf" || file == "small.rbf") << "left behind: " << file;
  }

  std::optional<RedbloomdProcess> server;
  {
    FileSizeLimit limit(100 * 1024);
    ASSERT_TRUE(limit.ok()) << std::strerror(errno);
    server.emplace("file:" + store);
    server->Start();
  }
  auto client = server->Client();
  Answer big = Call(*client, "PUT", "/v1/filters/big", R"({"capacity":500000,"error_rate":0.01})");
  EXPECT_EQ(big.status, 507) << big.body;
  EXPECT_EQ(big.error(), "resource_exhausted") << big.body;
  EXPECT_TRUE(server->running()) << server->Stderr();
  EXPECT_EQ(Call(*client, "GET", "/v1/filters/f/items/a").status, 200);
  EXPECT_EQ(server->Stop(SIGTERM), 0) << server->Stderr();
}

// A filter file with no room to fill its holes (a sparse copy on a full
// disk) is mapped read-only, and redbloomd answers its adds 507. Once the
// disk has room again the adds are taken: before, the service kept the
// read-only handle it had cached and answered 507 until it restarted, while
// the CLI added at once.
TEST_F(FileDiskTest, ServiceTakesAddsAgainOnceTheDiskHasRoom) {
  TmpfsMount disk("2m");
  ASSERT_EQ(disk.error(), "");
  ASSERT_EQ(Run(dir_.path(), {"create", "f", "-n", "100000", "-p", "0.01"}).exit_code, 0);
  const std::string store = disk.path() + "/s";
  std::filesystem::create_directory(store);
  auto copied =
      RunCommand({"/bin/cp", "--sparse=always", dir_.path() + "/f.rbf", store + "/f.rbf"});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  ASSERT_TRUE(disk.Fill());
  RedbloomdProcess server("file:" + store);
  server.Start();
  auto client = server.Client();
  Answer full = Call(*client, "POST", "/v1/filters/f/items", R"({"items":["a","b"]})");
  ASSERT_EQ(full.status, 507) << full.body;
  std::filesystem::remove(disk.path() + "/filler");
  Answer added = Call(*client, "POST", "/v1/filters/f/items", R"({"items":["a","b"]})");
  EXPECT_EQ(added.status, 200) << added.body;
  Answer present = Call(*client, "GET", "/v1/filters/f/items/a");
  EXPECT_EQ(present.json["present"], true) << present.body;
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Stderr();
}

TEST_F(FileDiskTest, ReadOnlyMountServesChecksAndInfo) {
  TmpfsMount disk("8m");
  ASSERT_EQ(disk.error(), "");
  const std::string store = disk.path() + "/s";
  const std::string items = Items("ORD-", 3000);
  ASSERT_EQ(Run(store, {"create", "f", "-n", "10000", "-p", "0.01"}).exit_code, 0);
  ASSERT_EQ(Run(store, {"add", "-q", "f", "--file", "-"}, items).exit_code, 0);
  // A scaling filter with two layers: parts are opened too.
  ASSERT_EQ(Run(store, {"create", "s", "-n", "1000", "-p", "0.01", "--scaling"}).exit_code, 0);
  ASSERT_EQ(Run(store, {"add", "-q", "s", "--file", "-"}, items).exit_code, 0);
  ASSERT_EQ(disk.RemountReadOnly(), "");

  for (const char* name : {"f", "s"}) {
    auto check = Run(store, {"check", "-q", name, "--file", "-"}, items);
    EXPECT_EQ(check.exit_code, 0) << name << ": " << check.err;
    auto absent = Run(store, {"check", name, "never-added-1"});
    EXPECT_EQ(absent.exit_code, 1) << name << ": " << absent.err;
    EXPECT_EQ(absent.out, "0\tnever-added-1\n") << name;
    auto info = Run(store, {"info", "--json", name});
    EXPECT_EQ(info.exit_code, 0) << name << ": " << info.err;
  }
  auto list = Run(store, {"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out, "f\ns\n");
  // Writes are a clear store error, never a crash or a silent no-op.
  auto add = Run(store, {"add", "f", "new-item"});
  EXPECT_EQ(add.exit_code, 3) << add.err;
  EXPECT_NE(add.err.find("Read-only file system"), std::string::npos) << add.err;
  EXPECT_EQ(Run(store, {"check", "f", "new-item"}).exit_code, 1);
  // Export reads; importing the export back is a write, refused before any bit.
  const std::string dump = dir_.path() + "/f.dump";
  auto exported = Run(store, {"export", "f", "--format", "redbloom", "--file", dump});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  auto imported = Run(store, {"import", "f", "--format", "redbloom", "--file", dump});
  EXPECT_EQ(imported.exit_code, 3) << imported.err;
  EXPECT_NE(imported.err.find("Read-only file system"), std::string::npos) << imported.err;
  EXPECT_EQ(imported.err.find("part way"), std::string::npos) << imported.err;
}

TEST_F(FileDiskTest, LibraryOnAReadOnlyMountReadsAndRefusesWrites) {
  TmpfsMount disk("8m");
  ASSERT_EQ(disk.error(), "");
  const std::string url = "file:" + disk.path() + "/s";
  {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
    ASSERT_OK_AND_ASSIGN(
        auto f,
        BloomFilter::Create(*store, "c",
                            {.capacity = 1000, .error_rate = 0.01, .kind = FilterKind::kCounting}));
    ASSERT_TRUE(f->Add("a").ok());
    // A plain filter too: its single adds take the direct path (bloom_filter.cc).
    ASSERT_OK_AND_ASSIGN(auto plain,
                         BloomFilter::Create(*store, "p", {.capacity = 1000, .error_rate = 0.01}));
    ASSERT_TRUE(plain->Add("a").ok());
  }
  ASSERT_EQ(disk.RemountReadOnly(), "");
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open(url));
  ASSERT_OK_AND_ASSIGN(auto plain, BloomFilter::Open(*store, "p"));
  EXPECT_TRUE(ValueOrFail(plain->Contains("a")));
  for (const Status& s : {plain->Add("a"), plain->Add("b")}) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("Read-only file system"), std::string::npos) << s.message();
  }
  EXPECT_FALSE(ValueOrFail(plain->Contains("b")));
  ASSERT_OK_AND_ASSIGN(auto f, BloomFilter::Open(*store, "c"));
  EXPECT_TRUE(ValueOrFail(f->Contains("a")));
  EXPECT_FALSE(ValueOrFail(f->Contains("b")));
  EXPECT_EQ(ValueOrFail(f->Info()).items_added, 1u);
  for (const Status& s : {f->Add("b"), f->Remove("a"), f->Clear()}) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("Read-only file system"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(ValueOrFail(f->Contains("a"))) << "a refused remove removed nothing";
  EXPECT_TRUE(f->Flush().ok());
}

// An expired filter on a read-only mount cannot be removed. It was still
// listed, and `check` and `info` on it failed with the mount's error
// (unavailable, exit 3): it is not found, as on a writable store, and the
// message says why its file stays.
TEST_F(FileDiskTest, AnExpiredFilterOnAReadOnlyMountIsNotFound) {
  TmpfsMount disk("8m");
  ASSERT_EQ(disk.error(), "");
  const std::string url = "file:" + disk.path() + "/s";
  {
    ASSERT_OK_AND_ASSIGN(auto store, OpenOnClock(url));
    ASSERT_OK_AND_ASSIGN(
        auto daily, BloomFilter::Create(*store, "daily",
                                        {.capacity = 1000, .error_rate = 0.01, .ttl_seconds = 60}));
    ASSERT_TRUE(daily->Add("a").ok());
    ASSERT_OK_AND_ASSIGN(
        auto kept, BloomFilter::Create(*store, "kept", {.capacity = 1000, .error_rate = 0.01}));
  }
  ASSERT_EQ(disk.RemountReadOnly(), "");
  clock_->Advance(std::chrono::seconds(61));
  ASSERT_OK_AND_ASSIGN(auto store, OpenOnClock(url));
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> names, store->List());
  EXPECT_EQ(names, std::vector<std::string>{"kept"});
  auto opened = BloomFilter::Open(*store, "daily");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kNotFound) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("Read-only file system"), std::string::npos)
      << opened.status().ToString();
}

// Sets or clears a file's immutable attribute (chattr +i): it can then be
// neither written nor unlinked, even by root.
bool SetImmutable(const std::string& path, bool on) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

// A create of a name whose expired filter cannot be removed says why, as it
// did before expired filters read as not found: it answered not_found after
// nine attempts, and redbloomd's PUT 404 (the review of this stop's diff).
TEST_F(FileDiskTest, ACreateOverAnExpiredFilterThatCannotBeRemovedSaysWhy) {
  TmpfsMount disk("8m");
  ASSERT_EQ(disk.error(), "");
  const std::string url = "file:" + disk.path() + "/s";
  ASSERT_OK_AND_ASSIGN(auto store, OpenOnClock(url));
  const FilterOptions daily{.capacity = 1000, .error_rate = 0.01, .ttl_seconds = 60};
  ASSERT_TRUE(BloomFilter::Create(*store, "daily", daily).ok());
  const std::string file = disk.path() + "/s/daily.rbf";
  ASSERT_TRUE(SetImmutable(file, true)) << std::strerror(errno);
  clock_->Advance(std::chrono::seconds(61));
  auto created = BloomFilter::Create(*store, "daily", daily);
  auto opened = BloomFilter::Open(*store, "daily");
  ASSERT_TRUE(SetImmutable(file, false));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kUnavailable) << created.status().ToString();
  EXPECT_NE(created.status().message().find("Operation not permitted"), std::string::npos)
      << created.status().ToString();
  EXPECT_EQ(opened.status().code(), StatusCode::kNotFound) << opened.status().ToString();
  // Once it can be removed, the name is free again.
  ASSERT_OK_AND_ASSIGN(auto again, BloomFilter::Create(*store, "daily", daily));
}

}  // namespace
}  // namespace redbloom::testing
