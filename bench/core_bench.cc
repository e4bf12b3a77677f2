// In-memory benchmark of the core (issues #2 and #17): add and contains, one
// item at a time and in batches of 1000, at 1e6 and 1e7 items, 1% error, for
// the strategies guava64 and block, on the mem: store (and file: for the
// batch paths and loads). Items are "ORD-i".
//
// Figures are per item, in CPU time (the machine is shared: wall time would
// also count the time other processes held the core): ns_per_item, plus the
// measured FPP over 1e6 never-added items and bits per key. Before anything
// is timed each filter is checked: no false negatives, FPP within bounds.
//
// Next to them, the floors the filters are made of, timed in the same run:
//   murmur3_128, xxh3_128            hashing alone (the strategies' hashes)
//   offsets_guava64, offsets_block   offsets of hashed items alone
//   offsets_guava64_div              guava64's offsets with seven `%` (the
//                                    code before #17), to show what Barrett saves
//   floor_lines_guava64              k random cache lines per item, prefetched
//                                    16 items ahead, as many as guava64 reads
//   floor_line                       one random cache line per item (block)
//   floor_line_locked_or             one line and one locked OR per item
//   floor_line_latency               one line per item, each waiting for the last
//   floor_single                     XXH3 and one line per item, no prefetch:
//                                    a single `block` check with no call path
//   floor_single_padN                the same with N independent instructions
//                                    more per item (x86-64): what a longer
//                                    call path costs beside the line
//   floor_single_padN_l1             the same on a 16 KiB array (in L1): the
//                                    path's cost without the misses
//
// And ratios of passes timed side by side (BM_Paired), which the host's
// drift moves much less than the figures themselves:
//   paired_load_add             load / batched add, every store
//   paired_single_batch_check   single checks / batched checks, mem:
//   paired_single_batch_add     single adds / batched adds, mem:
//   paired_floor_single_check   guava64: a single check with no call path
//                               (Murmur3, offsets, k words, no prefetch) /
//                               batched checks, mem:
//   paired_int64_utf8_check     10-digit decimals checked in batches on an
//                               int64 filter (Guava's longFunnel) / the same
//                               text on a utf8 filter, mem:
//   paired_int64_single_batch_check  int64 single checks / int64 batched
//   paired_hash_many_check      a batched check with the items hashed all at
//                               once / one at a time, mem:
//   paired_test_items_check     block: ContainsMany (the kernels hash the
//                               items in the pass that tests them) / the
//                               items hashed first, then ContainsHashes, mem:
//   paired_single_batch_*/mem/block@0.1%  the single / batched pairs on a
//                               0.1% filter (k = 9: two bits in a word)
//
//   core_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//              --summary_out=FILE
// --summary_out writes one line per benchmark, "NAME<TAB>NS_PER_ITEM<TAB>FPP
// <TAB>BITS_PER_KEY" ("NAME<TAB>B_OVER_A<TAB>A_NS<TAB>B_NS" for the paired
// ones), from the median of the repetitions (scripts/bench-core.sh joins it
// with Guava's figures).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/funnel.h"
#include "redbloom/hash.h"
#include "redbloom/sizing.h"
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
  Strategy strategy = Strategy::kGuava64;
  const Items* items = nullptr;
  std::unique_ptr<Store> store;
  std::unique_ptr<BloomFilter> filled;  // holds every item
  std::unique_ptr<BloomFilter> empty;   // cleared before each add pass
  double fpp = 0;
  double bits_per_key = 0;
};

Workload& GetWorkload(uint64_t n, const std::string& store_kind, Strategy strategy,
                      double rate = kErrorRate) {
  static std::map<std::tuple<uint64_t, std::string, Strategy, double>, std::unique_ptr<Workload>>
      cache;
  auto& slot = cache[{n, store_kind, strategy, rate}];
  if (slot) return *slot;
  auto w = std::make_unique<Workload>();
  w->n = n;
  w->strategy = strategy;
  w->items = &GetItems(n);
  const Items& items = *w->items;

  const std::string url = store_kind == "mem" ? "mem:" : "file:" + FileStoreDir();
  auto store = Store::Open(url);
  Check(store.status(), "open store");
  w->store = std::move(*store);
  FilterOptions options{.capacity = n, .error_rate = rate, .strategy = strategy};
  const std::string base = "bench-" + std::to_string(n) + "-" +
                           std::string(StrategyName(strategy)) +
                           (rate == kErrorRate ? "" : "-" + std::to_string(rate));
  auto filled = BloomFilter::Create(*w->store, base + "-filled", options);
  Check(filled.status(), "create filter");
  w->filled = std::move(*filled);
  auto empty = BloomFilter::Create(*w->store, base + "-empty", options);
  Check(empty.status(), "create filter");
  w->empty = std::move(*empty);

  // Verify before timing: every added item is found, FPP is near the rate.
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
  // trips on a real defect (a wrong k or m gives 2x or more). block is sized
  // to stay within the rate: 10% above it is four standard errors at 1%,
  // three at 0.1%.
  const double high = strategy == Strategy::kBlock ? 1.1 : 1.25;
  if (w->fpp > rate * high || w->fpp < rate * 0.5) {
    Die("measured FPP " + std::to_string(w->fpp) + " is out of bounds at n=" + std::to_string(n) +
        " on " + store_kind + " with " + std::string(StrategyName(strategy)));
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

// One pass of each workload. Adds and loads go into the cleared `empty`
// filter (the caller clears it, untimed); checks query `filled`.

void AddSinglePass(Workload& w) {
  for (std::string_view item : w.items->item_views) Check(w.empty->Add(item), "add");
}

void AddBatchPass(Workload& w) {
  const std::span<const std::string_view> all(w.items->item_views);
  for (size_t i = 0; i < all.size(); i += kBatch) {
    Check(w.empty->AddMany(all.subspan(i, std::min(kBatch, all.size() - i))), "add");
  }
}

// A bulk load (issue #17: load must be as fast as add): BitmapBuilder over
// all n items, then one OrBitmap into the cleared filter.
void LoadPass(Workload& w) {
  const std::span<const std::string_view> all(w.items->item_views);
  BitmapBuilder builder(w.empty->config());
  for (size_t i = 0; i < all.size(); i += kBatch) {
    Check(builder.Add(all.subspan(i, std::min(kBatch, all.size() - i))), "build");
  }
  Check(w.empty->OrBitmap(builder.bitmap(), builder.new_items()), "merge");
}

// Checks kQueries items, present or never added.
std::span<const std::string_view> Queries(const Workload& w, bool hit) {
  return hit ? w.items->present_views : w.items->absent_views;
}

// Checks `queries` on `f`, one at a time or in batches of kBatch; how many
// it found.
uint64_t CheckQueries(BloomFilter& f, std::span<const std::string_view> queries, bool single) {
  thread_local std::vector<uint8_t> present;
  uint64_t found = 0;
  if (single) {
    for (std::string_view item : queries) {
      auto r = f.Contains(item);
      Check(r.status(), "contains");
      found += *r ? 1 : 0;
    }
    return found;
  }
  for (size_t i = 0; i < queries.size(); i += kBatch) {
    Check(f.ContainsMany(queries.subspan(i, std::min(kBatch, queries.size() - i)), &present),
          "contains");
    for (uint8_t p : present) found += p;
  }
  return found;
}

void ContainsPass(Workload& w, bool hit, bool single) {
  const auto queries = Queries(w, hit);
  const uint64_t found = CheckQueries(*w.filled, queries, single);
  benchmark::DoNotOptimize(found);
  if (hit && found != queries.size()) Die("false negative while timing");
}

void ContainsSinglePass(Workload& w, bool hit) { ContainsPass(w, hit, true); }
void ContainsBatchPass(Workload& w, bool hit) { ContainsPass(w, hit, false); }

// A batched check of never-added items through ContainsHashes, the items
// hashed one at a time or all at once (what ContainsMany does): the
// paired_hash_many_check row's two sides. guava64: Murmur3_128 against
// Murmur3_128Many (eight at once); block: IsValidUtf8 and a call of
// Xxh3_128 per item (what its batches did before) against Xxh3_128Many.
void ContainsHashedPass(Workload& w, bool many) {
  const auto queries = Queries(w, false);
  thread_local std::vector<uint8_t> present;
  thread_local std::vector<Hash128> hashes;
  uint64_t found = 0;
  for (size_t i = 0; i < queries.size(); i += kBatch) {
    const auto batch = queries.subspan(i, std::min(kBatch, queries.size() - i));
    hashes.resize(batch.size());
    const bool block = w.strategy == Strategy::kBlock;
    if (many) {
      const bool ascii =
          block ? Xxh3_128Many(batch, hashes.data()) : Murmur3_128Many(batch, hashes.data());
      if (!ascii) Die("the benchmark's items are ASCII");
    } else {
      for (size_t j = 0; j < batch.size(); ++j) {
        if (!block) {
          hashes[j] = Murmur3_128(batch[j]);
        } else if (IsValidUtf8(batch[j])) {
          hashes[j] = Xxh3_128(batch[j]);
        } else {
          Die("the benchmark's items are UTF-8");
        }
      }
    }
    Check(w.filled->ContainsHashes(hashes, &present), "contains");
    for (uint8_t p : present) found += p;
  }
  benchmark::DoNotOptimize(found);
}

// Adds and loads: the filter is cleared before each pass, untimed.
template <typename Pass>
void BM_Fill(benchmark::State& state, uint64_t n, std::string store, Strategy st, Pass pass) {
  Workload& w = GetWorkload(n, store, st);
  for (auto _ : state) {
    state.PauseTiming();
    Check(w.empty->Clear(), "clear");
    state.ResumeTiming();
    pass(w);
  }
  SetCounters(state, w, n);
}

void BM_Contains(benchmark::State& state, uint64_t n, std::string store, Strategy st, bool hit,
                 bool single) {
  Workload& w = GetWorkload(n, store, st);
  for (auto _ : state) {
    if (single) {
      ContainsSinglePass(w, hit);
    } else {
      ContainsBatchPass(w, hit);
    }
  }
  SetCounters(state, w, Queries(w, hit).size());
}

// Two workloads timed back to back in each iteration, in this thread's CPU
// time, A then B and B then A in turn; the counters give each one's median
// ns per item and the median of the iterations' B / A. On this host figures
// at 1e7 moved 2-3x within an hour (and an add pass alone 10-38 ns from one
// run to the next), while both passes of an iteration share the host's
// state: their ratio is what the issue's "load as fast as add" and "a single
// item at most twice a batched one" are judged by.
double ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct TimedPass {
  std::function<void(Workload&)> run;
  bool fills;  // clear `empty` first, untimed
  uint64_t items;
};

// Times `a` and `b` back to back in each iteration (see above).
template <typename A, typename B>
void TimePairs(benchmark::State& state, A&& a, B&& b) {
  std::vector<double> a_ns, b_ns, ratios;
  for (auto _ : state) {
    const bool a_first = a_ns.size() % 2 == 0;
    const double first = a_first ? a() : b();
    const double second = a_first ? b() : a();
    a_ns.push_back(a_first ? first : second);
    b_ns.push_back(a_first ? second : first);
    ratios.push_back(b_ns.back() / a_ns.back());
  }
  state.counters["a_ns"] = Median(a_ns);
  state.counters["b_ns"] = Median(b_ns);
  state.counters["b_over_a"] = Median(ratios);
}

void BM_Paired(benchmark::State& state, uint64_t n, std::string store, Strategy st, TimedPass a,
               TimedPass b, double rate = kErrorRate) {
  Workload& w = GetWorkload(n, store, st, rate);
  auto time = [&w](const TimedPass& p) {
    if (p.fills) Check(w.empty->Clear(), "clear");
    const double start = ThreadCpuNs();
    p.run(w);
    return (ThreadCpuNs() - start) / static_cast<double>(p.items);
  };
  TimePairs(
      state, [&] { return time(a); }, [&] { return time(b); });
}

// n 10-digit decimals in a utf8 filter and in an int64 one (Guava's
// longFunnel, whose bytes are built before they are hashed), and kQueries
// of them to check, a copy of their own side by side in memory (as the
// other rows' queries: read through the n items' array, each query's text
// was a cache miss of its own at 1e7): the paired_int64_* rows.
struct DecimalWorkload {
  std::vector<std::string> query_texts;
  std::vector<std::string_view> queries;
  std::unique_ptr<Store> store;
  std::unique_ptr<BloomFilter> utf8, int64;
};

DecimalWorkload& GetDecimalWorkload(uint64_t n, Strategy st) {
  static std::map<std::pair<uint64_t, Strategy>, std::unique_ptr<DecimalWorkload>> cache;
  auto& slot = cache[{n, st}];
  if (slot) return *slot;
  auto w = std::make_unique<DecimalWorkload>();
  std::vector<std::string> items;
  for (uint64_t i = 0; i < n; ++i) items.push_back(std::to_string(1'000'000'000 + i * 811));
  const std::vector<std::string_view> all(items.begin(), items.end());
  for (uint64_t i = 0; i < kQueries; ++i) w->query_texts.push_back(items[i * (n / kQueries)]);
  w->queries.assign(w->query_texts.begin(), w->query_texts.end());
  auto store = Store::Open("mem:");
  Check(store.status(), "open store");
  w->store = std::move(*store);
  for (Encoding e : {Encoding::kUtf8, Encoding::kInt64}) {
    const std::string name = "decimals-" + std::string(EncodingName(e));
    auto f = BloomFilter::Create(
        *w->store, name,
        FilterOptions{.capacity = n, .error_rate = kErrorRate, .strategy = st, .encoding = e});
    Check(f.status(), "create filter");
    for (size_t i = 0; i < all.size(); i += kBatch) {
      Check((*f)->AddMany(std::span(all).subspan(i, std::min(kBatch, all.size() - i))), "fill");
    }
    (e == Encoding::kUtf8 ? w->utf8 : w->int64) = std::move(*f);
  }
  slot = std::move(w);
  return *slot;
}

// One pass of checks over the workload's queries, in batches or one by one;
// CPU ns per item. Every query was added, so any miss is a false negative.
double TimeDecimalChecks(DecimalWorkload& w, BloomFilter& f, bool single) {
  const double start = ThreadCpuNs();
  const uint64_t found = CheckQueries(f, w.queries, single);
  const double ns = (ThreadCpuNs() - start) / static_cast<double>(w.queries.size());
  if (found != w.queries.size()) Die("false negative while timing decimals");
  return ns;
}

// single: A int64 batched, B int64 single; else A utf8 batched, B int64
// batched.
void BM_PairedDecimal(benchmark::State& state, uint64_t n, Strategy st, bool single) {
  DecimalWorkload& w = GetDecimalWorkload(n, st);
  BloomFilter& a = single ? *w.int64 : *w.utf8;
  TimePairs(
      state, [&] { return TimeDecimalChecks(w, a, false); },
      [&] { return TimeDecimalChecks(w, *w.int64, single); });
}

// ---- Floors, timed in the same run ----------------------------------------

// Hashes of the never-added items, computed once.
const std::vector<Hash128>& AbsentHashes(uint64_t n, Strategy st) {
  static std::map<std::pair<uint64_t, Strategy>, std::vector<Hash128>> cache;
  auto& v = cache[{n, st}];
  if (v.empty()) {
    for (std::string_view item : GetItems(n).absent_views) v.push_back(HashBytes(st, item));
  }
  return v;
}

template <typename F>
void BM_Hash(benchmark::State& state, uint64_t n, F hash) {
  Workload& w = GetWorkload(n, "mem", Strategy::kGuava64);
  for (auto _ : state) {
    uint64_t acc = 0;
    for (std::string_view item : w.items->absent_views) acc ^= hash(item).h1;
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, w, w.items->absent_views.size());
}

// Murmur3_128Many over the same items, in batches of 1000 (as HashItems
// hands it a batch).
void BM_HashMany(benchmark::State& state, uint64_t n) {
  Workload& w = GetWorkload(n, "mem", Strategy::kGuava64);
  const std::vector<std::string_view>& items = w.items->absent_views;
  std::vector<Hash128> out(kBatch);
  for (auto _ : state) {
    uint64_t acc = 0;
    for (size_t i = 0; i < items.size(); i += kBatch) {
      const size_t c = std::min(kBatch, items.size() - i);
      Murmur3_128Many(std::span<const std::string_view>(items).subspan(i, c), out.data());
      acc ^= out[0].h1;
    }
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, w, items.size());
}

// A strategy's offsets of already-hashed items alone, in batches of 1000.
void BM_Offsets(benchmark::State& state, uint64_t n, Strategy st) {
  Workload& w = GetWorkload(n, "mem", st);
  const std::vector<Hash128>& hashes = AbsentHashes(n, st);
  const Geometry& g = w.filled->config().geometry;
  std::vector<uint64_t> offsets(kBatch * g.hashes);
  for (auto _ : state) {
    uint64_t acc = 0;
    for (size_t i = 0; i < hashes.size(); i += kBatch) {
      const size_t c = std::min(kBatch, hashes.size() - i);
      ComputeOffsets(st, std::span<const Hash128>(hashes).subspan(i, c), g, offsets.data());
      acc += offsets[0];
    }
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, w, hashes.size());
}

// guava64's offsets as Guava writes them, with seven 64-bit `%`: the code
// before issue #17, kept here as the reference the Barrett form replaced.
void BM_OffsetsDivision(benchmark::State& state, uint64_t n) {
  Workload& w = GetWorkload(n, "mem", Strategy::kGuava64);
  const std::vector<Hash128>& hashes = AbsentHashes(n, Strategy::kGuava64);
  const Geometry g = w.filled->config().geometry;
  std::vector<uint64_t> offsets(g.hashes);
  for (auto _ : state) {
    uint64_t acc = 0;
    for (const Hash128& h : hashes) {
      uint64_t combined = h.h1;
      for (uint32_t i = 0; i < g.hashes; ++i) {
        offsets[i] = (combined & 0x7fffffffffffffffULL) % g.bits;
        combined += h.h2;
      }
      benchmark::DoNotOptimize(offsets.data());
      acc += offsets.back();
    }
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, w, hashes.size());
}

// Memory floors over an array the size of the 1% filter: `lines` random
// cache lines read per item, prefetched 16 items ahead (what a filter with
// free hashing and no bookkeeping would cost), or one line and one locked OR.
void BM_Lines(benchmark::State& state, uint64_t n, uint32_t lines, bool locked_or) {
  Workload& w = GetWorkload(n, "mem", Strategy::kGuava64);
  const uint64_t words = w.filled->config().geometry.bits / 64;
  std::vector<uint64_t> array(words + 8, 0x5555);
  const std::vector<Hash128>& hashes = AbsentHashes(n, Strategy::kGuava64);
  std::vector<uint64_t> where(hashes.size() * lines);
  for (size_t i = 0; i < hashes.size(); ++i) {
    uint64_t x = hashes[i].h1;
    for (uint32_t j = 0; j < lines; ++j, x += hashes[i].h2) where[i * lines + j] = x % words;
  }
  constexpr size_t kAhead = 16;
  for (auto _ : state) {
    uint64_t acc = 0;
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (i + kAhead < hashes.size()) {
        for (uint32_t j = 0; j < lines; ++j) {
          __builtin_prefetch(&array[where[(i + kAhead) * lines + j]], 1);
          asm volatile("" : : "r"(&array[0]));  // keeps the loop (see src/prefetch.h)
        }
      }
      for (uint32_t j = 0; j < lines; ++j) {
        uint64_t& word = array[where[i * lines + j]];
        if (locked_or) {
          std::atomic_ref<uint64_t>(word).fetch_or(1, std::memory_order_relaxed);
        } else {
          acc += word;
        }
      }
    }
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, w, hashes.size());
}

// The floor of a single call: one random line of an array the size of the
// 1% filter read per item, each read waiting for the one before, as a caller
// that acts on each answer before asking the next (there is nothing ahead to
// prefetch). A pointer chase through the lines in a random cycle: at 1e7
// items (12 MB) each step is a miss to memory, at 1e6 mostly a cache hit.
void BM_LineLatency(benchmark::State& state, uint64_t n) {
  Workload& w = GetWorkload(n, "mem", Strategy::kGuava64);
  const uint64_t lines = w.filled->config().geometry.bits / 512;
  std::vector<uint64_t> order(lines);
  for (uint64_t i = 0; i < lines; ++i) order[i] = i;
  std::mt19937_64 random(17);
  std::shuffle(order.begin(), order.end(), random);
  std::vector<uint64_t> next(lines * 8);  // word 0 of line i: the line after i
  for (uint64_t i = 0; i < lines; ++i) next[order[i] * 8] = order[(i + 1) % lines];
  for (auto _ : state) {
    uint64_t at = order[0];
    for (uint64_t i = 0; i < kQueries; ++i) at = next[at * 8];
    benchmark::DoNotOptimize(at);
  }
  SetCounters(state, w, kQueries);
}

// The floor of an independent single call: per item, XXH3 of its bytes and
// one random line read and tested, with no prefetch, each answer summed but
// never waited on before the next item. The core's out-of-order window may
// overlap the misses of consecutive items, which a long call path prevents:
// this is what a single `block` check could cost with no call overhead.
__extension__ using U128 = unsigned __int128;  // the block's line, as block.cc takes it

// kPad > 0 (floor_single_padN, x86-64 only): kPad register moves per item
// more, independent of everything else (the core can run four a cycle), a
// stand-in for a longer call path. In L1 the time grows with kPad as
// instruction throughput says; where the line misses, the miss adds to it,
// and adds more once the path is too long for the core to overlap one
// item's miss with the next item's work. Zen 3 (no AVX-512, 512 KiB of L2),
// stop 38: a stand-in loop with a multiply hash in place of XXH3 found the
// miss adding 5-6 ns at 1e6 up to ~140 instructions an item and 8-9 past
// it; in one run of these rows at 1e7, 60 and 120 more instructions took an
// item from 96 to 121 and 183 ns, as long as one awaited line alone
// (floor_line_latency, 173): nothing left overlapped. kInL1: on 256 lines
// (16 KiB) rather than the filter's size.
template <int kPad = 0, bool kInL1 = false>
void BM_SingleFloor(benchmark::State& state, uint64_t n) {
  Workload& w = GetWorkload(n, "mem", Strategy::kBlock);
  const uint64_t lines = kInL1 ? 256 : w.filled->config().geometry.bits / 512;
  std::vector<uint64_t> array(lines * 8, 0x5555555555555555ULL);
  const auto& queries = w.items->absent_views;
  for (auto _ : state) {
    uint64_t found = 0;
    for (std::string_view item : queries) {
      const Hash128 h = Xxh3_128(item);
#if defined(__x86_64__)
      if constexpr (kPad > 0) {
        asm volatile(".rept %c0\n\tmov $1, %%r11d\n\t.endr" : : "i"(kPad) : "r11");
      }
#endif
      const uint64_t line = static_cast<uint64_t>((static_cast<U128>(h.h1) * lines) >> 64);
      const uint64_t word = array[line * 8 + (h.h2 & 7)];
      const uint64_t mask =
          (uint64_t{1} << ((h.h2 >> 3) & 63)) | (uint64_t{1} << ((h.h2 >> 9) & 63));
      found += (word & mask) == mask ? 1 : 0;
    }
    benchmark::DoNotOptimize(found);
  }
  SetCounters(state, w, queries.size());
}

// The same floor for a single guava64 check, as a pass to pair with the
// batched check (paired_floor_single_check): per present item, Murmur3 of
// its bytes, its k offsets (Barrett, the inverse computed once) and its k
// words of an array the size of the filter, all read and ANDed with no
// early exit, as BloomFilter::Contains does, but with no call path, no
// prefetch and no wait on one item's answer before the next.
void FloorSingleGuava64Pass(Workload& w) {
  const Geometry g = w.filled->config().geometry;
  thread_local std::vector<uint64_t> array;  // filled once per size, untimed after the first pass
  if (array.size() != g.bits / 64) array.assign(g.bits / 64, ~uint64_t{0});
  const uint64_t inverse = ~uint64_t{0} / g.bits;
  const auto queries = Queries(w, true);
  uint64_t found = 0;
  for (std::string_view item : queries) {
    const Hash128 h = Murmur3_128(item);
    uint64_t combined = h.h1;
    uint64_t all = 1;
    for (uint32_t i = 0; i < g.hashes; ++i) {
      const uint64_t y = combined & 0x7fffffffffffffffULL;
      uint64_t r = y - static_cast<uint64_t>((static_cast<U128>(y) * inverse) >> 64) * g.bits;
      if (r >= g.bits) r -= g.bits;
      all &= array[r / 64] >> (r % 64);
      combined += h.h2;
    }
    found += all & 1;
  }
  benchmark::DoNotOptimize(found);
  if (found != queries.size()) Die("floor pass lost an item");
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
      row.paired = run.counters.count("b_over_a") != 0;
      if (row.paired) {
        // NAME, B / A, A's and B's ns per item.
        row.ns = counter("b_over_a");
        row.fpp = counter("a_ns");
        row.bits_per_key = counter("b_ns");
      }
      if (std::find(order_.begin(), order_.end(), name) == order_.end()) order_.push_back(name);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void WriteSummary(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) Die("cannot write " + path);
    for (const auto& name : order_) {
      const Row& r = rows_.at(name);
      if (r.paired) {
        std::fprintf(f, "%s\t%.3f\t%.2f\t%.2f\n", name.c_str(), r.ns, r.fpp, r.bits_per_key);
      } else {
        std::fprintf(f, "%s\t%.2f\t%.6f\t%.3f\n", name.c_str(), r.ns, r.fpp, r.bits_per_key);
      }
    }
    if (std::fclose(f) != 0) Die("cannot write " + path);
  }

 private:
  struct Row {
    bool from_median = false;
    bool paired = false;  // then ns, fpp and bits_per_key hold B / A, A's ns, B's ns
    double ns = 0, fpp = 0, bits_per_key = 0;
  };
  std::map<std::string, Row> rows_;
  std::vector<std::string> order_;
};

void RegisterAll() {
  for (uint64_t n : {uint64_t{1'000'000}, uint64_t{10'000'000}}) {
    const std::string size = n == 1'000'000 ? "1e6" : "1e7";
    auto reg = [&](const std::string& name, auto fn) {
      // CPU time (no UseRealTime): see the top of the file.
      benchmark::RegisterBenchmark((name + "/" + size).c_str(), fn)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.3);
    };
    for (Strategy st : {Strategy::kGuava64, Strategy::kBlock}) {
      const std::string sn(StrategyName(st));
      for (const char* kind : {"mem", "file"}) {
        const std::string store = kind;
        // file: shares the bit code with mem:, so only the batch paths and
        // loads run on it.
        const bool all = store == "mem";
        const std::string at = "/" + store + "/" + sn;
        if (all) {
          reg("add_single" + at,
              [=](benchmark::State& s) { BM_Fill(s, n, store, st, AddSinglePass); });
        }
        reg("add_batch" + at, [=](benchmark::State& s) { BM_Fill(s, n, store, st, AddBatchPass); });
        reg("load" + at, [=](benchmark::State& s) { BM_Fill(s, n, store, st, LoadPass); });
        for (bool hit : {true, false}) {
          const std::string what = hit ? "contains_hit" : "contains_miss";
          // file: shares the check code with mem: (hits only).
          if (!all && !hit) continue;
          if (all) {
            reg(what + "_single" + at,
                [=](benchmark::State& s) { BM_Contains(s, n, store, st, hit, true); });
          }
          reg(what + "_batch" + at,
              [=](benchmark::State& s) { BM_Contains(s, n, store, st, hit, false); });
        }
        // Ratios from passes timed side by side (BM_Paired), 5 pairs per
        // repetition: load / add on every store, single / batched checks
        // and adds.
        // `tag` labels a filter at another rate than kErrorRate.
        auto pair = [&](const std::string& name, TimedPass a, TimedPass b, double rate = kErrorRate,
                        const std::string& tag = "") {
          benchmark::RegisterBenchmark(
              (name + at + tag + "/" + size).c_str(),
              [=](benchmark::State& s) { BM_Paired(s, n, store, st, a, b, rate); })
              ->Unit(benchmark::kMillisecond)
              ->Iterations(5);
        };
        auto single_batch = [&](double rate, const std::string& tag) {
          pair("paired_single_batch_check",
               {[](Workload& w) { ContainsBatchPass(w, false); }, false, kQueries},
               {[](Workload& w) { ContainsSinglePass(w, false); }, false, kQueries}, rate, tag);
          pair("paired_single_batch_add", {AddBatchPass, true, n}, {AddSinglePass, true, n}, rate,
               tag);
        };
        pair("paired_load_add", {AddBatchPass, true, n}, {LoadPass, true, n});
        if (all) {
          single_batch(kErrorRate, "");
          if (st == Strategy::kGuava64) {
            pair("paired_floor_single_check",
                 {[](Workload& w) { ContainsBatchPass(w, true); }, false, kQueries},
                 {FloorSingleGuava64Pass, false, kQueries});
          }
          pair("paired_hash_many_check",
               {[](Workload& w) { ContainsHashedPass(w, false); }, false, kQueries},
               {[](Workload& w) { ContainsHashedPass(w, true); }, false, kQueries});
          if (st == Strategy::kBlock) {
            pair("paired_test_items_check",
                 {[](Workload& w) { ContainsHashedPass(w, true); }, false, kQueries},
                 {[](Workload& w) { ContainsBatchPass(w, false); }, false, kQueries});
            // A 0.1% filter: k = 9, past one bit per word (block.cc's kTwo
            // forms; the portable ones without AVX2). Labelled block@0.1%.
            single_batch(0.001, "@0.1%");
          }
        }
      }
      for (bool single : {false, true}) {
        const std::string name =
            single ? "paired_int64_single_batch_check" : "paired_int64_utf8_check";
        benchmark::RegisterBenchmark(
            (name + "/mem/" + sn + "/" + size).c_str(),
            [=](benchmark::State& s) { BM_PairedDecimal(s, n, st, single); })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(5);
      }
      reg("offsets_" + sn, [=](benchmark::State& s) { BM_Offsets(s, n, st); });
    }
    reg("murmur3_128", [=](benchmark::State& s) {
      BM_Hash(s, n, [](std::string_view b) { return Murmur3_128(b); });
    });
    reg("murmur3_128_many", [=](benchmark::State& s) { BM_HashMany(s, n); });
    reg("xxh3_128", [=](benchmark::State& s) {
      BM_Hash(s, n, [](std::string_view b) { return Xxh3_128(b); });
    });
    reg("offsets_guava64_div", [=](benchmark::State& s) { BM_OffsetsDivision(s, n); });
    reg("floor_lines_guava64", [=](benchmark::State& s) { BM_Lines(s, n, 7, false); });
    reg("floor_line", [=](benchmark::State& s) { BM_Lines(s, n, 1, false); });
    reg("floor_line_locked_or", [=](benchmark::State& s) { BM_Lines(s, n, 1, true); });
    reg("floor_line_latency", [=](benchmark::State& s) { BM_LineLatency(s, n); });
    reg("floor_single", [=](benchmark::State& s) { BM_SingleFloor(s, n); });
#if defined(__x86_64__)
    reg("floor_single_pad60", [=](benchmark::State& s) { BM_SingleFloor<60>(s, n); });
    reg("floor_single_pad120", [=](benchmark::State& s) { BM_SingleFloor<120>(s, n); });
    reg("floor_single_pad180", [=](benchmark::State& s) { BM_SingleFloor<180>(s, n); });
    if (n == 1'000'000) {  // in L1 the filter's size does not matter
      reg("floor_single_pad0_l1", [=](benchmark::State& s) { BM_SingleFloor<0, true>(s, n); });
      reg("floor_single_pad60_l1", [=](benchmark::State& s) { BM_SingleFloor<60, true>(s, n); });
      reg("floor_single_pad120_l1", [=](benchmark::State& s) { BM_SingleFloor<120, true>(s, n); });
      reg("floor_single_pad180_l1", [=](benchmark::State& s) { BM_SingleFloor<180, true>(s, n); });
    }
#endif
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
