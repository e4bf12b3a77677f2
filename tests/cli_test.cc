// The CLI's text interface is a contract: output lines, stderr, exit codes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exit_codes.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "test_util.h"

namespace redbloom {
namespace {

using testing::CommandResult;
using testing::Lines;
using testing::RunCommand;

class CliTest : public ::testing::Test {
 protected:
  CommandResult Run(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", "file:" + dir_.path()});
    return RunCommand(args, input);
  }
  void Create(const std::string& name, const std::vector<std::string>& extra = {},
              const std::string& capacity = "1000") {
    std::vector<std::string> args = {"create", name, "--capacity", capacity, "--error", "0.01"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = Run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // Writes `text` to a file in the test's directory and returns its path.
  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  testing::TempDir dir_;
};

// Counts the occurrences of `needle` in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The exit codes are a contract (README, "Exit codes"): every code has one,
// and a store out of room is a store error (3), an oversized request bad
// input (2).
TEST(ExitCodesTest, MapsEveryCode) {
  const std::map<StatusCode, int> expected = {
      {StatusCode::kOk, 0},
      {StatusCode::kInvalidArgument, 2},
      {StatusCode::kNotFound, 4},
      {StatusCode::kAlreadyExists, 4},
      {StatusCode::kConflict, 4},
      {StatusCode::kUnavailable, 3},
      {StatusCode::kDeadlineExceeded, 3},
      {StatusCode::kResourceExhausted, 3},
      {StatusCode::kTooLarge, 2},
      {StatusCode::kDataLoss, 3},
      {StatusCode::kUnimplemented, 2},
      {StatusCode::kInternal, 3},
  };
  for (const auto& [code, exit_code] : expected) {
    EXPECT_EQ(cli::ExitCodeFor(Status(code, "x")), exit_code) << StatusCodeName(code);
  }
}

TEST_F(CliTest, AddAndCheckPrintOneLinePerItem) {
  Create("orders");
  auto add = Run({"add", "orders", "ORD-1", "ORD-2", "ORD-1"});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(Lines(add.out), (std::vector<std::string>{"1\tORD-1", "1\tORD-2", "0\tORD-1"}));

  auto present = Run({"check", "orders", "ORD-1", "ORD-2"});
  EXPECT_EQ(present.exit_code, 0);
  EXPECT_EQ(Lines(present.out), (std::vector<std::string>{"1\tORD-1", "1\tORD-2"}));

  auto absent = Run({"check", "orders", "ORD-1", "ORD-404"});
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_EQ(Lines(absent.out), (std::vector<std::string>{"1\tORD-1", "0\tORD-404"}));

  auto quiet = Run({"check", "--quiet", "orders", "ORD-404"});
  EXPECT_EQ(quiet.exit_code, 1);
  EXPECT_EQ(quiet.out, "");
}

TEST_F(CliTest, ReadsItemsFromFileAndStdin) {
  Create("orders");
  const std::string path = dir_.path() + "/items.txt";
  FILE* f = fopen(path.c_str(), "w");
  fputs("a\r\nb\n\nc", f);  // CRLF, an empty-string item, no final newline
  fclose(f);
  auto add = Run({"add", "orders", "--file", path});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(Lines(add.out), (std::vector<std::string>{"1\ta", "1\tb", "1\t", "1\tc"}));
  auto check = Run({"check", "orders", "-f", "-"}, "a\nc\nzzz\n");
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_EQ(Lines(check.out), (std::vector<std::string>{"1\ta", "1\tc", "0\tzzz"}));
}

TEST_F(CliTest, StreamsLargeInputsInChunks) {
  Create("big", {}, "200000");
  std::string input;
  for (int i = 0; i < 150000; ++i) input += "ORD-" + std::to_string(i) + "\n";
  auto add = Run({"add", "big", "--quiet", "-f", "-"}, input);
  ASSERT_EQ(add.exit_code, 0) << add.err;
  auto check = Run({"check", "big", "-f", "-"}, input);
  ASSERT_EQ(check.exit_code, 0);
  EXPECT_EQ(Lines(check.out).size(), 150000u);
}

TEST_F(CliTest, CreateExitCodes) {
  Create("f");
  auto same = Run({"create", "f", "--capacity", "1000", "--error", "0.01"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  auto other = Run({"create", "f", "--capacity", "1000", "--error", "0.02"});
  EXPECT_EQ(other.exit_code, 4);
  EXPECT_NE(other.err.find("other parameters"), std::string::npos) << other.err;
  for (auto bad : std::vector<std::vector<std::string>>{
           {"create", "g", "--capacity", "0", "--error", "0.01"},
           {"create", "g", "--capacity", "10", "--error", "1"},
           {"create", "g", "--capacity", "10", "--error", "nan"},
           {"create", "g", "--capacity", "ten", "--error", "0.1"},
           {"create", "g", "--capacity", "10", "--error", "0.1", "--strategy", "md5"},
           {"create", "g", "--capacity", "10", "--error", "0.1", "--encoding", "latin1"},
           {"create", "../g", "--capacity", "10", "--error", "0.1"},
           {"create", "g", "--capacity", "10"},
           {"frobnicate"},
       }) {
    auto r = Run(bad);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1] << ": " << r.err;
    EXPECT_EQ(Lines(r.err).size() >= 1, true);
    EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
  }
  // A capacity past 2^64 is said to be past a capacity's own bound, as one
  // between 2^63 and 2^64 is (it named 2^64 - 1 as the most), in the same
  // words (those below 2^64 had the library's, without the flag or value).
  for (const char* big : {"9223372036854775808", "1e19", "2e19", "18446744073709551616"}) {
    auto r = Run({"create", "g", "--capacity", big, "--error", "0.01"});
    EXPECT_EQ(r.exit_code, 2) << big << ": " << r.err;
    EXPECT_NE(r.err.find("--capacity must be below 2^63, not " + std::string(big)),
              std::string::npos)
        << big << ": " << r.err;
  }
  EXPECT_EQ(Lines(Run({"list"}).out), (std::vector<std::string>{"f"}));
}

// A rebuild's temporary name is refused by import and merge as by create:
// made by either, it was hidden from list and blocked every rebuild of its
// filter ("another rebuild is running").
TEST_F(CliTest, ImportAndMergeRefuseARebuildsTemporaryName) {
  Create("p1");
  const std::string dump = dir_.path() + "/p1.dump";
  ASSERT_EQ(Run({"export", "p1", "--format", "redbloom", "-f", dump}).exit_code, 0);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"import", "--format", "redbloom", "-f", dump, "--", ".rebuild~p1"},
           {"merge", "--", ".rebuild~p1", "p1"}}) {
    auto r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("must not start with '.'"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/.rebuild~p1.rbf"));
  auto r = Run({"rebuild", "p1", "--file", "-"}, "a\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// An input of the other format is bad input (exit 2) that names the format
// to use: a Guava file read as a dump was data_loss (exit 3, "bad magic"),
// a dump read as Guava's "strategy ordinal 82 is not supported".
TEST_F(CliTest, AnImportOfTheOtherFormatSaysWhichFormatToUse) {
  Create("g", {"--strategy", "guava64"});
  const std::string guava = dir_.path() + "/g.guava";
  const std::string dump = dir_.path() + "/g.dump";
  ASSERT_EQ(Run({"export", "g", "--format", "guava", "-f", guava}).exit_code, 0);
  ASSERT_EQ(Run({"export", "g", "--format", "redbloom", "-f", dump}).exit_code, 0);
  auto r = Run({"import", "h", "--format", "redbloom", "-f", guava});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("use --format guava"), std::string::npos) << r.err;
  r = Run({"import", "h", "--format", "guava", "-f", dump});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("use --format redbloom"), std::string::npos) << r.err;
  r = Run({"import", "h", "--format", "redbloom", "-f", "-"}, "not a dump at all\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not a redbloom dump"), std::string::npos) << r.err;
  // What the input is comes before whether it is whole: a short text file,
  // or none at all, was a "truncated" dump or Guava file (exit 3), and text
  // was Guava's "strategy ordinal 104".
  for (const std::string format : {"redbloom", "guava"}) {
    for (const std::string input : {"", "hello\n"}) {
      r = Run({"import", "h", "--format", format, "-f", "-"}, input);
      EXPECT_EQ(r.exit_code, 2) << format << " '" << input << "': " << r.err;
      EXPECT_NE(r.err.find(format == "guava" ? "not a Guava writeTo file" : "not a redbloom dump"),
                std::string::npos)
          << r.err;
      EXPECT_EQ(r.err.find("truncated"), std::string::npos) << r.err;
    }
  }
  // A true start cut short is still truncated (exit 3).
  std::string dump_bytes, guava_bytes;
  {
    std::ifstream d(dump, std::ios::binary), g(guava, std::ios::binary);
    dump_bytes.assign(std::istreambuf_iterator<char>(d), {});
    guava_bytes.assign(std::istreambuf_iterator<char>(g), {});
  }
  r = Run({"import", "h", "--format", "redbloom", "-f", "-"}, dump_bytes.substr(0, 10));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  r = Run({"import", "h", "--format", "guava", "-f", "-"}, guava_bytes.substr(0, 4));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  // A dump carries its encoding: --encoding is refused with it even at the
  // default (`--encoding utf8` was taken as if it applied; int32 refused).
  for (const char* encoding : {"utf8", "int32"}) {
    r = Run({"import", "h", "--format", "redbloom", "--encoding", encoding, "-f", dump});
    EXPECT_EQ(r.exit_code, 2) << encoding << ": " << r.err;
    EXPECT_NE(r.err.find("apply to --format guava"), std::string::npos) << r.err;
  }
  EXPECT_EQ(Run({"info", "h"}).exit_code, 4) << "nothing is made of bad input";
}

// Merged layer by layer, two scaling filters' first layers each held twice
// their capacity: the chain answered 7% false positives for a 1% filter, and
// merge said nothing. It still merges (every item stays present), and says
// so; a merge or import that stays within the rate says nothing.
TEST_F(CliTest, AMergePastTheFiltersRateWarns) {
  std::string a, b;
  for (int i = 0; i < 2000; ++i) {
    a += "a" + std::to_string(i) + "\n";
    b += "b" + std::to_string(i) + "\n";
  }
  for (const char* name : {"s1", "s2"}) Create(name, {"--scaling"}, "1000");
  ASSERT_EQ(Run({"add", "-q", "s1", "-f", "-"}, a).exit_code, 0);
  ASSERT_EQ(Run({"add", "-q", "s2", "-f", "-"}, b).exit_code, 0);
  auto r = Run({"merge", "both", "s1", "s2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: 'both' now answers false positives at about"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the chain no longer keeps its bound"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"check", "-q", "both", "-f", "-"}, a + b).exit_code, 0) << "an item lost";
  r = Run({"merge", "copy", "s1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("merged 1 filter(s) into copy"), std::string::npos) << r.err;
  // The destination among the sources adds nothing, and says so (it said 1).
  r = Run({"merge", "copy", "copy"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("merged 0 filter(s) into copy"), std::string::npos) << r.err;
  r = Run({"merge", "copy", "s1", "s1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("source 's1' is named twice"), std::string::npos) << r.err;
  // A plain filter at its capacity answers at about its rate: no warning.
  Create("full");
  std::string thousand;
  for (int i = 0; i < 1000; ++i) thousand += "f" + std::to_string(i) + "\n";
  ASSERT_EQ(Run({"add", "-q", "full", "-f", "-"}, thousand).exit_code, 0);
  r = Run({"merge", "full-copy", "full"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  const std::string dump = dir_.path() + "/s2.dump";
  ASSERT_EQ(Run({"export", "s2", "--format", "redbloom", "-f", dump}).exit_code, 0);
  // A restore into a new name is the filter as it was, whatever its rate.
  const std::string over = dir_.path() + "/both.dump";
  ASSERT_EQ(Run({"export", "both", "--format", "redbloom", "-f", over}).exit_code, 0);
  r = Run({"import", "both-restored", "--format", "redbloom", "-f", over});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  r = Run({"import", "restored", "--format", "redbloom", "-f", dump});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  r = Run({"import", "s1", "--format", "redbloom", "-f", dump});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: 's1'"), std::string::npos) << r.err;
}

TEST_F(CliTest, NotFoundAndStoreErrors) {
  auto r = Run({"check", "nope", "x"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_EQ(Run({"drop", "nope"}).exit_code, 4);
  EXPECT_EQ(Run({"info", "nope"}).exit_code, 4);
  auto io = RunCommand({REDBLOOM_CLI_PATH, "--store", "file:/dev/null/sub", "list"});
  EXPECT_EQ(io.exit_code, 3) << io.err;
  auto no_items = Run({"add", "nope"});
  EXPECT_EQ(no_items.exit_code, 2);
  auto missing_file = Run({"add", "nope", "--file", dir_.path() + "/does-not-exist"});
  EXPECT_EQ(missing_file.exit_code, 3) << missing_file.err;
  EXPECT_NE(missing_file.err.find("does-not-exist: No such file or directory"), std::string::npos)
      << missing_file.err;
  auto missing_load = Run({"load", "nope", "--file", dir_.path() + "/does-not-exist"});
  EXPECT_EQ(missing_load.exit_code, 3) << missing_load.err;
  EXPECT_NE(missing_load.err.find("No such file or directory"), std::string::npos)
      << missing_load.err;
}

// A bad item is named by where it is in the input (an argument's position, a
// line number of the file), not by its index in an internal batch: here the
// bad line lies in the second chunk of 65,536.
TEST_F(CliTest, BadItemsAreNamedByTheirLineInTheInput) {
  Create("ints", {"--encoding", "int32"});
  const std::string path = dir_.path() + "/ints.txt";
  std::string text;
  for (int i = 1; i <= 70002; ++i) text += (i == 70001 ? "x" : "") + std::to_string(i) + "\n";
  FILE* f = fopen(path.c_str(), "w");
  fputs(text.c_str(), f);
  fclose(f);
  auto add = Run({"add", "-q", "ints", "--file", path});
  EXPECT_EQ(add.exit_code, 2) << add.err;
  EXPECT_NE(add.err.find("line 70001 of " + path + ": item 'x70001'"), std::string::npos)
      << add.err;
  EXPECT_NE(add.err.find("the first 65536 items were added"), std::string::npos) << add.err;
  auto args = Run({"check", "ints", "1", "2", "x3"});
  EXPECT_EQ(args.exit_code, 2);
  EXPECT_NE(args.err.find("argument 3: item 'x3'"), std::string::npos) << args.err;
  auto stdin_bad = Run({"check", "ints", "7", "--file", "-"}, "1\n\n3\n");
  EXPECT_EQ(stdin_bad.exit_code, 2);
  EXPECT_NE(stdin_bad.err.find("line 2 of stdin: item ''"), std::string::npos) << stdin_bad.err;
  auto load = Run({"load", "ints", "--file", "-"}, "1\r\n2\r\nthree\r\n");
  EXPECT_EQ(load.exit_code, 2);
  EXPECT_NE(load.err.find("line 3 of stdin: item 'three'"), std::string::npos) << load.err;
  auto dedup = Run({"dedup", "ints"}, "5\nfive\n");
  EXPECT_EQ(dedup.exit_code, 2);
  EXPECT_NE(dedup.err.find("line 2 of stdin"), std::string::npos) << dedup.err;
}

TEST_F(CliTest, BadItemStopsWithTheLineAndKeepsEarlierChunks) {
  Create("ints", {"--encoding", "int32"});
  auto r = Run({"add", "ints", "1", "2", "x3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("x3"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"check", "-q", "ints", "1"}).exit_code, 1) << "nothing of a bad batch is written";
}

TEST_F(CliTest, InfoTextAndJson) {
  Create("f", {"--strategy", "seed", "--encoding", "utf8x2"});
  ASSERT_EQ(Run({"add", "-q", "f", "a", "b", "c"}).exit_code, 0);
  auto text = Run({"info", "f"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("strategy:          seed"), std::string::npos) << text.out;
  auto json = Run({"info", "f", "--json"});
  ASSERT_EQ(json.exit_code, 0);
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["name"], "f");
  EXPECT_EQ(j["strategy"], "seed");
  EXPECT_EQ(j["encoding"], "utf8x2");
  EXPECT_EQ(j["capacity"], 1000);
  EXPECT_EQ(j["bits"], 9585);
  EXPECT_EQ(j["hashes"], 7);
  EXPECT_EQ(j["items_added"], 3);
  EXPECT_EQ(j["capped"], false);
  EXPECT_GT(j["bits_set"].get<int>(), 0);
}

// A rebuild keeps what its flags leave out: a seed / utf8x2 counting filter
// with a TTL (one Java services share, say) stays one, and only the flags
// given change. Before, every flag left out fell back to create's default
// (block, utf8, plain, no TTL), and the Java side missed what it added.
TEST_F(CliTest, RebuildKeepsTheParametersItIsNotGiven) {
  Create("r", {"--strategy", "seed", "--encoding", "utf8x2", "--counting", "--ttl", "1h"});
  const std::string path = WriteFile("r.txt", "a\nb\nc\n");
  // Info has at least the fields of `want`, with their values.
  auto expect_info = [&](const nlohmann::json& want) {
    auto r = Run({"info", "r", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const auto& [field, value] : want.items()) EXPECT_EQ(j[field], value) << field;
  };
  auto r = Run({"rebuild", "r", "--file", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_info({{"kind", "counting"},
               {"strategy", "seed"},
               {"encoding", "utf8x2"},
               {"capacity", 1000},
               {"error_rate", 0.01},
               {"ttl_seconds", 3600},
               {"items_added", 3}});
  EXPECT_EQ(Run({"remove", "-q", "r", "a"}).exit_code, 0) << "still a counting filter";
  // Only what is given changes.
  r = Run({"rebuild", "r", "--file", path, "-n", "5000", "--plain", "--ttl", "2h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_info({{"kind", "plain"},
               {"strategy", "seed"},
               {"encoding", "utf8x2"},
               {"capacity", 5000},
               {"error_rate", 0.01},
               {"ttl_seconds", 7200}});
  r = Run({"rebuild", "r", "--file", path, "--strategy", "guava64", "--no-ttl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_info({{"strategy", "guava64"}, {"capacity", 5000}, {"ttl_seconds", 0}});
  auto check = Run({"check", "r", "a", "b", "c"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  // Flags that contradict each other change nothing.
  for (std::vector<std::string> flags : std::vector<std::vector<std::string>>{
           {"--counting", "--plain"}, {"--ttl", "1h", "--no-ttl"}, {"-n", "0"}}) {
    std::vector<std::string> cmd = {"rebuild", "r", "--file", path};
    cmd.insert(cmd.end(), flags.begin(), flags.end());
    r = Run(cmd);
    EXPECT_EQ(r.exit_code, 2) << flags[0] << ": " << r.err;
  }
  expect_info({{"strategy", "guava64"}});
}

// A Guava file's filter keeps its bits and hashes through a rebuild; a new
// strategy that cannot take them needs a capacity and error rate, and the
// refusal names the flags and the filter's own figures to give.
TEST_F(CliTest, ARebuildToBlockOfAGuavaFilesFilterNamesTheFlagsToGive) {
  Create("g", {"--strategy", "guava64"});
  const std::string guava = dir_.path() + "/g.guava";
  ASSERT_EQ(Run({"export", "g", "--format", "guava", "-f", guava}).exit_code, 0);
  ASSERT_EQ(Run({"import", "h", "--format", "guava", "-f", guava}).exit_code, 0);
  const std::string path = WriteFile("h.txt", "a\nb\n");
  auto r = Run({"rebuild", "h", "--file", path, "--strategy", "block"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("give --capacity and --error too"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("are 951 and 0.0078125"), std::string::npos) << r.err;
  r = Run({"rebuild", "h", "--file", path, "--strategy", "block", "-n", "951", "-p", "0.0078125"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Run({"check", "-q", "h", "a", "b"}).exit_code, 0);
}

// An export to a name the file: store keeps for a filter's own file
// replaced that file with the dump and said "exported": the filter was gone
// (and a dump named x.rbf there was listed as a filter). Refused, exit 2,
// the filter unchanged; other names in the directory are the caller's.
TEST_F(CliTest, ExportRefusesTheStoresOwnFileNames) {
  Create("own");
  ASSERT_EQ(Run({"add", "-q", "own", "x"}).exit_code, 0);
  for (const std::string& target :
       {dir_.path() + "/own.rbf", dir_.path() + "/other.rbf", dir_.path() + "/sub/../own.rbf",
        dir_.path() + "/.own.parts/1.rbf"}) {
    auto r = Run({"export", "own", "--format", "redbloom", "-f", target});
    EXPECT_EQ(r.exit_code, 2) << target << ": " << r.err;
    EXPECT_NE(r.err.find("keeps for its filters' own files"), std::string::npos) << r.err;
  }
  EXPECT_EQ(Run({"check", "own", "x"}).exit_code, 0) << "the filter changed";
  EXPECT_EQ(Run({"list"}).out, "own\n");
  EXPECT_EQ(
      Run({"export", "own", "--format", "redbloom", "-f", dir_.path() + "/own.dump"}).exit_code, 0);
}

// export --file writes through what the name is: into a FIFO (or a device,
// such as /dev/stdout) as it is, and through a symlink to its target. It
// wrote a temporary file and renamed it over the name, which replaced the
// FIFO or the link: a reader of the FIFO got nothing, as the link's target
// did, while the export said it had written (as root, `-f /dev/stdout`
// replaced /dev/stdout itself).
TEST_F(CliTest, ExportWritesThroughFifosAndSymlinks) {
  Create("e", {"--strategy", "guava64"});
  ASSERT_EQ(Run({"add", "-q", "e", "x"}).exit_code, 0);
  const std::string fifo = dir_.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A write end of our own, so that the reader neither waits for the export
  // to open the FIFO nor reads its end before the export is done: closed
  // after it, whatever the export did.
  const int held = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(in), {});
  });
  auto r = Run({"export", "e", "--format", "redbloom", "-f", fifo});
  ::close(held);
  reader.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(got.size(), 100u) << "the FIFO's reader got nothing";
  EXPECT_TRUE(std::filesystem::is_fifo(fifo)) << "the FIFO was replaced";

  std::filesystem::create_directory(dir_.path() + "/dumps");
  const std::string real = dir_.path() + "/dumps/real.bf", link = dir_.path() + "/latest.bf";
  WriteFile("dumps/real.bf", "old");
  std::filesystem::create_symlink(real, link);
  r = Run({"export", "e", "--format", "guava", "-f", link});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the link was replaced";
  EXPECT_GT(std::filesystem::file_size(real), 100u) << "the link's target was not written";
  // A dangling link (relative, through a second link) gets its target made,
  // as `>` makes it; the temporary went beside the link and replaced it.
  std::filesystem::create_symlink("dumps/next.bf", dir_.path() + "/next-link.bf");
  std::filesystem::create_symlink("next-link.bf", dir_.path() + "/dangling.bf");
  r = Run({"export", "e", "--format", "guava", "-f", dir_.path() + "/dangling.bf"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dir_.path() + "/dangling.bf")) << "the link was replaced";
  EXPECT_TRUE(std::filesystem::is_symlink(dir_.path() + "/next-link.bf"))
      << "the link was replaced";
  ASSERT_TRUE(std::filesystem::exists(dir_.path() + "/dumps/next.bf")) << "no target made";
  EXPECT_EQ(std::filesystem::file_size(dir_.path() + "/dumps/next.bf"),
            std::filesystem::file_size(real));

  // /dev/stdout and /dev/fd/N are the descriptors the shell opened: written
  // where they stand. Before, /dev/stdout redirected to a file was followed
  // to that file, and a temporary renamed over it: `>> log` lost the log.
  const std::string log = WriteFile("log", "keep\n");
  const std::string cli = std::string(REDBLOOM_CLI_PATH) + " --store file:" + dir_.path();
  for (const std::string& to : {std::string("--file /dev/stdout >>"),
                                std::string("-f /dev/fd/3 3>>"), std::string("--file - >>")}) {
    r = RunCommand({"/bin/sh", "-c", cli + " export e --format guava " + to + " " + log});
    EXPECT_EQ(r.exit_code, 0) << to << ": " << r.err;
    // Each says what it wrote (`--file -` said nothing).
    EXPECT_NE(r.err.find("exported e (" + std::to_string(std::filesystem::file_size(real)) +
                         " bytes, guava format) to "),
              std::string::npos)
        << to << ": " << r.err;
  }
  std::ifstream in(log, std::ios::binary);
  const std::string logged(std::istreambuf_iterator<char>(in), {});
  EXPECT_TRUE(logged.starts_with("keep\n")) << "the log was overwritten";
  const std::string guava = logged.substr(5);
  ASSERT_EQ(guava.size() % 3, 0u);
  const size_t one = guava.size() / 3;
  EXPECT_EQ(guava.substr(0, one), guava.substr(one, one)) << "exports, each appended whole";
  EXPECT_EQ(guava.substr(0, one), guava.substr(2 * one)) << "exports, each appended whole";
  EXPECT_EQ(one, std::filesystem::file_size(real));
}

// An export over an existing file keeps the file's mode (and owner), as a
// shell's `>` would: it was replaced by a new file 0666 less the umask, so a
// backup kept 0600 turned world-readable (0644) when it was refreshed.
TEST_F(CliTest, AnExportOverAFileKeepsItsMode) {
  Create("m", {"--strategy", "guava64"});
  ASSERT_EQ(Run({"add", "-q", "m", "x"}).exit_code, 0);
  const std::string backup = WriteFile("backup.bf", "old");
  ASSERT_EQ(::chmod(backup.c_str(), 0600), 0);
  for (const char* format : {"guava", "redbloom"}) {
    auto r = Run({"export", "m", "--format", format, "-f", backup});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    struct stat st {};
    ASSERT_EQ(::stat(backup.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << format;
    EXPECT_GT(st.st_size, 100) << format << ": not written";
  }
  // A new file is made as `>` makes it: 0666 less the umask (0022 here).
  const std::string fresh = dir_.path() + "/fresh.bf";
  auto r = RunCommand({"/bin/sh", "-c",
                       "umask 022 && exec " + std::string(REDBLOOM_CLI_PATH) + " --store file:" +
                           dir_.path() + " export m --format guava -f " + fresh});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

// Syncs that a failing disk fails (tests/fault_sync.cc, preloaded into the
// CLI): each test sees that a sync is made where durability needs it, and
// that its failure is an error, never a success that a power loss undoes.
class CliSyncFaultTest : public CliTest {
 protected:
  // Runs the CLI with `fault` (REDBLOOM_FAULT_FSYNC_DIR or
  // REDBLOOM_FAULT_MSYNC) set to `path`.
  // `passes` syncs of the directory (or mappings) pass before the first fails.
  CommandResult RunFaulty(const std::string& fault, const std::string& path,
                          std::vector<std::string> args, const std::string& input = "",
                          int passes = 0, const std::vector<std::string>& more_env = {}) {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", "file:" + dir_.path()});
    // Under GCC's AddressSanitizer, whose runtime must come first, the
    // preload is let through (clang's runtime is linked in).
    const char* asan = std::getenv("ASAN_OPTIONS");
    std::vector<std::string> env = {
        std::string("ASAN_OPTIONS=") + (asan != nullptr ? asan : "") + ":verify_asan_link_order=0",
        std::string("LD_PRELOAD=") + REDBLOOM_FAULT_SYNC_PATH,
        fault + "=" + std::filesystem::weakly_canonical(path).string(),
        "REDBLOOM_FAULT_FSYNC_PASS=" + std::to_string(passes),
        "REDBLOOM_FAULT_MSYNC_PASS=" + std::to_string(passes)};
    env.insert(env.end(), more_env.begin(), more_env.end());
    return RunCommand(args, input, env);
  }
  static constexpr const char* kDir = "REDBLOOM_FAULT_FSYNC_DIR";
  static constexpr const char* kMsync = "REDBLOOM_FAULT_MSYNC";
};

// An export's data was synced, its directory entry was not: after a power
// loss the new file could be gone, or the old one back, though the export
// had answered (and the filter it backed up may have been dropped since).
TEST_F(CliSyncFaultTest, AnExportSyncsTheDirectoryItLinksInto) {
  Create("e", {"--strategy", "guava64"});
  ASSERT_EQ(Run({"add", "-q", "e", "x"}).exit_code, 0);
  const std::string out = dir_.path() + "/out";
  std::filesystem::create_directory(out);
  for (const char* format : {"guava", "redbloom"}) {
    // A new name (linked in), then over it (renamed in).
    for (int i = 0; i < 2; ++i) {
      auto r = RunFaulty(kDir, out, {"export", "e", "--format", format, "-f", out + "/e.bak"});
      EXPECT_EQ(r.exit_code, 3) << format << " " << i << ": " << r.err;
      EXPECT_NE(r.err.find("cannot sync its directory"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("power loss"), std::string::npos) << r.err;
    }
  }
  auto r = Run({"export", "e", "--format", "redbloom", "-f", out + "/e.bak"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A create whose file is there already (made by a create that died, or
// whose directory sync failed, before answering) answered "exists" at once:
// a filter its caller went on to use could vanish with a power loss. It
// syncs the directory first, as its own create would have.
// (A create whose own sync fails takes its file back, unless another process
// has used it: the second case below.)
TEST_F(CliSyncFaultTest, ACreateThatFindsItsFileMadeSyncsTheDirectoryFirst) {
  const std::vector<std::string> create = {"create", "c", "-n", "1000", "-p", "0.01"};
  ASSERT_EQ(Run(create).exit_code, 0);  // made, as by a create that died before answering
  auto r = RunFaulty(kDir, dir_.path(), create);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot sync the directory"), std::string::npos) << r.err;
  r = Run(create);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A new name whose sync fails: nothing is left for the next create to find.
  r = RunFaulty(kDir, dir_.path(), {"create", "n", "-n", "1000", "-p", "0.01"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("nothing was created"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"info", "n"}).exit_code, 4);
}

// A drop or a rebuild's swap is made and visible when its directory sync
// fails: it answered success, and a power loss could bring back the dropped
// filter, or the old one in place of the rebuilt one (with the adds made to
// the rebuilt one since). The error says what was done and what may be lost.
TEST_F(CliSyncFaultTest, ADropOrASwapWhoseSyncFailsSaysSo) {
  Create("d");
  auto r = RunFaulty(kDir, dir_.path(), {"drop", "d"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("'d' was dropped, but a power loss may undo it"), std::string::npos)
      << r.err;
  EXPECT_EQ(Run({"info", "d"}).exit_code, 4) << "the drop was made";
  Create("r");
  // The replacement's create syncs the directory once; the swap's fails.
  r = RunFaulty(kDir, dir_.path(), {"rebuild", "r", "--file", "-"}, "one\ntwo\n", 1);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("'r' was swapped in, but a power loss may undo it"), std::string::npos)
      << r.err;
  r = Run({"check", "r", "one", "two"});
  EXPECT_EQ(r.exit_code, 0) << "the swap was made: " << r.out << r.err;
}

// The final sync of an add or a remove failing is an error (exit 3): the
// change is in the page cache only, which a power loss takes. Nothing made
// it fail before (the coverage audit: a mutation ignoring it survived).
TEST_F(CliSyncFaultTest, AnAddOrARemoveWhoseFinalSyncFailsIsAnError) {
  Create("a");
  auto r = RunFaulty(kMsync, dir_.path() + "/a.rbf", {"add", "-q", "a", "x", "y"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot sync " + dir_.path() + "/a.rbf"), std::string::npos) << r.err;
  Create("c", {"--counting"});
  ASSERT_EQ(Run({"add", "-q", "c", "x", "y"}).exit_code, 0);
  r = RunFaulty(kMsync, dir_.path() + "/c.rbf", {"remove", "-q", "c", "x"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot sync " + dir_.path() + "/c.rbf"), std::string::npos) << r.err;
}

// An import that created its filter and whose final sync failed had already
// written its own item count: the undo read it as other clients' adds, left
// the filter half imported, and blamed them. The count now follows the sync.
TEST_F(CliSyncFaultTest, AnImportWhoseSyncFailsDropsTheFilterItMade) {
  Create("src");
  ASSERT_EQ(Run({"add", "-q", "src", "a", "b", "c"}).exit_code, 0);
  const std::string dump = dir_.path() + "/src.dump";
  ASSERT_EQ(Run({"export", "src", "--format", "redbloom", "-f", dump}).exit_code, 0);
  auto r = RunFaulty(kMsync, dir_.path() + "/imp",
                     {"import", "imp", "--format", "redbloom", "-f", dump});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err.find("other clients"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dropped again"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"info", "imp"}).exit_code, 4) << "the half import was left";
}

// The same with the sync after the count failing (the bits' sync passes):
// the undo took the call's own count for other clients' adds, left the
// filter, and blamed them.
TEST_F(CliSyncFaultTest, AnImportWhoseLastSyncFailsDropsTheFilterItMade) {
  Create("src", {"--strategy", "guava64"});
  ASSERT_EQ(Run({"add", "-q", "src", "a", "b", "c"}).exit_code, 0);
  for (const char* format : {"redbloom", "guava"}) {
    const std::string file = dir_.path() + "/src." + format;
    ASSERT_EQ(Run({"export", "src", "--format", format, "-f", file}).exit_code, 0);
    std::vector<std::string> import = {"import", "imp", "--format", format, "-f", file};
    auto r = RunFaulty(kMsync, dir_.path() + "/imp", import, "", /*passes=*/1);
    EXPECT_EQ(r.exit_code, 3) << format << ": " << r.err;
    EXPECT_EQ(r.err.find("other clients"), std::string::npos) << format << ": " << r.err;
    EXPECT_NE(r.err.find("dropped again"), std::string::npos) << format << ": " << r.err;
    EXPECT_EQ(Run({"info", "imp"}).exit_code, 4) << format << ": the failed import was left";
  }
}

// A signal that comes once a rebuild has read its items (SIGTERM here,
// raised while its replacement's bits are synced) still stops it before its
// swap: the temporary filter is dropped, the old filter is unchanged, exit
// 128 + the signal. It swapped all the same, and answered exit 0.
TEST_F(CliSyncFaultTest, ARebuildStoppedAfterItsInputIsReadDoesNotSwap) {
  Create("r");
  ASSERT_EQ(Run({"add", "-q", "r", "old"}).exit_code, 0);
  const std::string temp = dir_.path() + "/" + TemporaryName("r") + ".rbf";
  auto r = RunFaulty(kMsync, temp, {"rebuild", "r", "--file", "-"}, "new\n", 0,
                     {"REDBLOOM_FAULT_MSYNC_SIGNAL=" + std::to_string(SIGTERM)});
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_NE(
      r.err.find("stopped by signal " + std::to_string(SIGTERM) + "; the old filter is unchanged"),
      std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(temp)) << "the temporary filter was left";
  EXPECT_EQ(Run({"check", "r", "old"}).exit_code, 0) << "the rebuilt filter was swapped in";
  EXPECT_EQ(Run({"check", "r", "new"}).exit_code, 1) << "the rebuilt filter was swapped in";
}

// An add stopped by a bad line has written the lines before it, and says
// so: they are synced as a run that ends well syncs them (it exited
// without), and a sync that fails is said too.
TEST_F(CliSyncFaultTest, AnAddStoppedByABadLineSyncsWhatItAdded) {
  Create("a", {}, "100000");
  std::string items;
  for (int i = 0; i < 70000; ++i) items += "item-" + std::to_string(i) + "\n";
  items += "\xff\xfe\n";
  auto r = RunFaulty(kMsync, dir_.path() + "/a", {"add", "-q", "a", "-f", "-"}, items);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the first 65536 items were added"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("may not be durable"), std::string::npos) << "no sync: " << r.err;
  r = Run({"check", "a", "item-0", "item-65535"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A create whose new name cannot be made durable (the directory's sync
// fails: here, out of descriptors at a count prlimit sets) fails and leaves
// no filter. An import left an empty one it said it had dropped, and a
// rebuild its temporary filter, which refused the next rebuild until --force
// (an audit). Every count from too few to enough is tried, so the test does
// not depend on how many descriptors a command opens.
TEST_F(CliTest, ACreateWhoseNameCannotBeMadeDurableLeavesNothing) {
  Create("base", {}, "1000");
  ASSERT_EQ(Run({"add", "base", "a"}).exit_code, 0);
  const std::string dump = dir_.path() + "/base.dump";
  ASSERT_EQ(Run({"export", "base", "--format", "redbloom", "-f", dump}).exit_code, 0);
  const auto limited = [&](int descriptors, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/prlimit",
                                     "--nofile=" + std::to_string(descriptors),
                                     "--",
                                     REDBLOOM_CLI_PATH,
                                     "--store",
                                     "file:" + dir_.path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, "a\nb\n");
  };
  const auto files = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  int unsynced = 0;  // runs that met the failed sync
  for (int n = 3; n <= 12; ++n) {
    SCOPED_TRACE("descriptors: " + std::to_string(n));
    const std::string made = "c" + std::to_string(n);
    const std::string imported = "i" + std::to_string(n);
    std::vector<std::string> expected = files();
    for (const auto& [name, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {made, {"create", made, "-n", "1000", "-p", "0.01"}},
             {imported, {"import", imported, "--format", "redbloom", "-f", dump}},
             {"", {"rebuild", "base", "--file", "-"}}}) {
      const CommandResult r = limited(n, args);
      unsynced += r.err.find("cannot sync the directory") != std::string::npos ? 1 : 0;
      if (r.exit_code == 0) {
        if (!name.empty()) expected.push_back(name + ".rbf");
        std::sort(expected.begin(), expected.end());
      } else if (r.err.find("redbloom: error:") != std::string::npos) {
        EXPECT_EQ(r.exit_code, 3) << args[0] << ": " << r.err;
      }  // else too few to start: the loader's own, or a sanitizer's (UBSan's
         // vptr check, out of descriptors, aborts with a false report)
      EXPECT_EQ(files(), expected) << args[0] << ": " << r.err;
    }
  }
  EXPECT_GT(unsynced, 0) << "no run met a failed directory sync";
  const CommandResult rebuilt = Run({"rebuild", "base", "--file", "-"}, "a\n");
  EXPECT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
}

// An export to a file is written aside and put in place when complete. It
// was written under TARGET.tmp.PID: an export killed midway left that file,
// as large as the filter, for ever (a full disk's worth, in time). It is now
// an unnamed file until linked in. The kill here is a SIGKILL that strace
// sends at the dump's second write (its first 64 KiB written): at a known
// point, every run. (It was SIGXFSZ, at a write past RLIMIT_FSIZE, until the
// CLI ignored that signal to report such a write as "File too large".)
TEST_F(CliTest, AnExportKilledMidwayLeavesNothingBehind) {
  Create("k", {}, "100000");
  std::string items;
  for (int i = 0; i < 50000; ++i) items += "item-" + std::to_string(i) + "\n";
  ASSERT_EQ(Run({"add", "-q", "k", "-f", "-"}, items).exit_code, 0);
  const std::string out = dir_.path() + "/out";
  std::filesystem::create_directory(out);
  const auto entries = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(out)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  for (const bool existing : {false, true}) {
    if (existing) std::ofstream(out + "/k.dump") << "before";
    auto killed = RunCommand(
        {"/usr/bin/strace", "-f", "-o", "/dev/null", "-e", "trace=write,pwrite64,writev", "-e",
         "inject=write,pwrite64,writev:signal=KILL:when=2", REDBLOOM_CLI_PATH, "--store",
         "file:" + dir_.path(), "export", "k", "--format", "redbloom", "-f", out + "/k.dump"});
    EXPECT_EQ(killed.exit_code, -1) << "not killed: " << killed.err;
    EXPECT_EQ(entries(), existing ? std::vector<std::string>{"k.dump"} : std::vector<std::string>{})
        << "existing: " << existing;
  }
  std::ifstream before(out + "/k.dump");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(before), {}), "before");
  // Unkilled, over the file and to a new name: whole dumps, nothing else.
  for (const char* to : {"k.dump", "new.dump"}) {
    auto r = Run({"export", "k", "--format", "redbloom", "-f", out + "/" + to});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GT(std::filesystem::file_size(out + "/" + to), 65536u) << to;
  }
  EXPECT_EQ(entries(), (std::vector<std::string>{"k.dump", "new.dump"}));
  auto back = Run({"import", "copy", "--format", "redbloom", "-f", out + "/k.dump"});
  EXPECT_EQ(back.exit_code, 0) << back.err;
  // Without /proc (a chroot, a private /proc) the unnamed file cannot be
  // linked in: the named temporary is used, and the export still lands (a
  // review: it failed after writing the whole dump). Not under a sanitizer,
  // whose runtime reads /proc/self/maps to start.
  if (testing::kAddressSanitizer || testing::kThreadSanitizer) return;
  const std::string cli = REDBLOOM_CLI_PATH;
  auto no_proc =
      RunCommand({"/usr/bin/unshare", "-m", "--", "/bin/sh", "-c",
                  "mount -t tmpfs none /proc && exec " + cli + " --store file:" + dir_.path() +
                      " export k --format redbloom -f " + out + "/no-proc.dump"});
  EXPECT_EQ(no_proc.exit_code, 0) << no_proc.err;
  EXPECT_EQ(entries(), (std::vector<std::string>{"k.dump", "new.dump", "no-proc.dump"}));
}

// A store directory its user may search but not list (0711) still serves
// filters by name; one it may not search is refused at open, naming the
// directory, rather than failing each filter's open after it.
TEST_F(CliTest, AStoreDirectoryIsRefusedOnlyWhenItCannotBeSearched) {
  Create("f");
  ASSERT_EQ(Run({"add", "-q", "f", "kept"}).exit_code, 0);
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all |
                                                std::filesystem::perms::group_exec |
                                                std::filesystem::perms::others_exec);
  const std::vector<std::string> as_nobody = {
      "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",      "--clear-groups",
      REDBLOOM_CLI_PATH,  "--store",       "file:" + dir_.path()};
  std::vector<std::string> check = as_nobody;
  check.insert(check.end(), {"check", "f", "kept"});
  auto r = RunCommand(check);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all);
  r = RunCommand(check);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot open store directory " + dir_.path()), std::string::npos) << r.err;
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::all);
}

// A drop or rebuild by a user who may unlink a filter's file (a shared
// directory) but not open it to write is refused, and changes nothing:
// unlinked without its replaced flag, the file lived on in every process
// that had it mapped (redbloomd), which answered from it and added to it
// while a new filter of the name took everyone else's adds.
TEST_F(CliTest, ADropOrRebuildThatCannotFlagTheFileChangesNothing) {
  Create("f");
  ASSERT_EQ(Run({"add", "-q", "f", "kept"}).exit_code, 0);
  const std::string items = WriteFile("items.txt", "other\n");
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::all);
  const std::vector<std::string> as_nobody = {
      "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",      "--clear-groups",
      REDBLOOM_CLI_PATH,  "--store",       "file:" + dir_.path()};
  ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir_.path()));
  ASSERT_OK_AND_ASSIGN(auto held, BloomFilter::Open(*store, "f"));  // as redbloomd holds it
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"drop", "f"},
        std::vector<std::string>{"rebuild", "f", "--file", items}}) {
    std::vector<std::string> argv = as_nobody;
    argv.insert(argv.end(), command.begin(), command.end());
    auto r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 3) << command[0] << ": " << r.err;
    EXPECT_NE(r.err.find("flag"), std::string::npos) << r.err;
    EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/f.rbf")) << command[0];
    EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/.rebuild~f.rbf")) << command[0];
  }
  ASSERT_TRUE(held->Add("after").ok());
  auto check = Run({"check", "f", "kept", "after"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

// Started with stdout, stderr or stdin closed, the CLI neither writes its
// output into a filter nor reads a filter as its input. Before, the filter
// file took the free descriptor, and check's "1<TAB>k1" went over its header:
// the filter was lost, on read-only commands too. Output to the closed
// stdout fails, as to a full device (exit 3); a command with none succeeds.
// That output vanished (exit 0) after the first fix: dedup's new lines,
// which a second run no longer prints, and an export's dump. A closed stdin
// read as empty input then: `add -f -` added nothing and exited 0, and
// `rebuild -f - --allow-empty` emptied the filter; they refuse it (exit 2).
TEST_F(CliTest, ClosedStdioNeverTouchesAFilter) {
  Create("ck");
  ASSERT_EQ(Run({"add", "-q", "ck", "k1", "k3"}).exit_code, 0);
  const std::string cli = std::string(REDBLOOM_CLI_PATH) + " --store file:" + dir_.path();
  for (const auto& [command, exit_code] : std::vector<std::pair<std::string, int>>{
           {cli + " check ck k1 k2 >&-", 3},
           {cli + " check ck k1 2>&- >&-", 3},
           {cli + " add ck k3 >&-", 3},
           {cli + " check -q ck k1 >&-", 0},
           {cli + " create cl -n 1000 -p 0.01 2>&-", 0},
           {cli + " add -f - ck <&-", 2},
           {cli + " rebuild ck -f - --allow-empty <&-", 2},
           {cli + " import ck --format redbloom -f /dev/stdin <&-", 2},
           {"printf 'n1\\nn2\\n' | " + cli + " dedup ck >&-", 3},
           {cli + " export ck --format redbloom -f - >&-", 3}}) {
    auto r = RunCommand({"/bin/sh", "-c", command});
    EXPECT_EQ(r.exit_code, exit_code) << command << ": " << r.err;
    if (exit_code == 3 && command.find("2>&-") == std::string::npos) {
      EXPECT_NE(r.err.find("stdout"), std::string::npos) << command << ": " << r.err;
    }
    if (exit_code == 2) {
      EXPECT_NE(r.err.find("stdin is not open"), std::string::npos) << command << ": " << r.err;
    }
    auto check = Run({"check", "ck", "k1", "k3"});
    EXPECT_EQ(check.exit_code, 0) << command << " broke the filter: " << check.err;
  }
  EXPECT_EQ(Run({"info", "cl"}).exit_code, 0);
  // dedup's lines were not printed, and it said so; a second run prints none.
  auto again = Run({"dedup", "ck"}, "n1\nn2\n");
  EXPECT_EQ(again.out, "");
}

// An empty --file value (an unset shell variable) is an error, and a rebuild
// from an empty input is refused unless --allow-empty says it is meant.
// Before, `rebuild keep --file "$F"` with F unset read no items and swapped
// in an empty filter: every item added before then checked absent.
TEST_F(CliTest, AnEmptyFileOrInputNeverEmptiesAFilter) {
  Create("keep");
  ASSERT_EQ(Run({"add", "-q", "keep", "important"}).exit_code, 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"rebuild", "keep", "--file", ""},
        std::vector<std::string>{"dedup", "keep", "-f", ""},
        std::vector<std::string>{"load", "keep", "-f", ""},
        std::vector<std::string>{"check", "keep", "x", "-f", ""},
        std::vector<std::string>{"export", "keep", "--format", "redbloom", "-f", ""}}) {
    auto r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("needs a path"), std::string::npos) << args[0] << ": " << r.err;
  }
  auto empty = Run({"rebuild", "keep", "-f", "-"}, "");
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_NE(empty.err.find("--allow-empty"), std::string::npos) << empty.err;
  EXPECT_EQ(Run({"check", "keep", "important"}).exit_code, 0) << "the filter was emptied";
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/.rebuild~keep.rbf"));
  EXPECT_EQ(Run({"rebuild", "keep", "-f", "-", "--allow-empty"}, "").exit_code, 0);
  EXPECT_EQ(Run({"check", "keep", "important"}).exit_code, 1);
}

// Every flag that takes a value refuses an empty one, as --file does: an
// empty --ttl (`--ttl "$TTL"`, TTL unset) was read as not given, and made a
// filter that never expires, saying nothing; --shards and --expansion too.
TEST_F(CliTest, AnEmptyFlagValueIsAnErrorNotAnAbsentFlag) {
  const std::vector<std::string> create = {"create", "t", "-n", "100", "-p", "0.01"};
  for (const std::vector<std::string>& flag : {std::vector<std::string>{"--ttl", ""},
                                               {"--shards", ""},
                                               {"--strategy", ""},
                                               {"--encoding", ""},
                                               {"--scaling", "--expansion", ""},
                                               {"--window", "", "--slices", "2"},
                                               {"--window", "1h", "--slices", ""}}) {
    std::vector<std::string> args = create;
    args.insert(args.end(), flag.begin(), flag.end());
    auto r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << flag[0] << ": " << r.err;
    EXPECT_NE(r.err.find("needs a value"), std::string::npos) << flag[0] << ": " << r.err;
  }
  EXPECT_EQ(Run({"info", "t"}).exit_code, 4) << "no filter was made";
  auto capacity = Run({"create", "t", "-n", "", "-p", "0.01"});
  EXPECT_EQ(capacity.exit_code, 2) << capacity.err;
  EXPECT_NE(capacity.err.find("--capacity: needs a value"), std::string::npos) << capacity.err;
  Create("keep");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"rebuild", "keep", "-f", "-", "--ttl", ""},
        std::vector<std::string>{"import", "keep", "--format", "", "-f", "-"},
        std::vector<std::string>{"export", "keep", "--format", "", "-f", "-"}}) {
    auto r = Run(args, "x\n");
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("needs a value"), std::string::npos) << args[0] << ": " << r.err;
  }
  // A flag given twice is said in words, not the parser's.
  auto twice = Run({"create", "u", "-n", "100", "-p", "0.01", "--error", "0.1"});
  EXPECT_EQ(twice.exit_code, 2) << twice.err;
  EXPECT_NE(twice.err.find("--error: given 2 times; give it once"), std::string::npos) << twice.err;
}

// Output that cannot be written (a full device) is exit 3 for every
// command, with the system's reason, and dedup says its lines are in the filter though unwritten.
// Before, info, list and offsets exited 0 with their output lost.
TEST_F(CliTest, OutputThatCannotBeWrittenIsExitThree) {
  Create("o");
  const std::string cli = std::string(REDBLOOM_CLI_PATH) + " --store file:" + dir_.path();
  for (const std::string& command :
       {cli + " info o", cli + " list", cli + " offsets -n 1000 -p 0.01 x", cli + " check o x",
        cli + " add o y", cli + " add o z --json", "printf 'a\\nb\\n' | " + cli + " dedup o",
        // Past stdout's buffer: the write that failed came before the last
        // flush, which lost its reason.
        cli + " offsets -n 1000 -p 0.01 $(seq 1 3000)"}) {
    auto r = RunCommand({"/bin/sh", "-c", command + " >/dev/full"});
    EXPECT_EQ(r.exit_code, 3) << command << ": " << r.err;
    // With the system's reason: info and list said "cannot write to stdout" alone.
    EXPECT_NE(r.err.find("cannot write to stdout: No space left on device"), std::string::npos)
        << command << ": " << r.err;
  }
  auto dedup = RunCommand({"/bin/sh", "-c", "printf 'c\\n' | " + cli + " dedup o >/dev/full"});
  EXPECT_NE(dedup.err.find("are in the filter but may not have been written"), std::string::npos)
      << dedup.err;
}

// A reader that goes away (`dedup | head -3`) is a failed write: the CLI
// ignores SIGPIPE, so dedup stops at its first failed write, exit 3, naming
// the lines that are in the filter but may not have been delivered, and
// adds nothing after them. SIGPIPE killed it silently (exit 141) with
// 65,536 lines in the filter that no run would ever print.
TEST_F(CliTest, AReaderThatGoesAwayIsAFailedWrite) {
  Create("dp", {}, "1000000");
  std::string text;
  for (int i = 1; i <= 200000; ++i) text += std::to_string(i) + "\n";
  const std::string in = WriteFile("in", text);
  const std::string cli =
      "'" + std::string(REDBLOOM_CLI_PATH) + "' --store 'file:" + dir_.path() + "' ";
  // 200,000 lines are far more than the pipe and head take before head ends.
  auto r = RunCommand(
      {"/bin/bash", "-c", cli + "dedup dp --file '" + in + "' | head -3; exit ${PIPESTATUS[0]}"});
  EXPECT_EQ(Lines(r.out), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(Count(r.err, "redbloom: error: "), 1u) << r.err;
  EXPECT_NE(
      r.err.find("cannot write to stdout: Broken pipe; the new lines from line 1 of " + in +
                 " to line 65536 of " + in + " are in the filter but may not have been written"),
      std::string::npos)
      << r.err;
  EXPECT_EQ(Run({"check", "-q", "dp", "65537"}).exit_code, 1)
      << "lines after the failed write were added";
}

// add, check and remove stop at the first write of answers that fails, and
// say which items were added (removed) though their answers may be lost.
// An add to a full device went on to add every item, and said only "cannot
// write to stdout" at the end.
TEST_F(CliTest, AnAddWhoseAnswersCannotBeWrittenStopsThere) {
  Create("af", {}, "1000000");
  std::string text;
  for (int i = 1; i <= 300000; ++i) text += std::to_string(i) + "\n";
  const std::string cli =
      "'" + std::string(REDBLOOM_CLI_PATH) + "' --store 'file:" + dir_.path() + "' ";
  // From a regular file, whose chunks are whole (a pipe's end where the
  // input is not ready yet).
  const std::string items = WriteFile("items.txt", text);
  auto full = RunCommand({"/bin/sh", "-c", cli + "add af --file '" + items + "' >/dev/full"});
  EXPECT_EQ(full.exit_code, 3) << full.err;
  EXPECT_EQ(Count(full.err, "redbloom: error: "), 1u) << full.err;
  EXPECT_NE(full.err.find("the first 65536 items were added; nothing after them was"),
            std::string::npos)
      << full.err;
  EXPECT_NE(full.err.find("cannot write to stdout: No space left on device; the answers for line "
                          "1 of " +
                          items + " to line 65536 of " + items +
                          " may not have been written, though those items were added"),
            std::string::npos)
      << full.err;
  EXPECT_EQ(Run({"check", "-q", "af", "65537"}).exit_code, 1)
      << "items after the failed write were added";
  // The same for a pipe whose reader went away, and as JSON.
  auto piped = RunCommand(
      {"/bin/bash", "-c", cli + "add --json af --file - | head -1; exit ${PIPESTATUS[0]}"}, text);
  EXPECT_EQ(piped.exit_code, 3) << piped.err;
  EXPECT_NE(piped.err.find("cannot write to stdout: Broken pipe; the answers for line 1 of stdin"),
            std::string::npos)
      << piped.err;
  auto check = RunCommand({"/bin/sh", "-c", cli + "check af --file '" + items + "' >/dev/full"});
  EXPECT_EQ(check.exit_code, 3) << check.err;
  EXPECT_NE(check.err.find("the first 65536 items were processed; nothing after them was"),
            std::string::npos)
      << check.err;
}

// Runs the CLI (on this test's store) with stdin a pipe that never ends, as
// `tail -f` is: `input` is written to it and it stays open. Its stdout is a
// pipe this test reads `lines` lines from, then closes. Returns the exit
// code and stderr, or exit code -1 if it was still running 15 s later.
testing::CommandResult RunUntilItsReaderIsGone(const std::string& store,
                                               const std::vector<std::string>& args,
                                               const std::string& input, int lines,
                                               const std::string& err_path) {
  ::signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return {};
  std::vector<std::string> argv = {REDBLOOM_CLI_PATH, "--store", store};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err, 2);
    ::signal(SIGPIPE, SIG_DFL);  // as a shell leaves it
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  (void)!::write(in[1], input.data(), input.size());
  // The lines asked for, then the reader goes.
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::count(got.begin(), got.end(), '\n') < lines &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  testing::CommandResult result;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      status = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::close(in[1]);
  result.out = got;
  result.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  result.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  return result;
}

// With an input that never ends (`tail -f`), add, check, remove and dedup
// answer each line as it arrives (add, check and remove waited for 65,536
// lines or the input's end, --json's header too), and stop once what reads
// their output is gone, exit 3, rather than wait on for input whose answers
// could not be written (check never exited; dedup waited for its next line
// to add it and lose it).
TEST_F(CliTest, AnInputThatNeverEndsIsAnsweredAsItComesAndStopsWithItsReader) {
  Create("t", {"--counting"});
  const std::string store = "file:" + dir_.path();
  const std::string err = dir_.path() + "/err";
  const std::vector<std::vector<std::string>> commands = {{"add", "t", "--file", "-"},
                                                          {"check", "t", "--file", "-"},
                                                          {"remove", "t", "--file", "-"},
                                                          {"dedup", "t"},
                                                          {"check", "t", "--json", "--file", "-"}};
  for (const auto& command : commands) {
    const std::string what = command[0] + (command.size() == 5 ? " --json" : "");
    // The reader goes after the first line of output.
    auto r = RunUntilItsReaderIsGone(store, command, "a\nb\n", 1, err);
    EXPECT_NE(r.out.find('\n'), std::string::npos) << what << ": no answer came";
    EXPECT_EQ(r.exit_code, 3) << what << ": " << r.err;
    EXPECT_NE(r.err.find("cannot write to stdout: whatever read it is gone"), std::string::npos)
        << what << ": " << r.err;
  }
}

// A load in batches (a scaling filter) that meets bad input after its first
// batch says that batch was added: the error alone read like the plain
// filter's, where nothing is written.
TEST_F(CliTest, ALoadStoppedByBadInputSaysWhatItAdded) {
  Create("sc", {"--scaling"});
  std::string text;
  for (int i = 0; i < 70000; ++i) text += std::to_string(i) + "\n";
  text += std::string(1100000, 'a') + "\n";
  const std::string path = WriteFile("long.txt", text);
  auto r = Run({"load", "sc", "-f", path});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the 65536 items before it were added"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 70001"), std::string::npos) << r.err;
}

// A rebuild killed before its swap leaves its temporary filter, which keeps
// the next rebuild out (it might be another one running) until --force.
TEST_F(CliTest, ARebuildsLeftoverIsDroppedOnlyWithForce) {
  Create("r");
  {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Open("file:" + dir_.path()));
    ASSERT_OK_AND_ASSIGN(FilterConfig config, store->ReadConfig("r"));
    ASSERT_TRUE(store->Create(TemporaryName("r"), config).ok());
  }
  const std::string path = WriteFile("r.txt", "a\nb\n");
  auto r = Run({"rebuild", "r", "--file", path});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("another rebuild"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  // The CLI's way only: the library's enum meant nothing to its users.
  EXPECT_EQ(r.err.find("Leftover"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"check", "r", "a"}).exit_code, 1) << "a refused rebuild changed the filter";
  r = Run({"rebuild", "r", "--file", path, "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Run({"check", "r", "a", "b"}).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/" + TemporaryName("r") + ".rbf"));
}

// A chunk that fails part-way (here a scaling filter out of its 32 layers)
// may have written some of its items: the run says so, on stderr and in the
// JSON, rather than reporting 0 items added. The items placed in layers
// before the failure are confirmed (reported as done), the rest not.
TEST_F(CliTest, AChunkThatFailsPartWaySaysSomeMayHaveBeenAdded) {
  Create("cap", {"--scaling", "--expansion", "1"}, "1");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "C-" + std::to_string(i) + "\n";
  const std::string path = WriteFile("cap.txt", text);
  auto r = Run({"add", "--json", "cap", "--file", path});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"]["code"], "resource_exhausted");
  EXPECT_EQ(j["unconfirmed"], 8);
  EXPECT_NE(r.err.find("the first 32 items were added, and some of the next 8 may have been"),
            std::string::npos)
      << r.err;
  auto check = Run({"check", "-q", "cap", "--file", path});
  EXPECT_NE(check.exit_code, 3) << check.err;
  auto info = nlohmann::json::parse(Run({"info", "cap", "--json"}).out);
  EXPECT_GT(info["items_added"].get<int>(), 0) << "the unconfirmed items were in fact added";
  // A bad item fails its chunk before anything is written: nothing unconfirmed.
  Create("u");
  auto bad = Run({"add", "--json", "u", "ok", "bad\xff"});
  EXPECT_EQ(bad.exit_code, 2);
  const auto bad_json = nlohmann::json::parse(bad.out, nullptr, false);
  ASSERT_FALSE(bad_json.is_discarded()) << bad.out;
  EXPECT_EQ(bad_json["error"]["code"], "invalid_argument");
  EXPECT_FALSE(bad_json.contains("unconfirmed")) << bad.out;
  // Nor does a call the filter cannot do (a remove on a plain filter), which
  // said "some of the first 1 items may have been processed".
  auto unsupported = Run({"remove", "--json", "u", "ok"});
  EXPECT_EQ(unsupported.exit_code, 2) << unsupported.err;
  EXPECT_EQ(unsupported.err.find("may have been"), std::string::npos) << unsupported.err;
  const auto unsupported_json = nlohmann::json::parse(unsupported.out, nullptr, false);
  ASSERT_FALSE(unsupported_json.is_discarded()) << unsupported.out;
  EXPECT_FALSE(unsupported_json.contains("unconfirmed")) << unsupported.out;
}

// create (and dedup's create-if-missing) answers "exists" only for the TTL
// asked for: a caller told exit 0 for --ttl 1h on a filter that never
// expires, or the other way round, would be misled.
TEST_F(CliTest, CreateOfAnExistingFilterWithAnotherTtlIsAConflict) {
  Create("t", {"--ttl", "1h"});
  EXPECT_EQ(Run({"create", "t", "-n", "1000", "-p", "0.01", "--ttl", "1h"}).exit_code, 0);
  for (std::vector<std::string> ttl : std::vector<std::vector<std::string>>{{}, {"--ttl", "2h"}}) {
    std::vector<std::string> cmd = {"create", "t", "-n", "1000", "-p", "0.01"};
    cmd.insert(cmd.end(), ttl.begin(), ttl.end());
    auto r = Run(cmd);
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("exists with a TTL of 3600 s"), std::string::npos) << r.err;
    cmd = {"dedup", "t", "-n", "1000", "-p", "0.01"};
    cmd.insert(cmd.end(), ttl.begin(), ttl.end());
    r = Run(cmd, "x\n");
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_EQ(r.out, "") << "nothing was added";
  }
}

// A TTL is kept in whole seconds: --ttl 1500ms was silently 1 s. It is
// refused (exit 2) and nothing is created; 2000ms is 2 s.
TEST_F(CliTest, ATtlThatIsNotWholeSecondsIsRefused) {
  auto r = Run({"create", "ms", "-n", "1000", "-p", "0.01", "--ttl", "1500ms"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("whole seconds"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"info", "ms"}).exit_code, 4) << "created anyway";
  r = Run({"create", "ms", "-n", "1000", "-p", "0.01", "--ttl", "2000ms"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Run({"info", "--json", "ms"}).out.find("\"ttl_seconds\": 2,"), std::string::npos)
      << Run({"info", "--json", "ms"}).out;
}

TEST_F(CliTest, InfoSaysWhenTheSeedSizeWasCapped) {
  auto r =
      Run({"create", "huge", "--capacity", "300000000", "--error", "0.01", "--strategy", "seed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("capped"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(Run({"info", "huge", "--json"}).out);
  EXPECT_EQ(j["capped"], true);
  EXPECT_EQ(j["bits"], 2147483647);
}

TEST_F(CliTest, OffsetsMatchTheLibraryAndTheFilter) {
  auto r =
      Run({"offsets", "--capacity", "100", "--error", "0.01", "--strategy", "seed", "ORD-1", "x"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  // k = 7 offsets per line, each below m = 958.
  std::istringstream in(lines[0]);
  std::vector<uint64_t> offsets{std::istream_iterator<uint64_t>(in), {}};
  ASSERT_EQ(offsets.size(), 7u);
  for (uint64_t o : offsets) EXPECT_LT(o, 958u);
  // A bad item is named by its position, as add and check name it.
  auto bad =
      Run({"offsets", "--capacity", "100", "--error", "0.01", "--encoding", "int32", "7", "x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("argument 2: item 'x'"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "") << "nothing printed for the items before it";
}

TEST_F(CliTest, DropRemovesTheFilter) {
  Create("f");
  EXPECT_EQ(Run({"drop", "f"}).exit_code, 0);
  EXPECT_EQ(Run({"list"}).out, "");
  EXPECT_EQ(Run({"check", "f", "x"}).exit_code, 4);
}

TEST_F(CliTest, HelpWorksForEveryCommand) {
  for (std::string cmd : {"create", "attach", "add", "check", "info", "list", "drop", "offsets"}) {
    auto r = RunCommand({REDBLOOM_CLI_PATH, cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd << ": " << r.out;
  }
  EXPECT_EQ(RunCommand({REDBLOOM_CLI_PATH, "--help"}).exit_code, 0);
  // A misspelt command is named, with the commands there are (CLI11 alone
  // said "A subcommand is required").
  auto typo = RunCommand({REDBLOOM_CLI_PATH, "chek", "orders", "x"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("unknown command 'chek' (commands: create, attach, add, check,"),
            std::string::npos)
      << typo.err;
  // And with --help after it: CLI11 printed the main help, exit 0, as if the
  // command were there (a script asking whether `delete` exists was told yes).
  for (const char* help : {"--help", "-h", "--version"}) {
    auto typo_help = RunCommand({REDBLOOM_CLI_PATH, "delete", help});
    EXPECT_EQ(typo_help.exit_code, 2) << help;
    EXPECT_EQ(typo_help.out, "") << help;
    EXPECT_NE(typo_help.err.find("unknown command 'delete' (commands:"), std::string::npos)
        << typo_help.err;
    // A misspelt option before it, alike.
    auto option_typo = RunCommand({REDBLOOM_CLI_PATH, "--stor", "mem:", help});
    EXPECT_EQ(option_typo.exit_code, 2) << help;
    EXPECT_EQ(option_typo.out, "") << help;
    EXPECT_NE(option_typo.err.find("unknown option '--stor'"), std::string::npos)
        << option_typo.err;
    // And a command's own option: `add --jsn -h` printed add's help, exit 0.
    auto command_typo = RunCommand({REDBLOOM_CLI_PATH, "--store", "mem:", "add", "--jsn", help});
    EXPECT_EQ(command_typo.exit_code, 2) << help;
    EXPECT_EQ(command_typo.out, "") << help;
    EXPECT_NE(command_typo.err.find("unknown option '--jsn'; see redbloom add --help"),
              std::string::npos)
        << command_typo.err;
  }
  // An item after "--" that looks like help is an item; help before "--"
  // is help, whatever follows (it was "unknown option '--'").
  EXPECT_EQ(RunCommand({REDBLOOM_CLI_PATH, "--store", "mem:", "add", "x", "--", "-h"}).exit_code,
            4);
  for (const char* command : {"add", "info", "create"}) {
    auto help = RunCommand({REDBLOOM_CLI_PATH, "--store", "mem:", command, "-h", "--", "-x"});
    EXPECT_EQ(help.exit_code, 0) << command << ": " << help.err;
    EXPECT_NE(help.out.find("Usage: redbloom " + std::string(command)), std::string::npos)
        << help.out;
  }
  EXPECT_EQ(RunCommand({REDBLOOM_CLI_PATH, "--version"}).exit_code, 0);
  EXPECT_EQ(RunCommand({REDBLOOM_CLI_PATH, "--store", "mem:", "--help"}).exit_code, 0);
  // Usage errors are one line with their code, as every error is (they were
  // two, the second "Run with --help for usage.", and had no code).
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"chek", "orders", "x"},
                                             {"check", "orders", "--bogus"},
                                             {"create", "q"},
                                             {"add", "orders", "--file", ""},
                                             {"check"}}) {
    std::vector<std::string> argv = {REDBLOOM_CLI_PATH, "--store", "file:" + dir_.path()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_TRUE(r.err.starts_with("redbloom: error: ")) << r.err;
    EXPECT_TRUE(r.err.ends_with(" [invalid_argument]\n")) << r.err;
  }
}

TEST_F(CliTest, StoreDefaultsToTheEnvironment) {
  auto create = RunCommand({REDBLOOM_CLI_PATH, "create", "e", "-n", "10", "-p", "0.1"}, "",
                           {"REDBLOOM_STORE=file:" + dir_.path()});
  ASSERT_EQ(create.exit_code, 0) << create.err;
  EXPECT_EQ(Lines(Run({"list"}).out), (std::vector<std::string>{"e"}));
}

// REDBLOOM_STORE set but empty (`REDBLOOM_STORE="$URL"` with URL unset) is
// exit 2, as an empty --store is: it was read as unset, and the filters went
// to ./redbloom-data. Given, --store wins over it.
TEST_F(CliTest, AnEmptyStoreVariableIsAnError) {
  auto r = RunCommand({"/bin/sh", "-c", "cd \"$1\" && exec \"$0\" create e -n 10 -p 0.1",
                       REDBLOOM_CLI_PATH, dir_.path()},
                      "", {"REDBLOOM_STORE="});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("REDBLOOM_STORE is set but empty"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/redbloom-data"));
  auto given = RunCommand(
      {REDBLOOM_CLI_PATH, "--store", "file:" + dir_.path(), "create", "e", "-n", "10", "-p", "0.1"},
      "", {"REDBLOOM_STORE="});
  EXPECT_EQ(given.exit_code, 0) << given.err;
}

// A bad URL from REDBLOOM_STORE is named as coming from there: the error
// showed a URL the command line never gave.
TEST_F(CliTest, ABadStoreVariableIsNamed) {
  auto r = RunCommand({REDBLOOM_CLI_PATH, "list"}, "", {"REDBLOOM_STORE=bogus"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("REDBLOOM_STORE: unknown store URL 'bogus'"), std::string::npos) << r.err;
  auto given = RunCommand({REDBLOOM_CLI_PATH, "--store", "bogus", "list"}, "",
                          {"REDBLOOM_STORE=file:" + dir_.path()});
  EXPECT_EQ(given.exit_code, 2) << given.err;
  EXPECT_EQ(given.err.find("REDBLOOM_STORE"), std::string::npos) << given.err;
}

// "--name=" is an empty value, as --name "" is: CLI11 took the next word for
// it, so "--store= list" said "A subcommand is required".
TEST_F(CliTest, AnEmptyValueAfterAnEqualsSignIsEmpty) {
  auto store = RunCommand({REDBLOOM_CLI_PATH, "--store=", "list"});
  EXPECT_EQ(store.exit_code, 2) << store.err;
  EXPECT_NE(store.err.find("unknown store URL ''"), std::string::npos) << store.err;
  auto error = Run({"create", "e", "-n", "10", "--error=", "-p", "0.1"});
  EXPECT_EQ(error.exit_code, 2) << error.err;
  EXPECT_NE(error.err.find("--error: needs a value"), std::string::npos) << error.err;
  EXPECT_EQ(Run({"create", "e", "--capacity=10", "--error=0.1"}).exit_code, 0);
  // After "--", a word is an item, whatever it looks like.
  EXPECT_EQ(Run({"add", "e", "--", "--x="}).exit_code, 0);
  EXPECT_EQ(Run({"check", "e", "--", "--x="}).out, "1\t--x=\n");
  // A flag's "--json=" is the flag: split, its "" was added as an item.
  auto flag = Run({"add", "e", "a", "--json=", "--quiet="});
  EXPECT_EQ(flag.exit_code, 2) << flag.err;  // --json and --quiet together, as without '='
  auto json = Run({"add", "e", "b", "--json="});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["items"].size(), 1u) << json.out;
  EXPECT_EQ(Run({"check", "e", ""}).exit_code, 1) << "an empty item was added";
}

// Exit code 1 is check's absent item and remove's item that was not there:
// the help and README's table named check alone.
TEST_F(CliTest, ExitCodeOneIsCheckOrRemove) {
  Create("c", {"--counting"});
  EXPECT_EQ(Run({"remove", "c", "never-added"}).exit_code, 1);
  auto help = Run({"--help"});
  EXPECT_NE(help.out.find("1 check found an absent item or remove one that was not there"),
            std::string::npos)
      << help.out;
  std::ifstream readme(std::string(REDBLOOM_SOURCE_DIR) + "/README.md");
  std::string line, row;
  while (std::getline(readme, line) && row.empty()) {
    if (line.starts_with("| 1 |")) row = line;
  }
  EXPECT_NE(row.find("`remove`"), std::string::npos) << "README's exit code 1: " << row;
}

// Invalid UTF-8 in a utf8 filter's input is named by its line in the input,
// by every command that reads lines (here in the second chunk of 65,536).
TEST_F(CliTest, InvalidUtf8IsNamedByItsLineInEveryCommand) {
  Create("u", {"--counting"}, "100000");
  Create("s", {"--scaling"}, "100000");
  std::string text;
  for (int i = 1; i <= 70002; ++i)
    text += (i == 70001 ? "bad\xff" : "ok" + std::to_string(i)) + "\n";
  const std::string path = WriteFile("u.txt", text);
  const std::string where = "line 70001 of " + path + ": item is not valid UTF-8";
  for (std::vector<std::string> cmd : std::vector<std::vector<std::string>>{
           {"add", "-q", "u", "--file", path},
           {"check", "-q", "u", "--file", path},
           {"remove", "-q", "u", "--file", path},
           {"load", "u", "--file", path},
           {"dedup", "u", "--file", path},
           {"rebuild", "u", "--file", path, "-n", "100000", "-p", "0.01", "--counting"},
           {"load", "s", "--file", path},  // a scaling filter loads in batches
       }) {
    auto r = Run(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find(where), std::string::npos) << cmd[0] << ": " << r.err;
    EXPECT_EQ(r.err.find("item 4465"), std::string::npos) << cmd[0] << ": " << r.err;
  }
}

// A line longer than an item may be (1 MiB) is an input error named by its
// line, not a line buffered without bound (`add -f /dev/zero` would take all
// memory); the chunks before it stay added, and stderr says so.
TEST_F(CliTest, OverlongLinesAreNamedByTheirLine) {
  Create("f", {}, "200000");
  std::string text;
  for (int i = 1; i <= 70000; ++i) text += "ok" + std::to_string(i) + "\n";
  text += std::string((1 << 20) + 1, 'x') + "\nlast\n";
  const std::string path = WriteFile("long.txt", text);
  for (std::vector<std::string> cmd : std::vector<std::vector<std::string>>{
           {"add", "-q", "f", "--file", path},
           {"check", "-q", "f", "--file", path},
           {"load", "f", "--file", path},
           {"dedup", "f", "--file", path},
       }) {
    auto r = Run(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find("line 70001 of " + path + ": longer than 1048576 bytes"),
              std::string::npos)
        << cmd[0] << ": " << r.err.substr(0, 300);
  }
  auto add = Run({"add", "-q", "f", "--file", "-"}, text);
  EXPECT_NE(add.err.find("line 70001 of stdin"), std::string::npos) << add.err.substr(0, 300);
  EXPECT_NE(add.err.find("the first 65536 items were added"), std::string::npos) << add.err;
  // A line of exactly 1 MiB (plus a Windows "\r") is an item like any other.
  auto fits = Run({"add", "-q", "f", "--file", "-"}, std::string(1 << 20, 'y') + "\r\n");
  EXPECT_EQ(fits.exit_code, 0) << fits.err.substr(0, 300);
}

// Every path the user names that cannot be opened gives the system's reason.
TEST_F(CliTest, CannotOpenSaysWhy) {
  Create("f", {"--counting"});
  const std::string missing = dir_.path() + "/missing";
  for (std::vector<std::string> cmd : std::vector<std::vector<std::string>>{
           {"add", "f", "--file", missing},
           {"check", "f", "--file", missing},
           {"remove", "f", "--file", missing},
           {"load", "f", "--file", missing},
           {"dedup", "f", "--file", missing},
           {"rebuild", "f", "--file", missing, "-n", "10", "-p", "0.1"},
           {"import", "g", "--format", "redbloom", "--file", missing},
           {"export", "f", "--format", "redbloom", "--file", missing + "/out.dump"},
       }) {
    auto r = Run(cmd);
    EXPECT_EQ(r.exit_code, 3) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find(missing), std::string::npos) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find(": No such file or directory"), std::string::npos)
        << cmd[0] << ": " << r.err;
  }
  // The path the user gave is named (not only the export's temporary file),
  // and a directory given as input is one, not a "truncated" dump.
  auto exported = Run({"export", "f", "--format", "redbloom", "--file", missing + "/out.dump"});
  EXPECT_NE(exported.err.find("cannot write " + missing + "/out.dump "), std::string::npos)
      << exported.err;
  for (const char* format : {"redbloom", "guava"}) {
    auto dir = Run({"import", "g", "--format", format, "--file", dir_.path()});
    EXPECT_EQ(dir.exit_code, 3) << dir.err;
    EXPECT_NE(dir.err.find(dir_.path() + ": Is a directory"), std::string::npos) << dir.err;
  }
  // ... before anything is made: dedup made its filter, then failed to read.
  for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
           {"dedup", "dd", "--file", dir_.path(), "-n", "100", "-p", "0.01"},
           {"add", "f", "--file", dir_.path()}}) {
    auto r = Run(cmd);
    EXPECT_EQ(r.exit_code, 3) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find("cannot read " + dir_.path() + ": Is a directory"), std::string::npos)
        << r.err;
  }
  EXPECT_EQ(Run({"info", "dd"}).exit_code, 4) << "dedup made its filter";
  // A path with a line break in it is escaped: errors are one line (README),
  // which a script keeping stderr's last line relies on.
  auto broken = Run({"add", "f", "--file", dir_.path() + "/no\nsuch\x01"});
  EXPECT_EQ(broken.exit_code, 3);
  EXPECT_EQ(Count(broken.err, "\n"), 1u) << broken.err;
  EXPECT_NE(broken.err.find("/no\\nsuch\\x01: No such file"), std::string::npos) << broken.err;
  // list on a directory that does not exist: an empty store's output and
  // exit code, and a note (a mistyped URL printed nothing at all).
  auto typo = RunCommand({REDBLOOM_CLI_PATH, "--store", "file:" + missing, "list"});
  EXPECT_EQ(typo.exit_code, 0) << typo.err;
  EXPECT_EQ(typo.out, "");
  EXPECT_NE(typo.err.find(missing + " does not exist (the first create makes it)"),
            std::string::npos)
      << typo.err;
  EXPECT_EQ(Run({"list"}).err, "") << "a note for a store that exists";
  auto store = RunCommand({REDBLOOM_CLI_PATH, "--store", "file:/dev/null/sub", "list"});
  EXPECT_EQ(store.exit_code, 3);
  EXPECT_NE(store.err.find("/dev/null/sub: Not a directory"), std::string::npos) << store.err;
}

// dedup creates its filter when given --capacity and --error (as create
// would: an identical filter is used, one with other parameters is exit 4);
// without them a missing filter is a not_found that says how to create it.
TEST_F(CliTest, DedupCreatesItsFilterWhenSized) {
  auto missing = Run({"dedup", "seen"}, "a\n");
  EXPECT_EQ(missing.exit_code, 4) << missing.err;
  EXPECT_NE(missing.err.find("filter 'seen' does not exist"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("--capacity"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("[not_found]"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.out, "");

  auto first = Run({"dedup", "seen", "--capacity", "1000", "--error", "0.01"}, "a\nb\na\n");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(Lines(first.out), (std::vector<std::string>{"a", "b"}));
  auto again = Run({"dedup", "seen", "-n", "1000", "-p", "0.01"}, "b\nc\n");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Lines(again.out), (std::vector<std::string>{"c"}));
  auto plain = Run({"dedup", "seen"}, "c\nd\n");
  EXPECT_EQ(Lines(plain.out), (std::vector<std::string>{"d"}));
  auto j = nlohmann::json::parse(Run({"info", "seen", "--json"}).out);
  EXPECT_EQ(j["capacity"], 1000);
  EXPECT_EQ(j["strategy"], "block");

  auto other = Run({"dedup", "seen", "-n", "2000", "-p", "0.01"}, "e\n");
  EXPECT_EQ(other.exit_code, 4) << other.err;
  EXPECT_NE(other.err.find("other parameters"), std::string::npos) << other.err;
  EXPECT_EQ(other.out, "");
  auto half = Run({"dedup", "new", "-n", "1000"}, "e\n");
  EXPECT_EQ(half.exit_code, 2) << half.err;
  EXPECT_NE(half.err.find("give both --capacity and --error"), std::string::npos) << half.err;
  auto kind_alone = Run({"dedup", "seen", "--scaling"}, "e\n");
  EXPECT_EQ(kind_alone.exit_code, 2) << kind_alone.err;

  // The kinds of create: a window filter forgets what it saw a day ago.
  auto window = Run({"dedup", "daily", "-n", "1000", "-p", "0.01", "--window", "24h", "--slices",
                     "24", "--encoding", "int64"},
                    "1\n2\n1\n");
  ASSERT_EQ(window.exit_code, 0) << window.err;
  EXPECT_EQ(Lines(window.out), (std::vector<std::string>{"1", "2"}));
  auto w = nlohmann::json::parse(Run({"info", "daily", "--json"}).out);
  EXPECT_EQ(w["kind"], "window");
  EXPECT_EQ(w["encoding"], "int64");
}

// A create writes its file complete before the name appears. It wrote it
// under a temporary name, which a process killed meanwhile left for ever at
// the filter's full size (an audit: seven of 30 kills, 1.2 GB each). The
// file is unnamed (O_TMPFILE) until linked now: whenever the kill lands,
// nothing is left. The kill lands the moment a temporary name appears.
TEST_F(CliTest, ACreateKilledMidWayLeavesNoTemporaryFile) {
  // File systems without O_TMPFILE (NFS, FUSE) take the named fallback,
  // which a kill can leave (docs/file-format.md).
  const int probe = ::open(dir_.path().c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (probe < 0) GTEST_SKIP() << "no O_TMPFILE in " << dir_.path();
  ::close(probe);
  const int watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, dir_.path().c_str(), IN_CREATE), 0);
  const std::string store = "file:" + dir_.path();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(REDBLOOM_CLI_PATH, "redbloom", "--store", store.c_str(), "create", "big", "-n",
            "300000000", "-p", "0.01", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  bool killed = false;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!killed && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    pollfd p{watch, POLLIN, 0};
    if (::poll(&p, 1, 5) <= 0) continue;
    alignas(inotify_event) char events[4096];
    const ssize_t n = ::read(watch, events, sizeof(events));
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(events + at);
      if (e->len > 0 && std::string(e->name).rfind(".tmp.", 0) == 0) {
        ::kill(pid, SIGKILL);
        killed = true;
      }
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  if (killed || ::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ::close(watch);
  EXPECT_FALSE(killed) << "a temporary name appeared (and the kill left it)";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_NE(entry.path().filename().string().rfind(".tmp.", 0), 0u) << entry.path();
  }
}

// Creating a filter that exists already (a racing creator, a retry) once
// reserved a second full copy before finding the name taken: where the
// disk had no room for two, it failed "No space left on device" for a
// filter that was there (an audit: 5 of 5 two-process creates on a small
// file system). It finds the name first. Here the room is a file size
// limit (ulimit -f) below the filter's size.
TEST_F(CliTest, CreatingAFilterThatExistsReservesNoSecondCopy) {
  ASSERT_EQ(Run({"create", "roomy", "-n", "3000000", "-p", "0.01"}).exit_code, 0);
  const auto again = testing::RunCommand(
      {"/bin/sh", "-c",
       "ulimit -f 100 && exec \"$0\" --store \"$1\" create roomy -n 3000000 -p 0.01",
       REDBLOOM_CLI_PATH, "file:" + dir_.path()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE((again.out + again.err).find("exists (same parameters)"), std::string::npos)
      << again.out << again.err;
}

// A shell command line in its own process group, its stdout read line by
// line as it arrives; Stop (or the destructor) ends the whole group.
class ShellPipeline {
 public:
  ShellPipeline(const std::string& script, const std::vector<std::string>& env) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(out[1], 1);
      const int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);  // in the parent too, so Stop reaches the group whichever runs first
    ::close(out[1]);
    out_ = out[0];
  }
  ShellPipeline(const ShellPipeline&) = delete;
  ShellPipeline& operator=(const ShellPipeline&) = delete;
  ~ShellPipeline() {
    Stop();
    ::close(out_);
  }

  // The next line of output, or "<none>" if none came within `timeout`
  // (or the pipeline ended).
  std::string ReadLine(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (buf_.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{out_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return "<none>";
      char chunk[4096];
      const ssize_t r = ::read(out_, chunk, sizeof(chunk));
      if (r <= 0) return "<none>";
      buf_.append(chunk, static_cast<size_t>(r));
    }
    const size_t nl = buf_.find('\n');
    std::string line = buf_.substr(0, nl);
    buf_.erase(0, nl + 1);
    return line;
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buf_;
};

// The README's streaming example runs exactly as written (the line is taken
// from README.md): its first run creates the filter, each URL comes out once,
// and a line appended to the log comes out while `tail -f` is still running.
TEST_F(CliTest, ReadmeDedupExampleRunsAsWritten) {
  std::ifstream readme(std::string(REDBLOOM_SOURCE_DIR) + "/README.md");
  std::string line, example;
  while (std::getline(readme, line)) {
    if (line.find("| redbloom dedup") != std::string::npos) {
      example = line;
      break;
    }
  }
  ASSERT_EQ(example.rfind("tail -f access.log |", 0), 0u) << "README example: " << example;
  const std::string bin = dir_.path() + "/bin";
  std::filesystem::create_directory(bin);
  std::filesystem::create_symlink(REDBLOOM_CLI_PATH, bin + "/redbloom");
  const std::string log =
      WriteFile("access.log", "10:00\tGET\t/a\n10:01\tGET\t/b\n10:02\tGET\t/a\n");
  const char* path = std::getenv("PATH");
  ShellPipeline pipeline("cd '" + dir_.path() + "' && " + example,
                         {"PATH=" + bin + ":" + (path ? path : "/usr/bin:/bin"),
                          "REDBLOOM_STORE=file:" + dir_.path() + "/store"});
  ASSERT_EQ(pipeline.ReadLine(), "/a") << example;
  EXPECT_EQ(pipeline.ReadLine(), "/b");
  std::ofstream(log, std::ios::app) << "10:03\tGET\t/b\n10:04\tGET\t/c\n10:05\tGET\t/a\n";
  EXPECT_EQ(pipeline.ReadLine(), "/c") << "a line appended to the log comes out at once, once";
  pipeline.Stop();
  auto check = RunCommand({REDBLOOM_CLI_PATH, "check", "seen-urls", "/a", "/b", "/c"}, "",
                          {"REDBLOOM_STORE=file:" + dir_.path() + "/store"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
}

// A long-running add follows its name to a file moved over the filter's
// own (as a rebuild killed between its swap and flagging the old file
// leaves it: nothing tells the old file's readers). It went on adding to
// the old, unlinked file, every add acknowledged and lost (an audit).
TEST_F(CliTest, AStreamingAddFollowsAFileMovedOverItsFilters) {
  Create("p");
  ASSERT_EQ(Run({"add", "-q", "p", "old"}).exit_code, 0);
  const std::string file = dir_.path() + "/p.rbf";
  const std::string backup = dir_.path() + "/p.rbf.backup";
  std::filesystem::copy_file(file, backup);
  const std::string in = WriteFile("in.txt", "a\n");
  ShellPipeline pipeline("tail -n +1 -f '" + in + "' | exec '" + REDBLOOM_CLI_PATH +
                             "' --store 'file:" + dir_.path() + "' add p --file -",
                         {});
  ASSERT_EQ(pipeline.ReadLine(), "1\ta");
  std::filesystem::rename(backup, file);  // unflagged: the old file's readers are not told
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  std::ofstream(in, std::ios::app) << "after\n";
  ASSERT_EQ(pipeline.ReadLine(), "1\tafter");
  auto check = Run({"check", "p", "after", "old"});
  EXPECT_EQ(check.exit_code, 0) << "the add went to the replaced file: " << check.out << check.err;
  pipeline.Stop();
}

// A load reads its input before it writes: a file moved over the filter's
// own meanwhile is the one it writes to, not the unlinked old one.
TEST_F(CliTest, ALoadWritesToTheFileItsNameHoldsWhenItEnds) {
  Create("p");
  const std::string file = dir_.path() + "/p.rbf";
  const std::string backup = dir_.path() + "/p.rbf.backup";
  std::filesystem::copy_file(file, backup);
  const std::string fifo = dir_.path() + "/items";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ShellPipeline pipeline("'" + std::string(REDBLOOM_CLI_PATH) + "' --store 'file:" + dir_.path() +
                             "' load p --file '" + fifo + "' 2>/dev/null; echo exit=$?",
                         {});
  {
    std::ofstream items(fifo);  // opens once the load has opened its end
    items << "a\nb\n" << std::flush;
    // The load opens its input, then the filter.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::filesystem::rename(backup, file);  // unflagged, as a killed rebuild leaves it
    items << "c\n";
  }
  ASSERT_EQ(pipeline.ReadLine(), "exit=0");
  auto check = Run({"check", "p", "a", "b", "c"});
  EXPECT_EQ(check.exit_code, 0) << "the load went to the replaced file: " << check.out << check.err;
}

// A rebuild stopped by a signal (SIGTERM here; SIGINT and SIGHUP alike) while
// it reads its items drops its temporary filter and exits 128 + the signal,
// the old filter unchanged, so the next rebuild needs no --force. Killed
// outright before, it left the temporary filter behind.
TEST_F(CliTest, ARebuildStoppedBySignalLeavesNothingBehind) {
  Create("r");
  ASSERT_EQ(Run({"add", "-q", "r", "old"}).exit_code, 0);
  const std::string temp = dir_.path() + "/" + TemporaryName("r") + ".rbf";
  // The rebuild reads a FIFO this test holds open and writes nothing to: it
  // has made its temporary filter and waits for items when the signal comes.
  const std::string fifo = dir_.path() + "/items";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int held = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ShellPipeline pipeline("'" + std::string(REDBLOOM_CLI_PATH) + "' --store 'file:" + dir_.path() +
                             "' rebuild r --file '" + fifo + "' & echo $!; wait $!; echo exit=$?",
                         {});
  const std::string pid = pipeline.ReadLine();
  ASSERT_NE(pid, "<none>");
  for (int i = 0; i < 200 && !std::filesystem::exists(temp); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(std::filesystem::exists(temp)) << "the rebuild never started";
  ASSERT_EQ(::kill(std::stoi(pid), SIGTERM), 0);
  EXPECT_EQ(pipeline.ReadLine(), "exit=" + std::to_string(128 + SIGTERM));
  pipeline.Stop();
  ::close(held);
  EXPECT_FALSE(std::filesystem::exists(temp)) << "the temporary filter was left";
  EXPECT_EQ(Run({"check", "r", "old"}).exit_code, 0) << "the old filter changed";
  auto again = Run({"rebuild", "r", "--file", WriteFile("new.txt", "new\n")});
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

// A Guava file with every bit set (2^28 of them, 32 MiB), for the signal
// tests: a part not written shows in bits_set.
std::string AllOnesGuava() {
  constexpr uint32_t kWords = 4u << 20;
  std::string guava = {'\x01',
                       '\x07',
                       static_cast<char>(kWords >> 24),
                       static_cast<char>(kWords >> 16),
                       static_cast<char>(kWords >> 8),
                       static_cast<char>(kWords)};
  guava.append(size_t{kWords} * 8, '\xff');
  return guava;
}

// Waits for child `pid` to exit or for `file` to appear, then sends it `sig`
// (if it still runs: *signalled); its wait status.
int SignalWhenFileAppears(pid_t pid, const std::string& file, int sig, bool* signalled = nullptr) {
  int status = 0;
  bool exited = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!(exited = ::waitpid(pid, &status, WNOHANG) == pid) && !std::filesystem::exists(file) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!exited) {
    ::kill(pid, sig);
    ::waitpid(pid, &status, 0);
  }
  if (signalled != nullptr) *signalled = !exited;
  return status;
}

// In a forked child about to run the CLI: stderr to `err_path`, and the
// stop signals at their default. A runner that ignores them (a job without
// job control) would pass them on ignored, and make the test no test. With
// `blocked`, they are blocked, as a parent's mask can pass them on.
void ChildStderrAndStops(const std::string& err_path, bool blocked = false) {
  const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(err, 2);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  sigset_t stops;
  sigemptyset(&stops);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
  ::sigprocmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &stops, nullptr);
}

// Starts program `path` with `args` (its argv, name first), its stderr to
// `err_path` and the stop signals at their default (`blocked`: blocked):
// its pid, or -1.
pid_t StartCommand(const std::string& path, std::vector<std::string> args,
                   const std::string& err_path, bool blocked = false) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ChildStderrAndStops(err_path, blocked);
    ::execv(path.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

// StartCommand for the CLI on the file: store at `dir` with `args`.
pid_t StartCli(const std::string& dir, const std::vector<std::string>& args,
               const std::string& err_path, bool blocked = false) {
  std::vector<std::string> all = {"redbloom", "--store", "file:" + dir};
  all.insert(all.end(), args.begin(), args.end());
  return StartCommand(REDBLOOM_CLI_PATH, std::move(all), err_path, blocked);
}

// A FIFO made at `path` and held open (read and write, so the open does not
// wait for a reader): its descriptor, or -1.
int HeldFifo(const std::string& path) {
  if (::mkfifo(path.c_str(), 0600) != 0) return -1;
  return ::open(path.c_str(), O_RDWR | O_CLOEXEC);
}

// Waits up to 10 s until whatever reads the FIFO held as `held` has taken
// all that was written to it; false if it did not.
bool WaitUntilRead(int held) {
  int queued = 1;
  for (int i = 0; i < 1000 && queued > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::ioctl(held, FIONREAD, &queued) != 0) return false;
  }
  return queued == 0;
}

// Waits up to 10 s for child `pid` to exit (its wait status in *status);
// kills it (SIGKILL) and returns false if it did not.
bool ExitsOrIsKilled(pid_t pid, int* status) {
  for (int i = 0; i < 1000; ++i) {
    if (::waitpid(pid, status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, status, 0);
  return false;
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// An add or a dedup stopped by a signal ends after the items in hand,
// answered and synced, and exits 128 + the signal. Killed outright, it left
// the adds it had answered unsynced, where a run syncs before it exits.
TEST_F(CliTest, AnAddStoppedBySignalSyncsWhatItAnswered) {
  Create("r");
  struct Case {
    std::string command, first, second, said;
  };
  for (const Case& c :
       {Case{"add", "1\ta", "1\tb", "add to r stopped by signal 15 after 2 items, synced"},
        Case{"dedup", "c", "d", "dedup into r stopped by signal 15 after 2 lines, synced"}}) {
    SCOPED_TRACE(c.command);
    const std::string fifo = dir_.path() + "/items-" + c.command;
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const int held = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(held, 0);
    ShellPipeline pipeline("'" + std::string(REDBLOOM_CLI_PATH) + "' --store 'file:" + dir_.path() +
                               "' " + c.command + " r --file '" + fifo + "' 2>'" + dir_.path() +
                               "/err' & echo $!; wait $!; echo exit=$?",
                           {});
    const std::string pid = pipeline.ReadLine();
    ASSERT_NE(pid, "<none>");
    const std::string items = c.command == "add" ? "a\nb\n" : "c\nd\n";
    ASSERT_EQ(::write(held, items.data(), items.size()), static_cast<ssize_t>(items.size()));
    EXPECT_EQ(pipeline.ReadLine(), c.first);
    EXPECT_EQ(pipeline.ReadLine(), c.second);
    ASSERT_EQ(::kill(std::stoi(pid), SIGTERM), 0);
    EXPECT_EQ(pipeline.ReadLine(), "exit=" + std::to_string(128 + SIGTERM));
    pipeline.Stop();
    ::close(held);
    const std::string err = FileText(dir_.path() + "/err");
    EXPECT_NE(err.find(c.said), std::string::npos) << err;
  }
  EXPECT_EQ(Run({"check", "r", "a", "b", "c", "d"}).exit_code, 0);
}

// A quiet add reads whole chunks (no answers to give as lines come): a stop
// while it waits for more adds the lines it has read, the chunk in hand, as
// the README says. It dropped them ("after 0 items").
TEST_F(CliTest, AQuietAddStoppedWhileItWaitsAddsTheLinesItRead) {
  Create("q");
  const std::string fifo = dir_.path() + "/quiet-items";
  const int held = HeldFifo(fifo);
  ASSERT_GE(held, 0);
  const std::string err_path = dir_.path() + "/err-quiet";
  const pid_t pid = StartCli(dir_.path(), {"add", "q", "--quiet", "--file", fifo}, err_path);
  ASSERT_GE(pid, 0);
  const std::string items = "q1\nq2\nq3-unended";
  ASSERT_EQ(::write(held, items.data(), items.size()), static_cast<ssize_t>(items.size()));
  ASSERT_TRUE(WaitUntilRead(held)) << "the CLI did not read its input";
  // At once: a signal that lands before the CLI waits again must not be
  // missed (it waited for input that never came; the review).
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  const bool exited = ExitsOrIsKilled(pid, &status);
  ::close(held);
  ASSERT_TRUE(exited) << "the stop was missed: the add went on waiting for input";
  const std::string err = FileText(err_path);
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << err;
  EXPECT_NE(err.find("add to q stopped by signal 15 after 2 items, synced"), std::string::npos)
      << err;
  EXPECT_EQ(Run({"check", "q", "q1", "q2"}).exit_code, 0);
  EXPECT_EQ(Run({"check", "q", "q3-unended"}).exit_code, 1);
}

// The stop signals inherited blocked (a parent's mask, which exec keeps) are
// heard all the same: an add waiting for input stopped by SIGTERM, synced
// (128 + 15), and a check ended by it. Both ran on until SIGKILL (an audit).
TEST_F(CliTest, StopSignalsInheritedBlockedAreHeard) {
  Create("b");
  for (const std::string command : {"add", "check"}) {
    SCOPED_TRACE(command);
    const std::string fifo = dir_.path() + "/blocked-" + command;
    const int held = HeldFifo(fifo);
    ASSERT_GE(held, 0);
    const std::string err_path = dir_.path() + "/err-blocked-" + command;
    const pid_t pid = StartCli(dir_.path(), {command, "b", "--quiet", "--file", fifo}, err_path,
                               /*blocked=*/true);
    ASSERT_GE(pid, 0);
    ASSERT_EQ(::write(held, "x\n", 2), 2);
    ASSERT_TRUE(WaitUntilRead(held)) << "the CLI did not read its input";
    ASSERT_EQ(::kill(pid, SIGTERM), 0);
    int status = 0;
    const bool exited = ExitsOrIsKilled(pid, &status);
    ::close(held);
    ASSERT_TRUE(exited) << "SIGTERM went unheard";
    const std::string err = FileText(err_path);
    if (command == "add") {
      ASSERT_TRUE(WIFEXITED(status)) << err;
      EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << err;
      EXPECT_NE(err.find("add to b stopped by signal 15 after 1 item, synced"), std::string::npos)
          << err;
    } else {
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status << " " << err;
    }
  }
  EXPECT_EQ(Run({"check", "b", "x"}).exit_code, 0);
}

// A create whose directory sync fails takes its file back only where no
// other process can have used it (the review: an add answered by another
// process while the create waited on its sync was lost with the file). strace
// delays the create's second fsync, the directory's, by 3 s and fails it;
// meanwhile another CLI adds to the new filter and exits, or holds it open.
TEST_F(CliTest, ACreateWhoseSyncFailsKeepsAFileAnotherProcessUsed) {
  for (const bool holds : {false, true}) {
    const std::string name = holds ? "held" : "used";
    SCOPED_TRACE(name);
    const std::string err_path = dir_.path() + "/err-create-" + name;
    // LeakSanitizer cannot run under ptrace: its check at exit aborts there.
    const char* asan = std::getenv("ASAN_OPTIONS");
    std::vector<std::string> all = {
        "/usr/bin/env",
        "ASAN_OPTIONS=" + std::string(asan ? asan : "") + ":detect_leaks=0",
        "/usr/bin/strace",
        "-f",
        "-o",
        "/dev/null",
        "-e",
        "trace=fsync",
        "-e",
        "inject=fsync:error=EIO:delay_enter=3000000:when=2",
        REDBLOOM_CLI_PATH,
        "--store",
        "file:" + dir_.path(),
        "create",
        name,
        "-n",
        "1000",
        "-p",
        "0.01"};
    const pid_t creator = StartCommand(all[0], all, err_path);
    ASSERT_GT(creator, 0);
    const std::string file = dir_.path() + "/" + name + ".rbf";
    for (int i = 0; i < 1000 && !std::filesystem::exists(file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    bool linked = std::filesystem::exists(file);
    pid_t holder = -1;
    int held = -1;
    if (linked && holds) {
      const std::string fifo = dir_.path() + "/hold-" + name;
      held = HeldFifo(fifo);
      holder = StartCli(dir_.path(), {"check", name, "--quiet", "--file", fifo},
                        dir_.path() + "/err-holder");
      // Open once it has read its first line (the filter is open by then).
      EXPECT_EQ(::write(held, "x\n", 2), 2);
      EXPECT_TRUE(WaitUntilRead(held));
    } else if (linked) {
      const CommandResult added = Run({"add", name, "answered"});
      EXPECT_EQ(added.exit_code, 0) << added.err;
    }
    int status = 0;
    ::waitpid(creator, &status, 0);
    if (holder > 0) {
      ::kill(holder, SIGKILL);
      ::waitpid(holder, nullptr, 0);
      ::close(held);
    }
    ASSERT_TRUE(linked) << "the create never linked its file: " << FileText(err_path);
    const std::string err = FileText(err_path);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status << " " << err;
    EXPECT_NE(err.find("cannot sync the directory"), std::string::npos) << err;
    EXPECT_NE(err.find(holds ? "stays (it may be in use" : "stays: another process added to it"),
              std::string::npos)
        << err;
    EXPECT_TRUE(std::filesystem::exists(file)) << "the file was taken back";
    if (!holds) {
      EXPECT_EQ(Run({"check", name, "answered"}).exit_code, 0) << "the answered add";
    }
  }
}

// A stop signal that comes while an add or a dedup is blocked writing its
// answers (a reader that stalled, its pipe full) interrupts that write: the
// run was stopped, and says so with 128 + N. It exited 3, "cannot write to
// stdout: Interrupted system call", and a script took a stop for an error.
TEST_F(CliTest, AStopWhileAnswersWaitOnAStalledReaderIsAStop) {
  Create("w");
  for (const std::string command : {"add", "dedup"}) {
    SCOPED_TRACE(command);
    int in[2], out[2];
    ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    // A one-page pipe that 16-byte answer lines fill exactly: the next
    // write blocks having written nothing, and the signal ends it EINTR.
    ASSERT_EQ(::fcntl(out[1], F_SETPIPE_SZ, 4096), 4096);
    const std::string err_path = dir_.path() + "/err-" + command;
    const std::string store = "file:" + dir_.path();
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ChildStderrAndStops(err_path);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::execl(REDBLOOM_CLI_PATH, "redbloom", "--store", store.c_str(), command.c_str(), "w",
              "--file", "-", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    // add answers "1\t" + 13 digits; dedup prints the 15-character line.
    const std::string prefix = command == "add" ? "1000000" : "200000000";
    const auto lines = [&](int from, int n) {
      std::string text;
      for (int i = from; i < from + n; ++i) text += prefix + std::to_string(100000 + i) + "\n";
      return text;
    };
    const std::string first = lines(0, 256), second = lines(256, 10);
    ASSERT_EQ(::write(in[1], first.data(), first.size()), static_cast<ssize_t>(first.size()));
    int queued = 0;
    for (int i = 0; i < 1000 && queued < 4096; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ASSERT_EQ(::ioctl(out[0], FIONREAD, &queued), 0);
    }
    ASSERT_EQ(queued, 4096) << "the first answers did not fill the pipe";
    ASSERT_EQ(::write(in[1], second.data(), second.size()), static_cast<ssize_t>(second.size()));
    // Blocked in write(2) on the full pipe.
    bool writing = false;
    for (int i = 0; i < 1000 && !writing; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      writing = FileText("/proc/" + std::to_string(pid) + "/syscall")
                    .starts_with(std::to_string(SYS_write) + " 0x1 ");
    }
    ASSERT_TRUE(writing) << "the CLI did not block writing its answers";
    ASSERT_EQ(::kill(pid, SIGTERM), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ::close(in[1]);
    ::close(out[0]);
    const std::string err = FileText(err_path);
    ASSERT_TRUE(WIFEXITED(status)) << err;
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << err;
    EXPECT_NE(err.find(command == "add" ? "add to w stopped by signal 15 after 266 items, synced"
                                        : "dedup into w stopped by signal 15 after 266 lines, "
                                          "synced"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("may not have been written"), std::string::npos) << err;
    std::vector<std::string> check = {"check", "w"};
    for (int i : {0, 255, 256, 265}) {
      check.push_back(prefix + std::to_string(100000 + i));
    }
    EXPECT_EQ(Run(check).exit_code, 0) << "an item added before the stop is absent";
  }
}

// A rebuild whose temporary filter goes while the name stays (its file
// removed by hand) says the old filter is unchanged, as it is: the review
// found a not_found of the temporary read as the filter dropped meanwhile.
TEST_F(CliTest, ARebuildWhoseTemporaryAloneGoesSaysTheOldFilterIsUnchanged) {
  Create("r");
  ASSERT_EQ(Run({"add", "-q", "r", "old"}).exit_code, 0);
  const std::string fifo = dir_.path() + "/rebuild-items";
  const int held = HeldFifo(fifo);
  ASSERT_GE(held, 0);
  const std::string err_path = dir_.path() + "/err-rebuild";
  const pid_t pid = StartCli(dir_.path(), {"rebuild", "r", "--file", fifo}, err_path);
  ASSERT_GE(pid, 0);
  const std::string temp = dir_.path() + "/" + TemporaryName("r") + ".rbf";
  for (int i = 0; i < 1000 && !std::filesystem::exists(temp); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(temp));
  ASSERT_TRUE(std::filesystem::remove(temp));
  ASSERT_EQ(::write(held, "new\n", 4), 4);
  ::close(held);  // the rebuild's input ends
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const std::string err = FileText(err_path);
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 4) << err;
  EXPECT_NE(err.find("the old filter is unchanged"), std::string::npos) << err;
  EXPECT_EQ(Run({"check", "r", "old"}).exit_code, 0) << "the old filter changed";
}

// An import stopped by SIGINT, SIGTERM or SIGHUP drops the filter it made,
// as it does on any failure, and exits 128 + the signal. Stopped while it
// wrote, it left the filter holding part of the dump, whose other items
// read absent (an audit: SIGINT 0.15 s in, items_added 0, every item
// absent). The signal comes the moment the filter appears; an import that
// is done before it lands is whole: never a filter with part of its bits.
TEST_F(CliTest, AnImportStoppedBySignalLeavesNoPartialFilter) {
  // Every bit set, exported as a dump: a part not imported shows in bits_set.
  const std::string guava_path = WriteFile("ones.guava", AllOnesGuava());
  ASSERT_EQ(Run({"import", "ones", "--format", "guava", "--file", guava_path}).exit_code, 0);
  const std::string dump = dir_.path() + "/ones.dump";
  ASSERT_EQ(Run({"export", "ones", "--format", "redbloom", "--file", dump}).exit_code, 0);
  ASSERT_EQ(Run({"drop", "ones"}).exit_code, 0);
  std::filesystem::remove(guava_path);
  const std::string store = "file:" + dir_.path();
  const std::string err_path = dir_.path() + "/err";
  int stopped = 0;
  int stopped_piped = 0;
  // Rounds 4 and 5 read the dump from a pipe, which the import keeps in
  // memory to read it twice: its second pass, the writing, never looked for
  // the signal, and the import completed (exit 0) with the signal taken.
  for (int round = 0; round < 6; ++round) {
    const int sig = round % 2 == 0 ? SIGINT : SIGTERM;
    const bool piped = round >= 4;
    const std::string name = "x" + std::to_string(round);
    const std::string file = dir_.path() + "/" + name + ".rbf";
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ChildStderrAndStops(err_path);
      if (piped) {
        int fds[2];
        if (::pipe(fds) != 0) ::_exit(126);
        if (::fork() == 0) {  // the writer ends at the dump's end, or with the pipe
          ::close(fds[0]);
          const int in = ::open(dump.c_str(), O_RDONLY);
          char buf[1 << 16];
          ssize_t n = 0;
          while ((n = ::read(in, buf, sizeof(buf))) > 0) {
            for (ssize_t done = 0; done < n;) {
              const ssize_t w = ::write(fds[1], buf + done, static_cast<size_t>(n - done));
              if (w <= 0) ::_exit(1);
              done += w;
            }
          }
          ::_exit(0);
        }
        ::close(fds[1]);
        ::dup2(fds[0], 0);
        ::close(fds[0]);
      }
      ::execl(REDBLOOM_CLI_PATH, "redbloom", "--store", store.c_str(), "import", name.c_str(),
              "--format", "redbloom", "--file", piped ? "-" : dump.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const int status = SignalWhenFileAppears(pid, file, sig);
    const std::string err = FileText(err_path);
    const bool exists = std::filesystem::exists(file);
    if (exists) {
      auto info = Run({"info", name, "--json"});
      ASSERT_EQ(info.exit_code, 0) << info.err;
      const auto j = nlohmann::json::parse(info.out);
      EXPECT_EQ(j["bits_set"], j["bits"])
          << "round " << round << ": the filter holds part of the dump (status " << status << ")";
    }
    ASSERT_TRUE(WIFEXITED(status))
        << "round " << round << ": killed by signal " << WTERMSIG(status);
    if (WEXITSTATUS(status) == 0) {
      EXPECT_TRUE(exists) << "round " << round << ": " << err;
      EXPECT_EQ(Run({"drop", name}).exit_code, 0);  // 32 MiB each
    } else {
      ++stopped;
      stopped_piped += piped ? 1 : 0;
      EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << "round " << round << ": " << err;
      EXPECT_NE(err.find("stopped by signal " + std::to_string(sig) +
                         "; nothing was imported, and no filter " + name + " is left"),
                std::string::npos)
          << err;
      EXPECT_FALSE(std::filesystem::exists(file)) << "round " << round << ": " << err;
      EXPECT_EQ(Run({"info", name}).exit_code, 4) << "round " << round;
    }
  }
  RecordProperty("stopped", stopped);  // how many rounds the signal stopped
  // The signal comes as the filter is made, a 32 MiB write ahead of its end.
  EXPECT_GE(stopped_piped, 1) << "no import from a pipe was stopped";
}

// A merge stopped by SIGINT or SIGTERM completes first: it has read every
// source by the time it makes its destination, and writes for a moment.
// Killed as it wrote (it caught no signal), it left a new destination
// holding part of the sources' bits, whose other items read absent (an
// audit: 252,000 of 3 million). The signal comes the moment the
// destination appears, a 32 MiB write ahead of the merge's end.
TEST_F(CliTest, AMergeStoppedBySignalCompletesFirst) {
  const std::string guava_path = WriteFile("ones.guava", AllOnesGuava());
  ASSERT_EQ(Run({"import", "ones", "--format", "guava", "--file", guava_path}).exit_code, 0);
  std::filesystem::remove(guava_path);
  const std::string store = "file:" + dir_.path();
  const std::string err_path = dir_.path() + "/err";
  for (int round = 0; round < 2; ++round) {
    const int sig = round == 0 ? SIGINT : SIGTERM;
    const std::string name = "m" + std::to_string(round);
    const std::string file = dir_.path() + "/" + name + ".rbf";
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ChildStderrAndStops(err_path);
      ::execl(REDBLOOM_CLI_PATH, "redbloom", "--store", store.c_str(), "merge", name.c_str(),
              "ones", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    bool signalled = false;
    const int status = SignalWhenFileAppears(pid, file, sig, &signalled);
    const std::string err = FileText(err_path);
    ASSERT_TRUE(WIFEXITED(status))
        << "round " << round << ": killed by signal " << WTERMSIG(status) << " as it merged";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "round " << round << ": " << err;
    auto info = Run({"info", name, "--json"});
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const auto j = nlohmann::json::parse(info.out);
    EXPECT_EQ(j["bits_set"], j["bits"]) << "round " << round << ": the merge is partial";
    if (signalled) {
      EXPECT_NE(err.find("signal " + std::to_string(sig) +
                         " came during the merge, which completed, and stands"),
                std::string::npos)
          << err;
    }
  }
}

// A rebuild builds its bits in memory; no memory for them is
// resource_exhausted (exit 3) with the old filter kept and the temporary
// dropped. It escaped as std::bad_alloc: "internal error", exit 70.
TEST_F(CliTest, ARebuildWithoutMemoryForItsBitsSaysSo) {
  if (testing::kAddressSanitizer || testing::kThreadSanitizer) {
    GTEST_SKIP() << "a sanitizer's shadow memory needs more address space than the limit allows";
  }
  Create("r");
  ASSERT_EQ(Run({"add", "-q", "r", "old"}).exit_code, 0);
  // 300 million items at 1%: 359 MB of bits, mapped from the temporary file,
  // and as much again to build in, which 600 MiB of address space refuses.
  auto r = RunCommand({"/usr/bin/prlimit", "--as=629145600", "--core=0", "--", REDBLOOM_CLI_PATH,
                       "--store", "file:" + dir_.path(), "rebuild", "r", "--capacity", "300000000",
                       "--file", WriteFile("new.txt", "new\n")});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no memory for"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the old filter is unchanged"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/" + TemporaryName("r") + ".rbf"));
  EXPECT_EQ(Run({"check", "r", "old"}).exit_code, 0) << "the old filter changed";
  EXPECT_EQ(Run({"check", "r", "new"}).exit_code, 1);
}

// A filter made but then not mappable here (no address space) is dropped
// again, and the error is resource_exhausted: left behind, the empty filter
// answered "absent" to every reader (create, import, merge, dedup), and the
// error was unavailable (503, "safe to retry", for ever).
TEST_F(CliTest, AFilterMadeButNotMappableIsNotLeftBehind) {
  if (testing::kAddressSanitizer || testing::kThreadSanitizer) {
    GTEST_SKIP() << "a sanitizer's shadow memory needs more address space than the limit allows";
  }
  const auto limited = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/prlimit", "--as=314572800", "--core=0", "--",
                               REDBLOOM_CLI_PATH, "--store", "file:" + dir_.path()});
    return RunCommand(args);
  };
  // 300 million items at 1%: 359 MB, more than 300 MiB of address space maps.
  auto create = limited({"create", "big", "--capacity", "300000000", "--error", "0.01"});
  EXPECT_EQ(create.exit_code, 3) << create.err;
  EXPECT_NE(create.err.find("resource_exhausted"), std::string::npos) << create.err;
  EXPECT_NE(create.err.find("dropped again"), std::string::npos) << create.err;
  EXPECT_EQ(Lines(Run({"list"}).out), std::vector<std::string>{});
  // An import that creates its filter: a dump of an empty filter is small.
  Create("big", {}, "300000000");
  const std::string dump = dir_.path() + "/big.dump";
  ASSERT_EQ(Run({"export", "big", "--format", "redbloom", "-f", dump}).exit_code, 0);
  ASSERT_EQ(Run({"drop", "big"}).exit_code, 0);
  auto import = limited({"import", "copy", "--format", "redbloom", "-f", dump});
  EXPECT_EQ(import.exit_code, 3) << import.err;
  EXPECT_NE(import.err.find("dropped again"), std::string::npos) << import.err;
  EXPECT_EQ(Lines(Run({"list"}).out), std::vector<std::string>{});
}

// A command that runs out of memory says so, resource_exhausted (exit 3),
// not "internal error: std::bad_alloc" (a bug, by the README's codes).
TEST_F(CliTest, OutOfMemoryIsResourceExhausted) {
  if (testing::kAddressSanitizer || testing::kThreadSanitizer) {
    GTEST_SKIP() << "a sanitizer's shadow memory needs more address space than the limit allows";
  }
  Create("g", {}, "100000000");  // 124 MB, whose bits merge holds besides the mapping
  ASSERT_EQ(Run({"add", "-q", "g", "x"}).exit_code, 0);
  auto merge =
      RunCommand({"/usr/bin/prlimit", "--as=209715200", "--core=0", "--", REDBLOOM_CLI_PATH,
                  "--store", "file:" + dir_.path(), "merge", "m2", "g"});
  EXPECT_EQ(merge.exit_code, 3) << merge.err;
  EXPECT_NE(merge.err.find("out of memory"), std::string::npos) << merge.err;
  EXPECT_NE(merge.err.find("[resource_exhausted]"), std::string::npos) << merge.err;
  EXPECT_EQ(merge.err.find("internal"), std::string::npos) << merge.err;
  EXPECT_EQ(Lines(Run({"list"}).out), std::vector<std::string>{"g"});
}

// mem: keeps filters in the process; the CLI says so, once per run.
TEST_F(CliTest, MemStoreWarnsThatNothingPersists) {
  auto create =
      RunCommand({REDBLOOM_CLI_PATH, "--store", "mem:", "create", "f", "-n", "10", "-p", "0.1"});
  EXPECT_EQ(create.exit_code, 0) << create.err;
  EXPECT_EQ(Count(create.err, "redbloom: warning: store mem:"), 1u) << create.err;
  EXPECT_NE(create.err.find("nothing persists past this process"), std::string::npos) << create.err;
  auto env = RunCommand({REDBLOOM_CLI_PATH, "list"}, "", {"REDBLOOM_STORE=mem:"});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  EXPECT_EQ(Count(env.err, "warning"), 1u) << env.err;
  EXPECT_EQ(Run({"create", "g", "-n", "10", "-p", "0.1"}).err.find("warning"), std::string::npos);
}

// A name that starts with "-" is given after "--"; a command whose only
// positional is the name still takes its options after it.
TEST_F(CliTest, NamesStartingWithADashWorkAfterDoubleDash) {
  auto create = Run({"create", "--", "-x", "-n", "10", "-p", "0.1"});
  ASSERT_EQ(create.exit_code, 0) << create.err;
  EXPECT_EQ(Lines(Run({"list"}).out), (std::vector<std::string>{"-x"}));
  auto add = Run({"add", "--", "-x", "a", "-b"});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(Lines(add.out), (std::vector<std::string>{"1\ta", "1\t-b"}));
  auto check = Run({"check", "-q", "--", "-x", "a", "-b"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(Run({"check", "-q", "--", "-x", "zz"}).exit_code, 1);
  auto info = Run({"info", "--", "-x", "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(nlohmann::json::parse(info.out)["name"], "-x");
  auto dedup = Run({"dedup", "--", "-x"}, "a\nc\n");
  EXPECT_EQ(Lines(dedup.out), (std::vector<std::string>{"c"})) << dedup.err;
  EXPECT_EQ(Run({"create", "-n", "10", "-p", "0.1", "--", "-y"}).exit_code, 0);
  EXPECT_EQ(Run({"drop", "--", "-x"}).exit_code, 0);
  EXPECT_EQ(Lines(Run({"list"}).out), (std::vector<std::string>{"-y"}));
  EXPECT_EQ(Run({"create", "--", "-z", "extra", "-n", "10", "-p", "0.1"}).exit_code, 2);
}

// Items starting with "-" also go after "--" when the name and other items
// come before it (CLI11 2.1 handed such a "--" back to the top command, which
// rejected "-b"), and options before "--" still count.
TEST_F(CliTest, ItemsStartingWithADashWorkAfterDoubleDashLaterOn) {
  Create("ints", {"--encoding", "int64"});
  auto add = Run({"add", "ints", "1", "--", "-3"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(Lines(add.out), (std::vector<std::string>{"1\t1", "1\t-3"}));
  EXPECT_EQ(Run({"add", "ints", "-q", "2", "--", "-4"}).out, "");
  auto check = Run({"check", "ints", "--json", "1", "2", "--", "-3", "-4"});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(nlohmann::json::parse(check.out)["present"], 4);
  EXPECT_EQ(Run({"check", "ints", "1", "--", "-5"}).exit_code, 1);
  auto offsets = Run({"offsets", "-n", "10", "-p", "0.1", "a", "--", "-b"});
  EXPECT_EQ(offsets.exit_code, 0) << offsets.err;
  EXPECT_EQ(Lines(offsets.out).size(), 2u) << offsets.out;
  // The hidden positional that keeps "--" in the command stays out of help.
  const std::string help = Run({"check", "--help"}).out;
  EXPECT_NE(help.find("NAME [ITEM...]\n"), std::string::npos) << help;
  EXPECT_EQ(help.find("[]"), std::string::npos) << help;
}

// --json: one document, per item {"item", "new"|"present"|"removed"}, with
// counts; the exit codes are those of the text output.
TEST_F(CliTest, AddCheckAndRemoveAsJson) {
  Create("f", {"--counting"});
  auto add = Run({"add", "f", "--json", "a", "b\t\"q\"", "a", ""});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  auto j = nlohmann::json::parse(add.out);
  EXPECT_EQ(j, nlohmann::json::parse(R"({"filter":"f","items":[
      {"item":"a","new":true},{"item":"b\t\"q\"","new":true},{"item":"a","new":false},
      {"item":"","new":true}],"count":4,"new":3})"))
      << add.out;
  auto check = Run({"check", "f", "--json", "-f", "-"}, "a\nzz\n");
  EXPECT_EQ(check.exit_code, 1) << check.err;
  EXPECT_EQ(nlohmann::json::parse(check.out), nlohmann::json::parse(R"({"filter":"f","items":[
      {"item":"a","present":true},{"item":"zz","present":false}],
      "count":2,"present":1,"absent":1})"))
      << check.out;
  auto all = Run({"check", "f", "--json", "a"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(nlohmann::json::parse(all.out)["present"], 1);
  auto remove = Run({"remove", "f", "--json", "a", "zz"});
  EXPECT_EQ(remove.exit_code, 1) << remove.err;
  EXPECT_EQ(nlohmann::json::parse(remove.out), nlohmann::json::parse(R"({"filter":"f","items":[
      {"item":"a","removed":true},{"item":"zz","removed":false}],
      "count":2,"removed":1,"not_removed":1})"))
      << remove.out;
  EXPECT_EQ(Run({"check", "f", "--json", "--quiet", "a"}).exit_code, 2);
  auto missing = Run({"check", "nope", "--json", "a"});
  EXPECT_EQ(missing.exit_code, 4);
  EXPECT_EQ(missing.out, "");
}

// A long --json run streams; an error part way still ends one document, with
// the items done before it and the error. Its chunks hold up to 65,536
// lines, fewer when the pipe had no more ready (a loaded host's writer: the
// first was 12,773 lines once), so the items done are some first lines.
TEST_F(CliTest, JsonOutputStreamsAndEndsWithTheError) {
  Create("ints", {"--encoding", "int32"}, "100000");
  std::string text;
  for (int i = 1; i <= 70002; ++i) text += (i == 70001 ? "x" : "") + std::to_string(i) + "\n";
  auto r = Run({"add", "ints", "--json", "-f", "-"}, text);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const size_t done = j["items"].size();
  EXPECT_EQ(j["count"], done);
  EXPECT_GE(done, 1u);
  EXPECT_LE(done, 70000u);
  // "new" may be false for a few: a false positive of the filter.
  for (size_t i = 0; i < done; ++i) ASSERT_EQ(j["items"][i]["item"], std::to_string(i + 1)) << i;
  EXPECT_EQ(j["error"]["code"], "invalid_argument");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("line 70001 of stdin"), std::string::npos)
      << j["error"];
}

// --version prints the version CMake's project() declares, and the commit
// built from a git checkout (the docs name builds by date and commit).
TEST_F(CliTest, VersionIsTheProjectVersion) {
  std::ifstream cmake(std::string(REDBLOOM_SOURCE_DIR) + "/CMakeLists.txt");
  const std::string text{std::istreambuf_iterator<char>(cmake), {}};
  // Plain string search: <regex> alone doubled this file's compile time.
  const std::string key = "project(redbloom VERSION ";
  const size_t at = text.find(key);
  ASSERT_NE(at, std::string::npos);
  const size_t end = text.find_first_not_of("0123456789.", at + key.size());
  const std::string version = text.substr(at + key.size(), end - at - key.size());
  ASSERT_FALSE(version.empty());
  auto r = RunCommand({REDBLOOM_CLI_PATH, "--version"});
  EXPECT_EQ(r.exit_code, 0);
  if (!std::filesystem::exists(std::string(REDBLOOM_SOURCE_DIR) + "/.git")) {
    EXPECT_EQ(r.out, "redbloom " + version + "\n");
    return;
  }
  // "redbloom V (HASH YYYY-MM-DD[ modified])", HASH a commit of this
  // repository (the build's, which a commit since the build may follow).
  const std::string head = "redbloom " + version + " (";
  ASSERT_TRUE(r.out.starts_with(head)) << r.out;
  const std::string id = r.out.substr(head.size(), r.out.find(')') - head.size());
  const std::string hash = id.substr(0, id.find(' '));
  ASSERT_GE(hash.size(), 7u) << r.out;
  EXPECT_EQ(hash.find_first_not_of("0123456789abcdef"), std::string::npos) << r.out;
  const std::string date = id.substr(hash.size() + 1, 10);
  EXPECT_EQ(date.size(), 10u) << r.out;
  EXPECT_EQ(date.find_first_not_of("0123456789-"), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.ends_with(date + ")\n") || r.out.ends_with(date + " modified)\n")) << r.out;
  auto known = RunCommand(
      {"/bin/sh", "-c", "git -C \"$0\" cat-file -e \"$1^{commit}\"", REDBLOOM_SOURCE_DIR, hash});
  EXPECT_EQ(known.exit_code, 0) << hash << " is no commit of " << REDBLOOM_SOURCE_DIR;
}

}  // namespace
}  // namespace redbloom
