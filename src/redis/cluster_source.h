// Redis Cluster routing (redis-cluster://): "a connection for this key" is
// one to the master that owns the key's slot (or one of its replicas, for
// reads, with read_from=replica). Internal.
//
// The slot map comes from CLUSTER SLOTS, asked of any known node or seed.
// Every filter's keys share one slot (redis_keys.h), so every transaction
// and script goes to one node. Redirects are followed here, not in callers:
//   MOVED       the slot has moved: refresh the map, run again on its owner;
//   ASK         the slot is being imported elsewhere: run again there,
//               after ASKING, without changing the map;
//   TRYAGAIN    keys of one command are split by a migration in progress,
//   CLUSTERDOWN the cluster cannot serve the slot now: back off and retry;
//   lost node   refresh the map (a replica may have been promoted) and retry
//               as any lost connection is retried (see ConnectionSource::Run).
// A node that answers MOVED, ASK, TRYAGAIN or CLUSTERDOWN has executed
// nothing of that command, and callers resume from their last completed
// batch, so following a redirect never repeats a write.
#ifndef REDBLOOM_SRC_REDIS_CLUSTER_SOURCE_H_
#define REDBLOOM_SRC_REDIS_CLUSTER_SOURCE_H_

#include <memory>

#include "redis/connection_source.h"
#include "redis/redis_url.h"

namespace redbloom::internal {

std::unique_ptr<ConnectionSource> NewClusterSource(const RedisUrl& url);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_CLUSTER_SOURCE_H_
