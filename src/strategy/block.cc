// Strategy "block": every bit of an item in one 512-bit block (one 64-byte
// cache line, eight 64-bit words), for speed. No Java program shares it.
//
//   hash     XXH3-128 of the item's bytes (h1, h2)
//   block    b = floor(h1 * B / 2^64), B = m / 512 blocks (Lemire's fastrange:
//            a multiply, no division)
//   offsets  word w_j = (s + j) mod 8 with s = h2 mod 8, and bit t_j = the
//            j-th 6-bit field of h2 >> 3 (ten fields; past them the fields
//            come from a fresh mix of h2):
//            offset_j = 512 b + 64 w_j + t_j, for j = 0..k-1
// So an item touches one cache line in memory (one miss instead of k) and
// one 64-byte range in Redis (one GETRANGE instead of k BITFIELD ops), and
// for k <= 8 each of its bits sits in a different word.
//
// The price is FPP: blocks receive unequal numbers of items, and an
// overloaded block answers "maybe" more often. The model (after RocksDB's
// util/bloom_impl.h, which sizes its cache-local filters the same way): the
// items per block are Poisson with mean lambda = 512 n / m, a block holding
// x items has each bit set with probability 1 - (1 - q)^x where q is the
// chance that one item sets a given bit (k/512 for k <= 8), and
//   FPP = sum over x of Poisson(x; lambda) (1 - (1 - q)^x)^k.
// Sizing inverts it: for each k near the classic optimum, the largest
// lambda whose FPP is within the requested rate, and the k that needs the
// fewest blocks. At 1% that is k = 6 and about 9.95 bits per item (a classic
// filter needs 9.59 at k = 7); at 0.1% k = 9 and 15.6 bits (classic 14.4).
//
// A one-word block (all k bits in one 64-bit word: one locked OR per insert
// in memory, one BITFIELD GET per check in Redis) was measured too: it needs
// 12.7 bits per item at 1%, 25.9 at 0.1% and 51 at 0.01%, against 9.95,
// 15.6 and 22.2 here. The line is as fast in memory and its Redis checks
// are within a third of guava64's, so it is the shape kept.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "prefetch.h"
#include "strategy/strategy_def.h"
#include "util/cpu_features.h"
#include "util/fmix64.h"
#include "util/utf8.h"
#include "word_kernels.h"
#include "xxh3_inline.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace redbloom::internal {
namespace {

constexpr uint64_t kBlockBits = 512;
constexpr uint32_t kBlockWords = 8;
// Geometry limit, the same as Guava's: (2^31 - 1) 64-bit words.
constexpr uint64_t kMaxBits = ((uint64_t{1} << 31) - 1) * 64 / kBlockBits * kBlockBits;

// XXH3 inline, flattened into this one function (the strategy's hash, a
// single item's): one call fewer than through Xxh3_128.
[[gnu::flatten]] Hash128 Hash(std::string_view bytes) {
  return Xxh3_128Inline(bytes.data(), bytes.size());
}

// k <= 10 (error rates down to about 1e-3): every field from h2, no
// bookkeeping in the loop.
constexpr uint32_t kFieldsInH2 = 10;

// The layout (see the top of the file), in the form word_kernels.h takes:
// the in-memory kernels and Offsets below both come from it, so they cannot
// disagree.
struct Layout {
  struct Context {
    uint64_t blocks;
    uint32_t k;
  };
  static Context Prepare(const Geometry& g) { return {g.bits / kBlockBits, g.hashes}; }
  static uint64_t Line(const Hash128& h, const Context& c) { return MulHigh64(h.h1, c.blocks); }
  template <typename F>
  static void Bits(const Hash128& h, const Context& /*c*/, uint32_t k, F&& f) {
    const auto start = static_cast<uint32_t>(h.h2 & (kBlockWords - 1));
    uint64_t fields = h.h2 >> 3;
    const uint32_t direct = std::min(k, kFieldsInH2);
#pragma GCC unroll 10
    for (uint32_t j = 0; j < direct; ++j, fields >>= 6) {
      f((start + j) & (kBlockWords - 1), static_cast<uint32_t>(fields & 63));
    }
    if (k > kFieldsInH2) [[unlikely]] {
      uint64_t more[kMoreSeeds];
      MoreFields(h.h2, k, more);
      for (uint32_t j = kFieldsInH2; j < k; ++j) {
        const uint32_t i = j - kFieldsInH2;
        f((start + j) & (kBlockWords - 1),
          static_cast<uint32_t>((more[i / kFieldsInH2] >> (6 * (i % kFieldsInH2))) & 63));
      }
    }
  }

  // Bits kFieldsInH2 .. k-1 (error rates below about 1e-3) take their fields
  // from fresh mixes of h2, ten per mix. Out of line, so that the common
  // loop above keeps its registers.
  static constexpr uint32_t kMoreSeeds = (kMaxHashes - kFieldsInH2) / kFieldsInH2 + 1;
  [[gnu::noinline]] static void MoreFields(uint64_t h2, uint32_t k, uint64_t* more) {
    uint64_t seed = h2;
    for (uint32_t i = 0; kFieldsInH2 + i * kFieldsInH2 < k; ++i) {
      seed = internal::Fmix64(seed + 0x9E3779B97F4A7C15ULL);
      more[i] = seed;
    }
  }
};

void Offsets(std::span<const Hash128> hashes, const Geometry& g, uint64_t* out) {
  const Layout::Context c = Layout::Prepare(g);
  for (const Hash128& h : hashes) {
    const uint64_t base = Layout::Line(h, c) * kBlockBits;
    Layout::Bits(h, c, c.k, [&](uint32_t w, uint32_t bit) { *out++ = base + 64 * w + bit; });
  }
}

constexpr WordKernels kPortableKernels = LineKernelsOf<Layout>();

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define REDBLOOM_BLOCK_AVX2 1

// A check in AVX2, for k <= 10 (every filter down to p = 0.03%): for k <= 8
// each of the block's eight words holds at most one of the item's bits, bit
// j in word (start + j) mod 8, so word w holds bit j = (w - start) mod 8 if
// j < k, at the 6-bit field j of h2 >> 3; for k = 9 or 10 (kTwo) words start
// and start + 1 also hold bits 8 and 9, at fields 8 and 9. Two 256-bit
// halves compute the eight words' masks from h2 at once and compare them
// with the line: 4.6 ns less per check than the scalar loop at 1e7 items
// (5.8 against 8.9 for the kernel alone; AVX-512 measured 5.3, not worth the
// narrower reach).
//
// The line is read with vector loads, not relaxed atomic ones per word: a
// read torn by a concurrent add is harmless, since bits only turn on and each
// bit read is one some interleaving could have given.
template <bool kTwo>
[[gnu::target("avx2")]] inline __m256i WordMasks(__m256i words, __m256i start, __m256i h2,
                                                 __m256i k) {
  const __m256i seven = _mm256_set1_epi64x(7);
  const __m256i j = _mm256_and_si256(_mm256_sub_epi64(words, start), seven);
  // The field at bit 3 + 6j of h2, in word_bits.h's order (bit b ^ 7).
  const __m256i shift = _mm256_add_epi64(
      _mm256_add_epi64(_mm256_slli_epi64(j, 2), _mm256_slli_epi64(j, 1)), _mm256_set1_epi64x(3));
  const __m256i bit = _mm256_and_si256(_mm256_srlv_epi64(h2, shift), _mm256_set1_epi64x(63));
  const __m256i one = _mm256_set1_epi64x(1);
  const __m256i mask = _mm256_sllv_epi64(one, _mm256_xor_si256(bit, seven));
  if constexpr (!kTwo) return _mm256_and_si256(mask, _mm256_cmpgt_epi64(k, j));
  // k = 9 or 10 (0.1% filters, kTwo): the word may hold bit j + 8 too, field
  // j + 8 of the same h2 (48 bits further).
  const __m256i bit8 =
      _mm256_and_si256(_mm256_srlv_epi64(h2, _mm256_add_epi64(shift, _mm256_set1_epi64x(48))),
                       _mm256_set1_epi64x(63));
  const __m256i mask8 = _mm256_sllv_epi64(one, _mm256_xor_si256(bit8, seven));
  return _mm256_or_si256(
      _mm256_and_si256(mask, _mm256_cmpgt_epi64(k, j)),
      _mm256_and_si256(mask8, _mm256_cmpgt_epi64(k, _mm256_add_epi64(j, _mm256_set1_epi64x(8)))));
}

// An item's line and the masks of its bits in the line's two halves, as both
// AVX2 kernels below take them.
struct Avx2Item {
  __m256i* line;
  __m256i mask0, mask1;
};

template <bool kTwo>
class Avx2Lines {
 public:
  [[gnu::target("avx2")]] explicit Avx2Lines(const Geometry& g)
      : c_(Layout::Prepare(g)),
        k_(_mm256_set1_epi64x(g.hashes)),
        low_(_mm256_set_epi64x(3, 2, 1, 0)),
        high_(_mm256_set_epi64x(7, 6, 5, 4)) {}

  uint64_t* Line(uint64_t* words, const Hash128& h) const {
    return words + 8 * Layout::Line(h, c_);
  }

  [[gnu::target("avx2")]] Avx2Item Item(uint64_t* words, const Hash128& h) const {
    // start from the broadcast h2, not broadcast itself: GCC broadcast
    // h2 & 7 through a stack slot, which gave single checks a stack frame.
    const __m256i h2 = _mm256_set1_epi64x(static_cast<int64_t>(h.h2));
    const __m256i start = _mm256_and_si256(h2, _mm256_set1_epi64x(7));
    return {reinterpret_cast<__m256i*>(Line(words, h)), WordMasks<kTwo>(low_, start, h2, k_),
            WordMasks<kTwo>(high_, start, h2, k_)};
  }

  // Whether the line holds every bit of the item.
  [[gnu::target("avx2")]] bool Test(uint64_t* words, const Hash128& h) const;

 private:
  Layout::Context c_;
  __m256i k_, low_, high_;
};

// Whether the line's two halves, as read, lack a bit of the item.
[[gnu::target("avx2")]] inline bool LacksAvx2(const Avx2Item& item, __m256i half0, __m256i half1) {
  const __m256i missing = _mm256_or_si256(_mm256_andnot_si256(half0, item.mask0),
                                          _mm256_andnot_si256(half1, item.mask1));
  return _mm256_testz_si256(missing, missing) == 0;
}

// Whether the line holds every bit of the item.
[[gnu::target("avx2")]] inline bool ItemSetAvx2(const Avx2Item& item) {
  return !LacksAvx2(item, _mm256_loadu_si256(item.line), _mm256_loadu_si256(item.line + 1));
}

template <bool kTwo>
[[gnu::target("avx2")]] inline bool Avx2Lines<kTwo>::Test(uint64_t* words, const Hash128& h) const {
  return ItemSetAvx2(Item(words, h));
}

template <bool kTwo>
[[gnu::target("avx2")]] void TestAvx2(std::span<const Hash128> hashes, const Geometry& g,
                                      uint64_t* words, uint8_t* present) {
  constexpr size_t kAhead = word_kernels_internal::kLineAhead;
  const Avx2Lines<kTwo> lines(g);
  const Hash128* const h = hashes.data();
  const size_t n = hashes.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) PrefetchForRead(lines.Line(words, h[i + kAhead]));
    present[i] |= lines.Test(words, h[i]) ? 1 : 0;
  }
}

// test_items in AVX2: a batched check that hashes its own items, in one
// pass. ContainsMany used to hash a batch (Xxh3_128Many), then test it:
// while the batch was hashed no line was in flight, and while it was tested
// the core had little to do but wait for lines (over 100 ns each from
// memory at 1e7 items). Here item i + kLineAhead is hashed and its line
// requested before item i is tested, so each line has the hashing of 32
// items to arrive in. Release builds of the two forms, batched block checks
// at 1e6 (12 alternating runs) medians 8.15-8.18 -> 7.55-7.61 ns, at 1e7 (8
// runs) 12.4-13.2 -> 10.0-10.1. core_bench's paired_test_items_check (this
// / the two passes) is 0.93-0.98 at 1e6 and 0.84-0.92 at 1e7 in the host's
// usual phase, but 1.15-1.23 and 1.05-1.10 in its slow one (about one
// process in five, where XXH3 alone is 1.5x slower too). Hashing eight at a
// time with Xxh3_128Many in the same pass measured 1.03 and 0.92; finishing
// each 32 or 64 items in two passes, 1.0-1.25. Flattened: at -O2 GCC
// otherwise calls XXH3 once per item.
template <bool kTwo>
[[gnu::target("avx2"), gnu::flatten]] bool TestItemsAvx2(std::span<const std::string_view> items,
                                                         const Geometry& g, uint64_t* words,
                                                         uint8_t* present) {
  constexpr size_t kAhead = word_kernels_internal::kLineAhead;
  static_assert((kAhead & (kAhead - 1)) == 0, "a ring indexed with a mask");
  const Avx2Lines<kTwo> lines(g);
  const size_t n = items.size();
  Hash128 ring[kAhead];
  uint64_t non_ascii = 0;
  const auto hash = [&](size_t i) {
    const std::string_view item = items[i];
    non_ascii |= NonAsciiBits(item);
    const Hash128 h = Xxh3_128Inline(item.data(), item.size());
    ring[i & (kAhead - 1)] = h;
    PrefetchForRead(lines.Line(words, h));
  };
  for (size_t i = 0; i < std::min(n, kAhead); ++i) hash(i);
  for (size_t i = 0; i < n; ++i) {
    present[i] = lines.Test(words, ring[i & (kAhead - 1)]) ? 1 : 0;
    if (i + kAhead < n) hash(i + kAhead);
  }
  return non_ascii == 0;
}

// One item (test_one): about 50 instructions, against about 100 for the
// scalar loop over k bits, which a single-item check felt (callgrind).
template <bool kTwo>
[[gnu::target("avx2")]] bool TestOneAvx2(const Hash128& h, const Geometry& g, uint64_t* words) {
  return Avx2Lines<kTwo>(g).Test(words, h);
}

// An add by the array's only writer (set_exclusive), in AVX2 as the check
// above: the line's two halves are read, the item's masks found missing or
// not, and an item that lacks a bit writes both halves back ORed with its
// masks. Concurrent readers may see a half before the other, which is a
// torn read as above. Concurrent writers are excluded by the caller (a
// shared writer ORs word by word with locked operations instead). Whether
// the item lacked a bit.
[[gnu::target("avx2")]] inline bool SetAloneAvx2(const Avx2Item& item) {
  const __m256i half0 = _mm256_loadu_si256(item.line);
  const __m256i half1 = _mm256_loadu_si256(item.line + 1);
  if (!LacksAvx2(item, half0, half1)) return false;
  _mm256_storeu_si256(item.line, _mm256_or_si256(half0, item.mask0));
  _mm256_storeu_si256(item.line + 1, _mm256_or_si256(half1, item.mask1));
  return true;
}

template <bool kTwo>
[[gnu::target("avx2")]] int64_t SetExclusiveAvx2(std::span<const Hash128> hashes, const Geometry& g,
                                                 uint64_t* words, uint8_t* added) {
  constexpr size_t kAhead = word_kernels_internal::kLineAhead;
  const Avx2Lines<kTwo> lines(g);
  const Hash128* const h = hashes.data();
  const size_t n = hashes.size();
  int64_t fresh = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) PrefetchForWrite(lines.Line(words, h[i + kAhead]));
    const bool was_new = SetAloneAvx2(lines.Item(words, h[i]));
    if (added != nullptr) added[i] = was_new ? 1 : 0;
    fresh += was_new ? 1 : 0;
  }
  return fresh;
}

// set_items_exclusive in AVX2: a batched add that hashes its own items in
// the pass that sets them, as TestItemsAvx2 checks them (item i + kLineAhead
// is hashed and its line requested before item i is set). Hashing the batch
// first (Xxh3_128Many) and then SetExclusiveAvx2, against this, one process,
// ORD-i items in batches of 1000, medians of 11 passes: 7.45-7.91 -> 6.98-7.27
// ns at 1e6 items, 9.23 -> 8.13 at 1e7. The items were validated by the
// caller. Its loop is TestItemsAvx2's, written out again: one inline helper
// for both, the visit of an item passed in as a lambda, made both kernels
// 10-13% slower (Release at 1e6, four processes each; GCC laid each out in
// a quarter of the instructions).
template <bool kTwo>
[[gnu::target("avx2"), gnu::flatten]] int64_t SetItemsAvx2(std::span<const std::string_view> items,
                                                           const Geometry& g, uint64_t* words,
                                                           uint8_t* added) {
  constexpr size_t kAhead = word_kernels_internal::kLineAhead;
  static_assert((kAhead & (kAhead - 1)) == 0, "a ring indexed with a mask");
  const Avx2Lines<kTwo> lines(g);
  const size_t n = items.size();
  Hash128 ring[kAhead];
  const auto hash = [&](size_t i) {
    const std::string_view item = items[i];
    const Hash128 h = Xxh3_128Inline(item.data(), item.size());
    ring[i & (kAhead - 1)] = h;
    PrefetchForWrite(lines.Line(words, h));
  };
  for (size_t i = 0; i < std::min(n, kAhead); ++i) hash(i);
  int64_t fresh = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool was_new = SetAloneAvx2(lines.Item(words, ring[i & (kAhead - 1)]));
    if (added != nullptr) added[i] = was_new ? 1 : 0;
    fresh += was_new ? 1 : 0;
    if (i + kAhead < n) hash(i + kAhead);
  }
  return fresh;
}

// One item (set_one_exclusive).
template <bool kTwo>
[[gnu::target("avx2")]] bool SetOneExclusiveAvx2(const Hash128& h, const Geometry& g,
                                                 uint64_t* words) {
  return SetAloneAvx2(Avx2Lines<kTwo>(g).Item(words, h));
}
#endif

#ifdef REDBLOOM_BLOCK_AVX2
// Whether the AVX2 kernels above run for this geometry on this CPU: k <= 10,
// every field from h2 (two bits in a word past k = 8, kTwo). A 0.1% filter
// (k = 9) took the portable forms before: Release at 1e6, batched checks
// 12.4-15.7 -> 7.5-7.7 ns, adds 18.1-25.0 -> 10.7-11.0, single checks
// 36-48 -> 17-24; k <= 8 keeps the one-mask code (kTwo false), as fast as
// before in five alternating runs.
bool UseAvx2(const Geometry& g) { return g.hashes <= kFieldsInH2 && VectorKernelsEnabled(); }

// Whether the single-item forms resolved once per filter (test_one_for,
// set_one_for, check_item_for) hand out an AVX2 form for g: the CPU, not
// the switch tests flip, which those forms still ask per call.
bool ResolvesToAvx2(const Geometry& g) { return g.hashes <= kFieldsInH2 && CpuHasAvx2(); }

// run(std::bool_constant<kTwo>) for g's AVX2 form: kTwo where two of an
// item's bits can share a word.
template <typename Run>
auto WithAvx2Form(const Geometry& g, Run&& run) {
  return g.hashes <= kBlockWords ? run(std::false_type{}) : run(std::true_type{});
}
#endif

void Test(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words, uint8_t* present) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (UseAvx2(g)) {
    return WithAvx2Form(
        g, [&](auto two) { return TestAvx2<decltype(two)::value>(hashes, g, words, present); });
  }
#endif
  kPortableKernels.test(hashes, g, words, present);
}

// The portable single-item forms, kept out of line: inlined into the
// dispatchers below, GCC gave them the portable loop's stack frame and
// register saves before the AVX2 test (31 instructions per call instead of
// 14, callgrind).
[[gnu::noinline]] bool PortableTestOne(const Hash128& h, const Geometry& g, uint64_t* words,
                                       OneItem* item) {
  return kPortableKernels.test_one(h, g, words, item);
}

[[gnu::noinline]] bool PortableSetOneExclusive(const Hash128& h, const Geometry& g, uint64_t* words,
                                               const OneItem* item) {
  return kPortableKernels.set_one_exclusive(h, g, words, item);
}

// The portable form does not take a batch: in one pass (TestItemsAvx2's
// loop with the portable line test) it measured 1.6x slower than hashing
// first, a 0.1% filter (k = 9, then past the AVX2 form) at 1e6 items,
// batched checks 12.4-16.8 -> 20.1-20.7 ns, and 24 with k unrolled.
WordKernels::Items TestItems([[maybe_unused]] std::span<const std::string_view> items,
                             [[maybe_unused]] const Geometry& g, [[maybe_unused]] uint64_t* words,
                             [[maybe_unused]] uint8_t* present) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (UseAvx2(g)) {
    const bool ascii = WithAvx2Form(
        g, [&](auto two) { return TestItemsAvx2<decltype(two)::value>(items, g, words, present); });
    return ascii ? WordKernels::Items::kAscii : WordKernels::Items::kNotAllAscii;
  }
#endif
  return WordKernels::Items::kNotTaken;
}

[[gnu::noinline]] bool TestOne(const Hash128& h, const Geometry& g, uint64_t* words,
                               OneItem* item) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (UseAvx2(g)) {
    return WithAvx2Form(g,
                        [&](auto two) { return TestOneAvx2<decltype(two)::value>(h, g, words); });
  }
#endif
  return PortableTestOne(h, g, words, item);
}

#ifdef REDBLOOM_BLOCK_AVX2
// TestOne for one AVX2 form, its geometry checked once by TestOneFor. The
// vector kernels are still asked per call, as tests switch them off; when
// they are off or not yet asked, TestOne (out of line, a tail call) decides,
// so that this needs no stack frame of its own.
template <bool kTwo>
[[gnu::target("avx2")]] bool TestOneResolved(const Hash128& h, const Geometry& g, uint64_t* words,
                                             OneItem* item) {
  if (!VectorKernelsKnownEnabled()) [[unlikely]]
    return TestOne(h, g, words, item);
  return Avx2Lines<kTwo>(g).Test(words, h);
}

// Hash and TestOneResolved in one call (check_item_for), for items of up to
// 16 bytes (most ids), whose XXH3 is a few multiplies inline here; longer
// items, and vector kernels switched off, go the general way (a tail call),
// so that XXH3's longer forms do not lengthen this one's path.
template <bool kTwo>
[[gnu::target("avx2"), gnu::flatten]] bool CheckItemResolved(std::string_view item,
                                                             const SingleCheck& c,
                                                             uint64_t* words) {
  if (item.size() > 16 || !VectorKernelsKnownEnabled()) [[unlikely]]
    return CheckItemByParts(item, c, words);
  return Avx2Lines<kTwo>(c.geometry).Test(words, Xxh3_128Inline(item.data(), item.size()));
}
#endif

CheckItemFn CheckItemFor([[maybe_unused]] const Geometry& g) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (ResolvesToAvx2(g)) {
    return WithAvx2Form(
        g, [](auto two) -> CheckItemFn { return &CheckItemResolved<decltype(two)::value>; });
  }
#endif
  return nullptr;
}

// The single-check kernel for g (test_one_for): TestOneResolved's form for
// g where this CPU has AVX2, else TestOne. TestOneResolved is compiled for
// AVX2 throughout, so it is never handed out on a CPU without.
TestOneFn TestOneFor([[maybe_unused]] const Geometry& g) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (ResolvesToAvx2(g)) {
    return WithAvx2Form(
        g, [](auto two) -> TestOneFn { return &TestOneResolved<decltype(two)::value>; });
  }
#endif
  return &TestOne;
}

int64_t SetExclusive(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words,
                     uint8_t* added) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (UseAvx2(g)) {
    return WithAvx2Form(g, [&](auto two) {
      return SetExclusiveAvx2<decltype(two)::value>(hashes, g, words, added);
    });
  }
#endif
  return kPortableKernels.set_exclusive(hashes, g, words, added);
}

// Not taken by the portable form, as TestItems is not.
int64_t SetItemsExclusive([[maybe_unused]] std::span<const std::string_view> items,
                          [[maybe_unused]] const Geometry& g, [[maybe_unused]] uint64_t* words,
                          [[maybe_unused]] uint8_t* added) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (UseAvx2(g)) {
    return WithAvx2Form(
        g, [&](auto two) { return SetItemsAvx2<decltype(two)::value>(items, g, words, added); });
  }
#endif
  return WordKernels::kSetItemsNotTaken;
}

bool SetOneExclusive(const Hash128& h, const Geometry& g, uint64_t* words, const OneItem* item) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (UseAvx2(g)) {
    return WithAvx2Form(
        g, [&](auto two) { return SetOneExclusiveAvx2<decltype(two)::value>(h, g, words); });
  }
#endif
  return PortableSetOneExclusive(h, g, words, item);
}

#ifdef REDBLOOM_BLOCK_AVX2
// SetOneExclusive for one AVX2 form, as TestOneResolved is for TestOne.
template <bool kTwo>
[[gnu::target("avx2")]] bool SetOneResolved(const Hash128& h, const Geometry& g, uint64_t* words,
                                            const OneItem* item) {
  if (!VectorKernelsKnownEnabled()) [[unlikely]]
    return SetOneExclusive(h, g, words, item);
  return SetAloneAvx2(Avx2Lines<kTwo>(g).Item(words, h));
}
#endif

// The single-add kernel for g (set_one_for), as TestOneFor.
SetOneFn SetOneFor([[maybe_unused]] const Geometry& g) {
#ifdef REDBLOOM_BLOCK_AVX2
  if (ResolvesToAvx2(g)) {
    return WithAvx2Form(g,
                        [](auto two) -> SetOneFn { return &SetOneResolved<decltype(two)::value>; });
  }
#endif
  return &SetOneExclusive;
}

constexpr WordKernels kKernels = {
    .max_hashes = kPortableKernels.max_hashes,
    .test = &Test,
    .set_exclusive = &SetExclusive,
    .set_shared = kPortableKernels.set_shared,
    .test_one = &TestOne,
    .set_one_exclusive = &SetOneExclusive,
    .test_items = &TestItems,
    .set_items_exclusive = &SetItemsExclusive,
    .test_one_for = &TestOneFor,
    .set_one_for = &SetOneFor,
    .check_item_for = &CheckItemFor,
};

// The chance that one item sets a given bit of its block: its k bits go
// round the eight words, so a word receives a = k / 8 or a + 1 of them
// (the latter with probability (k mod 8) / 8), each uniform over 64 bits.
double BitProbability(uint32_t k) {
  const double a = k / kBlockWords;
  const double b = k % kBlockWords;
  auto set_by = [](double draws) { return -std::expm1(draws * std::log1p(-1.0 / 64)); };
  return b / kBlockWords * set_by(a + 1) + (1 - b / kBlockWords) * set_by(a);
}

// FPP at a mean of `lambda` items per block (see the top of the file). The
// Poisson weights are summed in log space over lambda +- 12 sd (plus 40), so
// a lambda of thousands neither underflows nor loses mass above 1e-30.
double BlockFpp(double lambda, uint32_t k) {
  if (!(lambda > 0)) return 0.0;
  const double log_unset = std::log1p(-BitProbability(k));
  const double spread = 12 * std::sqrt(lambda) + 40;
  const auto first = static_cast<uint64_t>(std::max(0.0, std::floor(lambda - spread)));
  const auto last = static_cast<uint64_t>(std::ceil(lambda + spread));
  const double log_lambda = std::log(lambda);
  // log Poisson(x) = x log(lambda) - lambda - log(x!), log(x!) summed up.
  double log_factorial = 0;
  for (uint64_t i = 2; i <= first; ++i) log_factorial += std::log(static_cast<double>(i));
  double fpp = 0;
  for (uint64_t x = first; x <= last; ++x) {
    if (x >= 2 && x > first) log_factorial += std::log(static_cast<double>(x));
    const double weight = std::exp(static_cast<double>(x) * log_lambda - lambda - log_factorial);
    const double bit_set = -std::expm1(static_cast<double>(x) * log_unset);
    fpp += weight * std::pow(bit_set, k);
  }
  return std::min(1.0, fpp);
}

// The largest mean load whose FPP is at most p, by bisection (FPP rises with
// the load).
double MaxLoad(double p, uint32_t k) {
  double lo = 0, hi = 1;
  while (BlockFpp(hi, k) <= p && hi < 1e7) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (BlockFpp(mid, k) <= p ? lo : hi) = mid;
  }
  return lo;
}

Result<Geometry> BlockGeometry(uint64_t capacity, double error_rate) {
  REDBLOOM_RETURN_IF_ERROR(ValidateCapacityAndErrorRate(capacity, error_rate));
  // A blocked filter's best k is at or a little below the classic optimum
  // log2(1/p); the search covers that range.
  const auto classic = static_cast<uint32_t>(std::ceil(-std::log2(error_rate)));
  const uint32_t lowest = classic > 5 ? classic - 5 : 1;
  const uint32_t highest = std::min(kMaxHashes, classic + 1);
  const double n = static_cast<double>(capacity);
  Geometry best;
  uint64_t best_blocks = std::numeric_limits<uint64_t>::max();
  for (uint32_t k = lowest; k <= highest; ++k) {
    const double load = MaxLoad(error_rate, k);
    if (!(load > 0)) continue;
    const double blocks_needed = std::ceil(n / load);
    if (blocks_needed * kBlockBits > static_cast<double>(kMaxBits)) continue;
    auto blocks = static_cast<uint64_t>(blocks_needed);
    // The bisection's last step may leave n / blocks a hair above `load`.
    while (BlockFpp(n / static_cast<double>(blocks), k) > error_rate) ++blocks;
    if (blocks < best_blocks) {
      best_blocks = blocks;
      best.bits = blocks * kBlockBits;
      best.hashes = k;
    }
  }
  if (best.bits == 0 || best.bits > kMaxBits) {
    return Status::InvalidArgument(
        "capacity " + std::to_string(capacity) + " at error rate " + FormatDouble(error_rate) +
        " needs more than " + std::to_string(kMaxBits) +
        " bits (16 GiB), the most a block filter may have: ask for fewer items or a higher rate");
  }
  return best;
}

double FalsePositiveRate(uint64_t bits_set, const Geometry& g) {
  if (g.bits == 0 || bits_set >= g.bits) return 1.0;
  // A Poisson load of mean lambda leaves a bit unset with probability
  // E[(1 - q)^x] = exp(-lambda q): the fill gives lambda back.
  const double fill = static_cast<double>(bits_set) / static_cast<double>(g.bits);
  const double lambda = -std::log1p(-fill) / BitProbability(g.hashes);
  return BlockFpp(lambda, g.hashes);
}

uint64_t EstimateItems(uint64_t bits_set, const Geometry& g) {
  if (g.bits == 0 || g.hashes == 0) return 0;
  if (bits_set >= g.bits) return std::numeric_limits<uint64_t>::max();
  const double fill = static_cast<double>(bits_set) / static_cast<double>(g.bits);
  const double lambda = -std::log1p(-fill) / BitProbability(g.hashes);
  return static_cast<uint64_t>(JavaMathRound(lambda * static_cast<double>(g.bits / kBlockBits)));
}

}  // namespace

extern const StrategyDef kBlockStrategy;
const StrategyDef kBlockStrategy = {
    .id = Strategy::kBlock,
    .name = "block",
    .summary = "all of an item's bits in one 64-byte block (XXH3): fastest, redbloom only",
    .encodings = kAllEncodings,
    .hash = &Hash,
    .hash_many = &Xxh3_128Many,
    .geometry = &BlockGeometry,
    .given_geometry = nullptr,
    .offsets = &Offsets,
    .false_positive_rate = &FalsePositiveRate,
    .estimate_items = &EstimateItems,
    .word_kernels = &kKernels,
};

}  // namespace redbloom::internal
