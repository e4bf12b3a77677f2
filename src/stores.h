// Constructors of the concrete stores, and helpers they share. Internal.
#ifndef REDBLOOM_SRC_STORES_H_
#define REDBLOOM_SRC_STORES_H_

#include <memory>
#include <string>
#include <string_view>

#include "redbloom/store.h"

namespace redbloom::internal {

std::unique_ptr<Store> NewMemoryStore();
Result<std::unique_ptr<Store>> NewFileStore(std::string_view dir);
Result<std::unique_ptr<Store>> NewRedisStore(std::string_view url, const StoreOptions& options);

Status NotFoundStatus(std::string_view name);
// kAlreadyExists when `existing` equals `wanted`, else kConflict naming both.
Status ExistsStatus(std::string_view name, const FilterConfig& existing,
                    const FilterConfig& wanted);
// The stored filter changed between ReadConfig and OpenBits.
Status ConfigChangedStatus(std::string_view name);

// Store::Replace takes only filters with one array (kInvalidArgument else).
Status CheckReplaceable(const FilterConfig& replacement);

// Milliseconds since the Unix epoch, the clock of TTLs and window slices.
uint64_t NowMillis();
// When part `part` of a filter may be deleted: a window slice once it has
// left the window (plus one slice of grace), capped by the filter's own
// expiry `filter_expires_at_ms` (0 = never). Scaling layers live as long as
// the filter.
uint64_t PartExpiry(const FilterConfig& config, uint64_t part, uint64_t filter_expires_at_ms);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_STORES_H_
