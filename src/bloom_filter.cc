#include "redbloom/bloom_filter.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "redbloom/funnel.h"
#include "redbloom/sizing.h"
#include "redbloom/strategy.h"
#include "stores.h"

namespace redbloom {

// What an open filter holds: its config and the bit arrays opened so far.
// Parts (scaling layers, window slices) are opened on first use and cached.
struct BloomFilter::State {
  FilterConfig config;
  std::unique_ptr<BitStore> main;  // null for window filters

  std::mutex parts_mu;
  std::map<uint64_t, std::shared_ptr<BitStore>> parts;
  std::map<uint64_t, Geometry> part_geometry;
};

namespace {

// Runs `op` over `hashes` in slices of the store's preferred batch, with the
// offsets of one slice computed before the store touches any bit: hashing and
// offset arithmetic first, then (in the store) prefetch, then memory.
template <typename Op>
Status ForEachSlice(const FilterConfig& config, const Geometry& geometry, size_t batch,
                    std::span<const Hash128> hashes, uint8_t* out, Op op) {
  if (hashes.empty()) return Status::Ok();
  const uint32_t k = geometry.hashes;
  batch = std::max<size_t>(1, std::min(batch, hashes.size()));
  // Small calls (single items above all) use the stack: a heap allocation
  // costs about as much as the bit lookups of one item.
  std::array<uint64_t, 4 * kMaxHashes> inline_offsets;
  std::vector<uint64_t> heap_offsets;
  uint64_t* offsets = inline_offsets.data();
  if (batch * k > inline_offsets.size()) {
    heap_offsets.resize(batch * k);
    offsets = heap_offsets.data();
  }
  for (size_t start = 0; start < hashes.size(); start += batch) {
    const size_t n = std::min(batch, hashes.size() - start);
    for (size_t i = 0; i < n; ++i) {
      ComputeOffsets(config.strategy, hashes[start + i], geometry, &offsets[i * k]);
    }
    REDBLOOM_RETURN_IF_ERROR(op(offsets, n, k, out == nullptr ? nullptr : out + start));
  }
  return Status::Ok();
}

Status AddTo(BitStore& bits, const FilterConfig& config, const Geometry& g,
             std::span<const Hash128> hashes, uint8_t* out) {
  return ForEachSlice(config, g, bits.preferred_batch(), hashes, out,
                      [&](const uint64_t* offsets, size_t n, uint32_t k, uint8_t* o) {
                        return bits.Add(offsets, n, k, o);
                      });
}

Status TestIn(BitStore& bits, const FilterConfig& config, const Geometry& g,
              std::span<const Hash128> hashes, uint8_t* out) {
  return ForEachSlice(config, g, bits.preferred_batch(), hashes, out,
                      [&](const uint64_t* offsets, size_t n, uint32_t k, uint8_t* o) {
                        return bits.Test(offsets, n, k, o);
                      });
}

uint64_t CurrentSlice(const FilterConfig& c) { return internal::NowMillis() / c.slice_millis(); }

}  // namespace

BloomFilter::BloomFilter(Store& store, std::string name, std::shared_ptr<State> state)
    : store_(store), name_(std::move(name)), state_(std::move(state)) {}

BloomFilter::~BloomFilter() = default;

Result<std::shared_ptr<BloomFilter::State>> BloomFilter::Load(Store& store, std::string_view name) {
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, store.ReadConfig(name));
  auto state = std::make_shared<State>();
  state->config = config;
  if (config.kind != FilterKind::kWindow) {
    REDBLOOM_ASSIGN_OR_RETURN(state->main, store.OpenBits(name, config));
  }
  return state;
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Create(Store& store, std::string_view name,
                                                         const FilterOptions& options,
                                                         bool* created) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, MakeConfig(options));
  Status s = store.Create(name, config);
  if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
  if (created != nullptr) *created = s.ok();
  return Open(store, name);
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Open(Store& store, std::string_view name) {
  REDBLOOM_ASSIGN_OR_RETURN(auto state, Load(store, name));
  return std::unique_ptr<BloomFilter>(new BloomFilter(store, std::string(name), std::move(state)));
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Attach(Store& store, std::string_view name,
                                                         const FilterOptions& options) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, MakeConfig(options));
  if (config.kind != FilterKind::kPlain) {
    return Status::InvalidArgument("attach adopts plain bitmaps only");
  }
  REDBLOOM_RETURN_IF_ERROR(store.Attach(name, config));
  return Open(store, name);
}

Status BloomFilter::Drop(Store& store, std::string_view name) { return store.Drop(name); }

Status BloomFilter::Rebuild(Store& store, std::string_view name, const FilterOptions& options,
                            const std::function<Status(BloomFilter&)>& fill) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  if (!IsOneArrayKind(options.kind)) {
    return Status::InvalidArgument("only plain and counting filters can be rebuilt");
  }
  const std::string temp = std::string(name) + "~rebuild";
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(temp));
  // A rebuild that died half-way leaves its temporary filter; start afresh.
  if (Status s = store.Drop(temp); !s.ok() && s.code() != StatusCode::kNotFound) return s;
  bool created = false;
  REDBLOOM_ASSIGN_OR_RETURN(auto replacement, Create(store, temp, options, &created));
  Status s = fill(*replacement);
  if (s.ok()) s = replacement->Flush();
  if (!s.ok()) {
    (void)store.Drop(temp);  // the old filter is untouched; report the fill error
    return s.WithContext("rebuild of '" + std::string(name) + "'");
  }
  return store.Replace(name, temp);
}

std::shared_ptr<BloomFilter::State> BloomFilter::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

FilterConfig BloomFilter::config() const { return state()->config; }

template <typename Op>
Status BloomFilter::WithReopen(Op&& op) {
  std::shared_ptr<State> current = state();
  Status s = op(*current);
  if (s.code() != StatusCode::kConflict) return s;
  // The filter may have been rebuilt or re-created under us. Reopen it; if it
  // is still the same filter the conflict was something else: report it.
  auto fresh = Load(store_, name_);
  if (!fresh.ok()) return fresh.status().code() == StatusCode::kNotFound ? fresh.status() : s;
  {
    std::lock_guard lock(mu_);
    if (state_ == current) state_ = *fresh;
    current = state_;
  }
  return op(*current);
}

Status BloomFilter::HashAll(Encoding encoding, std::span<const std::string_view> items,
                            std::vector<Hash128>* hashes) const {
  hashes->resize(items.size());
  std::string scratch;
  for (size_t i = 0; i < items.size(); ++i) {
    Status s = HashItem(encoding, items[i], &scratch, &(*hashes)[i]);
    if (!s.ok()) return s.WithContext("item " + std::to_string(i + 1));
  }
  return Status::Ok();
}

Status BloomFilter::Add(std::string_view item, bool* added) {
  std::vector<uint8_t> out;
  REDBLOOM_RETURN_IF_ERROR(AddMany(std::span<const std::string_view>(&item, 1), &out));
  if (added != nullptr) *added = out[0] != 0;
  return Status::Ok();
}

Status BloomFilter::AddMany(std::span<const std::string_view> items, std::vector<uint8_t>* added) {
  std::vector<Hash128> hashes;
  REDBLOOM_RETURN_IF_ERROR(HashAll(config().encoding, items, &hashes));
  return AddHashes(hashes, added);
}

Result<bool> BloomFilter::Contains(std::string_view item) {
  Hash128 hash;
  std::string scratch;
  REDBLOOM_RETURN_IF_ERROR(HashItem(config().encoding, item, &scratch, &hash));
  uint8_t present = 0;
  REDBLOOM_RETURN_IF_ERROR(WithReopen([&](State& st) {
    present = 0;
    return ContainsHashesIn(st, std::span<const Hash128>(&hash, 1), &present);
  }));
  return present != 0;
}

Status BloomFilter::ContainsMany(std::span<const std::string_view> items,
                                 std::vector<uint8_t>* present) {
  std::vector<Hash128> hashes;
  REDBLOOM_RETURN_IF_ERROR(HashAll(config().encoding, items, &hashes));
  return ContainsHashes(hashes, present);
}

Status BloomFilter::Remove(std::string_view item, bool* removed) {
  std::vector<uint8_t> out;
  REDBLOOM_RETURN_IF_ERROR(RemoveMany(std::span<const std::string_view>(&item, 1), &out));
  if (removed != nullptr) *removed = out[0] != 0;
  return Status::Ok();
}

Status BloomFilter::RemoveMany(std::span<const std::string_view> items,
                               std::vector<uint8_t>* removed) {
  std::vector<Hash128> hashes;
  REDBLOOM_RETURN_IF_ERROR(HashAll(config().encoding, items, &hashes));
  return RemoveHashes(hashes, removed);
}

namespace {

// Opens part `part` through the state's cache.
Result<std::shared_ptr<BitStore>> CachedPart(Store& store, const std::string& name, std::mutex& mu,
                                             std::map<uint64_t, std::shared_ptr<BitStore>>& cache,
                                             const FilterConfig& config, uint64_t part,
                                             bool create) {
  {
    std::lock_guard lock(mu);
    auto it = cache.find(part);
    if (it != cache.end()) return it->second;
  }
  REDBLOOM_ASSIGN_OR_RETURN(auto bits, store.OpenPart(name, config, part, create));
  std::shared_ptr<BitStore> shared = std::move(bits);
  std::lock_guard lock(mu);
  return cache.try_emplace(part, shared).first->second;
}

}  // namespace

Status BloomFilter::AddHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* added) {
  std::vector<uint8_t> out(hashes.size(), 0);
  Status s = WithReopen([&](State& st) -> Status {
    const FilterConfig& c = st.config;
    std::fill(out.begin(), out.end(), 0);
    auto part = [&](uint64_t p, bool create) {
      return CachedPart(store_, name_, st.parts_mu, st.parts, c, p, create);
    };
    switch (c.kind) {
      case FilterKind::kPlain:
      case FilterKind::kCounting:
        return AddTo(*st.main, c, c.geometry, hashes, out.data());

      case FilterKind::kScaling: {
        // RedisBloom's model: an item already in any layer is not added
        // again; the rest go to the newest layer, which grows a successor
        // once it holds its capacity.
        std::vector<uint8_t> present(hashes.size(), 0);
        REDBLOOM_RETURN_IF_ERROR(ContainsHashesIn(st, hashes, present.data()));
        std::vector<size_t> todo;
        for (size_t i = 0; i < hashes.size(); ++i) {
          if (!present[i]) todo.push_back(i);
        }
        REDBLOOM_ASSIGN_OR_RETURN(uint64_t layers, store_.Layers(name_, c));
        size_t next = 0;
        while (next < todo.size()) {
          const uint64_t last = layers - 1;
          REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(c, last));
          REDBLOOM_ASSIGN_OR_RETURN(auto bits, part(last, /*create=*/false));
          REDBLOOM_ASSIGN_OR_RETURN(uint64_t count, bits->ItemCount());
          if (count >= sizing.capacity) {
            // Full: grow (exactly one client wins a race) and use the newest.
            REDBLOOM_ASSIGN_OR_RETURN(layers, store_.GrowLayers(name_, c, layers));
            continue;
          }
          const size_t n = std::min<size_t>(todo.size() - next, sizing.capacity - count);
          std::vector<Hash128> chunk(n);
          for (size_t i = 0; i < n; ++i) chunk[i] = hashes[todo[next + i]];
          std::vector<uint8_t> chunk_out(n);
          REDBLOOM_RETURN_IF_ERROR(AddTo(*bits, c, sizing.geometry, chunk, chunk_out.data()));
          for (size_t i = 0; i < n; ++i) out[todo[next + i]] = chunk_out[i];
          next += n;
        }
        return Status::Ok();
      }

      case FilterKind::kWindow: {
        // Every item goes into the current slice, even one that an older
        // slice already (maybe falsely) matches: that slice expires first, and
        // skipping the add would then lose an item seen moments ago. "New"
        // means: not present in any live slice before this call.
        std::vector<uint8_t> present(hashes.size(), 0);
        REDBLOOM_RETURN_IF_ERROR(ContainsHashesIn(st, hashes, present.data()));
        REDBLOOM_ASSIGN_OR_RETURN(auto bits, part(CurrentSlice(c), /*create=*/true));
        REDBLOOM_RETURN_IF_ERROR(AddTo(*bits, c, c.geometry, hashes, out.data()));
        for (size_t i = 0; i < hashes.size(); ++i) out[i] = present[i] ? 0 : 1;
        return Status::Ok();
      }
    }
    return Status::Internal("unknown filter kind");
  });
  if (added != nullptr) {
    // A failed call reports no item as new (some may have been written).
    if (s.ok()) {
      *added = std::move(out);
    } else {
      added->assign(hashes.size(), 0);
    }
  }
  return s;
}

Status BloomFilter::ContainsHashesIn(State& st, std::span<const Hash128> hashes, uint8_t* present) {
  const FilterConfig& c = st.config;
  switch (c.kind) {
    case FilterKind::kPlain:
    case FilterKind::kCounting:
      return TestIn(*st.main, c, c.geometry, hashes, present);
    case FilterKind::kScaling:
    case FilterKind::kWindow: {
      std::vector<uint64_t> parts;
      if (c.kind == FilterKind::kScaling) {
        REDBLOOM_ASSIGN_OR_RETURN(uint64_t layers, store_.Layers(name_, c));
        for (uint64_t p = 0; p < layers; ++p) parts.push_back(p);
      } else {
        const uint64_t now = CurrentSlice(c);
        for (uint64_t p = now + 1 - std::min<uint64_t>(c.slices, now + 1); p <= now; ++p) {
          parts.push_back(p);
        }
      }
      std::vector<uint8_t> hit(hashes.size());
      // Newest first: recent items are the likeliest hits, and an item found
      // in one part need not be tested in the others.
      std::vector<Hash128> todo(hashes.begin(), hashes.end());
      std::vector<size_t> where(hashes.size());
      for (size_t i = 0; i < where.size(); ++i) where[i] = i;
      for (auto p = parts.rbegin(); p != parts.rend() && !todo.empty(); ++p) {
        auto bits = CachedPart(store_, name_, st.parts_mu, st.parts, c, *p, /*create=*/false);
        if (!bits.ok()) {
          // A slice nobody added to in its time does not exist: it holds
          // nothing. Any other failure is an error, never "absent".
          if (bits.status().code() == StatusCode::kNotFound && c.kind == FilterKind::kWindow) {
            continue;
          }
          return bits.status();
        }
        REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(c, *p));
        hit.assign(todo.size(), 0);
        REDBLOOM_RETURN_IF_ERROR(TestIn(**bits, c, sizing.geometry, todo, hit.data()));
        size_t kept = 0;
        for (size_t i = 0; i < todo.size(); ++i) {
          if (hit[i]) {
            present[where[i]] = 1;
          } else {
            todo[kept] = todo[i];
            where[kept] = where[i];
            ++kept;
          }
        }
        todo.resize(kept);
        where.resize(kept);
      }
      return Status::Ok();
    }
  }
  return Status::Internal("unknown filter kind");
}

Status BloomFilter::ContainsHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* present) {
  std::vector<uint8_t> out(hashes.size());
  Status s = WithReopen([&](State& st) {
    std::fill(out.begin(), out.end(), 0);
    return ContainsHashesIn(st, hashes, out.data());
  });
  if (!s.ok()) {
    present->clear();  // never leave half an answer that reads as "absent"
    return s;
  }
  *present = std::move(out);
  return s;
}

Status BloomFilter::RemoveHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* removed) {
  std::vector<uint8_t> out(hashes.size(), 0);
  Status s = WithReopen([&](State& st) -> Status {
    const FilterConfig& c = st.config;
    if (c.kind != FilterKind::kCounting) {
      return Status::Unimplemented("filter '" + name_ + "' is a " +
                                   std::string(FilterKindName(c.kind)) +
                                   " filter; only counting filters can remove items");
    }
    return ForEachSlice(c, c.geometry, st.main->preferred_batch(), hashes, out.data(),
                        [&](const uint64_t* offsets, size_t n, uint32_t k, uint8_t* o) {
                          return st.main->Remove(offsets, n, k, o);
                        });
  });
  if (removed != nullptr) {
    if (s.ok()) {
      *removed = std::move(out);
    } else {
      removed->assign(hashes.size(), 0);
    }
  }
  return s;
}

Result<std::vector<uint64_t>> ItemOffsets(const FilterConfig& config, std::string_view item) {
  Hash128 hash;
  std::string scratch;
  REDBLOOM_RETURN_IF_ERROR(HashItem(config.encoding, item, &scratch, &hash));
  std::vector<uint64_t> offsets(config.geometry.hashes);
  ComputeOffsets(config.strategy, hash, config.geometry, offsets.data());
  return offsets;
}

Result<std::vector<uint64_t>> BloomFilter::Offsets(std::string_view item) const {
  return ItemOffsets(config(), item);
}

Status BloomFilter::Clear() {
  return WithReopen([&](State& st) -> Status {
    if (st.main) REDBLOOM_RETURN_IF_ERROR(st.main->Clear());
    if (st.config.kind == FilterKind::kScaling || st.config.kind == FilterKind::kWindow) {
      REDBLOOM_ASSIGN_OR_RETURN(auto parts, store_.ListParts(name_, st.config));
      for (uint64_t p : parts) {
        auto bits = CachedPart(store_, name_, st.parts_mu, st.parts, st.config, p, false);
        if (!bits.ok() && bits.status().code() == StatusCode::kNotFound) continue;
        if (!bits.ok()) return bits.status();
        REDBLOOM_RETURN_IF_ERROR((*bits)->Clear());
      }
    }
    return Status::Ok();
  });
}

Status BloomFilter::Flush() {
  std::shared_ptr<State> st = state();
  if (st->main) REDBLOOM_RETURN_IF_ERROR(st->main->Flush());
  std::lock_guard lock(st->parts_mu);
  for (auto& [p, bits] : st->parts) REDBLOOM_RETURN_IF_ERROR(bits->Flush());
  return Status::Ok();
}

namespace {

// Reads `total` bytes of `bits` into *out. 4 MiB per read bounds one Redis
// command's reply and the time it holds the server, while keeping round trips
// few (a 1e7-item filter is 3 reads).
Status ReadAllBits(BitStore& bits, uint64_t total, std::string* out) {
  constexpr size_t kChunk = 4 << 20;
  out->clear();
  out->reserve(total);
  std::string chunk;
  for (uint64_t offset = 0; offset < total; offset += kChunk) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kChunk, total - offset));
    REDBLOOM_RETURN_IF_ERROR(bits.ReadBits(offset, len, &chunk));
    out->append(chunk);
    // A bitmap shorter than its config (a Redis key never pre-sized, as the
    // Java service leaves it) reads as zeros past its end.
    if (chunk.size() < len) out->append(len - chunk.size(), '\0');
  }
  return Status::Ok();
}

bool IsLiveSlice(const FilterConfig& c, uint64_t part, uint64_t now) {
  return part + c.slices > now;
}

}  // namespace

Result<uint64_t> PartBytes(const FilterConfig& config, uint64_t part) {
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(config, part));
  return (sizing.geometry.bits * config.cell_bits() + 7) / 8;
}

Status BloomFilter::ReadBitmap(std::string* out) {
  return WithReopen([&](State& st) -> Status {
    const FilterConfig& c = st.config;
    if (!c.one_array()) {
      return Status::InvalidArgument("filter '" + name_ + "' is a " +
                                     std::string(FilterKindName(c.kind)) +
                                     " filter with several bit arrays; read them with ReadParts");
    }
    return ReadAllBits(*st.main, c.data_bytes(), out);
  });
}

Result<std::vector<uint64_t>> BloomFilter::PartIds(const FilterConfig& c) {
  std::vector<uint64_t> ids;
  if (c.kind == FilterKind::kScaling) {
    REDBLOOM_ASSIGN_OR_RETURN(uint64_t layers, store_.Layers(name_, c));
    for (uint64_t p = 0; p < layers; ++p) ids.push_back(p);
  } else if (c.kind == FilterKind::kWindow) {
    REDBLOOM_ASSIGN_OR_RETURN(ids, store_.ListParts(name_, c));
    const uint64_t now = CurrentSlice(c);
    std::erase_if(ids, [&](uint64_t p) { return !IsLiveSlice(c, p, now); });
  } else {
    ids.push_back(0);
  }
  return ids;
}

Status BloomFilter::ReadParts(std::vector<Part>* out) {
  return WithReopen([&](State& st) -> Status {
    const FilterConfig& c = st.config;
    out->clear();
    if (c.one_array()) {
      Part part;
      REDBLOOM_RETURN_IF_ERROR(ReadAllBits(*st.main, c.data_bytes(), &part.bytes));
      REDBLOOM_ASSIGN_OR_RETURN(part.items, st.main->ItemCount());
      out->push_back(std::move(part));
      return Status::Ok();
    }
    REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> ids, PartIds(c));
    for (uint64_t id : ids) {
      auto bits = CachedPart(store_, name_, st.parts_mu, st.parts, c, id, /*create=*/false);
      // A slice may expire between the listing and the read.
      if (!bits.ok() && bits.status().code() == StatusCode::kNotFound &&
          c.kind == FilterKind::kWindow) {
        continue;
      }
      if (!bits.ok()) return bits.status();
      Part part;
      part.id = id;
      REDBLOOM_ASSIGN_OR_RETURN(uint64_t bytes, PartBytes(c, id));
      REDBLOOM_RETURN_IF_ERROR(ReadAllBits(**bits, bytes, &part.bytes));
      REDBLOOM_ASSIGN_OR_RETURN(part.items, (*bits)->ItemCount());
      out->push_back(std::move(part));
    }
    return Status::Ok();
  });
}

Status BloomFilter::MergeParts(std::span<const Part> parts) {
  return WithReopen([&](State& st) -> Status {
    const FilterConfig& c = st.config;
    for (const Part& part : parts) {
      auto bytes = PartBytes(c, part.id);
      if (!bytes.ok()) return bytes.status().WithContext("part " + std::to_string(part.id));
      if (part.bytes.size() != *bytes) {
        return Status::InvalidArgument("part " + std::to_string(part.id) + " has " +
                                       std::to_string(part.bytes.size()) + " bytes; filter '" +
                                       name_ + "' needs " + std::to_string(*bytes));
      }
    }
    if (c.one_array()) {
      for (const Part& part : parts) {
        REDBLOOM_RETURN_IF_ERROR(st.main->OrBits(part.bytes, part.items));
      }
      return Status::Ok();
    }
    uint64_t layers = 0;
    if (c.kind == FilterKind::kScaling) {
      REDBLOOM_ASSIGN_OR_RETURN(layers, store_.Layers(name_, c));
    }
    const uint64_t now = c.kind == FilterKind::kWindow ? CurrentSlice(c) : 0;
    for (const Part& part : parts) {
      if (c.kind == FilterKind::kScaling) {
        // GrowLayers adds one layer past `layers` (or learns that another
        // client did): repeat until this part's layer exists.
        while (layers <= part.id) {
          REDBLOOM_ASSIGN_OR_RETURN(layers, store_.GrowLayers(name_, c, layers));
        }
      } else if (!IsLiveSlice(c, part.id, now)) {
        continue;  // its items have left the window
      }
      const bool create = c.kind == FilterKind::kWindow;
      REDBLOOM_ASSIGN_OR_RETURN(
          auto bits, CachedPart(store_, name_, st.parts_mu, st.parts, c, part.id, create));
      REDBLOOM_RETURN_IF_ERROR(bits->OrBits(part.bytes, part.items));
    }
    return Status::Ok();
  });
}

Status BloomFilter::OrBitmap(std::string_view bitmap, uint64_t new_items) {
  return WithReopen([&](State& st) -> Status {
    const FilterConfig& c = st.config;
    if (!c.one_array()) {
      return Status::InvalidArgument(
          "filter '" + name_ + "' is a " + std::string(FilterKindName(c.kind)) +
          " filter; bulk loads, imports and merges apply to plain and counting filters");
    }
    if (bitmap.size() != c.data_bytes()) {
      return Status::InvalidArgument("bitmap has " + std::to_string(bitmap.size()) +
                                     " bytes; filter '" + name_ + "' has " +
                                     std::to_string(c.data_bytes()));
    }
    return st.main->OrBits(bitmap, new_items);
  });
}

BitmapBuilder::BitmapBuilder(const FilterConfig& config)
    : config_(config), bitmap_(config.data_bytes(), '\0') {}

Status BitmapBuilder::Add(std::span<const std::string_view> items) {
  std::vector<Hash128> hashes(items.size());
  std::string scratch;
  for (size_t i = 0; i < items.size(); ++i) {
    Status s = HashItem(config_.encoding, items[i], &scratch, &hashes[i]);
    if (!s.ok()) return s.WithContext("item " + std::to_string(i + 1));
  }
  return AddHashes(hashes);
}

Status BitmapBuilder::AddHashes(std::span<const Hash128> hashes) {
  if (!config_.one_array()) {
    return Status::InvalidArgument("a " + std::string(FilterKindName(config_.kind)) +
                                   " filter has several bit arrays; bulk bitmaps are built for "
                                   "plain and counting filters");
  }
  const uint32_t k = config_.geometry.hashes;
  offsets_.resize(k);
  auto* bytes = reinterpret_cast<uint8_t*>(bitmap_.data());
  if (config_.kind == FilterKind::kCounting) {
    // Counter i is nibble i in Redis order: byte i/2, high nibble when even.
    // Every add counts, as a counting filter's adds do: each needs a remove.
    for (const Hash128& h : hashes) {
      ComputeOffsets(config_.strategy, h, config_.geometry, offsets_.data());
      for (uint64_t o : offsets_) {
        const unsigned shift = (o & 1) ? 0 : 4;
        uint8_t& byte = bytes[o >> 1];
        if (((byte >> shift) & 0xF) != 0xF) byte = static_cast<uint8_t>(byte + (1u << shift));
      }
    }
    new_items_ += hashes.size();
    items_ += hashes.size();
    return Status::Ok();
  }
  for (const Hash128& h : hashes) {
    ComputeOffsets(config_.strategy, h, config_.geometry, offsets_.data());
    bool fresh = false;
    for (uint64_t o : offsets_) {
      const uint8_t mask = static_cast<uint8_t>(0x80u >> (o & 7));
      fresh |= (bytes[o >> 3] & mask) == 0;
      bytes[o >> 3] |= mask;
    }
    new_items_ += fresh ? 1 : 0;
  }
  items_ += hashes.size();
  return Status::Ok();
}

Result<FilterInfo> BloomFilter::Info() {
  FilterInfo info;
  Status s = WithReopen([&](State& st) -> Status {
    const FilterConfig& c = st.config;
    info = FilterInfo();
    info.name = name_;
    info.config = c;
    std::vector<std::pair<std::shared_ptr<BitStore>, Geometry>> parts;
    if (c.one_array()) {
      parts.emplace_back(std::shared_ptr<BitStore>(st.main.get(), [](BitStore*) {}), c.geometry);
    } else {
      REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> ids, PartIds(c));
      if (c.kind == FilterKind::kWindow) {
        // A slice ahead of this clock (another client's clock runs fast) is
        // not checked yet, so it does not count yet either.
        const uint64_t now = CurrentSlice(c);
        std::erase_if(ids, [&](uint64_t p) { return p > now; });
      }
      for (uint64_t p : ids) {
        auto bits = CachedPart(store_, name_, st.parts_mu, st.parts, c, p, false);
        if (!bits.ok() && bits.status().code() == StatusCode::kNotFound) continue;
        if (!bits.ok()) return bits.status();
        REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(c, p));
        parts.emplace_back(*bits, sizing.geometry);
      }
    }
    info.parts = parts.size();
    // log of the probability that no part answers "present" for a fresh item;
    // log1p/expm1 keep rates like 1e-17 from rounding to 0.
    double log_miss = 0.0;
    for (auto& [bits, g] : parts) {
      REDBLOOM_ASSIGN_OR_RETURN(FilterStats stats, bits->Stats());
      info.bits += g.bits;
      info.memory_bytes += (g.bits * c.cell_bits() + 7) / 8;
      info.bits_set += stats.bits_set;
      info.items_added += stats.items_added;
      const uint64_t estimate = ApproximateCount(stats.bits_set, g.bits, g.hashes);
      info.approximate_items = (estimate == UINT64_MAX || info.approximate_items == UINT64_MAX)
                                   ? UINT64_MAX
                                   : info.approximate_items + estimate;
      log_miss += std::log1p(-FppAtFill(stats.bits_set, g.bits, g.hashes));
    }
    info.fill_ratio = info.bits == 0 ? 0 : static_cast<double>(info.bits_set) / info.bits;
    info.current_fpp = log_miss == 0 ? 0.0 : -std::expm1(log_miss);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return info;
}

}  // namespace redbloom
