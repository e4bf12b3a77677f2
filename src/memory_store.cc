// mem: an in-process store for tests and embedding. Filters live as long as
// the Store object; bits are plain words updated with atomic operations.
#include <map>
#include <mutex>
#include <new>

#include "stores.h"
#include "word_bits.h"

namespace redbloom::internal {
namespace {

struct MemFilter {
  FilterConfig config;
  std::unique_ptr<uint64_t[]> words;
  uint64_t count = 0;
};

class MemoryStore final : public Store {
 public:
  std::string url() const override { return "mem:"; }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    std::lock_guard lock(mu_);
    auto it = filters_.find(name);
    if (it != filters_.end()) return ExistsStatus(name, it->second->config, config);
    auto filter = std::make_shared<MemFilter>();
    filter->config = config;
    const uint64_t words = (config.geometry.bits * config.cell_bits() + 63) / 64;
    filter->words.reset(new (std::nothrow) uint64_t[words]());
    if (!filter->words) {
      return Status::ResourceExhausted("cannot allocate " + std::to_string(words * 8) +
                                       " bytes for filter '" + std::string(name) + "'");
    }
    filters_.emplace(std::string(name), std::move(filter));
    return Status::Ok();
  }

  Result<FilterConfig> ReadConfig(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    std::lock_guard lock(mu_);
    auto it = filters_.find(name);
    if (it == filters_.end()) return NotFoundStatus(name);
    return it->second->config;
  }

  Result<std::vector<std::string>> List() override {
    std::lock_guard lock(mu_);
    std::vector<std::string> names;
    for (const auto& [name, filter] : filters_) names.push_back(name);
    return names;
  }

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    std::lock_guard lock(mu_);
    auto it = filters_.find(name);
    if (it == filters_.end()) return NotFoundStatus(name);
    filters_.erase(it);
    return Status::Ok();
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    std::shared_ptr<MemFilter> filter;
    {
      std::lock_guard lock(mu_);
      auto it = filters_.find(name);
      if (it == filters_.end()) return NotFoundStatus(name);
      filter = it->second;
    }
    if (!filter->config.SameFilterAs(config)) return ConfigChangedStatus(name);
    // The BitStore shares ownership, so a concurrent Drop cannot free the words
    // under it.
    return std::unique_ptr<BitStore>(std::make_unique<WordBitStore>(
        filter->words.get(), config.geometry.bits * config.cell_bits(), &filter->count, filter));
  }

  Status Ping() override { return Status::Ok(); }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<MemFilter>, std::less<>> filters_;
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

}  // namespace redbloom::internal
