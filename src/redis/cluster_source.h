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

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "redbloom/status.h"
#include "redis/connection_source.h"
#include "redis/redis_client.h"
#include "redis/redis_keys.h"
#include "redis/redis_url.h"

namespace redbloom::internal {

struct SlotMap {
  // Per slot: the node index of its master, -1 if no node serves it.
  std::array<int16_t, kClusterSlots> master;
  // Per master node index: its replicas' node indexes.
  std::map<int, std::vector<int>> replicas;
  std::vector<int> masters;  // distinct, ascending, never empty
};

// The slot map in a CLUSTER SLOTS reply from `asked`: each node [host, port,
// ...] becomes node_index(host, port) (an empty or '?' host is `asked`'s).
// kInternal for a reply of another shape or a master without a port in
// 1..65535 (a replica without one is left out); kUnavailable if it names no
// master (a node whose cluster is not set up). Slots outside 0..16383 are
// ignored.
Result<std::shared_ptr<SlotMap>> ParseClusterSlots(
    const redisReply* r, const HostPort& asked,
    const std::function<int(const std::string& host, int port)>& node_index);

std::unique_ptr<ConnectionSource> NewClusterSource(const RedisUrl& url);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_CLUSTER_SOURCE_H_
