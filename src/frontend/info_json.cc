#include "frontend/info_json.h"

#include <cstdint>

namespace redbloom::frontend {

nlohmann::ordered_json InfoJson(const FilterInfo& info, const std::string& store_url) {
  const FilterConfig& c = info.config;
  nlohmann::ordered_json j;
  j["name"] = info.name;
  j["store"] = store_url;
  j["kind"] = std::string(FilterKindName(c.kind));
  j["strategy"] = std::string(StrategyName(c.strategy));
  j["encoding"] = std::string(EncodingName(c.encoding));
  j["capacity"] = c.capacity;
  j["error_rate"] = c.error_rate;
  j["bits"] = c.geometry.bits;
  j["hashes"] = c.geometry.hashes;
  j["capped"] = c.geometry.capped;
  // "given": bits and hashes came with the bits (a Guava file), and capacity
  // and error_rate are derived from them; "derived": the other way round.
  j["geometry"] = c.geometry_given ? "given" : "derived";
  if (c.kind == FilterKind::kScaling) j["expansion"] = c.expansion;
  if (c.kind == FilterKind::kWindow) {
    j["window_ms"] = c.window_millis;
    j["slices"] = c.slices;
  }
  j["ttl_seconds"] = c.ttl_seconds;
  j["shards"] = c.shards;
  j["parts"] = info.parts;
  // "bits" and "hashes" size one part (a scaling filter's first layer, one
  // window slice); this counts the bits of all live parts, of which bits_set
  // and fill_ratio speak.
  if (!c.one_array()) j["total_bits"] = info.bits;
  j["memory_bytes"] = info.memory_bytes;
  j["bits_set"] = info.bits_set;
  // "sampled": parts over 64 MiB are estimated from 4 MiB of their cells, so
  // that info never reads a whole large filter.
  j["bits_set_method"] = info.bits_set_exact ? "exact" : "sampled";
  j["items_added"] = info.items_added;
  if (info.approximate_items == UINT64_MAX) {
    j["approximate_items"] = nullptr;  // every bit set: the estimate is unbounded
  } else {
    j["approximate_items"] = info.approximate_items;
  }
  j["fill_ratio"] = info.fill_ratio;
  j["current_fpp"] = info.current_fpp;
  return j;
}

}  // namespace redbloom::frontend
