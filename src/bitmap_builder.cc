// BitmapBuilder: a plain or counting filter's one array of cells built in
// this process's memory, as the sole writer, for `load` and for callers
// that ship a finished bitmap (OrBitmap).
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

#include "item_hashing.h"
#include "prefetch.h"
#include "redbloom/bloom_filter.h"
#include "strategy/strategy_def.h"
#include "word_bits.h"
#include "word_kernels.h"

namespace redbloom {

struct BitmapBuilder::Words {
  internal::Words words;
};

namespace {

// Faults in a fresh anonymous mapping, writable and zeroed; false if the
// kernel does not offer it.
bool Prefault(void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  return ::madvise(p, bytes, MADV_POPULATE_WRITE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

}  // namespace

BitmapBuilder::BitmapBuilder(const FilterConfig& config)
    : config_(config), words_(std::make_unique<Words>()) {
  if (Status s = internal::CheckMadeConfig(config); !s.ok())
    throw std::invalid_argument(s.message());
  // Its one array is what OrBitmap takes, and only from a filter of one:
  // a scaling, window or sharded filter's builder built bits nothing takes.
  if (!config.one_array()) {
    throw std::invalid_argument(
        "a builder makes one bit array: a " + std::string(FilterKindName(config.kind)) +
        (config.shards > 1 ? " filter of " + std::to_string(config.shards) + " shards"
                           : " filter") +
        " has several");
  }
  // Whole 64-byte lines: the kernels touch a `block` item's line as words.
  const uint64_t bytes = (config.data_bytes() + 63) / 64 * 64;
  words_->words = internal::NewWords(bytes);
  if (!words_->words) throw std::bad_alloc();
  // A mapping is faulted in now, as a std::string's zeroing used to: pages
  // the kernel zeroes on first touch come in cold, and at 1e7 items (12 MB) a
  // load into them was slower than adding the items to the filter. The
  // kernel does it in one pass with MADV_POPULATE_WRITE (Linux 5.14): 1.2 ms
  // of this thread's CPU at 1e7 here, against 7-28 ms for a memset that
  // faults each page in and then writes it again. Older kernels refuse the
  // advice and get the memset. (Smaller arrays come zeroed by NewWords.)
  if (words_->words.get_deleter().mapped && !Prefault(words_->words.get(), bytes)) {
    std::memset(words_->words.get(), 0, bytes);
  }
}

BitmapBuilder::~BitmapBuilder() = default;
BitmapBuilder::BitmapBuilder(BitmapBuilder&&) noexcept = default;
BitmapBuilder& BitmapBuilder::operator=(BitmapBuilder&&) noexcept = default;

std::string_view BitmapBuilder::bitmap() const {
  // The words hold bytes in Redis order (word_bits.h).
  return {reinterpret_cast<const char*>(words_->words.get()),
          static_cast<size_t>(config_.data_bytes())};
}

Result<BitmapBuilder> BitmapBuilder::Make(const FilterConfig& config) {
  try {
    return BitmapBuilder(config);  // checks the config (CheckMadeConfig)
  } catch (const std::invalid_argument& e) {
    return Status::InvalidArgument(e.what());
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("no memory for " + std::to_string(config.data_bytes()) +
                                     " bytes of cells to build in");
  }
}

Result<BitmapBuilder> BitmapBuilder::StartingFrom(BloomFilter& filter) {
  const FilterConfig config = filter.config();
  if (config.cell_bits() != 1) {
    return Status::InvalidArgument("filter '" + filter.name() +
                                   "': only a plain filter's builder starts from its bits");
  }
  Result<BitmapBuilder> builder = Make(config);
  if (!builder.ok()) return builder.status().WithContext("filter '" + filter.name() + "'");
  REDBLOOM_RETURN_IF_ERROR(filter.ReadBitmap(
      std::span<char>(reinterpret_cast<char*>(builder->words_->words.get()), config.data_bytes())));
  return builder;
}

BitmapBuilder::BitmapBuilder(const FilterConfig& config, std::string_view bitmap)
    : BitmapBuilder(config) {
  // A counting filter's OrBitmap adds the builder's counters to its own: a
  // builder holding them already would count every item in it twice, and a
  // later Remove would leave it present.
  if (config.cell_bits() != 1) {
    throw std::invalid_argument("only a plain filter's builder starts from its bitmap");
  }
  // Another length is another filter's bitmap: it was cut or padded with
  // zeros, and the builder's bits answered for neither.
  if (bitmap.size() != config.data_bytes()) {
    throw std::invalid_argument("bitmap has " + std::to_string(bitmap.size()) +
                                " bytes; the filter's has " + std::to_string(config.data_bytes()));
  }
  std::memcpy(words_->words.get(), bitmap.data(), bitmap.size());
}

namespace {

// The in-memory stores' kernels, where they build a bitmap of `config`: one
// array of 1-bit cells and a k they take; else null.
const internal::WordKernels* KernelsFor(const FilterConfig& config) {
  const internal::WordKernels* kernels = internal::StrategyOf(config.strategy).word_kernels;
  if (kernels == nullptr || !config.one_array() || config.cell_bits() != 1 ||
      config.geometry.hashes > kernels->max_hashes) {
    return nullptr;
  }
  return kernels;
}

}  // namespace

Status BitmapBuilder::Add(std::span<const std::string_view> items) {
  // As BloomFilter::AddMany: validated first, then hashed and set in one
  // pass where the kernels take it.
  if (const internal::WordKernels* kernels = KernelsFor(config_);
      kernels != nullptr && kernels->set_items_exclusive != nullptr &&
      internal::ItemsAreTheirBytes(config_.encoding)) {
    if (config_.encoding == Encoding::kUtf8)
      REDBLOOM_RETURN_IF_ERROR(internal::CheckUtf8(items, 0));
    const int64_t fresh =
        kernels->set_items_exclusive(items, config_.geometry, words_->words.get(), nullptr);
    if (fresh != internal::WordKernels::kSetItemsNotTaken) {
      items_ += items.size();
      new_items_ += static_cast<uint64_t>(fresh);
      return Status::Ok();
    }
  }
  std::vector<Hash128> own;
  std::vector<Hash128>& hashes = internal::HashScratch(items.size(), own);
  hashes.resize(items.size());
  REDBLOOM_RETURN_IF_ERROR(internal::HashItems(config_, items, hashes.data()));
  return AddHashes(hashes);
}

Status BitmapBuilder::AddHashes(std::span<const Hash128> hashes) {
  if (!config_.one_array()) {
    return Status::InvalidArgument("a " + std::string(FilterKindName(config_.kind)) +
                                   " filter has several bit arrays; bulk bitmaps are built for "
                                   "plain and counting filters");
  }
  const internal::StrategyDef& strategy = internal::StrategyOf(config_.strategy);
  const Geometry& g = config_.geometry;
  const uint32_t k = g.hashes;
  const bool counters = config_.cell_bits() == 4;
  uint64_t* words = words_->words.get();
  items_ += hashes.size();
  if (const internal::WordKernels* kernels = KernelsFor(config_); kernels != nullptr) {
    // The in-memory stores' own add (word_kernels.h), as the bitmap's only
    // writer: without it a load of 1e7 items was slower than adding them.
    new_items_ += static_cast<uint64_t>(kernels->set_exclusive(hashes, g, words, nullptr));
    return Status::Ok();
  }
  auto* bytes = reinterpret_cast<uint8_t*>(words);
  // Offsets a slice at a time, then the cells with the lines of the items
  // 16 ahead prefetched, as the stores' batches do (word_bits.cc).
  constexpr size_t kSlice = 1024;
  constexpr size_t kAhead = 16;
  for (size_t start = 0; start < hashes.size(); start += kSlice) {
    const size_t n = std::min(kSlice, hashes.size() - start);
    offsets_.resize(n * k);
    strategy.offsets(hashes.subspan(start, n), g, offsets_.data());
    for (size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) {
        for (uint32_t j = 0; j < k; ++j) {
          const uint64_t o = offsets_[(i + kAhead) * k + j];
          internal::PrefetchForWrite(&bytes[counters ? o >> 1 : o >> 3]);
        }
      }
      const uint64_t* item = &offsets_[i * k];
      if (counters) {
        // Counter i is nibble i in Redis order: byte i/2, high nibble when
        // even. Every add counts, as a counting filter's adds do: each needs
        // a remove.
        for (uint32_t j = 0; j < k; ++j) {
          const uint64_t o = item[j];
          const unsigned shift = (o & 1) ? 0 : 4;
          uint8_t& byte = bytes[o >> 1];
          if (((byte >> shift) & 0xF) != 0xF) byte = static_cast<uint8_t>(byte + (1u << shift));
        }
        continue;
      }
      uint8_t fresh = 0;
      for (uint32_t j = 0; j < k; ++j) {
        const uint64_t o = item[j];
        const auto mask = static_cast<uint8_t>(0x80u >> (o & 7));
        fresh |= static_cast<uint8_t>(~bytes[o >> 3] & mask);
        bytes[o >> 3] |= mask;
      }
      new_items_ += fresh != 0 ? 1 : 0;
    }
  }
  if (counters) new_items_ += hashes.size();
  return Status::Ok();
}

}  // namespace redbloom
