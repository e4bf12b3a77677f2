// A small blocking Redis client: RESP command building, connections (plain
// TCP or TLS, transport.h) with timeouts and AUTH/SELECT, replies parsed by
// hiredis' reader, a bounded pool, and the one place where transport and
// reply errors become a Status. Internal.
//
// Thread safety: a Connection is used by one thread at a time (the pool hands
// it out); ConnectionPool is thread-safe.
#ifndef REDBLOOM_SRC_REDIS_REDIS_CLIENT_H_
#define REDBLOOM_SRC_REDIS_REDIS_CLIENT_H_

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/status.h"
#include "redis/transport.h"

namespace redbloom::internal {

class TlsContext;  // tls_transport.h

// Frees a reply read through a Connection, whose integer 0s and 1s inside
// arrays are shared objects (see UseSharedSmallIntegers); freeReplyObject
// alone must never see those. Replies of other contexts free the same way.
void FreeReply(void* reply);

struct ReplyDeleter {
  void operator()(redisReply* r) const { FreeReply(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

struct ReaderDeleter {
  void operator()(redisReader* r) const {
    if (r != nullptr) redisReaderFree(r);
  }
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;

// A RESP reader as every Connection has: its integer 0s and 1s inside arrays
// are the shared objects FreeReply knows; null if out of memory. Connection
// reads through one; tests and the reply fuzzer parse bytes with one.
ReaderPtr NewReplyReader();

// For code that talks to Redis through hiredis' own contexts (benchmarks).
struct ContextDeleter {
  void operator()(redisContext* c) const {
    if (c != nullptr) redisFree(c);
  }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

// Builds RESP-encoded commands into one buffer, so a batch of thousands of
// arguments costs no allocation per argument (hiredis' argv API copies every
// argument into a fresh sds string; on a 7000-op BITFIELD that was a third of
// the client's time).
class CommandBuffer {
 public:
  // Starts a command of `argc` arguments (the command name included).
  void Begin(size_t argc);
  void Arg(std::string_view s);
  void Arg(uint64_t v);
  // One argument: `prefix` then the decimal digits of v ("#42" for BITFIELD's
  // type-width-scaled offsets).
  void Arg(char prefix, uint64_t v);
  // Appends `args` pre-encoded RESP arguments (e.g. "$3\r\nSET\r\n", 1)
  // verbatim.
  void Raw(std::string_view resp, size_t args) {
    Count(args);
    buf_.append(resp);
  }
  // Convenience: a whole command from string arguments.
  void Command(std::initializer_list<std::string_view> args);

  size_t commands() const { return commands_; }
  const std::string& data() const { return buf_; }
  void Clear() {
    buf_.clear();
    commands_ = 0;
    missing_ = 0;
    miscounted_ = false;
  }
  // kInternal if a command got more or fewer arguments than Begin() announced:
  // sent anyway, the server would read the surplus as another command.
  Status Validate() const;

 private:
  void Count(size_t args) {
    if (args > missing_) miscounted_ = true;
    missing_ -= std::min(args, missing_);
  }

  std::string buf_;
  size_t commands_ = 0;
  size_t missing_ = 0;  // arguments the current command still expects
  bool miscounted_ = false;
};

struct ServerParams {
  std::string host;
  int port = 6379;
  // redis+unix://: the server's Unix domain socket (host and port unused).
  std::string unix_path;
  // Redis Cluster with read_from=replica: send READONLY on connect, so the
  // node serves reads of its master's slots while it is a replica (a master
  // ignores it).
  bool readonly = false;
  std::string user;
  std::optional<std::string> password;
  int db = 0;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds command_timeout{5000};
  // A pooled connection idle this long is closed (StoreOptions); 0 = never.
  std::chrono::milliseconds idle_timeout{0};
  std::string display;  // "127.0.0.1:6379", for messages
  // TLS (rediss://): the CA, certificate and key to use; null for plain TCP.
  std::shared_ptr<const TlsContext> tls;
  // The role the server must report (ROLE) when a connection opens:
  // "master" or "slave" (then also with its link to the master up); empty
  // for any. Sentinel sets it, so a pool never starts talking to a master
  // that was demoted, or to a replica still syncing. Checked in the same
  // round trip as AUTH and SELECT.
  std::string role;
  // A server that is no plain Redis (INFO server's redis_mode "cluster" or
  // "sentinel") refused when a connection opens: redis:// and a Sentinel's
  // master set it. A cluster node answered only its own slots (a listing
  // that silently missed the other nodes' filters) and a sentinel answered
  // every command "unknown", while /readyz said ready.
  bool standalone = false;
  // A Sentinel (redis-sentinel://'s sentinels): its password is the URL's
  // sentinel_password=, which an authentication failure names.
  bool sentinel = false;
};

// Errors. Every transport failure and error reply becomes a Status here and
// nowhere else:
//   I/O error, EOF, refused/unreachable       -> kUnavailable   (retryable)
//   read/write timeout                        -> kDeadlineExceeded
//   connect or TLS handshake timeout          -> kUnavailable
//   certificate does not verify, other TLS
//     handshake or protocol failure           -> kUnavailable "TLS ..." (permanent)
//   cacert/cert/key cannot be loaded          -> kInvalidArgument
//   a server in the wrong role (ROLE)         -> kUnavailable
//   NOAUTH / WRONGPASS / AUTH misconfigured    -> kUnavailable "authentication failed ..."
//   LOADING / BUSY / MASTERDOWN / READONLY,
//     maxclients reached, NOREPLICAS           -> kUnavailable   (server not ready)
//   OOM                                        -> kResourceExhausted
//   WRONGTYPE                                  -> kConflict (see WrongTypeStatus)
//   NOPERM                                     -> kUnavailable "permission denied ..."
//   anything else the server says             -> kInternal, with the server's text
// The failures retrying cannot cure carry a StatusReason, which the
// predicates below read (never the message, which context may prefix).

Status TransportStatus(const IoFailure& failure, const ServerParams& server);
Status ReplyErrorStatus(std::string_view text, const ServerParams& server);
// An error reply for a command the server does not know (renamed away with
// rename-command, or newer than the server).
bool IsUnknownCommandReply(std::string_view text);
// The same, or a command the user's ACL denies (NOPERM): a command this
// client may do without (INFO for restart detection) is skipped on either.
bool IsRefusedCommandReply(std::string_view text);
// The message for a key of the wrong type: "key X holds a list, not a bitmap".
Status WrongTypeStatus(std::string_view key_display, std::string_view type,
                       std::string_view wanted = "a bitmap");
// True for failures that retrying at once cannot fix (bad credentials, ACL
// denial, a certificate that does not verify, too few replicas to confirm a
// write), although their code is kUnavailable.
bool IsPermanentFailure(const Status& s);
// The permanent failures that are configuration to mend (authentication,
// permissions, TLS), as opposed to a server's state (restarted, replicas).
bool IsConfigurationFailure(const Status& s);
// True for a server that took the TCP connection, then did not complete the
// TLS handshake or answer the greeting within connect_timeout
// (TransportStatus): it is stalled, stopped or overloaded, so a retry on the
// same server would most likely wait as long again. (A connect that timed
// out is not one: the address may be gone, and a retry resolves the name
// again, as a failover by DNS needs.)
bool IsStalledServer(const Status& s);

// The value of field `name` in an INFO reply's text ("" if it has none):
// "role" in "# Replication\r\nrole:master\r\n..." is "master".
std::string InfoField(std::string_view info, std::string_view name);
// The message of a server found restarted (see ConnectionPool::Acquire);
// IsPermanentFailure knows it.
Status RestartedStatus(std::string_view server, std::string_view was, std::string_view now);
// The message of a write that fewer replicas confirmed than wait_replicas
// asks for (see WaitForReplicas); IsPermanentFailure knows it.
Status NotReplicatedStatus(std::string_view server, int confirmed, int wanted,
                           std::chrono::milliseconds waited);
// An add whose caller wants to know which items were new, sent in full, and
// whose answer was lost with its connection (`cause`): it may have run, and
// sent again it would answer "not new" for every item it added, so it is not
// sent again. IsPermanentFailure knows it.
Status AnswersLostStatus(std::string_view server, const Status& cause);

// A Redis Cluster node's answer that the command belongs elsewhere or must
// wait. The node executed nothing of the command that got it.
struct ClusterRedirect {
  enum class Kind { kMoved, kAsk, kTryAgain, kClusterDown };
  Kind kind = Kind::kMoved;
  int slot = -1;
  std::string host;  // kMoved, kAsk: where the slot is (empty: the node's own host)
  int port = 0;
  // kClusterDown: the node's words ("CLUSTERDOWN The cluster is down", "...
  // Hash slot not served"), which say whether this slot or the cluster is
  // down.
  std::string text;
};
// Parses "MOVED 3999 127.0.0.1:6381", "ASK ...", "TRYAGAIN ...",
// "CLUSTERDOWN ..."; nullopt for any other reply text, and for a MOVED or
// ASK whose slot is not 0..16383 or whose port is not 1..65535.
std::optional<ClusterRedirect> ParseClusterRedirect(std::string_view error_text);

// One connection (TCP, or TLS over TCP), authenticated, on the right
// database, and in the right role.
class Connection {
 public:
  // Connects, runs the TLS handshake, authenticates, selects the database
  // and checks the role, all within connect_timeout; then sets
  // command_timeout for every later read/write. `server` must outlive the
  // connection.
  static Result<std::unique_ptr<Connection>> Open(const ServerParams& server);
  ~Connection();

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Queues encoded commands; they go out with the next Flush() or Read().
  Status Append(const CommandBuffer& commands);
  // Queues raw protocol bytes, which may end in the middle of a command (the
  // caller completes it with later calls before reading any reply, and
  // counts the commands with CountCommands).
  Status AppendRaw(std::string_view bytes);
  void CountCommands(size_t n) { unanswered_ += n; }
  // Writes everything queued.
  Status Flush();
  // Reads the next reply (writing anything queued first). A reply of type
  // REDIS_REPLY_ERROR is a reply, not a failure; a transport failure marks the
  // connection broken, and it is then never reused.
  Result<ReplyPtr> Read();
  // Reads one reply; an error reply becomes its Status (ReplyErrorStatus).
  Result<ReplyPtr> ReadOk();

  bool broken() const { return broken_; }
  void MarkBroken() { broken_ = true; }

  // While it lives, sends and replies may take `extra` longer than the
  // command timeout: for a command the server needs long for (allocating a
  // bitmap of hundreds of MB holds it for seconds).
  class LongerWait {
   public:
    LongerWait(Connection& c, std::chrono::milliseconds extra) : c_(c), was_(c.io_timeout_) {
      c_.SetIoTimeout(was_ + extra);
    }
    ~LongerWait() { c_.SetIoTimeout(was_); }
    LongerWait(const LongerWait&) = delete;
    LongerWait& operator=(const LongerWait&) = delete;

   private:
    Connection& c_;
    const std::chrono::milliseconds was_;
  };
  // The extra wait for a command that allocates `bytes` on the server (at
  // 25 MB/s, well below what a loaded server zero-fills).
  static std::chrono::milliseconds AllocationWait(uint64_t bytes) {
    return std::chrono::milliseconds(bytes / 25'000);
  }
  // True once anything was written since the connection was handed out: a
  // failure after that may have executed on the server.
  bool wrote() const { return wrote_; }
  // True once the server answered READONLY since the connection was handed
  // out: it is a replica now (a demoted master), so no write sent on this
  // connection ran, and the command may be sent again to the new master.
  bool saw_readonly() const { return saw_readonly_; }
  // True once the server answered OOM (used memory over maxmemory) since the
  // connection was handed out.
  bool saw_oom() const { return saw_oom_; }
  // Script-reads mode: read transactions go as one no-writes script, which
  // Redis runs while out of memory, instead of MULTI/EXEC, which it refuses
  // then (SendReads, redis_pipeline.h). Off whenever a connection is handed
  // out.
  bool script_reads() const { return script_reads_; }
  void set_script_reads(bool on) { script_reads_ = on; }
  // True for a second after a read on this connection was refused for OOM
  // and then worked as a script (RememberOom): reads start as scripts then,
  // rather than draw another refused MULTI each.
  bool oom_recently() const { return std::chrono::steady_clock::now() < oom_until_; }
  void RememberOom() { oom_until_ = std::chrono::steady_clock::now() + std::chrono::seconds(1); }
  // Replies to commands already sent that are still to be read (a pipeline
  // of transactions, after the one being handled): while there are any,
  // nothing may send a command and read "its" reply (KeyType would read
  // another's).
  bool replies_pending() const { return unanswered_ > 0; }
  const ServerParams& server() const { return *server_; }

  // For a subscriber (Sentinel's +switch-master): waits until a reply can be
  // read, `wake_fd` becomes readable, or `timeout` passes.
  enum class Wake { kInput, kWoken, kTimeout };
  Wake WaitForInput(int wake_fd, std::chrono::milliseconds timeout);

  // Counts the reply of a command sent without waiting for it (an add's
  // count update); the next Read drops it, so it never costs a round trip.
  void OweReply() { ++owed_replies_; }

  // Redis Cluster: the first redirect (MOVED, ASK, TRYAGAIN, CLUSTERDOWN)
  // read since the connection was handed out, if any.
  const std::optional<ClusterRedirect>& redirect() const { return redirect_; }

 private:
  friend class ConnectionPool;
  Connection(std::unique_ptr<Transport> transport, const ServerParams* server);
  Status Fail(const IoFailure& failure);
  Status Broken() const;
  // Sends the AUTH, SELECT and ROLE a new connection needs, and checks the
  // answers.
  Status Hello();
  // kInvalidArgument when the server's redis_mode is not what the
  // connection may talk to: a standalone one (ServerParams::standalone) only
  // a plain server, a cluster one no Sentinel.
  Status CheckMode(std::string_view mode) const;
  // The next reply in the stream, owed or not.
  Result<ReplyPtr> ReadReply();
  // Reads owed replies that have arrived; false if the connection broke.
  bool Settle();
  // True if the server has closed the connection (or sent something nobody
  // asked for) while it sat idle.
  bool LooksClosed() const { return transport_->LooksClosed(); }

  // Sets the transport's I/O timeout and remembers it (ReadReply).
  void SetIoTimeout(std::chrono::milliseconds timeout);
  // One deadline for a whole send or reply (Flush, ReadReply).
  class WaitBudget;

  std::unique_ptr<Transport> transport_;
  // The wait a whole reply gets: command_timeout, or while connecting what
  // is left of connect_timeout, which then also ends at connect_deadline_.
  std::chrono::milliseconds io_timeout_{0};
  std::optional<Deadline> connect_deadline_;
  ReaderPtr reader_;
  const ServerParams* server_;
  std::string out_;        // queued output, not yet written
  std::string in_;         // one read's worth of input, before the reader copies it
  bool received_ = false;  // anything ever arrived, and what first (for hints on
  char first_byte_ = 0;    // a TLS port spoken to in plain text, and back)
  bool broken_ = false;
  bool wrote_ = false;
  bool saw_readonly_ = false;
  bool saw_oom_ = false;
  bool script_reads_ = false;
  uint64_t fork_generation_ = 0;  // its pool's when lent (util/fork_generation.h)
  std::chrono::steady_clock::time_point oom_until_{};   // kept across leases
  std::chrono::steady_clock::time_point idle_since_{};  // when last handed back
  std::string run_id_;  // INFO server's run_id at connect; "" if INFO is denied
  int owed_replies_ = 0;
  // Commands queued or sent whose replies have not been read, owed ones
  // included. A connection handed back with more than the owed ones (a
  // caller that stopped at an error reply of a pipeline) would hand the next
  // user those replies as its own, so the pool closes it instead.
  size_t unanswered_ = 0;
  std::optional<ClusterRedirect> redirect_;
};

// Sends PING on `c`: reachable and authenticated, or the Status why not. An
// ACL user without +ping gets NOPERM, which proves both just as well, so a
// reader's ACL needs only the commands its reads use (README, "ACL").
Status PingServer(Connection& c);

class ConnectionPool {
 public:
  ConnectionPool(ServerParams server, int size);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;
  ~ConnectionPool();

  // A connection on loan; it goes back to the pool when the Lease dies, or is
  // closed if it broke.
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<Connection> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (conn_ != nullptr) pool_->Release(std::move(conn_));
    }
    Connection& operator*() { return *conn_; }
    Connection* operator->() { return conn_.get(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  // An idle connection (the most recently used, so one thread keeps reusing
  // one warm connection), else a new one while fewer than `size` exist, else
  // waits up to command_timeout for one to come back (kDeadlineExceeded).
  // Acquire and Release also close the idle connections unused for
  // ServerParams::idle_timeout, but for the last one handed back: with the
  // most recent lent first, those are the ones a fall in traffic left over.
  //
  // Restarts: every new connection reads the server's run_id. If it differs
  // from the one this pool saw before, the server restarted in between and
  // may have come back with an older dataset (its last RDB or AOF), without
  // writes it had acknowledged. Retrying a call on it would report success
  // for work landing on that older dataset and hide the loss, so Acquire
  // fails once with RestartedStatus (kUnavailable, not retried by the
  // sources) and keeps the connection for the next caller.
  Result<Lease> Acquire();

  const ServerParams& server() const { return server_; }

  // Closes the idle connections (those on loan are not touched): for a
  // server the caller no longer uses, whose sockets would otherwise stay
  // open (CLOSE-WAIT once it stops) for the pool's life.
  void CloseIdle();

 private:
  void Release(std::unique_ptr<Connection> conn);
  // In a child of fork() (ForkGeneration moved on): moves the idle
  // connections, the parent's sockets, to `closing`, to be closed without a
  // byte sent or read, and forgets those lent in the parent, which never
  // come back here. Called with mu_ held.
  void LeaveToParent(std::vector<std::unique_ptr<Connection>>* closing);
  // Moves the idle connections unused for server_.idle_timeout to `closing`
  // (the caller closes them outside mu_). Called with mu_ held.
  void TakeExpired(std::chrono::steady_clock::time_point now,
                   std::vector<std::unique_ptr<Connection>>* closing);

  const ServerParams server_;
  const int size_;
  std::mutex mu_;
  std::condition_variable returned_;
  // Least recently handed back first; lent from the back. Guarded by mu_.
  std::vector<std::unique_ptr<Connection>> idle_;
  int open_ = 0;        // idle + on loan + connecting; mu_
  std::string run_id_;  // the server's, as last seen; mu_
  // The process's ForkGeneration when the pool last looked; mu_. In a child
  // of fork(), its connections are the parent's sockets: they are let go of
  // unused (LeaveToParent), and the child opens its own.
  uint64_t fork_generation_;
};

// A reply as text for messages (status, error or string); "" otherwise.
std::string_view ReplyText(const redisReply* r);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_CLIENT_H_
