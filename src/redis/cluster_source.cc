#include "redis/cluster_source.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "redis/redis_keys.h"
#include "redis/redis_pipeline.h"

namespace redbloom::internal {
namespace {

// Redirects followed within one call (each MOVED follows a reshard step).
constexpr int kMaxRedirects = 200;
// TRYAGAIN / CLUSTERDOWN: a migration step or a failover takes
// milliseconds to seconds; wait for it this long in all before giving up.
constexpr std::chrono::milliseconds kMaxWait{10'000};

// A call given up on while the cluster kept redirecting it. The redirect's
// own error blames the URL ("use a redis-cluster:// URL", redis_client.cc),
// which is right for a redis:// store pointed at a cluster node, not here.
Status GaveUp(const ClusterRedirect& r, int slot) {
  std::string answer;
  switch (r.kind) {
    case ClusterRedirect::Kind::kMoved:
    case ClusterRedirect::Kind::kAsk:
      answer = std::string(r.kind == ClusterRedirect::Kind::kAsk ? "ASK" : "MOVED") + " to " +
               (r.host.empty() ? std::string("its own host") + ":" + std::to_string(r.port)
                               : HostPort{r.host, r.port}.Display()) +
               ": the slot is being migrated";
      break;
    case ClusterRedirect::Kind::kTryAgain:
      answer =
          "TRYAGAIN: the slot is migrating, and the call's keys are not all on one node (some "
          "moved, or a key it makes or a scratch key is not there yet)";
      break;
    case ClusterRedirect::Kind::kClusterDown:
      // The node's own words: "The cluster is down" (another range has no
      // node, which the cluster refuses every slot for, by default) or "Hash
      // slot not served". A fixed "no node serves the slot" blamed a slot
      // that had its node.
      answer = r.text.empty() ? "CLUSTERDOWN" : r.text;
      break;
  }
  return Status::Unavailable("the Redis Cluster kept redirecting a call on slot " +
                             std::to_string(slot) + " (the last answer: " + answer +
                             "), so it was given up; retry once the migration or failover is done");
}

class ClusterSource final : public ConnectionSource {
 public:
  explicit ClusterSource(const RedisUrl& url) : ConnectionSource(url.options), url_(url) {}

  Status Check() override { return Refresh(/*force=*/true); }

  Status Run(std::string_view key, Access access, bool idempotent, const Op& op) override {
    const int slot = KeySlot(key);
    int lost = 0;
    const auto give_up_at = std::chrono::steady_clock::now() + kMaxWait;
    // After ASK: the node that imports the slot, for the next attempt only.
    int asking = -1;
    // A replica read that failed or missed a key goes to the master instead
    // (see below), for the rest of the call.
    bool master_only = false;
    // A restarted node was found to serve the slot no more (below): once.
    bool moved_on_restart = false;
    for (int attempt = 0;; ++attempt) {
      std::shared_ptr<const SlotMap> map = Map();
      if (!map) {
        REDBLOOM_RETURN_IF_ERROR(Refresh(/*force=*/true));
        map = Map();
      }
      const int node =
          asking >= 0 ? asking : NodeFor(*map, slot, master_only ? Access::kMaster : access);
      const bool replica = node != map->master[slot];
      const bool send_asking = asking >= 0;
      asking = -1;
      if (node < 0) {
        // No node serves the slot (a failover in progress): ask again.
        if (std::chrono::steady_clock::now() > give_up_at) {
          return Status::Unavailable("no node of the Redis Cluster serves slot " +
                                     std::to_string(slot) + " (cluster down?)");
        }
        std::this_thread::sleep_for(Backoff(std::min(attempt, 4)));
        (void)Refresh(/*force=*/true);
        continue;
      }
      Status s;
      bool wrote = false;
      std::optional<ClusterRedirect> redirect;
      {
        Result<ConnectionPool::Lease> lease = Pool(node).Acquire();
        if (!lease.ok()) {
          s = lease.status();
        } else if (send_asking && !(s = SendAsking(**lease)).ok()) {
          // The connection broke; retried below like any lost node.
        } else {
          s = op(**lease);
          wrote = (*lease)->wrote();
          redirect = (*lease)->redirect();
        }
      }
      if (s.ok()) return s;
      if (redirect.has_value() && attempt < kMaxRedirects) {
        switch (redirect->kind) {
          case ClusterRedirect::Kind::kMoved:
            if (send_asking) {
              // The importing node sent a later command of the op back to the
              // old owner: ASKING covers one command (or one transaction), and
              // the op sends several. The old owner would answer ASK again:
              // wait for the migration to finish, as for TRYAGAIN.
              if (std::chrono::steady_clock::now() > give_up_at) return GaveUp(*redirect, slot);
              std::this_thread::sleep_for(Backoff(std::min(attempt, 4)));
              continue;
            }
            // The map is stale: learn the whole new one (a reshard moves many
            // slots), and at least this slot's new owner.
            (void)Refresh(/*force=*/true);
            Learn(slot, NodeIndex(HostFor(*redirect, node), redirect->port));
            continue;
          case ClusterRedirect::Kind::kAsk:
            // The slot is being migrated and this key has already moved:
            // the command runs on the importing node if ASKING precedes it
            // (the flag lasts to EXEC, so a MULTI transaction is covered).
            // Nothing ran on the node that answered ASK. If the filter's
            // keys are split between the two nodes, the importing node
            // answers TRYAGAIN and the call waits below; the migration of a
            // slot's few keys takes milliseconds.
            if (send_asking) {
              // ASK again from the importing node: back off before retrying.
              if (std::chrono::steady_clock::now() > give_up_at) return GaveUp(*redirect, slot);
              std::this_thread::sleep_for(Backoff(std::min(attempt, 4)));
              continue;
            }
            asking = NodeIndex(HostFor(*redirect, node), redirect->port);
            continue;
          case ClusterRedirect::Kind::kTryAgain:
          case ClusterRedirect::Kind::kClusterDown:
            if (std::chrono::steady_clock::now() > give_up_at) return GaveUp(*redirect, slot);
            std::this_thread::sleep_for(Backoff(std::min(attempt, 4)));
            if (redirect->kind == ClusterRedirect::Kind::kClusterDown) {
              (void)Refresh(/*force=*/true);
            }
            continue;
        }
      }
      if (redirect.has_value()) return GaveUp(*redirect, slot);  // kMaxRedirects
      // A master restarted since this client used it warns of writes its
      // restart may have lost: for the slots it still serves. One that came
      // back after a failover serves them no more (a replica now, its data
      // the promoted replica's): the call goes to the slot's owner. It was
      // 503 "restarted" for the first call of a client idle through a
      // failover, checks too (an audit).
      if (s.reason() == StatusReason::kRestarted && !replica && !moved_on_restart) {
        (void)Refresh(/*force=*/true);
        if (std::shared_ptr<const SlotMap> now = Map(); now && now->master[slot] != node) {
          moved_on_restart = true;
          continue;
        }
      }
      // A replica answers for what it holds, and no ASK: while the slot
      // migrates, its keys that moved are gone from it (the filter reads
      // "dropped", or a part reads missing); one still syncing, or cut off
      // with replica-serve-stale-data no, refuses; one that died times out
      // until the cluster fails it. The master (following ASK) knows: a read
      // is idempotent, so it goes again there.
      // A replica without the ACL user, or failing TLS, is configuration to
      // mend, said as such, not hidden behind reads that all go to the
      // master. (A replica restarted falls back: its run_id changed.)
      if (replica && !send_asking && access == Access::kReplicaOk && idempotent &&
          !IsConfigurationFailure(s) &&
          (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kDataLoss ||
           s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded)) {
        master_only = true;
        // A replica that is gone stays in the map until it is learnt again
        // (the cluster drops a failed one from CLUSTER SLOTS).
        if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded) {
          (void)Refresh(/*force=*/false);
        }
        continue;
      }
      // A lost node: its replica may be taking over. Learn the map again and
      // retry as ConnectionSource::Run documents: for 10 s, and at least
      // max_retries + 5 times. (Either bound alone gave up after ~3 s of
      // backoff, before a failover with a cluster-node-timeout of 5 s was
      // done: every call to a killed master failed, an audit found.)
      const bool spent =
          lost >= options().max_retries + 5 && std::chrono::steady_clock::now() > give_up_at;
      if (s.code() != StatusCode::kUnavailable || IsPermanentFailure(s) || (wrote && !idempotent) ||
          spent) {
        return s;
      }
      ++lost;
      std::this_thread::sleep_for(Backoff(std::min(lost, 6)));
      (void)Refresh(/*force=*/true);
    }
  }

  // Sends ASKING ahead of the op's commands; its +OK is dropped by the op's
  // first read (an owed reply), so the op reads its own replies as always.
  static Status SendAsking(Connection& c) {
    CommandBuffer asking;
    asking.Command({"ASKING"});
    REDBLOOM_RETURN_IF_ERROR(c.Append(asking));
    c.OweReply();
    return Status::Ok();
  }

  std::string Route(std::string_view key) override {
    std::shared_ptr<const SlotMap> map = Map();
    if (!map) return {};
    const int node = map->master[KeySlot(key)];
    if (node < 0) return {};
    std::lock_guard lock(mu_);
    return nodes_[node].addr.Display();
  }

  Status ForEachServer(const Op& op) override {
    REDBLOOM_RETURN_IF_ERROR(Refresh(/*force=*/false));
    std::shared_ptr<const SlotMap> map = Map();
    for (int node : map->masters) {
      Result<ConnectionPool::Lease> lease = Pool(node).Acquire();
      if (!lease.ok()) return lease.status();
      REDBLOOM_RETURN_IF_ERROR(op(**lease));
    }
    return Status::Ok();
  }

 private:
  std::shared_ptr<const SlotMap> Map() const {
    std::lock_guard lock(mu_);
    return map_;
  }

  int NodeFor(const SlotMap& map, int slot, Access access) const {
    const int master = map.master[slot];
    if (master < 0 || access != Access::kReplicaOk || url_.read_from != ReadFrom::kReplica) {
      return master;
    }
    auto it = map.replicas.find(master);
    if (it == map.replicas.end() || it->second.empty()) return master;
    thread_local std::minstd_rand rng(std::random_device{}());
    return it->second[rng() % it->second.size()];
  }

  std::string HostFor(const ClusterRedirect& r, int from_node) {
    if (!r.host.empty()) return r.host;
    std::lock_guard lock(mu_);
    return nodes_[from_node].addr.host;
  }

  // The node index of an address, adding a node (and its pool) if new.
  int NodeIndex(const std::string& host, int port) {
    std::lock_guard lock(mu_);
    return NodeIndexLocked(host, port);
  }
  int NodeIndexLocked(const std::string& host, int port) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].addr.host == host && nodes_[i].addr.port == port) return static_cast<int>(i);
    }
    Node n;
    n.addr = HostPort{host, port};
    ServerParams params = ServerParamsFor(url_, n.addr);
    params.readonly = url_.read_from == ReadFrom::kReplica;
    n.pool = std::make_shared<ConnectionPool>(std::move(params), options().pool_size);
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size() - 1);
  }

  ConnectionPool& Pool(int node) {
    std::lock_guard lock(mu_);
    return *nodes_[node].pool;
  }

  // Points `slot` at `node` in a copy of the map (after a MOVED whose owner
  // the refreshed map did not know yet).
  void Learn(int slot, int node) {
    std::lock_guard lock(mu_);
    if (!map_ || map_->master[slot] == node) return;
    auto copy = std::make_shared<SlotMap>(*map_);
    copy->master[slot] = static_cast<int16_t>(node);
    if (std::find(copy->masters.begin(), copy->masters.end(), node) == copy->masters.end()) {
      copy->masters.push_back(node);
      std::sort(copy->masters.begin(), copy->masters.end());
    }
    map_ = std::move(copy);
  }

  // Reloads the slot map from the first node that answers CLUSTER SLOTS: the
  // known masters first, then every other known node, then the seeds. Not
  // more often than every 100 ms unless forced.
  Status Refresh(bool force) {
    std::unique_lock refresh(refresh_mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!force && Map() && now - last_refresh_ < std::chrono::milliseconds(100)) {
      return Status::Ok();
    }
    std::vector<HostPort> candidates;
    {
      std::lock_guard lock(mu_);
      if (map_) {
        for (int m : map_->masters) candidates.push_back(nodes_[m].addr);
      }
      for (const Node& n : nodes_) candidates.push_back(n.addr);
    }
    for (const HostPort& seed : url_.hosts) candidates.push_back(seed);
    Status last = Status::Unavailable("no Redis Cluster node to ask for the slot map");
    std::vector<std::string> tried;
    for (const HostPort& hp : candidates) {
      const std::string display = hp.Display();
      if (std::find(tried.begin(), tried.end(), display) != tried.end()) continue;
      tried.push_back(display);
      Status s = LoadFrom(hp);
      if (s.ok()) {
        last_refresh_ = now;
        return s;
      }
      last = s;
      // A node that is not in cluster mode is a wrong URL, not an outage.
      if (s.code() == StatusCode::kInvalidArgument) return s;
    }
    return last;
  }

  Status LoadFrom(const HostPort& hp) {
    REDBLOOM_ASSIGN_OR_RETURN(std::shared_ptr<SlotMap> map, AskSlots(hp));
    Install(std::move(map));
    return Status::Ok();
  }

  Result<std::shared_ptr<SlotMap>> AskSlots(const HostPort& hp) {
    const int index = NodeIndex(hp.host, hp.port);
    Result<ConnectionPool::Lease> lease = Pool(index).Acquire();
    if (!lease.ok()) return lease.status();
    CommandBuffer cmd;
    cmd.Command({"CLUSTER", "SLOTS"});
    REDBLOOM_RETURN_IF_ERROR((*lease)->Append(cmd));
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, (*lease)->Read());
    if (r->type == REDIS_REPLY_ERROR) {
      const std::string text(ReplyText(r.get()));
      if (text.find("cluster support disabled") != std::string::npos) {
        return Status::InvalidArgument("redis " + hp.Display() +
                                       " is not a Redis Cluster node (cluster support disabled); "
                                       "use redis:// for a single server");
      }
      return ReplyErrorStatus(text, (*lease)->server());
    }
    return ParseClusterSlots(
        r.get(), hp, [this](const std::string& host, int port) { return NodeIndex(host, port); });
  }

  // Makes `map` the map. Nodes it no longer lists (removed, or replaced at
  // another address) keep their entries, as indexes must stay valid, but not
  // their idle connections.
  void Install(std::shared_ptr<SlotMap> map) {
    std::vector<std::shared_ptr<ConnectionPool>> gone;
    {
      std::lock_guard lock(mu_);
      std::vector<bool> listed(nodes_.size(), false);
      for (const auto& [master, replicas] : map->replicas) {  // every master has an entry
        listed[master] = true;
        for (int replica : replicas) listed[replica] = true;
      }
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!listed[i]) gone.push_back(nodes_[i].pool);
      }
      map_ = std::move(map);
    }
    for (const auto& pool : gone) pool->CloseIdle();
  }

  struct Node {
    HostPort addr;
    std::shared_ptr<ConnectionPool> pool;
  };

  const RedisUrl url_;
  mutable std::mutex mu_;
  std::vector<Node> nodes_;             // guarded by mu_; only grows
  std::shared_ptr<const SlotMap> map_;  // guarded by mu_
  std::mutex refresh_mu_;
  std::chrono::steady_clock::time_point last_refresh_;  // guarded by refresh_mu_
};

}  // namespace

Result<std::shared_ptr<SlotMap>> ParseClusterSlots(
    const redisReply* r, const HostPort& asked,
    const std::function<int(const std::string& host, int port)>& node_index) {
  if (!IsArray(r, 0)) return Unexpected("CLUSTER SLOTS", r);
  auto map = std::make_shared<SlotMap>();
  map->master.fill(-1);
  // A node is [host, port, ...]; -1 if it is not that.
  auto node_of = [&](const redisReply* n) -> int {
    if (!IsArray(n, 2) || n->element[1]->type != REDIS_REPLY_INTEGER ||
        !IsPort(n->element[1]->integer)) {
      return -1;
    }
    std::string host(ReplyText(n->element[0]));
    // An empty or '?' address means "the host you asked"; Redis 7 may say so.
    if (host.empty() || host == "?") host = asked.host;
    return node_index(host, static_cast<int>(n->element[1]->integer));
  };
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* range = r->element[i];
    if (!IsArray(range, 3) || range->element[0]->type != REDIS_REPLY_INTEGER ||
        range->element[1]->type != REDIS_REPLY_INTEGER) {
      return Unexpected("CLUSTER SLOTS", r);
    }
    const int master = node_of(range->element[2]);
    if (master < 0 || master > INT16_MAX) return Unexpected("CLUSTER SLOTS", r);
    const long long from = std::max<long long>(0, range->element[0]->integer);
    const long long to = std::min<long long>(kClusterSlots - 1, range->element[1]->integer);
    for (long long s = from; s <= to; ++s) map->master[s] = static_cast<int16_t>(master);
    auto& replicas = map->replicas[master];
    for (size_t j = 3; j < range->elements; ++j) {
      const int replica = node_of(range->element[j]);
      if (replica >= 0 && std::find(replicas.begin(), replicas.end(), replica) == replicas.end()) {
        replicas.push_back(replica);
      }
    }
    if (std::find(map->masters.begin(), map->masters.end(), master) == map->masters.end()) {
      map->masters.push_back(master);
    }
  }
  if (map->masters.empty()) {
    return Status::Unavailable("redis " + asked.Display() +
                               " knows no slots (cluster not set up?)");
  }
  std::sort(map->masters.begin(), map->masters.end());
  return map;
}

std::unique_ptr<ConnectionSource> NewClusterSource(const RedisUrl& url) {
  return std::make_unique<ClusterSource>(url);
}

}  // namespace redbloom::internal
