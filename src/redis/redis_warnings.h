// What a Redis server's INFO says that puts filters at risk: the warnings
// of `redbloom info` and redbloomd's /readyz (Store::Warnings). Each takes
// the text of an INFO section and the server's display name, and returns
// the warning, or nothing when all is well.
#ifndef REDBLOOM_SRC_REDIS_REDIS_WARNINGS_H_
#define REDBLOOM_SRC_REDIS_REDIS_WARNINGS_H_

#include <optional>
#include <string>

namespace redbloom::internal {

// `INFO memory`: a maxmemory-policy that can evict filter keys.
std::optional<std::string> EvictionWarning(const std::string& info, const std::string& server);

// `INFO memory`: at maxmemory with noeviction (adds and creates refused).
std::optional<std::string> FullWarning(const std::string& info, const std::string& server);

// `INFO replication`: a non-zero wait_replicas that is not the master's
// count of connected replicas.
std::optional<std::string> ReplicaWarning(const std::string& info, const std::string& server,
                                          int wait_replicas);

// `INFO replication`: min-replicas-to-write set and no replica in sync
// (every write refused with NOREPLICAS).
std::optional<std::string> NoReplicasWarning(const std::string& info, const std::string& server);

// `INFO replication`: the server is a replica (writes refused; out of
// sync, its answers may miss every filter).
std::optional<std::string> ReplicaRoleWarning(const std::string& info, const std::string& server);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_WARNINGS_H_
