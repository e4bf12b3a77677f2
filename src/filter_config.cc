#include "redbloom/filter_config.h"

#include <charconv>
#include <cmath>

namespace redbloom {

std::string_view FilterKindName(FilterKind kind) {
  switch (kind) {
    case FilterKind::kPlain:
      return "plain";
  }
  return "unknown";
}

Result<FilterKind> ParseFilterKind(std::string_view name) {
  if (name == "plain") return FilterKind::kPlain;
  return Status::InvalidArgument("unknown filter kind '" + std::string(name) + "'");
}

bool FilterConfig::SameFilterAs(const FilterConfig& other) const { return *this == other; }

std::string FilterConfig::ToString() const {
  std::string s;
  s += "kind=" + std::string(FilterKindName(kind));
  s += " strategy=" + std::string(StrategyName(strategy));
  s += " encoding=" + std::string(EncodingName(encoding));
  s += " capacity=" + std::to_string(capacity);
  s += " error_rate=" + FormatDouble(error_rate);
  s += " bits=" + std::to_string(geometry.bits);
  s += " hashes=" + std::to_string(geometry.hashes);
  return s;
}

Result<FilterConfig> MakeConfig(const FilterOptions& options) {
  REDBLOOM_ASSIGN_OR_RETURN(Geometry g,
                            GeometryFor(options.strategy, options.capacity, options.error_rate));
  FilterConfig c;
  c.kind = options.kind;
  c.strategy = options.strategy;
  c.encoding = options.encoding;
  c.capacity = options.capacity;
  c.error_rate = options.error_rate;
  c.geometry = g;
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
