// Starts a real Redis Cluster on loopback for a test (N masters, each with R
// replicas, via redis-cli --cluster create), and stops every node by its pid.
#ifndef REDBLOOM_TESTS_REDIS_CLUSTER_H_
#define REDBLOOM_TESTS_REDIS_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "redis_server.h"

namespace redbloom::testing {

class RedisCluster {
 public:
  explicit RedisCluster(int masters = 3, int replicas_per_master = 1);
  // The nodes' cluster-node-timeout once the cluster is up, after which a
  // master that does not answer the others' pings is failed over: 5 s, so
  // a master starved of CPU on a loaded machine keeps its slots (a failover
  // under a test that wants none loses the writes not yet on the replica).
  // The nodes join with 1 s, whose quicker gossip lists the replicas sooner
  // (a start took 6-8 s at 5 s, 3.5 s at 1 s). A test that kills masters
  // lowers it (SetNodeTimeout), so its failovers take ~2 s, not 6.
  static constexpr int kSteadyNodeTimeoutMs = 5000;
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;
  ~RedisCluster();

  // Starts the nodes, joins them into a cluster and waits until every node
  // reports cluster_state:ok and every replica's link is up. Throws
  // std::runtime_error if it cannot.
  void Start();
  // "redis-cluster://127.0.0.1:P1,127.0.0.1:P2" (two seeds).
  std::string url() const;
  // FLUSHALL on every node that is a master now.
  void FlushAll();
  // Waits until every running node says cluster_state:ok (and, with
  // `replicas_up`, every running replica's master link is up and every
  // running node lists it in CLUSTER SLOTS).
  void WaitUntilOk(bool replicas_up = true);

  size_t size() const { return nodes_.size(); }
  RedisServer& node(size_t i) { return *nodes_[i]; }
  // The running node that is master of `slot` now, by CLUSTER SLOTS.
  RedisServer& MasterOf(int slot);
  // The slot ranges `node` serves, as it says itself (first, last).
  static std::vector<std::pair<int, int>> SlotsOf(const RedisServer& node);
  // After a master was stopped: waits until a replica has taken over `slot`
  // (the nodes first have to notice the failure, which takes node-timeout;
  // until then CLUSTER INFO still says ok) and the cluster is ok again.
  RedisServer& WaitForFailover(int slot, const RedisServer& old);
  // The running nodes that are masters now.
  std::vector<RedisServer*> Masters();
  // CONFIG SET cluster-node-timeout on every running node, and on those
  // ReplaceAsReplica starts later.
  void SetNodeTimeout(int ms);
  // Replaces a stopped node by a fresh one on its port (no data, no cluster
  // config) that joins as a replica of `master`, as an operator replaces a
  // failed machine; waits until it is in sync.
  void ReplaceAsReplica(RedisServer& stopped, RedisServer& master);
  // For a failed test's output: each node's port and role, the end of its
  // log (failovers, resyncs and state changes: the nodes log at notice
  // level), and CLUSTER NODES as a running node sees it.
  std::string Describe() const;

 private:
  bool ReplicasKnownEverywhere();

  int masters_;
  static void SetNodeTimeout(RedisServer& node, int ms);

  int replicas_;
  int node_timeout_ms_ = kSteadyNodeTimeoutMs;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

// A started RedisServer or RedisCluster for a suite to keep. If the start
// throws, the half-started processes stop with the object and the suite keeps
// none, so its next test starts afresh instead of failing against a cluster
// that has no slots.
template <typename T>
std::unique_ptr<T> Started() {
  auto t = std::make_unique<T>();
  t->Start();
  return t;
}

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_REDIS_CLUSTER_H_
