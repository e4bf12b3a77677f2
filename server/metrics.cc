#include "metrics.h"

#include <chrono>

#include "build_id.h"
#include "redbloom/filter_config.h"

namespace redbloom::server {

std::string_view RouteLabel(Route route) {
  switch (route) {
    case Route::kHealthz:
      return "/healthz";
    case Route::kReadyz:
      return "/readyz";
    case Route::kMetrics:
      return "/metrics";
    case Route::kFilters:
      return "/v1/filters";
    case Route::kFilter:
      return "/v1/filters/{name}";
    case Route::kItems:
      return "/v1/filters/{name}/items";
    case Route::kCheck:
      return "/v1/filters/{name}/check";
    case Route::kItem:
      return "/v1/filters/{name}/items/{item}";
    case Route::kRemove:
      return "/v1/filters/{name}/remove";
    case Route::kOpenApi:
      return "/v1/openapi.json";
    case Route::kUnmatched:
      return "unmatched";
  }
  return "unmatched";
}

namespace {

double NowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Methods outside this set share one label, so a client inventing methods
// cannot add series.
std::string MethodLabel(std::string_view method) {
  for (std::string_view m : {"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"}) {
    if (method == m) return std::string(m);
  }
  return "other";
}

void Line(std::string* out, std::string_view name, std::string_view labels,
          std::string_view value) {
  out->append(name);
  if (!labels.empty()) {
    out->push_back('{');
    out->append(labels);
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(value);
  out->push_back('\n');
}

void Header(std::string* out, std::string_view name, std::string_view type, std::string_view help) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

}  // namespace

Metrics::Metrics() : start_time_(NowUnixSeconds()) {
  // Present from the start at 0, so that rate() sees the first error.
  for (StatusCode code :
       {StatusCode::kUnavailable, StatusCode::kDeadlineExceeded, StatusCode::kResourceExhausted,
        StatusCode::kDataLoss, StatusCode::kInternal}) {
    store_errors_[code] = 0;
  }
}

void Metrics::RecordRequest(Route route, std::string_view method, int status,
                            std::chrono::nanoseconds latency) {
  Histogram& h = latency_[static_cast<size_t>(route)];
  const double seconds = std::chrono::duration<double>(latency).count();
  size_t bucket = 0;
  while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) ++bucket;
  h.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  h.sum_ns.fetch_add(static_cast<uint64_t>(latency.count() < 0 ? 0 : latency.count()),
                     std::memory_order_relaxed);
  CountRequest(route, method, status);
}

void Metrics::CountRequest(Route route, std::string_view method, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{route, MethodLabel(method), status}];
}

void Metrics::ItemsAdded(uint64_t items, uint64_t new_items) {
  items_added_.fetch_add(items, std::memory_order_relaxed);
  items_new_.fetch_add(new_items, std::memory_order_relaxed);
}

void Metrics::ItemsChecked(uint64_t items, uint64_t present) {
  items_checked_.fetch_add(items, std::memory_order_relaxed);
  items_present_.fetch_add(present, std::memory_order_relaxed);
}

void Metrics::StoreError(StatusCode code) {
  std::lock_guard lock(mu_);
  ++store_errors_[code];
}

std::string Metrics::Render(size_t cache_entries, bool store_open) const {
  std::string out;
  out.reserve(16384);
  const auto u = [](uint64_t v) { return std::to_string(v); };

  Header(&out, "redbloomd_http_requests_total", "counter",
         "HTTP requests answered, by route template, method and status code.");
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, count] : requests_) {
      const auto& [route, method, status] = key;
      std::string labels = "route=\"" + std::string(RouteLabel(route)) + "\",method=\"" + method +
                           "\",code=\"" + std::to_string(status) + "\"";
      Line(&out, "redbloomd_http_requests_total", labels, u(count));
    }
  }

  Header(&out, "redbloomd_http_request_duration_seconds", "histogram",
         "Time from reading the request headers to writing the response, by route template.");
  for (size_t r = 0; r < kRouteCount; ++r) {
    const Histogram& h = latency_[r];
    // Read once: _count is the +Inf bucket of the same read, so a request
    // recorded meanwhile cannot make the two differ.
    std::array<uint64_t, kBuckets.size() + 1> cumulative{};
    uint64_t total = 0;
    for (size_t b = 0; b <= kBuckets.size(); ++b) {
      total += h.buckets[b].load(std::memory_order_relaxed);
      cumulative[b] = total;
    }
    if (total == 0) continue;
    const std::string route = "route=\"" + std::string(RouteLabel(static_cast<Route>(r))) + "\"";
    for (size_t b = 0; b <= kBuckets.size(); ++b) {
      const std::string le(b < kBuckets.size() ? kBucketLabels[b] : "+Inf");
      Line(&out, "redbloomd_http_request_duration_seconds_bucket", route + ",le=\"" + le + "\"",
           u(cumulative[b]));
    }
    Line(&out, "redbloomd_http_request_duration_seconds_sum", route,
         FormatDouble(static_cast<double>(h.sum_ns.load(std::memory_order_relaxed)) / 1e9));
    Line(&out, "redbloomd_http_request_duration_seconds_count", route, u(total));
  }

  Header(&out, "redbloomd_http_requests_in_flight", "gauge", "Requests being processed now.");
  Line(&out, "redbloomd_http_requests_in_flight", "",
       std::to_string(in_flight_.load(std::memory_order_relaxed)));

  Header(&out, "redbloomd_http_requests_queued", "gauge",
         "Requests whose headers were read, waiting for a worker.");
  Line(&out, "redbloomd_http_requests_queued", "",
       std::to_string(queued_.load(std::memory_order_relaxed)));

  Header(&out, "redbloomd_connections_accepted_total", "counter",
         "Connections accepted within the connection limits.");
  Line(&out, "redbloomd_connections_accepted_total", "",
       u(connections_accepted_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_connections_open", "gauge", "Connections open now.");
  Line(&out, "redbloomd_connections_open", "",
       std::to_string(connections_open_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_body_buffer_bytes", "gauge",
         "Request body bytes read ahead of a worker and held until the request is answered "
         "(bounded by body_buffer_bytes).");
  Line(&out, "redbloomd_body_buffer_bytes", "",
       std::to_string(body_buffer_bytes_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_connections_refused_total", "counter",
         "Connections answered 429 (max_connections_per_client from the address) or 503 "
         "(max_connections in all, or the descriptors kept for the store) and closed at "
         "accept, by reason.");
  Line(&out, "redbloomd_connections_refused_total", "reason=\"per_client\"",
       u(refusals_[static_cast<size_t>(Refusal::kPerClient)].load(std::memory_order_relaxed)));
  Line(&out, "redbloomd_connections_refused_total", "reason=\"total\"",
       u(refusals_[static_cast<size_t>(Refusal::kTotal)].load(std::memory_order_relaxed)));
  Line(&out, "redbloomd_connections_refused_total", "reason=\"descriptors\"",
       u(refusals_[static_cast<size_t>(Refusal::kDescriptors)].load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_request_timeouts_total", "counter",
         "Requests cut off because their headers (header_timeout_s) or body (body_timeout_s, "
         "read_timeout_s) did not arrive in time, by phase.");
  Line(&out, "redbloomd_request_timeouts_total", "phase=\"headers\"",
       u(timeouts_[static_cast<size_t>(TimeoutPhase::kHeaders)].load(std::memory_order_relaxed)));
  Line(&out, "redbloomd_request_timeouts_total", "phase=\"body\"",
       u(timeouts_[static_cast<size_t>(TimeoutPhase::kBody)].load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_requests_malformed_total", "counter",
         "Requests answered 400 or 431 before they were parsed (a bare LF, a malformed or empty "
         "framing header, a head over 64 KiB), and so not in http_requests_total.");
  Line(&out, "redbloomd_requests_malformed_total", "",
       u(malformed_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_access_log_lines_lost_total", "counter",
         "Access-log lines dropped because writing them failed (a full disk; the service log "
         "says why).");
  Line(&out, "redbloomd_access_log_lines_lost_total", "",
       u(access_log_lost_.load(std::memory_order_relaxed)));

  Header(&out, "redbloomd_items_added_total", "counter",
         "Items in successful add requests, and those a failed one confirmed.");
  Line(&out, "redbloomd_items_added_total", "", u(items_added_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_items_new_total", "counter",
         "Added items that were new (turned on at least one bit).");
  Line(&out, "redbloomd_items_new_total", "", u(items_new_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_items_checked_total", "counter",
         "Items in successful check requests (batch and single).");
  Line(&out, "redbloomd_items_checked_total", "",
       u(items_checked_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_items_present_total", "counter",
         "Checked items answered as possibly present.");
  Line(&out, "redbloomd_items_present_total", "",
       u(items_present_.load(std::memory_order_relaxed)));

  Header(&out, "redbloomd_items_removed_total", "counter", "Items removed from counting filters.");
  Line(&out, "redbloomd_items_removed_total", "",
       u(items_removed_.load(std::memory_order_relaxed)));

  Header(&out, "redbloomd_store_errors_total", "counter",
         "Store calls that failed because of the store (unreachable, timeout, corrupt data), "
         "by status code.");
  {
    std::lock_guard lock(mu_);
    for (const auto& [code, count] : store_errors_) {
      Line(&out, "redbloomd_store_errors_total",
           "code=\"" + std::string(StatusCodeName(code)) + "\"", u(count));
    }
  }

  Header(
      &out, "redbloomd_store_open", "gauge",
      "1 once the store has been opened (a network store may still be unreachable; see /readyz).");
  Line(&out, "redbloomd_store_open", "", store_open ? "1" : "0");
  Header(&out, "redbloomd_filter_handles", "gauge", "Filters with an open, cached handle.");
  Line(&out, "redbloomd_filter_handles", "", u(cache_entries));
  Header(&out, "redbloomd_filter_opens_total", "counter",
         "Filter handles opened (a steady rise means the cache is being invalidated).");
  Line(&out, "redbloomd_filter_opens_total", "", u(filter_opens_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_filters_vanished_total", "counter",
         "Filters this service had open that were found gone: dropped by another client, or "
         "lost (evicted keys, a store restarted without persistence, a deleted file).");
  Line(&out, "redbloomd_filters_vanished_total", "",
       u(filters_vanished_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_syncs_total", "counter",
         "Periodic syncs of the filters' writes to disk (sync_interval_ms) that succeeded.");
  Line(&out, "redbloomd_syncs_total", "", u(syncs_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_sync_failures_total", "counter",
         "Periodic syncs that failed: writes acknowledged since the last good one may not "
         "survive a power loss (the log says why).");
  Line(&out, "redbloomd_sync_failures_total", "",
       u(sync_failures_.load(std::memory_order_relaxed)));
  Header(&out, "redbloomd_build_info", "gauge",
         "Always 1; the version and the commit built (empty outside a git checkout) are labels.");
  Line(&out, "redbloomd_build_info",
       "version=\"" REDBLOOM_VERSION "\",commit=\"" REDBLOOM_BUILD_ID "\"", "1");
  Header(&out, "redbloomd_start_time_seconds", "gauge", "Start time of the process, Unix seconds.");
  Line(&out, "redbloomd_start_time_seconds", "", FormatDouble(start_time_));
  return out;
}

}  // namespace redbloom::server
