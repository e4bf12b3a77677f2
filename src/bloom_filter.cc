#include "redbloom/bloom_filter.h"

#include <algorithm>

#include "redbloom/funnel.h"
#include "redbloom/sizing.h"
#include "redbloom/strategy.h"

namespace redbloom {

BloomFilter::BloomFilter(std::string name, FilterConfig config, std::unique_ptr<BitStore> bits)
    : name_(std::move(name)), config_(std::move(config)), bits_(std::move(bits)) {}

BloomFilter::~BloomFilter() = default;

Result<std::unique_ptr<BloomFilter>> BloomFilter::Create(Store& store, std::string_view name,
                                                         const FilterOptions& options,
                                                         bool* created) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, MakeConfig(options));
  Status s = store.Create(name, config);
  if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
  if (created != nullptr) *created = s.ok();
  REDBLOOM_ASSIGN_OR_RETURN(auto bits, store.OpenBits(name, config));
  return std::unique_ptr<BloomFilter>(new BloomFilter(std::string(name), config, std::move(bits)));
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Open(Store& store, std::string_view name) {
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, store.ReadConfig(name));
  REDBLOOM_ASSIGN_OR_RETURN(auto bits, store.OpenBits(name, config));
  return std::unique_ptr<BloomFilter>(new BloomFilter(std::string(name), config, std::move(bits)));
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Attach(Store& store, std::string_view name,
                                                         const FilterOptions& options) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, MakeConfig(options));
  REDBLOOM_RETURN_IF_ERROR(store.Attach(name, config));
  REDBLOOM_ASSIGN_OR_RETURN(auto bits, store.OpenBits(name, config));
  return std::unique_ptr<BloomFilter>(new BloomFilter(std::string(name), config, std::move(bits)));
}

Status BloomFilter::Drop(Store& store, std::string_view name) { return store.Drop(name); }

Status BloomFilter::HashAll(std::span<const std::string_view> items,
                            std::vector<Hash128>* hashes) const {
  hashes->resize(items.size());
  std::string scratch;
  for (size_t i = 0; i < items.size(); ++i) {
    Status s = HashItem(config_.encoding, items[i], &scratch, &(*hashes)[i]);
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
  REDBLOOM_RETURN_IF_ERROR(HashAll(items, &hashes));
  return AddHashes(hashes, added);
}

Result<bool> BloomFilter::Contains(std::string_view item) {
  std::vector<uint8_t> present;
  REDBLOOM_RETURN_IF_ERROR(ContainsMany(std::span<const std::string_view>(&item, 1), &present));
  return present[0] != 0;
}

Status BloomFilter::ContainsMany(std::span<const std::string_view> items,
                                 std::vector<uint8_t>* present) {
  std::vector<Hash128> hashes;
  REDBLOOM_RETURN_IF_ERROR(HashAll(items, &hashes));
  return ContainsHashes(hashes, present);
}

namespace {

// Runs `op` over `hashes` in slices of the store's preferred batch, with the
// offsets of one slice computed before the store touches any bit: hashing and
// offset arithmetic first, then (in the store) prefetch, then memory.
template <typename Op>
Status ForEachSlice(const FilterConfig& config, size_t batch, std::span<const Hash128> hashes,
                    uint8_t* out, Op op) {
  const uint32_t k = config.geometry.hashes;
  batch = std::max<size_t>(1, std::min(batch, hashes.size()));
  std::vector<uint64_t> offsets(batch * k);
  for (size_t start = 0; start < hashes.size(); start += batch) {
    const size_t n = std::min(batch, hashes.size() - start);
    for (size_t i = 0; i < n; ++i) {
      ComputeOffsets(config.strategy, hashes[start + i], config.geometry, &offsets[i * k]);
    }
    REDBLOOM_RETURN_IF_ERROR(op(offsets.data(), n, k, out == nullptr ? nullptr : out + start));
  }
  return Status::Ok();
}

}  // namespace

Status BloomFilter::AddHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* added) {
  if (added != nullptr) added->assign(hashes.size(), 0);
  Status s = ForEachSlice(config_, bits_->preferred_batch(), hashes,
                          added == nullptr ? nullptr : added->data(),
                          [&](const uint64_t* offsets, size_t n, uint32_t k, uint8_t* out) {
                            return bits_->Add(offsets, n, k, out);
                          });
  // A failed batch reports no item as new (some may have been written).
  if (!s.ok() && added != nullptr) added->assign(hashes.size(), 0);
  return s;
}

Status BloomFilter::ContainsHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* present) {
  present->assign(hashes.size(), 0);
  Status s = ForEachSlice(config_, bits_->preferred_batch(), hashes, present->data(),
                          [&](const uint64_t* offsets, size_t n, uint32_t k, uint8_t* out) {
                            return bits_->Test(offsets, n, k, out);
                          });
  if (!s.ok()) present->clear();  // never leave half an answer that reads as "absent"
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
  return ItemOffsets(config_, item);
}

Status BloomFilter::Clear() { return bits_->Clear(); }

Status BloomFilter::Flush() { return bits_->Flush(); }

Status BloomFilter::ReadBitmap(std::string* out) {
  // 4 MiB per read bounds one Redis command's reply and the time it holds the
  // server, while keeping round trips few (a 1e7-item filter is 3 reads).
  constexpr size_t kChunk = 4 << 20;
  const uint64_t total = config_.data_bytes();
  out->clear();
  out->reserve(total);
  std::string chunk;
  for (uint64_t offset = 0; offset < total; offset += kChunk) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kChunk, total - offset));
    REDBLOOM_RETURN_IF_ERROR(bits_->ReadBits(offset, len, &chunk));
    out->append(chunk);
    // A bitmap shorter than its config (a Redis key never pre-sized, as the
    // Java service leaves it) reads as zeros past its end.
    if (chunk.size() < len) out->append(len - chunk.size(), '\0');
  }
  return Status::Ok();
}

Status BloomFilter::OrBitmap(std::string_view bitmap, uint64_t new_items) {
  if (bitmap.size() != config_.data_bytes()) {
    return Status::InvalidArgument("bitmap has " + std::to_string(bitmap.size()) +
                                   " bytes; filter '" + name_ + "' has " +
                                   std::to_string(config_.data_bytes()));
  }
  return bits_->OrBits(bitmap, new_items);
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
  const uint32_t k = config_.geometry.hashes;
  offsets_.resize(k);
  auto* bytes = reinterpret_cast<uint8_t*>(bitmap_.data());
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
  REDBLOOM_ASSIGN_OR_RETURN(FilterStats stats, bits_->Stats());
  FilterInfo info;
  info.name = name_;
  info.config = config_;
  info.bits_set = stats.bits_set;
  info.items_added = stats.items_added;
  const Geometry& g = config_.geometry;
  info.approximate_items = ApproximateCount(stats.bits_set, g.bits, g.hashes);
  info.fill_ratio = g.bits == 0 ? 0 : static_cast<double>(stats.bits_set) / g.bits;
  info.current_fpp = FppAtFill(stats.bits_set, g.bits, g.hashes);
  return info;
}

}  // namespace redbloom
