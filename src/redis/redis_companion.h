// Filters whose strategy's Java side keeps a hash beside the bitmap
// (Redisson's {NAME}:config; strategy_def.h, CompanionHash): what the Redis
// store and its bit store do for them beyond the usual keys. The hash is
// written at create exactly as the Java side's own init writes it, checked
// at attach, compared (size, hashIterations) by every cell operation, and
// expired, replaced and dropped with the filter. Internal.
#ifndef REDBLOOM_SRC_REDIS_REDIS_COMPANION_H_
#define REDBLOOM_SRC_REDIS_REDIS_COMPANION_H_

#include <hiredis/hiredis.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redbloom/filter_config.h"
#include "redbloom/status.h"
#include "redis/redis_bit_store.h"
#include "redis/redis_client.h"
#include "redis/redis_keys.h"
#include "strategy/strategy_def.h"

namespace redbloom::internal {

struct CompanionHash;

// The companion hash of a filter with this config's strategy, or nullptr.
const CompanionHash* CompanionOf(const FilterConfig& c);
// Its key, or "" for a filter without one.
std::string CompanionKey(std::string_view name, KeyMode mode, const FilterConfig& c);

// kInvalidArgument unless a filter with a companion can live on Redis under
// this name: a plain filter (the Java side reads one bitmap of bits), with
// plain keys, whose companion key is in its bitmap's cluster slot.
Status CheckCompanionPlacement(std::string_view name, KeyMode mode, const FilterConfig& c);

// The companion hash a Java side keeps for `name` (a Redisson
// RBloomFilter's config: size and hashIterations), of the first strategy
// that keeps one and whose hash is there; nullopt when none is, or for
// keys=jdk (a Java side names its keys in plain UTF-8). A hash that cannot be
// read (an ACL's key patterns) is none.
struct FoundCompanion {
  const StrategyDef* strategy = nullptr;
  std::string key;
  std::string size;
  std::string iterations;
};
Result<std::optional<FoundCompanion>> FindCompanionHash(const RedisShared& shared,
                                                        std::string_view name);

// kConflict when `name` is already the filter of a strategy that keeps a
// companion (a Redisson RBloomFilter: its config hash holds size and
// hashIterations) and `c`'s strategy keeps none: created or attached so,
// the bitmap would be hashed another way (every Java item absent, Java
// reading redbloom's bits as noise). `doing` is "create" or "attach". A
// hash that cannot be read (an ACL's key patterns) is no such filter here.
Status CheckNoForeignCompanion(const RedisShared& shared, std::string_view name,
                               const FilterConfig& c, std::string_view doing);

// Cell operations read the companion back with HMGET key size hashIterations
// (two replies) and check it with this: kConflict naming what the hash holds
// when it is missing, of another type or of other parameters (a Java client
// deleted the filter, or re-created it with other parameters).
Status CheckCompanionReply(const redisReply* r, std::string_view name, std::string_view key_display,
                           const FilterConfig& c);
void AppendCompanionRead(CommandBuffer* cmd, const std::string& companion_key);
// What a guarded script's REDBLOOM_COMPANION error means (the hash no longer
// holds the filter's size and hashIterations).
Status CompanionChangedStatus(std::string_view name, std::string_view key_display,
                              const FilterConfig& c);

// The create or attach EVAL of such a filter (kCreateCompanion,
// kAttachCompanion), with the metadata's fields; the reply has the codes of
// kCreate / kAttach, plus 8, 9 and 10 (CompanionCodeStatus).
void BeginCompanionEval(CommandBuffer* cmd, bool create, const FilterKeys& keys,
                        const std::string& companion_key, const FilterConfig& config,
                        uint64_t bytes, uint64_t expires_at,
                        const std::vector<std::pair<std::string, std::string>>& meta_fields);
Status CompanionCodeStatus(const redisReply* r, std::string_view name, std::string_view key_display,
                           const FilterConfig& config);

// The capacity and error rate a filter's companion records, as options of
// `strategy` (attach without explicit parameters). kNotFound without the
// hash, kDataLoss when it is malformed, kInvalidArgument for a strategy
// whose Java side keeps none.
Result<FilterOptions> ReadCompanionOptions(const RedisShared& shared, std::string_view name,
                                           Strategy strategy);

// The companion key of the filter stored under `name` now, from its
// metadata's strategy: "" when it has none, or no metadata.
Result<std::string> StoredCompanionKey(Connection& c, KeyMode mode, std::string_view name,
                                       const FilterKeys& keys);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_COMPANION_H_
