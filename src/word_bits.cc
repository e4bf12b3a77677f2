#include "word_bits.h"

#include <sys/file.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "prefetch.h"
#include "strategy/strategy_def.h"
#include "thread_scratch.h"
#include "util/cpu_features.h"
#include "util/sanitizers.h"
#include "word_kernels.h"

namespace redbloom::internal {
namespace {

// How many items ahead to prefetch. Measured here at 1e7 items (a 12 MB
// filter, 1e7 checks plus the fill), CPU seconds for 8 / 16 / 32 / 64 / 128
// items ahead: block 2.05 / 1.77 / 1.48 / 1.61 / 1.69, guava64 2.35 / 2.16 /
// 2.01 / 2.04 / 2.26. Further ahead, lines are evicted before use.
constexpr size_t kPrefetchItems = 32;
constexpr uint64_t kCounterMax = 15;

// Counter i: nibble i in Redis order, i.e. byte i/2, high nibble when i is
// even. Read as a little-endian word, byte b sits at bits 8b..8b+7.
inline uint64_t CounterWord(uint64_t i) { return i >> 4; }
inline unsigned CounterShift(uint64_t i) {
  return static_cast<unsigned>(8 * ((i >> 1) & 7) + ((i & 1) ? 0 : 4));
}

inline uint64_t LoadCounter(uint64_t* words, uint64_t i) {
  const uint64_t w =
      std::atomic_ref<uint64_t>(words[CounterWord(i)]).load(std::memory_order_relaxed);
  return (w >> CounterShift(i)) & 0xF;
}

// Adds `delta` (+1 or -1) to counter i unless it is saturated (15) or the
// result would leave [0, 15]. Returns the value before.
uint64_t StepCounter(uint64_t* words, uint64_t i, int delta) {
  std::atomic_ref<uint64_t> word(words[CounterWord(i)]);
  const unsigned shift = CounterShift(i);
  uint64_t w = word.load(std::memory_order_relaxed);
  while (true) {
    const uint64_t c = (w >> shift) & 0xF;
    if (c == kCounterMax || (delta < 0 && c == 0)) return c;
    const uint64_t next = delta > 0 ? w + (uint64_t{1} << shift) : w - (uint64_t{1} << shift);
    if (word.compare_exchange_weak(w, next, std::memory_order_relaxed)) return c;
  }
}

// flock() for the duration of a scope, when there is a file to lock.
// flock() on a descriptor it owns: unlocked and closed on destruction.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    if (fd_ >= 0) {
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }

 private:
  int fd_;
};

}  // namespace

namespace {

constexpr size_t kLineBytes = 64;
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

void WordsDelete::operator()(uint64_t* p) const {
  if (mapped) {
    ::munmap(p, bytes);
  } else {
    ::operator delete[](p, std::align_val_t{kLineBytes});
  }
}

Words NewWords(size_t bytes) {
  if (bytes >= kHugePage) {
    // Map a huge page more than asked and keep the 2 MiB aligned part: only
    // whole aligned 2 MiB ranges can be huge pages (an unaligned 12 MB
    // mapping kept about 2 MB of it on 4 KiB pages).
    const size_t mapped = bytes + kHugePage;
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return Words(nullptr, WordsDelete{bytes, true});
    const auto start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (start + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
    if (aligned > start) ::munmap(p, aligned - start);
    const uintptr_t end = start + mapped;
    if (end > aligned + bytes)
      ::munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
    auto* words = reinterpret_cast<uint64_t*>(aligned);
    ::madvise(words, bytes, MADV_HUGEPAGE);
    return Words(words, WordsDelete{bytes, true});
  }
  auto* p = new (std::align_val_t{kLineBytes}, std::nothrow) uint64_t[bytes / 8];
  if (p != nullptr) std::memset(p, 0, bytes);
  return Words(p, WordsDelete{bytes, false});
}

namespace word_kernels_internal {

std::atomic<int> vector_kernels{-1};

// Under ThreadSanitizer the vector kernels stay off, even when a test asks
// for them: block's AVX2 check reads a line with plain vector loads while other
// threads set bits in it with atomic stores, a torn read that is harmless
// (bits only turn on; block.cc says why) but a data race in the C++ model,
// which TSan reports. With them off, its concurrent tests run the portable
// kernels, whose every access is atomic, and check the rest of the
// synchronisation, which the two forms share.
int AskCpuForVectorKernels() {
  const int state = !kThreadSanitizer && CpuHasAvx2() ? 1 : 0;
  int unknown = -1;
  // A test's SetVectorKernelsEnabledForTesting that came first wins.
  if (!vector_kernels.compare_exchange_strong(unknown, state, std::memory_order_relaxed)) {
    return unknown;
  }
  return state;
}

}  // namespace word_kernels_internal

void SetVectorKernelsEnabledForTesting(bool enabled) {
  const bool can = !kThreadSanitizer && CpuHasAvx2();
  word_kernels_internal::vector_kernels.store(enabled && can ? 1 : 0, std::memory_order_relaxed);
}

// The low three bits of each counter add without leaving it; the top bit and
// the carry out of the counter come from a full adder over the three top
// bits, and a carry saturates the counter at 15.
uint64_t SaturatingNibbleAdd(uint64_t a, uint64_t b) {
  constexpr uint64_t kLow = 0x7777777777777777ULL;
  constexpr uint64_t kHigh = 0x8888888888888888ULL;
  const uint64_t low = (a & kLow) + (b & kLow);
  const uint64_t ha = a & kHigh, hb = b & kHigh, hl = low & kHigh;
  const uint64_t sum = (low & kLow) | (ha ^ hb ^ hl);
  const uint64_t overflow = ((ha & hb) | (ha & hl) | (hb & hl)) >> 3;  // bit 0 of each counter
  return sum | overflow * 0xF;
}

void MergeCellBytes(std::string_view from, std::string* to, bool counters) {
  const size_t n = std::min(from.size(), to->size());
  for (size_t i = 0; i < n; i += 8) {
    const size_t len = std::min<size_t>(8, n - i);
    uint64_t a = 0, b = 0;
    std::memcpy(&a, to->data() + i, len);
    std::memcpy(&b, from.data() + i, len);
    const uint64_t merged = counters ? SaturatingNibbleAdd(a, b) : a | b;
    std::memcpy(to->data() + i, &merged, len);
  }
}

namespace {

bool Retired(const WordArray& a) {
  return a.superseded != nullptr &&
         std::atomic_ref<uint64_t>(*a.superseded).load(std::memory_order_acquire) != 0;
}

Status CheckLive(const WordArray& a) {
  if (Retired(a)) {
    return Status::Conflict("the filter was dropped or replaced by a rebuild; reopen it");
  }
  return Status::Ok();
}

Status CheckOffsets(const WordArray& a, const uint64_t* offsets, size_t n) {
  // The largest first, in four independent running maxima (one chain of
  // compares cost ~2 ns per item of k = 7), the culprit only on failure.
  uint64_t m0 = 0, m1 = 0, m2 = 0, m3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    m0 = std::max(m0, offsets[i]);
    m1 = std::max(m1, offsets[i + 1]);
    m2 = std::max(m2, offsets[i + 2]);
    m3 = std::max(m3, offsets[i + 3]);
  }
  for (; i < n; ++i) m0 = std::max(m0, offsets[i]);
  if (std::max(std::max(m0, m1), std::max(m2, m3)) < a.cells) return Status::Ok();
  for (i = 0; i < n; ++i) {
    if (offsets[i] >= a.cells) {
      return Status::InvalidArgument("offset " + std::to_string(offsets[i]) +
                                     " is outside the part's " + std::to_string(a.cells) +
                                     " cells");
    }
  }
  return Status::Ok();
}

// A batch's offsets: k per item, the part's hashes (a k of 0 answered
// "present" for nothing, a larger one read past the caller's offsets), and
// each inside the part. As RedisBitStore::CheckBatch.
Status CheckBatch(const WordArray& a, const PartBatch& b) {
  if (b.k != a.hashes) {
    return Status::InvalidArgument("expected " + std::to_string(a.hashes) +
                                   " offsets per item, got " + std::to_string(b.k));
  }
  return CheckOffsets(a, b.offsets, b.items * b.k);
}

// The array's writer gate held shared, or nothing for an array without one
// (see WordArray::writers).
std::shared_lock<WriterGate> ShareWriters(WordArray& a) {
  return a.writers ? std::shared_lock(*a.writers) : std::shared_lock<WriterGate>();
}

// Reserves `items` of the part's `capacity` (PartBatch::capacity).
bool Reserve(WordArray& a, PartBatch& b) {
  const auto writing = ShareWriters(a);  // see AddCount
  std::atomic_ref<uint64_t> count(*a.count);
  uint64_t now = count.load(std::memory_order_relaxed);
  while (true) {
    if (now > b.capacity || b.items > b.capacity - now) {
      b.refused = true;
      b.room = now >= b.capacity ? 0 : b.capacity - now;
      return false;
    }
    if (count.compare_exchange_weak(now, now + b.items, std::memory_order_acq_rel)) {
      b.room = b.capacity - now - b.items;
      return true;
    }
  }
}

// Prefetches the cache lines of an item's cells (PrefetchItemLines, for
// 4-bit counters too).
inline void PrefetchItem(uint64_t* words, const uint64_t* item, uint32_t k, bool counters,
                         bool write) {
  if (counters) {
    PrefetchItemLines<CounterWord>(words, item, k, write);
  } else {
    PrefetchItemLines(words, item, k, write);
  }
}

inline bool TestCounters(uint64_t* words, const uint64_t* item, uint32_t k) {
  for (uint32_t j = 0; j < k; ++j) {
    if (LoadCounter(words, item[j]) == 0) return false;
  }
  return true;
}

// Counting filters: every add increments, since each one needs its own
// remove; the answer says whether a counter left zero.
inline bool IncrementItem(uint64_t* words, const uint64_t* item, uint32_t k) {
  bool was_new = false;
  for (uint32_t j = 0; j < k; ++j) was_new |= StepCounter(words, item[j], +1) == 0;
  return was_new;
}

// Calls visit(i, offsets of item i) for every item of a batch, in order, with
// the cache lines of the item kPrefetchItems further on already requested.
template <typename Visit>
void ForEachItem(uint64_t* words, const uint64_t* offsets, size_t items, uint32_t k, bool counters,
                 bool write, Visit&& visit) {
  for (size_t i = 0; i < items; ++i) {
    if (i + kPrefetchItems < items) {
      PrefetchItem(words, offsets + (i + kPrefetchItems) * k, k, counters, write);
    }
    visit(i, offsets + i * k);
  }
}

// Tests the items of an offsets batch: answer(i, all cells non-zero).
template <typename Answer>
void TestCells(const WordArray& a, const uint64_t* offsets, size_t items, uint32_t k,
               Answer&& answer) {
  uint64_t* words = a.words;
  if (a.cell_bits == 4) {
    ForEachItem(words, offsets, items, k, true, false,
                [&](size_t i, const uint64_t* item) { answer(i, TestCounters(words, item, k)); });
    return;
  }
  ForEachItem(words, offsets, items, k, false, false,
              [&](size_t i, const uint64_t* item) { answer(i, TestItemBits(words, item, k)); });
}

// Runs write(std::true_type) holding a.writers alone, if nobody else holds
// it (try_lock: it never waits), else write(std::false_type): holding it
// shared, or, for arrays without one (file:, whose other writers may be
// other processes), with no lock. See WordArray::writers.
// Always inlined: out of line it cost a single add 20 of its 370 instructions.
template <typename Write>
[[gnu::always_inline]] inline auto AsWriter(WordArray& a, Write&& write) {
  if (!a.writers) return write(std::false_type{});
  if (std::unique_lock alone(*a.writers, std::try_to_lock); alone.owns_lock()) {
    return write(std::true_type{});
  }
  std::shared_lock shared(*a.writers);
  return write(std::false_type{});
}

// Sets (or increments) the cells of an offsets batch; out[i] (if out is not
// null) = 1 if item i turned a cell on. Adds the items that did (counting
// filters: every item) to the part's count, unless Reserve counted them.
void SetCells(WordArray& a, const uint64_t* offsets, size_t items, uint32_t k, uint8_t* out,
              bool reserved) {
  uint64_t* words = a.words;
  const bool counters = a.cell_bits == 4;
  auto run = [&](auto set_item) {
    int64_t fresh = 0;
    ForEachItem(words, offsets, items, k, counters, true, [&](size_t i, const uint64_t* item) {
      const bool was_new = set_item(item);
      if (out != nullptr) out[i] = was_new ? 1 : 0;
      fresh += was_new ? 1 : 0;
    });
    return counters ? static_cast<int64_t>(items) : fresh;
  };
  if (counters) {
    const int64_t fresh = run([&](const uint64_t* item) { return IncrementItem(words, item, k); });
    if (!reserved) AddCount(a, fresh);
    return;
  }
  AsWriter(a, [&](auto alone) {
    constexpr bool kAlone = decltype(alone)::value;
    const int64_t fresh =
        run([&](const uint64_t* item) { return SetItemBits<kAlone>(words, item, k); });
    if (!reserved) AddCount<kAlone>(a, fresh);
  });
}

// Whether a strategy's kernels (word_kernels.h) can run on array `a` for
// geometry `g`: 1-bit cells, a k they take, and every cell of g in the array.
bool KernelsFit(const StrategyDef& strategy, const WordArray& a, const Geometry& g) {
  return strategy.word_kernels != nullptr && a.cell_bits == 1 &&
         g.hashes <= strategy.word_kernels->max_hashes && g.bits <= a.cells;
}

// The general path for hashed items: the batch's offsets, range-checked,
// `fn(first, offsets, n)` for each run of at most OffsetSliceItems(k) items.
// Per thread scratch, so a call allocates nothing once a thread has seen a
// full slice, and keeps at most kScratchOffsets: sized for a whole batch, a
// 100,000-item batch at k = 1074 kept 860 MB in each redbloomd worker that
// served one, for good.
template <typename Fn>
Status ForEachOffsetSlice(const WordArray& a, std::span<const Hash128> hashes,
                          const StrategyDef& strategy, const Geometry& g, Fn&& fn) {
  std::vector<uint64_t>& offsets = Scratch().slice_offsets;
  const size_t slice = OffsetSliceItems(g.hashes);
  for (size_t first = 0; first < hashes.size(); first += slice) {
    const auto part = hashes.subspan(first, std::min(slice, hashes.size() - first));
    offsets.resize(part.size() * g.hashes);
    strategy.offsets(part, g, offsets.data());
    REDBLOOM_RETURN_IF_ERROR(CheckOffsets(a, offsets.data(), offsets.size()));
    fn(first, offsets.data(), part.size());
  }
  return Status::Ok();
}

}  // namespace

WordBitStore::WordBitStore(std::unique_ptr<WordParts> parts, std::shared_ptr<WordArray> main)
    : parts_(std::move(parts)), main_(std::move(main)), main_raw_(main_.get()) {}

bool CheckItemByParts(std::string_view item, const SingleCheck& c, uint64_t* words) {
  return c.test_one(c.hash(item), c.geometry, words, nullptr);
}

Result<WordArray*> WordBitStore::ArrayPtr(uint64_t part, std::shared_ptr<WordArray>* hold) {
  if (part == 0 && main_raw_ != nullptr) {
    REDBLOOM_RETURN_IF_ERROR(CheckLive(*main_raw_));
    return main_raw_;
  }
  REDBLOOM_ASSIGN_OR_RETURN(*hold, Array(part));
  return hold->get();
}

Result<std::shared_ptr<WordArray>> WordBitStore::Array(uint64_t part) {
  if (part == 0 && main_) {
    REDBLOOM_RETURN_IF_ERROR(CheckLive(*main_));
    return main_;
  }
  std::shared_ptr<WordArray> a;
  {
    std::lock_guard lock(mu_);
    auto it = open_.find(part);
    if (it != open_.end()) a = it->second;
  }
  if (!a) {
    REDBLOOM_ASSIGN_OR_RETURN(a, parts_->Open(part));
    std::lock_guard lock(mu_);
    a = open_.try_emplace(part, a).first->second;
  }
  REDBLOOM_RETURN_IF_ERROR(CheckLive(*a));
  return a;
}

Result<std::vector<uint64_t>> WordBitStore::ListParts() {
  if (main_) REDBLOOM_RETURN_IF_ERROR(CheckLive(*main_));
  // Before the listing: a change while it runs leaves the stamp behind.
  const std::optional<PartsStamp> stamp = parts_->Stamp();
  REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> parts, parts_->List());
  {
    std::lock_guard lock(mu_);
    listed_stamp_ = stamp && stamp->settled ? stamp : std::nullopt;
  }
  ForgetRetired();
  return parts;
}

Status WordBitStore::StillLive() {
  return main_raw_ != nullptr ? CheckLive(*main_raw_) : Status::Ok();
}

void WordBitStore::ForgetRetired() {
  // Released after the lock: unmapping a file's array is a system call.
  std::vector<std::shared_ptr<WordArray>> gone;
  std::lock_guard lock(mu_);
  for (auto it = open_.begin(); it != open_.end();) {
    if (!Retired(*it->second)) {
      ++it;
    } else {
      gone.push_back(std::move(it->second));
      it = open_.erase(it);
    }
  }
}

Status WordBitStore::CreatePart(uint64_t part, uint64_t expires_at_ms) {
  if (main_) REDBLOOM_RETURN_IF_ERROR(CheckLive(*main_));
  return parts_->Create(part, expires_at_ms);
}

Status WordBitStore::Test(std::span<PartBatch> batches, std::vector<uint64_t>* parts_now) {
  std::shared_ptr<WordArray> hold;
  for (PartBatch& b : batches) {
    auto a = ArrayPtr(b.part, &hold);
    if (!a.ok() && a.status().code() == StatusCode::kNotFound) {
      std::fill(b.out, b.out + b.items, 0);  // a part never created holds nothing
      continue;
    }
    if (!a.ok()) return a.status();
    REDBLOOM_RETURN_IF_ERROR(CheckBatch(**a, b));
    uint8_t* out = b.out;
    TestCells(**a, b.offsets, b.items, b.k, [out](size_t i, bool all) { out[i] = all ? 1 : 0; });
  }
  if (parts_now != nullptr) {
    REDBLOOM_ASSIGN_OR_RETURN(*parts_now, parts_->List());
  }
  return Status::Ok();
}

Status WordBitStore::Add(std::span<PartBatch> batches) {
  std::shared_ptr<WordArray> hold;
  for (PartBatch& b : batches) {
    REDBLOOM_ASSIGN_OR_RETURN(WordArray * a, ArrayPtr(b.part, &hold));
    if (!a->writable.ok()) return a->writable;
    REDBLOOM_RETURN_IF_ERROR(CheckBatch(*a, b));
    if (b.capacity != 0) {
      if (!Reserve(*a, b)) continue;
      SetCells(*a, b.offsets, b.items, b.k, b.out, /*reserved=*/true);
    } else {
      SetCells(*a, b.offsets, b.items, b.k, b.out, /*reserved=*/false);
    }
    b.accepted = b.items;
  }
  return Status::Ok();
}

Status WordBitStore::KeepExisting(std::vector<uint64_t>* parts) {
  if (!parts_->ListsExisting()) return Status::Ok();
  // Parts this handle has open are asked as before (a retired one reports
  // itself when opened); one unopened part costs a probe, as a listing does.
  size_t unopened = 0;
  {
    std::lock_guard lock(mu_);
    for (uint64_t part : *parts) {
      if (!(part == 0 && main_) && !open_.contains(part)) ++unopened;
    }
  }
  if (unopened < 2) return Status::Ok();
  REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> existing, parts_->Existing());
  std::sort(existing.begin(), existing.end());
  std::lock_guard lock(mu_);
  std::erase_if(*parts, [&](uint64_t part) {
    return !(part == 0 && main_) && !open_.contains(part) &&
           !std::binary_search(existing.begin(), existing.end(), part);
  });
  return Status::Ok();
}

bool WordBitStore::KnowsDenseParts(std::span<const uint64_t> parts) {
  const std::optional<uint64_t> made = PartsMade();
  if (!made || parts.empty() || parts.front() != 0 || parts.back() + 1 != parts.size()) {
    return false;
  }
  // A record of 0 is a filter of one layer, or a file from before the record
  // (version 1, or 2 before it was kept) whose layers nobody recorded: only
  // the first can be trusted.
  if (*made == 0 ? parts.size() != 1 : *made > parts.size()) return false;
  const std::optional<PartsStamp> stamp = parts_->Stamp();
  std::lock_guard lock(mu_);
  if (!stamp || !listed_stamp_ || !(*stamp == *listed_stamp_)) return false;
  for (uint64_t part : parts) {
    if (!(part == 0 && main_) && !open_.contains(part)) return false;
  }
  return true;
}

Status WordBitStore::TestHashes(uint64_t part, std::span<const Hash128> hashes,
                                const StrategyDef& strategy, const Geometry& g, uint8_t* present) {
  WordArray* a = LiveMain(part);
  std::shared_ptr<WordArray> hold;
  if (a == nullptr) {
    auto array = ArrayPtr(part, &hold);
    if (!array.ok()) {
      // A part never created holds nothing.
      return array.status().code() == StatusCode::kNotFound ? Status::Ok() : array.status();
    }
    a = *array;
  }
  if (KernelsFit(strategy, *a, g)) {
    if (hashes.size() == 1) {
      present[0] |= strategy.word_kernels->test_one(hashes[0], g, a->words, nullptr) ? 1 : 0;
    } else {
      strategy.word_kernels->test(hashes, g, a->words, present);
    }
    return Status::Ok();
  }
  return ForEachOffsetSlice(
      *a, hashes, strategy, g, [&](size_t first, const uint64_t* offsets, size_t n) {
        uint8_t* at = present + first;
        TestCells(*a, offsets, n, g.hashes, [at](size_t i, bool all) { at[i] |= all ? 1 : 0; });
      });
}

Status WordBitStore::AddHashes(uint64_t part, std::span<const Hash128> hashes,
                               const StrategyDef& strategy, const Geometry& g, uint8_t* added) {
  WordArray* a = LiveMain(part);
  std::shared_ptr<WordArray> hold;
  if (a == nullptr) {
    REDBLOOM_ASSIGN_OR_RETURN(a, ArrayPtr(part, &hold));
  }
  // A read-only mapping (file store); checked without copying the Status,
  // which a single add would otherwise pay for on every call.
  if (!a->writable.ok()) return a->writable;
  if (!KernelsFit(strategy, *a, g)) {
    return ForEachOffsetSlice(
        *a, hashes, strategy, g, [&](size_t first, const uint64_t* offsets, size_t n) {
          SetCells(*a, offsets, n, g.hashes, added == nullptr ? nullptr : added + first,
                   /*reserved=*/false);
        });
  }
  const WordKernels& kernels = *strategy.word_kernels;
  if (hashes.size() == 1) {
    const bool fresh = AddOneToArray(*a, kernels, kernels.set_one_exclusive, hashes[0], g);
    if (added != nullptr) added[0] = fresh ? 1 : 0;
    return Status::Ok();
  }
  SetWithKernels(*a, kernels, hashes, g, added);
  return Status::Ok();
}

void WordBitStore::SetWithKernels(WordArray& a, const WordKernels& kernels,
                                  std::span<const Hash128> hashes, const Geometry& g,
                                  uint8_t* added) {
  AsWriter(a, [&](auto alone) {
    constexpr bool kAlone = decltype(alone)::value;
    const auto set = kAlone ? kernels.set_exclusive : kernels.set_shared;
    AddCount<kAlone>(a, set(hashes, g, a.words, added));
  });
}

bool WordBitStore::AddItems(std::span<const std::string_view> items, const WordKernels& kernels,
                            const Geometry& g, uint8_t* added) {
  WordArray* a = LiveMain(0);
  if (a == nullptr || !a->writable.ok() || !a->writers) return false;
  std::unique_lock alone(*a->writers, std::try_to_lock);
  if (!alone.owns_lock()) return false;
  const int64_t fresh = kernels.set_items_exclusive(items, g, a->words, added);
  if (fresh == WordKernels::kSetItemsNotTaken) return false;
  AddCount<true>(*a, fresh);
  return true;
}

bool WordBitStore::AddOneGated(WordArray& a, const WordKernels& kernels, const Hash128& hash,
                               const Geometry& g) {
  // An item whose bits are all set cannot be new, so no lock and no write
  // (adding what a filter holds is common: dedup). Adds only ever turn bits
  // on, so a bit seen set stays set (Clear aside, which no add is ordered
  // with anyway).
  OneItem item;
  if (kernels.test_one(hash, g, a.words, &item)) return false;
  // Alone, the one-item kernel, without the batch kernel's set-up
  // (callgrind: about 370 instructions per single add of a block filter, 430
  // through the batch kernel).
  return AsWriter(a, [&](auto alone) {
    constexpr bool kAlone = decltype(alone)::value;
    bool fresh = false;
    if constexpr (kAlone) {
      fresh = kernels.set_one_exclusive(hash, g, a.words, &item);
    } else {
      uint8_t out = 0;
      kernels.set_shared(std::span<const Hash128>(&hash, 1), g, a.words, &out);
      fresh = out != 0;
    }
    AddCount<kAlone>(a, fresh ? 1 : 0);
    return fresh;
  });
}

bool WordBitStore::SingleItemsFit(const StrategyDef& strategy, const Geometry& g) const {
  return main_raw_ != nullptr && KernelsFit(strategy, *main_raw_, g);
}

Status WordBitStore::Remove(std::span<PartBatch> batches) {
  for (PartBatch& b : batches) {
    REDBLOOM_ASSIGN_OR_RETURN(auto array, Array(b.part));
    WordArray& a = *array;
    REDBLOOM_RETURN_IF_ERROR(a.writable);
    if (a.cell_bits != 4) {
      // KindPolicy::Remove refuses first, naming the filter and its kind.
      return Status::Unimplemented("items can be removed only from counting filters");
    }
    const uint32_t k = b.k;
    REDBLOOM_RETURN_IF_ERROR(CheckBatch(a, b));
    // Removes are serialised so that two of them can never both see a counter
    // at 1 and both take it to 0; adds only raise counters, so they need no
    // lock to keep a remove's "all non-zero" check true until it decrements.
    std::unique_lock<std::mutex> in_process;
    if (a.remove_mutex) in_process = std::unique_lock(*a.remove_mutex);
    int lock_fd = -1;
    if (a.open_lock) {
      REDBLOOM_ASSIGN_OR_RETURN(lock_fd, a.open_lock());
    }
    FileLock across_processes(lock_fd);
    uint64_t* words = a.words;
    int64_t gone = 0;
    std::vector<uint64_t> item;
    for (size_t i = 0; i < b.items; ++i) {
      item.assign(b.offsets + i * k, b.offsets + (i + 1) * k);
      std::sort(item.begin(), item.end());
      // An offset that repeats within the item was incremented as many times,
      // so its counter must hold at least that many (or be saturated).
      bool all = true;
      for (size_t j = 0; j < item.size() && all;) {
        size_t run = 1;
        while (j + run < item.size() && item[j + run] == item[j]) ++run;
        const uint64_t c = LoadCounter(words, item[j]);
        all = c == kCounterMax || c >= run;
        j += run;
      }
      if (all) {
        for (uint64_t o : item) StepCounter(words, o, -1);
        ++gone;
      }
      if (b.out != nullptr) b.out[i] = all ? 1 : 0;
    }
    AddCount(a, -gone);
  }
  return Status::Ok();
}

// Info() must stay fast on any filter: a 12 GB file filter took 30 s to
// count and pulled all of it into memory (issue #15.6). Parts up to
// kExactScanWords are counted exactly (64 MiB, about 10 ms from memory);
// larger ones are estimated from kSampleBlocks blocks of kSampleBlockWords
// words (one 4 KiB page each, 4 MiB in all), evenly spread. A Bloom filter's
// cells are set by uniform hashes, so the sampled fill f estimates the whole
// with standard error sqrt(f(1-f)/n): for n = 2^25 sampled bits, 8.6e-5 at
// half fill, i.e. about 0.025% on approximate_items. `block` sets an item's
// k bits in one 64-byte block, so its error is about sqrt(k) times that
// (docs/http-api.md).
constexpr uint64_t kExactScanWords = (uint64_t{64} << 20) / 8;
constexpr uint64_t kSampleBlocks = 1024;
constexpr uint64_t kSampleBlockWords = 512;

Result<FilterStats> WordBitStore::Stats(uint64_t part) {
  REDBLOOM_ASSIGN_OR_RETURN(auto array, Array(part));
  const WordArray& a = *array;
  FilterStats stats;
  const auto count = [&a](uint64_t from, uint64_t to) {
    uint64_t set = 0;
    for (uint64_t w = from; w < to; ++w) {
      const uint64_t v = std::atomic_ref<uint64_t>(a.words[w]).load(std::memory_order_relaxed);
      if (a.cell_bits == 1) {
        set += static_cast<uint64_t>(std::popcount(v));
      } else {
        // Non-zero nibbles: fold each nibble's bits into its lowest bit.
        const uint64_t folded = (v | (v >> 1) | (v >> 2) | (v >> 3)) & 0x1111111111111111ULL;
        set += static_cast<uint64_t>(std::popcount(folded));
      }
    }
    return set;
  };
  const uint64_t n = a.word_count();
  if (n <= kExactScanWords) {
    stats.bits_set = count(0, n);
  } else {
    const uint64_t blocks = n / kSampleBlockWords;  // > kSampleBlocks here
    uint64_t set = 0;
    for (uint64_t i = 0; i < kSampleBlocks; ++i) {
      const uint64_t b = i * blocks / kSampleBlocks;
      set += count(b * kSampleBlockWords, (b + 1) * kSampleBlockWords);
    }
    const double sampled_cells =
        static_cast<double>(kSampleBlocks * kSampleBlockWords * 64 / a.cell_bits);
    const double estimate = std::round(static_cast<double>(set) / sampled_cells * a.cells);
    stats.bits_set = std::min(a.cells, static_cast<uint64_t>(estimate));
    stats.bits_set_exact = false;
  }
  stats.items_added = CountOf(a);
  return stats;
}

Result<uint64_t> WordBitStore::ItemCount(uint64_t part) {
  REDBLOOM_ASSIGN_OR_RETURN(auto a, Array(part));
  return CountOf(*a);
}

Status WordBitStore::Clear() {
  REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> parts, ListParts());
  for (uint64_t p : parts) {
    auto array = Array(p);
    if (!array.ok() && array.status().code() == StatusCode::kNotFound) continue;  // expired
    if (!array.ok()) return array.status();
    WordArray& a = **array;
    REDBLOOM_RETURN_IF_ERROR(a.writable);
    const auto writing = ShareWriters(a);
    const uint64_t n = a.word_count();
    for (uint64_t w = 0; w < n; ++w) {
      std::atomic_ref<uint64_t>(a.words[w]).store(0, std::memory_order_relaxed);
    }
    std::atomic_ref<uint64_t>(*a.count).store(0, std::memory_order_relaxed);
  }
  return Status::Ok();
}

Status WordBitStore::Flush() {
  std::vector<std::shared_ptr<WordArray>> arrays;
  if (main_) arrays.push_back(main_);
  {
    std::lock_guard lock(mu_);
    for (auto& [p, a] : open_) arrays.push_back(a);
  }
  for (auto& a : arrays) {
    if (a->flush) REDBLOOM_RETURN_IF_ERROR(a->flush());
  }
  return Status::Ok();
}

Status WordBitStore::ReadBits(uint64_t part, uint64_t offset, size_t len, std::string* out) {
  REDBLOOM_ASSIGN_OR_RETURN(auto array, Array(part));
  const WordArray& a = *array;
  out->clear();
  if (offset >= a.bitmap_bytes()) return Status::Ok();
  len = static_cast<size_t>(std::min<uint64_t>(len, a.bitmap_bytes() - offset));
  out->resize(len);
  // Word-wise relaxed loads: concurrent adds may or may not be seen, but no
  // torn word is ever read. Whole words are copied as they are (their bytes
  // are in Redis order): byte by byte, a 12 MB bitmap took 5.5 ms.
  size_t i = 0;
  if (offset % 8 == 0) {
    uint64_t* words = a.words + offset / 8;
    for (; i + 8 <= len; i += 8) {
      const uint64_t w = std::atomic_ref<uint64_t>(words[i / 8]).load(std::memory_order_relaxed);
      std::memcpy(out->data() + i, &w, 8);
    }
  }
  while (i < len) {
    const uint64_t pos = offset + i;
    const uint64_t w = std::atomic_ref<uint64_t>(a.words[pos / 8]).load(std::memory_order_relaxed);
    for (uint64_t b = pos % 8; b < 8 && i < len; ++b, ++i) {
      (*out)[i] = static_cast<char>((w >> (8 * b)) & 0xff);
    }
  }
  return Status::Ok();
}

Status WordBitStore::OrBitsAt(uint64_t part, uint64_t offset, std::string_view bytes,
                              uint64_t new_items) {
  REDBLOOM_ASSIGN_OR_RETURN(auto array, Array(part));
  WordArray& a = *array;
  REDBLOOM_RETURN_IF_ERROR(a.writable);
  if (offset > a.bitmap_bytes() || bytes.size() > a.bitmap_bytes() - offset) {
    return Status::InvalidArgument("bytes [" + std::to_string(offset) + ", " +
                                   std::to_string(offset + bytes.size()) +
                                   ") lie outside the part's " + std::to_string(a.bitmap_bytes()));
  }
  const bool counters = a.cell_bits == 4;
  // Bits are ORed with plain loads and stores by a merge that holds the
  // filter's writer lock alone (a 12 MB bitmap took about 10 ms with a
  // locked OR per word), else with locked ORs (see WordArray::writers).
  std::unique_lock<WriterGate> alone;
  std::shared_lock<WriterGate> writing;
  if (a.writers && !counters) alone = std::unique_lock(*a.writers, std::try_to_lock);
  if (a.writers && !alone.owns_lock()) writing = std::shared_lock(*a.writers);
  const bool plain = alone.owns_lock();
  auto merge = [&](uint64_t w, uint64_t v) {
    if (v == 0) return;
    std::atomic_ref<uint64_t> word(a.words[w]);
    if (plain) {
      word.store(word.load(std::memory_order_relaxed) | v, std::memory_order_relaxed);
      return;
    }
    if (!counters) {
      word.fetch_or(v, std::memory_order_relaxed);
      return;
    }
    uint64_t cur = word.load(std::memory_order_relaxed);
    while (
        !word.compare_exchange_weak(cur, SaturatingNibbleAdd(cur, v), std::memory_order_relaxed)) {
    }
  };
  // Byte b of a word is its bits 8b..8b+7 (little-endian loads keep the
  // Redis byte order), so a piece that starts or ends inside a word fills
  // the other bytes of that word with zeros.
  size_t i = 0;
  uint64_t pos = offset;
  if (plain && !counters && pos % 8 == 0) {
    // Whole words, four at a time, with no test for a zero word: a loop
    // that took merge() per word spent 0.4 ns per item of a 1e6-item load
    // here, a tenth of the load's own time.
    uint64_t* words = a.words + pos / 8;
    const char* src = bytes.data();
    const size_t whole = bytes.size() / 8;
    auto or_word = [&](size_t j) {
      uint64_t v;
      std::memcpy(&v, src + 8 * j, 8);
      std::atomic_ref<uint64_t> word(words[j]);
      word.store(word.load(std::memory_order_relaxed) | v, std::memory_order_relaxed);
    };
    size_t j = 0;
    for (; j + 4 <= whole; j += 4) {
      or_word(j);
      or_word(j + 1);
      or_word(j + 2);
      or_word(j + 3);
    }
    for (; j < whole; ++j) or_word(j);
    i = 8 * whole;
    pos += i;
  }
  while (i < bytes.size()) {
    const size_t in_word = static_cast<size_t>(pos % 8);
    const size_t n = std::min<size_t>(8 - in_word, bytes.size() - i);
    uint64_t v = 0;
    if (n == 8) {
      std::memcpy(&v, bytes.data() + i, 8);
    } else {
      std::memcpy(reinterpret_cast<char*>(&v) + in_word, bytes.data() + i, n);
    }
    merge(pos / 8, v);
    i += n;
    pos += n;
  }
  AddCount(a, static_cast<int64_t>(new_items));
  return Status::Ok();
}

}  // namespace redbloom::internal
