#include "redis/redis_client.h"

#include <poll.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "redis/redis_keys.h"
#include "redis/redis_url.h"
#include "redis/tls_transport.h"
#include "status_reasons.h"
#include "util/fork_generation.h"

namespace redbloom::internal {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }

}  // namespace

// ---- CommandBuffer ---------------------------------------------------------

void CommandBuffer::Begin(size_t argc) {
  if (missing_ != 0) miscounted_ = true;
  missing_ = argc;
  char tmp[24];
  auto [end, ec] = std::to_chars(tmp, tmp + sizeof(tmp), argc);
  buf_.push_back('*');
  buf_.append(tmp, end);
  buf_.append("\r\n");
  ++commands_;
}

void CommandBuffer::Arg(std::string_view s) {
  Count(1);
  char tmp[24];
  auto [end, ec] = std::to_chars(tmp, tmp + sizeof(tmp), s.size());
  buf_.push_back('$');
  buf_.append(tmp, end);
  buf_.append("\r\n");
  buf_.append(s);
  buf_.append("\r\n");
}

void CommandBuffer::Arg(uint64_t v) {
  Count(1);
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), v);
  const size_t n = static_cast<size_t>(end - digits);
  char head[8] = {'$'};
  size_t h = 1;
  if (n >= 10) head[h++] = static_cast<char>('0' + n / 10);
  head[h++] = static_cast<char>('0' + n % 10);
  head[h++] = '\r';
  head[h++] = '\n';
  buf_.append(head, h);
  buf_.append(digits, n);
  buf_.append("\r\n");
}

void CommandBuffer::Arg(char prefix, uint64_t v) {
  char digits[24];
  digits[0] = prefix;
  auto [end, ec] = std::to_chars(digits + 1, digits + sizeof(digits), v);
  Arg(std::string_view(digits, static_cast<size_t>(end - digits)));
}

void CommandBuffer::Command(std::initializer_list<std::string_view> args) {
  Begin(args.size());
  for (std::string_view a : args) Arg(a);
}

Status CommandBuffer::Validate() const {
  if (miscounted_ || missing_ != 0) {
    return Status::Internal("bug: a redis command was built with a wrong argument count");
  }
  return Status::Ok();
}

// ---- Errors ----------------------------------------------------------------

namespace {
// In the message of every connect-phase timeout.
constexpr std::string_view kConnectTimeoutNote = " ms (connect_timeout_ms)";
// In the message of a server that took the connection and then did not
// answer (StatusReason::kStalledServer).
constexpr std::string_view kStalled = ": the server is stalled, stopped or overloaded";
}  // namespace

Status TransportStatus(const IoFailure& failure, const ServerParams& server) {
  using Kind = IoFailure::Kind;
  const std::string where = "redis " + server.display;
  const std::string hint = failure.hint.empty() ? "" : " (" + failure.hint + ")";
  switch (failure.kind) {
    case Kind::kNone:
      break;
    case Kind::kConnect:
      return Status::Unavailable("cannot connect to " + where + ": " + failure.detail + hint);
    case Kind::kConnectTimeout:
      return Status::Unavailable("cannot connect to " + where + " within " +
                                 std::to_string(server.connect_timeout.count()) +
                                 std::string(kConnectTimeoutNote) + hint);
    case Kind::kHandshakeTimeout:
      return {StatusCode::kUnavailable,
              where + " did not complete the TLS handshake within " +
                  std::to_string(server.connect_timeout.count()) +
                  std::string(kConnectTimeoutNote) + std::string(kStalled) + hint,
              StatusReason::kStalledServer};
    case Kind::kHelloTimeout:
      // The TCP connection was made (the kernel accepts for a stopped or
      // stalled server too): "cannot connect" would send the reader to the
      // network.
      return {StatusCode::kUnavailable,
              "connected to " + where + ", but it did not answer within " +
                  std::to_string(server.connect_timeout.count()) +
                  std::string(kConnectTimeoutNote) + std::string(kStalled) + hint,
              StatusReason::kStalledServer};
    case Kind::kCertificate:
      return {
          StatusCode::kUnavailable,
          "TLS failed: the certificate of " + where + " does not verify: " + failure.detail + hint,
          StatusReason::kTlsFailed};
    case Kind::kHandshake:
      return {StatusCode::kUnavailable,
              "TLS failed: handshake with " + where + " failed: " + failure.detail + hint,
              StatusReason::kTlsFailed};
    case Kind::kTls:
      return {StatusCode::kUnavailable,
              "TLS failed talking to " + where + ": " + failure.detail + hint,
              StatusReason::kTlsFailed};
    case Kind::kTlsConfig:
      return Status::InvalidArgument("TLS for " + where + ": " + failure.detail);
    case Kind::kTimeout:
      return Status::DeadlineExceeded(where + " did not answer within " +
                                      std::to_string(server.command_timeout.count()) +
                                      " ms (command_timeout_ms)");
    case Kind::kClosed:
      return {StatusCode::kUnavailable, where + " closed the connection" + hint,
              StatusReason::kConnectionLost};
    case Kind::kIo:
      return {StatusCode::kUnavailable,
              "lost connection to " + where + ": " + failure.detail + hint,
              StatusReason::kConnectionLost};
  }
  return Status::Internal("bug: a transport failure without a kind talking to " + where);
}

bool IsUnknownCommandReply(std::string_view text) {
  return StartsWith(text, "ERR unknown command") ||
         text.find("Unknown Redis command called from script") != std::string_view::npos;
}

bool IsRefusedCommandReply(std::string_view text) {
  return StartsWith(text, "NOPERM") || IsUnknownCommandReply(text);
}

Status ReplyErrorStatus(std::string_view text, const ServerParams& server) {
  const std::string where = "redis " + server.display;
  const std::string said(text);
  // A transaction refused at EXEC names why (a permission, OOM): that is
  // the error, not a bug (a writer without +exec was 500 internal).
  constexpr std::string_view kExecAbort = "EXECABORT Transaction discarded because of: ";
  if (StartsWith(text, kExecAbort) && text.size() > kExecAbort.size()) {
    Status inner = ReplyErrorStatus(text.substr(kExecAbort.size()), server);
    if (inner.code() != StatusCode::kInternal) return inner;
  }
  // A sentinel's password is not the data servers' user:password@, which
  // the hint named for both.
  const auto sentinel_hint = [&] {
    return " (" + server.display +
           " is a sentinel: its password is sentinel_password= in the URL, its user "
           "sentinel_user=)";
  };
  if (StartsWith(text, "NOAUTH")) {
    return {StatusCode::kUnavailable,
            "authentication failed for " + where + ": the server requires a password" +
                (server.sentinel ? sentinel_hint() : " (add user:password@ to the URL)") + ": " +
                said,
            StatusReason::kAuthFailed};
  }
  if (StartsWith(text, "WRONGPASS") || StartsWith(text, "ERR AUTH") ||
      StartsWith(text, "ERR invalid password") || StartsWith(text, "ERR Client sent AUTH")) {
    return {StatusCode::kUnavailable,
            "authentication failed for " + where + (server.sentinel ? sentinel_hint() : "") + ": " +
                said,
            StatusReason::kAuthFailed};
  }
  // Redis 7.0 words an ACL denial inside a script so (7.2 says NOPERM).
  if (StartsWith(text, "NOPERM") ||
      text.find("The user executing the script can't run this command") != std::string_view::npos) {
    return {StatusCode::kUnavailable, "permission denied by " + where + ": " + said,
            StatusReason::kPermissionDenied};
  }
  // A data server given as a sentinel: a setup to fix (exit 2), which read
  // as a sentinel down, with advice about rename-command, and redbloomd
  // waited for it forever. (Redis 7 quotes the command 'SENTINEL', 6.x
  // `SENTINEL`.)
  if (server.sentinel && IsUnknownCommandReply(text) &&
      text.find("SENTINEL") != std::string_view::npos) {
    return Status::InvalidArgument(
        where +
        " is not a Sentinel: it does not know the SENTINEL command (a server that holds data?): "
        "list sentinels in redis-sentinel://, or use redis:// for this server");
  }
  if (IsUnknownCommandReply(text)) {
    return {StatusCode::kUnavailable,
            "command not offered by " + where +
                " (renamed or disabled with rename-command, or newer than the server): " + said,
            StatusReason::kCommandMissing};
  }
  // A master demoted while a WAIT blocked on it (UNBLOCKED ... master ->
  // replica), or a WAIT that reached it just after: a failover under way,
  // not a bug (it was 500 internal during every Cluster failover with
  // wait_replicas).
  if (StartsWith(text, "UNBLOCKED") || StartsWith(text, "ERR WAIT cannot be used with replica")) {
    return Status::Unavailable(where + " stopped being a master (a failover): " + said);
  }
  if (StartsWith(text, "LOADING") || StartsWith(text, "BUSY") || StartsWith(text, "MASTERDOWN") ||
      StartsWith(text, "READONLY") || StartsWith(text, "TRYAGAIN") || StartsWith(text, "MISCONF")) {
    return Status::Unavailable(where + " cannot serve the command now: " + said);
  }
  // The server refused before running anything: transient states an
  // operator ends (or a retry outlives), not a bug.
  if (StartsWith(text, "ERR max number of clients reached")) {
    return {StatusCode::kUnavailable,
            where + " has all its connections in use (its maxclients): " + said,
            StatusReason::kServerFull};
  }
  if (StartsWith(text, "NOREPLICAS")) {
    return Status::Unavailable(where +
                               " refuses writes while fewer replicas than its "
                               "min-replicas-to-write are in sync: " +
                               said);
  }
  if (StartsWith(text, "MOVED ") || StartsWith(text, "ASK ") || StartsWith(text, "CLUSTERDOWN")) {
    // A redis:// or Sentinel store was pointed at a cluster node with the
    // wrong URL. A cluster store follows redirects in Run, and meets one
    // here only on a call to every node (list, ping) while the cluster is
    // down or moving slots: the URL is right then.
    if (!server.standalone) {
      return Status::Unavailable(where + " answered '" + said +
                                 "': the Redis Cluster is failing over or moving slots; retry "
                                 "once it is done");
    }
    return Status::Unavailable(where + " is a Redis Cluster node (it answered '" + said +
                               "'); use a redis-cluster:// URL");
  }
  // Redis kills only a script that has written nothing (one that wrote
  // needs SHUTDOWN NOSAVE): an operator's or a watchdog's act, not a bug
  // (it was 500 internal).
  if (text.find("Script killed by user with SCRIPT KILL") != std::string_view::npos) {
    return Status::Unavailable(where +
                               " stopped a script of redbloom's with SCRIPT KILL before "
                               "it wrote anything: " +
                               said);
  }
  if (StartsWith(text, "OOM")) return Status::ResourceExhausted(where + ": " + said);
  // A string longer than the server's proto-max-bulk-len (512 MB unless
  // lowered): a bitmap this server will not hold, not a bug.
  if (text.find("string exceeds maximum allowed size") != std::string_view::npos) {
    return Status::ResourceExhausted(where +
                                     " will not hold a string that long (its "
                                     "proto-max-bulk-len is below the bitmap's size): " +
                                     said);
  }
  if (StartsWith(text, "WRONGTYPE")) return Status::Conflict(where + ": " + said);
  if (StartsWith(text, "ERR DB index is out of range") ||
      StartsWith(text, "ERR invalid DB index")) {
    return Status::InvalidArgument(where + ": database " + std::to_string(server.db) +
                                   " does not exist: " + said);
  }
  return Status::Internal(where + " answered: " + said);
}

Status WrongTypeStatus(std::string_view key_display, std::string_view type,
                       std::string_view wanted) {
  return Status::Conflict("key '" + std::string(key_display) + "' holds a " + std::string(type) +
                          ", not " + std::string(wanted));
}

Status PingServer(Connection& c) {
  CommandBuffer cmd;
  cmd.Command({"PING"});
  REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
  REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
  if (r->type == REDIS_REPLY_ERROR) {
    const std::string_view text(r->str, r->len);
    if (IsRefusedCommandReply(text)) return Status::Ok();
    return ReplyErrorStatus(text, c.server());
  }
  if (r->type != REDIS_REPLY_STATUS || std::string_view(r->str, r->len) != "PONG") {
    return Status::Internal("PING to " + c.server().display + " got an unexpected reply");
  }
  return Status::Ok();
}

std::string InfoField(std::string_view info, std::string_view name) {
  for (size_t at = 0; at < info.size();) {
    const size_t end = std::min(info.find_first_of("\r\n", at), info.size());
    const std::string_view line = info.substr(at, end - at);
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':') {
      return std::string(line.substr(name.size() + 1));
    }
    at = info.find_first_not_of("\r\n", end);
    if (at == std::string_view::npos) break;
  }
  return "";
}

bool IsConfigurationFailure(const Status& s) {
  return ClassOf(s.reason()) == ReasonClass::kConfiguration;
}

bool IsPermanentFailure(const Status& s) {
  const ReasonClass kind = ClassOf(s.reason());
  return kind == ReasonClass::kConfiguration || kind == ReasonClass::kServerState;
}

bool IsStalledServer(const Status& s) { return s.reason() == StatusReason::kStalledServer; }

// Retrying would wait for replicas again, and they rarely come back within a
// backoff: the caller decides (an add is safe to repeat later).
Status RestartedStatus(std::string_view server, std::string_view was, std::string_view now) {
  return {StatusCode::kUnavailable,
          "redis " + std::string(server) + " restarted (run_id " + std::string(was.substr(0, 8)) +
              "... is now " + std::string(now.substr(0, 8)) +
              "...) since this client last used it: writes it acknowledged before the restart "
              "are kept only as far as its persistence (RDB/AOF) or a replica kept them; this "
              "call was not retried on the restarted server (see docs/format.md, Durability)",
          StatusReason::kRestarted};
}

Status AnswersLostStatus(std::string_view server, const Status& cause) {
  return {StatusCode::kUnavailable,
          "an add sent to redis " + std::string(server) +
              " lost its connection before its answer came back (" + cause.message() +
              "): its items may have been added, and whether each was new is unknown, so it was "
              "not sent again (sending them again is harmless, but answers 'not new' for any "
              "that were added)",
          StatusReason::kAnswersLost};
}

Status NotReplicatedStatus(std::string_view server, int confirmed, int wanted,
                           std::chrono::milliseconds waited) {
  return {StatusCode::kUnavailable,
          "only " + std::to_string(confirmed) + " of " + std::to_string(wanted) +
              " replicas of redis " + std::string(server) + " confirmed the write within " +
              std::to_string(waited.count()) +
              " ms (wait_replicas); it is on the master but may be lost in a failover",
          StatusReason::kNotReplicated};
}

std::optional<ClusterRedirect> ParseClusterRedirect(std::string_view text) {
  ClusterRedirect r;
  if (StartsWith(text, "TRYAGAIN")) {
    r.kind = ClusterRedirect::Kind::kTryAgain;
    return r;
  }
  if (StartsWith(text, "CLUSTERDOWN")) {
    r.kind = ClusterRedirect::Kind::kClusterDown;
    r.text = std::string(text.substr(0, 200));
    return r;
  }
  if (StartsWith(text, "MOVED ")) {
    r.kind = ClusterRedirect::Kind::kMoved;
    text.remove_prefix(6);
  } else if (StartsWith(text, "ASK ")) {
    r.kind = ClusterRedirect::Kind::kAsk;
    text.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  // "SLOT HOST:PORT"; HOST may be an IPv6 address (split at the last ':') or
  // empty (the node's own host).
  const size_t space = text.find(' ');
  const size_t colon = text.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) {
    return std::nullopt;
  }
  // Each number whole, and in range: a port read from "70025garbage" would
  // send the retry to another address than the one named.
  const char* const end = text.data() + text.size();
  auto [p1, e1] = std::from_chars(text.data(), text.data() + space, r.slot);
  auto [p2, e2] = std::from_chars(text.data() + colon + 1, end, r.port);
  if (e1 != std::errc() || p1 != text.data() + space || r.slot < 0 || r.slot >= kClusterSlots ||
      e2 != std::errc() || p2 != end || !IsPort(r.port)) {
    return std::nullopt;
  }
  r.host = std::string(text.substr(space + 1, colon - space - 1));
  if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']') {
    r.host = r.host.substr(1, r.host.size() - 2);
  }
  return r;
}

std::string_view ReplyText(const redisReply* r) {
  if (r == nullptr) return {};
  if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR ||
      r->type == REDIS_REPLY_STRING) {
    return std::string_view(r->str, r->len);
  }
  return {};
}

// ---- Replies ---------------------------------------------------------------

namespace {

// A 1000-item add or check is answered with a BITFIELD array of 7000 integers,
// nearly all 0 or 1. hiredis allocates (and the caller later frees) one
// redisReply per element, which was ~30% of the client's CPU per batch, spent
// after the server has answered, where nothing overlaps it. Elements that are
// 0 or 1 therefore point at these two shared, never-freed replies; FreeReply
// unhooks them before hiredis frees the rest. Top-level integers stay
// ordinary replies, so a caller may keep one.
redisReply SmallInteger(long long value) {
  redisReply r{};
  r.type = REDIS_REPLY_INTEGER;
  r.integer = value;
  return r;
}
redisReply shared_small_integers[2] = {SmallInteger(0), SmallInteger(1)};

bool IsShared(const redisReply* r) {
  return r == &shared_small_integers[0] || r == &shared_small_integers[1];
}

// hiredis' own reply functions with createInteger and freeObject replaced.
// Copying hiredis' table keeps this independent of its layout across
// versions; every context starts with the same default table.
struct ReplyFunctions;
const ReplyFunctions* reply_functions = nullptr;  // set once, before first use

struct ReplyFunctions {
  explicit ReplyFunctions(const redisReplyObjectFunctions& defaults)
      : table(defaults), create_integer(defaults.createInteger) {
    table.createInteger = &CreateInteger;
    table.freeObject = &FreeReply;
    reply_functions = this;
  }
  static void* CreateInteger(const redisReadTask* task, long long value);

  redisReplyObjectFunctions table;
  void* (*create_integer)(const redisReadTask*, long long);
};

void* ReplyFunctions::CreateInteger(const redisReadTask* task, long long value) {
  if (task->parent != nullptr && (value == 0 || value == 1)) {
    redisReply* r = &shared_small_integers[value];
    static_cast<redisReply*>(task->parent->obj)->element[task->idx] = r;
    return r;
  }
  return reply_functions->create_integer(task, value);
}

// Replaces the shared elements of `r`'s arrays with nulls, which
// freeReplyObject skips. (Only aggregates have elements.)
void Unhook(redisReply* r) {
  if (r->element == nullptr) return;
  for (size_t i = 0; i < r->elements; ++i) {
    redisReply* e = r->element[i];
    if (e == nullptr) continue;
    if (IsShared(e)) {
      r->element[i] = nullptr;
    } else {
      Unhook(e);
    }
  }
}

void UseSharedSmallIntegers(redisReader* reader) {
  // Initialised once (thread-safe), from the first reader's default table.
  static const ReplyFunctions functions(*reader->fn);
  reader->fn = const_cast<redisReplyObjectFunctions*>(&functions.table);
}

}  // namespace

void FreeReply(void* reply) {
  if (reply == nullptr) return;
  auto* r = static_cast<redisReply*>(reply);
  Unhook(r);
  freeReplyObject(r);
}

// ---- Connection ------------------------------------------------------------

namespace {

// Bytes asked of the socket per read. A 1000-item check's answer is ~28 KB,
// and hiredis read 16 KB at a time: 64 KB takes such an answer in one call.
constexpr size_t kReadChunk = 64 * 1024;
// The reader drops its buffer when idle and holding more than this: bigger
// than the largest answer of a batch, so steady traffic reallocates nothing,
// while a connection that once read a multi-megabyte bitmap gives it back.
constexpr size_t kReaderKeep = 256 * 1024;

}  // namespace

ReaderPtr NewReplyReader() {
  ReaderPtr reader(redisReaderCreate());
  if (reader != nullptr) {
    reader->maxbuf = kReaderKeep;
    UseSharedSmallIntegers(reader.get());
  }
  return reader;
}

Connection::Connection(std::unique_ptr<Transport> transport, const ServerParams* server)
    : transport_(std::move(transport)), reader_(NewReplyReader()), server_(server) {}

Connection::~Connection() = default;

Result<std::unique_ptr<Connection>> Connection::Open(const ServerParams& server) {
  const Deadline deadline = std::chrono::steady_clock::now() + server.connect_timeout;
  IoFailure failure;
  Socket socket = server.unix_path.empty()
                      ? ConnectTcp(server.host, server.port, deadline, &failure)
                      : ConnectUnix(server.unix_path, deadline, &failure);
  if (socket.get() < 0) return TransportStatus(failure, server);
  std::unique_ptr<Transport> transport;
  if (server.tls != nullptr) {
    transport = StartTls(std::move(socket), *server.tls, server.host, deadline, &failure);
    if (transport == nullptr) return TransportStatus(failure, server);
  } else {
    transport = NewPlainTransport(std::move(socket));
  }
  std::unique_ptr<Connection> conn(new Connection(std::move(transport), &server));
  if (conn->reader_ == nullptr) {
    return Status::ResourceExhausted("cannot allocate a reply reader for redis " + server.display);
  }
  // The handshake is part of connecting, so it gets what is left of the
  // connect timeout.
  const int left = MillisLeft(deadline);
  if (left == 0) return TransportStatus({IoFailure::Kind::kConnectTimeout, "", ""}, server);
  conn->connect_deadline_ = deadline;
  conn->SetIoTimeout(std::chrono::milliseconds(left));
  REDBLOOM_RETURN_IF_ERROR(conn->Hello());
  conn->connect_deadline_.reset();
  conn->SetIoTimeout(server.command_timeout);
  conn->wrote_ = false;
  return conn;
}

void Connection::SetIoTimeout(std::chrono::milliseconds timeout) {
  io_timeout_ = timeout;
  transport_->SetTimeout(timeout);
}

Status Connection::Hello() {
  const ServerParams& server = *server_;
  CommandBuffer hello;
  if (server.password.has_value()) {
    if (server.user.empty()) {
      hello.Command({"AUTH", *server.password});
    } else {
      hello.Command({"AUTH", server.user, *server.password});
    }
  }
  if (server.db != 0) hello.Command({"SELECT", std::to_string(server.db)});
  if (server.readonly) hello.Command({"READONLY"});
  const size_t info_at = hello.commands();
  hello.Command({"INFO", "server"});                  // for run_id (ConnectionPool::Acquire)
  hello.Command({"INFO", "replication"});             // a writable replica (below)
  if (!server.role.empty()) hello.Command({"ROLE"});  // last: its answer is checked below
  REDBLOOM_RETURN_IF_ERROR(Append(hello));
  ReplyPtr last;
  std::string replication;  // INFO replication, "" for a user without +info
  std::string role_from_info;
  for (size_t i = 0; i < hello.commands(); ++i) {
    if (i == info_at + 2) {  // ROLE: checked below, from INFO if it is denied
      REDBLOOM_ASSIGN_OR_RETURN(last, Read());
      continue;
    }
    if (i == info_at + 1) {
      // A replica with replica-read-only no would take writes its master
      // never sees (and a resync then drops): refused for every call, as a
      // read-only replica refuses writes with READONLY. A user without +info
      // is not checked.
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr info, Read());
      const std::string_view text =
          info->type == REDIS_REPLY_ERROR ? std::string_view() : ReplyText(info.get());
      replication = text;
      if (InfoField(text, "role") == "slave" && InfoField(text, "slave_read_only") == "0") {
        return {StatusCode::kUnavailable,
                "redis " + server.display +
                    " is a replica that accepts writes (replica-read-only no): adds there would "
                    "never reach its master. Point redbloom at the master (or a "
                    "redis-sentinel:// URL), or make the replica read-only to check against it",
                StatusReason::kWritableReplica};
      }
      continue;
    }
    if (i == info_at) {
      // A user without +info only loses restart detection.
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr info, Read());
      if (info->type != REDIS_REPLY_ERROR) {
        run_id_ = InfoField(ReplyText(info.get()), "run_id");
        REDBLOOM_RETURN_IF_ERROR(CheckMode(InfoField(ReplyText(info.get()), "redis_mode")));
      } else if (!IsRefusedCommandReply(ReplyText(info.get()))) {
        return ReplyErrorStatus(ReplyText(info.get()), server);
      }
      continue;
    }
    REDBLOOM_ASSIGN_OR_RETURN(last, ReadOk());
  }
  if (server.role.empty()) return Status::Ok();
  // ROLE: ["master", offset, replicas] or ["slave", host, port, state, offset].
  const redisReply* r = last.get();
  std::string_view role =
      r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? ReplyText(r->element[0]) : "";
  bool in_sync = role == "slave" && r->elements >= 4 && ReplyText(r->element[3]) == "connected";
  if (r->type == REDIS_REPLY_ERROR) {
    const std::string_view denied = ReplyText(r);
    // A user without +role: INFO replication says the same, if it may run it.
    if (!IsRefusedCommandReply(denied) || replication.empty()) {
      Status s = ReplyErrorStatus(denied, server);
      if (!IsRefusedCommandReply(denied)) return s;
      return s.WithSuffix(
          " (a Sentinel store checks each server's role when it connects: grant the user +role, "
          "or +info)");
    }
    role_from_info = InfoField(replication, "role");
    role = role_from_info;
    in_sync = role == "slave" && InfoField(replication, "master_link_status") == "up";
  }
  if (role != server.role) {
    return Status::Unavailable(
        "redis " + server.display + " is a " +
        (role.empty() ? std::string("server of unknown role") : std::string(role)) + ", not a " +
        server.role + " (a failover may be under way)");
  }
  if (role == "slave" && !in_sync) {
    return Status::Unavailable("replica redis " + server.display +
                               " is not in sync with its master yet");
  }
  return Status::Ok();
}

Status Connection::CheckMode(std::string_view mode) const {
  const ServerParams& server = *server_;
  if (mode.empty() || mode == "standalone") return Status::Ok();
  if (!server.standalone) {
    // A Redis Cluster node given as a sentinel answered CLUSTER SLOTS
    // "unknown command 'CLUSTER'".
    if (server.sentinel || mode != "sentinel") return Status::Ok();
    return Status::InvalidArgument("redis " + server.display +
                                   " is a Sentinel, not a Redis Cluster node: use "
                                   "redis-sentinel://" +
                                   server.display + "/MASTER_NAME");
  }
  if (mode == "cluster") {
    return Status::InvalidArgument(
        "redis " + server.display +
        " is a Redis Cluster node, which holds only its own slots' keys: use "
        "redis-cluster://" +
        server.display);
  }
  if (mode == "sentinel") {
    return Status::InvalidArgument("redis " + server.display +
                                   " is a Sentinel, which holds no data: use redis-sentinel://" +
                                   server.display + "/MASTER_NAME");
  }
  return Status::InvalidArgument("redis " + server.display + " runs in mode '" + std::string(mode) +
                                 "', not as a standalone server");
}

Status Connection::Fail(const IoFailure& failure) {
  broken_ = true;
  if (!received_ && server_->tls == nullptr &&
      (failure.kind == IoFailure::Kind::kClosed || failure.kind == IoFailure::Kind::kIo)) {
    // A TLS port resets a connection whose first bytes are not a TLS
    // handshake, before sending anything.
    IoFailure hinted = failure;
    hinted.hint =
        "it closed the connection without answering: a TLS port does that to plain text (then use "
        "TLS: rediss://, rediss-cluster:// or rediss-sentinel://), and so does a proxy whose "
        "Redis is down";
    return TransportStatus(hinted, *server_);
  }
  if (received_ && unanswered_ > 0 &&
      (failure.kind == IoFailure::Kind::kClosed || failure.kind == IoFailure::Kind::kIo)) {
    // Redis gives no reason when it drops a client; the one a setting
    // causes, and the redis log alone names, is said here (an audit met it
    // with a low limit and found no hint).
    IoFailure hinted = failure;
    hinted.hint =
        "with replies owed; possible causes: a restart, CLIENT KILL, maxmemory-clients, a proxy or "
        "firewall, or a reply past the server's client-output-buffer-limit for normal clients: a "
        "large batch's (lower batch_items) or a 4 MiB piece of a bitmap read by export or merge "
        "(raise the limit), or a command past its client-query-buffer-limit: a load's 1 MiB "
        "upload pieces need more than Redis's 1mb minimum";
    return TransportStatus(hinted, *server_);
  }
  return TransportStatus(failure, *server_);
}

Status Connection::Broken() const {
  return Status::Unavailable("connection to redis " + server_->display + " is broken");
}

Status Connection::Append(const CommandBuffer& commands) {
  REDBLOOM_RETURN_IF_ERROR(commands.Validate());
  if (broken_) return Broken();
  out_.append(commands.data());
  unanswered_ += commands.commands();
  return Status::Ok();
}

Status Connection::AppendRaw(std::string_view bytes) {
  if (broken_) return Broken();
  out_.append(bytes);
  return Status::Ok();
}

// The timeout bounds a whole send or a whole reply, not each wait in it: a
// server, or a path to it, that reads or sends a little at a time would
// otherwise hold the caller for as long as it likes (a byte per 100 ms held a
// check for 42 s; 4 KiB read every 20 ms held a 10 MB send for 35 s). The
// first wait starts the deadline (the connect deadline, while connecting),
// later ones get what is left of it, and the transport gets its own timeout
// back when the send or reply is done.
class Connection::WaitBudget {
 public:
  explicit WaitBudget(Connection* c) : c_(c), deadline_(c->connect_deadline_) {}
  WaitBudget(const WaitBudget&) = delete;
  WaitBudget& operator=(const WaitBudget&) = delete;
  ~WaitBudget() {
    if (shortened_) c_->transport_->SetTimeout(c_->io_timeout_);
  }

  // Before each wait: false once the deadline has passed.
  bool Next() {
    const auto now = std::chrono::steady_clock::now();
    if (!deadline_.has_value()) {
      deadline_ = now + c_->io_timeout_;
      return true;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline_ - now);
    if (left.count() <= 0) return false;
    if (left < c_->io_timeout_ || shortened_) {
      c_->transport_->SetTimeout(std::min(left, c_->io_timeout_));
      shortened_ = true;
    }
    return true;
  }

  // The failure of a wait that timed out, or of Next() returning false.
  IoFailure::Kind TimeoutKind() const {
    return c_->connect_deadline_ ? IoFailure::Kind::kHelloTimeout : IoFailure::Kind::kTimeout;
  }

 private:
  Connection* const c_;
  std::optional<Deadline> deadline_;
  bool shortened_ = false;
};

Status Connection::Flush() {
  if (broken_) return Broken();
  wrote_ = true;
  WaitBudget budget(this);
  size_t done = 0;
  while (done < out_.size()) {
    if (!budget.Next()) return Fail({budget.TimeoutKind(), "", ""});
    IoFailure failure;
    const ssize_t n = transport_->Write(out_.data() + done, out_.size() - done, &failure);
    if (n < 0 && failure.kind == IoFailure::Kind::kTimeout) failure.kind = budget.TimeoutKind();
    if (n < 0) return Fail(failure);
    done += static_cast<size_t>(n);
  }
  // clear() keeps the capacity: the next batch's commands reuse it.
  out_.clear();
  return Status::Ok();
}

Result<ReplyPtr> Connection::ReadReply() {
  WaitBudget budget(this);  // for the whole reply
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
      broken_ = true;
      std::string hint;
      if (server_->tls == nullptr && (first_byte_ == '\x15' || first_byte_ == '\x16')) {
        hint = " (it answered with TLS: use rediss://, rediss-cluster:// or rediss-sentinel://)";
      }
      return Status::Internal("protocol error talking to redis " + server_->display + ": " +
                              reader_->errstr + hint);
    }
    if (raw != nullptr) {
      ReplyPtr reply(static_cast<redisReply*>(raw));
      if (unanswered_ > 0) --unanswered_;
      if (reply->type == REDIS_REPLY_ERROR) {
        // A transaction refused at EXEC names why after this prefix.
        std::string_view text = ReplyText(reply.get());
        constexpr std::string_view kExecAbort = "EXECABORT Transaction discarded because of: ";
        if (StartsWith(text, kExecAbort)) text.remove_prefix(kExecAbort.size());
        if (StartsWith(text, "READONLY")) saw_readonly_ = true;
        if (StartsWith(text, "OOM")) saw_oom_ = true;
      }
      return reply;
    }
    // As hiredis did: whatever is queued goes out before waiting for input.
    if (!out_.empty()) REDBLOOM_RETURN_IF_ERROR(Flush());
    if (in_.size() != kReadChunk) in_.resize(kReadChunk);
    if (!budget.Next()) return Fail({budget.TimeoutKind(), "", ""});
    IoFailure failure;
    const ssize_t n = transport_->Read(in_.data(), in_.size(), &failure);
    if (n < 0 && failure.kind == IoFailure::Kind::kTimeout) failure.kind = budget.TimeoutKind();
    if (n < 0) return Fail(failure);
    if (!received_) first_byte_ = in_[0];
    received_ = true;
    if (redisReaderFeed(reader_.get(), in_.data(), static_cast<size_t>(n)) != REDIS_OK) {
      broken_ = true;
      return Status::ResourceExhausted("out of memory reading from redis " + server_->display);
    }
  }
}

Result<ReplyPtr> Connection::Read() {
  if (broken_) return Broken();
  wrote_ = true;
  for (;;) {
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr reply, ReadReply());
    // Owed replies come first in the stream; they confirm best-effort count
    // updates, so their content, error or not, changes nothing here.
    if (owed_replies_ == 0) {
      if (reply->type == REDIS_REPLY_ERROR && !redirect_.has_value()) {
        redirect_ = ParseClusterRedirect(ReplyText(reply.get()));
      }
      return reply;
    }
    --owed_replies_;
  }
}

Result<ReplyPtr> Connection::ReadOk() {
  REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Read());
  if (r->type == REDIS_REPLY_ERROR) return ReplyErrorStatus(ReplyText(r.get()), *server_);
  return r;
}

bool Connection::Settle() {
  // Reads owed replies that have already arrived, without waiting for the
  // others: those are read (and dropped) by the next Read, after the next
  // command is already on its way, so an owed reply never costs a round trip.
  while (owed_replies_ > 0 && !broken_) {
    if (!transport_->InputReady()) break;
    if (!ReadReply().ok()) break;  // marks the connection broken
    --owed_replies_;
  }
  return !broken_;
}

Connection::Wake Connection::WaitForInput(int wake_fd, std::chrono::milliseconds timeout) {
  if (broken_ || reader_->pos < reader_->len || transport_->InputReady()) return Wake::kInput;
  pollfd p[2] = {{transport_->fd(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
  for (;;) {
    const int n = ::poll(p, wake_fd >= 0 ? 2 : 1, static_cast<int>(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return Wake::kTimeout;
    if (wake_fd >= 0 && p[1].revents != 0) return Wake::kWoken;
    return Wake::kInput;
  }
}

// ---- ConnectionPool --------------------------------------------------------

ConnectionPool::ConnectionPool(ServerParams server, int size)
    : server_(std::move(server)), size_(size < 1 ? 1 : size), fork_generation_(ForkGeneration()) {}

void ConnectionPool::LeaveToParent(std::vector<std::unique_ptr<Connection>>* closing) {
  std::move(idle_.begin(), idle_.end(), std::back_inserter(*closing));
  idle_.clear();
  open_ = 0;
  fork_generation_ = ForkGeneration();
}

ConnectionPool::~ConnectionPool() = default;

Result<ConnectionPool::Lease> ConnectionPool::Acquire() {
  const auto called = std::chrono::steady_clock::now();
  const auto deadline = called + server_.command_timeout;
  // The server refused this pool another connection at its maxclients: the
  // callers share those the pool holds, as they do a full pool's, until one
  // comes back or the deadline passes.
  std::optional<Status> server_full;
  // Closed at the first unlock, before anything is opened: at maxclients
  // their slots are the ones a new connection needs.
  std::vector<std::unique_ptr<Connection>> expired;
  std::unique_lock lock(mu_);
  // Before anything reads or writes a socket: one a parent shares answers it.
  if (fork_generation_ != ForkGeneration()) LeaveToParent(&expired);
  TakeExpired(called, &expired);
  const uint64_t generation = fork_generation_;
  while (true) {
    while (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      lock.unlock();
      expired.clear();
      // A connection still owed a reply was in use a moment ago; readable
      // means that reply, not a closed socket.
      const bool usable = conn->Settle() && (conn->owed_replies_ > 0 || !conn->LooksClosed());
      if (usable) {
        conn->fork_generation_ = generation;
        conn->wrote_ = false;
        conn->saw_readonly_ = false;
        conn->saw_oom_ = false;
        conn->script_reads_ = false;
        conn->redirect_.reset();
        return Lease(this, std::move(conn));
      }
      conn.reset();  // closes it
      lock.lock();
      --open_;
    }
    if (open_ < size_ && !(server_full.has_value() && open_ > 0)) {
      ++open_;
      lock.unlock();
      expired.clear();
      Result<std::unique_ptr<Connection>> conn = Connection::Open(server_);
      if (!conn.ok()) {
        lock.lock();
        --open_;
        returned_.notify_one();
        // Over TLS a server at maxclients closes or resets the connection
        // without a word; with connections of this pool up, the server and
        // TLS work, so that is taken for the same.
        const StatusReason why = conn.status().reason();
        const bool full = why == StatusReason::kServerFull ||
                          (server_.tls != nullptr && why == StatusReason::kConnectionLost);
        if (open_ > 0 && full) {
          server_full = conn.status();
          continue;
        }
        return conn.status();
      }
      const std::string& now = (*conn)->run_id_;
      if (!now.empty()) {
        lock.lock();
        if (run_id_.empty() || run_id_ == now) {
          run_id_ = now;
          lock.unlock();
        } else {
          const std::string was = std::exchange(run_id_, now);
          (*conn)->idle_since_ = std::chrono::steady_clock::now();
          idle_.push_back(std::move(conn).value());
          returned_.notify_one();
          return RestartedStatus(server_.display, was, now);
        }
      }
      (*conn)->fork_generation_ = generation;
      return Lease(this, std::move(conn).value());
    }
    if (returned_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        (open_ >= size_ || server_full.has_value())) {
      if (server_full.has_value()) {
        // Deadline exceeded, as for a full pool: not retried (a retry would
        // wait as long again), 504.
        return Status(StatusCode::kDeadlineExceeded,
                      "redis " + server_.display + " refused this pool another connection (" +
                          server_full->message() + ") and the pool's own stayed busy for " +
                          std::to_string(server_.command_timeout.count()) +
                          " ms: raise the server's maxclients, or set pool_size below it",
                      StatusReason::kServerFull);
      }
      return Status::DeadlineExceeded("all " + std::to_string(size_) + " connections to redis " +
                                      server_.display + " stayed busy for " +
                                      std::to_string(server_.command_timeout.count()) +
                                      " ms (raise pool_size)");
    }
  }
}

void ConnectionPool::CloseIdle() {
  std::vector<std::unique_ptr<Connection>> closing;
  {
    std::lock_guard lock(mu_);
    closing.swap(idle_);
    open_ -= static_cast<int>(closing.size());
  }
  returned_.notify_all();
}  // `closing` closes them here, outside the lock

void ConnectionPool::TakeExpired(std::chrono::steady_clock::time_point now,
                                 std::vector<std::unique_ptr<Connection>>* closing) {
  if (server_.idle_timeout.count() <= 0 || idle_.size() < 2) return;
  // idle_ is in the order connections came back, so the expired ones lead.
  // The last one back stays, however long idle: the next call reuses it
  // rather than connect again, and one connection is no burst's leftover.
  const auto cutoff = now - server_.idle_timeout;
  auto end = idle_.begin();
  while (end + 1 != idle_.end() && (*end)->idle_since_ <= cutoff) ++end;
  if (end == idle_.begin()) return;
  open_ -= static_cast<int>(end - idle_.begin());
  std::move(idle_.begin(), end, std::back_inserter(*closing));
  idle_.erase(idle_.begin(), end);
}

void ConnectionPool::Release(std::unique_ptr<Connection> conn) {
  const bool reusable =
      !conn->broken() && conn->unanswered_ == static_cast<size_t>(conn->owed_replies_);
  std::vector<std::unique_ptr<Connection>> expired;  // closed on return, after `lock`
  std::lock_guard lock(mu_);
  if (conn->fork_generation_ != fork_generation_) {
    // Lent before a fork() and handed back in the child, whose pool no
    // longer counts it (LeaveToParent): the parent's socket, closed unused.
    expired.push_back(std::move(conn));
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (reusable) {
    conn->idle_since_ = now;
    idle_.push_back(std::move(conn));
  } else {
    expired.push_back(std::move(conn));
    --open_;
  }
  TakeExpired(now, &expired);
  returned_.notify_one();
}

}  // namespace redbloom::internal
