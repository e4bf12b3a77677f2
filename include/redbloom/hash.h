// The hash functions strategies choose from:
//   Murmur3_128     MurmurHash3 x64_128 with seed 0, byte-exact with Guava's
//                   Hashing.murmur3_128() (strategies seed and guava64)
//   HighwayHash128  Google's HighwayHash-128 under a 256-bit key (strategy
//                   redisson, with Redisson's fixed key)
//   Xxh3_128        XXH3-128 with seed 0 (xxHash 0.8, Debian's libxxhash-dev),
//                   for the `block` strategy, which no Java program shares:
//                   about 2 ns for a 12-byte item here against murmur3's 5 ns.
//
// Bit positions outlive processes and languages, so this hash and its seed are
// fixed for every strategy that uses them; they are never std::hash or any
// per-process seeded hash.
#ifndef REDBLOOM_HASH_H_
#define REDBLOOM_HASH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace redbloom {

// The 128-bit result as Guava's HashCode sees it: bytes() is h1 then h2, each
// little-endian, and Guava's asLong() is h1.
struct Hash128 {
  uint64_t h1 = 0;
  uint64_t h2 = 0;

  uint64_t as_long() const { return h1; }
  std::array<uint8_t, 16> bytes() const;
  // Lower-case hex of bytes(), the same text as Guava's HashCode.toString().
  std::string ToHex() const;

  friend bool operator==(const Hash128&, const Hash128&) = default;
};

Hash128 Murmur3_128(const void* data, size_t len, uint32_t seed = 0);
inline Hash128 Murmur3_128(std::string_view bytes, uint32_t seed = 0) {
  return Murmur3_128(bytes.data(), bytes.size(), seed);
}

// Murmur3_128(items[i]) (seed 0) into out[i] for every item, the same
// results as one at a time. On a CPU with AVX-512 (F and DQ) the mixing and
// finalisation run eight items at once. Returns whether every byte of every
// item is below 0x80 (ASCII, and so valid UTF-8), which it learns from the
// words it reads anyway.
bool Murmur3_128Many(std::span<const std::string_view> items, Hash128* out);

// HighwayHash-128 (github.com/google/highwayhash, through Debian's
// libhighwayhash) of `bytes` under `key`: h1 and h2 are the result's two
// 64-bit words in order, which is how Redisson's Hash.hash128 returns them.
// The implementation is the fastest this CPU runs (AVX2, SSE4.1 or
// portable); all give the same result.
using HighwayKey = std::array<uint64_t, 4>;
Hash128 HighwayHash128(std::string_view bytes, const HighwayKey& key);

// XXH3_128bits (seed 0): h1 is the low 64 bits, h2 the high 64. Its output
// is frozen by xxHash's specification since 0.8.0, so bits set with it stay
// valid across library versions.
Hash128 Xxh3_128(const void* data, size_t len);
inline Hash128 Xxh3_128(std::string_view bytes) { return Xxh3_128(bytes.data(), bytes.size()); }

// Xxh3_128(items[i]) into out[i] for every item, and whether every byte of
// every item is below 0x80, as Murmur3_128Many answers it.
bool Xxh3_128Many(std::span<const std::string_view> items, Hash128* out);

}  // namespace redbloom

#endif  // REDBLOOM_HASH_H_
