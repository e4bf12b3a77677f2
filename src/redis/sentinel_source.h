// redis-sentinel://: the master that Redis Sentinel names, followed across
// failovers. Internal.
//
// The sentinels are asked for the master (SENTINEL get-master-addr-by-name),
// first the one that answered last; every new connection to it checks with
// ROLE that it is a master, so a pool never starts talking to a demoted one.
// The master is looked up again when:
//   - a sentinel announces +switch-master (a thread stays subscribed to one
//     sentinel; the switch is taken at once, so writes stop going to the old
//     master, which Sentinel leaves a master for ~10 s more);
//   - an operation loses its connection, times out, or gets READONLY (the
//     server is a replica now: nothing it was sent ran, so even a write that
//     is not idempotent is sent again, to the new master).
// With read_from=replica, reads that tolerate lag (Access::kReplicaOk) go to
// a replica the sentinels list as up, whose ROLE says it is in sync with the
// master; if there is none, to the master (and replicas are looked for again
// 5 s later).
#ifndef REDBLOOM_SRC_REDIS_SENTINEL_SOURCE_H_
#define REDBLOOM_SRC_REDIS_SENTINEL_SOURCE_H_

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "redbloom/status.h"
#include "redis/connection_source.h"
#include "redis/redis_client.h"
#include "redis/redis_url.h"

namespace redbloom::internal {

// What the sentinels answer, parsed (separate for tests and fuzz/reply_fuzz):
// a host must be 1 to 255 printable ASCII characters without spaces, a port
// a whole number in 1..65535, or the address is not taken.
//
// SENTINEL get-master-addr-by-name: ["host", "port"] is the master; nil is
// kNotFound (no master of that name); anything else kInternal.
Result<HostPort> ParseSentinelMaster(const redisReply* r);
// SENTINEL replicas: the replicas listed as usable (an "ip" and "port" that
// are valid, "flags" naming neither down nor disconnected), in order;
// entries that are not are left out.
std::vector<HostPort> ParseSentinelReplicas(const redisReply* r);
// A +switch-master message, "NAME OLD-IP OLD-PORT NEW-IP NEW-PORT": the new
// master if NAME is `master_name`, nullopt if it is another master's;
// kInternal if it is ours but malformed (the caller looks the master up).
Result<std::optional<HostPort>> ParseSwitchMaster(std::string_view text,
                                                  std::string_view master_name);

// `url` is a redis-sentinel:// (or rediss-sentinel://) URL: its hosts are the
// sentinels, its credentials and TLS options those of the master and
// replicas (sentinel_user and sentinel_password: the sentinels' own AUTH; TLS
// applies to the sentinels too). kResourceExhausted if the thread that
// watches the sentinels cannot start.
Result<std::unique_ptr<ConnectionSource>> NewSentinelSource(const RedisUrl& url);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_SENTINEL_SOURCE_H_
