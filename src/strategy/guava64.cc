// Strategy "guava64": Guava's BloomFilterStrategies.MURMUR128_MITZ_64, the
// strategy of every Guava BloomFilter since Guava 16:
//   long c = h1; for i in 0..k-1: offset_i = (c & Long.MAX_VALUE) % m; c += h2
// with (h1, h2) the two little-endian longs of murmur3_128 and m a multiple
// of 64 (Guava's long[] words; Guava64Geometry). Filters shared with Guava
// use it by name.
#include <cstdint>
#include <string>

#include "strategy/strategy_def.h"
#include "util/cpu_features.h"
#include "word_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define REDBLOOM_GUAVA64_AVX512 1
#endif

namespace redbloom::internal {
namespace {

Hash128 Hash(std::string_view bytes) { return Murmur3_128(bytes); }

// a % m for a < 2^63 without a division (Barrett reduction), given
// inverse = floor((2^64 - 1) / m). q = floor(a * inverse / 2^64) is
// floor(a/m) or one less: a * inverse / 2^64 <= a/m, and since inverse >
// (2^64 - 1)/m - 1 it is > a/m - a(1 + m)/(m 2^64) > a/m - 1 for a < 2^63.
// So a - q*m is in [0, 2m) and one conditional subtraction finishes it.
// Seven 64-bit divisions took 12.9 ns per item here, this 5.6 ns; the
// result is the same integer (strategy_test compares them).
inline uint64_t ModBarrett(uint64_t a, uint64_t m, uint64_t inverse) {
  const uint64_t q = MulHigh64(a, inverse);
  const uint64_t r = a - q * m;
  return r >= m ? r - m : r;
}

// The offsets of one item, in the form word_kernels.h takes: the batch
// offsets and the in-memory kernels both come from it.
struct Layout {
  struct Context {
    uint64_t m;
    uint64_t inverse;
    uint32_t k;
  };
  static Context Prepare(const Geometry& g) {
    return {g.bits, ~uint64_t{0} / g.bits, g.hashes};  // one division per batch
  }
  template <typename F>
  static void ForEachOffset(const Hash128& hash, const Context& c, uint32_t k, F&& f) {
    uint64_t combined = hash.h1;
#pragma GCC unroll 16
    for (uint32_t i = 0; i < k; ++i) {
      f(ModBarrett(combined & 0x7fffffffffffffffULL, c.m, c.inverse));
      combined += hash.h2;  // long addition, wraps mod 2^64
    }
  }
};

const WordKernels kPortableKernels = ScatterKernelsOf<Layout>();

#ifdef REDBLOOM_GUAVA64_AVX512
// Eight offsets at once in AVX-512 (F and DQ: 64-bit multiplies and
// conversions to and from double), for k <= 16. Per lane j, with
// y = (h1 + j*h2) mod 2^63 and 1 <= m < 2^51 (guava64's m < 2^37):
//   q = trunc(RN(y) * RN(1/m)). Three roundings of relative error 2^-53
//     each put q within 3*2^-53*y/m + 1 <= 3*2^10/m + 1 of y/m, so
//   r = y - q*m (wrapping 64-bit arithmetic, exact since |r| < 2^53) has
//     |r/m| <= 3*2^10/m + 1, and is exact as a double.
//   q2 = trunc(r * RN(1/m)) is within |r/m|*2^-52 < 1/m of r/m, so it is
//     trunc(r/m) when r/m is not an integer (r/m is then at least 1/m from
//     one), and differs by at most 1 when it is: r2 = r - q2*m is in
//     [-m, m], and adding m if negative, then subtracting m if >= m, gives
//     y mod m.
// strategy_test compares these with Java's % over guava64's whole range of m;
// 7 offsets took 2.5 ns here against 5.6 for the scalar Barrett reduction.
struct Avx512Layout {
  struct Context {
    __m512i iota;  // 0..7
    __m512i m;
    __m512d inverse;  // RN(1/m)
  };
  [[gnu::target("avx512f,avx512dq")]] static Context Prepare(const Geometry& g) {
    return {_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
            _mm512_set1_epi64(static_cast<int64_t>(g.bits)),
            _mm512_set1_pd(1.0 / static_cast<double>(g.bits))};
  }
  // Offsets first + 0..7 of the item.
  [[gnu::target("avx512f,avx512dq")]] static __m512i Eight(const Hash128& hash, const Context& c,
                                                           uint64_t first) {
    const __m512i h2 = _mm512_set1_epi64(static_cast<int64_t>(hash.h2));
    const __m512i lanes = _mm512_add_epi64(c.iota, _mm512_set1_epi64(static_cast<int64_t>(first)));
    const __m512i combined =
        _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(hash.h1)),
                         _mm512_mullo_epi64(h2, lanes));  // long arithmetic, mod 2^64
    const __m512i y =
        _mm512_and_si512(combined, _mm512_set1_epi64(0x7fffffffffffffffLL));  // & MAX_VALUE
    const __m512i q = _mm512_cvttpd_epu64(_mm512_mul_pd(_mm512_cvtepu64_pd(y), c.inverse));
    const __m512i r = _mm512_sub_epi64(y, _mm512_mullo_epi64(q, c.m));
    const __m512i q2 = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_cvtepi64_pd(r), c.inverse));
    __m512i r2 = _mm512_sub_epi64(r, _mm512_mullo_epi64(q2, c.m));
    r2 = _mm512_mask_add_epi64(r2, _mm512_cmplt_epi64_mask(r2, _mm512_setzero_si512()), r2, c.m);
    return _mm512_mask_sub_epi64(r2, _mm512_cmpge_epi64_mask(r2, c.m), r2, c.m);
  }
  template <typename F>
  [[gnu::target("avx512f,avx512dq")]] static void ForEachOffset(const Hash128& hash,
                                                                const Context& c, uint32_t k,
                                                                F&& f) {
    alignas(64) uint64_t offsets[16];
    _mm512_store_si512(offsets, Eight(hash, c, 0));
    if (k > 8) _mm512_store_si512(offsets + 8, Eight(hash, c, 8));
#pragma GCC unroll 16
    for (uint32_t i = 0; i < k; ++i) f(offsets[i]);
  }
};

using Avx512Entries = word_kernels_internal::Entries<Avx512Layout, false>;

// Where the AVX-512 forms run: k <= 16 on a CPU that has it, unless a test
// turned vector kernels off.
bool UseAvx512(const Geometry& g) {
  return g.hashes <= 16 && VectorKernelsEnabled() && CpuHasAvx512();
}

// flatten: the shared kernel loops (word_kernels.h, default target) are
// inlined here, so that Avx512Layout's offsets inline into them.
[[gnu::target("avx512f,avx512dq"), gnu::flatten]] void TestAvx512(std::span<const Hash128> hashes,
                                                                  const Geometry& g,
                                                                  uint64_t* words,
                                                                  uint8_t* present) {
  Avx512Entries::Test(hashes, g, words, present);
}

template <bool kExclusive>
[[gnu::target("avx512f,avx512dq"), gnu::flatten]] int64_t SetAvx512(std::span<const Hash128> hashes,
                                                                    const Geometry& g,
                                                                    uint64_t* words,
                                                                    uint8_t* added) {
  return Avx512Entries::Set<kExclusive>(hashes, g, words, added);
}

[[gnu::target("avx512f,avx512dq"), gnu::flatten]] void OffsetsAvx512(
    std::span<const Hash128> hashes, const Geometry& g, uint64_t* out) {
  const Avx512Layout::Context c = Avx512Layout::Prepare(g);
  for (const Hash128& hash : hashes) {
    Avx512Layout::ForEachOffset(hash, c, g.hashes, [&](uint64_t offset) { *out++ = offset; });
  }
}
#endif

void Offsets(std::span<const Hash128> hashes, const Geometry& g, uint64_t* out) {
#ifdef REDBLOOM_GUAVA64_AVX512
  if (UseAvx512(g)) return OffsetsAvx512(hashes, g, out);
#endif
  const Layout::Context c = Layout::Prepare(g);
  for (const Hash128& hash : hashes) {
    Layout::ForEachOffset(hash, c, c.k, [&](uint64_t offset) { *out++ = offset; });
  }
}

void Test(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words, uint8_t* present) {
#ifdef REDBLOOM_GUAVA64_AVX512
  if (UseAvx512(g)) return TestAvx512(hashes, g, words, present);
#endif
  kPortableKernels.test(hashes, g, words, present);
}

// set_exclusive (kExclusive) and set_shared.
template <bool kExclusive>
int64_t Set(std::span<const Hash128> hashes, const Geometry& g, uint64_t* words, uint8_t* added) {
#ifdef REDBLOOM_GUAVA64_AVX512
  if (UseAvx512(g)) return SetAvx512<kExclusive>(hashes, g, words, added);
#endif
  const auto set = kExclusive ? kPortableKernels.set_exclusive : kPortableKernels.set_shared;
  return set(hashes, g, words, added);
}

// Single items keep the scalar offsets: one item has no batch to spread the
// vector set-up over.
const WordKernels kKernels = {
    .max_hashes = kPortableKernels.max_hashes,
    .test = &Test,
    .set_exclusive = &Set<true>,
    .set_shared = &Set<false>,
    .test_one = kPortableKernels.test_one,
    .set_one_exclusive = kPortableKernels.set_one_exclusive,
};

// A Guava file's m and k: m a positive multiple of 64 (Guava's long words),
// at most Guava's (2^31-1) words, and 1 <= k <= 255 (Guava stores k in a
// byte).
Result<Geometry> Given(uint64_t bits, uint32_t hashes) {
  if (bits == 0 || bits % 64 != 0 || bits / 64 > static_cast<uint64_t>(INT32_MAX)) {
    return Status::InvalidArgument(
        "guava64 needs a positive multiple of 64 bits up to (2^31-1)*64, not " +
        std::to_string(bits));
  }
  if (hashes < 1 || hashes > kMaxHashes) {
    return Status::InvalidArgument("hashes must be from 1 to " + std::to_string(kMaxHashes) +
                                   ", not " + std::to_string(hashes));
  }
  Geometry g;
  g.bits = bits;
  g.hashes = hashes;
  return g;
}

}  // namespace

extern const StrategyDef kGuava64Strategy;
const StrategyDef kGuava64Strategy = {
    .id = Strategy::kGuava64,
    .name = "guava64",
    .summary = "Guava BloomFilter's MURMUR128_MITZ_64: shares filters with Java's Guava",
    .encodings = kAllEncodings,
    .hash = &Hash,
    .hash_many = &Murmur3_128Many,
    .geometry = &Guava64Geometry,
    .given_geometry = &Given,
    .offsets = &Offsets,
    .false_positive_rate = &UniformFalsePositiveRate,
    .estimate_items = &UniformEstimateItems,
    .word_kernels = &kKernels,
};

}  // namespace redbloom::internal
