#include "redis/redis_meta.h"

#include <charconv>
#include <cstdio>

#include "config_codec.h"
#include "kinds/kind_def.h"
#include "redis/redis_client.h"
#include "util/fork_generation.h"

namespace redbloom::internal {

std::string_view MetaFormat(const FilterConfig& c) {
  return c.shards > 1 ? kMetaFormatSharded : kMetaFormatVersion;
}

std::string NewIncarnation() {
  char token[17];
  std::snprintf(token, sizeof(token), "%016llx", static_cast<unsigned long long>(UniqueRandom64()));
  return token;
}

std::vector<std::string> CheckedValues(std::string_view name, const FilterConfig& c,
                                       std::string_view incarnation) {
  return {std::string(MetaFormat(c)),
          std::string(FilterKindName(c.kind)),
          std::string(StrategyName(c.strategy)),
          std::string(EncodingName(c.encoding)),
          std::to_string(c.geometry.bits),
          std::to_string(c.geometry.hashes),
          std::string(name) + " " + std::string(incarnation)};
}

std::pair<std::string_view, std::optional<std::string_view>> SplitIdentity(
    std::string_view checked_name) {
  const size_t space = checked_name.find(' ');
  if (space == std::string_view::npos) return {checked_name, std::nullopt};
  return {checked_name.substr(0, space), checked_name.substr(space + 1)};
}

std::string ShardIdentity(std::string_view name, uint64_t shard, std::string_view token) {
  return std::string(name) + "/shard/" + std::to_string(shard) + "@" + std::string(token);
}

std::vector<std::pair<std::string, std::string>> MetaFields(std::string_view name,
                                                            const FilterConfig& c,
                                                            std::string_view origin,
                                                            uint64_t expires_at_ms) {
  std::vector<std::pair<std::string, std::string>> f = {{"format", std::string(MetaFormat(c))},
                                                        {"name", std::string(name)}};
  for (auto& field : ConfigToFields(c)) f.push_back(std::move(field));
  f.emplace_back("count", "0");
  f.emplace_back("origin", std::string(origin));
  f.emplace_back("expires_at_ms", std::to_string(expires_at_ms));
  // The number of dense parts (a scaling filter's layers); kept up to date by
  // the part-creation script for clients of format 1 that read it.
  f.emplace_back("layers", "1");
  f.emplace_back(std::string(kIncarnationField), NewIncarnation());
  return f;
}

Result<StoredMeta> ParseMeta(const redisReply* r, std::string_view key_display) {
  auto corrupt = [&](const std::string& why) {
    return Status::DataLoss("metadata '" + std::string(key_display) + "': " + why);
  };
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
    return corrupt("not a field/value list");
  }
  FieldMap f;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    f[std::string(ReplyText(r->element[i]))] = std::string(ReplyText(r->element[i + 1]));
  }
  auto get = [&](std::string_view field) -> Result<std::string> {
    auto it = f.find(field);
    if (it == f.end()) return corrupt("field '" + std::string(field) + "' is missing");
    return it->second;
  };
  REDBLOOM_ASSIGN_OR_RETURN(std::string format, get("format"));
  if (format != kMetaFormatVersion && format != kMetaFormatSharded) {
    return corrupt("format version '" + format + "' is not supported (this build reads versions " +
                   std::string(kMetaFormatVersion) + " and " + std::string(kMetaFormatSharded) +
                   ")");
  }
  StoredMeta meta;
  REDBLOOM_ASSIGN_OR_RETURN(meta.name, get("name"));
  REDBLOOM_ASSIGN_OR_RETURN(meta.config,
                            ConfigFromFields(f, "metadata '" + std::string(key_display) + "'"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string count, get("count"));
  if (auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), meta.count);
      count.empty() || ec != std::errc() || end != count.data() + count.size()) {
    return corrupt("field 'count' = '" + count + "' is not a count");
  }
  REDBLOOM_ASSIGN_OR_RETURN(std::string expires, get("expires_at_ms"));
  auto expires_at = ParseUint64(expires);
  if (!expires_at.ok()) return corrupt("field 'expires_at_ms' = '" + expires + "' is not a time");
  meta.expires_at_ms = *expires_at;
  if (auto it = f.find("origin");
      it != f.end() && it->second != "create" && it->second != "attach") {
    return corrupt("origin '" + it->second + "' is not create or attach");
  }
  if (format != MetaFormat(meta.config)) {
    return corrupt("format " + format +
                   " does not fit shards=" + std::to_string(meta.config.shards));
  }
  if (auto it = f.find(kIncarnationField); it != f.end()) meta.incarnation = it->second;
  if (meta.config.shards > 1) {
    REDBLOOM_ASSIGN_OR_RETURN(meta.shard_token, get("shard_token"));
    if (meta.shard_token.empty()) return corrupt("field 'shard_token' is empty");
    REDBLOOM_ASSIGN_OR_RETURN(std::string ready, get("shards_ready"));
    if (ready != "0" && ready != "1") return corrupt("shards_ready '" + ready + "' is not 0 or 1");
    meta.shards_ready = ready == "1";
  }
  if (KindOf(meta.config.kind).dense_parts) {  // it records how many layers it made
    REDBLOOM_ASSIGN_OR_RETURN(std::string layers, get("layers"));
    if (!ParseUint64(layers).ok()) return corrupt("field 'layers' is not a count");
  }
  return meta;
}

Status ExpiryPastStatus(std::string_view server, std::string_view what, uint64_t expires_at_ms,
                        std::optional<uint64_t> server_ms) {
  if (!server_ms.has_value()) {
    return {StatusCode::kUnavailable,
            std::string(what) + " expired on " + std::string(server) +
                " as it was made: the server's clock is past the expiry this client gave it (" +
                std::to_string(expires_at_ms) +
                " ms since the epoch), so this client's clock is behind the server's; keep the "
                "clocks in step (NTP). Nothing was kept",
            StatusReason::kClockBehind};
  }
  return {StatusCode::kUnavailable,
          std::string(server) + "'s clock reads " + std::to_string(*server_ms) +
              " ms since the epoch, past the expiry this client gave " + std::string(what) + " (" +
              std::to_string(expires_at_ms) + "): this client's clock is at least " +
              std::to_string(*server_ms - expires_at_ms) +
              " ms behind the server's, and its keys would expire as they were made; keep the "
              "clocks in step (NTP). Nothing was written",
          StatusReason::kClockBehind};
}

Result<uint64_t> PartOfField(std::string_view name, std::string_view field,
                             std::string_view field_shown, std::string_view parts_key,
                             KeyMode mode) {
  Result<uint64_t> p = ParseUint64(field);
  if (p.ok() && std::to_string(*p) == field) return *p;
  return Status::DataLoss("filter '" + std::string(name) + "': its parts list '" +
                          DisplayKey(parts_key, mode) + "' holds a field '" +
                          std::string(field_shown) +
                          "', which is no part number redbloom writes; a drop removes the "
                          "filter with it, or delete the field (HDEL) to keep the filter");
}

}  // namespace redbloom::internal
