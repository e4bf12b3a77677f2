// Kind "plain": one bit array (part 0), the Guava and Java-helper model.
// Also home of the one-array policy that counting filters share.
#include <string>

#include "kinds/kind_def.h"

namespace redbloom::internal {

Status OneArrayPolicy::Add(FilterContext& f, std::span<const Hash128> hashes,
                           uint8_t* added) const {
  return f.AddTo(0, hashes, added);
}

Status OneArrayPolicy::Contains(FilterContext& f, std::span<const Hash128> hashes,
                                uint8_t* present) const {
  const uint64_t part = 0;
  return f.TestIn(std::span<const uint64_t>(&part, 1), hashes, present);
}

Status OneArrayPolicy::Remove(FilterContext& f, std::span<const Hash128> hashes,
                              uint8_t* removed) const {
  if (!removes_) return KindPolicy::Remove(f, hashes, removed);
  return f.RemoveFrom(0, hashes, removed);
}

Result<std::vector<uint64_t>> OneArrayPolicy::LiveParts(FilterContext&) const {
  return std::vector<uint64_t>{0};
}

Status OneArrayPolicy::PrepareMerge(FilterContext& f, uint64_t part, bool* skip) const {
  *skip = false;
  if (part != 0) {
    return Status::InvalidArgument("filter '" + std::string(f.name()) +
                                   "' has one part; cannot merge part " + std::to_string(part));
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
    .part0_at_create = true,
    .configure = &Configure,
    .part_target = &OneArrayTarget,
    .policy = &kPolicy,
};

}  // namespace redbloom::internal
