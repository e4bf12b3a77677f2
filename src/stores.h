// Constructors of the concrete stores (registered by URL scheme in
// src/store_table.cc), and helpers they share. Internal.
#ifndef REDBLOOM_SRC_STORES_H_
#define REDBLOOM_SRC_STORES_H_

#include <memory>
#include <string>
#include <string_view>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"

namespace redbloom::internal {

// Each takes the whole URL, scheme included.
Result<std::unique_ptr<Store>> NewMemoryStore(std::string_view url, const StoreOptions& options);
Result<std::unique_ptr<Store>> NewFileStore(std::string_view url, const StoreOptions& options);
Result<std::unique_ptr<Store>> NewRedisStore(std::string_view url, const StoreOptions& options);

// ValidateFilterName, or a rebuild's TemporaryName of a valid name.
Status ValidateStoredName(std::string_view name);

Status NotFoundStatus(std::string_view name);
// kAlreadyExists when `existing` equals `wanted`, else kConflict naming both.
Status ExistsStatus(std::string_view name, const FilterConfig& existing,
                    const FilterConfig& wanted);
// The stored filter changed between ReadConfig and OpenBits.
Status ConfigChangedStatus(std::string_view name);
// A sharded filter whose create has not placed every shard (kUnavailable):
// a create with its parameters finishes it, which IsBeingCreated tells
// callers that would otherwise make it (import, merge).
Status BeingCreatedStatus(std::string_view name);
bool IsBeingCreated(const Status& s);

// Opens a filter after a create; `made` when this call made it. One made
// and then with no memory to open (resource_exhausted: file: could not map
// it) is dropped again, since left behind it would answer "absent" to every
// other reader; a passing failure (a timeout, a failover) drops nothing, as
// concurrent clients may use the filter already. The error says which.
Result<std::unique_ptr<BloomFilter>> OpenMadeFilter(Store& store, std::string_view name, bool made);

// Stores that keep a filter in one place (mem:, file:) refuse shards.
Status CheckUnsharded(const FilterConfig& config, std::string_view store_url);

// Store::Replace takes only filters with one array, and replaces only those
// (kInvalidArgument else): the other parts of a sharded, scaling or window
// filter would outlive the swap.
Status CheckReplaceable(const FilterConfig& config);

// CheckReplaceable for the config read under the name being replaced. A
// name whose config cannot be read (a damaged one: a rebuild is how one is
// mended) may be replaced; one that holds no filter is kNotFound
// (DroppedWhileRebuiltStatus).
Status CheckReplaced(std::string_view name, const Result<FilterConfig>& old);
// kNotFound for a filter dropped while a rebuild of it ran (Store::Replace).
Status DroppedWhileRebuiltStatus(std::string_view name);
// kUnavailable (retryable, reason kContended) for a create whose filter
// another client dropped each time it was made, `attempts` tries in a row
// (BloomFilter::Create; redbloomd's PUT).
Status DroppedAsMadeStatus(std::string_view name, int attempts);

// When a filter created now expires: 0 (never) without a TTL.
uint64_t FilterExpiry(const Clock& clock, const FilterConfig& config);
// A part's expiry as asked (0: with the filter), capped by the filter's own
// (0: never).
uint64_t CapExpiry(uint64_t part_expires_at_ms, uint64_t filter_expires_at_ms);
// True once `expires_at_ms` (0: never) has passed.
inline bool Expired(const Clock& clock, uint64_t expires_at_ms) {
  return expires_at_ms != 0 && clock.NowMillis() >= expires_at_ms;
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_STORES_H_
