// FilterOptions (what a caller asks for) and FilterConfig (what is stored: the
// options plus the derived geometry). Every store persists a FilterConfig next
// to the bits, and every client compares it on open: two clients never use one
// filter with different parameters without an error.
#ifndef REDBLOOM_FILTER_CONFIG_H_
#define REDBLOOM_FILTER_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/funnel.h"
#include "redbloom/sizing.h"
#include "redbloom/status.h"
#include "redbloom/strategy.h"

namespace redbloom {

// What a filter can do beyond "add and check", and what it costs. Kinds are
// registered in one table (src/kinds/table.cc), one file each; the value is
// the kind's stored id.
enum class FilterKind : uint8_t {
  // One bit per cell. About 1.44 * log2(1/p) bits per item (9.6 at 1%).
  kPlain = 0,
  // 4-bit saturating counters instead of bits, so items can be removed.
  // Four times the memory of kPlain (38 bits per item at 1%).
  kCounting = 1,
  // A chain of sub-filters (RedisBloom's model): when the newest reaches its
  // capacity, one with capacity * expansion and half the error rate is added.
  // The first gets p/2, so the chain's rate stays below p however far it grows.
  kScaling = 2,
  // A ring of `slices` sub-filters, one per time slice of window/slices: adds
  // go to the current slice, checks look at the live ones, old ones expire.
  // Each slice is sized for capacity/slices items (rounded up) at p/slices.
  kWindow = 3,
};

// The registered kinds, by id.
std::vector<FilterKind> FilterKinds();
// "plain", "counting", "scaling", "window"; "unknown" for other values.
std::string_view FilterKindName(FilterKind kind);
Result<FilterKind> ParseFilterKind(std::string_view name);

// Bounds on the kind parameters, checked by MakeConfig.
inline constexpr double kMaxExpansion = 16;
inline constexpr uint32_t kMaxSlices = 1024;
inline constexpr uint64_t kMinSliceMillis = 10;
// A scaling filter stops growing here (kResourceExhausted): 32 layers at
// expansion 2 hold 2^32 times the first capacity.
inline constexpr uint64_t kMaxLayers = 32;
// Redis stores: a plain or counting filter may be split over up to this
// many shards (FilterOptions::shards).
inline constexpr uint32_t kMaxShards = 1024;
// Largest FilterOptions::ttl_seconds: 100 years. Expiry instants are
// milliseconds since the epoch in 64 bits, and Redis's PEXPIREAT takes at
// most a signed 64-bit one; a TTL past them would wrap into the past.
inline constexpr uint64_t kMaxTtlSeconds = uint64_t{100} * 365 * 86400;

struct FilterOptions {
  uint64_t capacity = 0;  // n, expected number of distinct items (>= 1)
  // p, target false-positive rate at n items, in (0, 1) ([0, 1] for redisson)
  double error_rate = 0;
  Strategy strategy = kDefaultStrategy;  // see strategy.h
  Encoding encoding = Encoding::kUtf8;
  FilterKind kind = FilterKind::kPlain;
  double expansion = 2;        // kScaling: capacity factor from one layer to the next, in [1, 16]
  uint64_t window_millis = 0;  // kWindow: how far back checks look
  uint32_t slices = 0;         // kWindow: sub-filters in the window, in [1, 1024]
  // Any kind: the filter and all its keys/files disappear this many seconds
  // after creation, at most kMaxTtlSeconds. 0 = never.
  uint64_t ttl_seconds = 0;
  // Plain and counting filters on Redis: split the cells over this many
  // shards (1 to 1024), each its own key in its own cluster slot and sized
  // for its share of the capacity, so a filter can pass one key's 512 MB and
  // spread its load over a cluster's masters. 1 = one array.
  uint32_t shards = 1;
  // Given geometry, for bits that were sized elsewhere (a Guava writeTo file
  // records m and k, not n and p). When `bits` is not 0 the filter has
  // exactly m = bits and k = hashes; capacity and error_rate must then be 0,
  // and the config derives them (FilterConfig::geometry_given). Plain and
  // counting filters of strategy guava64 only.
  uint64_t bits = 0;
  uint32_t hashes = 0;
};

struct FilterConfig {
  FilterKind kind = FilterKind::kPlain;
  Strategy strategy = kDefaultStrategy;
  Encoding encoding = Encoding::kUtf8;
  uint64_t capacity = 0;
  double error_rate = 0;
  double expansion = 0;        // kScaling only, else 0
  uint64_t window_millis = 0;  // kWindow only, else 0
  uint32_t slices = 0;         // kWindow only, else 0
  uint64_t ttl_seconds = 0;    // as created; not part of the filter's identity
  uint32_t shards = 1;         // plain and counting filters: shards (parts 0..shards-1)
  // The geometry of the filter's main bit array: the whole filter for plain
  // and counting kinds (each shard, when sharded), the first layer of a
  // scaling filter, every slice of a window filter. Derived from the above;
  // stored so a reader can verify it.
  Geometry geometry;
  // True when the geometry was given (FilterOptions::bits) rather than
  // derived: then capacity and error_rate are derived from it instead, as
  // the n at which m and k are optimal, n = round(m ln 2 / k), and the
  // false-positive rate there, p = 2^-k (both exact in IEEE arithmetic, so
  // every reader derives the same). Persisted with the config: file header
  // flags bit 1, Redis metadata field geometry=given, dump line geometry=given.
  bool geometry_given = false;

  // Plain and counting filters keep all their cells in one array (part 0),
  // unless sharded; scaling and window filters in several parts that come and
  // go.
  bool one_array() const;
  // The parts that exist from creation on: 0 .. initial_parts()-1 (a plain
  // filter's one array or its shards, a scaling filter's first layer; none
  // for a window filter).
  uint64_t initial_parts() const;
  // The parts a filter in use stores at once, at most: its initial parts (a
  // scaling filter's later layers come only as it fills), or a window's
  // slices + 1 (each slice is kept one slice past the window, the grace for
  // clocks a little apart). For limits on what a filter may grow to.
  uint64_t stored_parts() const;
  // Bits per cell: 4 for counting filters, else 1.
  uint32_t cell_bits() const;
  // Bytes that hold geometry.bits cells, as Redis stores them.
  uint64_t data_bytes() const { return (geometry.bits * cell_bits() + 7) / 8; }
  // Length of one window slice.
  uint64_t slice_millis() const { return slices == 0 ? 0 : window_millis / slices; }

  // The parameters that must agree between two clients of one filter: all
  // but ttl_seconds.
  bool SameFilterAs(const FilterConfig& other) const;
  // "kind=plain strategy=guava64 encoding=utf8 capacity=1000 error_rate=0.01 bits=9600 hashes=7"
  std::string ToString() const;

  friend bool operator==(const FilterConfig&, const FilterConfig&) = default;
};

// Validates the options and sizes the filter. Nothing is created.
Result<FilterConfig> MakeConfig(const FilterOptions& options);
// The options a config was made from: MakeConfig(OptionsOf(c)) == c for every
// valid config, which is how stores verify a config they read back.
FilterOptions OptionsOf(const FilterConfig& config);

// Capacity, error rate and geometry of one part of a filter: layer `part` of
// a scaling filter (capacity n * expansion^part, error p / 2^(part+1)), or a
// window slice (every slice alike). Plain and counting filters have part 0
// only. kResourceExhausted past kMaxLayers.
struct PartSizing {
  uint64_t capacity = 0;
  double error_rate = 0;
  Geometry geometry;

  // Bytes of the part's cells in Redis order.
  uint64_t bytes(uint32_t cell_bits) const { return (geometry.bits * cell_bits + 7) / 8; }
};
Result<PartSizing> SizePart(const FilterConfig& config, uint64_t part);

// "90s", "24h", "500ms", "7d", or a plain number of seconds -> milliseconds.
Result<uint64_t> ParseDurationMillis(std::string_view text);

// Shortest text that reads back as exactly `v` ("0.01", not "0.0100000000000000002").
std::string FormatDouble(double v);
// Strict: the whole string must be a finite number.
Result<double> ParseDouble(std::string_view text);
// The whole string must be a whole number below 2^64: decimal digits
// (leading zeros allowed), or a decimal number that is exactly an integer
// ("1e6", "2.5e1", "10e-1"); no sign, no spaces. kInvalidArgument otherwise,
// saying "too large (past 2^64)" where that is why.
Result<uint64_t> ParseUint64(std::string_view text);
// `v` as an unsigned integer when it is one: no fraction, 0 <= v < 2^64 ("1e6"
// read as a double). nullopt otherwise; *too_large (if given) says v >= 2^64.
std::optional<uint64_t> WholeNumberOf(double v, bool* too_large = nullptr);

}  // namespace redbloom

#endif  // REDBLOOM_FILTER_CONFIG_H_
