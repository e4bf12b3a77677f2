#include "item_hashing.h"

#include <algorithm>
#include <array>
#include <string>

#include "encode_items.h"
#include "redbloom/funnel.h"
#include "strategy/strategy_def.h"
#include "thread_scratch.h"
#include "util/utf8.h"

namespace redbloom::internal {

Status ItemError(Encoding encoding, std::string_view item) {
  std::string scratch;
  std::string_view bytes;
  Status s = EncodeItem(encoding, item, &scratch, &bytes);
  return s.ok() ? Status::Internal("an item refused once was accepted when encoded again") : s;
}

Status CheckUtf8(std::span<const std::string_view> items, size_t base) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (!IsUtf8(items[i])) {
      return InvalidUtf8Item().WithContext("item " + std::to_string(base + i + 1));
    }
  }
  return Status::Ok();
}

namespace {

// ItemError of a batch's item `index`.
[[gnu::noinline]] Status BatchItemError(Encoding encoding, std::string_view item, size_t index) {
  return ItemError(encoding, item).WithContext("item " + std::to_string(index + 1));
}

// int32, int64 and utf8x2 items, whose bytes are built: kBuildChunk at a
// time into one buffer, then hashed together (hash_many where the strategy
// has it). utf8x2's UTF-8 is checked only when the hash saw a byte that is
// not ASCII.
constexpr size_t kBuildChunk = 256;

Status HashBuiltItems(Encoding encoding, const StrategyDef& strategy,
                      std::span<const std::string_view> items, Hash128* out) {
  std::string& scratch = Scratch().built_items;
  std::string own;
  std::array<std::string_view, kBuildChunk> views;
  for (size_t base = 0; base < items.size(); base += kBuildChunk) {
    const auto chunk = items.subspan(base, std::min(kBuildChunk, items.size() - base));
    size_t total = 0;
    for (std::string_view item : chunk) total += BuiltSize(encoding, item);
    std::string& buffer = total <= kBuildScratch ? scratch : own;
    if (buffer.size() < total) buffer.resize(total);
    char* p = buffer.data();
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (!BuildItem(encoding, chunk[i], p)) {
        return BatchItemError(encoding, chunk[i], base + i);
      }
      views[i] = std::string_view(p, BuiltSize(encoding, chunk[i]));
      p += views[i].size();
    }
    const std::span<const std::string_view> built(views.data(), chunk.size());
    bool ascii = false;
    if (strategy.hash_many != nullptr) {
      ascii = strategy.hash_many(built, out + base);
    } else {
      for (size_t i = 0; i < built.size(); ++i) out[base + i] = strategy.hash(built[i]);
    }
    if (encoding == Encoding::kUtf8x2 && !ascii) REDBLOOM_RETURN_IF_ERROR(CheckUtf8(chunk, base));
  }
  return Status::Ok();
}

}  // namespace

Status HashItems(const FilterConfig& config, std::span<const std::string_view> items,
                 Hash128* out) {
  const StrategyDef& strategy = StrategyOf(config.strategy);
  if (ItemsAreTheirBytes(config.encoding)) {
    // The item is its own bytes: validated and hashed while in L1, without
    // a Status per item (a quarter of a batched `block` check went there).
    // Measured in one process over 1e6 and 1e7 ORD-i items (best of 9
    // passes, CPU ns per item): validate all, then hash all 7.4-7.9;
    // the same with the items 16 ahead prefetched 7.6-8.6; one loop 6.7-7.0
    // (block, before it had Xxh3_128Many; the loop below now serves the
    // strategies without a batch hash).
    const bool utf8 = config.encoding == Encoding::kUtf8;
    if (strategy.hash_many != nullptr) {
      // All at once, and validated only when not all ASCII, which the hash
      // tells from the words it reads: a separate check of 11-byte ids cost
      // a batched guava64 check 2.3 ns of its 16 here.
      if (strategy.hash_many(items, out) || !utf8) return Status::Ok();
      return CheckUtf8(items, 0);
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (utf8 && !IsUtf8(items[i])) {
        return InvalidUtf8Item().WithContext("item " + std::to_string(i + 1));
      }
      out[i] = strategy.hash(items[i]);
    }
    return Status::Ok();
  }
  if (EncodingBuildsBytes(config.encoding)) {
    return HashBuiltItems(config.encoding, strategy, items, out);
  }
  return items.empty() ? Status::Ok() : BatchItemError(config.encoding, items[0], 0);
}

// Batches of up to this many items hash into the thread's scratch.
constexpr size_t kScratchHashes = size_t{1} << 14;

std::vector<Hash128>& HashScratch(size_t items, std::vector<Hash128>& own) {
  return items <= kScratchHashes ? Scratch().hashes : own;
}

Status CheckMadeConfig(const FilterConfig& config) {
  // A filter an older build stored with a TTL or window past today's limit
  // opens as it was stored (config_codec.cc); what the kernels read, the
  // strategy, encoding, kind and geometry, is checked.
  FilterConfig c = config;
  c.ttl_seconds = 0;
  c.window_millis = std::min(c.window_millis, kMaxTtlSeconds * 1000);
  Result<FilterConfig> again = MakeConfig(OptionsOf(c));
  if (again.ok() && *again == c) return Status::Ok();
  return Status::InvalidArgument(
      "the FilterConfig (" + config.ToString() + ") is not one MakeConfig made" +
      (again.ok() ? std::string(": its fields disagree") : ": " + again.status().message()));
}

}  // namespace redbloom::internal
