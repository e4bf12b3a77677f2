// The JSON form of a filter's info, shared by `redbloom info --json` and the
// service's GET /v1/filters/{name}, so the two can never drift apart.
// Internal to the front ends (the library's public headers carry no JSON).
#ifndef REDBLOOM_SRC_FRONTEND_INFO_JSON_H_
#define REDBLOOM_SRC_FRONTEND_INFO_JSON_H_

#include <nlohmann/json.hpp>
#include <string>

#include "redbloom/bloom_filter.h"

namespace redbloom::frontend {

// Fields in a fixed order: name, store, kind, strategy, encoding, capacity,
// error_rate, bits, hashes, capped, [expansion], [window_ms, slices],
// ttl_seconds, shards, parts, [total_bits], memory_bytes, bits_set, bits_set_method ("exact" or
// "sampled"), items_added, approximate_items (null when every bit is set), fill_ratio,
// current_fpp.
nlohmann::ordered_json InfoJson(const FilterInfo& info, const std::string& store_url);

}  // namespace redbloom::frontend

#endif  // REDBLOOM_SRC_FRONTEND_INFO_JSON_H_
