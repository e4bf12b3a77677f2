// Prometheus metrics of redbloomd, rendered in the text exposition format
// (version 0.0.4). Labels are bounded: routes are templates
// ("/v1/filters/{name}/check"), never filter names or items, so a client
// cannot grow the series count.
#ifndef REDBLOOM_SERVER_METRICS_H_
#define REDBLOOM_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "redbloom/status.h"

namespace redbloom::server {

enum class Route : uint8_t {
  kHealthz,
  kReadyz,
  kMetrics,
  kFilters,    // /v1/filters
  kFilter,     // /v1/filters/{name}
  kItems,      // /v1/filters/{name}/items
  kCheck,      // /v1/filters/{name}/check
  kItem,       // /v1/filters/{name}/items/{item}
  kRemove,     // /v1/filters/{name}/remove
  kOpenApi,    // /v1/openapi.json
  kUnmatched,  // anything else (404)
};
inline constexpr size_t kRouteCount = 11;

// The route template, used as the `route` label and in the access log.
std::string_view RouteLabel(Route route);

// Why a connection was refused at accept (the `reason` label).
enum class Refusal : uint8_t {
  kPerClient,    // max_connections_per_client from its address are open
  kTotal,        // max_connections are open
  kDescriptors,  // the descriptors kept for the store would be taken
};
// Which deadline a request missed (the `phase` label).
enum class TimeoutPhase : uint8_t {
  kHeaders,  // header_timeout_s
  kBody,     // body_timeout_s or read_timeout_s while reading the body
};

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  void RecordRequest(Route route, std::string_view method, int status,
                     std::chrono::nanoseconds latency);
  // Counts a request whose start was not seen (httplib rejected it before
  // routing), without a latency.
  void CountRequest(Route route, std::string_view method, int status);
  void RequestStarted() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void RequestFinished() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }
  // A request whose headers were read waits for a worker, or a worker took
  // it (requests_queued).
  void RequestQueued() { queued_.fetch_add(1, std::memory_order_relaxed); }
  void RequestDequeued() { queued_.fetch_sub(1, std::memory_order_relaxed); }
  // A request is being served or waits for a worker.
  bool Busy() const {
    return in_flight_.load(std::memory_order_relaxed) + queued_.load(std::memory_order_relaxed) > 0;
  }
  void ItemsAdded(uint64_t items, uint64_t new_items);
  void ItemsChecked(uint64_t items, uint64_t present);
  void ItemsRemoved(uint64_t removed) {
    items_removed_.fetch_add(removed, std::memory_order_relaxed);
  }
  // A store call failed for a reason other than the request itself (the
  // store was unreachable, timed out, or answered something unexpected).
  void StoreError(StatusCode code);
  void FilterOpened() { filter_opens_.fetch_add(1, std::memory_order_relaxed); }
  // A filter the service had open was found gone (filters_vanished_total).
  void FilterVanished() { filters_vanished_.fetch_add(1, std::memory_order_relaxed); }
  // A periodic sync (sync_interval_ms) done, and whether it failed.
  void Synced(bool ok) { (ok ? syncs_ : sync_failures_).fetch_add(1, std::memory_order_relaxed); }
  void ConnectionOpened() {
    connections_accepted_.fetch_add(1, std::memory_order_relaxed);
    connections_open_.fetch_add(1, std::memory_order_relaxed);
  }
  void ConnectionClosed() { connections_open_.fetch_sub(1, std::memory_order_relaxed); }
  // Bytes of request bodies the event thread holds for requests not yet
  // answered (body_buffer_bytes is their bound).
  void SetBodyBufferBytes(uint64_t bytes) {
    body_buffer_bytes_.store(bytes, std::memory_order_relaxed);
  }
  void ConnectionRefused(Refusal why) {
    refusals_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  }
  void RequestTimedOut(TimeoutPhase phase) {
    timeouts_[static_cast<size_t>(phase)].fetch_add(1, std::memory_order_relaxed);
  }
  // A request the connection layer answered 400 or 431 itself, before the
  // HTTP layer saw it (requests_malformed_total).
  void RequestMalformed() { malformed_.fetch_add(1, std::memory_order_relaxed); }
  // Access-log lines dropped because writing them failed (a full disk).
  void AccessLogLinesLost(uint64_t lines) {
    access_log_lost_.fetch_add(lines, std::memory_order_relaxed);
  }

  // `cache_entries`: open filter handles; `store_open`: the store was opened.
  std::string Render(size_t cache_entries, bool store_open) const;

 private:
  // Upper bounds in seconds: 50 us (a single check on a file store) to 10 s
  // (past the default 5 s store timeout).
  static constexpr std::array<double, 16> kBuckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025,   0.05,   0.1,     0.25,   0.5,   1,      2.5,   10};
  // The same bounds as `le` labels, written out as Prometheus clients do.
  static constexpr std::array<std::string_view, 16> kBucketLabels = {
      "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
      "0.025",   "0.05",   "0.1",     "0.25",   "0.5",   "1",      "2.5",   "10"};

  struct Histogram {
    std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets{};  // last is +Inf
    std::atomic<uint64_t> sum_ns{0};
  };

  std::array<Histogram, kRouteCount> latency_;
  mutable std::mutex mu_;
  std::map<std::tuple<Route, std::string, int>, uint64_t> requests_;  // guarded by mu_
  std::map<StatusCode, uint64_t> store_errors_;                       // guarded by mu_
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> queued_{0};
  std::atomic<uint64_t> items_added_{0};
  std::atomic<uint64_t> items_new_{0};
  std::atomic<uint64_t> items_checked_{0};
  std::atomic<uint64_t> items_present_{0};
  std::atomic<uint64_t> items_removed_{0};
  std::atomic<uint64_t> filter_opens_{0};
  std::atomic<uint64_t> filters_vanished_{0};
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> sync_failures_{0};
  std::atomic<uint64_t> connections_accepted_{0};
  std::atomic<int64_t> connections_open_{0};
  std::atomic<uint64_t> body_buffer_bytes_{0};
  std::array<std::atomic<uint64_t>, 3> refusals_{};  // by Refusal
  std::array<std::atomic<uint64_t>, 2> timeouts_{};  // by TimeoutPhase
  std::atomic<uint64_t> malformed_{0};
  std::atomic<uint64_t> access_log_lost_{0};
  const double start_time_;
};

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_METRICS_H_
