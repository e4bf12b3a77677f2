// The Redis client's parts that need no server. The parsers of whole
// replies, on RESP bytes read by the reader every Connection uses (what a
// server may send, including what a real one does not; the cases
// fuzz/reply_fuzz found live here), and the fan-out over servers when no
// thread can be started.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "redbloom/filter_config.h"
#include "redbloom/store.h"
#include "redis/cluster_source.h"
#include "redis/connection_source.h"
#include "redis/redis_client.h"
#include "redis/redis_companion.h"
#include "redis/redis_scripts.h"
#include "redis/redis_warnings.h"
#include "redis/sentinel_source.h"
#include "test_util.h"

namespace redbloom::internal {
namespace {

// The one reply in `resp`.
ReplyPtr Parse(std::string_view resp) {
  ReaderPtr reader = NewReplyReader();
  EXPECT_NE(reader, nullptr);
  EXPECT_EQ(redisReaderFeed(reader.get(), resp.data(), resp.size()), REDIS_OK);
  void* raw = nullptr;
  EXPECT_EQ(redisReaderGetReply(reader.get(), &raw), REDIS_OK);
  EXPECT_NE(raw, nullptr) << "incomplete reply: " << resp;
  return ReplyPtr(static_cast<redisReply*>(raw));
}

// One INFO field parser serves the connection's hello (run_id, a writable
// replica) and the store's warnings (maxmemory, replicas): a name matches a
// whole field, never the start of a longer one.
// Redis does not undo a script's writes when a later command is refused, so
// a script that writes more than once names every command it writes with in
// need(), which asks the server before the first write (redis_scripts.h). A
// write command added to a script without its need() entry would bring
// back the half-made filters of a user missing it: this fails first.
TEST(ScriptsTest, EveryWriteCommandOfAScriptIsInItsNeed) {
  namespace s = internal::scripts;
  const std::set<std::string> writes = {"setrange", "hset",   "hsetnx",   "hdel",      "hincrby",
                                        "del",      "unlink", "rename",   "pexpireat", "pexpire",
                                        "rpush",    "set",    "bitfield", "bitop"};
  const std::pair<const char*, std::string_view> scripts[] = {
      {"kCreate", s::kCreate},
      {"kCreateShard", s::kCreateShard},
      {"kAttach", s::kAttach},
      {"kAddGuard", s::kAddGuard},
      {"kAddSmall", s::kAddSmall},
      {"kClear", s::kClear},
      {"kRemove", s::kRemove},
      {"kCreatePart", s::kCreatePart},
      {"kReplace", s::kReplace},
      {"kOrRange", s::kOrRange},
      {"kAddRange", s::kAddRange},
      {"kCreateCompanion", s::kCreateCompanion},
      {"kAttachCompanion", s::kAttachCompanion},
      {"kReplaceCompanion", s::kReplaceCompanion}};
  const std::regex call(R"(redis\.p?call\('([A-Za-z_]+)')");
  const std::regex quoted(R"('([a-z_]+)')");
  for (const auto& [name, text] : scripts) {
    std::string body(text);
    // restore() puts back a bitmap a failed commit left in the scratch key:
    // one RENAME, run before need() on purpose (a repair, nothing after it).
    if (const size_t at = body.find("local function restore("); at != std::string::npos) {
      body.erase(at, body.find("\nend\n", at) + 5 - at);
    }
    std::set<std::string> needed;
    for (size_t at = body.find("need("); at != std::string::npos; at = body.find("need(", at + 1)) {
      if (body.compare(at - 9, 9, "function ") == 0) continue;  // its definition
      const std::string args = body.substr(at, body.find("if denied", at) - at);
      for (auto q = std::sregex_iterator(args.begin(), args.end(), quoted);
           q != std::sregex_iterator(); ++q) {
        needed.insert((*q)[1]);
      }
    }
    EXPECT_FALSE(needed.empty()) << name << " asks for nothing";
    for (auto it = std::sregex_iterator(body.begin(), body.end(), call);
         it != std::sregex_iterator(); ++it) {
      std::string command = (*it)[1];
      std::transform(command.begin(), command.end(), command.begin(), ::tolower);
      // kAddGuard's own DEL of the scratch key runs before its need(): one
      // write, nothing to leave half done.
      if (writes.count(command) == 0) continue;
      EXPECT_TRUE(needed.count(command) > 0 ||
                  (std::string(name) == "kAddGuard" && command == "del"))
          << name << " writes with " << command << " without asking for it in need()";
    }
  }
}

TEST(InfoFieldTest, ReadsWholeFieldsOnly) {
  const std::string info =
      "# Memory\r\nmaxmemory_policy:noeviction\r\nmaxmemory:1024\r\n"
      "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n";
  EXPECT_EQ(InfoField(info, "maxmemory"), "1024");
  EXPECT_EQ(InfoField(info, "maxmemory_policy"), "noeviction");
  EXPECT_EQ(InfoField(info, "role"), "master");
  EXPECT_EQ(InfoField(info, "connected_slaves"), "2");
  EXPECT_EQ(InfoField(info, "slave"), "");
  EXPECT_EQ(InfoField(info, "Memory"), "");
  EXPECT_EQ(InfoField("run_id:abc", "run_id"), "abc");  // no line end
  EXPECT_EQ(InfoField("", "role"), "");
}

// The store's warnings read what Redis itself compares: used_memory less
// the replication and AOF buffers (mem_not_counted_for_evict) against
// maxmemory, and only under noeviction (other policies evict rather than
// refuse, which EvictionWarning says).
TEST(WarningsTest, FullCountsWhatRedisComparesWithMaxmemory) {
  const auto memory = [](const std::string& policy, const std::string& used,
                         const std::string& buffers) {
    return "# Memory\r\nused_memory:" + used + "\r\nmaxmemory:900\r\nmaxmemory_policy:" + policy +
           "\r\nmem_not_counted_for_evict:" + buffers + "\r\n";
  };
  const auto full = FullWarning(memory("noeviction", "1000", "0"), "h:1");
  ASSERT_TRUE(full.has_value());
  EXPECT_NE(full->find("1000 of 900 bytes"), std::string::npos) << *full;
  EXPECT_FALSE(FullWarning(memory("noeviction", "1000", "200"), "h:1").has_value())
      << "800 bytes counted, under 900";
  EXPECT_FALSE(FullWarning(memory("allkeys-lru", "1000", "0"), "h:1").has_value());
  EXPECT_FALSE(FullWarning(memory("noeviction", "1000", "2000"), "h:1").has_value());
  EXPECT_FALSE(FullWarning("# Memory\r\nused_memory:1000\r\nmaxmemory:0\r\n"
                           "maxmemory_policy:noeviction\r\n",
                           "h:1")
                   .has_value())
      << "no maxmemory";
}

TEST(WarningsTest, NoReplicasOnlyWhenNoneIsInSync) {
  const auto replication = [](const std::string& role, const std::string& good) {
    return "# Replication\r\nrole:" + role + "\r\nconnected_slaves:0\r\n" +
           (good.empty() ? "" : "min_slaves_good_slaves:" + good + "\r\n");
  };
  const auto none = NoReplicasWarning(replication("master", "0"), "h:1");
  ASSERT_TRUE(none.has_value());
  EXPECT_NE(none->find("min-replicas-to-write"), std::string::npos) << *none;
  EXPECT_FALSE(NoReplicasWarning(replication("master", "1"), "h:1").has_value());
  EXPECT_FALSE(NoReplicasWarning(replication("master", ""), "h:1").has_value()) << "setting off";
  EXPECT_FALSE(NoReplicasWarning(replication("slave", "0"), "h:1").has_value());
}

TEST(WarningsTest, AReplicaSaysSoAndWhetherItIsInSync) {
  EXPECT_FALSE(ReplicaRoleWarning("role:master\r\n", "h:1").has_value());
  const auto in_sync = ReplicaRoleWarning(
      "role:slave\r\nmaster_host:10.0.0.7\r\nmaster_port:6379\r\nmaster_link_status:up\r\n"
      "master_sync_in_progress:0\r\n",
      "h:1");
  ASSERT_TRUE(in_sync.has_value());
  EXPECT_NE(in_sync->find("replica of 10.0.0.7:6379"), std::string::npos) << *in_sync;
  EXPECT_EQ(in_sync->find("not in sync"), std::string::npos) << *in_sync;
  const auto syncing = ReplicaRoleWarning(
      "role:slave\r\nmaster_host:10.0.0.7\r\nmaster_port:6379\r\nmaster_link_status:down\r\n"
      "master_sync_in_progress:1\r\n",
      "h:1");
  ASSERT_TRUE(syncing.has_value());
  EXPECT_NE(syncing->find("not in sync"), std::string::npos) << *syncing;
  const auto v6 = ReplicaRoleWarning(
      "role:slave\r\nmaster_host:::1\r\nmaster_port:6379\r\nmaster_link_status:up\r\n", "h:1");
  ASSERT_TRUE(v6.has_value());
  EXPECT_NE(v6->find("replica of [::1]:6379:"), std::string::npos) << *v6;
}

// A command renamed away is the server's configuration, as a denied one
// is: not retried, exit 3, HTTP 503 (it was `internal`, and retried).
TEST(ReplyErrorTest, AnUnknownCommandIsAConfigurationFailure) {
  ServerParams server;
  server.display = "127.0.0.1:6379";
  const Status s =
      ReplyErrorStatus("ERR unknown command 'INFO', with args beginning with: ", server);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(IsConfigurationFailure(s)) << s.ToString();
  EXPECT_TRUE(IsPermanentFailure(s)) << s.ToString();
  EXPECT_FALSE(IsConfigurationFailure(ReplyErrorStatus("LOADING Redis is loading", server)));
}

// A script Redis stopped with SCRIPT KILL wrote nothing: a retry may
// succeed (it was `internal`, 500, as if redbloom had a bug).
TEST(ReplyErrorTest, AScriptKilledByAnOperatorIsUnavailable) {
  ServerParams server;
  server.display = "127.0.0.1:6379";
  const Status s = ReplyErrorStatus(
      "ERR Script killed by user with SCRIPT KILL... script: 694a5fe1, on @user_script:1.", server);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_FALSE(IsPermanentFailure(s)) << s.ToString();
  EXPECT_NE(s.message().find("before it wrote anything"), std::string::npos) << s.ToString();
}

// A failure that retrying cannot cure stays one when a caller adds context:
// an add's failed commit ("the add's commit failed: ...") denied by an ACL
// was retried, and a lost connection's answers counted as lost, while the
// check read the message's first words.
TEST(ReplyErrorTest, PermanentFailuresStayPermanentUnderContext) {
  ServerParams server;
  server.display = "127.0.0.1:6379";
  const Status io_lost = Status::Unavailable("lost connection to redis 127.0.0.1:6379");
  const std::pair<Status, StatusReason> cases[] = {
      {ReplyErrorStatus("NOAUTH Authentication required.", server), StatusReason::kAuthFailed},
      {ReplyErrorStatus("WRONGPASS invalid username-password pair", server),
       StatusReason::kAuthFailed},
      {ReplyErrorStatus("NOPERM this user has no permissions to run the 'eval' command", server),
       StatusReason::kPermissionDenied},
      {ReplyErrorStatus("EXECABORT Transaction discarded because of: NOPERM no 'bitfield'", server),
       StatusReason::kPermissionDenied},
      {ReplyErrorStatus("ERR unknown command 'BITFIELD_RO'", server),
       StatusReason::kCommandMissing},
      {RestartedStatus("127.0.0.1:6379", "0123456789", "abcdefghij"), StatusReason::kRestarted},
      {NotReplicatedStatus("127.0.0.1:6379", 0, 1, std::chrono::milliseconds(100)),
       StatusReason::kNotReplicated},
      {AnswersLostStatus("127.0.0.1:6379", io_lost), StatusReason::kAnswersLost},
  };
  for (const auto& [s, reason] : cases) {
    EXPECT_EQ(s.reason(), reason) << s.ToString();
    EXPECT_TRUE(IsPermanentFailure(s)) << s.ToString();
    const Status told = s.WithContext("the add's commit failed");
    EXPECT_TRUE(IsPermanentFailure(told)) << told.ToString();
    EXPECT_EQ(IsConfigurationFailure(told), IsConfigurationFailure(s)) << told.ToString();
  }
  // Retryable ones stay retryable, whatever their words.
  EXPECT_FALSE(IsPermanentFailure(io_lost));
  EXPECT_FALSE(IsPermanentFailure(ReplyErrorStatus("LOADING Redis is loading", server)));
  EXPECT_FALSE(IsPermanentFailure(Status::Unavailable("restarted: not a reason")));
}

// A cluster store's list or ping (every node in turn) meets CLUSTERDOWN
// while the cluster fails over: that is the cluster's state, not the URL's
// fault, which "use a redis-cluster:// URL" told a user already using one.
// A standalone store's connection (redis://, a Sentinel's master) pointed
// at a cluster node is still told which URL to use.
TEST(ReplyErrorTest, ARedirectBlamesTheUrlOnlyOfAStandaloneStore) {
  ServerParams node;
  node.display = "127.0.0.1:7000";
  node.standalone = false;
  ServerParams standalone = node;
  standalone.standalone = true;
  for (const char* reply : {"CLUSTERDOWN The cluster is down", "MOVED 3999 127.0.0.1:7001"}) {
    const Status down = ReplyErrorStatus(reply, node);
    EXPECT_EQ(down.code(), StatusCode::kUnavailable) << down.ToString();
    EXPECT_EQ(down.message().find("use a redis-cluster:// URL"), std::string::npos)
        << down.ToString();
    EXPECT_NE(down.message().find("failing over or moving slots"), std::string::npos)
        << down.ToString();
    const Status wrong_url = ReplyErrorStatus(reply, standalone);
    EXPECT_EQ(wrong_url.code(), StatusCode::kUnavailable) << wrong_url.ToString();
    EXPECT_NE(wrong_url.message().find("use a redis-cluster:// URL"), std::string::npos)
        << wrong_url.ToString();
  }
}

TEST(ClusterRedirectTest, ReadsSlotHostAndPort) {
  auto moved = ParseClusterRedirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->kind, ClusterRedirect::Kind::kMoved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->host, "127.0.0.1");
  EXPECT_EQ(moved->port, 6381);
  auto ask = ParseClusterRedirect("ASK 16383 [::1]:7002");
  ASSERT_TRUE(ask.has_value());
  EXPECT_EQ(ask->kind, ClusterRedirect::Kind::kAsk);
  EXPECT_EQ(ask->host, "::1");
  EXPECT_EQ(ask->port, 7002);
  auto own = ParseClusterRedirect("MOVED 1 :7000");  // the node's own host
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->host, "");
  EXPECT_EQ(ParseClusterRedirect("TRYAGAIN Multiple keys request during rehashing")->kind,
            ClusterRedirect::Kind::kTryAgain);
  EXPECT_EQ(ParseClusterRedirect("CLUSTERDOWN The cluster is down")->text,
            "CLUSTERDOWN The cluster is down");
  EXPECT_EQ(ParseClusterRedirect("CLUSTERDOWN The cluster is down")->kind,
            ClusterRedirect::Kind::kClusterDown);
}

// Found by fuzz/reply_fuzz: "70025" followed by other bytes was read as port
// 70025 (from_chars stops at the first non-digit), and nothing checked the
// range; the retry went to an address the server never named.
TEST(ClusterRedirectTest, RefusesWhatIsNotASlotAndAPort) {
  for (const char* text :
       {"MOVED 3999 127.0.0.1:70025", "MOVED 3999 127.0.0.1:0", "MOVED 3999 127.0.0.1:6381x",
        "MOVED 3999 127.0.0.1:", "MOVED 16384 127.0.0.1:6381", "MOVED -1 127.0.0.1:6381",
        "MOVED 12x 127.0.0.1:6381", "MOVED 3999", "ASK 1 h:-5", "WRONGTYPE Operation"}) {
    EXPECT_FALSE(ParseClusterRedirect(text).has_value()) << text;
  }
}

// Node indexes handed out as ParseClusterSlots asks for them.
struct Nodes {
  std::map<std::pair<std::string, int>, int> index;
  std::function<int(const std::string&, int)> Fn() {
    return [this](const std::string& host, int port) {
      return index.emplace(std::make_pair(host, port), static_cast<int>(index.size()))
          .first->second;
    };
  }
};

constexpr std::string_view kThreeMasters =
    "*3\r\n"
    "*4\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
    "*2\r\n$9\r\n127.0.0.1\r\n:7003\r\n"
    "*3\r\n:5461\r\n:10922\r\n*2\r\n$0\r\n\r\n:7001\r\n"
    "*3\r\n:10923\r\n:16383\r\n*2\r\n$1\r\n?\r\n:7002\r\n";

TEST(ClusterSlotsTest, MapsEverySlotToItsMaster) {
  Nodes nodes;
  ReplyPtr r = Parse(kThreeMasters);
  auto map = ParseClusterSlots(r.get(), HostPort{"10.0.0.9", 7000}, nodes.Fn());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  const int first = nodes.index.at({"127.0.0.1", 7000});
  const int replica = nodes.index.at({"127.0.0.1", 7003});
  // An empty or '?' host is the node asked.
  const int second = nodes.index.at({"10.0.0.9", 7001});
  const int third = nodes.index.at({"10.0.0.9", 7002});
  EXPECT_EQ((*map)->master[0], first);
  EXPECT_EQ((*map)->master[5460], first);
  EXPECT_EQ((*map)->master[5461], second);
  EXPECT_EQ((*map)->master[16383], third);
  EXPECT_EQ((*map)->replicas[first], std::vector<int>{replica});
  EXPECT_EQ((*map)->masters.size(), 3u);
}

// A master's port is checked as a redirect's is; a replica without a valid
// one is left out, not connected to.
TEST(ClusterSlotsTest, RefusesAMasterWithoutAPort) {
  for (const char* port : {":0", ":70000", ":-1", "$4\r\n7000"}) {
    Nodes nodes;
    const std::string resp =
        std::string("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n") + port + "\r\n";
    ReplyPtr r = Parse(resp);
    auto map = ParseClusterSlots(r.get(), HostPort{"127.0.0.1", 7000}, nodes.Fn());
    EXPECT_EQ(map.status().code(), StatusCode::kInternal) << port;
    EXPECT_TRUE(nodes.index.empty()) << port << ": a node was made for it";
  }
  Nodes nodes;
  ReplyPtr r = Parse(
      "*1\r\n*4\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n"
      "*2\r\n$9\r\n127.0.0.1\r\n:99999\r\n");
  auto map = ParseClusterSlots(r.get(), HostPort{"127.0.0.1", 7000}, nodes.Fn());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  EXPECT_TRUE((*map)->replicas[0].empty());
  EXPECT_EQ(nodes.index.size(), 1u);
}

TEST(ClusterSlotsTest, NoSlotsIsUnavailableAndAnotherShapeIsInternal) {
  Nodes nodes;
  EXPECT_EQ(ParseClusterSlots(Parse("*0\r\n").get(), HostPort{"h", 1}, nodes.Fn()).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ParseClusterSlots(Parse("*1\r\n*2\r\n:0\r\n:1\r\n").get(), HostPort{"h", 1}, nodes.Fn())
                .status()
                .code(),
            StatusCode::kInternal);
  EXPECT_EQ(ParseClusterSlots(Parse("+OK\r\n").get(), HostPort{"h", 1}, nodes.Fn()).status().code(),
            StatusCode::kInternal);
}

FilterConfig RedissonConfig() {
  FilterOptions o;
  o.capacity = 1000;
  o.error_rate = 0.01;
  o.strategy = Strategy::kRedisson;
  auto c = MakeConfig(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

// Code 10 names the hash's size and hashIterations: a reply without them is
// malformed (it was read past the reply's elements).
TEST(CompanionCodeTest, ShortRepliesAreUnexpected) {
  const FilterConfig c = RedissonConfig();
  EXPECT_EQ(CompanionCodeStatus(Parse("*2\r\n:10\r\n$1\r\n1\r\n").get(), "f", "k", c).code(),
            StatusCode::kInternal);
  EXPECT_EQ(CompanionCodeStatus(Parse("*1\r\n:8\r\n").get(), "f", "k", c).code(),
            StatusCode::kInternal);
  EXPECT_EQ(CompanionCodeStatus(Parse("*2\r\n$1\r\n8\r\n$4\r\nnone\r\n").get(), "f", "k", c).code(),
            StatusCode::kInternal);
  Status full =
      CompanionCodeStatus(Parse("*3\r\n:10\r\n$4\r\n9586\r\n$1\r\n7\r\n").get(), "f", "k", c);
  EXPECT_EQ(full.code(), StatusCode::kConflict);
  EXPECT_NE(full.message().find("size=9586 hashIterations=7"), std::string::npos)
      << full.ToString();
  EXPECT_EQ(CompanionCodeStatus(Parse("*2\r\n:8\r\n$4\r\nnone\r\n").get(), "f", "k", c).code(),
            StatusCode::kNotFound);
}

// Integer 0s and 1s inside arrays are two shared objects: freeing any number
// of replies that hold them, nested or not, leaves them intact.
TEST(ReplyReaderTest, SharedSmallIntegersSurviveFreeing) {
  for (int round = 0; round < 3; ++round) {
    ReplyPtr nested = Parse("*3\r\n:1\r\n*2\r\n:0\r\n:1\r\n:2\r\n");
    ASSERT_EQ(nested->element[1]->elements, 2u);
    EXPECT_EQ(nested->element[0], nested->element[1]->element[1]);  // shared
    EXPECT_EQ(nested->element[2]->integer, 2);
  }
  ReplyPtr top = Parse(":1\r\n");  // a top-level integer is the caller's own
  top->integer = 5;
  ReplyPtr again = Parse("*2\r\n:0\r\n:1\r\n");
  EXPECT_EQ(again->element[0]->integer, 0);
  EXPECT_EQ(again->element[1]->integer, 1);
}

// RESP bulk string.
std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

TEST(SentinelRepliesTest, MasterAddressIsAValidHostAndPort) {
  Result<HostPort> m =
      ParseSentinelMaster(Parse("*2\r\n" + Bulk("127.0.0.1") + Bulk("6380")).get());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->host, "127.0.0.1");
  EXPECT_EQ(m->port, 6380);
  m = ParseSentinelMaster(Parse("*2\r\n" + Bulk("::1") + Bulk("7000")).get());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->Display(), "[::1]:7000");
  EXPECT_EQ(ParseSentinelMaster(Parse("$-1\r\n").get()).status().code(), StatusCode::kNotFound);
  for (const std::string& bad :
       {"*2\r\n" + Bulk("") + Bulk("6380"),       // no host: was taken, then failed to connect
        "*2\r\n" + Bulk("a b") + Bulk("6380"),    // spaced
        "*2\r\n" + Bulk("h\x01") + Bulk("6380"),  // binary
        "*2\r\n" + Bulk(std::string(256, 'h')) + Bulk("6380"),
        "*2\r\n:7\r\n" + Bulk("6380"),  // not text
        "*2\r\n" + Bulk("h") + Bulk("70000"), "*2\r\n" + Bulk("h") + Bulk("6380x"),
        "*2\r\n" + Bulk("h") + Bulk("0"), "*1\r\n" + Bulk("h"), std::string("+OK\r\n")}) {
    Result<HostPort> r = ParseSentinelMaster(Parse(bad).get());
    EXPECT_EQ(r.status().code(), StatusCode::kInternal) << bad;
    EXPECT_FALSE(r.status().message().empty());
  }
  // A refused host is shown printable, never as the bytes it was sent as.
  const std::string message =
      ParseSentinelMaster(Parse("*2\r\n" + Bulk("h\x01\n") + Bulk("1")).get()).status().message();
  EXPECT_NE(message.find("'h?\?'"), std::string::npos) << message;
}

TEST(SentinelRepliesTest, ReplicasListedAsUsableAreKept) {
  const auto replica = [](std::string_view ip, std::string_view port, std::string_view flags) {
    return "*6\r\n" + Bulk("ip") + Bulk(ip) + Bulk("port") + Bulk(port) + Bulk("flags") +
           Bulk(flags);
  };
  const std::string reply = "*6\r\n" + replica("10.0.0.1", "6380", "slave") +
                            replica("10.0.0.2", "6381", "s_down,slave") +
                            replica("10.0.0.3", "6382", "slave,disconnected") +
                            replica("", "6383", "slave") + replica("10.0.0.5", "99999", "slave") +
                            replica("::1", "6385", "slave");
  std::vector<HostPort> usable = ParseSentinelReplicas(Parse(reply).get());
  ASSERT_EQ(usable.size(), 2u);
  EXPECT_EQ(usable[0].Display(), "10.0.0.1:6380");
  EXPECT_EQ(usable[1].Display(), "[::1]:6385");
  EXPECT_TRUE(ParseSentinelReplicas(Parse("*1\r\n:1\r\n").get()).empty());
  EXPECT_TRUE(ParseSentinelReplicas(Parse("-ERR no\r\n").get()).empty());
  // A field name without its value is not read past the entry.
  EXPECT_TRUE(ParseSentinelReplicas(Parse("*1\r\n*1\r\n" + Bulk("ip")).get()).empty());
}

TEST(SentinelRepliesTest, SwitchMasterIsOursAnothersOrUnreadable) {
  auto ours = ParseSwitchMaster("mymaster 127.0.0.1 6379 127.0.0.1 6380", "mymaster");
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  ASSERT_TRUE(ours->has_value());
  EXPECT_EQ((*ours)->Display(), "127.0.0.1:6380");
  auto other = ParseSwitchMaster("other 127.0.0.1 6379 127.0.0.1 6380", "mymaster");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());
  // Ours but unreadable: an error, so that the caller asks the sentinels
  // (it used to take an empty host, and to ignore a message of another shape).
  for (std::string_view bad :
       {"mymaster 127.0.0.1 6379  6380", "mymaster 127.0.0.1 6379 127.0.0.1 0",
        "mymaster 127.0.0.1 6379 127.0.0.1", "mymaster 127.0.0.1 6379 127.0.0.1 6380 extra",
        "mymaster"}) {
    EXPECT_EQ(ParseSwitchMaster(bad, "mymaster").status().code(), StatusCode::kInternal) << bad;
  }
}

// Every key on its own server, so that InParallel wants a thread per key.
class KeyPerServer final : public ConnectionSource {
 public:
  KeyPerServer() : ConnectionSource(StoreOptions{}) {}
  Status Run(std::string_view, Access, bool, const Op&) override {
    return Status::Unimplemented("not a server");
  }
  std::string Route(std::string_view key) override { return std::string(key); }
  Status ForEachServer(const Op&) override { return Status::Unimplemented("not a server"); }
  Status Check() override { return Status::Ok(); }
};

// This process's address space in bytes (VmSize), 0 if unknown.
uint64_t AddressSpaceBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmSize:")) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

// While it lives, 2 MiB of address space to spare: small allocations still
// come from the heap, an 8 MiB thread stack does not. No test in this
// binary starts a thread before the limit, so glibc holds no stack to
// reuse; threads_fail() checks that one cannot start, so that the tests
// cannot pass vacuously.
class NoThreads {
 public:
  NoThreads() {
    const uint64_t used = AddressSpaceBytes();
    EXPECT_GT(used, 0u);
    EXPECT_EQ(getrlimit(RLIMIT_AS, &old_), 0);
    rlimit tight = old_;
    tight.rlim_cur = used + (2u << 20);
    EXPECT_EQ(setrlimit(RLIMIT_AS, &tight), 0);
    try {
      std::thread([] {}).join();
    } catch (const std::system_error&) {
      threads_fail_ = true;
    }
  }
  ~NoThreads() { EXPECT_EQ(setrlimit(RLIMIT_AS, &old_), 0); }
  bool threads_fail() const { return threads_fail_; }

 private:
  rlimit old_{};
  bool threads_fail_ = false;
};

constexpr const char* kSanitizerSkip =
    "a sanitizer's shadow memory needs address space the limit would refuse";

// A sharded filter's calls fan out over its servers, a thread each. With no
// thread to be had, the groups run on the caller's thread. Before, the
// std::system_error escaped InParallel (the library answers with a Status,
// never an exception), or, once some threads had started, their joinable
// destructors made std::terminate kill the host process (a redbloomd
// answering a request, say).
TEST(NoThreadTest, InParallelRunsEveryTaskOnTheCallersThread) {
  if (testing::kAddressSanitizer || testing::kThreadSanitizer) GTEST_SKIP() << kSanitizerSkip;
  KeyPerServer source;
  const std::vector<std::string> keys = {"a", "b", "c", "d"};
  std::atomic<int> ran{0};
  const std::vector<std::function<Status()>> tasks(4, [&ran] {
    ++ran;
    return Status::Ok();
  });
  Status s;
  {
    NoThreads limit;
    ASSERT_TRUE(limit.threads_fail()) << "a thread started under the limit";
    s = source.InParallel(keys, tasks, ConnectionSource::OnFailure::kGoOn);
  }
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ran.load(), 4);
}

// After a task fails, the rest of its server's tasks are skipped or run,
// as the caller asks; other servers' tasks run either way.
TEST(InParallelTest, AFailureStopsTheRestOfItsServersTasksOnlyWhenAsked) {
  KeyPerServer source;
  const std::vector<std::string> keys = {"a", "a", "a", "b", "b"};
  for (const auto on_failure :
       {ConnectionSource::OnFailure::kStopThatServer, ConnectionSource::OnFailure::kGoOn}) {
    std::vector<int> ran(keys.size(), 0);  // each element written by one thread
    std::vector<std::function<Status()>> tasks;
    for (size_t i = 0; i < keys.size(); ++i) {
      tasks.push_back([&ran, i] {
        ++ran[i];
        return i == 0 ? Status::Unavailable("down") : Status::Ok();
      });
    }
    const Status s = source.InParallel(keys, tasks, on_failure);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    const bool go_on = on_failure == ConnectionSource::OnFailure::kGoOn;
    EXPECT_EQ(ran[1] + ran[2], go_on ? 2 : 0) << "go on: " << go_on;
    EXPECT_EQ(ran[3] + ran[4], 2) << "go on: " << go_on;
  }
}

// A sentinel store starts a thread that watches the sentinels: without one,
// opening it is a Status (it was an exception out of Store::Open).
TEST(NoThreadTest, OpeningASentinelStoreIsResourceExhausted) {
  if (testing::kAddressSanitizer || testing::kThreadSanitizer) GTEST_SKIP() << kSanitizerSkip;
  Status s;
  {
    NoThreads limit;
    ASSERT_TRUE(limit.threads_fail()) << "a thread started under the limit";
    // Port 1 on loopback: nothing is ever contacted, the thread comes first.
    s = Store::Open("redis-sentinel://127.0.0.1:1/mymaster").status();
  }
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("sentinels"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace redbloom::internal
