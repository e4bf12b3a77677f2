// The redbloomd API, independent of the HTTP library: each method takes the
// decoded parts of a request and returns the status, JSON body and headers.
// HttpServer (http_server.h) does routing, auth, limits on raw HTTP and
// logging, and calls these.
//
// Only the public redbloom API is used. Filter handles are cached per name;
// see FilterCache for how a filter dropped or re-created elsewhere is noticed.
#ifndef REDBLOOM_SERVER_SERVICE_H_
#define REDBLOOM_SERVER_SERVICE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "items_body.h"
#include "metrics.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/status.h"
#include "redbloom/store.h"

namespace redbloom::server {

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// {"error":"<code>","message":"<message>"} with the given HTTP status.
Reply ErrorReply(int http_status, std::string_view code, std::string_view message);
// The same for a Status, with HttpStatusFor(status) and StatusCodeName(code),
// and "reason" (StatusReasonName) when the status has one.
Reply ErrorReply(const Status& status);

// Open filter handles by name.
//
// A handle is reused until the store says it is stale. Redis stores check the
// stored config on use and answer kConflict/kNotFound; the caller then evicts
// the handle and retries once with a fresh one (Service::OnFilter). A file
// store's handle maps the file it opened, so a filter dropped and re-created
// by another process would not be noticed on use: for that, a hit older than
// `revalidate_after` re-reads the stored config (one small read) and reopens
// the filter if it changed or vanished.
// Names, at most `capacity`, the oldest let go first; Remove is one atomic
// load while the set is empty.
class RememberedNames {
 public:
  explicit RememberedNames(size_t capacity) : capacity_(capacity) {}
  RememberedNames(const RememberedNames&) = delete;
  RememberedNames& operator=(const RememberedNames&) = delete;
  // Adds each name as the newest (one already held moves there).
  void Add(std::span<const std::string> names);
  // Whether `name` was held; it is not any more.
  bool Remove(std::string_view name);
  size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::list<std::string> order_;  // oldest first; guarded by mu_
  // Views of order_'s strings, which a list node keeps in place.
  std::unordered_map<std::string_view, std::list<std::string>::iterator> where_;  // guarded by mu_
  std::atomic<size_t> size_{0};
};

// Names this service dropped (DELETE) in the last few seconds: requests
// that raced the DELETE find the filter gone, which is no vanished filter.
class RecentDrops {
 public:
  static constexpr int64_t kWindowNs = 10'000'000'000;
  void Add(std::string_view name, int64_t now_ns);
  void Remove(std::string_view name);
  // Whether `name` was dropped here within kWindowNs of `now_ns`.
  bool Recent(std::string_view name, int64_t now_ns);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, int64_t> when_;  // guarded by mu_
  size_t sweep_at_ = 1024;                         // guarded by mu_
};

class FilterCache {
 public:
  // `let_go` (if set) is told the names of the handles the cache closes on
  // its own (idle, least recently used, EvictOldestQuarter, and KeepOnly's
  // of filters a listing no longer shows), under the cache's lock: a
  // caller that evicts a name and then forgets it (DELETE) is ordered after
  // it. It must not call back into the cache.
  using LetGo = std::function<void(std::span<const std::string> names)>;
  FilterCache(std::chrono::milliseconds revalidate_after, size_t max_entries, Metrics* metrics,
              std::chrono::milliseconds idle_after = std::chrono::seconds(60),
              LetGo let_go = nullptr);
  FilterCache(const FilterCache&) = delete;
  FilterCache& operator=(const FilterCache&) = delete;

  // The handle for `name`, opened on a miss. *cached says whether it came
  // from the cache (and so may be stale); on an error, whether the name had
  // a cached handle whose re-read of the stored config failed (not_found or
  // unavailable evict it).
  Result<std::shared_ptr<BloomFilter>> Get(Store& store, std::string_view name, bool* cached);
  void Put(std::string_view name, std::shared_ptr<BloomFilter> filter);
  // Evicts `name`; when `only` is given, only if it is still that handle.
  void Evict(std::string_view name, const BloomFilter* only = nullptr);
  std::vector<std::shared_ptr<BloomFilter>> Snapshot() const;
  size_t size() const;
  void Clear();
  // Evicts every name not in `names` (a store's whole listing): filters
  // gone without a request for them (expired, or dropped elsewhere).
  void KeepOnly(const std::vector<std::string>& names);
  // At most once per sweep interval (kSweepEvery, or idle_after when that
  // is shorter), and by one caller at a time: evicts the handles no request
  // used for idle_after, 64 at most (the next call sweeps on at once when
  // more are idle). A handle holds its filter's mapping (on file:, the
  // disk space of a file deleted meanwhile) or connection state; callers
  // run it from requests, so that no thread of its own is needed.
  void SweepIdle();
  // Evicts the least recently used quarter of the handles (one at least),
  // but not `keep`'s; returns how many went. For a process out of memory
  // mappings (Service::OnFilter), which its handles hold.
  size_t EvictOldestQuarter(std::string_view keep);

 private:
  struct Entry {
    std::shared_ptr<BloomFilter> filter;
    std::atomic<int64_t> validated_ns{0};  // steady_clock time of the last check
    std::atomic<int64_t> used_ns{0};       // steady_clock time of the last Get or Put
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  using Map = std::unordered_map<std::string, std::shared_ptr<Entry>, Hash, std::equal_to<>>;

  Result<std::shared_ptr<BloomFilter>> Open(Store& store, std::string_view name);
  // The entry to evict from a full cache (mu_ held exclusively; not empty).
  Map::iterator LeastRecentlyUsed();
  // Evicts the entries `evict(name, entry)` picks, `limit` at most (true if
  // it stopped there, with more to evict), and tells let_go their names;
  // their handles are freed (a file unmapped, a Redis count sent) after the
  // lock is let go.
  template <typename Pred>
  bool EvictIf(Pred&& evict, size_t limit = SIZE_MAX);
  void TellLetGo(std::span<const std::string> names) const;

  const int64_t revalidate_after_ns_;
  const int64_t idle_after_ns_;
  std::atomic<int64_t> next_sweep_ns_{0};
  const size_t max_entries_;
  Metrics* metrics_;
  const LetGo let_go_;
  mutable std::shared_mutex mu_;
  Map entries_;
};

struct ServiceOptions {
  std::string store_url;
  StoreOptions store_options;
  ItemLimits limits;
  // See FilterCache. 0 re-reads the stored config on every request.
  std::chrono::milliseconds revalidate_after{0};
  size_t filter_cache_size = 4096;
  // A handle no request used for this long is let go of (FilterCache::SweepIdle).
  std::chrono::milliseconds idle_after{60000};
  // How often redbloomd makes the filters' writes durable (FlushAll, as at
  // shutdown: msync of every open filter, then syncfs of the store's file
  // system); 0: only at shutdown, the kernel's writeback in between.
  std::chrono::milliseconds sync_interval{0};
  // How often redbloomd removes filters whose TTL has passed from a mem: or
  // file: store (Service::RemoveExpired); 0: only as requests meet them.
  std::chrono::milliseconds expiry_sweep{60000};
  // Largest filter PUT may create, in bytes of cells (every shard of a plain
  // or counting filter, every slice of a window filter, the first layer of a
  // scaling filter); larger ones get 413. 0: no limit.
  uint64_t max_filter_bytes = 0;
};

// The bytes a filter's cells take once created, as max_filter_bytes counts
// them (see ServiceOptions).
Result<uint64_t> FilterBytes(const FilterConfig& config);

class Service {
 public:
  Service(ServiceOptions options, Metrics* metrics);
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;
  ~Service();

  // Opens the store. A network store (redis://) that is unreachable now is
  // not fatal: the service starts, answers 503, and retries in the background
  // every second. Any other failure (a malformed URL, an unusable directory)
  // is returned.
  Status Start();
  // From now on /readyz answers 503, so load balancers stop sending traffic
  // while in-flight requests finish.
  void BeginShutdown() { shutting_down_.store(true); }
  // Flushes every open filter (msync for files). Returns the first error.
  Status FlushAll();
  // Removes the filters whose TTL has passed, for a store that removes them
  // only where it meets them, a listing or an open (mem:, file:: a service
  // whose clients make filters of their own names with TTLs and never list
  // kept each one's memory or file). Redis expires its keys itself.
  Status RemoveExpired();
  std::string store_url() const;

  Reply Health() const;
  Reply Ready();
  Reply MetricsText() const;
  Reply ListFilters();
  Reply PutFilter(std::string_view name, std::string_view body);
  Reply GetFilter(std::string_view name);
  Reply DeleteFilter(std::string_view name);
  Reply AddItems(std::string_view name, std::string_view body);
  Reply CheckItems(std::string_view name, std::string_view body);
  // Counting filters only (other kinds: 501 unimplemented).
  Reply RemoveItems(std::string_view name, std::string_view body);
  Reply CheckItem(std::string_view name, std::string_view item);
  // DELETE /v1/filters/{name}/items/{item}: {"removed":bool} (counting filters).
  Reply RemoveItem(std::string_view name, std::string_view item);

 private:
  Status CheckItemSize(std::string_view item) const;
  Result<Store*> GetStore() const;
  // Runs op(filter) on the cached handle; if the store says the handle is
  // stale (kConflict, kNotFound), evicts it and runs op once more on a fresh
  // handle. op must be safe to repeat (adds are: a bit set twice is set).
  template <typename Op>
  Status OnFilter(std::string_view name, Op&& op);
  // Error reply for a failed store call, counting it in the metrics when the
  // store (not the request) is at fault.
  Reply StoreErrorReply(const Status& status);
  void RetryOpenLoop();

  ServiceOptions options_;
  Metrics* metrics_;
  std::atomic<bool> shutting_down_{false};

  mutable std::mutex store_mu_;
  std::unique_ptr<Store> owned_store_;  // guarded by store_mu_ until published
  Status last_open_error_;              // guarded by store_mu_
  std::atomic<Store*> store_{nullptr};

  // Names whose open handle was let go (after a store failure, or by the
  // cache: idle, least recently used, gone from a listing): the filter was
  // open here, so finding it gone next is a vanished filter (see NoteGone),
  // not a name never made. The newest 4,096; cleared by PUT, DELETE and a
  // fresh open that finds the filter. Declared before the cache, whose
  // let_go adds to it.
  void RememberOpen(std::string_view name);
  bool ForgetOpen(std::string_view name);
  void NoteGone(std::string_view name, const Status& why);
  RememberedNames remembered_{4096};
  // Requests that raced a DELETE here found the filter gone, and were
  // counted and logged as a vanished filter, firing the alert the docs
  // suggest. (A filter another client drops within 10 s of a DELETE of its
  // name here is not counted either.)
  RecentDrops dropped_here_;

  // Declared after the store: handles must close before it.
  FilterCache cache_;

  std::mutex retry_mu_;
  std::condition_variable retry_cv_;
  bool stop_retry_ = false;  // guarded by retry_mu_
  std::thread retry_thread_;
};

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_SERVICE_H_
