// Kind "window": a ring of time slices. Slice s covers the clock's
// [s * L, (s + 1) * L) with L = window / slices; adds go to the current
// slice, checks look at the `slices` newest (and, in a slice's last moments,
// the next, for clients whose clocks run ahead), and a slice's cells expire one
// slice after it has left the window (the grace covers clocks a little apart
// between clients and the store). Each slice is sized for ceil(capacity /
// slices) items at p / slices, so a check over all of them stays within p.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "kinds/kind_def.h"
#include "stores.h"

namespace redbloom::internal {
namespace {

Status Configure(const FilterOptions& o, FilterConfig* c) {
  REDBLOOM_RETURN_IF_ERROR(RejectScalingOptions(o));
  if (o.slices < 1 || o.slices > kMaxSlices) {
    return Status::InvalidArgument("a window filter needs 1 to 1024 slices");
  }
  if (o.window_millis / o.slices < kMinSliceMillis) {
    return Status::InvalidArgument("window / slices must be at least 10 ms");
  }
  // As a TTL: a slice's expiry, (slice + slices + 1) * slice length, must
  // neither wrap past 2^64 ms nor fail Redis's PEXPIREAT after the filter
  // was made (a window near 2^63 ms made a filter no add could use).
  if (o.window_millis > kMaxTtlSeconds * 1000) {
    return Status::InvalidArgument("a window filter's window must be at most 100 years");
  }
  c->window_millis = o.window_millis;
  c->slices = o.slices;
  return Status::Ok();
}

Result<PartTarget> Target(const FilterConfig& c, uint64_t) {
  if (c.slices == 0) return Status::InvalidArgument("window filter without slices");
  return PartTarget{(c.capacity + c.slices - 1) / c.slices, c.error_rate / c.slices};
}

uint64_t CurrentSlice(const FilterContext& f) { return f.NowMillis() / f.config().slice_millis(); }

// A slice still in the window, as of slice `now`.
bool IsLive(const FilterConfig& c, uint64_t part, uint64_t now) { return part + c.slices > now; }

// How close to its slice's end a check also looks at the next slice: a
// client whose clock runs ahead of this one by up to this much adds there
// (NTP keeps hosts milliseconds apart; without the look, such adds read
// absent here until this clock caught up). Only then: the next slice rarely
// exists, and testing it costs a failed open on file: and a transaction more
// on Redis.
uint64_t LookAheadMillis(const FilterConfig& c) {
  return std::min<uint64_t>(c.slice_millis() / 4, 1000);
}

// The slices a check at `now_ms` (in slice `now`) must look at, oldest
// first: the window's, and near the slice's end the next one.
std::vector<uint64_t> CheckSlices(const FilterContext& f, uint64_t now, uint64_t now_ms) {
  const FilterConfig& c = f.config();
  const uint64_t slices = c.slices;
  const bool ahead = now_ms + LookAheadMillis(c) >= (now + 1) * c.slice_millis();
  std::vector<uint64_t> parts;
  for (uint64_t p = now + 1 - std::min<uint64_t>(slices, now + 1); p <= now + (ahead ? 1 : 0);
       ++p) {
    parts.push_back(p);
  }
  return parts;
}

// Once per slice and handle, before the slice's first add or check: a
// listing, in which the store deletes the slices that have expired (file:
// their files, mem: their memory; Redis forgets them in the parts list) and
// the handle unmaps those it had open. Without it a filter that is only added
// to and checked kept every slice it ever made, on disk and mapped, until
// something listed its parts (info, an export, a clear): a slice file and a
// mapping more per slice, for ever, and in redbloomd's cache of open filters,
// descriptors until EMFILE.
//
// Housekeeping, so a failure does not fail the call: the call's own store
// operations say whether the store works, and a check that may read a Redis
// replica should not fail because the master did not answer a listing. The
// next slice's listing deletes whatever this one left.
void PruneOnce(FilterContext& f, uint64_t now) {
  if (f.cache().TakePruneTurn(now)) (void)f.bits().ListParts();
}

Status CreateSlice(FilterContext& f, uint64_t part) {
  if (f.cache().created(part)) return Status::Ok();
  REDBLOOM_RETURN_IF_ERROR(f.bits().CreatePart(part, SliceExpiresAt(f.config(), part)));
  f.cache().set_created(part);
  return Status::Ok();
}

// A slice that is missing, or listed but gone (Redis: data_loss): once it
// has left the window, it expired as planned.
bool Gone(const Status& s) {
  return s.code() == StatusCode::kNotFound || s.code() == StatusCode::kDataLoss;
}

// Creates slice `now` (once per handle) and adds to it. A slice this handle
// made may be gone while live: the filter was dropped and made again alike
// by another client, which Redis does not tell from the same filter (no
// reopen follows). It is made again once; for a dropped filter that fails
// not_found. Before, the handle's every add failed not_found until the
// slice ended (an audit: a 30-minute slice).
Status CreateAndAddTo(FilterContext& f, uint64_t now, std::span<const Hash128> hashes,
                      uint8_t* out) {
  REDBLOOM_RETURN_IF_ERROR(CreateSlice(f, now));
  Status s = f.AddTo(now, hashes, out);
  if (s.code() != StatusCode::kNotFound || !f.cache().forget_created(now)) return s;
  REDBLOOM_RETURN_IF_ERROR(CreateSlice(f, now));
  return f.AddTo(now, hashes, out);
}

// Adds to slice `now`; `added`, when given, says which items no live slice
// held before.
Status AddToSlice(FilterContext& f, uint64_t now, std::span<const Hash128> hashes, uint8_t* added) {
  PruneOnce(f, now);
  if (added == nullptr) {  // no answers: the live slices need not be read
    return CreateAndAddTo(f, now, hashes, nullptr);
  }
  std::vector<uint8_t> present(hashes.size(), 0);
  REDBLOOM_RETURN_IF_ERROR(f.TestIn(CheckSlices(f, now, f.NowMillis()), hashes, present.data()));
  std::vector<uint8_t> set_bit(hashes.size(), 0);
  REDBLOOM_RETURN_IF_ERROR(CreateAndAddTo(f, now, hashes, set_bit.data()));
  for (size_t i = 0; i < hashes.size(); ++i) added[i] = !present[i] && set_bit[i] ? 1 : 0;
  return Status::Ok();
}

}  // namespace

uint64_t SliceExpiresAt(const FilterConfig& config, uint64_t part) {
  return (part + config.slices + 1) * config.slice_millis();
}

namespace {

class WindowPolicy final : public KindPolicy {
 public:
  // How many times an add is done again in a later slice, at most.
  static constexpr int kAddsAgain = 4;

  // Every item goes into the current slice, even one that an older slice
  // already (maybe falsely) matches: that slice expires first, and skipping
  // the add would then lose an item seen moments ago. "New" means: not
  // present in any live slice before this call, nor earlier in this batch
  // (the current slice's add says which turned a bit on), as for the other
  // kinds; else `dedup` would print an item twice when both copies happen to
  // arrive in one batch.
  //
  // The slice is the one current when the call began. A call that stalls
  // (a paused process, a slow store) until that slice has left the window
  // either finds it gone (each store removes an expired slice as it opens
  // it, and Redis expires its key: not_found, or data_loss for a listed
  // slice; Redis refuses to make a slice its clock has expired: unavailable)
  // or adds to a slice no check looks at any more. The add is then
  // done again, in the slice current by then, so that the item is found
  // as soon as the call returns. So it is too when the call only crossed into
  // a later slice: its items would leave the window a slice after the one
  // it began in, up to a whole window - slice sooner after the call returned
  // than the README promises (an audit: 0.8 s after a 2.3 s add, with 3 s
  // in 3 slices).
  Status Add(FilterContext& f, std::span<const Hash128> hashes, uint8_t* added) const override {
    uint64_t slice = CurrentSlice(f);
    Status s = AddToSlice(f, slice, hashes, added);
    // The add done again may end in a later slice too (a store slow for
    // longer): again, a few times. (Once, an item written to slices 1 and 2
    // and returned in slice 3 read absent 1.1 s after the return, where the
    // README promises window - slice: 2 s.)
    for (int again = 0; again < kAddsAgain; ++again) {
      const uint64_t later = CurrentSlice(f);
      if (later <= slice) return s;
      if (IsLive(f.config(), slice, later)) {
        if (!s.ok()) return s;
        // The answers stand (the items are in a live slice), whatever the
        // add in the later slice does.
        f.set_confirmed(hashes.size());
        s = AddToSlice(f, later, hashes, nullptr);
      } else {
        // Whatever the add's outcome: a slice that left the window may also
        // have been refused by Redis as already expired by its clock
        // (unavailable). The answers are asked again, of the live slices.
        f.set_confirmed(0);
        s = AddToSlice(f, later, hashes, added);
        // If that add too outlives its slice, the window is shorter than an
        // add takes here: one that found its slice gone says so.
        if (!s.ok() && Gone(s) && !IsLive(f.config(), later, CurrentSlice(f))) {
          return Status::Unavailable(
              "window add: the slice it added to left the window (" +
              std::to_string(f.config().window_millis) +
              " ms) before the add was done, twice: the window is shorter than an add takes "
              "here (a stalled process, a slow store, or a clock jumping ahead)");
        }
        if (!s.ok()) return s;
      }
      slice = later;
    }
    return s;
  }

  // A slice nobody added to in its time does not exist: it holds nothing.
  Status Contains(FilterContext& f, std::span<const Hash128> hashes,
                  uint8_t* present) const override {
    const uint64_t now_ms = f.NowMillis();
    const uint64_t now = now_ms / f.config().slice_millis();
    PruneOnce(f, now);
    return f.TestIn(CheckSlices(f, now, now_ms), hashes, present);
  }

  // The slices a check looks at: a slice further ahead of this clock
  // (another client's clock runs fast by more than a slice) is not checked
  // yet, so it does not count yet either.
  Result<std::vector<uint64_t>> LiveParts(FilterContext& f) const override {
    REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> parts, f.bits().ListParts());
    const uint64_t now = CurrentSlice(f);
    std::erase_if(parts, [&](uint64_t p) { return p > now + 1 || !IsLive(f.config(), p, now); });
    return parts;
  }

  Status PrepareMerge(FilterContext& f, uint64_t part, bool* skip) const override {
    *skip = !IsLive(f.config(), part, CurrentSlice(f));
    if (*skip) return Status::Ok();
    return CreateSlice(f, part);
  }
};

const WindowPolicy kPolicy;

// A slice, or a second for short slices: clocks this far apart still agree
// on which slices may be live.
uint64_t GraceMs(const FilterConfig& c) { return std::max<uint64_t>(c.slice_millis(), 1000); }

bool SliceMayHaveExpired(const FilterConfig& c, uint64_t part, uint64_t filter_expires_at_ms,
                         uint64_t now_ms) {
  if (c.slice_millis() == 0) return false;
  return CapExpiry(SliceExpiresAt(c, part), filter_expires_at_ms) <= now_ms + GraceMs(c);
}

// The first slice that expires after now + the grace, unless the filter's
// own expiry comes first. Slice p expires at (p + slices + 1) slices, so that
// one lies within a slice of (now + grace) / ms - slices; the search starts a
// slice before. (It started at (now + grace) / ms + 2 - slices, two slices
// late: a newest slice lost two slices before an add was taken for one that
// may have expired, and its items read absent.)
uint64_t OldestSureSlice(const FilterConfig& c, uint64_t filter_expires_at_ms, uint64_t now_ms) {
  const uint64_t ms = c.slice_millis();
  if (ms == 0) return UINT64_MAX;
  const uint64_t latest = (now_ms + GraceMs(c)) / ms + 2;
  const uint64_t back = c.slices + 3;
  for (uint64_t p = latest > back ? latest - back : 0; p <= latest; ++p) {
    if (!SliceMayHaveExpired(c, p, filter_expires_at_ms, now_ms)) return p;
  }
  return UINT64_MAX;
}

// The slices in or near the window at `now_ms`: a window and a grace slice
// behind, two ahead (a clock ahead of this one).
std::pair<uint64_t, uint64_t> SlicesThatMayExist(const FilterConfig& c, uint64_t now_ms) {
  if (c.slice_millis() == 0) return {1, 0};  // none: not a valid window
  const uint64_t now = now_ms / c.slice_millis();
  const uint64_t back = c.slices + 2;
  return {now > back ? now - back : 0, now + 2};
}

bool UnlistExpiredSlice(const FilterConfig& c, uint64_t part, uint64_t filter_expires_at_ms,
                        uint64_t now_ms) {
  const uint64_t forget_before = now_ms - std::min(now_ms, c.window_millis);
  return CapExpiry(SliceExpiresAt(c, part), filter_expires_at_ms) <= forget_before;
}

const TimeParts kSlices = {
    .may_have_expired = &SliceMayHaveExpired,
    .oldest_sure = &OldestSureSlice,
    .may_exist = &SlicesThatMayExist,
    .unlist_expired = &UnlistExpiredSlice,
};

}  // namespace

extern const KindDef kWindowKind;
const KindDef kWindowKind = {
    .id = FilterKind::kWindow,
    .name = "window",
    .cell_bits = 1,
    .one_array = false,
    .dense_parts = false,
    .initial_parts = [](const FilterConfig&) -> uint64_t { return 0; },
    .configure = &Configure,
    .part_target = &Target,
    .policy = &kPolicy,
    // A window and a grace slice behind: out of the window for good.
    .forgettable_below = [](const FilterConfig& c, uint64_t part) -> uint64_t {
      return part > uint64_t{c.slices} + 2 ? part - c.slices - 2 : 0;
    },
    // Slice 0 lives until SliceExpiresAt(c, 0), so that many slices overlap.
    .stored_parts = [](const FilterConfig& c) -> uint64_t {
      if (c.slice_millis() == 0) return uint64_t{c.slices} + 1;  // not a valid window
      return SliceExpiresAt(c, 0) / c.slice_millis();
    },
    .time_parts = &kSlices,
};

}  // namespace redbloom::internal
