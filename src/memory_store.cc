// mem: an in-process store for tests and embedding. Filters live as long as
// the Store object; bits are plain words updated with atomic operations.
#include <map>
#include <mutex>
#include <new>

#include "stores.h"
#include "word_bits.h"

namespace redbloom::internal {
namespace {

struct MemArray {
  std::unique_ptr<uint64_t[]> words;
  uint64_t cells = 0;
  uint32_t cell_bits = 1;
  uint64_t count = 0;
  uint64_t superseded = 0;
  uint64_t expires_at_ms = 0;  // 0 = never
};

struct MemFilter {
  FilterConfig config;
  uint64_t expires_at_ms = 0;
  std::shared_ptr<MemArray> main;
  std::map<uint64_t, std::shared_ptr<MemArray>> parts;
  uint64_t layers = 1;
  std::shared_ptr<std::mutex> remove_mutex = std::make_shared<std::mutex>();
};

bool Expired(uint64_t expires_at_ms, uint64_t now) {
  return expires_at_ms != 0 && now >= expires_at_ms;
}

Result<std::shared_ptr<MemArray>> NewArray(uint64_t cells, uint32_t cell_bits,
                                           std::string_view name) {
  auto a = std::make_shared<MemArray>();
  a->cells = cells;
  a->cell_bits = cell_bits;
  const uint64_t words = (cells * cell_bits + 63) / 64;
  a->words.reset(new (std::nothrow) uint64_t[words]());
  if (!a->words) {
    return Status::ResourceExhausted("cannot allocate " + std::to_string(words * 8) +
                                     " bytes for filter '" + std::string(name) + "'");
  }
  return a;
}

class MemoryStore final : public Store {
 public:
  std::string url() const override { return "mem:"; }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    std::lock_guard lock(mu_);
    auto existing = Find(name);
    if (existing.ok()) return ExistsStatus(name, (*existing)->config, config);
    auto filter = std::make_shared<MemFilter>();
    filter->config = config;
    if (config.ttl_seconds != 0) filter->expires_at_ms = NowMillis() + config.ttl_seconds * 1000;
    if (config.kind != FilterKind::kWindow) {
      REDBLOOM_ASSIGN_OR_RETURN(filter->main,
                                NewArray(config.geometry.bits, config.cell_bits(), name));
    }
    filters_.insert_or_assign(std::string(name), std::move(filter));
    return Status::Ok();
  }

  Result<FilterConfig> ReadConfig(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    return filter->config;
  }

  Result<std::vector<std::string>> List() override {
    std::lock_guard lock(mu_);
    std::vector<std::string> names;
    const uint64_t now = NowMillis();
    for (auto it = filters_.begin(); it != filters_.end();) {
      if (Expired(it->second->expires_at_ms, now)) {
        it = filters_.erase(it);
      } else {
        names.push_back(it->first);
        ++it;
      }
    }
    return names;
  }

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    Retire(*filter);
    filters_.erase(filters_.find(name));
    return Status::Ok();
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    if (!filter->config.SameFilterAs(config)) return ConfigChangedStatus(name);
    if (!filter->main) return Status::InvalidArgument("a window filter has no main bit array");
    return Wrap(filter, filter->main);
  }

  Result<std::unique_ptr<BitStore>> OpenPart(std::string_view name, const FilterConfig& config,
                                             uint64_t part, bool create) override {
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    if (!filter->config.SameFilterAs(config)) return ConfigChangedStatus(name);
    if (config.kind == FilterKind::kScaling && part == 0) return Wrap(filter, filter->main);
    auto it = filter->parts.find(part);
    if (it != filter->parts.end() && Expired(it->second->expires_at_ms, NowMillis())) {
      filter->parts.erase(it);
      it = filter->parts.end();
    }
    if (it == filter->parts.end()) {
      if (!create) {
        return Status::NotFound("part " + std::to_string(part) + " of filter '" +
                                std::string(name) + "' does not exist");
      }
      REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(config, part));
      REDBLOOM_ASSIGN_OR_RETURN(auto array,
                                NewArray(sizing.geometry.bits, config.cell_bits(), name));
      array->expires_at_ms = PartExpiry(config, part, filter->expires_at_ms);
      it = filter->parts.emplace(part, std::move(array)).first;
    }
    return Wrap(filter, it->second);
  }

  Result<std::vector<uint64_t>> ListParts(std::string_view name,
                                          const FilterConfig& config) override {
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    if (!filter->config.SameFilterAs(config)) return ConfigChangedStatus(name);
    std::vector<uint64_t> parts;
    if (config.kind == FilterKind::kScaling) parts.push_back(0);
    const uint64_t now = NowMillis();
    for (auto it = filter->parts.begin(); it != filter->parts.end();) {
      if (Expired(it->second->expires_at_ms, now)) {
        it = filter->parts.erase(it);
      } else {
        parts.push_back(it->first);
        ++it;
      }
    }
    return parts;
  }

  Result<uint64_t> Layers(std::string_view name, const FilterConfig& config) override {
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    if (!filter->config.SameFilterAs(config)) return ConfigChangedStatus(name);
    return filter->layers;
  }

  Result<uint64_t> GrowLayers(std::string_view name, const FilterConfig& config,
                              uint64_t seen) override {
    {
      std::lock_guard lock(mu_);
      REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
      if (!filter->config.SameFilterAs(config)) return ConfigChangedStatus(name);
      if (filter->layers != seen) return filter->layers;
    }
    REDBLOOM_RETURN_IF_ERROR(OpenPart(name, config, seen, /*create=*/true).status());
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    if (filter->layers == seen) filter->layers = seen + 1;
    return filter->layers;
  }

  Status Replace(std::string_view name, std::string_view source) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(source));
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto replacement, Find(source));
    REDBLOOM_RETURN_IF_ERROR(CheckReplaceable(replacement->config));
    auto old = filters_.find(name);
    if (old != filters_.end()) Retire(*old->second);
    filters_.insert_or_assign(std::string(name), replacement);
    filters_.erase(filters_.find(source));
    return Status::Ok();
  }

  Status Ping() override { return Status::Ok(); }

 private:
  // Requires mu_. Drops an expired filter on the way.
  Result<std::shared_ptr<MemFilter>> Find(std::string_view name) {
    auto it = filters_.find(name);
    if (it == filters_.end()) return NotFoundStatus(name);
    if (Expired(it->second->expires_at_ms, NowMillis())) {
      filters_.erase(it);
      return NotFoundStatus(name);
    }
    return it->second;
  }

  // Open handles of a dropped or replaced filter answer kConflict from now on
  // (and the facade reopens), instead of working on orphaned memory.
  static void Retire(MemFilter& filter) {
    auto flag = [](MemArray& a) {
      std::atomic_ref<uint64_t>(a.superseded).store(1, std::memory_order_release);
    };
    if (filter.main) flag(*filter.main);
    for (auto& [part, array] : filter.parts) flag(*array);
  }

  static std::unique_ptr<BitStore> Wrap(const std::shared_ptr<MemFilter>& filter,
                                        const std::shared_ptr<MemArray>& array) {
    WordArray a;
    a.words = array->words.get();
    a.cells = array->cells;
    a.cell_bits = array->cell_bits;
    a.count = &array->count;
    a.superseded = &array->superseded;
    a.remove_mutex = filter->remove_mutex;
    // The BitStore shares ownership, so a concurrent Drop cannot free the
    // words under it.
    a.keepalive = array;
    return std::make_unique<WordBitStore>(std::move(a));
  }

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<MemFilter>, std::less<>> filters_;
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

}  // namespace redbloom::internal
