// The in-memory hot path (issue #17): the strategies' word kernels set
// exactly the bits of their offsets, "was new" stays exact with writers
// racing on the mem: and file: stores, and warm calls allocate nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/funnel.h"
#include "redbloom/store.h"
#include "redbloom/strategy.h"
#include "strategy/strategy_def.h"
#include "test_util.h"
#include "util/sanitizers.h"
#include "util/utf8.h"
#include "util/writer_gate.h"
#include "word_bits.h"
#include "word_kernels.h"

// Heap allocations of the calling thread while `g_counting` is set: this
// binary replaces the global operator new (and delete, to match).
namespace {
thread_local bool g_counting = false;
thread_local uint64_t g_allocations = 0;
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// Not inlined: GCC, seeing std::free meet memory from `new`, would warn of a
// mismatch (-Wmismatched-new-delete) that this pair does not have.
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace redbloom {
namespace {

using internal::StrategyDef;
using internal::StrategyOf;
using internal::WordKernels;
using testing::ValueOrFail;

std::vector<std::string> Items(const std::string& prefix, size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

FilterConfig Config(Strategy s, uint64_t n, double p) {
  auto c = MakeConfig(FilterOptions{.capacity = n, .error_rate = p, .strategy = s});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : FilterConfig{};
}

// A bitmap set one offset at a time, in Redis bit order, with the "was new"
// answer of each item in turn: what every add path must reproduce.
struct Reference {
  std::string bytes;
  std::vector<uint8_t> added;

  explicit Reference(const FilterConfig& c) : bytes(c.data_bytes(), '\0') {}

  void Add(const std::vector<uint64_t>& offsets, uint32_t k) {
    for (size_t i = 0; i < offsets.size(); i += k) {
      bool fresh = false;
      for (uint32_t j = 0; j < k; ++j) {
        const uint64_t o = offsets[i + j];
        const auto mask = static_cast<char>(0x80 >> (o & 7));
        fresh |= (bytes[o / 8] & mask) == 0;
        bytes[o / 8] = static_cast<char>(bytes[o / 8] | mask);
      }
      added.push_back(fresh ? 1 : 0);
    }
  }
  bool Has(const std::vector<uint64_t>& item) const {
    for (uint64_t o : item) {
      if ((bytes[o / 8] & (0x80 >> (o & 7))) == 0) return false;
    }
    return true;
  }
};

std::string_view Bytes(const internal::Words& w, const FilterConfig& c) {
  return {reinterpret_cast<const char*>(w.get()), static_cast<size_t>(c.data_bytes())};
}

// Runs check(def, kernels) for every strategy whose kernels `want`, in both
// forms: the vector kernels (where this CPU has them) and the portable ones.
// How many (strategy, form) pairs it ran.
template <typename Want, typename Check>
int ForEachKernelForm(Want&& want, Check&& check) {
  int ran = 0;
  for (bool vector : {true, false}) {
    for (Strategy s : Strategies()) {
      const StrategyDef& def = StrategyOf(s);
      if (def.word_kernels == nullptr || !want(*def.word_kernels)) continue;
      SCOPED_TRACE(vector ? "vector kernels" : "portable kernels");
      internal::SetVectorKernelsEnabledForTesting(vector);
      ++ran;
      check(def, *def.word_kernels);
    }
  }
  internal::SetVectorKernelsEnabledForTesting(true);
  return ran;
}

// Direct calls of each strategy's kernels against its offsets: random
// hashes (the kernels must take any), geometries from 2 to 30 bits per item,
// adds in both writer modes (batched and one at a time), tests of items added
// and not added (batched and one at a time), with the vector forms of the
// kernels (where this CPU has them) and without.
TEST(WordKernelsTest, KernelsSetExactlyTheOffsetsBits) {
  std::mt19937_64 rng(17);
  const int strategies = ForEachKernelForm(
      [](const WordKernels&) { return true; },
      [&](const StrategyDef& def, const WordKernels& kernels) {
        const Strategy s = def.id;
        for (auto [n, p] : {std::pair{1000.0, 0.01},
                            {20000.0, 0.001},
                            {8000.0, 0.0005},
                            {5000.0, 0.1},
                            {300.0, 1e-7}}) {
          const FilterConfig c = Config(s, static_cast<uint64_t>(n), p);
          const Geometry& g = c.geometry;
          SCOPED_TRACE(std::string(def.name) + " n " + std::to_string(n) + " p " +
                       std::to_string(p) + " k " + std::to_string(g.hashes));
          ASSERT_LE(g.hashes, kernels.max_hashes);
          std::vector<Hash128> hashes(3 * static_cast<size_t>(n));
          for (Hash128& h : hashes) h = Hash128{rng(), rng()};
          std::vector<uint64_t> offsets(hashes.size() * g.hashes);
          ComputeOffsets(s, hashes, g, offsets.data());
          Reference want(c);
          want.Add(offsets, g.hashes);

          const size_t bytes = (c.data_bytes() + 63) / 64 * 64;
          internal::Words exclusive = internal::NewWords(bytes);
          internal::Words shared = internal::NewWords(bytes);
          std::vector<uint8_t> added_exclusive(hashes.size(), 9), added_shared(hashes.size(), 9);
          // In batches of 1 to 70 items, so that every prefetch window's edge
          // (a batch shorter, longer or as long as the window) is crossed.
          int64_t fresh_exclusive = 0, fresh_shared = 0;
          for (size_t i = 0, len = 1; i < hashes.size(); i += len, len = len % 70 + 1) {
            const auto batch =
                std::span<const Hash128>(hashes).subspan(i, std::min(len, hashes.size() - i));
            fresh_exclusive +=
                kernels.set_exclusive(batch, g, exclusive.get(), added_exclusive.data() + i);
            fresh_shared += kernels.set_shared(batch, g, shared.get(), added_shared.data() + i);
          }
          // And one item at a time, as a single add that holds the array alone:
          // test_one finds the item, set_one_exclusive sets what it found.
          internal::Words one = internal::NewWords(bytes);
          std::vector<uint8_t> added_one(hashes.size(), 9);
          for (size_t i = 0; i < hashes.size(); ++i) {
            internal::OneItem found;
            const bool held = kernels.test_one(hashes[i], g, one.get(), &found);
            const bool fresh = kernels.set_one_exclusive(hashes[i], g, one.get(), &found);
            ASSERT_NE(held, fresh) << "item " << i;
            added_one[i] = fresh ? 1 : 0;
          }
          // And as the gate's biased owner adds one: set_one_exclusive alone,
          // finding the bits itself, and its form resolved for this geometry
          // (a single add's).
          internal::Words biased = internal::NewWords(bytes);
          internal::Words by_resolved = internal::NewWords(bytes);
          std::vector<uint8_t> added_biased(hashes.size(), 9), added_resolved(hashes.size(), 9);
          const internal::SetOneFn set_one = kernels.SetOneFor(g);
          for (size_t i = 0; i < hashes.size(); ++i) {
            added_biased[i] =
                kernels.set_one_exclusive(hashes[i], g, biased.get(), nullptr) ? 1 : 0;
            added_resolved[i] = set_one(hashes[i], g, by_resolved.get(), nullptr) ? 1 : 0;
          }
          EXPECT_TRUE(Bytes(by_resolved, c) == want.bytes);
          EXPECT_EQ(added_resolved, want.added);
          EXPECT_TRUE(Bytes(exclusive, c) == want.bytes);
          EXPECT_TRUE(Bytes(shared, c) == want.bytes);
          EXPECT_TRUE(Bytes(one, c) == want.bytes);
          EXPECT_TRUE(Bytes(biased, c) == want.bytes);
          EXPECT_EQ(added_biased, want.added);
          EXPECT_EQ(added_exclusive, want.added);
          EXPECT_EQ(added_shared, want.added);
          EXPECT_EQ(added_one, want.added);
          const auto count = std::count(want.added.begin(), want.added.end(), 1);
          EXPECT_EQ(fresh_exclusive, count);
          EXPECT_EQ(fresh_shared, count);

          // Tests: the items added, then as many never added (some false
          // positives among them at these fills, which the kernels must report).
          std::vector<Hash128> probes = hashes;
          for (size_t i = 0; i < hashes.size(); ++i) probes.push_back(Hash128{rng(), rng()});
          std::vector<uint8_t> present(probes.size(), 0);
          kernels.test(probes, g, exclusive.get(), present.data());
          std::vector<uint64_t> item(g.hashes);
          size_t positives = 0;
          const internal::TestOneFn resolved = kernels.TestOneFor(g);
          for (size_t i = 0; i < probes.size(); ++i) {
            ComputeOffsets(s, probes[i], g, item.data());
            ASSERT_EQ(present[i], want.Has(item) ? 1 : 0) << "probe " << i;
            // The single-item form answers the same, as does its form
            // resolved for this geometry (a single check's).
            ASSERT_EQ(kernels.test_one(probes[i], g, exclusive.get(), nullptr), want.Has(item))
                << "probe " << i;
            ASSERT_EQ(resolved(probes[i], g, exclusive.get(), nullptr), want.Has(item))
                << "probe " << i;
            positives += present[i];
          }
          EXPECT_GT(positives, hashes.size());
          // test ORs into its answers.
          std::vector<uint8_t> ones(probes.size(), 1);
          kernels.test(probes, g, exclusive.get(), ones.data());
          EXPECT_EQ(std::count(ones.begin(), ones.end(), 1), static_cast<long>(ones.size()));
        }
      });
  EXPECT_GE(strategies, 4) << "guava64 and block have kernels";
}

// `count` items of every length XXH3 treats apart (0, 1-3, 4-8, 9-16,
// 17-128, 129-240, more), some of them not ASCII; item i is made from
// i % distinct alone, so that items repeat past `distinct`.
std::vector<std::string> ItemsOfEveryLength(size_t count, size_t distinct, std::mt19937_64& rng) {
  std::vector<std::string> letters(distinct);
  for (std::string& l : letters) {
    for (int j = 0; j < 300; ++j) l.push_back(static_cast<char>('a' + rng() % 26));
  }
  std::vector<std::string> items;
  for (size_t i = 0; i < count; ++i) {
    const size_t key = i % distinct;
    const size_t len = std::vector<size_t>{0, 2, 6, 11, 40, 200, 300}[key % 7];
    std::string item = std::to_string(key) + "-";
    if (item.size() < len) item += letters[key].substr(0, len - item.size());
    if (key % 9 == 0) item += "订单";
    if (key % 9 == 4) item = "é" + item;
    items.push_back(len == 0 && key > 0 ? std::string() : item);
  }
  return items;
}

// ForEachKernelForm over the geometries the kernel tests below take (k from
// 7 to 23: n items at 1%, 0.1%, 0.05% and 1e-7), each traced with its k.
template <typename Want, typename Check>
int ForEachKernelGeometry(Want&& want, Check&& check) {
  return ForEachKernelForm(want, [&](const StrategyDef& def, const WordKernels& kernels) {
    for (auto [n, p] :
         {std::pair{2000.0, 0.01}, {3000.0, 0.001}, {3000.0, 0.0005}, {600.0, 1e-7}}) {
      const FilterConfig c = Config(def.id, static_cast<uint64_t>(n), p);
      SCOPED_TRACE(std::string(def.name) + " k " + std::to_string(c.geometry.hashes));
      check(def, kernels, c, n);
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

// 2n items of every length (ItemsOfEveryLength) on the cells of c (sized
// for n items), the first half of them added with the kernels' set_exclusive;
// want[i] is what their test answers for item i (every item of the first
// half, and under a quarter of the rest, as checked here).
struct HalfAdded {
  std::vector<std::string> items;
  std::vector<Hash128> hashes;
  internal::Words words;
  std::vector<uint8_t> want;
};

HalfAdded AddHalf(const StrategyDef& def, const WordKernels& kernels, const FilterConfig& c,
                  double n, std::mt19937_64& rng) {
  HalfAdded h;
  const size_t count = 2 * static_cast<size_t>(n);
  h.items = ItemsOfEveryLength(count, count, rng);
  h.hashes.resize(h.items.size());
  for (size_t i = 0; i < h.items.size(); ++i) h.hashes[i] = def.hash(h.items[i]);
  h.words = internal::NewWords((c.data_bytes() + 63) / 64 * 64);
  kernels.set_exclusive(std::span<const Hash128>(h.hashes).first(h.hashes.size() / 2), c.geometry,
                        h.words.get(), nullptr);
  h.want.assign(h.items.size(), 0);
  kernels.test(h.hashes, c.geometry, h.words.get(), h.want.data());
  const auto half = h.want.begin() + static_cast<ptrdiff_t>(h.want.size() / 2);
  EXPECT_EQ(std::count(h.want.begin(), half, 1), static_cast<long>(h.want.size() / 2));
  EXPECT_LT(std::count(half, h.want.end(), 1), static_cast<long>(h.want.size() / 4));
  return h;
}

// test_items, the kernels' batched check that hashes its own items, answers
// as the strategy's hash and then test do: items added and never added, of
// every length XXH3 treats apart (0, 1-3, 4-8, 9-16, 17-128, 129-240, more),
// ASCII or not, in batches of 1 to 70 (either side of its window) and one
// of them all; every answer written, not ORed; and the ASCII answer
// hash_many gives. Where a form does not take a geometry it says so for
// every batch and writes nothing; on a CPU with vector kernels some form
// takes some geometry.
TEST(WordKernelsTest, TestItemsAnswersAsHashThenTest) {
  using Items = WordKernels::Items;
  std::mt19937_64 rng(29);
  const bool vector_cpu = internal::VectorKernelsEnabled();
  int taken = 0;
  const int strategies = ForEachKernelGeometry(
      [](const WordKernels& kernels) { return kernels.test_items != nullptr; },
      [&](const StrategyDef& def, const WordKernels& kernels, const FilterConfig& c, double n) {
        const Geometry& g = c.geometry;
        const HalfAdded h = AddHalf(def, kernels, c, n, rng);
        ASSERT_FALSE(::testing::Test::HasFailure());
        const std::vector<std::string_view> views(h.items.begin(), h.items.end());
        const std::vector<uint8_t>& want = h.want;
        uint64_t* const words = h.words.get();

        std::vector<uint8_t> all(views.size(), 9);
        if (kernels.test_items(views, g, words, all.data()) == Items::kNotTaken) {
          EXPECT_EQ(std::count(all.begin(), all.end(), 9), static_cast<long>(all.size()));
          EXPECT_EQ(kernels.test_items(std::span(views).first(1), g, words, all.data()),
                    Items::kNotTaken);
          return;
        }
        ++taken;
        EXPECT_EQ(all, want);
        std::vector<uint8_t> got(views.size(), 9);
        for (size_t i = 0, len = 1; i < views.size(); i += len, len = len % 70 + 1) {
          const auto batch = std::span(views).subspan(i, std::min(len, views.size() - i));
          std::vector<Hash128> unused(batch.size());
          const bool ascii = def.hash_many != nullptr
                                 ? def.hash_many(batch, unused.data())
                                 : std::all_of(batch.begin(), batch.end(), [](std::string_view v) {
                                     return internal::NonAsciiBits(v) == 0;
                                   });
          ASSERT_EQ(kernels.test_items(batch, g, words, got.data() + i),
                    ascii ? Items::kAscii : Items::kNotAllAscii)
              << i;
        }
        EXPECT_EQ(got, want);
      });
  EXPECT_GE(strategies, 2) << "block has test_items";
  if (vector_cpu) {
    EXPECT_GE(taken, 1) << "block's AVX2 form takes k <= 10";
  }
}

// CheckItemFor, a single check's hash and test in one call, answers as the
// strategy's hash and then test do, for every strategy with kernels (those
// without their own take CheckItemByParts): items added and never added, of
// every length XXH3 treats apart (block's own form takes up to 16 bytes and
// hands the rest on), ASCII or not, at k from 7 to past the AVX2 form's 10.
// On a CPU with vector kernels, block has a form of its own for some
// geometry; with the kernels switched off (as tests do) that form, resolved
// for the CPU, must take the portable way.
TEST(WordKernelsTest, CheckItemAnswersAsHashThenTest) {
  std::mt19937_64 rng(37);
  const bool vector_cpu = internal::VectorKernelsEnabled();
  int own = 0;
  const int strategies = ForEachKernelGeometry(
      [](const WordKernels&) { return true; },
      [&](const StrategyDef& def, const WordKernels& kernels, const FilterConfig& c, double n) {
        const Geometry& g = c.geometry;
        const HalfAdded h = AddHalf(def, kernels, c, n, rng);
        ASSERT_FALSE(::testing::Test::HasFailure());
        const internal::SingleCheck single{
            .geometry = g, .hash = def.hash, .test_one = kernels.TestOneFor(g)};
        const internal::CheckItemFn check = kernels.CheckItemFor(g);
        ASSERT_NE(check, nullptr);
        if (check != &internal::CheckItemByParts) ++own;
        for (size_t i = 0; i < h.items.size(); ++i) {
          ASSERT_EQ(check(h.items[i], single, h.words.get()), h.want[i] == 1)
              << i << " (" << h.items[i].size() << " bytes)";
        }
      });
  EXPECT_GE(strategies, 4) << "guava64 and block have kernels";
  if (vector_cpu) {
    EXPECT_GE(own, 1) << "block's AVX2 form has its own single check";
  }
}

// The writer gate (WordArray::writers): no sharer while a writer holds it
// alone, no lone writer while any sharer does, and a waiting sharer gets in
// once the lone writer leaves. The racing-writers test below checks what it
// guards (bits and counts lost when two writers overlap); this checks the
// exclusion itself, with sharers that wait.
// set_items_exclusive, the kernels' batched add that hashes its own items,
// sets what the strategy's hash and set_exclusive set: the same bits, the
// same "was new" answers and counts, items of every length XXH3 treats apart,
// ASCII or not, in batches of 1 to 70 (either side of its window), repeats
// included. Where a form does not take a geometry it says so and writes
// nothing; on a CPU with vector kernels some form takes some geometry.
TEST(WordKernelsTest, SetItemsAddsAsHashThenSet) {
  std::mt19937_64 rng(31);
  const bool vector_cpu = internal::VectorKernelsEnabled();
  int taken = 0;
  const int strategies = ForEachKernelGeometry(
      [](const WordKernels& kernels) { return kernels.set_items_exclusive != nullptr; },
      [&](const StrategyDef& def, const WordKernels& kernels, const FilterConfig& c, double n) {
        const Geometry& g = c.geometry;
        // Repeats past 1500, in random order.
        std::vector<std::string> items = ItemsOfEveryLength(static_cast<size_t>(n), 1500, rng);
        std::shuffle(items.begin(), items.end(), rng);
        const std::vector<std::string_view> views(items.begin(), items.end());
        std::vector<Hash128> hashes(views.size());
        for (size_t i = 0; i < views.size(); ++i) hashes[i] = def.hash(views[i]);
        const size_t bytes = (c.data_bytes() + 63) / 64 * 64;
        internal::Words want = internal::NewWords(bytes);
        internal::Words got = internal::NewWords(bytes);
        std::vector<uint8_t> want_added(views.size(), 9), got_added(views.size(), 9);
        if (kernels.set_items_exclusive(views, g, got.get(), got_added.data()) ==
            WordKernels::kSetItemsNotTaken) {
          EXPECT_EQ(std::count(got_added.begin(), got_added.end(), 9),
                    static_cast<long>(got_added.size()));
          EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(got.get()), bytes),
                    std::string(bytes, '\0'));
          return;
        }
        ++taken;
        std::memset(got.get(), 0, bytes);
        int64_t want_fresh = 0, got_fresh = 0;
        for (size_t i = 0, len = 1; i < views.size(); i += len, len = len % 70 + 1) {
          const size_t m = std::min(len, views.size() - i);
          want_fresh += kernels.set_exclusive(std::span<const Hash128>(hashes).subspan(i, m), g,
                                              want.get(), want_added.data() + i);
          got_fresh += kernels.set_items_exclusive(std::span(views).subspan(i, m), g, got.get(),
                                                   got_added.data() + i);
        }
        EXPECT_EQ(got_fresh, want_fresh);
        EXPECT_LT(want_fresh, static_cast<int64_t>(views.size())) << "repeats are not new";
        EXPECT_EQ(got_added, want_added);
        EXPECT_TRUE(std::memcmp(got.get(), want.get(), bytes) == 0);
      });
  EXPECT_GE(strategies, 2) << "block has set_items_exclusive";
  if (vector_cpu) {
    EXPECT_GE(taken, 1) << "block's AVX2 form takes k <= 10";
  }
}

TEST(WriterGateTest, AloneExcludesSharersAndWaitingSharersGetIn) {
  internal::WriterGate gate;
  ASSERT_TRUE(gate.try_lock());
  EXPECT_FALSE(gate.try_lock());
  std::atomic<int> inside{0};
  std::vector<std::thread> sharers;
  for (int t = 0; t < 3; ++t) {
    sharers.emplace_back([&] {
      std::shared_lock lock(gate);
      ++inside;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(inside.load(), 0) << "a sharer entered while the gate was held alone";
  gate.unlock();
  for (auto& t : sharers) t.join();
  EXPECT_EQ(inside.load(), 3);
  {
    std::shared_lock one(gate);
    EXPECT_FALSE(gate.try_lock()) << "alone while a sharer holds the gate";
    std::shared_lock two(gate);
    one.unlock();
    EXPECT_FALSE(gate.try_lock());
  }
  ASSERT_TRUE(gate.try_lock());
  gate.unlock();

  // Many writers, each either alone (a plain increment) or shared (a locked
  // one), on one counter: a plain increment that overlapped any other would
  // lose one.
  uint64_t counter = 0;
  constexpr int kWriters = 4;
  constexpr int kRounds = 200000;
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&] {
      std::atomic_ref<uint64_t> c(counter);
      for (int i = 0; i < kRounds; ++i) {
        if (std::unique_lock alone(gate, std::try_to_lock); alone.owns_lock()) {
          c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        } else {
          std::shared_lock shared(gate);
          c.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(counter, uint64_t{kWriters} * kRounds);
}

// A sharer that waits goes before the next lone writer: a thread adding
// single items back to back takes the gate alone for a few nanoseconds at a
// time, and a sharer woken after one of them would otherwise find the next
// one holding it, again and again.
TEST(WriterGateTest, AWaitingSharerGoesBeforeTheNextLoneWriter) {
  for (int round = 0; round < 20; ++round) {
    internal::WriterGate gate;
    ASSERT_TRUE(gate.try_lock());
    std::atomic<bool> in{false};
    std::thread sharer([&] {
      std::shared_lock lock(gate);
      in = true;
    });
    while (!gate.sharers_waiting()) std::this_thread::yield();
    gate.unlock();
    // Alone now only if the sharer has been in and left already.
    if (gate.try_lock()) {
      if (!in.load()) {
        ADD_FAILURE() << "round " << round << ": a lone writer went before the waiting sharer";
      }
      gate.unlock();
    }
    sharer.join();
    EXPECT_TRUE(in.load());
    EXPECT_TRUE(gate.try_lock());
    gate.unlock();
  }
}

// The gate's bias (try_lock_biased): the first thread to ask claims it and
// then writes alone with no compare-and-swap, its own gate calls keep it,
// and the first other thread to enter the gate ends it for good, waiting for
// the owner to leave its section.
TEST(WriterGateTest, TheBiasHoldsUntilAnotherThreadEntersAndEndsForGood) {
  if (!internal::WriterGate::BiasAvailable()) {
    // ThreadSanitizer, or a kernel without membarrier's expedited command:
    // no thread may ever get the bias, or its plain writes would race.
    internal::WriterGate gate;
    EXPECT_FALSE(gate.try_lock_biased());
    EXPECT_FALSE(gate.biased());
    return;
  }
  internal::WriterGate gate;
  ASSERT_TRUE(gate.try_lock_biased());
  EXPECT_TRUE(gate.biased());
  gate.unlock_biased();
  // The owner's batches take the gate as usual and keep the bias.
  ASSERT_TRUE(gate.try_lock());
  gate.unlock();
  { std::shared_lock shared(gate); }
  EXPECT_TRUE(gate.biased());
  ASSERT_TRUE(gate.try_lock_biased());
  gate.unlock_biased();

  // Another thread gets no bias, and entering ends the owner's; it waits
  // while the owner is in a section.
  ASSERT_TRUE(gate.try_lock_biased());
  std::atomic<bool> asked{false}, in{false};
  std::thread other([&] {
    EXPECT_FALSE(gate.try_lock_biased());
    asked = true;
    std::shared_lock shared(gate);
    in = true;
  });
  while (!asked.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(in.load()) << "a writer entered while the owner was in its biased section";
  gate.unlock_biased();
  other.join();
  EXPECT_TRUE(in.load());
  EXPECT_FALSE(gate.biased());
  EXPECT_FALSE(gate.try_lock_biased()) << "the owner got the bias back";
  ASSERT_TRUE(gate.try_lock());
  gate.unlock();
}

// The bias under load: an owner that increments a counter with plain loads
// and stores in its sections, and a second thread that enters mid-stream
// (shared: locked increments; alone: plain ones; every other round shared
// only) in a new gate each round.
// A revoker that did not wait for the owner's section, or an owner that
// missed the revocation, would overlap a plain increment with another and
// lose one.
TEST(WriterGateTest, ABiasedOwnerAndTheThreadThatEndsItNeverOverlap) {
  // Sections long enough (microseconds) for the other thread's entry to
  // land inside one most rounds.
  // Under TSan the gate never biases (its atomics cost 50 times more there).
  constexpr int kRounds = internal::kThreadSanitizer ? 10 : 100;
  constexpr int kSections = 100;
  constexpr int kPerSection = 4096;
  int biased_sections = 0;
  for (int round = 0; round < kRounds; ++round) {
    internal::WriterGate gate;
    uint64_t counter = 0;
    std::atomic<int> owner_sections{0};
    auto add = [&](bool alone) {
      std::atomic_ref<uint64_t> c(counter);
      for (int i = 0; i < kPerSection; ++i) {
        if (alone) {
          c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        } else {
          c.fetch_add(1, std::memory_order_relaxed);
        }
      }
    };
    auto enter_and_add = [&] {
      if (std::unique_lock alone(gate, std::try_to_lock); alone.owns_lock()) {
        add(true);
      } else {
        std::shared_lock shared(gate);
        add(false);
      }
    };
    int biased = 0;
    std::thread owner([&] {
      for (int s = 0; s < kSections; ++s) {
        if (gate.try_lock_biased()) {
          add(true);
          gate.unlock_biased();
          ++biased;
        } else {
          enter_and_add();
        }
        ++owner_sections;
      }
    });
    std::thread other([&] {
      // Enter somewhere in the owner's first half.
      const int after = 1 + round % (kSections / 2);
      while (owner_sections.load() < after) std::this_thread::yield();
      for (int s = 0; s < kSections; ++s) {
        if (round % 2 == 0) {
          enter_and_add();
        } else {  // shared only: lock_shared must end the bias too
          std::shared_lock shared(gate);
          add(false);
        }
      }
    });
    owner.join();
    other.join();
    ASSERT_EQ(counter, uint64_t{2} * kSections * kPerSection) << "round " << round;
    biased_sections += biased;
  }
  if (internal::WriterGate::BiasAvailable()) {
    EXPECT_GT(biased_sections, kRounds) << "the owner never wrote biased: this test tested nothing";
  }
}

// IsValidUtf8 checks ASCII a word at a time (overlapping words for the tail)
// before any byte: for every length up to 40 and every position of a
// non-ASCII byte, well-formed or not, it must agree with the sequence rules
// applied byte by byte.
TEST(Utf8Test, WordAtATimeAgreesWithTheSequenceRules) {
  auto by_bytes = [](std::string_view s) {
    for (size_t i = 0; i < s.size();) {
      const size_t n = internal::Utf8SequenceLength(s, i);
      if (n == 0) return false;
      i += n;
    }
    return true;
  };
  const std::vector<std::string> inserts = {
      "\xc3\xa7",     "\xe8\xae\xa2", "\xf0\x9f\x98\x80", "\x80", "\xc3",
      "\xed\xa0\x80", "\xff",         "\xf4\x90\x80\x80"};
  for (size_t len = 0; len <= 40; ++len) {
    const std::string ascii(len, 'a');
    EXPECT_TRUE(IsValidUtf8(ascii)) << len;
    for (size_t at = 0; at <= len; ++at) {
      for (const std::string& insert : inserts) {
        const std::string s = ascii.substr(0, at) + insert + ascii.substr(at);
        ASSERT_EQ(IsValidUtf8(s), by_bytes(s)) << "length " << s.size() << " at " << at;
      }
    }
  }
}

class HotPathTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Store> OpenStore() {
    const std::string url = GetParam() == "mem" ? "mem:" : "file:" + dir_.path();
    auto s = Store::Open(url);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  testing::TempDir dir_;
};

// Through the API, on every strategy (those without kernels take the
// general path): the answers and the bits of adds in batches of every size
// (batches of one in turn through Add and AddMany, which take different
// paths) and one by one, past capacity so that "not new" is common, equal the
// reference's.
TEST_P(HotPathTest, AddsMatchOneOffsetAtATime) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  for (Strategy s : Strategies()) {
    SCOPED_TRACE(std::string(StrategyName(s)));
    const std::string name = "f-" + std::string(StrategyName(s));
    auto f = BloomFilter::Create(
        *store, name, FilterOptions{.capacity = 2000, .error_rate = 0.01, .strategy = s});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const FilterConfig c = (*f)->config();
    const std::vector<std::string> items = Items("ORD-", 6000);
    Reference want(c);
    std::vector<uint8_t> got;
    size_t ones = 0;
    for (size_t i = 0, len = 1; i < items.size(); i += len, len = len % 40 + 1) {
      const size_t end = std::min(items.size(), i + len);
      for (size_t j = i; j < end; ++j)
        want.Add(ValueOrFail((*f)->Offsets(items[j])), c.geometry.hashes);
      if (len == 1 && ones++ % 2 == 0) {
        bool added = false;
        ASSERT_TRUE((*f)->Add(items[i], &added).ok());
        got.push_back(added ? 1 : 0);
      } else {
        std::vector<std::string_view> views(items.begin() + i, items.begin() + end);
        std::vector<uint8_t> added;
        ASSERT_TRUE((*f)->AddMany(views, &added).ok());
        got.insert(got.end(), added.begin(), added.end());
      }
    }
    EXPECT_EQ(got, want.added);
    std::string bitmap;
    ASSERT_TRUE((*f)->ReadBitmap(&bitmap).ok());
    EXPECT_TRUE(bitmap == want.bytes);
    auto info = (*f)->Info();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->items_added,
              static_cast<uint64_t>(std::count(want.added.begin(), want.added.end(), 1)));

    const std::vector<std::string> probes = Items("other-", 4000);
    std::vector<std::string_view> views(probes.begin(), probes.end());
    for (bool vector : {true, false}) {
      internal::SetVectorKernelsEnabledForTesting(vector);
      std::vector<uint8_t> present;
      ASSERT_TRUE((*f)->ContainsMany(views, &present).ok());
      for (size_t i = 0; i < probes.size(); ++i) {
        const bool want_present = want.Has(ValueOrFail((*f)->Offsets(probes[i])));
        ASSERT_EQ(present[i], want_present ? 1 : 0) << probes[i] << (vector ? " vector" : "");
        ASSERT_EQ(ValueOrFail((*f)->Contains(probes[i])), want_present) << probes[i];
      }
    }
    internal::SetVectorKernelsEnabledForTesting(true);
  }
}

// Four writers add the same items (each in its own order when k > 1), in
// batches and one by one, to one filter (on file:, each through a mapping of its own, as
// separate processes would). A bit is set by exactly one of them: with k = 1
// (guava64 at p = 0.5) each item is reported new at most once, and the
// claims add up to the bits set; two writers that both saw a bit unset and
// both claimed it would count it twice, one that lost a bit to another's
// plain store would leave it unset. With k > 1, two racing adds of one item
// may each set some of its bits and both report it new, but every item is
// present, claimed at least once (at 2% of capacity no item's bits are all
// set by others), and the item count grows by every claim.
TEST_P(HotPathTest, RacingWritersClaimEachBitOnce) {
  struct Case {
    Strategy strategy;
    uint64_t capacity;
    double error_rate;
    size_t items;
    int rounds;
  };
  // The second case crowds every writer onto the same 7 words, and clears
  // them between rounds (once they are full, no add writes).
  for (auto [s, n, p, count, rounds] : {Case{Strategy::kGuava64, 1000000, 0.5, 20000, 1},
                                        Case{Strategy::kGuava64, 300, 0.5, 600, 40},
                                        Case{Strategy::kGuava64, 1000000, 0.01, 20000, 1},
                                        Case{Strategy::kBlock, 1000000, 0.01, 20000, 1}}) {
    const std::string name =
        "race-" + std::string(StrategyName(s)) + "-" + std::to_string(n) + "-" + std::to_string(p);
    SCOPED_TRACE(name);
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto created = BloomFilter::Create(
        *store, name, FilterOptions{.capacity = n, .error_rate = p, .strategy = s});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    const uint32_t k = (*created)->config().geometry.hashes;
    ASSERT_EQ(k == 1, p == 0.5);
    const std::vector<std::string> items = Items("race-", count);
    for (int round = 0; round < rounds; ++round) {
      ASSERT_TRUE((*created)->Clear().ok());
      std::vector<std::atomic<int>> claims(items.size());
      constexpr int kWriters = 4;
      std::atomic<int> ready{0};
      std::vector<std::thread> writers;
      for (int t = 0; t < kWriters; ++t) {
        writers.emplace_back([&, t] {
          std::unique_ptr<Store> own = GetParam() == "mem" ? nullptr : OpenStore();
          auto f = BloomFilter::Open(own ? *own : *store, name);
          ASSERT_TRUE(f.ok()) << f.status().ToString();
          std::vector<size_t> order(items.size());
          for (size_t i = 0; i < order.size(); ++i) order[i] = i;
          // k = 1: every writer in the same order, racing for the same items.
          if (k > 1) {
            std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(t)));
          }
          ++ready;
          while (ready.load() < kWriters) {
          }
          for (size_t i = 0, len = 1; i < order.size(); i += len, len = len % 64 + 1) {
            const size_t end = std::min(order.size(), i + len);
            if (len == 1) {
              bool added = false;
              ASSERT_TRUE((*f)->Add(items[order[i]], &added).ok());
              claims[order[i]] += added ? 1 : 0;
              continue;
            }
            std::vector<std::string_view> views;
            for (size_t j = i; j < end; ++j) views.push_back(items[order[j]]);
            std::vector<uint8_t> added;
            ASSERT_TRUE((*f)->AddMany(views, &added).ok());
            for (size_t j = i; j < end; ++j) claims[order[j]] += added[j - i];
          }
        });
      }
      for (auto& w : writers) w.join();
      uint64_t total = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        if (k == 1) {
          ASSERT_LE(claims[i].load(), 1) << items[i] << " round " << round;
        } else {
          ASSERT_GE(claims[i].load(), 1) << items[i];
        }
        total += static_cast<uint64_t>(claims[i].load());
      }
      auto f = BloomFilter::Open(*store, name);
      ASSERT_TRUE(f.ok());
      const FilterInfo info = ValueOrFail((*f)->Info());
      EXPECT_EQ(info.items_added, total) << "round " << round;
      if (k == 1) {
        ASSERT_TRUE(info.bits_set_exact);
        EXPECT_EQ(info.bits_set, total) << "round " << round;
      }
      std::vector<std::string_view> views(items.begin(), items.end());
      std::vector<uint8_t> present;
      ASSERT_TRUE((*f)->ContainsMany(views, &present).ok());
      EXPECT_EQ(std::count(present.begin(), present.end(), 1), static_cast<long>(items.size()));
    }
  }
}

// Issue #17.4: once a thread has made a call of each kind, the batch and
// single-item calls on an in-memory filter allocate nothing (a batch used to
// allocate its hashes and its answers every time).
// A thread that adds single items (on mem:, the gate's biased owner, writing
// with plain stores) and a second writer that joins it mid-stream, in
// batches and one by one, each round on a new filter (a new gate): with
// k = 1 and every item's bit crowded onto 600 bits, a bit set by both, or
// lost to the other's plain store, shows as an item claimed twice, claims
// that do not add up to the bits set, or an item absent.
TEST_P(HotPathTest, ASingleItemWriterAndOneThatJoinsItLoseNoBit) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> items = Items("join-", 600);
  for (int round = 0; round < 30; ++round) {
    const std::string name = "join-" + std::to_string(round);
    auto created = BloomFilter::Create(
        *store, name,
        FilterOptions{.capacity = 300, .error_rate = 0.5, .strategy = Strategy::kGuava64});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ASSERT_EQ((*created)->config().geometry.hashes, 1u);
    std::vector<std::atomic<int>> claims(items.size());
    std::atomic<size_t> singles_done{0};
    std::thread single([&] {
      for (size_t i = 0; i < items.size(); ++i) {
        bool added = false;
        ASSERT_TRUE((*created)->Add(items[i], &added).ok());
        claims[i] += added ? 1 : 0;
        ++singles_done;
      }
    });
    std::thread joiner([&] {
      std::unique_ptr<Store> own = GetParam() == "mem" ? nullptr : OpenStore();
      auto f = BloomFilter::Open(own ? *own : *store, name);
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      while (singles_done.load() < static_cast<size_t>(10 + 10 * round)) std::this_thread::yield();
      // From the end, so that the two meet in the middle: batches of 1 to 8.
      for (size_t end = items.size(), len = 1; end > 0; end -= len, len = len % 8 + 1) {
        len = std::min(len, end);
        if (len == 1) {
          bool added = false;
          ASSERT_TRUE((*f)->Add(items[end - 1], &added).ok());
          claims[end - 1] += added ? 1 : 0;
          continue;
        }
        std::vector<std::string_view> views(items.begin() + static_cast<long>(end - len),
                                            items.begin() + static_cast<long>(end));
        std::vector<uint8_t> added;
        ASSERT_TRUE((*f)->AddMany(views, &added).ok());
        for (size_t j = 0; j < len; ++j) claims[end - len + j] += added[j];
      }
    });
    single.join();
    joiner.join();
    uint64_t total = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      ASSERT_LE(claims[i].load(), 1) << items[i] << " round " << round;
      total += static_cast<uint64_t>(claims[i].load());
    }
    const FilterInfo info = ValueOrFail((*created)->Info());
    EXPECT_EQ(info.items_added, total) << "round " << round;
    ASSERT_TRUE(info.bits_set_exact);
    EXPECT_EQ(info.bits_set, total) << "round " << round;
    std::vector<std::string_view> views(items.begin(), items.end());
    std::vector<uint8_t> present;
    ASSERT_TRUE((*created)->ContainsMany(views, &present).ok());
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), static_cast<long>(items.size()))
        << "round " << round;
  }
}

TEST_P(HotPathTest, WarmCallsAllocateNothing) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  for (auto [s, e] : {std::pair{Strategy::kGuava64, Encoding::kUtf8},
                      std::pair{Strategy::kBlock, Encoding::kUtf8},
                      std::pair{Strategy::kGuava64, Encoding::kInt64},
                      std::pair{Strategy::kBlock, Encoding::kUtf8x2}}) {
    const std::string name =
        "warm-" + std::string(StrategyName(s)) + "-" + std::string(EncodingName(e));
    SCOPED_TRACE(name);
    auto f = BloomFilter::Create(
        *store, name,
        FilterOptions{.capacity = 100000, .error_rate = 0.01, .strategy = s, .encoding = e});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    std::vector<std::string> items = Items("warm-", 1000);
    if (e == Encoding::kInt64) {
      for (size_t i = 0; i < items.size(); ++i) items[i] = std::to_string(i * 1000003);
    }
    const std::vector<std::string_view> views(items.begin(), items.end());
    std::vector<uint8_t> answers;
    bool answer = false;
    auto calls = [&](size_t round) {
      const auto batch = std::span(views).subspan(0, 100 + round % 900);
      ASSERT_TRUE((*f)->AddMany(batch, &answers).ok());
      ASSERT_TRUE((*f)->ContainsMany(batch, &answers).ok());
      ASSERT_TRUE((*f)->Add(items[round % items.size()], &answer).ok());
      ASSERT_TRUE((*f)->Contains(items[round % items.size()]).ok());
    };
    calls(899);  // the largest batch first
    g_allocations = 0;
    g_counting = true;
    for (size_t round = 0; round < 50; ++round) calls(round);
    g_counting = false;
    EXPECT_EQ(g_allocations, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, HotPathTest, ::testing::Values("mem", "file"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace redbloom
