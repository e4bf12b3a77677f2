// The metadata hash of a Redis filter ({NAME}:meta, docs/format.md
// "Metadata"): the config codec's fields plus what only Redis keeps (format
// version, name, item count, origin, expiry, layers). Internal.
#ifndef REDBLOOM_SRC_REDIS_REDIS_META_H_
#define REDBLOOM_SRC_REDIS_REDIS_META_H_

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redbloom/filter_config.h"
#include "redbloom/status.h"
#include "redis/redis_keys.h"

namespace redbloom::internal {

// Format 1: every filter of one key per part. Format 2: a sharded filter,
// whose shards format-1 clients would not know to read; they refuse it.
inline constexpr std::string_view kMetaFormatVersion = "1";
inline constexpr std::string_view kMetaFormatSharded = "2";
std::string_view MetaFormat(const FilterConfig& c);

// The seven fields every cell operation checks (the scripts' meta_state and
// the HMGET of a check), in this order: a filter dropped or re-created with
// other parameters by another client is then an error, never a silent write.
inline constexpr std::string_view kCheckedFields[] = {"format", "kind",   "strategy", "encoding",
                                                      "bits",   "hashes", "name"};
inline constexpr size_t kChecked = std::size(kCheckedFields);

// The filter's incarnation: a random token every create and attach writes,
// read back by the checks with the seven fields. A filter dropped and made
// again with the same bits and hashes but another TTL, window or expansion
// passed the seven (a handle opened before wrote the old TTL on new layers,
// and window slices numbered by the old slice length: acknowledged adds
// lost); its token does not. It travels inside the last checked value,
// "NAME TOKEN" (names hold no space), so that the scripts' ARGV stay as they
// were; a filter made by a build before it has none, read as "". A shard's
// metadata copy is checked by its ShardIdentity (no space), not by a token.
inline constexpr std::string_view kIncarnationField = "incarnation";
std::string NewIncarnation();
std::vector<std::string> CheckedValues(std::string_view name, const FilterConfig& c,
                                       std::string_view incarnation);
// Splits a last checked value into the name and, if it carries one, the
// incarnation expected.
std::pair<std::string_view, std::optional<std::string_view>> SplitIdentity(
    std::string_view checked_name);

// The `name` a shard's metadata copy holds: NAME/shard/S@TOKEN. It contains
// '/', so no filter has it (List skips it), and the token of the filter's
// incarnation, so a shard left from a dropped filter of the same name never
// passes a check of the new one.
std::string ShardIdentity(std::string_view name, uint64_t shard, std::string_view token);

// Every field of a new filter's metadata hash.
std::vector<std::pair<std::string, std::string>> MetaFields(std::string_view name,
                                                            const FilterConfig& c,
                                                            std::string_view origin,
                                                            uint64_t expires_at_ms);

// A decoded metadata hash.
struct StoredMeta {
  std::string name;
  FilterConfig config;
  int64_t count = 0;           // may be briefly negative (a remove before a pending add's count)
  uint64_t expires_at_ms = 0;  // 0: never
  std::string shard_token;     // sharded filters: this incarnation's token
  std::string incarnation;     // kIncarnationField; "" for a filter made before it
  bool shards_ready = true;    // sharded filters: false while a create is placing them
};

// Parses and validates an HGETALL reply. Anything missing, malformed or of an
// unknown version is kDataLoss: redbloom never guesses at bits it cannot
// interpret, since a wrong guess reads as "absent".
Result<StoredMeta> ParseMeta(const redisReply* r, std::string_view key_display);

// A script found the expiry this client gave `what` already past by the
// server's clock (`server_ms`, its TIME): this client's clock is behind the
// server's, and the keys would have been deleted as they were made (a TTL
// create answered "does not exist"; a window slice read as evicted).
// kUnavailable, naming the gap; nothing was written. Without `server_ms`
// (a user the ACL denies TIME), the keys were seen to expire as they were
// made, and are gone.
Status ExpiryPastStatus(std::string_view server, std::string_view what, uint64_t expires_at_ms,
                        std::optional<uint64_t> server_ms);

// A field of a filter's parts list (`parts_key`, FilterKeys::parts) as a
// part number: decimal without a leading zero, as every build writes them.
// Any other ("01", a copy made by hand) is kDataLoss naming the key, the
// field (`field_shown`, printable) and what clears it: readers cannot tell
// which part it means, and take none for it.
Result<uint64_t> PartOfField(std::string_view name, std::string_view field,
                             std::string_view field_shown, std::string_view parts_key,
                             KeyMode mode);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_META_H_
