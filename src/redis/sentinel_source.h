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

#include "redis/connection_source.h"
#include "redis/redis_url.h"

namespace redbloom::internal {

// `url` is a redis-sentinel:// (or rediss-sentinel://) URL: its hosts are the
// sentinels, its credentials and TLS options those of the master and
// replicas (sentinel_user and sentinel_password: the sentinels' own AUTH; TLS
// applies to the sentinels too).
std::unique_ptr<ConnectionSource> NewSentinelSource(const RedisUrl& url);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_SENTINEL_SOURCE_H_
