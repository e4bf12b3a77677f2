// In-memory benchmark of the core (issue #2): add and contains, one item at a
// time and in batches of 1000, at 1e6 and 1e7 items, 1% error, guava64 on the
// mem: store (and file: for the batch paths). Items are "ORD-i".
//
// Figures are per item: ns_per_item (time / items), plus the measured FPP
// over 1e6 never-added items and bits per key. murmur3_128 of the item alone
// is timed too, to show hashing's share. Before anything is timed each filter
// is checked: no false negatives, FPP within 25% of the target.
//
//   core_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//              --summary_out=FILE
// --summary_out writes one line per benchmark, "NAME<TAB>NS_PER_ITEM<TAB>FPP
// <TAB>BITS_PER_KEY", from the median of the repetitions (scripts/bench-core.sh
// joins it with Guava's figures).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/hash.h"
#include "redbloom/store.h"
#include "redbloom/strategy.h"

namespace redbloom {
namespace {

constexpr double kErrorRate = 0.01;
constexpr size_t kBatch = 1000;
// Queries per timed pass: 1e6 added items (a sample at 1e7) and 1e6
// never-added ones, the same sets GuavaBench uses.
constexpr uint64_t kQueries = 1'000'000;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "core_bench: %s\n", message.c_str());
  std::exit(1);
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

// "ORD-first" .. "ORD-(first+count-1)".
std::vector<std::string> OrderIds(uint64_t first, uint64_t count, uint64_t stride = 1) {
  std::vector<std::string> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) out.push_back("ORD-" + std::to_string(first + i * stride));
  return out;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// A directory for file: stores, removed at exit.
const std::string& FileStoreDir() {
  static const std::string* dir = [] {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/redbloom-bench-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp failed");
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(FileStoreDir(), ec);
    });
    return new std::string(tmpl);
  }();
  return *dir;
}

// The items for one n, shared by every store's workload (1e7 of them take
// about 0.5 GB).
struct Items {
  std::vector<std::string> items;    // ORD-0 .. ORD-(n-1), added
  std::vector<std::string> present;  // kQueries of them, evenly spaced
  std::vector<std::string> absent;   // ORD-n .. ORD-(n+kQueries-1), never added
  std::vector<std::string_view> item_views, present_views, absent_views;
};

const Items& GetItems(uint64_t n) {
  static std::map<uint64_t, std::unique_ptr<Items>> cache;
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<Items>();
    slot->items = OrderIds(0, n);
    slot->present = OrderIds(0, kQueries, n / kQueries);
    slot->absent = OrderIds(n, kQueries);
    slot->item_views = Views(slot->items);
    slot->present_views = Views(slot->present);
    slot->absent_views = Views(slot->absent);
  }
  return *slot;
}

// A filled, verified filter and an empty one for one (n, store) pair.
struct Workload {
  uint64_t n = 0;
  const Items* items = nullptr;
  std::unique_ptr<Store> store;
  std::unique_ptr<BloomFilter> filled;  // holds every item
  std::unique_ptr<BloomFilter> empty;   // cleared before each add pass
  double fpp = 0;
  double bits_per_key = 0;
};

Workload& GetWorkload(uint64_t n, const std::string& store_kind) {
  static std::map<std::pair<uint64_t, std::string>, std::unique_ptr<Workload>> cache;
  auto& slot = cache[{n, store_kind}];
  if (slot) return *slot;
  auto w = std::make_unique<Workload>();
  w->n = n;
  w->items = &GetItems(n);
  const Items& items = *w->items;

  const std::string url = store_kind == "mem" ? "mem:" : "file:" + FileStoreDir();
  auto store = Store::Open(url);
  Check(store.status(), "open store");
  w->store = std::move(*store);
  FilterOptions options{.capacity = n, .error_rate = kErrorRate};
  const std::string base = "bench-" + std::to_string(n);
  auto filled = BloomFilter::Create(*w->store, base + "-filled", options);
  Check(filled.status(), "create filter");
  w->filled = std::move(*filled);
  auto empty = BloomFilter::Create(*w->store, base + "-empty", options);
  Check(empty.status(), "create filter");
  w->empty = std::move(*empty);

  // Verify before timing: every added item is found, FPP is near 1%.
  Check(w->filled->AddMany(items.item_views), "fill");
  std::vector<uint8_t> answers;
  Check(w->filled->ContainsMany(items.item_views, &answers), "check added");
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i]) Die("false negative for " + items.items[i] + " at n=" + std::to_string(n));
  }
  Check(w->filled->ContainsMany(items.absent_views, &answers), "check never-added");
  uint64_t false_positives = 0;
  for (uint8_t a : answers) false_positives += a;
  w->fpp = static_cast<double>(false_positives) / static_cast<double>(answers.size());
  // With 1e6 probes the standard error at 1% is 0.01%, so 25% of slack only
  // trips on a real defect (a wrong k or m gives 2x or more).
  if (w->fpp > kErrorRate * 1.25 || w->fpp < kErrorRate * 0.5) {
    Die("measured FPP " + std::to_string(w->fpp) +
        " is outside [0.5%, 1.25%] at n=" + std::to_string(n) + " on " + store_kind);
  }
  w->bits_per_key = static_cast<double>(w->filled->config().geometry.bits) / static_cast<double>(n);
  slot = std::move(w);
  return *slot;
}

void SetCounters(benchmark::State& state, const Workload& w, uint64_t items_per_pass) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * items_per_pass));
  // Seconds per item; the summary prints it in ns.
  state.counters["ns_per_item"] = benchmark::Counter(
      static_cast<double>(items_per_pass),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["fpp"] = w.fpp;
  state.counters["bits_per_key"] = w.bits_per_key;
}

// One pass adds all n items to an empty filter.
void BM_AddSingle(benchmark::State& state, uint64_t n, std::string store) {
  Workload& w = GetWorkload(n, store);
  for (auto _ : state) {
    state.PauseTiming();
    Check(w.empty->Clear(), "clear");
    state.ResumeTiming();
    for (std::string_view item : w.items->item_views) Check(w.empty->Add(item), "add");
  }
  SetCounters(state, w, n);
}

void BM_AddBatch(benchmark::State& state, uint64_t n, std::string store) {
  Workload& w = GetWorkload(n, store);
  const std::span<const std::string_view> all(w.items->item_views);
  for (auto _ : state) {
    state.PauseTiming();
    Check(w.empty->Clear(), "clear");
    state.ResumeTiming();
    for (size_t i = 0; i < all.size(); i += kBatch) {
      Check(w.empty->AddMany(all.subspan(i, std::min(kBatch, all.size() - i))), "add");
    }
  }
  SetCounters(state, w, n);
}

// One pass queries kQueries items, present or never added.
void BM_ContainsSingle(benchmark::State& state, uint64_t n, std::string store, bool hit) {
  Workload& w = GetWorkload(n, store);
  const auto& queries = hit ? w.items->present_views : w.items->absent_views;
  for (auto _ : state) {
    uint64_t found = 0;
    for (std::string_view item : queries) {
      auto r = w.filled->Contains(item);
      Check(r.status(), "contains");
      found += *r ? 1 : 0;
    }
    benchmark::DoNotOptimize(found);
    if (hit && found != queries.size()) Die("false negative while timing");
  }
  SetCounters(state, w, queries.size());
}

void BM_ContainsBatch(benchmark::State& state, uint64_t n, std::string store, bool hit) {
  Workload& w = GetWorkload(n, store);
  const std::span<const std::string_view> queries(hit ? w.items->present_views
                                                      : w.items->absent_views);
  std::vector<uint8_t> present;
  for (auto _ : state) {
    uint64_t found = 0;
    for (size_t i = 0; i < queries.size(); i += kBatch) {
      Check(w.filled->ContainsMany(queries.subspan(i, std::min(kBatch, queries.size() - i)),
                                   &present),
            "contains");
      for (uint8_t p : present) found += p;
    }
    benchmark::DoNotOptimize(found);
    if (hit && found != queries.size()) Die("false negative while timing");
  }
  SetCounters(state, w, queries.size());
}

// murmur3_128 of the same never-added items alone: what hashing costs.
void BM_Murmur3(benchmark::State& state, uint64_t n) {
  Workload& w = GetWorkload(n, "mem");
  for (auto _ : state) {
    uint64_t acc = 0;
    for (std::string_view item : w.items->absent_views) acc ^= Murmur3_128(item).h1;
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, w, w.items->absent_views.size());
}

// guava64's k offsets of already-hashed items alone: the arithmetic share
// (k 64-bit remainders by m per item).
void BM_Offsets(benchmark::State& state, uint64_t n) {
  Workload& w = GetWorkload(n, "mem");
  std::vector<Hash128> hashes;
  hashes.reserve(w.items->absent_views.size());
  for (std::string_view item : w.items->absent_views) hashes.push_back(Murmur3_128(item));
  const FilterConfig& config = w.filled->config();
  std::vector<uint64_t> offsets(config.geometry.hashes);
  for (auto _ : state) {
    uint64_t acc = 0;
    for (const Hash128& h : hashes) {
      ComputeOffsets(config.strategy, h, config.geometry, offsets.data());
      acc += offsets.back();
    }
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, w, hashes.size());
}

// Prints the console table and keeps, per benchmark, the median of its
// repetitions (or its only run) for --summary_out.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      const bool single = run.run_type == Run::RT_Iteration;
      if (!median && !single) continue;
      std::string name = run.run_name.function_name;
      Row& row = rows_[name];
      if (single && row.from_median) continue;
      row.from_median = median;
      auto counter = [&run](const char* key) {
        auto it = run.counters.find(key);
        return it == run.counters.end() ? 0.0 : it->second.value;
      };
      row.ns = counter("ns_per_item") * 1e9;
      row.fpp = counter("fpp");
      row.bits_per_key = counter("bits_per_key");
      if (std::find(order_.begin(), order_.end(), name) == order_.end()) order_.push_back(name);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void WriteSummary(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) Die("cannot write " + path);
    for (const auto& name : order_) {
      const Row& r = rows_.at(name);
      std::fprintf(f, "%s\t%.2f\t%.6f\t%.3f\n", name.c_str(), r.ns, r.fpp, r.bits_per_key);
    }
    if (std::fclose(f) != 0) Die("cannot write " + path);
  }

 private:
  struct Row {
    bool from_median = false;
    double ns = 0, fpp = 0, bits_per_key = 0;
  };
  std::map<std::string, Row> rows_;
  std::vector<std::string> order_;
};

void RegisterAll() {
  for (uint64_t n : {uint64_t{1'000'000}, uint64_t{10'000'000}}) {
    const std::string size = n == 1'000'000 ? "1e6" : "1e7";
    auto reg = [&](const std::string& name, auto fn) {
      benchmark::RegisterBenchmark((name + "/" + size).c_str(), fn)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.3)
          ->UseRealTime();
    };
    for (const char* kind : {"mem", "file"}) {
      const std::string store = kind;
      // file: shares the bit code with mem:, so only the batch paths run on it.
      const bool all = store == "mem";
      if (all) {
        reg("add_single/" + store, [=](benchmark::State& s) { BM_AddSingle(s, n, store); });
      }
      reg("add_batch/" + store, [=](benchmark::State& s) { BM_AddBatch(s, n, store); });
      if (all) {
        reg("contains_hit_single/" + store,
            [=](benchmark::State& s) { BM_ContainsSingle(s, n, store, true); });
      }
      reg("contains_hit_batch/" + store,
          [=](benchmark::State& s) { BM_ContainsBatch(s, n, store, true); });
      if (all) {
        reg("contains_miss_single/" + store,
            [=](benchmark::State& s) { BM_ContainsSingle(s, n, store, false); });
        reg("contains_miss_batch/" + store,
            [=](benchmark::State& s) { BM_ContainsBatch(s, n, store, false); });
      }
    }
    reg("murmur3_128", [=](benchmark::State& s) { BM_Murmur3(s, n); });
    reg("offsets_guava64", [=](benchmark::State& s) { BM_Offsets(s, n); });
  }
}

}  // namespace
}  // namespace redbloom

int main(int argc, char** argv) {
#if !defined(__OPTIMIZE__) || !defined(NDEBUG)
  std::fprintf(
      stderr,
      "core_bench: this is an unoptimised or assert-enabled build; its figures would "
      "mislead. Configure with -DCMAKE_BUILD_TYPE=Release (scripts/bench-core.sh does).\n");
  return 1;
#endif
  std::string summary_out;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--summary_out=", 14) == 0) {
      summary_out = argv[i] + 14;
    } else {
      args.push_back(argv[i]);
    }
  }
  int args_count = static_cast<int>(args.size());
  benchmark::Initialize(&args_count, args.data());
  if (benchmark::ReportUnrecognizedArguments(args_count, args.data())) return 2;
  redbloom::RegisterAll();
  redbloom::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (!summary_out.empty()) reporter.WriteSummary(summary_out);
  return 0;
}
