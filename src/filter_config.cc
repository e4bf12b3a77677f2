#include "redbloom/filter_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace redbloom {

std::string_view FilterKindName(FilterKind kind) {
  switch (kind) {
    case FilterKind::kPlain:
      return "plain";
    case FilterKind::kCounting:
      return "counting";
    case FilterKind::kScaling:
      return "scaling";
    case FilterKind::kWindow:
      return "window";
  }
  return "unknown";
}

Result<FilterKind> ParseFilterKind(std::string_view name) {
  for (FilterKind k :
       {FilterKind::kPlain, FilterKind::kCounting, FilterKind::kScaling, FilterKind::kWindow}) {
    if (name == FilterKindName(k)) return k;
  }
  return Status::InvalidArgument("unknown filter kind '" + std::string(name) +
                                 "' (expected plain, counting, scaling or window)");
}

bool FilterConfig::SameFilterAs(const FilterConfig& other) const {
  FilterConfig a = *this;
  a.ttl_seconds = other.ttl_seconds;
  return a == other;
}

Result<PartSizing> SizePart(const FilterConfig& c, uint64_t part) {
  PartSizing s;
  switch (c.kind) {
    case FilterKind::kPlain:
    case FilterKind::kCounting:
      if (part != 0) return Status::InvalidArgument("plain and counting filters have one part");
      s.capacity = c.capacity;
      s.error_rate = c.error_rate;
      if (c.geometry_given) {
        s.geometry = c.geometry;
        return s;
      }
      break;
    case FilterKind::kScaling: {
      if (part >= kMaxLayers) {
        return Status::ResourceExhausted("scaling filter reached its limit of " +
                                         std::to_string(kMaxLayers) + " layers");
      }
      const double capacity = static_cast<double>(c.capacity) * std::pow(c.expansion, part);
      if (capacity >= 9.2e18) {
        return Status::ResourceExhausted("scaling filter layer " + std::to_string(part) +
                                         " would exceed 2^63 items");
      }
      s.capacity = static_cast<uint64_t>(std::ceil(capacity));
      s.error_rate = c.error_rate * std::pow(0.5, static_cast<double>(part + 1));
      break;
    }
    case FilterKind::kWindow:
      if (c.slices == 0) return Status::InvalidArgument("window filter without slices");
      s.capacity = (c.capacity + c.slices - 1) / c.slices;
      s.error_rate = c.error_rate / c.slices;
      break;
  }
  REDBLOOM_ASSIGN_OR_RETURN(s.geometry, GeometryFor(c.strategy, s.capacity, s.error_rate));
  return s;
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
  s += "kind=" + std::string(FilterKindName(kind));
  s += " strategy=" + std::string(StrategyName(strategy));
  s += " encoding=" + std::string(EncodingName(encoding));
  s += " capacity=" + std::to_string(capacity);
  s += " error_rate=" + FormatDouble(error_rate);
  s += " bits=" + std::to_string(geometry.bits);
  s += " hashes=" + std::to_string(geometry.hashes);
  if (geometry_given) s += " geometry=given";
  if (kind == FilterKind::kScaling) s += " expansion=" + FormatDouble(expansion);
  if (kind == FilterKind::kWindow) {
    s += " window_ms=" + std::to_string(window_millis) + " slices=" + std::to_string(slices);
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
  if (c.geometry_given) {
    o.capacity = 0;
    o.error_rate = 0;
    o.bits = c.geometry.bits;
    o.hashes = c.geometry.hashes;
  }
  return o;
}

namespace {

// A filter whose m and k were given (a Guava file's): the config derives its
// capacity and error rate from them, exactly and alike on every machine (see
// FilterConfig::geometry_given).
Result<FilterConfig> MakeGivenGeometryConfig(const FilterOptions& options) {
  if (options.capacity != 0 || options.error_rate != 0) {
    return Status::InvalidArgument(
        "give either capacity and error rate, or bits and hashes, not both");
  }
  if (!IsOneArrayKind(options.kind)) {
    return Status::InvalidArgument(
        "bits and hashes can be given for plain and counting filters "
        "only; a " +
        std::string(FilterKindName(options.kind)) +
        " filter sizes its parts from capacity and error rate");
  }
  if (options.expansion != FilterOptions().expansion || options.window_millis != 0 ||
      options.slices != 0) {
    return Status::InvalidArgument(
        "expansion, window and slices apply to scaling and window "
        "filters only");
  }
  FilterConfig c;
  REDBLOOM_ASSIGN_OR_RETURN(c.geometry,
                            GivenGeometry(options.strategy, options.bits, options.hashes));
  c.geometry_given = true;
  c.kind = options.kind;
  c.strategy = options.strategy;
  c.encoding = options.encoding;
  c.ttl_seconds = options.ttl_seconds;
  // k = (m/n) ln 2 is the optimal k for n items; at that n the false-positive
  // rate (1 - e^(-kn/m))^k is exactly 2^-k.
  const double n = std::round(static_cast<double>(c.geometry.bits) * std::numbers::ln2 /
                              static_cast<double>(c.geometry.hashes));
  c.capacity = std::max<uint64_t>(1, static_cast<uint64_t>(n));
  c.error_rate = std::ldexp(1.0, -static_cast<int>(c.geometry.hashes));
  return c;
}

}  // namespace

Result<FilterConfig> MakeConfig(const FilterOptions& options) {
  if (options.bits != 0 || options.hashes != 0) return MakeGivenGeometryConfig(options);
  REDBLOOM_RETURN_IF_ERROR(ValidateCapacityAndErrorRate(options.capacity, options.error_rate));
  FilterConfig c;
  c.kind = options.kind;
  c.strategy = options.strategy;
  c.encoding = options.encoding;
  c.capacity = options.capacity;
  c.error_rate = options.error_rate;
  c.ttl_seconds = options.ttl_seconds;
  if (FilterKindName(c.kind) == "unknown") return Status::InvalidArgument("unknown filter kind");
  if (c.kind == FilterKind::kScaling) {
    if (!(options.expansion >= 1 && options.expansion <= kMaxExpansion)) {
      return Status::InvalidArgument("expansion must be between 1 and 16");
    }
    c.expansion = options.expansion;
  } else if (options.expansion != FilterOptions().expansion) {
    return Status::InvalidArgument("expansion applies to scaling filters only");
  }
  if (c.kind == FilterKind::kWindow) {
    if (options.slices < 1 || options.slices > kMaxSlices) {
      return Status::InvalidArgument("a window filter needs 1 to 1024 slices");
    }
    if (options.window_millis / options.slices < kMinSliceMillis) {
      return Status::InvalidArgument("window / slices must be at least 10 ms");
    }
    c.window_millis = options.window_millis;
    c.slices = options.slices;
  } else if (options.window_millis != 0 || options.slices != 0) {
    return Status::InvalidArgument("window and slices apply to window filters only");
  }
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
