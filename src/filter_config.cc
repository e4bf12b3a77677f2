#include "redbloom/filter_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <string>

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
  if (number.empty()) {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a duration (e.g. 500ms, 90s, 15m, 24h, 7d)");
  }
  // Digits alone: a failure is a number past 2^64 ("too long", as below).
  auto n = ParseUint64(number);
  if (!n.ok()) return Status::InvalidArgument("duration '" + std::string(text) + "' is too long");
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
    // One whole number and one unit: "1.5h" and "1h30m" are no unknown
    // units, and were told so.
    return Status::InvalidArgument(
        "'" + std::string(text) +
        "' is not a duration: give a whole number and one unit, ms, s, m, h or d (e.g. 90m, not "
        "1.5h or 1h30m); a number alone is seconds");
  }
  if (*n > UINT64_MAX / scale / 1000) {
    return Status::InvalidArgument("duration '" + std::string(text) + "' is too long");
  }
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
  o.shards = c.shards;
  if (c.geometry_given) {
    o.capacity = 0;
    o.error_rate = 0;
    o.bits = c.geometry.bits;
    o.hashes = c.geometry.hashes;
  }
  return o;
}

namespace {

Status CheckTtl(uint64_t ttl_seconds) {
  if (ttl_seconds <= kMaxTtlSeconds) return Status::Ok();
  return Status::InvalidArgument("a TTL of " + std::to_string(ttl_seconds) +
                                 " s is more than 100 years (" + std::to_string(kMaxTtlSeconds) +
                                 " s)");
}

// A filter whose m and k were given (a Guava file's): the config derives its
// capacity and error rate from them, exactly and alike on every machine (see
// FilterConfig::geometry_given).
Result<FilterConfig> MakeGivenGeometryConfig(const FilterOptions& options) {
  if (options.capacity != 0 || options.error_rate != 0) {
    if (options.bits == 0 || options.hashes == 0) {
      return Status::InvalidArgument(
          std::string(options.bits == 0 ? "hashes without bits" : "bits without hashes") +
          ": give bits and hashes together, or capacity and error rate alone");
    }
    return Status::InvalidArgument(
        "give either capacity and error rate, or bits and hashes, not both");
  }
  const internal::KindDef* kind = internal::FindKind(options.kind);
  if (kind == nullptr) return Status::InvalidArgument("unknown filter kind");
  if (!kind->one_array || options.shards != 1) {
    return Status::InvalidArgument(
        "bits and hashes can be given for unsharded plain and counting filters only; a " +
        std::string(kind->name) + " filter sizes its parts from capacity and error rate");
  }
  REDBLOOM_RETURN_IF_ERROR(CheckStrategyEncoding(options.strategy, options.encoding));
  REDBLOOM_RETURN_IF_ERROR(CheckTtl(options.ttl_seconds));
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
  REDBLOOM_RETURN_IF_ERROR(kind->configure(options, &c));
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
  REDBLOOM_RETURN_IF_ERROR(CheckParameters(options.strategy, options.capacity, options.error_rate));
  const internal::KindDef* kind = internal::FindKind(options.kind);
  if (kind == nullptr) return Status::InvalidArgument("unknown filter kind");
  REDBLOOM_RETURN_IF_ERROR(CheckStrategyEncoding(options.strategy, options.encoding));
  REDBLOOM_RETURN_IF_ERROR(CheckTtl(options.ttl_seconds));
  FilterConfig c;
  c.kind = options.kind;
  c.strategy = options.strategy;
  c.encoding = options.encoding;
  c.capacity = options.capacity;
  c.error_rate = options.error_rate;
  c.ttl_seconds = options.ttl_seconds;
  if (options.shards < 1 || options.shards > kMaxShards) {
    return Status::InvalidArgument("shards must be between 1 and " + std::to_string(kMaxShards));
  }
  if (options.shards > 1 && !kind->one_array) {
    return Status::InvalidArgument("shards apply to plain and counting filters, not to a " +
                                   std::string(kind->name) + " filter");
  }
  c.shards = options.shards;
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
  if (!text.empty() && ptr == e && ec == std::errc::result_out_of_range) {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is out of a double's range (too large or too small)");
  }
  if (text.empty() || ec != std::errc() || ptr != e || !std::isfinite(v)) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not a number");
  }
  return v;
}

std::optional<uint64_t> WholeNumberOf(double v, bool* too_large) {
  constexpr double kTwoTo64 = 18446744073709551616.0;
  if (too_large != nullptr) *too_large = v >= kTwoTo64;
  if (!(v >= 0 && v < kTwoTo64) || std::floor(v) != v) return std::nullopt;
  return static_cast<uint64_t>(v);
}

namespace {

// A whole number written in decimal with a fraction or an exponent ("1e6",
// "2.5e3", "1000.0"), read exactly: through a double, 9007199254740993.0 was
// taken as ...992. nullopt if `text` is not such a number or not whole;
// `too_large` says a whole one is past 2^64 - 1.
std::optional<uint64_t> ExactDecimal(std::string_view text, bool* too_large) {
  *too_large = false;
  std::string digits;  // the mantissa's digits, without its point
  int64_t scale = 0;   // the value is digits * 10^scale
  size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    digits += text[i];
  }
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      digits += text[i];
      --scale;
    }
  }
  if (digits.empty()) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (i == text.size()) return std::nullopt;
    int64_t exponent = 0;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      exponent = std::min<int64_t>(exponent * 10 + (text[i] - '0'), 1'000'000);
    }
    scale += negative ? -exponent : exponent;
  }
  if (i != text.size()) return std::nullopt;
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) return 0;
  // Trailing zeros move into the scale; a whole number then has scale >= 0.
  const size_t last = digits.find_last_not_of('0');
  scale += static_cast<int64_t>(digits.size() - 1 - last);
  digits.resize(last + 1);
  if (scale < 0) return std::nullopt;
  if (static_cast<int64_t>(digits.size()) + scale > 20) {
    *too_large = true;
    return std::nullopt;
  }
  digits.append(static_cast<size_t>(scale), '0');
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 10);
  if (ec == std::errc::result_out_of_range) *too_large = true;
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<uint64_t> ParseUint64(std::string_view text) {
  uint64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  const auto [ptr, ec] = std::from_chars(b, e, v, 10);
  if (!text.empty() && ec == std::errc() && ptr == e) return v;
  // "1e6"-style numbers are taken when they are exact integers.
  bool too_large = ptr == e && ec == std::errc::result_out_of_range;
  bool past_2_64 = false;
  if (std::optional<uint64_t> whole = ExactDecimal(text, &past_2_64)) return *whole;
  if (too_large || past_2_64) {
    return Status::InvalidArgument("'" + std::string(text) + "' is too large (past 2^64)");
  }
  return Status::InvalidArgument("'" + std::string(text) + "' is not a non-negative integer");
}

}  // namespace redbloom
