// Parsing of Redis store URLs. Internal.
//
//   redis://[user:password@]host[:port][/db][?options]              one server
//   rediss://...                                                    the same over TLS
//   redis+unix://[user:password@]/path/to/redis.sock[?db=N&options]  one server, Unix socket
//   redis-cluster://[user:password@]host:port[,host:port...][?options]   Redis Cluster
//   rediss-cluster://...                                            Redis Cluster over TLS
//   redis-sentinel://[user:password@]host:port[,host:port...]/MASTER[/db][?options]
//   rediss-sentinel://...                                           Sentinel, master over TLS
//
// user and password are percent-decoded ("p%40ss" is "p@ss"); ":password@"
// alone authenticates as the default user (AUTH password), "user:password@"
// as an ACL user (AUTH user password). Options override StoreOptions:
//   connect_timeout_ms, command_timeout_ms, idle_timeout_ms, pool_size, max_retries,
//   batch_items, keys=plain|jdk (how filter names become key bytes, see
//   redis_keys.h),
//   wait_replicas=N, wait_timeout_ms (acknowledge adds once N replicas have
//   them), read_from=master|replica,
//   tls=1 (the same as the rediss scheme), cacert, cert, key, sni, insecure=1
//   (TLS, named as redis-cli names its flags),
//   sentinel_password, sentinel_user (Sentinel only: the sentinels' own AUTH),
//   db=N (redis+unix:// only, whose path is the socket's: elsewhere /db).
#ifndef REDBLOOM_SRC_REDIS_REDIS_URL_H_
#define REDBLOOM_SRC_REDIS_REDIS_URL_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redbloom/status.h"
#include "redbloom/store.h"
#include "redis/redis_keys.h"

namespace redbloom::internal {

enum class RedisMode {
  kSingle,    // one server
  kCluster,   // Redis Cluster: the hosts are seeds
  kSentinel,  // the hosts are sentinels naming the master
};

// A port a Redis server can be reached on.
inline constexpr int kMinPort = 1;
inline constexpr int kMaxPort = 65535;
inline bool IsPort(int64_t port) { return port >= kMinPort && port <= kMaxPort; }

struct HostPort {
  HostPort() = default;
  HostPort(std::string host_in, int port_in) : host(std::move(host_in)), port(port_in) {}

  std::string host;
  int port = 6379;
  // redis+unix://: the socket's path (absolute); host and port unused.
  std::string unix_path;
  // "host:port", "[::1]:port", or the socket's path.
  std::string Display() const;
};

struct TlsOptions {
  bool enabled = false;
  std::string cacert;     // PEM file of CAs to verify the server with; empty: the system's
  std::string cert;       // client certificate (PEM), for mutual TLS
  std::string key;        // its private key (PEM)
  std::string sni;        // server name to send and verify; empty: the host
  bool insecure = false;  // skip verification (warned about)
};

enum class ReadFrom { kMaster, kReplica };

struct RedisUrl {
  RedisMode mode = RedisMode::kSingle;
  std::vector<HostPort> hosts;          // at least one
  std::string master_name;              // kSentinel
  std::string user;                     // empty: the default user
  std::optional<std::string> password;  // nullopt: no AUTH
  std::string sentinel_user;
  std::optional<std::string> sentinel_password;
  int db = 0;
  KeyMode keys = KeyMode::kPlain;
  StoreOptions options;  // the caller's options with the URL's applied
  TlsOptions tls;
  int wait_replicas = 0;  // 0: acknowledge adds without WAIT
  std::chrono::milliseconds wait_timeout{1000};
  ReadFrom read_from = ReadFrom::kMaster;

  // Kept for the single-server code: the first host.
  const std::string& host() const { return hosts.front().host; }
  int port() const { return hosts.front().port; }

  // The URL in canonical form, with every password shown as "***".
  std::string Redacted() const;
};

// kInvalidArgument, naming the problem, for anything malformed or out of range.
Result<RedisUrl> ParseRedisUrl(std::string_view url, const StoreOptions& defaults);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_URL_H_
