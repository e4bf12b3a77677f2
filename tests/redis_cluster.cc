#include "redis_cluster.h"

#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "test_util.h"

namespace redbloom::testing {

RedisCluster::RedisCluster(int masters, int replicas_per_master)
    : masters_(masters), replicas_(replicas_per_master) {
  for (int i = 0; i < masters * (1 + replicas_per_master); ++i) {
    // A node timeout of 1 s to join (then kSteadyNodeTimeoutMs); no diskless-sync
    // delay so replicas are in sync at once; a ping to replicas every second
    // (not 10) so that their replication offset, which a node waits for
    // before it lists a replica in CLUSTER SLOTS, moves at once.
    // The cluster bus gets a free port of its own (the default, port + 10000,
    // may be past 65535 for a port the kernel picked).
    nodes_.push_back(std::make_unique<RedisServer>(std::vector<std::string>{
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
        std::to_string(FreePort()), "--cluster-node-timeout", "1000", "--repl-diskless-sync-delay",
        "0", "--cluster-replica-validity-factor", "0", "--repl-ping-replica-period", "1",
        "--loglevel", "notice"}));
  }
}

RedisCluster::~RedisCluster() = default;  // each RedisServer stops its own process

void RedisCluster::Start() {
  for (auto& n : nodes_) n->Start();
  std::vector<std::string> argv = {"/usr/bin/env", "redis-cli", "--cluster", "create"};
  for (auto& n : nodes_) argv.push_back("127.0.0.1:" + std::to_string(n->port()));
  argv.insert(argv.end(), {"--cluster-replicas", std::to_string(replicas_), "--cluster-yes"});
  const CommandResult r = RunCommand(argv);
  if (r.exit_code != 0) {
    throw std::runtime_error("redis-cli --cluster create failed: " + r.out + r.err);
  }
  WaitUntilOk();
  SetNodeTimeout(node_timeout_ms_);
}

std::string RedisCluster::url() const {
  return "redis-cluster://127.0.0.1:" + std::to_string(nodes_[0]->port()) +
         ",127.0.0.1:" + std::to_string(nodes_[1]->port());
}

void RedisCluster::WaitUntilOk(bool replicas_up) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    bool ok = true;
    for (auto& n : nodes_) {
      if (!n->running()) continue;
      const std::string info = n->Cli({"CLUSTER", "INFO"});
      if (info.find("cluster_state:ok") == std::string::npos ||
          info.find("cluster_slots_ok:16384") == std::string::npos) {
        ok = false;
        break;
      }
      if (replicas_up) {
        const std::string repl = n->Cli({"INFO", "replication"});
        if (repl.find("role:slave") != std::string::npos &&
            repl.find("master_link_status:up") == std::string::npos) {
          ok = false;
          break;
        }
      }
    }
    if (ok && replicas_up) ok = ReplicasKnownEverywhere();
    if (ok) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("the Redis Cluster did not become ok within 30 s");
}

std::string RedisCluster::Describe() const {
  std::string out;
  const RedisServer* running = nullptr;
  for (const auto& n : nodes_) {
    out += "node 127.0.0.1:" + std::to_string(n->port());
    if (n->running()) {
      if (running == nullptr) running = n.get();
      const std::string repl = n->Cli({"INFO", "replication"});
      out += repl.find("role:master") != std::string::npos ? " (master)" : " (replica)";
    } else {
      out += " (stopped)";
    }
    out += ", its log's end:\n" + FileTail(n->dir() + "/redis.log", 3000) + "\n";
  }
  if (running != nullptr) out += "CLUSTER NODES:\n" + running->Cli({"CLUSTER", "NODES"});
  return out;
}

// Every running replica is listed by every running node's CLUSTER SLOTS,
// where clients learn of replicas: a node lists one only once gossip has told
// it the replica holds data (a replication offset above 0), which can lag the
// replica's own link by seconds. A store opened before would send every
// read_from=replica check to the masters.
bool RedisCluster::ReplicasKnownEverywhere() {
  std::vector<std::string> replica_ids;
  for (auto& n : nodes_) {
    if (n->running() && n->Cli({"INFO", "replication"}).find("role:slave") != std::string::npos) {
      std::string id = n->Cli({"CLUSTER", "MYID"});
      while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) id.pop_back();
      replica_ids.push_back(id);
    }
  }
  for (auto& n : nodes_) {
    if (!n->running()) continue;
    const std::string slots = n->Cli({"CLUSTER", "SLOTS"});
    for (const std::string& id : replica_ids) {
      if (slots.find(id) == std::string::npos) return false;
    }
  }
  return true;
}

std::vector<RedisServer*> RedisCluster::Masters() {
  std::vector<RedisServer*> out;
  for (auto& n : nodes_) {
    if (n->running() && n->Cli({"INFO", "replication"}).find("role:master") != std::string::npos) {
      out.push_back(n.get());
    }
  }
  return out;
}

void RedisCluster::ReplaceAsReplica(RedisServer& stopped, RedisServer& master) {
  std::filesystem::remove(stopped.dir() + "/nodes.conf");
  stopped.Start();
  std::string id = master.Cli({"CLUSTER", "MYID"});
  while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) id.pop_back();
  const CommandResult r = RunCommand({"/usr/bin/env", "redis-cli", "--cluster", "add-node",
                                      "127.0.0.1:" + std::to_string(stopped.port()),
                                      "127.0.0.1:" + std::to_string(master.port()),
                                      "--cluster-slave", "--cluster-master-id", id});
  if (r.exit_code != 0) throw std::runtime_error("add-node failed: " + r.out + r.err);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string repl = stopped.Cli({"INFO", "replication"});
    if (repl.find("role:slave") != std::string::npos &&
        repl.find("master_link_status:up") != std::string::npos) {
      WaitUntilOk();
      SetNodeTimeout(stopped, node_timeout_ms_);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("the replacement replica did not sync within 30 s");
}

void RedisCluster::SetNodeTimeout(int ms) {
  node_timeout_ms_ = ms;
  for (auto& n : nodes_) {
    if (n->running()) SetNodeTimeout(*n, ms);
  }
}

void RedisCluster::SetNodeTimeout(RedisServer& node, int ms) {
  const std::string said = node.Cli({"CONFIG", "SET", "cluster-node-timeout", std::to_string(ms)});
  if (said.find("OK") == std::string::npos) {
    throw std::runtime_error("CONFIG SET cluster-node-timeout " + std::to_string(ms) + ": " + said);
  }
}

void RedisCluster::FlushAll() {
  for (RedisServer* m : Masters()) m->Cli({"FLUSHALL"});
}

std::vector<std::pair<int, int>> RedisCluster::SlotsOf(const RedisServer& node) {
  // CLUSTER NODES says who owns what: read this node's own "myself" line.
  std::vector<std::pair<int, int>> ranges;
  std::istringstream nodes(node.Cli({"CLUSTER", "NODES"}));
  std::string line;
  while (std::getline(nodes, line)) {
    if (line.find("myself") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string field;
    for (int i = 0; i < 8 && fields >> field; ++i) {
    }
    while (fields >> field) {
      if (field.front() == '[') continue;  // a migration marker
      const size_t dash = field.find('-');
      const int from = std::stoi(field.substr(0, dash));
      ranges.emplace_back(from,
                          dash == std::string::npos ? from : std::stoi(field.substr(dash + 1)));
    }
  }
  return ranges;
}

RedisServer& RedisCluster::MasterOf(int slot) {
  for (RedisServer* m : Masters()) {
    for (const auto& [from, to] : SlotsOf(*m)) {
      if (slot >= from && slot <= to) return *m;
    }
  }
  throw std::runtime_error("no master serves slot " + std::to_string(slot));
}

RedisServer& RedisCluster::WaitForFailover(int slot, const RedisServer& old) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      RedisServer& now = MasterOf(slot);
      if (&now != &old) {
        WaitUntilOk(/*replicas_up=*/false);
        return now;
      }
    } catch (const std::runtime_error&) {
      // No running master claims the slot yet: the failover is under way.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("no replica took over slot " + std::to_string(slot) + " within 30 s");
}

}  // namespace redbloom::testing
