// What the front ends' create (`redbloom create`, `dedup --capacity`, the
// service's PUT) answers when the filter already exists with another TTL.
#ifndef REDBLOOM_SRC_FRONTEND_EXISTING_TTL_H_
#define REDBLOOM_SRC_FRONTEND_EXISTING_TTL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "redbloom/filter_config.h"
#include "redbloom/status.h"

namespace redbloom::frontend {

// kConflict when `existing` (a filter that BloomFilter::Create opened rather
// than made) has another TTL than `asked`. The library leaves the TTL out of
// a filter's identity, so that readers need not agree on it and merges and
// imports of filters of different TTLs work; but a create answered "exists"
// would let its caller believe the filter expires when asked (an audit's
// PUT of ttl_seconds 9999 on a 3 s filter was answered 200, and the filter
// vanished with the items added to it).
inline Status CheckExistingTtl(std::string_view name, const FilterConfig& existing,
                               const FilterOptions& asked) {
  if (existing.ttl_seconds == asked.ttl_seconds) return Status::Ok();
  auto ttl = [](uint64_t s) {
    return s == 0 ? std::string("no TTL") : "a TTL of " + std::to_string(s) + " s";
  };
  return Status::Conflict("filter '" + std::string(name) + "' exists with " +
                          ttl(existing.ttl_seconds) + " (asked for " + ttl(asked.ttl_seconds) +
                          "); a create does not change it: drop the filter and create it again, "
                          "or rebuild it with the TTL wanted");
}

}  // namespace redbloom::frontend

#endif  // REDBLOOM_SRC_FRONTEND_EXISTING_TTL_H_
