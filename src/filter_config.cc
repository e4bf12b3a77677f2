#include "redbloom/filter_config.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "config_codec.h"
#include "kinds/kind_def.h"

namespace redbloom {

bool FilterConfig::SameFilterAs(const FilterConfig& other) const {
  FilterConfig a = *this;
  a.ttl_seconds = other.ttl_seconds;
  return a == other;
}

Result<uint64_t> ParseDurationMillis(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view number = text.substr(0, digits);
  const std::string_view unit = text.substr(digits);
  auto n = ParseUint64(number);
  if (number.empty() || !n.ok()) {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a duration (e.g. 500ms, 90s, 15m, 24h, 7d)");
  }
  uint64_t scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit.empty() || unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else if (unit == "d") {
    scale = 86'400'000;
  } else {
    return Status::InvalidArgument("unknown duration unit in '" + std::string(text) + "'");
  }
  if (*n > UINT64_MAX / scale / 1000) return Status::InvalidArgument("duration is too long");
  return *n * scale;
}

std::string FilterConfig::ToString() const {
  std::string s;
  for (const auto& [key, value] : internal::ConfigToFields(*this, /*relevant_only=*/true)) {
    if (key == "ttl_seconds") continue;  // not part of the filter's identity
    if (!s.empty()) s += ' ';
    s += key + "=" + value;
  }
  return s;
}

FilterOptions OptionsOf(const FilterConfig& c) {
  FilterOptions o;
  o.capacity = c.capacity;
  o.error_rate = c.error_rate;
  o.strategy = c.strategy;
  o.encoding = c.encoding;
  o.kind = c.kind;
  if (c.kind == FilterKind::kScaling) o.expansion = c.expansion;
  o.window_millis = c.window_millis;
  o.slices = c.slices;
  o.ttl_seconds = c.ttl_seconds;
  return o;
}

Result<FilterConfig> MakeConfig(const FilterOptions& options) {
  REDBLOOM_RETURN_IF_ERROR(CheckParameters(options.strategy, options.capacity, options.error_rate));
  const internal::KindDef* kind = internal::FindKind(options.kind);
  if (kind == nullptr) return Status::InvalidArgument("unknown filter kind");
  REDBLOOM_RETURN_IF_ERROR(CheckStrategyEncoding(options.strategy, options.encoding));
  FilterConfig c;
  c.kind = options.kind;
  c.strategy = options.strategy;
  c.encoding = options.encoding;
  c.capacity = options.capacity;
  c.error_rate = options.error_rate;
  c.ttl_seconds = options.ttl_seconds;
  REDBLOOM_RETURN_IF_ERROR(kind->configure(options, &c));
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing first, SizePart(c, 0));
  c.geometry = first.geometry;
  return c;
}

std::string FormatDouble(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "nan";
  return std::string(buf, ptr);
}

Result<double> ParseDouble(std::string_view text) {
  double v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  auto [ptr, ec] = std::from_chars(b, e, v);
  if (text.empty() || ec != std::errc() || ptr != e || !std::isfinite(v)) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not a number");
  }
  return v;
}

Result<uint64_t> ParseUint64(std::string_view text) {
  uint64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  auto [ptr, ec] = std::from_chars(b, e, v, 10);
  if (text.empty() || ec != std::errc() || ptr != e) {
    // Accept "1e6"-style capacities only when they are exact integers.
    auto d = ParseDouble(text);
    if (d.ok() && *d >= 0 && *d < 1.8e19 && std::floor(*d) == *d) {
      return static_cast<uint64_t>(*d);
    }
    return Status::InvalidArgument("'" + std::string(text) + "' is not a non-negative integer");
  }
  return v;
}

}  // namespace redbloom
