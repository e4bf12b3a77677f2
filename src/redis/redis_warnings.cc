// The warnings of Store::Warnings on Redis: what `INFO memory` and `INFO
// replication` say that puts filters or their writes at risk (redbloom info,
// redbloomd's /readyz). Each takes the INFO text and the server's display
// name and returns nothing when all is well.
#include "redis/redis_warnings.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "redbloom/filter_config.h"
#include "redis/redis_client.h"
#include "redis/redis_url.h"

namespace redbloom::internal {

// The warning for a server whose `INFO memory` says it evicts keys when
// full: every allkeys-* policy can evict a filter's bitmap; volatile-* ones
// only keys with a TTL (filters created with one, window slices).
std::optional<std::string> EvictionWarning(const std::string& info, const std::string& server) {
  const std::string policy = InfoField(info, "maxmemory_policy");
  const std::string maxmemory = InfoField(info, "maxmemory");
  if (policy.empty() || policy == "noeviction" || maxmemory.empty() || maxmemory == "0") {
    return std::nullopt;
  }
  const std::string setting = "maxmemory-policy " + policy + ", maxmemory " + maxmemory;
  if (policy.starts_with("allkeys-")) {
    return "redis " + server + " evicts any key when full (" + setting +
           "): an evicted filter loses its bits, and its next use fails with data_loss; set "
           "maxmemory-policy noeviction";
  }
  return "redis " + server + " evicts keys that have a TTL when full (" + setting +
         "): filters created with a TTL and window filters can lose their bits; use "
         "noeviction, or no TTL on filters you cannot lose";
}

// The warning for a server at its maxmemory that evicts nothing: every add
// and create is refused with OOM (507) while checks go on, and a load
// balancer that reads /readyz should know.
std::optional<std::string> FullWarning(const std::string& info, const std::string& server) {
  // Redis compares with maxmemory what it would evict: used_memory less the
  // replication and AOF buffers (mem_not_counted_for_evict).
  const Result<uint64_t> used = ParseUint64(InfoField(info, "used_memory"));
  const Result<uint64_t> max = ParseUint64(InfoField(info, "maxmemory"));
  const Result<uint64_t> buffers = ParseUint64(InfoField(info, "mem_not_counted_for_evict"));
  if (InfoField(info, "maxmemory_policy") != "noeviction" || !used.ok() || !max.ok() || *max == 0) {
    return std::nullopt;
  }
  const uint64_t counted = *used - std::min(*used, buffers.ok() ? *buffers : 0);
  if (counted < *max) return std::nullopt;
  return "redis " + server + " is at its maxmemory (" + std::to_string(counted) + " of " +
         std::to_string(*max) +
         " bytes used, maxmemory-policy noeviction): adds and creates are refused (OOM) until "
         "memory is freed or maxmemory raised; checks go on (on Redis 7)";
}

// The warning for a master whose replica count `INFO replication` gives and
// `wait_replicas` does not match. WAIT counts any replicas: with fewer than
// all of them, a failover may promote one that never had an acknowledged
// add (the README, "Redis Sentinel"); with more than are connected, every
// write waits out wait_timeout_ms and fails. wait_replicas=0 is the
// documented choice of no WAIT at all, so it draws none.
std::optional<std::string> ReplicaWarning(const std::string& info, const std::string& server,
                                          int wait_replicas) {
  if (wait_replicas <= 0 || InfoField(info, "role") != "master") return std::nullopt;
  const std::string field = InfoField(info, "connected_slaves");
  int replicas = 0;
  const auto [end, err] = std::from_chars(field.data(), field.data() + field.size(), replicas);
  if (field.empty() || err != std::errc() || end != field.data() + field.size()) {
    return std::nullopt;
  }
  const std::string setting = "wait_replicas=" + std::to_string(wait_replicas) + ", but redis " +
                              server + " has " + std::to_string(replicas) + " connected replica" +
                              (replicas == 1 ? "" : "s");
  if (wait_replicas < replicas) {
    return setting +
           ": WAIT counts any replicas, so a failover can promote one that never had an "
           "acknowledged add, and that add is lost; set wait_replicas=" +
           std::to_string(replicas);
  }
  if (wait_replicas > replicas) {
    return setting +
           ": every add, load, create and attach waits wait_timeout_ms and fails "
           "until enough replicas are connected";
  }
  return std::nullopt;
}

// The warning for a master that refuses every write for want of replicas:
// `INFO replication` has min_slaves_good_slaves only while
// min-replicas-to-write is set, and none good refuses every add and create
// (NOREPLICAS, 503). Fewer good than the setting refuses them too, but INFO
// does not give the setting (CONFIG is what managed services deny), so
// only none is said.
std::optional<std::string> NoReplicasWarning(const std::string& info, const std::string& server) {
  if (InfoField(info, "role") != "master" || InfoField(info, "min_slaves_good_slaves") != "0") {
    return std::nullopt;
  }
  return "redis " + server +
         " has min-replicas-to-write set and no replica in sync: adds and creates are refused "
         "(NOREPLICAS) until one is; checks go on";
}

// A replica (a redis:// URL may name one, for checks) refuses every write
// with READONLY, and while not in sync with its master (its first sync
// among them) answers from what it has, which may be nothing: filters then
// read not_found (an audit). /readyz named it "master" and said no more.
std::optional<std::string> ReplicaRoleWarning(const std::string& info, const std::string& server) {
  if (InfoField(info, "role") != "slave") return std::nullopt;
  const std::string host = InfoField(info, "master_host");
  std::string warning =
      "redis " + server + " is a replica" +
      (host.empty()
           ? ""
           : " of " + HostPort(host, std::atoi(InfoField(info, "master_port").c_str())).Display()) +
      ": adds and creates are refused (READONLY)";
  if (InfoField(info, "master_link_status") != "up" ||
      InfoField(info, "master_sync_in_progress") == "1") {
    warning +=
        "; it is not in sync with its master, and answers from the data it has, which "
        "may be none (filters then read not_found)";
  }
  return warning;
}

}  // namespace redbloom::internal
