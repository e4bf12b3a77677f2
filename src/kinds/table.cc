// The filter-kind table: one line per kind, each defined in its own file in
// this folder. Adding a kind is that file plus its two lines here.
#include <cmath>
#include <cstdlib>
#include <string>

#include "kinds/kind_def.h"
#include "util/fmix64.h"

namespace redbloom::internal {

extern const KindDef kPlainKind;     // plain.cc
extern const KindDef kCountingKind;  // counting.cc
extern const KindDef kScalingKind;   // scaling.cc
extern const KindDef kWindowKind;    // window.cc

namespace {

const KindDef* const kKinds[] = {
    &kPlainKind,
    &kCountingKind,
    &kScalingKind,
    &kWindowKind,
};

}  // namespace

std::span<const KindDef* const> KindTable() { return kKinds; }

const KindDef* FindKind(FilterKind id) {
  for (const KindDef* k : kKinds) {
    if (k->id == id) return k;
  }
  return nullptr;
}

const KindDef* FindKind(std::string_view name) {
  for (const KindDef* k : kKinds) {
    if (k->name == name) return k;
  }
  return nullptr;
}

const KindDef& KindOf(FilterKind id) {
  const KindDef* k = FindKind(id);
  if (k == nullptr) std::abort();  // configs are validated before they reach here
  return *k;
}

Status RejectScalingOptions(const FilterOptions& o) {
  if (o.expansion != FilterOptions().expansion) {
    return Status::InvalidArgument("expansion applies to scaling filters only");
  }
  return Status::Ok();
}

Status RejectWindowOptions(const FilterOptions& o) {
  if (o.window_millis != 0 || o.slices != 0) {
    return Status::InvalidArgument("window and slices apply to window filters only");
  }
  return Status::Ok();
}

Result<PartTarget> OneArrayTarget(const FilterConfig& c, uint64_t part) {
  if (part >= c.shards) {
    return Status::InvalidArgument(
        "a " + std::string(KindOf(c.kind).name) + " filter has " +
        (c.shards == 1 ? std::string("one part") : std::to_string(c.shards) + " shards") +
        ", not part " + std::to_string(part));
  }
  if (c.shards == 1) return PartTarget{c.capacity, c.error_rate};
  // A shard receives Binomial(n, 1/S) items: about n/S, give or take
  // sqrt(n/S). Sizing each for two standard deviations more keeps nearly
  // every shard within its capacity, so the whole keeps the rate asked for
  // (the rate is convex in the load: a fuller shard costs more than an
  // emptier one saves), at a memory cost of 2/sqrt(n/S): 0.2% for a million
  // items a shard.
  const double share = static_cast<double>(c.capacity) / c.shards;
  return PartTarget{static_cast<uint64_t>(std::ceil(share + 2 * std::sqrt(share))), c.error_rate};
}

uint64_t OneArrayParts(const FilterConfig& c) { return c.shards; }

uint32_t ShardOf(const Hash128& hash, uint32_t shards) {
  const uint64_t x = internal::Fmix64(hash.h1 ^ ((hash.h2 << 32) | (hash.h2 >> 32)));
  return static_cast<uint32_t>(((x >> 32) * shards) >> 32);
}

Status KindPolicy::Remove(FilterContext& f, std::span<const Hash128>, uint8_t*) const {
  return Status::Unimplemented("filter '" + std::string(f.name()) + "' is a " +
                               std::string(KindOf(f.config().kind).name) +
                               " filter; only counting filters can remove items");
}

}  // namespace redbloom::internal

namespace redbloom {

using internal::FindKind;
using internal::KindOf;

std::vector<FilterKind> FilterKinds() {
  std::vector<FilterKind> out;
  for (const auto* k : internal::KindTable()) out.push_back(k->id);
  return out;
}

std::string_view FilterKindName(FilterKind kind) {
  const auto* k = FindKind(kind);
  return k == nullptr ? "unknown" : k->name;
}

Result<FilterKind> ParseFilterKind(std::string_view name) {
  if (const auto* k = FindKind(name)) return k->id;
  std::string known;
  for (const auto* k : internal::KindTable()) {
    if (!known.empty()) known += ", ";
    known += k->name;
  }
  return Status::InvalidArgument("unknown filter kind '" + std::string(name) + "' (expected " +
                                 known + ")");
}

bool FilterConfig::one_array() const { return KindOf(kind).one_array && shards == 1; }
uint64_t FilterConfig::initial_parts() const { return KindOf(kind).initial_parts(*this); }
uint64_t FilterConfig::stored_parts() const {
  const internal::KindDef& k = internal::KindOf(kind);
  return k.stored_parts != nullptr ? k.stored_parts(*this) : k.initial_parts(*this);
}
uint32_t FilterConfig::cell_bits() const { return KindOf(kind).cell_bits; }

Result<PartSizing> SizePart(const FilterConfig& c, uint64_t part) {
  const auto* kind = FindKind(c.kind);
  if (kind == nullptr) return Status::InvalidArgument("unknown filter kind");
  REDBLOOM_ASSIGN_OR_RETURN(internal::PartTarget t, kind->part_target(c, part));
  PartSizing s;
  s.capacity = t.capacity;
  s.error_rate = t.error_rate;
  if (c.geometry_given) {
    // Bits sized elsewhere (a Guava file's m and k): one array, as given.
    s.geometry = c.geometry;
    return s;
  }
  Result<Geometry> geometry = GeometryFor(c.strategy, s.capacity, s.error_rate);
  if (!geometry.ok() && part > 0 && part >= c.initial_parts()) {
    // A part made after creation (a scaling filter's next layer) that
    // cannot be sized has outgrown what a filter can hold: out of room, as
    // the layer limit is, not an invalid argument of the call that needed
    // it (whose earlier items may already be in).
    return Status::ResourceExhausted(std::string(FilterKindName(c.kind)) + " filter part " +
                                     std::to_string(part) +
                                     " cannot be made: " + geometry.status().message());
  }
  REDBLOOM_RETURN_IF_ERROR(geometry.status());
  s.geometry = *geometry;
  return s;
}

}  // namespace redbloom
