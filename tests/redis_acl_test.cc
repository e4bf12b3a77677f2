// The README's ACL rules, run as written: a real redis-server gets the
// reader and writer users exactly as the README defines them, and every CLI
// command runs as each. If redbloom starts using a command the rules lack,
// or the README's rules drift from the code, this fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.h"
#include "test_util.h"

namespace redbloom {
namespace {

// The arguments of the `ACL SETUSER` line in the code block after
// "<!-- acl:ROLE -->" in README.md, with the password placeholder replaced.
std::vector<std::string> ReadmeAclRule(const std::string& role, const std::string& password) {
  std::ifstream in(std::string(REDBLOOM_SOURCE_DIR) + "/README.md");
  std::string line;
  bool marked = false;
  while (std::getline(in, line)) {
    if (line == "<!-- acl:" + role + " -->") marked = true;
    if (marked && line.starts_with("ACL SETUSER ")) {
      std::istringstream words(line);
      std::vector<std::string> args;
      for (std::string w; words >> w;) {
        if (w.starts_with(">")) w = ">" + password;
        args.push_back(w);
      }
      return args;
    }
  }
  ADD_FAILURE() << "README.md has no ACL SETUSER line after <!-- acl:" << role << " -->";
  return {};
}

class RedisAclTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::RedisServer();
    server_->Start();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    server_->Cli({"FLUSHALL"});
    AddUser("reader", "rpw");
    AddUser("writer", "wpw");
  }

  // Defines the README's user for `role`, named as the README names it.
  void AddUser(const std::string& role, const std::string& password) {
    std::vector<std::string> rule = ReadmeAclRule(role, password);
    ASSERT_GE(rule.size(), 4u);
    user_[role] = rule[2];
    server_->Cli({"ACL", "DELUSER", rule[2]});
    rule.insert(rule.begin() + 3, "reset");  // start from no permissions at all
    EXPECT_EQ(server_->Cli(rule), "OK\n");
  }

  std::string Url(const std::string& role, const std::string& password) {
    return "redis://" + user_[role] + ":" + password +
           "@127.0.0.1:" + std::to_string(server_->port());
  }

  // The README's writer less one permission (`command`, e.g. "+type"), as
  // user "writer-less"; its URL, or "" if the rule could not be made.
  std::string WriterWithout(const std::string& command) {
    std::vector<std::string> rule = ReadmeAclRule("writer", "lpw");
    if (rule.size() < 4) return "";
    rule[2] = "writer-less";
    std::erase(rule, command);
    rule.insert(rule.begin() + 3, "reset");
    server_->Cli({"ACL", "DELUSER", rule[2]});
    if (server_->Cli(rule) != "OK\n") return "";
    return "redis://writer-less:lpw@127.0.0.1:" + std::to_string(server_->port());
  }

  testing::CommandResult Run(const std::string& url, std::vector<std::string> args,
                             const std::string& input = "") {
    args.insert(args.begin(), {REDBLOOM_CLI_PATH, "--store", url});
    return testing::RunCommand(args, input);
  }

  static inline testing::RedisServer* server_ = nullptr;
  std::map<std::string, std::string> user_;
  testing::TempDir dir_;
};

// A create of a name with a brace but no hash tag probes one key of the
// old layout, in another slot: a user whose key patterns leave that key
// out still creates, adds and checks (the refused probe finds no old
// filter), as before the probe existed.
TEST_F(RedisAclTest, ABracedNameIsServedToAUserWhoseKeysLeaveOutTheOldLayout) {
  std::vector<std::string> rule = ReadmeAclRule("writer", "kpw");
  ASSERT_GE(rule.size(), 4u);
  rule[2] = "writer-keys";
  ASSERT_EQ(std::count(rule.begin(), rule.end(), "~*"), 1);
  std::replace(rule.begin(), rule.end(), std::string("~*"), std::string("~a{b"));
  rule.push_back("~{rb*");
  rule.insert(rule.begin() + 3, "reset");
  server_->Cli({"ACL", "DELUSER", rule[2]});
  ASSERT_EQ(server_->Cli(rule), "OK\n");
  const std::string url = "redis://writer-keys:kpw@127.0.0.1:" + std::to_string(server_->port());
  auto r = Run(url, {"create", "--", "a{b", "-n", "1000", "-p", "0.01"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Run(url, {"add", "--", "a{b", "x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Run(url, {"check", "--", "a{b", "x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Run(url, {"check", "--", "a{b", "never-added"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

TEST_F(RedisAclTest, WriterRunsEveryCommand) {
  const std::string w = Url("writer", "wpw");
  auto ok = [&](std::vector<std::string> args, const std::string& input = "") {
    auto r = Run(w, args, input);
    EXPECT_EQ(r.exit_code, 0) << args[0] << " " << args[1] << ": " << r.err;
    return r;
  };
  std::string many;
  for (int i = 0; i < 300; ++i) many += "item-" + std::to_string(i) + "\n";
  ok({"create", "plain", "-n", "1000", "-p", "0.01", "--strategy", "guava64"});
  ok({"create", "rsn", "-n", "1000", "-p", "0.01", "--strategy", "redisson"});
  ok({"create", "counts", "-n", "1000", "-p", "0.01", "--counting"});
  ok({"create", "grows", "-n", "100", "-p", "0.01", "--scaling"});
  ok({"create", "recent", "-n", "1000", "-p", "0.01", "--window", "1h", "--slices", "6"});
  ok({"create", "brief", "-n", "1000", "-p", "0.01", "--ttl", "1h"});
  ok({"create", "spread", "-n", "1000", "-p", "0.01", "--shards", "3"});
  for (const char* f : {"plain", "rsn", "counts", "grows", "recent", "brief", "spread"}) {
    ok({"add", f, "--quiet", "--file", "-"}, many);
    ok({"add", f, "one-more"});
    ok({"check", f, "--quiet", "--file", "-"}, many);
    ok({"info", f});
  }
  ok({"remove", "counts", "item-1"});
  ok({"load", "plain", "--file", "-"}, many);
  ok({"load", "counts", "--file", "-"}, many);
  for (const char* format : {"redbloom", "guava"}) {
    const std::string path = dir_.path() + "/" + format;
    ok({"export", "plain", "--format", format, "--file", path});
    ok({"import", std::string("from-") + format, "--format", format, "--file", path});
  }
  ok({"merge", "merged", "plain", "from-redbloom"});
  ok({"dedup", "plain"}, "item-1\nfresh\n");
  ok({"rebuild", "plain", "--file", "-", "-n", "2000", "-p", "0.01"}, many);
  server_->Cli({"SETBIT", "javas", "7", "1"});
  ok({"attach", "javas", "-n", "1000", "-p", "0.01", "--strategy", "seed"});
  EXPECT_EQ(testing::Lines(ok({"list"}).out).size(), 11u);
  for (const char* f :
       {"plain", "rsn", "counts", "grows", "recent", "brief", "spread", "javas", "merged"}) {
    ok({"drop", f});
  }
}

// The add's commit script once called TYPE, which only it used: a writer
// without +type passed the guard, whose RENAME moved the bitmap to the
// scratch key, then failed the commit ("internal"), and its next add's guard
// deleted the bitmap left there (an audit: 5000 of 5000 items lost). The
// commit needs nothing the guard does not, and a writer without +type adds.
TEST_F(RedisAclTest, AWriterWithoutTypeAddsAndLosesNothing) {
  const std::string w = WriterWithout("+type");
  ASSERT_FALSE(w.empty());
  const std::string admin = "redis://127.0.0.1:" + std::to_string(server_->port());
  std::string before, batch1, batch2;
  for (int i = 0; i < 2000; ++i) before += "before-" + std::to_string(i) + "\n";
  for (int i = 0; i < 40; ++i) batch1 += "one-" + std::to_string(i) + "\n";
  for (int i = 0; i < 40; ++i) batch2 += "two-" + std::to_string(i) + "\n";
  for (const std::string kind : {"", "--counting"}) {
    std::vector<std::string> create = {"create", "typeless", "-n", "10000", "-p", "0.01"};
    if (!kind.empty()) create.push_back(kind);
    ASSERT_EQ(Run(admin, create).exit_code, 0);
    ASSERT_EQ(Run(admin, {"add", "typeless", "--quiet", "--file", "-"}, before).exit_code, 0);
    for (const std::string& batch : {batch1, batch2}) {
      const auto r = Run(w, {"add", "typeless", "--quiet", "--file", "-"}, batch);
      EXPECT_EQ(r.exit_code, 0) << kind << ": " << r.err;
    }
    const auto check = Run(admin, {"check", "typeless", "--file", "-"}, before + batch1 + batch2);
    EXPECT_EQ(check.exit_code, 0) << kind << ": every item present; " << check.err;
    EXPECT_EQ(testing::Lines(check.out).size(), 2080u) << kind;
    ASSERT_EQ(Run(admin, {"drop", "typeless"}).exit_code, 0);
  }
}

// A permission missing at EXEC (a writer without +exec) was reported as a
// bug: 500 "internal", exit 5, with the server's EXECABORT text. It is the
// same "permission denied" (exit 3, HTTP 503) as any other missing command.
TEST_F(RedisAclTest, APermissionMissingAtExecIsPermissionDenied) {
  const std::string w = WriterWithout("+exec");
  ASSERT_FALSE(w.empty());
  const std::string admin = "redis://127.0.0.1:" + std::to_string(server_->port());
  ASSERT_EQ(Run(admin, {"create", "noexec", "-n", "1000", "-p", "0.01"}).exit_code, 0);
  const auto r = Run(w, {"check", "noexec", "x"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  // The reason, for scripts, in the error's tag and in --json.
  EXPECT_NE(r.err.find("[unavailable: permission_denied]"), std::string::npos) << r.err;
  const auto json = Run(w, {"check", "noexec", "x", "--json"});
  EXPECT_EQ(json.exit_code, 3) << json.err;
  EXPECT_NE(json.out.find(R"("code":"unavailable","reason":"permission_denied")"),
            std::string::npos)
      << json.out;
}

TEST_F(RedisAclTest, ReaderReadsAndCannotWrite) {
  const std::string w = Url("writer", "wpw");
  ASSERT_EQ(Run(w, {"create", "orders", "-n", "1000", "-p", "0.01"}).exit_code, 0);
  // guava64 checks read with BITFIELD_RO, block checks (the default) with
  // GETRANGE: both are covered.
  ASSERT_EQ(
      Run(w, {"create", "grows", "-n", "10", "-p", "0.01", "--scaling", "--strategy", "guava64"})
          .exit_code,
      0);
  ASSERT_EQ(Run(w, {"add", "orders", "ORD-1", "ORD-2"}).exit_code, 0);
  ASSERT_EQ(
      Run(w, {"add", "grows", "--quiet", "--file", "-"}, "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n")
          .exit_code,
      0);

  const std::string r = Url("reader", "rpw");
  auto check = Run(r, {"check", "orders", "ORD-1", "ORD-404"});
  EXPECT_EQ(check.exit_code, 1) << check.err;
  EXPECT_EQ(testing::Lines(check.out), (std::vector<std::string>{"1\tORD-1", "0\tORD-404"}));
  EXPECT_EQ(Run(r, {"check", "grows", "a", "l"}).exit_code, 0) << "every layer is read";
  auto info = Run(r, {"info", "orders"});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  auto list = Run(r, {"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(testing::Lines(list.out), (std::vector<std::string>{"grows", "orders"}));
  auto exported =
      Run(r, {"export", "orders", "--format", "redbloom", "--file", dir_.path() + "/d"});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;

  // Writes are refused by Redis, and said so: exit 3, never a silent no-op.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"add", "orders", "ORD-3"},
        std::vector<std::string>{"create", "other", "-n", "10", "-p", "0.1"},
        std::vector<std::string>{"drop", "orders"}}) {
    auto denied = Run(r, args);
    EXPECT_EQ(denied.exit_code, 3) << args[0];
    EXPECT_NE(denied.err.find("permission denied"), std::string::npos) << denied.err;
  }
  EXPECT_EQ(testing::Lines(Run(w, {"check", "orders", "ORD-3"}).out),
            (std::vector<std::string>{"0\tORD-3"}));
}

// A window slice's key expires on the server; the listing that finds it
// gone forgets it with a script that writes, which a reader's cannot. That
// is housekeeping: the reader's info and export worked only until a slice
// had expired and no writer had listed since.
TEST_F(RedisAclTest, ReaderReadsAWindowWhoseSlicesExpired) {
  const std::string w = Url("writer", "wpw"), r = Url("reader", "rpw");
  ASSERT_EQ(
      Run(w, {"create", "recent", "-n", "100", "-p", "0.01", "--window", "600ms", "--slices", "3"})
          .exit_code,
      0);
  ASSERT_EQ(Run(w, {"add", "recent", "x"}).exit_code, 0);
  const std::string slice = server_->Cli({"HKEYS", "{recent}/parts"});
  ASSERT_FALSE(slice.empty());
  const std::string key = "{recent}/part/" + slice.substr(0, slice.find('\n'));
  for (int i = 0; i < 100 && server_->Cli({"EXISTS", key}) != "0\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(server_->Cli({"EXISTS", key}), "0\n") << key << " never expired";
  // A listing forgets an expired slice a window (600 ms) after its expiry.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  auto info = Run(r, {"info", "recent"});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  auto exported =
      Run(r, {"export", "recent", "--format", "redbloom", "--file", dir_.path() + "/d"});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(server_->Cli({"EXISTS", "{recent}/parts"}), "1\n") << "the reader pruned the list";
  EXPECT_EQ(Run(w, {"info", "recent"}).exit_code, 0);
  EXPECT_EQ(server_->Cli({"EXISTS", "{recent}/parts"}), "0\n") << "the writer's listing prunes";
}

// Redis does not roll a script back when a command in it fails: a writer
// missing one of the README's permissions made half a filter. A create
// without +pexpireat left one that never expired (and a retry answered
// "exists, same parameters"), an add to a window without +hsetnx an unlisted
// slice that was data_loss for every client until it expired, a create
// without +hset a bare bitmap no command would drop. The scripts now ask
// for their commands before the first write: a call refused for want of one
// is "permission denied", and leaves every filter whole (a step it finished,
// such as a new slice or layer, is a whole filter too): each answers a full
// writer's add and check, keeps its TTL, and no key is left outside one.
TEST_F(RedisAclTest, ACallRefusedForAMissingPermissionLeavesNoHalfFilter) {
  const std::string admin = "redis://127.0.0.1:" + std::to_string(server_->port());
  std::string hundred, fifty;
  for (int i = 0; i < 100; ++i) hundred += "a" + std::to_string(i) + "\n";
  for (int i = 0; i < 50; ++i) fifty += "b" + std::to_string(i) + "\n";
  const std::vector<std::string> permissions = {
      "+setrange", "+hset",    "+hsetnx", "+pexpireat", "+hincrby", "+rename", "+del",  "+bitfield",
      "+hget",     "+hexists", "+unlink", "+rpush",     "+hdel",    "+info",   "+hmget"};
  const std::vector<std::string> names = {"p", "w", "s", "c", "t", "u"};
  // Every key the server holds, with a digest of its value and whether it
  // has a TTL: a refused call says "nothing was written", which this holds
  // it to.
  const auto keys_and_values = [&] {
    return server_->Cli({"EVAL",
                         "local ks = redis.call('KEYS', '*')\n"
                         "table.sort(ks)\n"
                         "local out = {}\n"
                         "for _, k in ipairs(ks) do\n"
                         "  local ttl = redis.call('PTTL', k) == -1 and 'no TTL' or 'TTL'\n"
                         "  out[#out + 1] = k .. ' ' .. redis.sha1hex(redis.call('DUMP', k)) .. "
                         "' ' .. ttl\n"
                         "end\n"
                         "return table.concat(out, '\\n')",
                         "0"});
  };
  // Every filter whole, as a full writer sees it.
  const auto expect_whole = [&](const std::string& call) {
    const std::string keys = server_->Cli({"KEYS", "*"});
    std::map<std::string, bool> is_filter;  // name -> `info` found it (asked once per name)
    for (const std::string& key : testing::Lines(keys)) {
      const bool owned = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
        return key == n || key.starts_with("{" + n + "}");
      });
      if (!owned && key.find("/tmp/") != std::string::npos &&
          server_->Cli({"PTTL", key}) != "-1\n") {
        continue;  // an upload, which expires by itself
      }
      EXPECT_TRUE(owned) << call << " left key " << key;
      if (!owned) continue;
      const std::string name = key.starts_with("{") ? key.substr(1, key.find('}') - 1) : key;
      if (!is_filter.contains(name)) is_filter[name] = Run(admin, {"info", name}).exit_code == 0;
      if (!is_filter[name]) {
        ADD_FAILURE() << call << " left key " << key << " of no filter";
        continue;
      }
      if (name == "t" || key.starts_with("{w}/part/")) {  // a window's slices expire
        EXPECT_NE(server_->Cli({"PTTL", key}), "-1\n") << call << ": " << key << " lost its TTL";
      }
    }
    for (const std::string& name : testing::Lines(Run(admin, {"list"}).out)) {
      // A check first: an add can mend what a check would find lost (it
      // lists a window's unlisted slice again).
      auto before = Run(admin, {"check", "-q", name, "probe"});
      EXPECT_TRUE(before.exit_code == 0 || before.exit_code == 1)
          << call << ": " << name << ": exit " << before.exit_code << ": " << before.err;
      auto add = Run(admin, {"add", "-q", name, "probe"});
      EXPECT_EQ(add.exit_code, 0) << call << ": " << name << ": " << add.err;
      auto check = Run(admin, {"check", "-q", name, "probe"});
      EXPECT_EQ(check.exit_code, 0) << call << ": " << name << ": " << check.err;
    }
  };
  std::map<std::string, int> refused_by;  // permission -> calls refused
  for (const std::string& permission : permissions) {
    server_->Cli({"FLUSHALL"});
    ASSERT_EQ(Run(admin, {"create", "p", "-n", "1000", "-p", "0.01"}).exit_code, 0);
    ASSERT_EQ(Run(admin, {"add", "-q", "p", "--file", "-"}, hundred).exit_code, 0);
    ASSERT_EQ(
        Run(admin, {"create", "w", "-n", "1000", "-p", "0.01", "--window", "1h", "--slices", "4"})
            .exit_code,
        0);
    ASSERT_EQ(Run(admin, {"create", "s", "-n", "100", "-p", "0.01", "--scaling"}).exit_code, 0);
    ASSERT_EQ(Run(admin, {"add", "-q", "s", "--file", "-"}, hundred).exit_code, 0);
    ASSERT_EQ(Run(admin, {"create", "c", "-n", "1000", "-p", "0.01", "--counting"}).exit_code, 0);
    ASSERT_EQ(Run(admin, {"add", "-q", "c", "--file", "-"}, hundred).exit_code, 0);
    const std::string less = WriterWithout(permission);
    ASSERT_FALSE(less.empty()) << permission;
    const std::vector<std::pair<std::vector<std::string>, std::string>> calls = {
        {{"create", "t", "-n", "100000", "-p", "0.01", "--ttl", "1h"}, ""},
        {{"create", "u", "-n", "100000", "-p", "0.01"}, ""},
        {{"add", "-q", "w", "x"}, ""},               // a window's first slice
        {{"add", "-q", "s", "--file", "-"}, fifty},  // a scaling filter's next layer
        {{"add", "-q", "p", "one"}, ""},             // a small add: one script
        {{"add", "-q", "p", "--file", "-"}, fifty},  // guard, BITFIELD, commit
        {{"remove", "-q", "c", "a1", "a2"}, ""},
        {{"rebuild", "p", "-n", "2000", "-f", "-"}, hundred},  // a new filter swapped in
    };
    std::string refused;  // the calls refused, for the messages of expect_whole
    for (const auto& call_and_input : calls) {
      // Not a structured binding: clang before 16 cannot capture one in the
      // lambda below.
      const std::vector<std::string>& args = call_and_input.first;
      const std::string& input = call_and_input.second;
      std::vector<std::string> held_lines = testing::Lines(keys_and_values());
      const auto r = Run(less, args, input);
      if (r.exit_code == 0) continue;
      ++refused_by[permission];
      const std::string call = args[0] + " " + args[args.size() - 1];
      // What a refused call may leave: a window's first add makes its slice
      // (whole: listed, with its TTL) before the add itself is refused; a
      // batched add by a writer without +del leaves its scratch key (the
      // next full writer's add deletes it); a rebuild whose temporary filter
      // could not be dropped either says so (a rebuild with --force drops it);
      // an upload a merge's script was refused keeps its own TTL.
      const bool temp_left = args[0] == "rebuild" && r.err.find("is left") != std::string::npos;
      const auto allowed = [&](const std::string& line) {
        return (args[2] == "w" && line.starts_with("{w}")) ||
               (permission == "+del" && line.find("}/add ") != std::string::npos) ||
               (temp_left && line.find(".rebuild~") != std::string::npos) ||
               (line.find("/tmp/") != std::string::npos && line.ends_with(" TTL"));
      };
      std::erase_if(held_lines, allowed);
      std::vector<std::string> now_lines = testing::Lines(keys_and_values());
      std::erase_if(now_lines, allowed);
      EXPECT_EQ(now_lines, held_lines) << permission << ": " << call << " wrote, refused";
      if (temp_left) {
        EXPECT_EQ(Run(admin, {"rebuild", "p", "--force", "-f", "-"}, hundred).exit_code, 0);
      }
      EXPECT_EQ(r.exit_code, 3) << permission << ": " << call << ": " << r.err;
      EXPECT_NE(r.err.find("permission denied"), std::string::npos)
          << permission << ": " << call << ": " << r.err;
      refused += (refused.empty() ? "" : ", ") + call;
    }
    // Each call works on a filter of its own or adds to one, so a half
    // filter any of them left is still there to find after the last.
    if (!refused.empty()) expect_whole(permission + " (refused: " + refused + ")");
    // The items added before are all still there.
    const auto check = Run(admin, {"check", "-q", "p", "--file", "-"}, hundred);
    EXPECT_EQ(check.exit_code, 0) << permission << ": " << check.err;
  }
  for (const char* p : {"+pexpireat", "+hsetnx", "+hset", "+hincrby"}) {
    EXPECT_GT(refused_by[p], 0) << p;
  }
  // The refusal names the command, and a create refused makes nothing.
  server_->Cli({"FLUSHALL"});
  const auto r =
      Run(WriterWithout("+pexpireat"), {"create", "t", "-n", "1000", "-p", "0.01", "--ttl", "1h"});
  EXPECT_NE(r.err.find("'pexpireat'"), std::string::npos) << r.err;
  EXPECT_EQ(server_->Cli({"DBSIZE"}), "0\n") << "nothing made";
  // INFO, which a create reads maxmemory with, is named too (it was "ERR The
  // user executing the script can't run this command").
  const auto no_info = Run(WriterWithout("+info"), {"create", "t", "-n", "1000", "-p", "0.01"});
  EXPECT_NE(no_info.err.find("'info|memory'"), std::string::npos) << no_info.err;
}

// A writer allowed `INFO memory` alone (the subcommand a bitmap's creation
// reads maxmemory with) creates, grows windows and scaling filters: the
// scripts' check asked for all of INFO at first, and refused it (a review).
TEST_F(RedisAclTest, AWriterWithInfoMemoryAloneCreates) {
  std::vector<std::string> rule = ReadmeAclRule("writer", "mpw");
  ASSERT_GE(rule.size(), 4u);
  rule[2] = "writer-memory";
  std::replace(rule.begin(), rule.end(), std::string("+info"), std::string("+info|memory"));
  rule.insert(rule.begin() + 3, "reset");
  server_->Cli({"ACL", "DELUSER", rule[2]});
  ASSERT_EQ(server_->Cli(rule), "OK\n");
  const std::string url = "redis://writer-memory:mpw@127.0.0.1:" + std::to_string(server_->port());
  std::string items;
  for (int i = 0; i < 300; ++i) items += "m" + std::to_string(i) + "\n";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"create", "mem-plain", "-n", "1000", "-p", "0.01"},
        std::vector<std::string>{"create", "mem-grows", "-n", "100", "-p", "0.01", "--scaling"},
        std::vector<std::string>{"create", "mem-recent", "-n", "1000", "-p", "0.01", "--window",
                                 "1h", "--slices", "4"}}) {
    auto r = Run(url, args);
    EXPECT_EQ(r.exit_code, 0) << args[1] << ": " << r.err;
    auto add = Run(url, {"add", "-q", args[1], "--file", "-"}, items);
    EXPECT_EQ(add.exit_code, 0) << args[1] << ": " << add.err;
  }
  auto info = Run(url, {"info", "mem-grows"});
  EXPECT_NE(info.out.find("layers:            2"), std::string::npos) << info.out;
}

// A managed Redis may rename commands away. With INFO renamed every call
// failed as a bug ("internal", exit 5), reads included, and redbloomd would
// not start: INFO is only for detecting restarts there, as for a user
// without +info. A create, which needs it, fails naming the command.
TEST_F(RedisAclTest, AServerWithInfoRenamedAwayServesAllButCreate) {
  testing::RedisServer renamed({"--rename-command", "INFO", ""});
  renamed.Start();
  const std::string url = renamed.url();
  auto created = Run(url, {"create", "g", "-n", "1000", "-p", "0.01"});
  EXPECT_EQ(created.exit_code, 3) << created.err;
  EXPECT_NE(created.err.find("command not offered"), std::string::npos) << created.err;
  EXPECT_NE(created.err.find("rename-command"), std::string::npos) << created.err;
  EXPECT_EQ(renamed.Cli({"DBSIZE"}), "0\n") << "nothing made";
  // A Java service's bitmap, adopted (attach sizes nothing), written and read.
  renamed.Cli({"SETBIT", "javas", "7", "1"});
  auto attach = Run(url, {"attach", "javas", "-n", "1000", "-p", "0.01", "--strategy", "seed"});
  ASSERT_EQ(attach.exit_code, 0) << attach.err;
  auto add = Run(url, {"add", "-q", "javas", "x", "y"});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  auto check = Run(url, {"check", "-q", "javas", "x", "y"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(Run(url, {"list"}).out, "javas\n");
  auto info = Run(url, {"info", "javas"});
  EXPECT_EQ(info.exit_code, 0) << info.err;
}

// A user that lacks a command `list` needs gets an error, not an empty list
// (which read as "no filters" before).
TEST_F(RedisAclTest, ListFailsRatherThanHideFilters) {
  ASSERT_EQ(Run(Url("writer", "wpw"), {"create", "orders", "-n", "100", "-p", "0.01"}).exit_code,
            0);
  server_->Cli({"ACL", "SETUSER", user_["reader"], "-hget"});
  auto list = Run(Url("reader", "rpw"), {"list"});
  EXPECT_EQ(list.exit_code, 3) << list.out;
  EXPECT_NE(list.err.find("permission denied"), std::string::npos) << list.err;
}

}  // namespace
}  // namespace redbloom
