#include "redbloom/store.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "stores.h"
#include "util/utf8.h"

namespace redbloom {

namespace {

// Unicode's White_Space characters past ASCII, and the C1 controls (U+0080
// to U+009F, U+0085 among them): what "no whitespace or control characters"
// means in UTF-8. U+00A0 and U+2003 look like spaces in a key list or a log.
bool IsWideSpaceOrControl(char32_t c) {
  return (c >= 0x80 && c <= 0xA0) || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Whether valid UTF-8 `s` has a code point IsWideSpaceOrControl names.
bool HasWideSpaceOrControl(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = internal::Utf8SequenceLength(s, i);
    const auto lead = static_cast<unsigned char>(s[i]);
    char32_t c = len == 1 ? lead : lead & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if (IsWideSpaceOrControl(c)) return true;
    i += len;
  }
  return false;
}

}  // namespace

Status ValidateFilterName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("filter name is empty");
  if (name.size() > kMaxNameBytes) {
    return Status::InvalidArgument("filter name is longer than " + std::to_string(kMaxNameBytes) +
                                   " bytes");
  }
  if (name.front() == '.') {
    return Status::InvalidArgument("filter name '" + std::string(name) +
                                   "' must not start with '.'");
  }
  for (unsigned char c : name) {
    if (c <= 0x20 || c == 0x7f || c == '/' || c == '\\') {
      return Status::InvalidArgument(
          "filter name may not contain whitespace, control characters, '/' or '\\'");
    }
  }
  if (!IsValidUtf8(name)) return Status::InvalidArgument("filter name is not valid UTF-8");
  if (HasWideSpaceOrControl(name)) {
    return Status::InvalidArgument(
        "filter name may not contain whitespace or control characters (U+00A0, U+2003, U+0085 "
        "and their kind included)");
  }
  // "{rbN}.rebuild~X" is the Redis key of X's rebuild temporary (tagged into
  // X's slot): a filter of that name took its keys, and every rebuild of X
  // was refused as "another rebuild is running", --force then a conflict.
  if (const size_t close = name.find('}'); name.starts_with("{rb") &&
                                           close != std::string_view::npos &&
                                           name.substr(close + 1).starts_with(".rebuild~")) {
    return Status::InvalidArgument("filter name '" + std::string(name) +
                                   "' is reserved: it is the Redis key of a rebuild's temporary "
                                   "filter");
  }
  constexpr std::string_view kMeta = ":meta";
  if (name.size() >= kMeta.size() && name.substr(name.size() - kMeta.size()) == kMeta) {
    return Status::InvalidArgument("filter name may not end in ':meta' (reserved for metadata)");
  }
  return Status::Ok();
}

std::string TemporaryName(std::string_view name) { return ".rebuild~" + std::string(name); }

namespace internal {

Status ValidateStoredName(std::string_view name) {
  constexpr std::string_view kTemporary = ".rebuild~";
  if (name.starts_with(kTemporary) && ValidateFilterName(name.substr(kTemporary.size())).ok()) {
    return Status::Ok();
  }
  return ValidateFilterName(name);
}

}  // namespace internal

Status BitStore::Remove(std::span<PartBatch>) {
  return Status::Unimplemented("this store cannot remove items");
}

Result<uint64_t> BitStore::ItemCount(uint64_t part) {
  REDBLOOM_ASSIGN_OR_RETURN(FilterStats stats, Stats(part));
  return stats.items_added;
}

Status Store::Replace(std::string_view name, std::string_view) {
  return Status::Unimplemented("store " + url() + " cannot replace filter '" + std::string(name) +
                               "' atomically");
}

Status Store::Attach(std::string_view name, const FilterConfig& /*config*/) {
  return Status::Unimplemented("store " + url() + " cannot attach foreign bits to '" +
                               std::string(name) + "'; use create");
}

Result<FilterOptions> Store::ReadForeignOptions(std::string_view name, Strategy /*strategy*/) {
  return Status::Unimplemented("store " + url() + " holds no filters written by other programs ('" +
                               std::string(name) + "'): create it instead");
}

std::string DefaultStoreUrl() {
  const char* env = std::getenv("REDBLOOM_STORE");
  if (env != nullptr && *env != '\0') return env;
  return "file:./redbloom-data";
}

namespace internal {

Status NotFoundStatus(std::string_view name) {
  return Status::NotFound("filter '" + std::string(name) + "' does not exist");
}

Status ExistsStatus(std::string_view name, const FilterConfig& existing,
                    const FilterConfig& wanted) {
  if (existing.SameFilterAs(wanted)) {
    return Status::AlreadyExists("filter '" + std::string(name) +
                                 "' already exists with the same parameters");
  }
  return Status::Conflict("filter '" + std::string(name) + "' exists with other parameters: " +
                          existing.ToString() + " (asked for " + wanted.ToString() + ")");
}

uint64_t FilterExpiry(const Clock& clock, const FilterConfig& config) {
  return config.ttl_seconds == 0 ? 0 : clock.NowMillis() + config.ttl_seconds * 1000;
}

uint64_t CapExpiry(uint64_t part_expires_at_ms, uint64_t filter_expires_at_ms) {
  if (part_expires_at_ms == 0) return filter_expires_at_ms;
  if (filter_expires_at_ms == 0) return part_expires_at_ms;
  return std::min(part_expires_at_ms, filter_expires_at_ms);
}

Status CheckUnsharded(const FilterConfig& config, std::string_view store_url) {
  if (config.shards == 1) return Status::Ok();
  return Status::InvalidArgument(
      "shards spread one filter over several Redis keys (and cluster nodes); store " +
      std::string(store_url) +
      " keeps a filter in one place: create it with shards 1 (a sharded filter's dump restores "
      "into a Redis store only)");
}

Status CheckReplaceable(const FilterConfig& config) {
  if (config.one_array()) return Status::Ok();
  if (config.shards > 1) {
    return Status::InvalidArgument(
        "a sharded filter cannot be rebuilt: its shards live in several cluster slots, which no "
        "one command can swap at once");
  }
  return Status::InvalidArgument("only plain and counting filters can be replaced, not a " +
                                 std::string(FilterKindName(config.kind)) + " filter");
}

Status CheckReplaced(std::string_view name, const Result<FilterConfig>& old) {
  if (old.status().code() == StatusCode::kNotFound) return DroppedWhileRebuiltStatus(name);
  return old.ok() ? CheckReplaceable(*old) : Status::Ok();
}

Status DroppedWhileRebuiltStatus(std::string_view name) {
  return Status::NotFound("filter '" + std::string(name) +
                          "' was dropped while it was being rebuilt; nothing was swapped in");
}

Status DroppedAsMadeStatus(std::string_view name, int attempts) {
  return Status(StatusCode::kUnavailable,
                "filter '" + std::string(name) + "' was dropped by another client each time this " +
                    "create made it (" + std::to_string(attempts) + " tries); create it again",
                StatusReason::kContended);
}

Status ConfigChangedStatus(std::string_view name) {
  return Status::Conflict("filter '" + std::string(name) +
                          "' was rebuilt with other parameters, or dropped and re-created");
}

Status BeingCreatedStatus(std::string_view name) {
  return {StatusCode::kUnavailable,
          "sharded filter '" + std::string(name) +
              "' is being created: its shards are not all in place yet (if no create is running, "
              "one was interrupted: repeat it, with the same parameters, to finish the filter)",
          StatusReason::kBeingCreated};
}

bool IsBeingCreated(const Status& s) { return s.reason() == StatusReason::kBeingCreated; }

}  // namespace internal
}  // namespace redbloom
