// Kind "plain": one bit array (part 0), the Guava and Java-helper model.
// Also home of the one-array policy that counting filters share.
#include <string>

#include "kinds/kind_def.h"

namespace redbloom::internal {

namespace {

// Sharded filters: each item's shard (ShardOf), as parts.
std::vector<uint32_t> Shards(const FilterConfig& c, std::span<const Hash128> hashes) {
  std::vector<uint32_t> out(hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) out[i] = ShardOf(hashes[i], c.shards);
  return out;
}

}  // namespace

Status OneArrayPolicy::Add(FilterContext& f, std::span<const Hash128> hashes,
                           uint8_t* added) const {
  const FilterConfig& c = f.config();
  if (c.shards == 1) {
    size_t done = 0;
    Status s = f.AddTo(0, hashes, added, 0, &done);
    if (!s.ok()) f.set_confirmed(done);
    return s;
  }
  return f.Routed(FilterContext::Op::kAdd, Shards(c, hashes), hashes, added);
}

Status OneArrayPolicy::Contains(FilterContext& f, std::span<const Hash128> hashes,
                                uint8_t* present) const {
  const FilterConfig& c = f.config();
  if (c.shards == 1) {
    const uint64_t part = 0;
    return f.TestIn(std::span<const uint64_t>(&part, 1), hashes, present);
  }
  return f.Routed(FilterContext::Op::kTest, Shards(c, hashes), hashes, present);
}

Status OneArrayPolicy::Remove(FilterContext& f, std::span<const Hash128> hashes,
                              uint8_t* removed) const {
  if (!removes_) return KindPolicy::Remove(f, hashes, removed);
  const FilterConfig& c = f.config();
  if (c.shards == 1) return f.RemoveFrom(0, hashes, removed);
  return f.Routed(FilterContext::Op::kRemove, Shards(c, hashes), hashes, removed);
}

Result<std::vector<uint64_t>> OneArrayPolicy::LiveParts(FilterContext& f) const {
  std::vector<uint64_t> parts(f.config().shards);
  for (uint64_t p = 0; p < parts.size(); ++p) parts[p] = p;
  return parts;
}

Status OneArrayPolicy::PrepareMerge(FilterContext& f, uint64_t part, bool* skip) const {
  *skip = false;
  if (part >= f.config().shards) {
    return Status::InvalidArgument("filter '" + std::string(f.name()) + "' has " +
                                   std::to_string(f.config().shards) +
                                   " part(s); cannot merge part " + std::to_string(part));
  }
  return Status::Ok();
}

namespace {

Status Configure(const FilterOptions& o, FilterConfig*) {
  REDBLOOM_RETURN_IF_ERROR(RejectScalingOptions(o));
  return RejectWindowOptions(o);
}

const OneArrayPolicy kPolicy(/*removes=*/false);

}  // namespace

extern const KindDef kPlainKind;
const KindDef kPlainKind = {
    .id = FilterKind::kPlain,
    .name = "plain",
    .cell_bits = 1,
    .one_array = true,
    .dense_parts = false,
    .initial_parts = &OneArrayParts,
    .configure = &Configure,
    .part_target = &OneArrayTarget,
    .policy = &kPolicy,
};

}  // namespace redbloom::internal
