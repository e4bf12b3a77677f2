#include "redbloom/hash.h"

#include <highwayhash/highwayhash_target.h>
#include <highwayhash/instruction_sets.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "util/fmix64.h"
#include "util/utf8.h"
#include "xxh3_inline.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's _mm512_undefined_epi32 (under the shift and rotate intrinsics)
// trips its own uninitialized-value warnings (GCC bug 105593).
#if defined(__clang__)
#include <immintrin.h>
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
#endif

#include "util/cpu_features.h"

namespace redbloom {
namespace {

// Austin Appleby's MurmurHash3_x64_128 (public domain), as Guava ports it:
// 16-byte blocks read little-endian, the tail as up to two partial words, and the
// length xored in as a (sign-extended) Java int, which is the same for any
// length below 2^31.
constexpr uint64_t kC1 = 0x87c37b91114253d5ULL;
constexpr uint64_t kC2 = 0x4cf5ad432745937fULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

inline uint64_t LoadLE32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

// The n bytes at p (1 <= n <= 8) as a little-endian number, reading none
// past p + n: two overlapping 4-byte loads, or for n < 4 the first, middle
// and last bytes (which cover 1..3 bytes). Murmur3 mixes a tail byte by byte;
// this gives the same words with two loads instead of up to 15, and hashing an
// 11-byte item took 4.6 ns instead of 6.7 here (issue #17).
inline uint64_t LoadPartialLE(const uint8_t* p, size_t n) {
  if (n >= 4) return LoadLE32(p) | (LoadLE32(p + n - 4) << (8 * (n - 4)));
  return uint64_t{p[0]} | (uint64_t{p[n >> 1]} << (8 * (n >> 1))) |
         (uint64_t{p[n - 1]} << (8 * (n - 1)));
}

// Murmur3's work on an item up to its finalisation: h1 and h2 after the
// 16-byte blocks, and the tail's bytes 0..7 (k1) and 8..15 (k2) read
// little-endian, 0 where the tail has none; `bits` is the OR of every word
// read, so that its high bits say whether the item is ASCII (no cost where
// nobody reads it: Murmur3_128 inlines this and drops it).
struct Murmur3Body {
  uint64_t h1;
  uint64_t h2;
  uint64_t k1;
  uint64_t k2;
  uint64_t bits;
};

inline Murmur3Body Murmur3Blocks(const uint8_t* bytes, size_t len, uint32_t seed) {
  const size_t nblocks = len / 16;
  uint64_t h1 = seed;
  uint64_t h2 = seed;
  uint64_t bits = 0;
  for (size_t i = 0; i < nblocks; ++i) {
    uint64_t k1 = LoadLE64(bytes + i * 16);
    uint64_t k2 = LoadLE64(bytes + i * 16 + 8);
    bits |= k1 | k2;
    k1 *= kC1;
    k1 = Rotl(k1, 31);
    k1 *= kC2;
    h1 ^= k1;
    h1 = Rotl(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    k2 *= kC2;
    k2 = Rotl(k2, 33);
    k2 *= kC1;
    h2 ^= k2;
    h2 = Rotl(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }
  const uint8_t* tail = bytes + nblocks * 16;
  const size_t rest = len & 15;
  const uint64_t k1 = rest >= 8 ? LoadLE64(tail) : rest > 0 ? LoadPartialLE(tail, rest) : 0;
  const uint64_t k2 = rest > 8 ? LoadPartialLE(tail + 8, rest - 8) : 0;
  return {h1, h2, k1, k2, bits | k1 | k2};
}

// Guava xors the length as a Java int; sign extension only matters past 2 GiB.
inline uint64_t JavaIntLength(size_t len) {
  return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(len)));
}

// The rest of Murmur3_128 after Murmur3Blocks.
inline Hash128 Murmur3Finish(const Murmur3Body& body, size_t len) {
  uint64_t h1 = body.h1;
  uint64_t h2 = body.h2;
  // An empty tail word is skipped, as Murmur3 does (mixing it would xor 0).
  if (body.k2 != 0) {
    uint64_t k2 = body.k2;
    k2 *= kC2;
    k2 = Rotl(k2, 33);
    k2 *= kC1;
    h2 ^= k2;
  }
  if (body.k1 != 0) {
    uint64_t k1 = body.k1;
    k1 *= kC1;
    k1 = Rotl(k1, 31);
    k1 *= kC2;
    h1 ^= k1;
  }
  const uint64_t length = JavaIntLength(len);
  h1 ^= length;
  h2 ^= length;
  h1 += h2;
  h2 += h1;
  h1 = internal::Fmix64(h1);
  h2 = internal::Fmix64(h2);
  h1 += h2;
  h2 += h1;
  return Hash128{h1, h2};
}

constexpr uint64_t kHighBits = 0x8080808080808080ULL;

}  // namespace

Hash128 Murmur3_128(const void* data, size_t len, uint32_t seed) {
  return Murmur3Finish(Murmur3Blocks(static_cast<const uint8_t*>(data), len, seed), len);
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
#define REDBLOOM_MURMUR3_AVX512 1
#define REDBLOOM_AVX512_TARGET gnu::target("avx512f,avx512dq")

[[REDBLOOM_AVX512_TARGET]] inline __m512i Set1(uint64_t v) {
  return _mm512_set1_epi64(static_cast<int64_t>(v));
}

[[REDBLOOM_AVX512_TARGET]] inline __m512i Fmix64x8(__m512i k) {
  k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
  k = _mm512_mullo_epi64(k, Set1(internal::kFmix64Mul1));
  k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
  k = _mm512_mullo_epi64(k, Set1(internal::kFmix64Mul2));
  return _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
}

// Murmur3_128Many in two passes over up to kChunk items: Murmur3Blocks one
// item at a time into arrays, then the rest of Murmur3_128 (the tail's
// mixing and the finalisation: every multiplication of an item under 16
// bytes) eight items at once, one per 64-bit lane. The tail words are mixed
// even when empty: 0 mixes to 0, which xors nothing. Measured on 11-byte
// ids, batches of 1000, guava64 (core_bench paired_hash_many_check: a
// batched check with the items hashed one at a time, then with this):
// 0.75-0.82 of the check's time at 1e6 and 1e7. Tried first and slower than
// one at a time: loading each lane's words straight into vectors (masked
// loads, or gathers, each of which then waited on its loads).
[[REDBLOOM_AVX512_TARGET]] bool Murmur3_128ManyAvx512(std::span<const std::string_view> items,
                                                      Hash128* out) {
  uint64_t bits = 0;
  constexpr size_t kChunk = 64;
  alignas(64) uint64_t h1s[kChunk], h2s[kChunk], k1s[kChunk], k2s[kChunk], lengths[kChunk];
  for (size_t start = 0; start < items.size(); start += kChunk) {
    const size_t n = std::min(kChunk, items.size() - start);
    for (size_t j = 0; j < n; ++j) {
      const std::string_view item = items[start + j];
      const Murmur3Body body =
          Murmur3Blocks(reinterpret_cast<const uint8_t*>(item.data()), item.size(), 0);
      h1s[j] = body.h1;
      h2s[j] = body.h2;
      k1s[j] = body.k1;
      k2s[j] = body.k2;
      bits |= body.bits;
      lengths[j] = JavaIntLength(item.size());
    }
    for (size_t j = 0; j < n; j += 8) {
      // The items of this group (all 8 but in a chunk's last), and the
      // words of out they fill: j..j+3 the first 8, j+4..j+7 the next 8.
      const unsigned c = static_cast<unsigned>(std::min<size_t>(8, n - j));
      const auto lanes = static_cast<__mmask8>((1u << c) - 1);
      const auto low = static_cast<__mmask8>(c >= 4 ? 0xFF : (1u << (2 * c)) - 1);
      const auto high = static_cast<__mmask8>(c <= 4 ? 0 : (1u << (2 * (c - 4))) - 1);
      __m512i k1 = _mm512_maskz_load_epi64(lanes, k1s + j);
      k1 = _mm512_mullo_epi64(k1, Set1(kC1));
      k1 = _mm512_rol_epi64(k1, 31);
      k1 = _mm512_mullo_epi64(k1, Set1(kC2));
      __m512i k2 = _mm512_maskz_load_epi64(lanes, k2s + j);
      k2 = _mm512_mullo_epi64(k2, Set1(kC2));
      k2 = _mm512_rol_epi64(k2, 33);
      k2 = _mm512_mullo_epi64(k2, Set1(kC1));
      const __m512i length = _mm512_maskz_load_epi64(lanes, lengths + j);
      __m512i h1 = _mm512_ternarylogic_epi64(_mm512_maskz_load_epi64(lanes, h1s + j), k1, length,
                                             0x96);  // xor of all three
      __m512i h2 =
          _mm512_ternarylogic_epi64(_mm512_maskz_load_epi64(lanes, h2s + j), k2, length, 0x96);
      h1 = _mm512_add_epi64(h1, h2);
      h2 = _mm512_add_epi64(h2, h1);
      h1 = Fmix64x8(h1);
      h2 = Fmix64x8(h2);
      h1 = _mm512_add_epi64(h1, h2);
      h2 = _mm512_add_epi64(h2, h1);
      // Hash128 is {h1, h2}: interleave the lanes into out[j..j+7].
      static_assert(sizeof(Hash128) == 16 && std::is_standard_layout_v<Hash128>);
      auto* to = reinterpret_cast<uint64_t*>(out + start + j);
      _mm512_mask_storeu_epi64(
          to, low, _mm512_permutex2var_epi64(h1, _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0), h2));
      _mm512_mask_storeu_epi64(
          to + 8, high,
          _mm512_permutex2var_epi64(h1, _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4), h2));
    }
  }
  return (bits & kHighBits) == 0;
}
#endif

}  // namespace

bool Murmur3_128Many(std::span<const std::string_view> items, Hash128* out) {
#ifdef REDBLOOM_MURMUR3_AVX512
  // Fewer than eight items fill no vector: they take the loop below (and so
  // do the tests' short batches, which keep it tested on CPUs with AVX-512).
  if (items.size() >= 8 && internal::CpuHasAvx512()) return Murmur3_128ManyAvx512(items, out);
#endif
  uint64_t bits = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string_view item = items[i];
    const Murmur3Body body =
        Murmur3Blocks(reinterpret_cast<const uint8_t*>(item.data()), item.size(), 0);
    out[i] = Murmur3Finish(body, item.size());
    bits |= body.bits;
  }
  return (bits & kHighBits) == 0;
}

Hash128 HighwayHash128(std::string_view bytes, const HighwayKey& key) {
  // std::array<uint64_t, 4> is laid out as HHKey, a uint64_t[4].
  const auto& lanes = *reinterpret_cast<const highwayhash::HHKey*>(key.data());
  highwayhash::HHResult128 out;
  // Run picks the implementation on every call from a cached CPU probe (a
  // few cycles next to the tens of nanoseconds of hashing a short item).
  highwayhash::InstructionSets::Run<highwayhash::HighwayHash>(lanes, bytes.data(), bytes.size(),
                                                              &out);
  return Hash128{out[0], out[1]};
}

// Flattened: at -O2 (RelWithDebInfo, the default build) GCC kept
// XXH3_128bits out of line for its two callers here, this one and
// Xxh3_128Many, a call per item in both; inlined into this one, it has one
// caller left and GCC inlines it there too. Batched block checks at 1e6 took
// 11.1-11.4 ns before, 8.3-8.4 after (Release builds inlined both already).
[[gnu::flatten]] Hash128 Xxh3_128(const void* data, size_t len) {
  return internal::Xxh3_128Inline(data, len);
}

// One loop with XXH3 inline and the ASCII check on words the hash is about
// to read: where block's batches called IsValidUtf8 and the strategy's hash
// pointer for every item.
bool Xxh3_128Many(std::span<const std::string_view> items, Hash128* out) {
  uint64_t bits = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string_view item = items[i];
    bits |= internal::NonAsciiBits(item);
    out[i] = internal::Xxh3_128Inline(item.data(), item.size());
  }
  return bits == 0;
}

std::array<uint8_t, 16> Hash128::bytes() const {
  std::array<uint8_t, 16> out{};
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(h1 >> (8 * i));
    out[8 + i] = static_cast<uint8_t>(h2 >> (8 * i));
  }
  return out;
}

std::string Hash128::ToHex() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (uint8_t b : bytes()) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

}  // namespace redbloom
