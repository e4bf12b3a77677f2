// What the front ends' create (the service's PUT) needs beside
// BloomFilter::Create: the config a size check sizes, and the answer for a
// create whose filter another client keeps dropping. Here, not in the
// service, so that it reaches the library's internals through one place.
#ifndef REDBLOOM_SRC_FRONTEND_CREATE_H_
#define REDBLOOM_SRC_FRONTEND_CREATE_H_

#include <optional>
#include <string_view>

#include "redbloom/filter_config.h"
#include "redbloom/status.h"

namespace redbloom::frontend {

// The config a create of `options` makes, for a size limit checked before
// the store is touched. nullopt when nothing would be made: the options of a
// filter an older build stored past today's limits (a TTL or window past
// 100 years), which BloomFilter::Create opens if it exists and refuses if
// not. Otherwise MakeConfig's error.
Result<std::optional<FilterConfig>> ConfigToSize(const FilterOptions& options);

// kUnavailable (retryable, reason kContended), the library's own answer
// when another client dropped the filter each time a create made it,
// `attempts` tries in a row.
Status DroppedAsMade(std::string_view name, int attempts);

}  // namespace redbloom::frontend

#endif  // REDBLOOM_SRC_FRONTEND_CREATE_H_
