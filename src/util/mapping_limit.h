// How a store says the process ran out of memory mappings
// (vm.max_map_count): the file store's MapError writes these words, and
// redbloomd, which can let filter handles go to free mappings, looks for
// them. One definition, so the two cannot drift apart.
#ifndef REDBLOOM_UTIL_MAPPING_LIMIT_H_
#define REDBLOOM_UTIL_MAPPING_LIMIT_H_

#include <string_view>

#include "redbloom/status.h"

namespace redbloom::internal {

inline constexpr std::string_view kMappingLimitWords = " memory mappings vm.max_map_count allows (";

inline bool AtMappingLimit(const Status& s) {
  return s.code() == StatusCode::kResourceExhausted &&
         s.message().find(kMappingLimitWords) != std::string_view::npos;
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_MAPPING_LIMIT_H_
