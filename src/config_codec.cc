#include "config_codec.h"

#include <algorithm>

namespace redbloom::internal {

std::vector<ConfigField> ConfigToFields(const FilterConfig& c, bool relevant_only) {
  std::vector<ConfigField> f = {
      {"kind", std::string(FilterKindName(c.kind))},
      {"strategy", std::string(StrategyName(c.strategy))},
      {"encoding", std::string(EncodingName(c.encoding))},
      {"capacity", std::to_string(c.capacity)},
      {"error_rate", FormatDouble(c.error_rate)},
      {"bits", std::to_string(c.geometry.bits)},
      {"hashes", std::to_string(c.geometry.hashes)},
      {"capped", c.geometry.capped ? "1" : "0"},
      {"expansion", FormatDouble(c.expansion)},
      {"window_ms", std::to_string(c.window_millis)},
      {"slices", std::to_string(c.slices)},
      {"ttl_seconds", std::to_string(c.ttl_seconds)},
      {"shards", std::to_string(c.shards)},
  };
  // Only when given: absent means derived from capacity and error rate (every
  // config before given geometries existed). Older readers ignore the field,
  // derive another geometry from the derived n and p, and refuse the filter.
  if (c.geometry_given) f.emplace_back("geometry", "given");
  if (relevant_only) {
    std::erase_if(f, [](const ConfigField& x) {
      return (x.second == "0" &&
              (x.first == "capped" || x.first == "expansion" || x.first == "window_ms" ||
               x.first == "slices" || x.first == "ttl_seconds")) ||
             (x.first == "shards" && x.second == "1");
    });
  }
  return f;
}

Result<FilterConfig> ConfigFromFields(const FieldMap& f, std::string_view where) {
  auto corrupt = [&](const std::string& why) {
    return Status::DataLoss(std::string(where) + ": " + why);
  };
  auto text = [&](std::string_view field) -> Result<std::string> {
    auto it = f.find(field);
    if (it == f.end()) return corrupt("field '" + std::string(field) + "' is missing");
    return it->second;
  };
  // Fields a kind does not use may be missing; they read as "0".
  auto optional = [&](std::string_view field) -> std::string {
    auto it = f.find(field);
    return it == f.end() ? "0" : it->second;
  };
  auto count = [&](std::string_view field, const std::string& value) -> Result<uint64_t> {
    Result<uint64_t> v = ParseUint64(value);
    if (!v.ok() || std::to_string(*v) != value) {
      return corrupt("field '" + std::string(field) + "' = '" + value + "' is not a count");
    }
    return *v;
  };
  auto real = [&](std::string_view field, const std::string& value) -> Result<double> {
    Result<double> v = ParseDouble(value);
    if (!v.ok()) {
      return corrupt("field '" + std::string(field) + "' = '" + value + "' is not a number");
    }
    return *v;
  };

  FilterOptions o;
  REDBLOOM_ASSIGN_OR_RETURN(std::string kind, text("kind"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string strategy, text("strategy"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string encoding, text("encoding"));
  auto parsed_kind = ParseFilterKind(kind);
  auto parsed_strategy = ParseStrategy(strategy);
  auto parsed_encoding = ParseEncoding(encoding);
  if (!parsed_kind.ok()) return corrupt("unknown kind '" + kind + "'");
  if (!parsed_strategy.ok()) return corrupt("unknown strategy '" + strategy + "'");
  if (!parsed_encoding.ok()) return corrupt("unknown encoding '" + encoding + "'");
  o.kind = *parsed_kind;
  o.strategy = *parsed_strategy;
  o.encoding = *parsed_encoding;
  REDBLOOM_ASSIGN_OR_RETURN(std::string capacity, text("capacity"));
  REDBLOOM_ASSIGN_OR_RETURN(o.capacity, count("capacity", capacity));
  REDBLOOM_ASSIGN_OR_RETURN(std::string error_rate, text("error_rate"));
  REDBLOOM_ASSIGN_OR_RETURN(o.error_rate, real("error_rate", error_rate));
  REDBLOOM_ASSIGN_OR_RETURN(std::string bits_text, text("bits"));
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t bits, count("bits", bits_text));
  REDBLOOM_ASSIGN_OR_RETURN(std::string hashes_text, text("hashes"));
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t hashes, count("hashes", hashes_text));
  const std::string capped = optional("capped");
  if (capped != "0" && capped != "1") return corrupt("capped '" + capped + "' is not 0 or 1");
  REDBLOOM_ASSIGN_OR_RETURN(double expansion, real("expansion", optional("expansion")));
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t window_ms, count("window_ms", optional("window_ms")));
  REDBLOOM_ASSIGN_OR_RETURN(uint64_t slices, count("slices", optional("slices")));
  REDBLOOM_ASSIGN_OR_RETURN(o.ttl_seconds, count("ttl_seconds", optional("ttl_seconds")));
  // Written since sharding exists; older configs are one shard.
  const auto shards_field = f.find("shards");
  REDBLOOM_ASSIGN_OR_RETURN(
      uint64_t shards,
      count("shards", shards_field == f.end() ? std::string("1") : shards_field->second));
  if (shards < 1 || shards > kMaxShards) {
    return corrupt("shards " + std::to_string(shards) + " is out of range");
  }
  o.shards = static_cast<uint32_t>(shards);
  if (slices > kMaxSlices) return corrupt("slices " + std::to_string(slices) + " is too many");
  bool geometry_given = false;
  if (auto it = f.find("geometry"); it != f.end()) {
    if (it->second != "given" && it->second != "derived") {
      return corrupt("geometry '" + it->second + "' is not given or derived");
    }
    geometry_given = it->second == "given";
  }
  const uint64_t stored_capacity = o.capacity;
  const double stored_error_rate = o.error_rate;
  if (geometry_given) {
    if (hashes > kMaxHashes) return corrupt("hashes " + hashes_text + " is too many");
    o.bits = bits;
    o.hashes = static_cast<uint32_t>(hashes);
    o.capacity = 0;
    o.error_rate = 0;
  }
  // Options carry the default expansion for kinds that do not use it; the
  // stored form says 0 (or nothing).
  if (expansion != 0) o.expansion = expansion;
  o.window_millis = window_ms;
  o.slices = static_cast<uint32_t>(slices);
  Result<FilterConfig> config = MakeStoredConfig(o);
  if (!config.ok()) return corrupt("invalid parameters: " + config.status().message());
  if (geometry_given &&
      (config->capacity != stored_capacity || config->error_rate != stored_error_rate)) {
    return corrupt(
        "capacity and error_rate do not match the ones the given bits and hashes "
        "derive");
  }
  if (o.kind != FilterKind::kScaling && expansion != 0) {
    return corrupt("expansion is set on a " + kind + " filter");
  }
  // The geometry is derived data: recomputing it catches a config written by
  // a build whose sizing differs from ours, or edited by hand.
  const Geometry& g = config->geometry;
  if (g.bits != bits || g.hashes != hashes || g.capped != (capped == "1")) {
    return corrupt("stored geometry (bits=" + bits_text + " hashes=" + hashes_text +
                   ") does not match its capacity and error rate (bits=" + std::to_string(g.bits) +
                   " hashes=" + std::to_string(g.hashes) + ")");
  }
  return *config;
}

Result<FilterConfig> MakeStoredConfig(const FilterOptions& options) {
  // Up to here every expiry stays far inside Redis's and int64's range.
  constexpr uint64_t kMaxStoredSeconds = uint64_t{10000} * 365 * 86400;
  const bool past_limits =
      options.ttl_seconds > kMaxTtlSeconds ||
      (options.kind == FilterKind::kWindow && options.window_millis > kMaxTtlSeconds * 1000);
  if (!past_limits) return MakeConfig(options);
  if (options.ttl_seconds > kMaxStoredSeconds || options.window_millis / 1000 > kMaxStoredSeconds) {
    return Status::InvalidArgument("ttl_seconds " + std::to_string(options.ttl_seconds) +
                                   " or window_ms " + std::to_string(options.window_millis) +
                                   " is past 10,000 years");
  }
  // Made at the limits, then given back what was stored.
  FilterOptions at_limits = options;
  at_limits.ttl_seconds = std::min(options.ttl_seconds, kMaxTtlSeconds);
  at_limits.window_millis = std::min(options.window_millis, kMaxTtlSeconds * 1000);
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, MakeConfig(at_limits));
  config.ttl_seconds = options.ttl_seconds;
  config.window_millis = options.window_millis;
  return config;
}

std::string FieldsToLines(const std::vector<ConfigField>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    out += k;
    out += '=';
    out += v;
    out += '\n';
  }
  return out;
}

Result<FieldMap> LinesToFields(std::string_view text, std::string_view where) {
  FieldMap fields;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      return Status::DataLoss(std::string(where) + ": line without newline");
    }
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Status::DataLoss(std::string(where) + ": line without '='");
    }
    fields[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return fields;
}

}  // namespace redbloom::internal
