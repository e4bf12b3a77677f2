// In-memory kernels: a strategy's offsets, inline, fused with the memory
// accesses of the mem: and file: stores (1-bit cells). Internal.
//
// The general path gets k offsets per item from the strategy (a batch call
// through a function pointer), stores them, and the store reads them back to
// prefetch and touch the cells. At 1e7 items (12 MB filters) that round trip
// was much of the work. Prototypes in one process, same run, CPU ns per
// batched check, medians of 9 to 15 passes of 1e6 (this machine, shared):
//
//   guava64: offsets first, then the cells: 29.9; offsets per group of 8
//            through the function pointer, 8 to 64 items ahead: 30.5-33.5;
//            inline per item, 16 ahead: 24.1 with k a constant, 26.6 with k
//            known at run time (as here)
//   block:   offsets first: 22.8; inline, the line and bits taken straight
//            from the hash, 32 lines ahead: 13.7-15.7
//
// So a strategy may describe its layout as a type and instantiate kernels
// from it here, in its own file; StrategyDef::word_kernels points at them.
// The batch offsets and the kernels of a strategy come from the same type, so
// they cannot disagree (tests/hot_path_test.cc checks it too). What is about
// memory, not layout, is here and shared with word_bits.cc: relaxed atomic
// loads, a locked OR only for a bit found unset, plain stores for a writer
// that holds the array alone.
//
// Two shapes of layout:
//
// ScatterKernelsOf<Layout>: k offsets anywhere in the bitmap (guava64).
//   struct Context;                                   per-batch constants
//   static Context Prepare(const Geometry& g);
//   template <typename F>
//   static void ForEachOffset(const Hash128& h, const Context& c, uint32_t k, F&& f);
//       calls f(offset) for each of the item's k (= g.hashes) offsets, in the
//       strategy's order
//
// LineKernelsOf<Layout>: all k bits of an item in one 64-byte line (block).
//   struct Context;
//   static Context Prepare(const Geometry& g);
//   static uint64_t Line(const Hash128& h, const Context& c);
//       the item's line: its bits are at offsets 512 * line + [0, 512), and
//       line < g.bits / 512
//   template <typename F>
//   static void Bits(const Hash128& h, const Context& c, uint32_t k, F&& f);
//       calls f(word, bit) for each of the item's k (= g.hashes) bits, in the
//       strategy's order: offset 512 * line + 64 * word + bit, word < 8,
//       bit < 64
//
// (k is a parameter, not read from the context, so that the kernels can pass
// it as a constant and have the loops unrolled.)
#ifndef REDBLOOM_SRC_WORD_KERNELS_H_
#define REDBLOOM_SRC_WORD_KERNELS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>

#include "prefetch.h"
#include "redbloom/hash.h"
#include "redbloom/sizing.h"
#include "word_bits.h"

namespace redbloom::internal {

// One item's bits, given its offsets (word_bits.h's layout). Each returns the
// item's answer.

inline uint64_t LoadWord(uint64_t& word) {
  return std::atomic_ref<uint64_t>(word).load(std::memory_order_relaxed);
}

// Whether all k bits are set. No early exit: k loads of prefetched lines cost
// less than the mispredicted branch that leaving early would add for absent
// items.
inline bool TestItemBits(uint64_t* words, const uint64_t* item, uint32_t k) {
  uint64_t all = 1;
#pragma GCC unroll 16
  for (uint32_t j = 0; j < k; ++j)
    all &= LoadWord(words[WordIndex(item[j])]) >> ((item[j] & 63) ^ 7);
  return (all & 1) != 0;
}

// Sets a bit: with a plain store when `kExclusive` (the caller holds
// WordArray::writers exclusively; no branch on the bit's value, which at half
// fill is a coin toss), else, if the bit is found unset, with a locked OR.
// Read first: a plain load does not take the cache line exclusive the way a
// locked OR does, and fetch_or of one tested bit is a single `lock bts` whose
// old value says exactly whether this call turned the bit on. Returns that.
template <bool kExclusive>
inline bool SetBit(uint64_t& word, unsigned bit_in_word) {
  std::atomic_ref<uint64_t> w(word);
  const uint64_t mask = uint64_t{1} << bit_in_word;
  const uint64_t before = w.load(std::memory_order_relaxed);
  if constexpr (kExclusive) {
    w.store(before | mask, std::memory_order_relaxed);
    return (before & mask) == 0;
  } else {
    return (before & mask) == 0 && (w.fetch_or(mask, std::memory_order_relaxed) & mask) == 0;
  }
}

// Sets an item's k bits; whether it turned one on. The item is read first
// without a branch per bit and written only if it lacks one: at half fill
// whether a given bit is set is a coin toss, and a branch on it per bit cost
// a `block` add about 15 ns per item here in mispredictions.
template <bool kExclusive>
inline bool SetItemBits(uint64_t* words, const uint64_t* item, uint32_t k) {
  if (TestItemBits(words, item, k)) return false;
  bool was_new = false;
#pragma GCC unroll 16
  for (uint32_t j = 0; j < k; ++j) {
    was_new |= SetBit<kExclusive>(words[WordIndex(item[j])], (item[j] & 63) ^ 7);
  }
  return was_new;
}

// Prefetches the cache lines of an item's offsets, each once when
// consecutive offsets share it; `word_of` maps an offset to its word
// (WordIndex for 1-bit cells, the default).
template <uint64_t (*word_of)(uint64_t) = WordIndex>
inline void PrefetchItemLines(uint64_t* words, const uint64_t* item, uint32_t k, bool write) {
  uint64_t last_line = ~uint64_t{0};
  for (uint32_t j = 0; j < k; ++j) {
    const uint64_t word = word_of(item[j]);
    if ((word >> 3) == last_line) continue;
    last_line = word >> 3;
    if (write) {
      PrefetchForWrite(&words[word]);
    } else {
      PrefetchForRead(&words[word]);
    }
  }
}

// Where one item's bits are, as test_one found them, so that
// set_one_exclusive sets them without finding them again: a scatter layout's
// k offsets (for guava64 seven Barrett reductions, which a single add would
// otherwise redo after the writer gate's compare-and-swap, on its critical
// path). Line layouts find their line again from the hash, which costs less
// than storing it, and leave this alone.
struct OneItem {
  uint64_t offsets[32];  // word_kernels_internal::kScatterMaxHashes
};

// What a strategy's kernels do, over an array of 1-bit cells (lines 64-byte
// aligned at words + 8 * line) whose g.bits cells the caller has checked are
// there.
struct WordKernels {
  // The largest k the kernels take; past it the store uses the general path.
  uint32_t max_hashes;
  // present[i] |= 1 if every bit of item i is set.
  void (*test)(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
               uint8_t* present);
  // Set the items' bits; added[i] (if added is not null) = 1 if item i
  // turned a bit on. Return how many did. set_exclusive: the caller holds
  // WordArray::writers exclusively; set_shared: other writers may run at
  // once, in this process or others (SetBit).
  int64_t (*set_exclusive)(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
                           uint8_t* added);
  int64_t (*set_shared)(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
                        uint8_t* added);
  // Whether every bit of one item is set: the batch kernel's answer without
  // its loop, prefetches or vector set-up (single-item calls, where those
  // were most of the kernel's instructions). Leaves in *item, unless item is
  // null (a check), where the bits are, for set_one_exclusive.
  TestOneFn test_one;
  // set_exclusive for one item, without its loop: whether it turned a bit
  // on (a single add that holds WordArray::writers alone). `item` is what
  // test_one left for this hash and geometry, or null: it then finds the
  // bits itself (the gate's biased owner, which calls it without test_one).
  // Either way the bits are read before any is written.
  SetOneFn set_one_exclusive;
  // test of items given as their bytes (utf8 and bytes encodings), which
  // the kernel hashes itself with the strategy's hash in the same pass,
  // where that pays (block's AVX2 form: item i + kLineAhead is hashed and
  // its line requested before item i is tested, so the hashing overlaps the
  // lines' misses). present[i] is set to the answer (not ORed). Returns
  // whether every byte of the items was ASCII, as hash_many does (the
  // caller checks the UTF-8 of the rest), or kNotTaken, touching nothing,
  // where the one pass does not pay for this geometry on this CPU: the
  // caller then hashes first and tests after. Null for a strategy without
  // one. guava64 has none: its Murmur3 eight items at a time
  // (Murmur3_128Many) in the same pass made batched checks 1.26-1.31x
  // slower than hashing the batch first (core_bench, 1e6 and 1e7).
  enum class Items : uint8_t { kNotTaken, kAscii, kNotAllAscii };
  Items (*test_items)(std::span<const std::string_view> items, const Geometry& g, uint64_t* words,
                      uint8_t* present) = nullptr;
  // set_exclusive of items given as their bytes, hashed by the kernel in
  // the pass that sets them, as test_items checks them (block's AVX2 form).
  // The caller has validated the items for the filter's encoding (nothing
  // is checked here) and holds WordArray::writers alone. added[i] (if added
  // is not null) as set_exclusive's; returns how many items turned a bit
  // on, or kSetItemsNotTaken, touching nothing, where the one pass is not
  // taken for this geometry on this CPU. Null for a strategy without one.
  static constexpr int64_t kSetItemsNotTaken = -1;
  int64_t (*set_items_exclusive)(std::span<const std::string_view> items, const Geometry& g,
                                 uint64_t* words, uint8_t* added) = nullptr;
  // test_one for geometry g, resolved once (an open filter's geometry does
  // not change): the same answers, for g only, without test_one's dispatch
  // on g. Null for a strategy whose test_one has no such dispatch; callers
  // ask TestOneFor, which falls back to test_one.
  TestOneFn (*test_one_for)(const Geometry& g) = nullptr;

  TestOneFn TestOneFor(const Geometry& g) const {
    return test_one_for != nullptr ? test_one_for(g) : test_one;
  }
  // set_one_exclusive for geometry g, resolved once, as test_one_for is
  // (a single add by the writer gate's biased owner calls it).
  SetOneFn (*set_one_for)(const Geometry& g) = nullptr;

  SetOneFn SetOneFor(const Geometry& g) const {
    return set_one_for != nullptr ? set_one_for(g) : set_one_exclusive;
  }
  // A CheckItemFn for geometry g, resolved once as test_one_for is, where
  // the kernels have one that does better than CheckItemByParts (block's
  // inlines XXH3 and its AVX2 test); null where they do not.
  CheckItemFn (*check_item_for)(const Geometry& g) = nullptr;

  CheckItemFn CheckItemFor(const Geometry& g) const {
    const CheckItemFn check = check_item_for != nullptr ? check_item_for(g) : nullptr;
    return check != nullptr ? check : &CheckItemByParts;
  }
};

inline bool WordBitStore::TestOne(const Hash128& hash, const WordKernels& kernels,
                                  const Geometry& g, bool* present) const {
  const WordArray* a = LiveMain(0);
  if (a == nullptr) return false;
  *present = kernels.test_one(hash, g, a->words, nullptr);
  return true;
}

inline bool WordBitStore::TestItems(std::span<const std::string_view> items,
                                    const WordKernels& kernels, const Geometry& g, uint8_t* present,
                                    bool* ascii) const {
  const WordArray* a = LiveMain(0);
  if (a == nullptr) return false;
  const WordKernels::Items done = kernels.test_items(items, g, a->words, present);
  *ascii = done == WordKernels::Items::kAscii;
  return done != WordKernels::Items::kNotTaken;
}

// The gate's biased owner is alone without a compare-and-swap, so one kernel
// call reads the item's bits and sets any it lacks; no test_one first.
inline bool WordBitStore::AddOneToArray(WordArray& a, const WordKernels& kernels, SetOneFn set_one,
                                        const Hash128& hash, const Geometry& g) {
  if (!a.writers || !a.writers->try_lock_biased()) return AddOneGated(a, kernels, hash, g);
  const bool fresh = set_one(hash, g, a.words, nullptr);
  AddCount<true>(a, fresh ? 1 : 0);
  a.writers->unlock_biased();
  return fresh;
}

inline bool WordBitStore::AddOne(const Hash128& hash, const WordKernels& kernels, SetOneFn set_one,
                                 const Geometry& g, bool* added) {
  WordArray* a = LiveMain(0);
  if (a == nullptr || !a->writable.ok()) return false;
  *added = AddOneToArray(*a, kernels, set_one, hash, g);
  return true;
}

namespace word_kernels_internal {
// 1 if the vector kernels run, 0 if not, -1 until the CPU was asked.
extern std::atomic<int> vector_kernels;
int AskCpuForVectorKernels();
}  // namespace word_kernels_internal

// Whether kernels may use this CPU's vector instructions (AVX2 on x86-64): a
// layout may offer a vector form of its hottest loop and fall back to the
// portable one where this is false. Tests turn it off to check the portable
// code on machines that have the instructions. Always false under
// ThreadSanitizer (word_bits.cc says why). Inline, one relaxed load: a
// single-item check asks it on every call.
inline bool VectorKernelsEnabled() {
  const int state = word_kernels_internal::vector_kernels.load(std::memory_order_relaxed);
  if (state < 0) [[unlikely]]
    return word_kernels_internal::AskCpuForVectorKernels() != 0;
  return state != 0;
}
void SetVectorKernelsEnabledForTesting(bool enabled);

// VectorKernelsEnabled without its first call's question to the CPU: false
// until that was asked. For a path whose false branch is a call that asks.
inline bool VectorKernelsKnownEnabled() {
  return word_kernels_internal::vector_kernels.load(std::memory_order_relaxed) > 0;
}

namespace word_kernels_internal {

// Items whose lines are requested ahead of the one being touched. Measured
// at 1e7 items (12 MB filters, precomputed hashes, medians of 9 passes in one
// process, CPU ns per item, check / add): guava64 8, 16, 32 items ahead:
// 28.2 / 35.5, 25.4 / 34.3, 26.7 / 36.0; block 16, 32, 64 lines ahead:
// 11.3 / 13.3, 9.3 / 10.8, 8.6 / 12.7.
constexpr size_t kScatterAhead = 16;
constexpr size_t kLineAhead = 32;
// Scatter kernels keep the offsets of the items in flight on the stack.
constexpr uint32_t kScatterMaxHashes = 32;
static_assert(sizeof(OneItem::offsets) == kScatterMaxHashes * sizeof(uint64_t));
// Each kernel is compiled once per k up to this, with its loops unrolled
// (the layouts' loops say `#pragma GCC unroll`: GCC 12 at -O2 left them
// rolled), and once for any k.
constexpr uint32_t kUnrolledHashes = 12;

// The loops below keep every value they use in locals: a store through the
// uint8_t answer pointer may alias anything reached through a pointer or a
// reference, and the compiler would reload it for every item. kK is k when
// it is known at compile time, else 0.

// The offsets of item i go to ring slot i % kScatterAhead, and their lines
// are requested as they are computed, kScatterAhead items before the item's
// cells are touched (a single item has nothing to overlap its misses with).
template <typename Layout, uint32_t kK, bool kWrite>
inline void ScatterPrepare(const Hash128& h, const typename Layout::Context& c, uint32_t k,
                           uint64_t* words, bool prefetch, uint64_t* item) {
  uint32_t j = 0;
  Layout::ForEachOffset(h, c, kK != 0 ? kK : k, [&](uint64_t offset) {
    item[j++] = offset;
    if (!prefetch) return;
    if constexpr (kWrite) {
      PrefetchForWrite(&words[WordIndex(offset)]);
    } else {
      PrefetchForRead(&words[WordIndex(offset)]);
    }
  });
}

template <typename Layout, uint32_t kK>
void ScatterTest(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
                 uint8_t* present) {
  static_assert((kScatterAhead & (kScatterAhead - 1)) == 0);
  const typename Layout::Context c = Layout::Prepare(g);
  const uint32_t k = kK != 0 ? kK : g.hashes;
  const Hash128* const h = hashes.data();
  const size_t n = hashes.size();
  const bool prefetch = n > 1;
  uint64_t ring[kScatterAhead][kScatterMaxHashes];
  const size_t lead = std::min(n, kScatterAhead);
  for (size_t i = 0; i < lead; ++i) {
    ScatterPrepare<Layout, kK, false>(h[i], c, k, words, prefetch, ring[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    uint64_t* item = ring[i % kScatterAhead];
    present[i] |= TestItemBits(words, item, kK != 0 ? kK : k) ? 1 : 0;
    if (i + kScatterAhead < n) {
      ScatterPrepare<Layout, kK, false>(h[i + kScatterAhead], c, k, words, prefetch, item);
    }
  }
}

template <typename Layout, uint32_t kK, bool kExclusive>
int64_t ScatterSet(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
                   uint8_t* added) {
  const typename Layout::Context c = Layout::Prepare(g);
  const uint32_t k = kK != 0 ? kK : g.hashes;
  const Hash128* const h = hashes.data();
  const size_t n = hashes.size();
  const bool prefetch = n > 1;
  uint64_t ring[kScatterAhead][kScatterMaxHashes];
  const size_t lead = std::min(n, kScatterAhead);
  for (size_t i = 0; i < lead; ++i) {
    ScatterPrepare<Layout, kK, true>(h[i], c, k, words, prefetch, ring[i]);
  }
  int64_t fresh = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t* item = ring[i % kScatterAhead];
    const bool was_new = SetItemBits<kExclusive>(words, item, kK != 0 ? kK : k);
    if (added != nullptr) added[i] = was_new ? 1 : 0;
    fresh += was_new ? 1 : 0;
    if (i + kScatterAhead < n) {
      ScatterPrepare<Layout, kK, true>(h[i + kScatterAhead], c, k, words, prefetch, item);
    }
  }
  return fresh;
}

// Whether every bit of an item is set in its line (word_bits.h's order: bit
// b of a word's bytes in Redis order is bit b ^ 7 of the little-endian word).
template <typename Layout>
inline bool LineItemSet(uint64_t* line, const Hash128& h, const typename Layout::Context& c,
                        uint32_t k) {
  uint64_t all = 1;
  Layout::Bits(h, c, k, [&](uint32_t w, uint32_t bit) { all &= LoadWord(line[w]) >> (bit ^ 7); });
  return (all & 1) != 0;
}

template <typename Layout, uint32_t kK>
void LineTest(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
              uint8_t* present) {
  const typename Layout::Context c = Layout::Prepare(g);
  const uint32_t k = kK != 0 ? kK : g.hashes;
  const Hash128* const h = hashes.data();
  const size_t n = hashes.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + kLineAhead < n) PrefetchForRead(words + 8 * Layout::Line(h[i + kLineAhead], c));
    uint64_t* const line = words + 8 * Layout::Line(h[i], c);
    present[i] |= LineItemSet<Layout>(line, h[i], c, kK != 0 ? kK : k) ? 1 : 0;
  }
}

// Sets an item's bits in its line: read first, then write only an item that
// lacks a bit (SetItemBits). Whether it did.
template <typename Layout, bool kExclusive>
inline bool LineSetItem(uint64_t* line, const Hash128& h, const typename Layout::Context& c,
                        uint32_t k) {
  if (LineItemSet<Layout>(line, h, c, k)) return false;
  bool was_new = false;
  Layout::Bits(h, c, k,
               [&](uint32_t w, uint32_t bit) { was_new |= SetBit<kExclusive>(line[w], bit ^ 7); });
  return was_new;
}

template <typename Layout, uint32_t kK, bool kExclusive>
int64_t LineSet(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
                uint8_t* added) {
  const typename Layout::Context c = Layout::Prepare(g);
  const uint32_t k = kK != 0 ? kK : g.hashes;
  const Hash128* const h = hashes.data();
  const size_t n = hashes.size();
  int64_t fresh = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i + kLineAhead < n) PrefetchForWrite(words + 8 * Layout::Line(h[i + kLineAhead], c));
    const bool was_new = LineSetItem<Layout, kExclusive>(words + 8 * Layout::Line(h[i], c), h[i], c,
                                                         kK != 0 ? kK : k);
    if (added != nullptr) added[i] = was_new ? 1 : 0;
    fresh += was_new ? 1 : 0;
  }
  return fresh;
}

// Runs f.template operator()<kK>() with kK = k if k <= kUnrolledHashes, else
// with kK = 0 (k known at run time only).
template <typename F>
decltype(auto) WithK(uint32_t k, F&& f) {
  static_assert(kUnrolledHashes == 12);
  switch (k) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
    case 5:
      return f.template operator()<5>();
    case 6:
      return f.template operator()<6>();
    case 7:
      return f.template operator()<7>();
    case 8:
      return f.template operator()<8>();
    case 9:
      return f.template operator()<9>();
    case 10:
      return f.template operator()<10>();
    case 11:
      return f.template operator()<11>();
    case 12:
      return f.template operator()<12>();
    default:
      return f.template operator()<0>();
  }
}

// The kernels' entry points: k dispatched to an unrolled instance, for the
// scatter (offsets anywhere) or the line (one 64-byte line) shape.
template <typename Layout, bool kLine>
struct Entries {
  static void Test(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
                   uint8_t* present) {
    WithK(g.hashes, [&]<uint32_t kK>() {
      if constexpr (kLine) {
        LineTest<Layout, kK>(hashes, g, words, present);
      } else {
        ScatterTest<Layout, kK>(hashes, g, words, present);
      }
    });
  }
  static bool TestOne(const Hash128& h, const Geometry& g, uint64_t* words, OneItem* item) {
    return WithK(g.hashes, [&]<uint32_t kK>() {
      const typename Layout::Context c = Layout::Prepare(g);
      const uint32_t k = kK != 0 ? kK : g.hashes;
      if constexpr (kLine) {
        return LineItemSet<Layout>(words + 8 * Layout::Line(h, c), h, c, k);
      } else {
        uint64_t own[kScatterMaxHashes];
        uint64_t* offsets = item != nullptr ? item->offsets : own;
        ScatterPrepare<Layout, kK, false>(h, c, k, words, /*prefetch=*/false, offsets);
        return TestItemBits(words, offsets, k);
      }
    });
  }
  static bool SetOneExclusive(const Hash128& h, const Geometry& g, uint64_t* words,
                              const OneItem* item) {
    return WithK(g.hashes, [&]<uint32_t kK>() {
      const uint32_t k = kK != 0 ? kK : g.hashes;
      if constexpr (kLine) {
        const typename Layout::Context c = Layout::Prepare(g);
        return LineSetItem<Layout, true>(words + 8 * Layout::Line(h, c), h, c, k);
      } else {
        if (item != nullptr) return SetItemBits<true>(words, item->offsets, k);
        const typename Layout::Context c = Layout::Prepare(g);
        uint64_t offsets[kScatterMaxHashes];
        ScatterPrepare<Layout, kK, false>(h, c, k, words, /*prefetch=*/false, offsets);
        return SetItemBits<true>(words, offsets, k);
      }
    });
  }
  template <bool kExclusive>
  static int64_t Set(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
                     uint8_t* added) {
    return WithK(g.hashes, [&]<uint32_t kK>() {
      if constexpr (kLine) {
        return LineSet<Layout, kK, kExclusive>(hashes, g, words, added);
      } else {
        return ScatterSet<Layout, kK, kExclusive>(hashes, g, words, added);
      }
    });
  }
};

}  // namespace word_kernels_internal

template <typename Layout>
constexpr WordKernels ScatterKernelsOf() {
  using E = word_kernels_internal::Entries<Layout, false>;
  return WordKernels{
      .max_hashes = word_kernels_internal::kScatterMaxHashes,
      .test = &E::Test,
      .set_exclusive = &E::template Set<true>,
      .set_shared = &E::template Set<false>,
      .test_one = &E::TestOne,
      .set_one_exclusive = &E::SetOneExclusive,
  };
}

template <typename Layout>
constexpr WordKernels LineKernelsOf() {
  using E = word_kernels_internal::Entries<Layout, true>;
  return WordKernels{
      .max_hashes = kMaxHashes,
      .test = &E::Test,
      .set_exclusive = &E::template Set<true>,
      .set_shared = &E::template Set<false>,
      .test_one = &E::TestOne,
      .set_one_exclusive = &E::SetOneExclusive,
  };
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_WORD_KERNELS_H_
