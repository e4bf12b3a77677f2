// Redis benchmark (issues #3 and #17): add and check items/s through
// redbloom's Redis store for every strategy (seed with batches of 1, 100 and
// 1000; guava64 at 1000; block at 1 and 1000), against the same server in the
// same run as
//   (a) the seed's way: k blocking SETBIT / GETBIT round trips per item, as
//       the blog posts' Spring RedisService does (a C++ client here, so the client
//       is not what is slow);
//   (b) pipelined SETBIT / GETBIT: every offset of 1000 items in one write;
//   (c) with --redisbloom (the server has RedisBloom loaded), BF.MADD /
//       BF.MEXISTS, 1000 per command, on a NONSCALING filter of the same
//       capacity and rate, on the same server as the bitmap rows;
//   (d) with --tls-url (a TLS port of the --url server), redbloom over TLS,
//       to put the cost of TLS per item next to plain TCP.
// (a) and (b) use the seed strategy's offsets (k = 7, m = 9585058 for 1e6
// items at 1%), so (a) is bit for bit what the Java service does. No filter
// is filled past its capacity over all repetitions.
//
// A second table puts a Redisson-layout filter (strategy redisson, the same
// n and p: m = 9585058, k = 7, and its {NAME}:config) through redbloom and
// through the way Redisson's RBloomFilter sends add and contains: one EVAL
// of its script per call, which checks the config hash and runs one SETBIT /
// GETBIT per index (tests/redisson_replay.h), with 1 and 1000 items per call.
//
// A third table checks window filters (24 and 1,024 slices, only the current
// slice made or every slice) against a plain filter of the same capacity and
// rate, one item and 1000 items per call: what a window costs redis-server
// per checked item, and how that grows with its slices.
//
// Per row: items/s and us/item (median of --reps), the redis-server CPU per
// item (INFO CPU used_cpu_user + used_cpu_sys, delta over the run) and this
// process's CPU per item, and the speed-up over the seed's way. Before any
// figure is printed, every approach's filter is checked for false negatives.
//
//   redis_bench --url redis://127.0.0.1:6379 [--redisbloom] [--tls-url URL] [--reps 3]
// scripts/bench-redis.sh starts the servers and runs this.
#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "raw_redis.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/clock.h"
#include "redbloom/store.h"
#include "redis/redis_client.h"
#include "redis/redis_url.h"
#include "redisson_replay.h"

namespace redbloom {
namespace {

#ifdef __OPTIMIZE__
constexpr bool kOptimized = true;
#else
constexpr bool kOptimized = false;
#endif

constexpr uint64_t kCapacity = 1'000'000;
constexpr double kErrorRate = 0.01;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "redis_bench: %s\n", message.c_str());
  std::exit(1);
}

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}

std::vector<std::string> Items(const std::string& prefix, uint64_t first, uint64_t count) {
  std::vector<std::string> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) out.push_back(prefix + std::to_string(first + i));
  return out;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v, size_t from, size_t n) {
  return {v.begin() + static_cast<ptrdiff_t>(from), v.begin() + static_cast<ptrdiff_t>(from + n)};
}

// The baselines and INFO go through the tests' raw client (tests/raw_redis.h).
using Raw = testing::RawRedis;

double ProcessCpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Sample {
  double items_per_s = 0;
  double server_us = 0;  // per item
  double client_us = 0;  // per item
};

// Times `run(items)`, which must process exactly `items` items.
Sample Measure(Raw& info, uint64_t items, const std::function<void()>& run) {
  const double s0 = info.ServerCpu();
  const double c0 = ProcessCpu();
  const auto t0 = std::chrono::steady_clock::now();
  run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double c1 = ProcessCpu();
  const double s1 = info.ServerCpu();
  return {static_cast<double>(items) / wall, (s1 - s0) * 1e6 / static_cast<double>(items),
          (c1 - c0) * 1e6 / static_cast<double>(items)};
}

struct Row {
  std::string op, approach;
  size_t batch;
  bool redisson;  // the second table: a Redisson-layout filter
  std::vector<Sample> samples;

  Sample Median() const {
    auto med = [&](auto field) {
      std::vector<double> v;
      for (const auto& s : samples) v.push_back(s.*field);
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    return {med(&Sample::items_per_s), med(&Sample::server_us), med(&Sample::client_us)};
  }
};

struct Args {
  std::string url;
  bool redisbloom = false;  // the server at --url has RedisBloom loaded
  std::string tls_url;
  int reps = 3;
  double scale = 1.0;  // multiplies item counts (0.1 for a smoke run)
  bool windows_only = false;
};

Args ParseArgs(int argc, char** argv) {
  Args a;
  CLI::App app("redbloom's Redis store against the seed's way (see scripts/bench-redis.sh)",
               "redis_bench");
  app.add_option("--url", a.url, "redis:// URL of a plain redis-server")->required();
  app.add_flag("--redisbloom", a.redisbloom,
               "the server has RedisBloom loaded: add BF.MADD / BF.MEXISTS rows");
  app.add_option("--tls-url", a.tls_url,
                 "rediss:// URL of a TLS port of the --url server (adds redbloom over TLS)");
  app.add_option("--reps", a.reps, "repetitions")->check(CLI::PositiveNumber);
  app.add_option("--scale", a.scale, "multiplies item counts (0.1 for a smoke run)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--windows-only", a.windows_only, "only the window filters' table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return a;
}

class Bench {
 public:
  explicit Bench(Args args) : args_(std::move(args)), raw_(args_.url) {
    auto store = Store::Open(args_.url);
    Check(store.status(), "open " + args_.url);
    store_ = std::move(store).value();
    if (!args_.tls_url.empty()) {
      auto tls = Store::Open(args_.tls_url);
      Check(tls.status(), "open " + args_.tls_url);
      tls_store_ = std::move(tls).value();
    }
    options_ = FilterOptions{.capacity = kCapacity,
                             .error_rate = kErrorRate,
                             .strategy = Strategy::kSeed,
                             .encoding = Encoding::kUtf8};
    auto config = MakeConfig(options_);
    Check(config.status(), "config");
    config_ = *config;
    raw_.Must({"FLUSHALL"});
  }

  void Run() {
    std::printf("redis_bench: %s, seed strategy, n=%llu p=%g: m=%llu bits, k=%u; %d reps\n",
                args_.url.c_str(), static_cast<unsigned long long>(kCapacity), kErrorRate,
                static_cast<unsigned long long>(config_.geometry.bits), config_.geometry.hashes,
                args_.reps);
    // Repetitions are interleaved (every approach once, then again), so a
    // noisy minute on this shared machine hits all approaches alike; the
    // ratios are medians of per-repetition ratios.
    for (int rep = 0; rep < args_.reps; ++rep) {
      if (args_.windows_only) {
        RunWindows();
        continue;
      }
      RunSeedWay(rep);
      RunPipelined(rep);
      for (size_t batch : {size_t{1}, size_t{100}, size_t{1000}}) {
        RunLibrary(*store_, Strategy::kSeed, batch, rep);
        if (tls_store_ != nullptr) RunLibrary(*tls_store_, Strategy::kSeed, batch, rep);
      }
      RunLibrary(*store_, Strategy::kGuava64, 1000, rep);
      RunLibrary(*store_, Strategy::kBlock, 1, rep);
      RunLibrary(*store_, Strategy::kBlock, 1000, rep);
      if (args_.redisbloom) RunRedisBloom(rep);
      for (size_t batch : {size_t{1}, size_t{1000}}) {
        RunRedissonWay(batch, rep);
        RunRedissonLibrary(batch, rep);
      }
      RunWindows();
    }
    if (!args_.windows_only) {
      Print();
      PrintRedisson();
    }
    PrintWindows();
  }

 private:
  uint64_t Count(uint64_t n) const {
    return std::max<uint64_t>(1000, static_cast<uint64_t>(static_cast<double>(n) * args_.scale));
  }

  // Offsets of items[from, from+n), seed strategy, k per item.
  std::vector<uint64_t> Offsets(const std::vector<std::string>& items) const {
    std::vector<uint64_t> out;
    out.reserve(items.size() * config_.geometry.hashes);
    for (const auto& item : items) {
      auto o = ItemOffsets(config_, item);
      Check(o.status(), "offsets");
      out.insert(out.end(), o->begin(), o->end());
    }
    return out;
  }

  // The row for (op, approach, batch), created on first use.
  Row& NewRow(const std::string& op, const std::string& approach, size_t batch,
              bool redisson = false) {
    for (Row& r : rows_) {
      if (r.op == op && r.approach == approach && r.batch == batch && r.redisson == redisson) {
        return r;
      }
    }
    rows_.push_back({op, approach, batch, redisson, {}});
    return rows_.back();
  }

  // (a) The posts' RedisService: one blocking SETBIT per offset, one GETBIT
  // per offset until a 0 (all k for an item that is present).
  void RunSeedWay(int rep) {
    const uint64_t n = Count(2000);
    const uint32_t k = config_.geometry.hashes;
    Row* add = &NewRow("add", "seed's way: k SETBIT round trips", 1);
    Row* check = &NewRow("check", "seed's way: k GETBIT round trips", 1);
    {
      const auto items = Items("ORD-seed-" + std::to_string(rep) + "-", 0, n);
      const auto offsets = Offsets(items);
      add->samples.push_back(Measure(raw_, n, [&] {
        for (uint64_t o : offsets) raw_.Must({"SETBIT", "seedway", std::to_string(o), "1"});
      }));
      uint64_t found = 0;
      check->samples.push_back(Measure(raw_, n, [&] {
        for (uint64_t i = 0; i < n; ++i) {
          bool all = true;
          for (uint32_t j = 0; j < k && all; ++j) {
            all =
                raw_.Must({"GETBIT", "seedway", std::to_string(offsets[i * k + j])})->integer == 1;
          }
          found += all ? 1 : 0;
        }
      }));
      if (found != n) Die("seed's way lost items");
    }
  }

  // (b) Every SETBIT/GETBIT of 1000 items in one write, replies read after.
  void RunPipelined(int rep) {
    const uint64_t n = Count(100'000);
    constexpr size_t kBatch = 1000;
    Row* add = &NewRow("add", "pipelined SETBIT", kBatch);
    Row* check = &NewRow("check", "pipelined GETBIT", kBatch);
    {
      const auto items = Items("ORD-pipe-" + std::to_string(rep) + "-", 0, n);
      const auto offsets = Offsets(items);
      auto run = [&](const char* command, bool set) {
        uint64_t ones = 0;
        internal::CommandBuffer cmd;
        for (size_t start = 0; start < offsets.size(); start += kBatch * config_.geometry.hashes) {
          const size_t end = std::min(offsets.size(), start + kBatch * config_.geometry.hashes);
          cmd.Clear();
          for (size_t i = start; i < end; ++i) {
            cmd.Begin(set ? 4 : 3);
            cmd.Arg(command);
            cmd.Arg("pipelined");
            cmd.Arg(offsets[i]);
            if (set) cmd.Arg("1");
          }
          raw_.Append(cmd);
          for (size_t i = start; i < end; ++i) ones += raw_.ReadOk()->integer == 1 ? 1 : 0;
        }
        return ones;
      };
      add->samples.push_back(Measure(raw_, n, [&] { run("SETBIT", true); }));
      uint64_t ones = 0;
      check->samples.push_back(Measure(raw_, n, [&] { ones = run("GETBIT", false); }));
      if (ones != offsets.size()) Die("pipelined GETBIT lost bits");
    }
  }

  void RunLibrary(Store& store, Strategy strategy, size_t batch, int rep) {
    // About a second per run on loopback: batch 1 is one round trip per item.
    // Never more than the filter's capacity over all repetitions, so every
    // run sees a filter at or below its design fill.
    const uint64_t n = std::min<uint64_t>(Count(batch == 1     ? 5000
                                                : batch == 100 ? 100'000
                                                               : 300'000),
                                          kCapacity / static_cast<uint64_t>(args_.reps));
    const bool tls = &store != store_.get();
    const std::string sn(StrategyName(strategy));
    const std::string name = (tls ? "tls-" : "lib-") + sn + "-" + std::to_string(batch);
    FilterOptions options = options_;
    options.strategy = strategy;
    auto filter = BloomFilter::Create(store, name, options);
    Check(filter.status(), "create " + name);
    const std::string approach = "redbloom " + sn + (tls ? " over TLS" : "");
    Row* add = &NewRow("add", approach, batch);
    Row* check = &NewRow("check", approach, batch);
    std::vector<uint8_t> flags;
    {
      const auto items =
          Items(std::string(tls ? "ORD-tls-" : "ORD-lib-") + sn + std::to_string(rep) + "-", 0, n);
      add->samples.push_back(Measure(raw_, n, [&] {
        for (size_t i = 0; i < n; i += batch) {
          Check((*filter)->AddMany(Views(items, i, std::min<size_t>(batch, n - i)), &flags), "add");
        }
      }));
      uint64_t found = 0;
      check->samples.push_back(Measure(raw_, n, [&] {
        for (size_t i = 0; i < n; i += batch) {
          Check((*filter)->ContainsMany(Views(items, i, std::min<size_t>(batch, n - i)), &flags),
                "check");
          for (uint8_t f : flags) found += f;
        }
      }));
      if (found != n) Die("redbloom " + sn + " lost items (batch " + std::to_string(batch) + ")");
    }
  }

  // (c) RedisBloom's BF.MADD / BF.MEXISTS: hashing and bits on the server.
  // NONSCALING: one filter of exactly this capacity and rate, never grown.
  void RunRedisBloom(int rep) {
    Raw& module = raw_;
    if (rep == 0) {
      module.Must({"BF.RESERVE", "rb", std::to_string(kErrorRate), std::to_string(kCapacity),
                   "NONSCALING"});
    }
    const uint64_t n =
        std::min<uint64_t>(Count(300'000), kCapacity / static_cast<uint64_t>(args_.reps));
    constexpr size_t kBatch = 1000;
    Row* add = &NewRow("add", "RedisBloom BF.MADD", kBatch);
    Row* check = &NewRow("check", "RedisBloom BF.MEXISTS", kBatch);
    {
      const auto items = Items("ORD-rb-" + std::to_string(rep) + "-", 0, n);
      auto run = [&](const char* command) {
        uint64_t ones = 0;
        internal::CommandBuffer cmd;
        for (size_t start = 0; start < n; start += kBatch) {
          const size_t end = std::min<size_t>(n, start + kBatch);
          cmd.Clear();
          cmd.Begin(2 + end - start);
          cmd.Arg(command);
          cmd.Arg("rb");
          for (size_t i = start; i < end; ++i) cmd.Arg(items[i]);
          module.Append(cmd);
          auto r = module.ReadOk();
          for (size_t i = 0; i < r->elements; ++i) ones += r->element[i]->integer == 1 ? 1 : 0;
        }
        return ones;
      };
      add->samples.push_back(Measure(module, n, [&] { run("BF.MADD"); }));
      uint64_t found = 0;
      check->samples.push_back(Measure(module, n, [&] { found = run("BF.MEXISTS"); }));
      if (found != n) Die("RedisBloom lost items");
      // Its false positives on never-added items, as a check of the filter.
      const auto others = Items("ORD-rb-absent-" + std::to_string(rep) + "-", 0, 10000);
      internal::CommandBuffer probe;
      probe.Begin(2 + others.size());
      probe.Arg("BF.MEXISTS");
      probe.Arg("rb");
      for (const auto& o : others) probe.Arg(o);
      module.Append(probe);
      auto r = module.ReadOk();
      uint64_t fp = 0;
      for (size_t i = 0; i < r->elements; ++i) fp += r->element[i]->integer == 1 ? 1 : 0;
      if (fp > 10000 * kErrorRate * 3) Die("RedisBloom's FPP is out of bounds");
    }
  }

  // ---- Redisson layout ---------------------------------------------------

  uint64_t RedissonCount(size_t batch) const {
    // About a second each; under the capacity over all repetitions.
    return std::min<uint64_t>(Count(batch == 1 ? 5000 : 100'000),
                              kCapacity / static_cast<uint64_t>(args_.reps));
  }

  // Redisson's add(Collection) / contains(Collection): one EVAL per call.
  void RunRedissonWay(size_t batch, int rep) {
    const Geometry g = *RedissonGeometry(kCapacity, kErrorRate);
    const std::string name = "redisson-way" + std::to_string(batch);
    const std::string config = testing::RedissonConfigKey(name);
    if (rep == 0) {
      raw_.Must({"EVAL", testing::kRedissonTryInit, "1", config, std::to_string(g.bits),
                 std::to_string(g.hashes), std::to_string(kCapacity), "0.01"});
    }
    const uint64_t n = RedissonCount(batch);
    const auto items = Items("ORD-rw-" + std::to_string(rep) + "-", 0, n);
    auto run = [&](const char* script, bool add) {
      uint64_t answered = 0;
      internal::CommandBuffer cmd;
      std::vector<uint64_t> indexes;
      for (size_t start = 0; start < n; start += batch) {
        const size_t end = std::min<size_t>(n, start + batch);
        indexes.clear();
        for (size_t i = start; i < end; ++i) {
          testing::AppendRedissonIndexes(items[i], g.bits, g.hashes, &indexes);
        }
        cmd.Clear();
        cmd.Begin(8 + indexes.size());
        cmd.Arg("EVAL");
        cmd.Arg(script);
        cmd.Arg("2");
        cmd.Arg(config);
        cmd.Arg(name);
        cmd.Arg(g.bits);
        cmd.Arg(uint64_t{g.hashes});
        cmd.Arg(add ? uint64_t{g.hashes} : uint64_t{end - start});
        for (uint64_t i : indexes) cmd.Arg(i);
        raw_.Append(cmd);
        answered += static_cast<uint64_t>(raw_.ReadOk()->integer);
      }
      return answered;
    };
    NewRow("add", "Redisson's script", batch, /*redisson=*/true)
        .samples.push_back(Measure(raw_, n, [&] { run(testing::kRedissonAdd, true); }));
    uint64_t found = 0;
    NewRow("check", "Redisson's script", batch, /*redisson=*/true)
        .samples.push_back(
            Measure(raw_, n, [&] { found = run(testing::kRedissonContains, false); }));
    if (found != n) Die("Redisson's way lost items (batch " + std::to_string(batch) + ")");
  }

  // redbloom on a filter of strategy redisson, created by redbloom.
  void RunRedissonLibrary(size_t batch, int rep) {
    const std::string name = "redisson-lib" + std::to_string(batch);
    FilterOptions options = options_;
    options.strategy = Strategy::kRedisson;
    auto filter = BloomFilter::Create(*store_, name, options);
    Check(filter.status(), "create " + name);
    const uint64_t n = RedissonCount(batch);
    const auto items = Items("ORD-rl-" + std::to_string(rep) + "-", 0, n);
    std::vector<uint8_t> flags;
    NewRow("add", "redbloom", batch, /*redisson=*/true).samples.push_back(Measure(raw_, n, [&] {
      for (size_t i = 0; i < n; i += batch) {
        Check((*filter)->AddMany(Views(items, i, std::min<size_t>(batch, n - i)), &flags), "add");
      }
    }));
    uint64_t found = 0;
    NewRow("check", "redbloom", batch, /*redisson=*/true).samples.push_back(Measure(raw_, n, [&] {
      for (size_t i = 0; i < n; i += batch) {
        Check((*filter)->ContainsMany(Views(items, i, std::min<size_t>(batch, n - i)), &flags),
              "check");
        for (uint8_t f : flags) found += f;
      }
    }));
    if (found != n) Die("redbloom lost items of a Redisson-layout filter");
  }

  // ---- Window filters ----------------------------------------------------

  // A filter to check, made once: a plain one (slices 0) or a window of
  // `slices` slices of an hour each, the items to check added to its current slice,
  // and with `all_made` one item more in each earlier slice of the window.
  // Each window has its own store, whose clock stands still mid-slice: no
  // slice ends (nor the look-ahead at a slice's end begins) during a run.
  struct WindowCase {
    uint32_t slices;
    bool all_made;
    size_t batch;
    std::string name;
    std::unique_ptr<Store> store;
    std::unique_ptr<BloomFilter> filter;
    std::vector<std::string> items;
  };

  void MakeWindow(WindowCase& w) {
    // Slices of an hour: a slice key lives a window and a slice past its
    // slice, so none expires by the server's clock during a run while the
    // store's clock stands still (with 1,024 slices of a day, 84 s each, the
    // oldest expired a minute or two in, and every check was data_loss).
    constexpr uint64_t kSlice = 3'600'000;
    const uint64_t n = std::max<uint64_t>(
        100, static_cast<uint64_t>(
                 static_cast<double>(w.batch == 1 ? (w.slices > 100 ? 300 : 2000) : 20'000) *
                 args_.scale));
    uint64_t now = Clock::System()->NowMillis();
    auto clock = std::make_shared<ManualClock>(now);
    FilterOptions options{.capacity = 100'000, .error_rate = kErrorRate};
    if (w.slices > 0) {
      now = now / kSlice * kSlice + kSlice / 2;
      clock->Set(now);
      options.window_millis = kSlice * w.slices;
      options.slices = w.slices;
      options.kind = FilterKind::kWindow;
    }
    auto store = Store::Open(args_.url, StoreOptions{.clock = clock});
    Check(store.status(), "open " + args_.url);
    w.store = std::move(store).value();
    w.name = "win-" + std::to_string(w.slices) + (w.all_made ? "-all-" : "-one-") +
             std::to_string(w.batch);
    auto filter = BloomFilter::Create(*w.store, w.name, options);
    Check(filter.status(), "create " + w.name);
    w.filter = std::move(filter).value();
    if (w.all_made) {
      for (uint32_t s = 1; s < w.slices; ++s) {
        clock->Set(now - uint64_t{s} * kSlice);
        Check(w.filter->Add("earlier-" + std::to_string(s)), "add to a slice");
      }
      clock->Set(now);
    }
    w.items = Items("ORD-win-", 0, n);
    std::vector<uint8_t> flags;
    for (size_t i = 0; i < n; i += 1000) {
      Check(w.filter->AddMany(Views(w.items, i, std::min<size_t>(1000, n - i)), &flags), "add");
    }
    if (w.slices > 0) {
      auto info = w.filter->Info();
      Check(info.status(), "info " + w.name);
      if (info->parts != (w.all_made ? w.slices : 1)) Die(w.name + ": unexpected live slices");
    }
  }

  void RunWindows() {
    if (windows_.empty()) {
      for (auto [slices, all_made, batch] : {std::tuple{0u, false, size_t{1}},
                                             {0u, false, size_t{1000}},
                                             {24u, false, size_t{1}},
                                             {24u, true, size_t{1}},
                                             {24u, true, size_t{1000}},
                                             {1024u, false, size_t{1}},
                                             {1024u, true, size_t{1}}}) {
        windows_.push_back(WindowCase{slices, all_made, batch, "", nullptr, nullptr, {}});
        MakeWindow(windows_.back());
      }
    }
    for (WindowCase& w : windows_) {
      const std::string label = w.slices == 0 ? "plain (one part)"
                                              : std::to_string(w.slices) + " slices, " +
                                                    (w.all_made ? "all" : "one") + " made";
      Row* into = nullptr;
      for (Row& r : window_rows_) {
        if (r.approach == label && r.batch == w.batch) into = &r;
      }
      if (into == nullptr) {
        window_rows_.push_back({"check", label, w.batch, false, {}});
        into = &window_rows_.back();
      }
      std::vector<uint8_t> flags;
      uint64_t found = 0;
      const uint64_t n = w.items.size();
      into->samples.push_back(Measure(raw_, n, [&] {
        for (size_t i = 0; i < n; i += w.batch) {
          Check(w.filter->ContainsMany(Views(w.items, i, std::min<size_t>(w.batch, n - i)), &flags),
                "check " + w.name);
          for (uint8_t f : flags) found += f;
        }
      }));
      if (found != n) Die(w.name + " lost items");
    }
  }

  void Print() const {
    const Row* seed_add = nullptr;
    const Row* seed_check = nullptr;
    for (const Row& r : rows_) {
      if (r.approach.starts_with("seed's way")) (r.op == "add" ? seed_add : seed_check) = &r;
    }
    // Median over repetitions of (this approach / the seed's way) in the same
    // repetition.
    auto median_over_reps = [](const Row& r, const Row& seed, auto f) {
      std::vector<double> v;
      for (size_t i = 0; i < r.samples.size() && i < seed.samples.size(); ++i) {
        v.push_back(f(r.samples[i], seed.samples[i]));
      }
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    auto ratio = [&](const Row& r, const Row& seed) {
      return median_over_reps(r, seed, [](const Sample& s, const Sample& base) {
        return s.items_per_s / base.items_per_s;
      });
    };
    // The speed-up this approach would reach if only redis-server's CPU per
    // item counted (client and network free): the seed's time per item over
    // this row's server time per item. The limit of any client on this server.
    auto ceiling = [&](const Row& r, const Row& seed) {
      return median_over_reps(r, seed, [](const Sample& s, const Sample& base) {
        return 1e6 / base.items_per_s / s.server_us;
      });
    };
    std::printf("\n%-6s %-36s %6s %12s %10s %12s %12s %9s %9s\n", "op", "approach", "batch",
                "items/s", "us/item", "server us", "client us", "vs seed", "ceiling");
    for (const std::string op : {"add", "check"}) {
      for (const Row& r : rows_) {
        if (r.op != op || r.redisson) continue;
        const Sample m = r.Median();
        const Row& seed = op == "add" ? *seed_add : *seed_check;
        std::printf("%-6s %-36s %6zu %12.0f %10.2f %12.2f %12.2f %8.1fx %8.1fx\n", r.op.c_str(),
                    r.approach.c_str(), r.batch, m.items_per_s, 1e6 / m.items_per_s, m.server_us,
                    m.client_us, ratio(r, seed), ceiling(r, seed));
      }
    }
    // Issue #17's target: a block check costs redis-server at most a third of
    // a guava64 check, per item.
    auto server = [&](const std::string& op, const std::string& approach) {
      for (const Row& r : rows_) {
        if (r.op == op && r.approach == approach && r.batch == 1000) return r.Median().server_us;
      }
      return 0.0;
    };
    for (const std::string op : {"add", "check"}) {
      const double g = server(op, "redbloom guava64"), b = server(op, "redbloom block");
      if (g > 0 && b > 0) {
        std::printf(
            "\n%s, batch 1000: redis-server CPU per item block %.2f us / guava64 %.2f us = %.2f",
            op.c_str(), b, g, b / g);
      }
    }
    std::printf("\n");
    std::printf(
        "\nitems/s and us/item: wall clock, median of %d interleaved repetitions; vs seed: median "
        "of per-repetition ratios; server us: redis-server CPU per item (INFO CPU); client us: "
        "this process's CPU per item (hashing included for redbloom); ceiling: the seed's us/item "
        "over this row's server us/item, the most any client could reach with this command "
        "shape on this server and host.\n",
        args_.reps);
  }
  // The Redisson-layout rows, each against Redisson's own script at the same
  // batch (median of per-repetition ratios).
  void PrintRedisson() const {
    std::printf("\nRedisson layout (strategy redisson, m=%llu, k=%u, {NAME}:config checked)\n",
                static_cast<unsigned long long>(RedissonGeometry(kCapacity, kErrorRate)->bits),
                RedissonGeometry(kCapacity, kErrorRate)->hashes);
    std::printf("%-6s %-20s %6s %12s %10s %12s %12s %13s\n", "op", "approach", "batch", "items/s",
                "us/item", "server us", "client us", "vs Redisson");
    for (const std::string op : {"add", "check"}) {
      for (const Row& r : rows_) {
        if (r.op != op || !r.redisson) continue;
        const Row* base = nullptr;
        for (const Row& b : rows_) {
          if (b.redisson && b.op == op && b.batch == r.batch && b.approach != "redbloom") base = &b;
        }
        std::vector<double> ratios;
        for (size_t i = 0; base != nullptr && i < r.samples.size() && i < base->samples.size();
             ++i) {
          ratios.push_back(r.samples[i].items_per_s / base->samples[i].items_per_s);
        }
        std::sort(ratios.begin(), ratios.end());
        const Sample m = r.Median();
        std::printf("%-6s %-20s %6zu %12.0f %10.2f %12.2f %12.2f %12.1fx\n", r.op.c_str(),
                    r.approach.c_str(), r.batch, m.items_per_s, 1e6 / m.items_per_s, m.server_us,
                    m.client_us, ratios.empty() ? 0.0 : ratios[ratios.size() / 2]);
      }
    }
    std::printf(
        "\nRedisson's script: one EVAL per call of its add / contains script (config check, then "
        "one SETBIT / GETBIT per index), as RBloomFilter.add(Collection) / contains(Collection) "
        "send it; batch 1 is add(item). Same server, same run, same columns as above.\n");
  }

  // Each window row against the plain filter's at the same batch: the
  // median over repetitions of (window / plain) redis-server CPU per item.
  void PrintWindows() const {
    std::printf(
        "\nWindow filters (slices of an hour; 100000 items at %g; block), checks of present "
        "items\n",
        kErrorRate);
    std::printf("%-26s %6s %12s %10s %12s %12s %14s\n", "filter", "batch", "items/s", "us/item",
                "server us", "client us", "server/plain");
    for (const Row& r : window_rows_) {
      const Row* plain = nullptr;
      for (const Row& b : window_rows_) {
        if (b.batch == r.batch && b.approach.starts_with("plain")) plain = &b;
      }
      std::vector<double> ratios;
      for (size_t i = 0; plain != nullptr && i < r.samples.size() && i < plain->samples.size();
           ++i) {
        ratios.push_back(r.samples[i].server_us / plain->samples[i].server_us);
      }
      std::sort(ratios.begin(), ratios.end());
      const Sample m = r.Median();
      std::printf("%-26s %6zu %12.0f %10.2f %12.2f %12.2f %13.1fx\n", r.approach.c_str(), r.batch,
                  m.items_per_s, 1e6 / m.items_per_s, m.server_us, m.client_us,
                  ratios.empty() ? 0.0 : ratios[ratios.size() / 2]);
    }
    std::printf(
        "\nA window check tests every slice of the window; slices never made cost the lookup "
        "of their key and listing. Same server, same run, same columns as above.\n");
  }

  Args args_;
  Raw raw_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Store> tls_store_;
  FilterOptions options_;
  FilterConfig config_;
  std::deque<Row> rows_;  // stable addresses: rows are filled after later ones are added
  std::deque<WindowCase> windows_;
  std::deque<Row> window_rows_;
};

}  // namespace
}  // namespace redbloom

int main(int argc, char** argv) {
  if (!redbloom::kOptimized) {
    redbloom::Die(
        "built without optimisation; its figures would mean nothing "
        "(use scripts/bench-redis.sh, which builds -O3)");
  }
  try {
    redbloom::Bench bench(redbloom::ParseArgs(argc, argv));
    bench.Run();
  } catch (const std::exception& e) {  // the raw client's failures
    redbloom::Die(e.what());
  }
  return 0;
}
