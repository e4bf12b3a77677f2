// Kind "counting": one array of 4-bit saturating counters (part 0), so items
// can be removed. A counter at 15 is never decremented: it may count more
// adds than 15, and lowering it could zero it while some of those items are
// still in the filter (a false negative).
#include "kinds/kind_def.h"

namespace redbloom::internal {
namespace {

Status Configure(const FilterOptions& o, FilterConfig*) {
  REDBLOOM_RETURN_IF_ERROR(RejectScalingOptions(o));
  return RejectWindowOptions(o);
}

const OneArrayPolicy kPolicy(/*removes=*/true);

}  // namespace

extern const KindDef kCountingKind;
const KindDef kCountingKind = {
    .id = FilterKind::kCounting,
    .name = "counting",
    .cell_bits = 4,
    .one_array = true,
    .dense_parts = false,
    .initial_parts = &OneArrayParts,
    .configure = &Configure,
    .part_target = &OneArrayTarget,
    .policy = &kPolicy,
};

}  // namespace redbloom::internal
