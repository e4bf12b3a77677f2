// The library side of scripts/bench-server.sh: the same 1000-item batches
// and single checks that wrk sends to redbloomd, run here without HTTP, so
// the script can print the service's overhead as a ratio from one run.
//
//   server_bench setup   --store URL [--filter NAME] [--capacity N] [--preload N]
//                        [--body-out FILE]
//   server_bench measure --store URL [--filter NAME] [--seconds S] [--threads T]
//
// `setup` creates the filter (1% error), adds ORD-0 .. ORD-(preload-1) and
// writes the batch body wrk will POST: 500 of those items and 500 never added
// ones (NEW-i), so the check sees the realistic mix of hits and misses.
//
// `measure` prints tab-separated lines:
//   <what> <threads> <ops per second> <p50 us> <p99 us> <items per op>
// for library_batch (BloomFilter::ContainsMany on the batch), service_batch
// (the service's handler in-process: JSON parse, check, JSON answer, no HTTP)
// and library_single (BloomFilter::Contains on one item at a time).
//
// It refuses to run from a build without NDEBUG: an unoptimised library makes
// any HTTP overhead look small.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "metrics.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "service.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBatch = 1000;

struct Args {
  std::string mode;
  std::string store;
  std::string filter = "bench";
  uint64_t capacity = 1000000;
  uint64_t preload = 1000000;
  std::string body_out;
  double seconds = 5;
  int threads = 1;
};

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "server_bench: %s\n", msg.c_str());
  std::exit(1);
}

void Check(const redbloom::Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

Args Parse(int argc, char** argv) {
  Args a;
  CLI::App app("The library side of scripts/bench-server.sh", "server_bench");
  app.add_option("MODE", a.mode, "setup or measure")
      ->required()
      ->check(CLI::IsMember({"setup", "measure"}));
  app.add_option("--store", a.store, "store URL")->required();
  app.add_option("--filter", a.filter, "filter name");
  app.add_option("--capacity", a.capacity, "filter capacity");
  app.add_option("--preload", a.preload, "items ORD-i added by setup");
  app.add_option("--body-out", a.body_out, "setup: write the batch's JSON body here");
  app.add_option("--seconds", a.seconds, "measure: seconds per measurement");
  app.add_option("--threads", a.threads, "measure: threads")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return a;
}

// The batch: 500 added items spread over the preload, 500 never added.
std::vector<std::string> BatchItems(uint64_t preload) {
  std::vector<std::string> items;
  for (size_t i = 0; i < kBatch / 2; ++i) {
    items.push_back("ORD-" + std::to_string((i * 1999) % std::max<uint64_t>(preload, 1)));
    items.push_back("NEW-" + std::to_string(i));
  }
  return items;
}

std::string BatchBody(const std::vector<std::string>& items) {
  std::string body = "{\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i != 0) body += ',';
    body += '"' + items[i] + '"';  // ORD-/NEW- digits need no escaping
  }
  return body + "]}";
}

int Setup(const Args& a) {
  auto store = redbloom::Store::Open(a.store);
  Check(store.status(), "open store");
  (void)redbloom::BloomFilter::Drop(**store, a.filter);  // a fresh filter each run
  auto filter = redbloom::BloomFilter::Create(**store, a.filter,
                                              {.capacity = a.capacity, .error_rate = 0.01});
  Check(filter.status(), "create filter");
  std::vector<std::string> chunk;
  std::vector<std::string_view> views;
  for (uint64_t start = 0; start < a.preload; start += 10000) {
    chunk.clear();
    for (uint64_t i = start; i < std::min(a.preload, start + 10000); ++i) {
      chunk.push_back("ORD-" + std::to_string(i));
    }
    views.assign(chunk.begin(), chunk.end());
    Check((*filter)->AddMany(views), "preload");
  }
  Check((*filter)->Flush(), "flush");
  if (!a.body_out.empty()) {
    std::ofstream(a.body_out) << BatchBody(BatchItems(a.preload));
  }
  return 0;
}

struct Result {
  double ops_per_sec = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// Runs op() on `threads` threads for `seconds`, timing every call.
template <typename Op>
Result Run(int threads, double seconds, Op op) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(threads));
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto& mine = lat[static_cast<size_t>(t)];
      mine.reserve(1 << 20);
      while (!stop.load(std::memory_order_relaxed)) {
        const auto t0 = Clock::now();
        op();
        mine.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  Result r;
  r.ops_per_sec = static_cast<double>(all.size()) / elapsed;
  r.p50_us = all.empty() ? 0 : all[all.size() / 2];
  r.p99_us = all.empty() ? 0 : all[all.size() * 99 / 100];
  return r;
}

void Print(const char* what, int threads, const Result& r, size_t items) {
  std::printf("%s\t%d\t%.1f\t%.1f\t%.1f\t%zu\n", what, threads, r.ops_per_sec, r.p50_us, r.p99_us,
              items);
  std::fflush(stdout);
}

int Measure(const Args& a) {
  auto store = redbloom::Store::Open(a.store);
  Check(store.status(), "open store");
  auto opened = redbloom::BloomFilter::Open(**store, a.filter);
  Check(opened.status(), "open filter (run setup first)");
  redbloom::BloomFilter& filter = **opened;
  auto info = filter.Info();
  Check(info.status(), "info");
  const std::vector<std::string> items = BatchItems(info->items_added);
  const std::vector<std::string_view> views(items.begin(), items.end());
  const std::string body = BatchBody(items);

  // Sanity before timing: every added item is found.
  std::vector<uint8_t> present;
  Check(filter.ContainsMany(views, &present), "check");
  for (size_t i = 0; i < items.size(); i += 2) {
    if (present[i] == 0) Die("false negative for " + items[i]);
  }

  Print("library_batch", a.threads,
        Run(a.threads, a.seconds,
            [&] {
              std::vector<uint8_t> p;
              Check(filter.ContainsMany(views, &p), "check");
            }),
        kBatch);

  redbloom::server::Metrics metrics;
  redbloom::server::ServiceOptions options;
  options.store_url = a.store;
  // The service's default for this store, as redbloomd would run it.
  options.revalidate_after =
      a.store.starts_with("file:") ? std::chrono::milliseconds(0) : std::chrono::milliseconds(1000);
  redbloom::server::Service service(options, &metrics);
  Check(service.Start(), "start service");
  Print("service_batch", a.threads,
        Run(a.threads, a.seconds,
            [&] {
              auto r = service.CheckItems(a.filter, body);
              if (r.status != 200)
                Die("service answered " + std::to_string(r.status) + ": " + r.body);
            }),
        kBatch);

  std::atomic<uint64_t> next{0};
  Print("library_single", a.threads,
        Run(a.threads, a.seconds,
            [&] {
              const uint64_t i = next.fetch_add(1, std::memory_order_relaxed) % views.size();
              auto hit = filter.Contains(views[i]);
              Check(hit.status(), "contains");
            }),
        1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
#ifndef NDEBUG
  Die("built without NDEBUG (an unoptimised build); use -DCMAKE_BUILD_TYPE=Release");
#endif
  const Args a = Parse(argc, argv);
  return a.mode == "setup" ? Setup(a) : Measure(a);  // Parse allows only these two
}
