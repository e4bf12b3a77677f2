// Redis Cluster benchmark (issue #12): the same load on one redis-server and
// on a Redis Cluster of several masters, in one run:
//   single     one filter on the one server;
//   cluster/1  one unsharded filter on the cluster (all its keys in one slot,
//              so one master does all the work, as on one server);
//   cluster/S  one filter of S shards, for each S of --shards, spread over
//              the masters.
// Each case runs --threads client threads, each adding, then checking,
// batches of --batch items of its own (checks: half added, half never
// added). Per case and operation it prints items/s, the servers' CPU per item
// (INFO CPU used_cpu_user + used_cpu_sys, summed over every node), the
// busiest node's share of that CPU, and the ratio to the single server.
//
// The figure that carries to production is server CPU per item and how it
// splits over the masters: a master is one thread, so a cluster's ceiling is
// about masters / (busiest share * server CPU per item). Items/s on one host
// are bound by the host's cores, which every server and the client share.
// docs/scaling.md turns these numbers into a sizing rule.
//
//   cluster_bench --single redis://127.0.0.1:P --cluster redis-cluster://...
//                 --nodes 127.0.0.1:A,127.0.0.1:B,127.0.0.1:C [--shards 3,12]
// scripts/bench-cluster.sh starts the servers and the cluster and runs this.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "raw_redis.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"

namespace redbloom {
namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "cluster_bench: %s\n", message.c_str());
  std::exit(1);
}

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}

// A node, for INFO CPU (through the tests' raw client).
class Node {
 public:
  explicit Node(const std::string& host_port) : name_(host_port), raw_("redis://" + host_port) {}
  double Cpu() { return raw_.ServerCpu(); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  testing::RawRedis raw_;
};

struct Args {
  std::string single_url, cluster_url, single_node, nodes;
  int threads = 4;
  size_t batch = 1000;
  uint64_t items = 400'000;  // per case and operation, over all threads
  std::vector<uint32_t> shards = {3, 12};
  int reps = 3;
};

struct Sample {
  double items_per_s = 0;
  double server_us = 0;      // per item, summed over nodes
  double busiest_share = 0;  // the busiest node's share of the server CPU
};

struct Case {
  std::string name;
  Store* store;
  std::vector<Node*> nodes;
  uint32_t shards;
  std::vector<Sample> add, check;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

class Bench {
 public:
  explicit Bench(Args a) : args_(std::move(a)) {
    auto single = Store::Open(args_.single_url);
    Check(single.status(), "open " + args_.single_url);
    single_ = std::move(single).value();
    auto cluster = Store::Open(args_.cluster_url);
    Check(cluster.status(), "open " + args_.cluster_url);
    cluster_ = std::move(cluster).value();
    single_node_ = std::make_unique<Node>(args_.single_node);
    for (size_t from = 0; from <= args_.nodes.size();) {
      size_t comma = args_.nodes.find(',', from);
      if (comma == std::string::npos) comma = args_.nodes.size();
      if (comma > from)
        nodes_.push_back(std::make_unique<Node>(args_.nodes.substr(from, comma - from)));
      from = comma + 1;
    }
    if (nodes_.empty()) Die("--nodes names no node");
    std::vector<Node*> cluster_nodes;
    for (auto& n : nodes_) cluster_nodes.push_back(n.get());
    cases_.push_back({"single server", single_.get(), {single_node_.get()}, 1, {}, {}});
    cases_.push_back({"cluster, 1 shard", cluster_.get(), cluster_nodes, 1, {}, {}});
    for (uint32_t s : args_.shards) {
      cases_.push_back(Case{
          "cluster, " + std::to_string(s) + " shards", cluster_.get(), cluster_nodes, s, {}, {}});
    }
  }

  void Run() {
    std::printf(
        "cluster_bench: %d client threads, batches of %zu, %llu items per case; %zu cluster "
        "masters; %u hardware threads on this host; %d reps\n",
        args_.threads, args_.batch, static_cast<unsigned long long>(args_.items), nodes_.size(),
        std::thread::hardware_concurrency(), args_.reps);
    // Interleaved repetitions: a noisy minute on a shared host hits every
    // case alike.
    for (int rep = 0; rep < args_.reps; ++rep) {
      for (Case& c : cases_) RunCase(c, rep);
    }
    Print();
  }

 private:
  void RunCase(Case& c, int rep) {
    const std::string name = "bench-" + std::to_string(c.shards) + "-" + std::to_string(rep);
    FilterOptions o;
    o.capacity = args_.items * 2;
    o.error_rate = 0.01;
    o.shards = c.shards;
    Status dropped = BloomFilter::Drop(*c.store, name);
    if (!dropped.ok() && dropped.code() != StatusCode::kNotFound) Check(dropped, "drop " + name);
    auto f = BloomFilter::Create(*c.store, name, o);
    Check(f.status(), "create " + name + " on " + c.name);
    BloomFilter& filter = **f;

    const std::string prefix = "ORD-" + std::to_string(rep) + "-";
    c.add.push_back(Measure(c, [&](uint64_t first, uint64_t n, std::vector<std::string>& items) {
      Fill(items, prefix, first, n);
      std::vector<std::string_view> views(items.begin(), items.end());
      Check(filter.AddMany(views), "add");
    }));
    std::atomic<uint64_t> missing{0};
    c.check.push_back(Measure(c, [&](uint64_t first, uint64_t n, std::vector<std::string>& items) {
      // Half the batch was added (no false negative allowed), half never was.
      Fill(items, prefix, first, n / 2);
      const uint64_t absent = n - n / 2;
      for (uint64_t i = 0; i < absent; ++i)
        items.push_back("NEW-" + prefix + std::to_string(first + i));
      std::vector<std::string_view> views(items.begin(), items.end());
      std::vector<uint8_t> present;
      Check(filter.ContainsMany(views, &present), "check");
      for (uint64_t i = 0; i < n / 2; ++i) missing += present[i] ? 0 : 1;
    }));
    if (missing != 0) Die(c.name + ": " + std::to_string(missing.load()) + " false negatives");
    Check(BloomFilter::Drop(*c.store, name), "drop " + name);
  }

  static void Fill(std::vector<std::string>& items, const std::string& prefix, uint64_t first,
                   uint64_t n) {
    items.clear();
    for (uint64_t i = 0; i < n; ++i) items.push_back(prefix + std::to_string(first + i));
  }

  // Runs `work(first, n, scratch)` over args_.items items in batches, split
  // over the threads, and measures it.
  template <typename Work>
  Sample Measure(Case& c, Work work) {
    std::vector<double> cpu0;
    for (Node* n : c.nodes) cpu0.push_back(n->Cpu());
    const uint64_t per_thread = args_.items / static_cast<uint64_t>(args_.threads);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < args_.threads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<std::string> items;
        const uint64_t base = static_cast<uint64_t>(t) * per_thread;
        for (uint64_t done = 0; done < per_thread; done += args_.batch) {
          work(base + done, std::min<uint64_t>(args_.batch, per_thread - done), items);
        }
      });
    }
    for (auto& th : threads) th.join();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0, busiest = 0;
    for (size_t i = 0; i < c.nodes.size(); ++i) {
      const double used = c.nodes[i]->Cpu() - cpu0[i];
      total += used;
      busiest = std::max(busiest, used);
    }
    const double items = static_cast<double>(per_thread * static_cast<uint64_t>(args_.threads));
    return {items / wall, total * 1e6 / items, total > 0 ? busiest / total : 0};
  }

  void Print() {
    std::printf("\n%-22s %-6s %12s %16s %14s %10s %12s\n", "case", "op", "items/s",
                "server us/item", "busiest node", "vs single", "ceiling/s*");
    for (const char* op : {"add", "check"}) {
      double base = 0;
      for (Case& c : cases_) {
        const auto& samples = std::string(op) == "add" ? c.add : c.check;
        std::vector<double> rate, us, share;
        for (const Sample& s : samples) {
          rate.push_back(s.items_per_s);
          us.push_back(s.server_us);
          share.push_back(s.busiest_share);
        }
        const double r = Median(rate), u = Median(us), sh = Median(share);
        if (base == 0) base = r;
        // One master is one thread: it saturates at 1e6 / (its us per item).
        const double ceiling = u * sh > 0 ? 1e6 / (u * sh) : 0;
        std::printf("%-22s %-6s %12.0f %16.2f %13.0f%% %9.2fx %12.0f\n", c.name.c_str(), op, r, u,
                    sh * 100, r / base, ceiling);
      }
    }
    std::printf(
        "\n* ceiling/s: items/s at which the busiest node's one thread would be saturated, "
        "1e6 / (server us/item * busiest share); what the cluster sustains when every node has "
        "a core of its own. Medians of %d reps.\n",
        args_.reps);
  }

  Args args_;
  std::unique_ptr<Store> single_, cluster_;
  std::unique_ptr<Node> single_node_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Case> cases_;
};

Args ParseArgs(int argc, char** argv) {
  Args a;
  CLI::App app("one redis-server against a Redis Cluster (see scripts/bench-cluster.sh)",
               "cluster_bench");
  app.add_option("--single", a.single_url, "redis:// URL of a plain redis-server")->required();
  app.add_option("--single-node", a.single_node, "host:port of that server, for INFO CPU")
      ->required();
  app.add_option("--cluster", a.cluster_url, "redis-cluster:// URL")->required();
  app.add_option("--nodes", a.nodes, "host:port,... of every cluster master, for INFO CPU")
      ->required();
  app.add_option("--threads", a.threads, "client threads")->check(CLI::Range(1, 256));
  app.add_option("--batch", a.batch, "items per call")->check(CLI::Range(1, 100000));
  app.add_option("--items", a.items, "items per case and operation")
      ->check(CLI::Range(1000, 100'000'000));
  app.add_option("--shards", a.shards, "shard counts of the spread filters (comma-separated)")
      ->delimiter(',')
      ->check(CLI::Range(2, 1024));
  app.add_option("--reps", a.reps, "repetitions")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return a;
}

}  // namespace
}  // namespace redbloom

int main(int argc, char** argv) {
  try {
    redbloom::Bench bench(redbloom::ParseArgs(argc, argv));
    bench.Run();
  } catch (const std::exception& e) {  // the raw client's failures
    redbloom::Die(e.what());
  }
  return 0;
}
