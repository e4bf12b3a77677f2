// FilterOptions (what a caller asks for) and FilterConfig (what is stored: the
// options plus the derived geometry). Every store persists a FilterConfig next
// to the bits, and every client compares it on open: two clients never use one
// filter with different parameters without an error.
#ifndef REDBLOOM_FILTER_CONFIG_H_
#define REDBLOOM_FILTER_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "redbloom/funnel.h"
#include "redbloom/sizing.h"
#include "redbloom/status.h"
#include "redbloom/strategy.h"

namespace redbloom {

enum class FilterKind : uint8_t {
  kPlain = 0,  // one bit per cell
};

std::string_view FilterKindName(FilterKind kind);  // "plain"
Result<FilterKind> ParseFilterKind(std::string_view name);

struct FilterOptions {
  uint64_t capacity = 0;  // n, expected number of distinct items (>= 1)
  double error_rate = 0;  // p, target false-positive rate at n items, in (0, 1)
  Strategy strategy = Strategy::kGuava64;
  Encoding encoding = Encoding::kUtf8;
  FilterKind kind = FilterKind::kPlain;
};

struct FilterConfig {
  FilterKind kind = FilterKind::kPlain;
  Strategy strategy = Strategy::kGuava64;
  Encoding encoding = Encoding::kUtf8;
  uint64_t capacity = 0;
  double error_rate = 0;
  Geometry geometry;  // derived from the above; stored so a reader can verify it

  // Bits per cell: 1 for plain filters.
  uint32_t cell_bits() const { return 1; }
  // Bytes that hold geometry.bits cells, as Redis stores them.
  uint64_t data_bytes() const { return (geometry.bits * cell_bits() + 7) / 8; }

  // The parameters that must agree between two clients of one filter.
  bool SameFilterAs(const FilterConfig& other) const;
  // "strategy=guava64 encoding=utf8 capacity=1000 error_rate=0.01 bits=9600 hashes=7"
  std::string ToString() const;

  friend bool operator==(const FilterConfig&, const FilterConfig&) = default;
};

// Validates the options and sizes the filter. Nothing is created.
Result<FilterConfig> MakeConfig(const FilterOptions& options);

// Shortest text that reads back as exactly `v` ("0.01", not "0.0100000000000000002").
std::string FormatDouble(double v);
// Strict: the whole string must be a finite number.
Result<double> ParseDouble(std::string_view text);
Result<uint64_t> ParseUint64(std::string_view text);

}  // namespace redbloom

#endif  // REDBLOOM_FILTER_CONFIG_H_
