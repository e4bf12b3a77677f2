// The seam between the Redis stores and the deployment they talk to: "a
// connection for this key". The bit store and the namespace store ask for a
// connection to the server that holds a key and never learn whether that is
// one server, the master a Sentinel names, or a Redis Cluster node found by
// the key's slot. Internal.
#ifndef REDBLOOM_SRC_REDIS_CONNECTION_SOURCE_H_
#define REDBLOOM_SRC_REDIS_CONNECTION_SOURCE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "redbloom/status.h"
#include "redbloom/store.h"
#include "redis/redis_client.h"
#include "redis/redis_url.h"

namespace redbloom::internal {

// Where a command may run: on the master that owns the key, or, for reads
// that tolerate a replica's lag (checks, fills, bitmap reads) with
// read_from=replica, on one of its replicas.
enum class Access { kMaster, kReplicaOk };

class ConnectionSource {
 public:
  using Op = std::function<Status(Connection&)>;

  explicit ConnectionSource(const StoreOptions& options) : options_(options) {}
  ConnectionSource(const ConnectionSource&) = delete;
  ConnectionSource& operator=(const ConnectionSource&) = delete;
  virtual ~ConnectionSource() = default;

  const StoreOptions& options() const { return options_; }

  // Runs `op` on a pooled connection to the server that holds `key` (every
  // key of one filter hashes to one slot, so any of them routes the whole
  // filter). After a lost connection (kUnavailable) it retries with backoff:
  // always when nothing had been written, since the server cannot have run
  // anything; after a write only when `idempotent`, since the server may
  // have run the command before the connection died. Permanent failures
  // (IsPermanentFailure: authentication, ACLs, ...) are not retried, nor are
  // timeouts (kDeadlineExceeded): a server too slow for one attempt gets no
  // faster from a second one, and the caller's time is up. How often, by
  // mode:
  //   one server:  up to options().max_retries times; one that took the
  //                connection and then did not answer (IsStalledServer) not
  //                at all: a retry would reach it again and wait as long.
  //   Sentinel:    up to max_retries times, the sentinels asked again first
  //                (a stalled master may have been failed over, so it is
  //                retried); a write answered READONLY ran nowhere and is
  //                sent again even when not idempotent; with
  //                read_from=replica, a replica's read that timed out goes
  //                on to another server (a master's timeout does not).
  //   Cluster:     for 10 s and at least max_retries + 5 times, whichever
  //                ends later (a node's replica takes over once the cluster
  //                fails the node: cluster-node-timeout and an election),
  //                the slot map learnt again each time; MOVED and ASK are
  //                followed (a bounded number of them), not counted as
  //                retries.
  virtual Status Run(std::string_view key, Access access, bool idempotent, const Op& op) = 0;
  // After a task fails, whether the other tasks of its server still run
  // (kGoOn: a drop removes what it can) or not (kStopThatServer: the call
  // fails anyway, and a server that did not confirm one shard's write to
  // its replicas, or stalled, would make each of its shards wait as long:
  // an add to 32 shards waited 32 times wait_timeout_ms).
  enum class OnFailure { kGoOn, kStopThatServer };
  // Runs ops[i] as Run(keys[i], ...) does: ops whose keys live on one server
  // run one after another, servers in parallel (one thread each). Returns
  // the first error.
  Status RunEach(const std::vector<std::string>& keys, Access access, bool idempotent,
                 const std::vector<Op>& ops, OnFailure on_failure);
  // Runs tasks[i] (which talks to the server of keys[i]): the tasks of one
  // server one after another, servers in parallel (one thread each; a
  // server whose thread cannot be started runs on the caller's). Returns
  // the first error.
  Status InParallel(const std::vector<std::string>& keys,
                    const std::vector<std::function<Status()>>& tasks, OnFailure on_failure);
  // The server that holds `key` now, as a name ("" when all keys live on
  // one server): what RunEach and InParallel group by.
  virtual std::string Route(std::string_view /*key*/) { return {}; }

  // Runs `op` once on every server that holds keys (for SCAN).
  virtual Status ForEachServer(const Op& op) = 0;
  // Connects once, without retries, so that a wrong URL or a server that is
  // down fails when the store opens rather than at its first operation.
  virtual Status Check() = 0;
  // The server that takes writes now, "host:port" (Sentinel: the master the
  // sentinels named last; "" before the first was found), for /readyz.
  virtual std::string Master() const { return ""; }
  // What an operator should know about how servers are found now (a
  // readiness warning), or "".
  virtual std::string Warning() const { return ""; }

  // 25 ms, 50 ms, 100 ms ... capped at 1 s, each scaled by a random factor
  // in [0.5, 1) so that many clients cut off together do not reconnect in
  // lockstep.
  static std::chrono::milliseconds Backoff(int attempt);

 private:
  const StoreOptions options_;
};

// The connections a URL describes: one server, a cluster, or the master that
// sentinels name. kUnimplemented for what this build cannot do yet.
Result<std::unique_ptr<ConnectionSource>> NewConnectionSource(const RedisUrl& url);

// The parameters of a connection to `host` under `url`'s credentials,
// timeouts and TLS options.
ServerParams ServerParamsFor(const RedisUrl& url, const HostPort& host);

// One Redis server (redis://).
std::unique_ptr<ConnectionSource> NewSingleServerSource(ServerParams server,
                                                        const StoreOptions& options);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_CONNECTION_SOURCE_H_
