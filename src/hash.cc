#include "redbloom/hash.h"

#include <highwayhash/highwayhash_target.h>
#include <highwayhash/instruction_sets.h>

#include <cstring>

namespace redbloom {
namespace {

// Austin Appleby's MurmurHash3_x64_128 (public domain), as Guava ports it:
// 16-byte blocks read little-endian, the tail mixed byte by byte, and the
// length xored in as a (sign-extended) Java int, which is the same for any
// length below 2^31.
constexpr uint64_t kC1 = 0x87c37b91114253d5ULL;
constexpr uint64_t kC2 = 0x4cf5ad432745937fULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Hash128 Murmur3_128(const void* data, size_t len, uint32_t seed) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const size_t nblocks = len / 16;
  uint64_t h1 = seed;
  uint64_t h2 = seed;

  for (size_t i = 0; i < nblocks; ++i) {
    uint64_t k1 = LoadLE64(bytes + i * 16);
    uint64_t k2 = LoadLE64(bytes + i * 16 + 8);
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
  uint64_t k1 = 0;
  uint64_t k2 = 0;
  switch (len & 15) {
    case 15:
      k2 ^= static_cast<uint64_t>(tail[14]) << 48;
      [[fallthrough]];
    case 14:
      k2 ^= static_cast<uint64_t>(tail[13]) << 40;
      [[fallthrough]];
    case 13:
      k2 ^= static_cast<uint64_t>(tail[12]) << 32;
      [[fallthrough]];
    case 12:
      k2 ^= static_cast<uint64_t>(tail[11]) << 24;
      [[fallthrough]];
    case 11:
      k2 ^= static_cast<uint64_t>(tail[10]) << 16;
      [[fallthrough]];
    case 10:
      k2 ^= static_cast<uint64_t>(tail[9]) << 8;
      [[fallthrough]];
    case 9:
      k2 ^= static_cast<uint64_t>(tail[8]);
      k2 *= kC2;
      k2 = Rotl(k2, 33);
      k2 *= kC1;
      h2 ^= k2;
      [[fallthrough]];
    case 8:
      k1 ^= static_cast<uint64_t>(tail[7]) << 56;
      [[fallthrough]];
    case 7:
      k1 ^= static_cast<uint64_t>(tail[6]) << 48;
      [[fallthrough]];
    case 6:
      k1 ^= static_cast<uint64_t>(tail[5]) << 40;
      [[fallthrough]];
    case 5:
      k1 ^= static_cast<uint64_t>(tail[4]) << 32;
      [[fallthrough]];
    case 4:
      k1 ^= static_cast<uint64_t>(tail[3]) << 24;
      [[fallthrough]];
    case 3:
      k1 ^= static_cast<uint64_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      k1 ^= static_cast<uint64_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      k1 ^= static_cast<uint64_t>(tail[0]);
      k1 *= kC1;
      k1 = Rotl(k1, 31);
      k1 *= kC2;
      h1 ^= k1;
      break;
    default:
      break;
  }

  // Guava xors the length as a Java int; sign extension only matters past 2 GiB.
  const uint64_t length = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(len)));
  h1 ^= length;
  h2 ^= length;
  h1 += h2;
  h2 += h1;
  h1 = Fmix64(h1);
  h2 = Fmix64(h2);
  h1 += h2;
  h2 += h1;
  return Hash128{h1, h2};
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
