// Loading many items into a Redis filter: `redbloom load` (bits built here,
// uploaded once, merged with BITOP OR) against batched adds (BITFIELD, 1000
// items per command, pipelined), side by side on one server in one run, and
// RedisBloom's BF.MADD on the same items when the server has it loaded
// (--redisbloom; scripts/bench-bulk.sh loads REDISBLOOM_MODULE into it).
//
//   bulk_bench --url redis://127.0.0.1:PORT [--redisbloom] [--sizes 1e6,1e7] [--reps 3]
//
// Every timed load is checked afterwards: all items present, FPP near 1%.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "raw_redis.h"
#include "redbloom/bloom_filter.h"

#ifndef __OPTIMIZE__
#error "bulk_bench must be built with optimisation (scripts/bench-bulk.sh builds Release)"
#endif

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bulk_bench: %s\n", what.c_str());
  std::exit(1);
}

void Check(const redbloom::Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Args {
  std::string url;
  bool redisbloom = false;  // the server at --url has RedisBloom loaded
  std::vector<uint64_t> sizes = {1000000, 10000000};
  int reps = 3;
};

Args Parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> sizes = {"1e6", "1e7"};
  CLI::App app("Bulk load against batched add into Redis (see scripts/bench-bulk.sh)",
               "bulk_bench");
  app.add_option("--url", a.url, "redis:// URL of a plain redis-server")->required();
  app.add_flag("--redisbloom", a.redisbloom, "the server has RedisBloom loaded: add BF.MADD");
  app.add_option("--sizes", sizes, "item counts, comma-separated")->delimiter(',');
  app.add_option("--reps", a.reps, "repetitions")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  a.sizes.clear();
  for (const auto& size : sizes) {
    auto n = redbloom::ParseUint64(size);
    if (!n.ok()) Die("bad --sizes entry '" + size + "': " + n.status().message());
    a.sizes.push_back(*n);
  }
  return a;
}

// Checks the filter after a load: no false negatives, FPP within 1.5x of 1%.
void Verify(redbloom::BloomFilter& f, const std::vector<std::string_view>& items) {
  std::vector<uint8_t> present;
  Check(f.ContainsMany(items, &present), "check");
  for (size_t i = 0; i < present.size(); ++i) {
    if (!present[i]) Die("false negative after load: " + std::string(items[i]));
  }
  std::vector<std::string> probes;
  for (int i = 0; i < 100000; ++i) probes.push_back("never-" + std::to_string(i));
  std::vector<std::string_view> views(probes.begin(), probes.end());
  Check(f.ContainsMany(views, &present), "probe");
  const double fpp = std::count(present.begin(), present.end(), 1) / 100000.0;
  if (fpp > 0.015) Die("FPP " + std::to_string(fpp) + " is above 1.5%");
}

// RedisBloom's BF.MADD on the same server, through the tests' raw client.
struct RedisBloom {
  explicit RedisBloom(const std::string& url) : raw(url) {}
  // BF.MADD 1000 items per command, 16 commands in flight.
  double Load(const std::vector<std::string_view>& items) {
    raw.Must({"DEL", "bf"});
    raw.Must({"BF.RESERVE", "bf", "0.01", std::to_string(items.size()), "NONSCALING"});
    const auto start = Clock::now();
    size_t pending = 0;
    redbloom::internal::CommandBuffer cmd;
    for (size_t i = 0; i < items.size(); i += 1000) {
      const size_t end = std::min(items.size(), i + 1000);
      cmd.Clear();
      cmd.Begin(2 + end - i);
      cmd.Arg("BF.MADD");
      cmd.Arg("bf");
      for (size_t j = i; j < end; ++j) cmd.Arg(items[j]);
      raw.Append(cmd);
      if (++pending == 16) {
        Drain(pending);
        pending = 0;
      }
    }
    Drain(pending);
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
  void Drain(size_t n) {
    for (size_t i = 0; i < n; ++i) raw.ReadOk();
  }
  redbloom::testing::RawRedis raw;
};

}  // namespace

int Run(const Args& args);

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  try {
    return Run(args);
  } catch (const std::exception& e) {  // the raw client's failures
    Die(e.what());
  }
}

int Run(const Args& args) {
  auto store = redbloom::Store::Open(args.url);
  if (!store.ok()) Die(store.status().ToString());
  std::unique_ptr<RedisBloom> module;
  if (args.redisbloom) module = std::make_unique<RedisBloom>(args.url);

  std::printf("%-8s %-10s %14s %14s %8s %14s %10s\n", "strategy", "items", "load items/s",
              "add items/s", "ratio", "BF.MADD/s", "load s");
  for (redbloom::Strategy strategy : {redbloom::Strategy::kGuava64, redbloom::Strategy::kBlock})
    for (uint64_t n : args.sizes) {
      std::vector<std::string> items;
      items.reserve(n);
      for (uint64_t i = 0; i < n; ++i) items.push_back("ORD-" + std::to_string(i));
      std::vector<std::string_view> views(items.begin(), items.end());
      const redbloom::FilterOptions options{
          .capacity = n, .error_rate = 0.01, .strategy = strategy};

      std::vector<double> load_s, add_s, madd_s;
      for (int rep = 0; rep < args.reps; ++rep) {
        // load: what `redbloom load` does.
        (void)redbloom::BloomFilter::Drop(**store, "bulk-load");
        auto f = redbloom::BloomFilter::Create(**store, "bulk-load", options);
        if (!f.ok()) Die(f.status().ToString());
        auto start = Clock::now();
        redbloom::BitmapBuilder builder((*f)->config());
        Check(builder.Add(views), "build");
        Check((*f)->OrBitmap(builder.bitmap(), builder.new_items()), "load");
        load_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        Verify(**f, views);

        // Batched add: AddMany over the whole input; the store sends 1000 items
        // per command with the next batch in flight.
        (void)redbloom::BloomFilter::Drop(**store, "bulk-add");
        auto g = redbloom::BloomFilter::Create(**store, "bulk-add", options);
        if (!g.ok()) Die(g.status().ToString());
        start = Clock::now();
        Check((*g)->AddMany(views), "add");
        add_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        Verify(**g, views);

        if (module) madd_s.push_back(module->Load(views));
      }
      const double load = Median(load_s), add = Median(add_s);
      char madd[32] = "-";
      if (module) std::snprintf(madd, sizeof(madd), "%.0f", n / Median(madd_s));
      std::printf("%-8s %-10llu %14.0f %14.0f %7.1fx %14s %10.2f\n",
                  std::string(redbloom::StrategyName(strategy)).c_str(),
                  static_cast<unsigned long long>(n), n / load, n / add, add / load, madd, load);
      std::fflush(stdout);
      (void)redbloom::BloomFilter::Drop(**store, "bulk-load");
      (void)redbloom::BloomFilter::Drop(**store, "bulk-add");
    }
  std::printf(
      "(medians of %d runs; ratio = load items/s / batched-add items/s; every run checked "
      "for no false negatives and FPP <= 1.5%%)\n",
      args.reps);
  return 0;
}
