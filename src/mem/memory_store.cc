// mem: an in-process store for tests and embedding. Filters live as long as
// the Store object; cells are plain words updated with atomic operations, or
// by a batch that holds the filter's writer lock alone (WordArray::writers).
#include <cstdint>
#include <map>
#include <mutex>

#include "kinds/kind_def.h"
#include "stores.h"
#include "word_bits.h"

namespace redbloom::internal {
namespace {

struct MemArray {
  Words words;
  uint64_t count = 0;
  uint64_t superseded = 0;
  uint64_t expires_at_ms = 0;  // 0 = never
  WordArray view;              // points into this object
};

struct MemFilter {
  FilterConfig config;
  uint64_t expires_at_ms = 0;
  std::map<uint64_t, std::shared_ptr<MemArray>> parts;
  std::shared_ptr<std::mutex> remove_mutex = std::make_shared<std::mutex>();
  std::shared_ptr<WriterGate> writers = std::make_shared<WriterGate>();
};

Result<std::shared_ptr<MemArray>> NewArray(const FilterConfig& config, uint64_t part,
                                           std::string_view name,
                                           const std::shared_ptr<std::mutex>& remove_mutex,
                                           const std::shared_ptr<WriterGate>& writers) {
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(config, part));
  auto a = std::make_shared<MemArray>();
  WordArray& v = a->view;
  v.cells = sizing.geometry.bits;
  v.hashes = sizing.geometry.hashes;
  v.cell_bits = config.cell_bits();
  const size_t bytes = v.word_count() * 8;
  a->words = NewWords(bytes);
  if (!a->words) {
    return Status::ResourceExhausted("cannot allocate " + std::to_string(bytes) +
                                     " bytes for filter '" + std::string(name) + "'");
  }
  v.words = a->words.get();
  v.count = &a->count;
  v.superseded = &a->superseded;
  v.remove_mutex = remove_mutex;
  v.writers = writers;
  return a;
}

// The array as a BitStore sees it; it keeps the MemArray (and so the words)
// alive, so a concurrent Drop cannot free them under it.
std::shared_ptr<WordArray> View(const std::shared_ptr<MemArray>& a) {
  return std::shared_ptr<WordArray>(a, &a->view);
}

class MemoryStore;

// The parts of the filter a handle opened: that filter, not whichever has
// its name and config now. Found by name and config, a part made by a handle
// that had read a scaling filter's third layer full, as the filter was
// dropped and made again alike, went into the new filter, which had one
// layer: data_loss ("lost layer 1") for every call until it was dropped (an
// audit, in 6 to 40 drop/create rounds under concurrent adds). The handle's
// check that its filter is live comes before the part is made, and the
// drop and create fit in between.
class MemParts final : public WordParts {
 public:
  MemParts(MemoryStore* store, std::string name, std::weak_ptr<const MemFilter> filter)
      : store_(store), name_(std::move(name)), filter_(std::move(filter)) {}
  Result<std::shared_ptr<WordArray>> Open(uint64_t part) override;
  Status Create(uint64_t part, uint64_t expires_at_ms) override;
  Result<std::vector<uint64_t>> List() override;
  Status CheckCurrent() override;

 private:
  MemoryStore* store_;
  const std::string name_;
  const std::weak_ptr<const MemFilter> filter_;
};

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(const StoreOptions& options) : Store(options.clock) {}

  std::string url() const override { return "mem:"; }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    REDBLOOM_RETURN_IF_ERROR(CheckUnsharded(config, url()));
    std::lock_guard lock(mu_);
    auto existing = Find(name);
    if (existing.ok()) return ExistsStatus(name, (*existing)->config, config);
    auto filter = std::make_shared<MemFilter>();
    filter->config = config;
    filter->expires_at_ms = FilterExpiry(clock(), config);
    if (config.initial_parts() > 0) {
      REDBLOOM_ASSIGN_OR_RETURN(auto main,
                                NewArray(config, 0, name, filter->remove_mutex, filter->writers));
      filter->parts.emplace(0, std::move(main));
    }
    filters_.insert_or_assign(std::string(name), std::move(filter));
    return Status::Ok();
  }

  Result<FilterConfig> ReadConfig(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    return filter->config;
  }

  Result<std::vector<std::string>> List() override {
    std::lock_guard lock(mu_);
    std::vector<std::string> names;
    for (auto it = filters_.begin(); it != filters_.end();) {
      if (Expired(clock(), it->second->expires_at_ms)) {
        Retire(*it->second);
        it = filters_.erase(it);
      } else {
        // A rebuild's temporary filter is not one of the user's.
        if (ValidateFilterName(it->first).ok()) names.push_back(it->first);
        ++it;
      }
    }
    return names;
  }

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    Retire(*filter);
    filters_.erase(filters_.find(name));
    return Status::Ok();
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    std::shared_ptr<WordArray> main;
    std::shared_ptr<const MemFilter> opened;
    {
      std::lock_guard lock(mu_);
      REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
      if (!filter->config.SameFilterAs(config)) return ConfigChangedStatus(name);
      if (auto it = filter->parts.find(0);
          config.initial_parts() > 0 && it != filter->parts.end()) {
        main = View(it->second);
      }
      opened = std::move(filter);
    }
    return std::unique_ptr<BitStore>(std::make_unique<WordBitStore>(
        std::make_unique<MemParts>(this, std::string(name), opened), std::move(main)));
  }

  Status Replace(std::string_view name, std::string_view source) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(source));
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto replacement, Find(source));
    REDBLOOM_RETURN_IF_ERROR(CheckReplaceable(replacement->config));
    auto present = Find(name);
    if (!present.ok() && present.status().code() == StatusCode::kNotFound) {
      return DroppedWhileRebuiltStatus(name);
    }
    if (present.ok()) REDBLOOM_RETURN_IF_ERROR(CheckReplaceable((*present)->config));
    auto old = filters_.find(name);
    if (old != filters_.end()) Retire(*old->second);
    filters_.insert_or_assign(std::string(name), replacement);
    filters_.erase(filters_.find(source));
    return Status::Ok();
  }

  Status Ping() override { return Status::Ok(); }

  // For MemParts: whether the filter a handle opened still has its name.
  Status CheckOpened(std::string_view name, const std::weak_ptr<const MemFilter>& opened) {
    std::lock_guard lock(mu_);
    return FindOpened(name, opened).status();
  }

  // For MemParts: the filter's part `part`, checking the filter is still the
  // one the handle opened.
  Result<std::shared_ptr<WordArray>> OpenPart(std::string_view name,
                                              const std::weak_ptr<const MemFilter>& opened,
                                              uint64_t part) {
    std::lock_guard lock(mu_);
    Result<std::shared_ptr<MemFilter>> found = FindOpened(name, opened);
    // The filter gone (dropped or expired) is no part never made, which
    // reads as empty: a window's handle with no slice open answered checks
    // "absent". It answers as a handle whose arrays were retired; its caller
    // reopens, and learns the filter is gone.
    if (!found.ok() && found.status().code() == StatusCode::kNotFound) {
      return ConfigChangedStatus(name);
    }
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, std::move(found));
    auto it = filter->parts.find(part);
    if (it != filter->parts.end() && Expired(clock(), it->second->expires_at_ms)) {
      Retire(*it->second);
      filter->parts.erase(it);
      it = filter->parts.end();
    }
    if (it == filter->parts.end()) {
      return Status::NotFound("part " + std::to_string(part) + " of filter '" + std::string(name) +
                              "' does not exist");
    }
    return View(it->second);
  }

  Status CreatePart(std::string_view name, const std::weak_ptr<const MemFilter>& opened,
                    uint64_t part, uint64_t expires_at_ms) {
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, FindOpened(name, opened));
    const FilterConfig& config = filter->config;
    auto it = filter->parts.find(part);
    if (it != filter->parts.end() && !Expired(clock(), it->second->expires_at_ms)) {
      return Status::Ok();
    }
    REDBLOOM_ASSIGN_OR_RETURN(auto array,
                              NewArray(config, part, name, filter->remove_mutex, filter->writers));
    array->expires_at_ms = CapExpiry(expires_at_ms, filter->expires_at_ms);
    filter->parts.insert_or_assign(part, std::move(array));
    return Status::Ok();
  }

  Result<std::vector<uint64_t>> ListParts(std::string_view name,
                                          const std::weak_ptr<const MemFilter>& opened) {
    std::lock_guard lock(mu_);
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, FindOpened(name, opened));
    std::vector<uint64_t> parts;
    for (auto it = filter->parts.begin(); it != filter->parts.end();) {
      if (Expired(clock(), it->second->expires_at_ms)) {
        Retire(*it->second);
        it = filter->parts.erase(it);
      } else {
        parts.push_back(it->first);
        ++it;
      }
    }
    return parts;
  }

 private:
  // Requires mu_. Drops an expired filter on the way.
  Result<std::shared_ptr<MemFilter>> Find(std::string_view name) {
    auto it = filters_.find(name);
    if (it == filters_.end()) return NotFoundStatus(name);
    if (Expired(clock(), it->second->expires_at_ms)) {
      Retire(*it->second);
      filters_.erase(it);
      return NotFoundStatus(name);
    }
    return it->second;
  }

  // Requires mu_. The filter, if it is still the one `opened`.
  Result<std::shared_ptr<MemFilter>> FindOpened(std::string_view name,
                                                const std::weak_ptr<const MemFilter>& opened) {
    REDBLOOM_ASSIGN_OR_RETURN(auto filter, Find(name));
    if (filter != opened.lock()) return ConfigChangedStatus(name);
    return filter;
  }

  // Open handles of a dropped or replaced filter answer kConflict from now on
  // (and the facade reopens), instead of working on orphaned memory.
  static void Retire(MemFilter& filter) {
    for (auto& [part, array] : filter.parts) Retire(*array);
  }
  static void Retire(MemArray& array) {
    std::atomic_ref<uint64_t>(array.superseded).store(1, std::memory_order_release);
  }

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<MemFilter>, std::less<>> filters_;
};

Result<std::shared_ptr<WordArray>> MemParts::Open(uint64_t part) {
  return store_->OpenPart(name_, filter_, part);
}
Status MemParts::Create(uint64_t part, uint64_t expires_at_ms) {
  return store_->CreatePart(name_, filter_, part, expires_at_ms);
}
Result<std::vector<uint64_t>> MemParts::List() { return store_->ListParts(name_, filter_); }
Status MemParts::CheckCurrent() { return store_->CheckOpened(name_, filter_); }

}  // namespace

Result<std::unique_ptr<Store>> NewMemoryStore(std::string_view url, const StoreOptions& options) {
  if (url != "mem:") {
    return Status::InvalidArgument("store URL '" + std::string(url) + "': mem: takes no path");
  }
  return std::unique_ptr<Store>(std::make_unique<MemoryStore>(options));
}

}  // namespace redbloom::internal
