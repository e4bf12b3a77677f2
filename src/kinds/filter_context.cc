#include "kinds/filter_context.h"

#include <algorithm>

#include "hashed_cells.h"
#include "kinds/kind_def.h"
#include "strategy/strategy_def.h"
#include "thread_scratch.h"

namespace redbloom::internal {

Result<PartSizing> PartCache::Sizing(const FilterConfig& config, uint64_t part) {
  if (part == 0 && part0_ready_.load(std::memory_order_acquire)) return part0_;
  {
    std::lock_guard lock(mu_);
    auto it = sizing_.find(part);
    if (it != sizing_.end()) return it->second;
  }
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing s, SizePart(config, part));
  std::lock_guard lock(mu_);
  const PartSizing kept = sizing_.try_emplace(part, s).first->second;
  if (part == 0 && !part0_ready_.load(std::memory_order_relaxed)) {
    part0_ = kept;
    part0_ready_.store(true, std::memory_order_release);
  }
  if (const auto forgettable_below = KindOf(config.kind).forgettable_below) {
    sizing_.erase(sizing_.begin(), sizing_.lower_bound(forgettable_below(config, part)));
  }
  return kept;
}

std::vector<uint64_t> PartCache::known_parts() const {
  std::lock_guard lock(mu_);
  return known_parts_;
}

void PartCache::set_known_parts(std::vector<uint64_t> parts) {
  std::lock_guard lock(mu_);
  // Parts only come (layers never go while the filter lives): keep the
  // longest list seen, so a slow caller cannot shrink what a fast one learnt.
  if (parts.size() >= known_parts_.size()) known_parts_ = std::move(parts);
}

bool PartCache::created(uint64_t part) const {
  std::lock_guard lock(mu_);
  return std::find(created_.begin(), created_.end(), part) != created_.end();
}

void PartCache::set_created(uint64_t part) {
  std::lock_guard lock(mu_);
  if (std::find(created_.begin(), created_.end(), part) != created_.end()) return;
  created_.push_back(part);
  // Only recent slices matter; keep the list short.
  if (created_.size() > 64) created_.erase(created_.begin());
}

bool PartCache::forget_created(uint64_t part) {
  std::lock_guard lock(mu_);
  const auto it = std::find(created_.begin(), created_.end(), part);
  if (it == created_.end()) return false;
  created_.erase(it);
  return true;
}

FilterContext::FilterContext(std::string_view name, const FilterConfig& config, BitStore& bits,
                             const Clock& clock, PartCache& cache)
    : name_(name),
      config_(config),
      bits_(bits),
      clock_(clock),
      cache_(cache),
      strategy_(cache.strategy() != nullptr ? *cache.strategy() : StrategyOf(config.strategy)) {}

Status FilterContext::Offsets(uint64_t part, std::span<const Hash128> hashes,
                              std::vector<uint64_t>* out) {
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, Sizing(part));
  const Geometry& g = sizing.geometry;
  out->resize(hashes.size() * g.hashes);
  strategy_.offsets(hashes, g, out->data());
  return Status::Ok();
}

Status FilterContext::SizedGeometry(uint64_t part, Geometry* g) {
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, Sizing(part));
  *g = sizing.geometry;
  return Status::Ok();
}

namespace {

// Single-item calls on part 0 (every call of a plain or counting filter)
// keep their offsets on the stack: no scratch, no Result copies.
constexpr uint32_t kStackOffsets = 64;

// Frees, as a store call returns, the offsets and answers it held beyond
// what a thread keeps (kScratchOffsets): a call carries up to
// kStoreCallOffsets.
class ShrinkScratch {
 public:
  ShrinkScratch() = default;
  ShrinkScratch(const ShrinkScratch&) = delete;
  ShrinkScratch& operator=(const ShrinkScratch&) = delete;
  ~ShrinkScratch() {
    ThreadScratch& s = Scratch();
    size_t kept = Trim(&s.add_offsets, 0);
    for (auto& offsets : s.part_offsets) kept = Trim(&offsets, kept);
    size_t answers = 0;
    for (auto& a : s.part_answers) answers = Trim(&a, answers);
  }

 private:
  // Keeps `v` while the elements kept so far stay within the bound; returns
  // how many are kept with it.
  template <typename T>
  static size_t Trim(std::vector<T>* v, size_t kept) {
    if (kept + v->capacity() <= kScratchOffsets) return kept + v->capacity();
    std::vector<T>().swap(*v);
    return kept;
  }
};

}  // namespace

Status FilterContext::TestIn(std::span<const uint64_t> parts, std::span<const Hash128> hashes,
                             uint8_t* present, std::vector<uint64_t>* parts_now, bool all_exist) {
  HashedCells* cells = cache_.hashed_cells();
  if (cells == nullptr) return TestInStore(parts, hashes, present, parts_now);
  // Memory stores compute the offsets themselves, part by part. Of several
  // parts (a window's slices), those the store can tell are missing are
  // skipped: on file:, one directory read for a day's window of 24 slices of
  // which 21 were never made, where TestHashes would try to open each.
  if (parts.size() > 1 && !all_exist) {
    std::vector<uint64_t>& existing = Scratch().existing_parts;
    existing.assign(parts.begin(), parts.end());
    REDBLOOM_RETURN_IF_ERROR(cells->KeepExisting(&existing));
    parts = existing;
  }
  for (uint64_t part : parts) {
    Geometry g;
    REDBLOOM_RETURN_IF_ERROR(GeometryOf(part, &g));
    REDBLOOM_RETURN_IF_ERROR(cells->TestHashes(part, hashes, strategy_, g, present));
  }
  if (parts_now != nullptr) {
    REDBLOOM_ASSIGN_OR_RETURN(*parts_now, bits_.ListParts());
  }
  return Status::Ok();
}

Status FilterContext::TestInStore(std::span<const uint64_t> parts, std::span<const Hash128> hashes,
                                  uint8_t* present, std::vector<uint64_t>* parts_now) {
  if (const PartSizing* sizing = cache_.part0();
      sizing != nullptr && hashes.size() == 1 && parts.size() == 1 && parts[0] == 0 &&
      parts_now == nullptr && sizing->geometry.hashes <= kStackOffsets) {
    uint64_t offsets[kStackOffsets];
    strategy_.offsets(hashes, sizing->geometry, offsets);
    uint8_t answer = 0;
    PartBatch batch{
        .part = 0, .k = sizing->geometry.hashes, .offsets = offsets, .items = 1, .out = &answer};
    REDBLOOM_RETURN_IF_ERROR(bits_.Test(std::span<PartBatch>(&batch, 1), nullptr));
    present[0] |= answer;
    return Status::Ok();
  }
  if (parts.empty()) {
    if (parts_now != nullptr) {
      REDBLOOM_ASSIGN_OR_RETURN(*parts_now, bits_.ListParts());
    }
    return Status::Ok();
  }
  // Scratch kept per thread: a call allocates nothing once a thread has
  // seen its largest batch (single-item calls included).
  ThreadScratch& scratch = Scratch();
  std::vector<std::vector<uint64_t>>& offsets = scratch.part_offsets;
  std::vector<std::vector<uint8_t>>& answers = scratch.part_answers;
  std::vector<PartBatch>& batches = scratch.part_batches;
  if (offsets.size() < parts.size()) offsets.resize(parts.size());
  if (answers.size() < parts.size()) answers.resize(parts.size());
  batches.resize(parts.size());
  size_t k_max = 1;
  for (size_t p = 0; p < parts.size(); ++p) {
    REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, Sizing(parts[p]));
    batches[p] = PartBatch{.part = parts[p], .k = sizing.geometry.hashes};
    k_max = std::max<size_t>(k_max, sizing.geometry.hashes);
  }
  // One slice tests every part, so the store's batch is shared among them;
  // bounded by a call's offsets, too (StoreSliceItems).
  const size_t slice =
      std::max<size_t>(1, std::min({hashes.size(), bits_.preferred_batch() / parts.size(),
                                    StoreSliceItems(static_cast<uint32_t>(k_max)) / parts.size()}));
  const ShrinkScratch shrink;
  bool first = true;
  for (size_t start = 0; start < hashes.size() || first; start += slice) {
    const size_t n = std::min(slice, hashes.size() - start);
    const auto chunk = hashes.subspan(start, n);
    for (size_t p = 0; p < parts.size(); ++p) {
      REDBLOOM_RETURN_IF_ERROR(Offsets(parts[p], chunk, &offsets[p]));
      answers[p].assign(n, 0);
      batches[p].offsets = offsets[p].data();
      batches[p].items = n;
      batches[p].out = answers[p].data();
    }
    REDBLOOM_RETURN_IF_ERROR(bits_.Test(std::span<PartBatch>(batches.data(), parts.size()),
                                        first ? parts_now : nullptr));
    first = false;
    for (size_t p = 0; p < parts.size(); ++p) {
      for (size_t i = 0; i < n; ++i) present[start + i] |= answers[p][i];
    }
    if (n == 0) break;
  }
  return Status::Ok();
}

Status FilterContext::AddTo(uint64_t part, std::span<const Hash128> hashes, uint8_t* out,
                            uint64_t capacity, size_t* done, uint64_t* room) {
  HashedCells* cells = cache_.hashed_cells();
  // Reservations (capacity) are the BitStore's business.
  if (cells == nullptr || capacity != 0) return AddToStore(part, hashes, out, capacity, done, room);
  Geometry g;
  REDBLOOM_RETURN_IF_ERROR(GeometryOf(part, &g));
  if (done != nullptr) *done = 0;
  REDBLOOM_RETURN_IF_ERROR(cells->AddHashes(part, hashes, strategy_, g, out));
  if (done != nullptr) *done = hashes.size();
  if (room != nullptr) *room = 0;
  return Status::Ok();
}

Status FilterContext::AddToStore(uint64_t part, std::span<const Hash128> hashes, uint8_t* out,
                                 uint64_t capacity, size_t* done, uint64_t* room) {
  if (const PartSizing* sizing = cache_.part0(); sizing != nullptr && hashes.size() == 1 &&
                                                 part == 0 && capacity == 0 &&
                                                 sizing->geometry.hashes <= kStackOffsets) {
    uint64_t offsets[kStackOffsets];
    strategy_.offsets(hashes, sizing->geometry, offsets);
    PartBatch batch{
        .part = 0, .k = sizing->geometry.hashes, .offsets = offsets, .items = 1, .out = out};
    REDBLOOM_RETURN_IF_ERROR(bits_.Add(std::span<PartBatch>(&batch, 1)));
    if (done != nullptr) *done = 1;
    if (room != nullptr) *room = batch.room;
    return Status::Ok();
  }
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, Sizing(part));
  const uint32_t k = sizing.geometry.hashes;
  const size_t slice = std::max<size_t>(1, std::min(bits_.preferred_batch(), StoreSliceItems(k)));
  std::vector<uint64_t>& offsets = Scratch().add_offsets;  // see TestInStore
  const ShrinkScratch shrink;
  if (done != nullptr) *done = 0;
  for (size_t start = 0; start < hashes.size(); start += slice) {
    const size_t n = std::min(slice, hashes.size() - start);
    REDBLOOM_RETURN_IF_ERROR(Offsets(part, hashes.subspan(start, n), &offsets));
    PartBatch batch{.part = part,
                    .k = k,
                    .offsets = offsets.data(),
                    .items = n,
                    .out = out == nullptr ? nullptr : out + start,
                    .capacity = capacity};
    if (Status s = bits_.Add(std::span<PartBatch>(&batch, 1)); !s.ok()) {
      if (done != nullptr) *done = start + batch.accepted;
      return s;
    }
    if (room != nullptr) *room = batch.room;
    if (batch.refused) {
      if (done != nullptr) *done = start + batch.accepted;
      return Status::Ok();
    }
    if (done != nullptr) *done = start + n;
  }
  return Status::Ok();
}

Status FilterContext::RemoveFrom(uint64_t part, std::span<const Hash128> hashes, uint8_t* out) {
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, Sizing(part));
  const uint32_t k = sizing.geometry.hashes;
  const size_t slice = std::max<size_t>(1, bits_.preferred_batch());
  std::vector<uint64_t> offsets;
  for (size_t start = 0; start < hashes.size(); start += slice) {
    const size_t n = std::min(slice, hashes.size() - start);
    REDBLOOM_RETURN_IF_ERROR(Offsets(part, hashes.subspan(start, n), &offsets));
    PartBatch batch{
        .part = part, .k = k, .offsets = offsets.data(), .items = n, .out = out + start};
    REDBLOOM_RETURN_IF_ERROR(bits_.Remove(std::span<PartBatch>(&batch, 1)));
  }
  return Status::Ok();
}

Status FilterContext::Routed(Op op, std::span<const uint32_t> part_of,
                             std::span<const Hash128> hashes, uint8_t* out) {
  const size_t slice = std::max<size_t>(1, bits_.preferred_batch());
  std::map<uint32_t, std::vector<size_t>> items;  // part -> its items in this slice
  std::vector<std::vector<Hash128>> part_hashes;
  std::vector<std::vector<uint64_t>> offsets;
  std::vector<std::vector<uint8_t>> answers;
  std::vector<PartBatch> batches;
  for (size_t start = 0; start < hashes.size(); start += slice) {
    const size_t n = std::min(slice, hashes.size() - start);
    items.clear();
    for (size_t i = start; i < start + n; ++i) items[part_of[i]].push_back(i);
    part_hashes.assign(items.size(), {});
    offsets.assign(items.size(), {});
    answers.assign(items.size(), {});
    batches.clear();
    size_t b = 0;
    for (const auto& [part, which] : items) {
      for (size_t i : which) part_hashes[b].push_back(hashes[i]);
      REDBLOOM_RETURN_IF_ERROR(Offsets(part, part_hashes[b], &offsets[b]));
      REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, Sizing(part));
      answers[b].assign(which.size(), 0);
      batches.push_back(PartBatch{.part = part,
                                  .k = sizing.geometry.hashes,
                                  .offsets = offsets[b].data(),
                                  .items = which.size(),
                                  .out = answers[b].data()});
      ++b;
    }
    switch (op) {
      case Op::kTest:
        REDBLOOM_RETURN_IF_ERROR(bits_.Test(batches));
        break;
      case Op::kAdd:
        REDBLOOM_RETURN_IF_ERROR(bits_.Add(batches));
        break;
      case Op::kRemove:
        REDBLOOM_RETURN_IF_ERROR(bits_.Remove(batches));
        break;
    }
    b = 0;
    for (const auto& [part, which] : items) {
      for (size_t j = 0; j < which.size(); ++j) {
        if (out != nullptr) out[which[j]] |= answers[b][j];
      }
      ++b;
    }
  }
  return Status::Ok();
}

}  // namespace redbloom::internal
