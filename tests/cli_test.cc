// The CLI's text interface is a contract: output lines, stderr, exit codes.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "exit_codes.h"
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

  testing::TempDir dir_;
};

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
  EXPECT_EQ(Lines(Run({"list"}).out), (std::vector<std::string>{"f"}));
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
  EXPECT_EQ(Run({"offsets", "--capacity", "100", "--error", "0.01", "--encoding", "int32", "x"})
                .exit_code,
            2);
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
}

TEST_F(CliTest, StoreDefaultsToTheEnvironment) {
  auto create = RunCommand({REDBLOOM_CLI_PATH, "create", "e", "-n", "10", "-p", "0.1"}, "",
                           {"REDBLOOM_STORE=file:" + dir_.path()});
  ASSERT_EQ(create.exit_code, 0) << create.err;
  EXPECT_EQ(Lines(Run({"list"}).out), (std::vector<std::string>{"e"}));
}

}  // namespace
}  // namespace redbloom
