// What a Redisson (3.6.0 and later) RBloomFilter client sends, restated from
// org.redisson.RedissonBloomFilter for tests and benchmarks (Redisson itself
// is not packaged in Debian): its three scripts, with their key and argument
// layout, and its index loop. Every number travels as its decimal string
// (LongCodec / StringCodec).
#ifndef REDBLOOM_TESTS_REDISSON_REPLAY_H_
#define REDBLOOM_TESTS_REDISSON_REPLAY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/strategy.h"

namespace redbloom::testing {

// The config key: suffixName(name, "config").
inline std::string RedissonConfigKey(const std::string& name) {
  return name.find('{') != std::string::npos ? name + ":config" : "{" + name + "}:config";
}

// tryInit. KEYS: config. ARGV: size, hashIterations, expectedInsertions,
// falseProbability. Answers 1 if it wrote the hash, 0 if one exists.
inline constexpr const char* kRedissonTryInit =
    "if redis.call('exists', KEYS[1]) == 1 then return 0 end\n"
    "redis.call('hset', KEYS[1], 'size', ARGV[1])\n"
    "redis.call('hset', KEYS[1], 'hashIterations', ARGV[2])\n"
    "redis.call('hset', KEYS[1], 'expectedInsertions', ARGV[3])\n"
    "redis.call('hset', KEYS[1], 'falseProbability', ARGV[4])\n"
    "return 1\n";

// add(Collection). KEYS: config, bitmap. ARGV: size, hashIterations, indexes
// per object, then every object's indexes. The stored size and
// hashIterations must equal the client's, as strings. Answers how many
// objects turned on at least one bit.
inline constexpr const char* kRedissonAdd =
    "local size = redis.call('hget', KEYS[1], 'size')\n"
    "local iterations = redis.call('hget', KEYS[1], 'hashIterations')\n"
    "assert(size == ARGV[1] and iterations == ARGV[2], 'Bloom filter config has been changed')\n"
    "local unset, added = 0, 0\n"
    "for i = 4, #ARGV do\n"
    "  if redis.call('setbit', KEYS[2], ARGV[i], 1) == 0 then unset = unset + 1 end\n"
    "  if (i - 3) % ARGV[3] == 0 then\n"
    "    if unset > 0 then added = added + 1 end\n"
    "    unset = 0\n"
    "  end\n"
    "end\n"
    "return added\n";

// contains(Collection). KEYS: config, bitmap. ARGV: size, hashIterations,
// number of objects, then every object's indexes. Answers how many objects
// have all their bits set.
inline constexpr const char* kRedissonContains =
    "local size = redis.call('hget', KEYS[1], 'size')\n"
    "local iterations = redis.call('hget', KEYS[1], 'hashIterations')\n"
    "assert(size == ARGV[1] and iterations == ARGV[2], 'Bloom filter config has been changed')\n"
    "local per_object = (#ARGV - 3) / ARGV[3]\n"
    "local unset, absent = 0, 0\n"
    "for i = 4, #ARGV do\n"
    "  if redis.call('getbit', KEYS[2], ARGV[i]) == 0 then unset = unset + 1 end\n"
    "  if (i - 3) % per_object == 0 then\n"
    "    if unset > 0 then absent = absent + 1 end\n"
    "    unset = 0\n"
    "  end\n"
    "end\n"
    "return ARGV[3] - absent\n";

// RedissonBloomFilter.hash(long, long, int, long) over Hash.hash128 of the
// bytes the codec writes, appended to *out.
inline void AppendRedissonIndexes(std::string_view bytes, uint64_t size, uint32_t iterations,
                                  std::vector<uint64_t>* out) {
  const Hash128 h = HashBytes(Strategy::kRedisson, bytes);
  uint64_t hash = h.h1;
  for (uint32_t i = 0; i < iterations; ++i) {
    out->push_back((hash & 0x7fffffffffffffffULL) % size);
    hash += (i % 2 == 0) ? h.h2 : h.h1;  // Java long addition: wraps
  }
}

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_REDISSON_REPLAY_H_
