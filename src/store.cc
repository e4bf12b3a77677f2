#include "redbloom/store.h"

#include <chrono>
#include <cstdlib>

#include "stores.h"

namespace redbloom {

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
  constexpr std::string_view kMeta = ":meta";
  if (name.size() >= kMeta.size() && name.substr(name.size() - kMeta.size()) == kMeta) {
    return Status::InvalidArgument("filter name may not end in ':meta' (reserved for metadata)");
  }
  return Status::Ok();
}

Status BitStore::Remove(const uint64_t* /*offsets*/, size_t /*items*/, uint32_t /*k*/,
                        uint8_t* /*removed*/) {
  return Status::Unimplemented("this store cannot remove items");
}

Result<uint64_t> BitStore::ItemCount() {
  REDBLOOM_ASSIGN_OR_RETURN(FilterStats stats, Stats());
  return stats.items_added;
}

Status BitStore::ReadBits(uint64_t /*offset*/, size_t /*len*/, std::string* /*out*/) {
  return Status::Unimplemented("this store cannot read bits in bulk");
}

Status BitStore::OrBits(std::string_view /*bitmap*/, uint64_t /*new_items*/) {
  return Status::Unimplemented("this store cannot write bits in bulk");
}

Result<std::unique_ptr<BitStore>> Store::OpenPart(std::string_view name, const FilterConfig&,
                                                  uint64_t, bool) {
  return Status::Unimplemented("store " + url() + " does not support scaling or window filters ('" +
                               std::string(name) + "')");
}

Result<std::vector<uint64_t>> Store::ListParts(std::string_view name, const FilterConfig&) {
  return Status::Unimplemented("store " + url() + " does not support scaling or window filters ('" +
                               std::string(name) + "')");
}

Result<uint64_t> Store::Layers(std::string_view name, const FilterConfig&) {
  return Status::Unimplemented("store " + url() + " does not support scaling filters ('" +
                               std::string(name) + "')");
}

Result<uint64_t> Store::GrowLayers(std::string_view name, const FilterConfig&, uint64_t) {
  return Status::Unimplemented("store " + url() + " does not support scaling filters ('" +
                               std::string(name) + "')");
}

Status Store::Replace(std::string_view name, std::string_view) {
  return Status::Unimplemented("store " + url() + " cannot replace filter '" + std::string(name) +
                               "' atomically");
}

Status Store::Attach(std::string_view name, const FilterConfig& /*config*/) {
  return Status::Unimplemented("store " + url() + " cannot attach foreign bits to '" +
                               std::string(name) + "'; use create");
}

Result<std::unique_ptr<Store>> Store::Open(std::string_view url, const StoreOptions& options) {
  if (url == "mem:") return internal::NewMemoryStore();
  if (url.starts_with("file:")) {
    std::string_view path = url.substr(5);
    if (path.starts_with("//")) path.remove_prefix(2);  // file:///abs/dir
    if (path.empty()) return Status::InvalidArgument("store URL 'file:' needs a directory");
    return internal::NewFileStore(path);
  }
  if (url.starts_with("redis://")) return internal::NewRedisStore(url, options);
  return Status::InvalidArgument("unknown store URL '" + std::string(url) +
                                 "' (expected mem:, file:DIR or redis://host[:port][/db])");
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

uint64_t NowMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

uint64_t PartExpiry(const FilterConfig& config, uint64_t part, uint64_t filter_expires_at_ms) {
  uint64_t at = 0;
  if (config.kind == FilterKind::kWindow) at = (part + config.slices + 1) * config.slice_millis();
  if (filter_expires_at_ms != 0 && (at == 0 || filter_expires_at_ms < at)) {
    at = filter_expires_at_ms;
  }
  return at;
}

Status CheckReplaceable(const FilterConfig& replacement) {
  if (replacement.one_array()) return Status::Ok();
  return Status::InvalidArgument("only plain and counting filters can be replaced, not a " +
                                 std::string(FilterKindName(replacement.kind)) + " filter");
}

Status ConfigChangedStatus(std::string_view name) {
  return Status::Conflict("filter '" + std::string(name) +
                          "' was dropped or re-created with other parameters");
}

}  // namespace internal
}  // namespace redbloom
