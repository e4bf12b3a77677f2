// MurmurHash3 x64_128 with seed 0, byte-exact with Guava's
// Hashing.murmur3_128().
//
// Bit positions outlive processes and languages, so this hash and its seed are
// fixed for every strategy that uses them; they are never std::hash or any
// per-process seeded hash.
#ifndef REDBLOOM_HASH_H_
#define REDBLOOM_HASH_H_

#include <array>
#include <cstddef>
#include <cstdint>
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

}  // namespace redbloom

#endif  // REDBLOOM_HASH_H_
