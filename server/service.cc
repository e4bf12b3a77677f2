#include "service.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>

#include "frontend/create.h"
#include "frontend/existing_ttl.h"
#include "frontend/info_json.h"
#include "http_status.h"
#include "redbloom/filter_config.h"
#include "util/percent.h"
#include "util/start_thread.h"

namespace redbloom::server {
namespace {

using Json = nlohmann::ordered_json;

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Serializes with invalid UTF-8 replaced, so that no name or message can make
// dump() throw.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Reply JsonReply(int status, const Json& j) {
  Reply r;
  r.status = status;
  r.body = Dump(j);
  return r;
}

bool IsIntegerEncoding(Encoding e) { return e == Encoding::kInt32 || e == Encoding::kInt64; }

// `{"<key>":[true,false,...]}`, written directly: for a 1000-item batch this
// is the whole response and a DOM would cost more than the bits.
std::string BoolArrayBody(std::string_view key, const std::vector<uint8_t>& values) {
  size_t trues = 0;
  for (uint8_t v : values) trues += v != 0 ? 1 : 0;
  // {"key":[ + "true," or "false," per value (the last comma becomes "]") + }
  const size_t size =
      key.size() + 5 + trues * 5 + (values.size() - trues) * 6 + (values.empty() ? 2 : 1);
  std::string out(size, '\0');
  char* p = out.data();
  const auto put = [&p](std::string_view s) {
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  };
  put("{\"");
  put(key);
  put("\":[");
  for (uint8_t v : values) put(v != 0 ? "true," : "false,");
  if (!values.empty()) --p;  // drop the last comma
  put("]}");
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

std::string StripJsonExceptionPrefix(std::string what) {
  // "[json.exception.parse_error.101] parse error at ..." -> "parse error at ..."
  if (!what.empty() && what.front() == '[') {
    const size_t end = what.find("] ");
    if (end != std::string::npos) what.erase(0, end + 2);
  }
  return what;
}

// The options are one flat object (depth 1); 32 leaves room for any honest
// body. nlohmann parses iteratively but copies nested values recursively (the
// ordered_map of an object copies its values when it grows), so 50000 '['
// in a body overflowed a worker's stack and killed the process.
constexpr int kMaxJsonDepth = 32;
// Parse events (keys, values, objects and arrays opened and closed) a body
// of options may hold: a dozen fields need under 50. Past it every value is
// discarded unbuilt: an ordered_json object inserts a key in linear time, so
// 80,000 unknown fields (870 KB) held a worker and a core for 9.5 s, and a
// 16 MB body for half an hour, before the unknown fields were refused.
constexpr int kMaxJsonEvents = 4096;

// A field that takes a whole number: written as one, or as a number with no
// fraction ("1e6", as JSON encoders write large values). One rule for every
// such field: ttl_seconds took 3600 but not 3.6e3, and 1e20 was "must be a
// whole number >= 0".
// `bound`: the field's own upper bound, said when the value is past 2^64
// (which said "at most 18446744073709551615" for a capacity that must be
// below 2^63, a TTL of at most 100 years: an audit).
Result<uint64_t> WholeNumberField(const std::string& key, const Json& v, uint64_t min = 0,
                                  std::string_view bound = "below 2^64") {
  if (!v.is_number()) return Status::InvalidArgument(key + " must be a number");
  uint64_t x = 0;
  bool whole = false;
  if (v.is_number_unsigned()) {
    x = v.get<uint64_t>();
    whole = true;
  } else if (v.is_number_float()) {
    bool too_large = false;
    const std::optional<uint64_t> w = WholeNumberOf(v.get<double>(), &too_large);
    if (too_large) {
      return Status::InvalidArgument(key + " " + Dump(v) + " is too large: it must be " +
                                     std::string(bound));
    }
    whole = w.has_value();
    x = w.value_or(0);
  }
  if (!whole || x < min) {
    return Status::InvalidArgument(key + " must be a whole number >= " + std::to_string(min) +
                                   ", not " + Dump(v));
  }
  return x;
}

Result<FilterOptions> ParseFilterOptions(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return Status::InvalidArgument(
        "request body is empty; expected {\"capacity\":N,\"error_rate\":P}");
  }
  // Refused while parsing: a value that opens below the limit is discarded
  // (not built), and the parse goes on over the rest with a flat stack.
  bool too_deep = false;
  // A field given twice is refused, as the items bodies refuse "items"
  // twice: nlohmann would keep the last, which the client may not have
  // meant.
  std::set<std::string> fields;
  std::string twice;
  bool too_many = false;
  int events = 0;
  const Json::parser_callback_t limit_depth = [&](int depth, Json::parse_event_t event,
                                                  Json& parsed) {
    if (too_many || ++events > kMaxJsonEvents) {
      too_many = true;
      return false;
    }
    const bool opens =
        event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth) too_deep = true;
    if (event == Json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !fields.insert(parsed.get<std::string>()).second && twice.empty()) {
      twice = parsed.get<std::string>();
    }
    return !too_deep;
  };
  // nlohmann takes a NUL byte for the end of its input: fields after one
  // were never read, or refused.
  if (const size_t nul = body.find('\0'); nul != std::string_view::npos) {
    return Status::InvalidArgument("malformed JSON at byte " + std::to_string(nul) +
                                   ": a NUL byte");
  }
  Json j;
  try {
    j = Json::parse(body, limit_depth);
  } catch (const Json::exception& e) {
    const std::string what = StripJsonExceptionPrefix(e.what());
    const bool truncated = what.find("unexpected end of input") != std::string::npos;
    return Status::InvalidArgument((truncated ? "truncated JSON: " : "malformed JSON: ") + what);
  }
  if (too_deep) {
    return Status::InvalidArgument("malformed JSON: nested deeper than " +
                                   std::to_string(kMaxJsonDepth) + " levels");
  }
  if (too_many) {
    return Status::InvalidArgument("the body holds more than " + std::to_string(kMaxJsonEvents) +
                                   " JSON values; a filter's options are a dozen fields");
  }
  if (!j.is_object()) {
    return Status::InvalidArgument("the body must be an object {\"capacity\":N,\"error_rate\":P}");
  }
  if (!twice.empty()) return Status::InvalidArgument("field \"" + twice + "\" is given twice");
  FilterOptions o;
  bool has_capacity = false;
  bool has_error_rate = false;
  // The first field of another kind met: it is refused whatever its value
  // (`"expansion":2` on a counting filter is the scaling default, and was
  // silently ignored), as the CLI refuses --expansion without --scaling.
  std::string scaling_field, window_field;
  for (const auto& [key, v] : j.items()) {
    if (key == "capacity") {
      has_capacity = true;
      REDBLOOM_ASSIGN_OR_RETURN(o.capacity, WholeNumberField(key, v, 1, "below 2^63"));
    } else if (key == "error_rate") {
      has_error_rate = true;
      if (!v.is_number()) return Status::InvalidArgument("error_rate must be a number");
      o.error_rate = v.get<double>();
    } else if (key == "expansion") {
      scaling_field = key;
      if (!v.is_number()) return Status::InvalidArgument("expansion must be a number");
      o.expansion = v.get<double>();
    } else if (key == "shards") {
      Result<uint64_t> shards = WholeNumberField(key, v);
      if (!shards.ok() || *shards < 1 || *shards > kMaxShards) {
        return Status::InvalidArgument("shards must be a whole number from 1 to " +
                                       std::to_string(kMaxShards) + ", not " + Dump(v));
      }
      o.shards = static_cast<uint32_t>(*shards);
    } else if (key == "window_ms" || key == "slices" || key == "ttl_seconds") {
      const std::string bound =
          key == "slices"
              ? "at most " + std::to_string(kMaxSlices)
              : "at most " + std::to_string(kMaxTtlSeconds * (key == "ttl_seconds" ? 1 : 1000)) +
                    " (100 years)";
      REDBLOOM_ASSIGN_OR_RETURN(const uint64_t x, WholeNumberField(key, v, 0, bound));
      if (key != "ttl_seconds" && window_field.empty()) window_field = key;
      if (key == "window_ms") {
        o.window_millis = x;
      } else if (key == "ttl_seconds") {
        o.ttl_seconds = x;
      } else {
        if (x > UINT32_MAX) return Status::InvalidArgument("slices is too large");
        o.slices = static_cast<uint32_t>(x);
      }
    } else if (key == "strategy" || key == "encoding" || key == "kind") {
      if (!v.is_string()) return Status::InvalidArgument(key + " must be a string");
      const std::string s = v.get<std::string>();
      if (key == "strategy") {
        REDBLOOM_ASSIGN_OR_RETURN(o.strategy, ParseStrategy(s));
      } else if (key == "encoding") {
        REDBLOOM_ASSIGN_OR_RETURN(o.encoding, ParseEncoding(s));
      } else {
        REDBLOOM_ASSIGN_OR_RETURN(o.kind, ParseFilterKind(s));
      }
    } else {
      return Status::InvalidArgument(
          "unknown field " + Dump(Json(key)) +
          "; expected capacity, error_rate and optionally strategy, encoding, kind, expansion, "
          "window_ms, slices, ttl_seconds, shards");
    }
  }
  if (!has_capacity) return Status::InvalidArgument("capacity is required");
  if (!has_error_rate) return Status::InvalidArgument("error_rate is required");
  const auto other_kind = [&](const std::string& field, const char* kind) {
    return Status::InvalidArgument(field + " applies to " + kind + " filters only, and kind is \"" +
                                   std::string(FilterKindName(o.kind)) + "\"");
  };
  if (!scaling_field.empty() && o.kind != FilterKind::kScaling) {
    return other_kind(scaling_field, "scaling");
  }
  if (!window_field.empty() && o.kind != FilterKind::kWindow) {
    return other_kind(window_field, "window");
  }
  return o;
}

// "1.1 MiB": a size for people, next to the exact bytes.
std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

}  // namespace

Result<uint64_t> FilterBytes(const FilterConfig& config) {
  // What the filter stores at once (a window's slices + 1: counting only its
  // `slices` let a one-slice window grow to twice the limit).
  const uint64_t parts = config.stored_parts();
  uint64_t total = 0;
  for (uint64_t p = 0; p < parts; ++p) {
    REDBLOOM_ASSIGN_OR_RETURN(PartSizing part, SizePart(config, p));
    const uint64_t bytes = part.bytes(config.cell_bits());
    total = bytes > UINT64_MAX - total ? UINT64_MAX : total + bytes;
  }
  return total;
}

namespace {

// Every error answer's body, {"error":"<code>","message":"<message>"},
// with "reason" when the failure has one (a client tells "retry later" from
// "fix the credentials" by it, not by the message).
Json ErrorJson(std::string_view code, std::string_view message,
               StatusReason reason = StatusReason::kNone) {
  Json j;
  j["error"] = std::string(code);
  j["message"] = std::string(message);
  if (reason != StatusReason::kNone) j["reason"] = std::string(StatusReasonName(reason));
  return j;
}

Json ErrorJson(const Status& status) {
  return ErrorJson(StatusCodeName(status.code()), status.message(), status.reason());
}

}  // namespace

Reply ErrorReply(int http_status, std::string_view code, std::string_view message) {
  return JsonReply(http_status, ErrorJson(code, message));
}

Reply ErrorReply(const Status& status) {
  return JsonReply(HttpStatusFor(status), ErrorJson(status));
}

// ---------------------------------------------------------------------------
// FilterCache

FilterCache::FilterCache(std::chrono::milliseconds revalidate_after, size_t max_entries,
                         Metrics* metrics, std::chrono::milliseconds idle_after, LetGo let_go)
    : revalidate_after_ns_(
          std::chrono::duration_cast<std::chrono::nanoseconds>(revalidate_after).count()),
      idle_after_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(idle_after).count()),
      max_entries_(max_entries == 0 ? 1 : max_entries),
      metrics_(metrics),
      let_go_(std::move(let_go)) {}

void FilterCache::TellLetGo(std::span<const std::string> names) const {
  if (let_go_ != nullptr && !names.empty()) let_go_(names);
}

void RememberedNames::Add(std::span<const std::string> names) {
  std::lock_guard lock(mu_);
  for (const std::string& name : names) {
    if (auto it = where_.find(name); it != where_.end()) {
      order_.splice(order_.end(), order_, it->second);  // the newest now
      continue;
    }
    if (order_.size() >= capacity_) {
      where_.erase(order_.front());
      order_.pop_front();
    }
    order_.push_back(name);
    where_.emplace(order_.back(), std::prev(order_.end()));
  }
  size_.store(order_.size(), std::memory_order_relaxed);
}

bool RememberedNames::Remove(std::string_view name) {
  if (size_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(mu_);
  auto it = where_.find(name);
  if (it == where_.end()) return false;
  const auto node = it->second;
  where_.erase(it);
  order_.erase(node);
  size_.store(order_.size(), std::memory_order_relaxed);
  return true;
}

void RecentDrops::Add(std::string_view name, int64_t now_ns) {
  std::lock_guard lock(mu_);
  // Bounded by what a window of DELETEs names; swept when it has doubled
  // since the last sweep, not on every DELETE of a mass deletion.
  if (when_.size() >= sweep_at_) {
    std::erase_if(when_, [&](const auto& e) { return now_ns - e.second > kWindowNs; });
    sweep_at_ = std::max<size_t>(1024, 2 * when_.size());
  }
  when_.insert_or_assign(std::string(name), now_ns);
}

void RecentDrops::Remove(std::string_view name) {
  std::lock_guard lock(mu_);
  if (!when_.empty()) when_.erase(std::string(name));
}

bool RecentDrops::Recent(std::string_view name, int64_t now_ns) {
  std::lock_guard lock(mu_);
  const auto it = when_.find(std::string(name));
  return it != when_.end() && now_ns - it->second <= kWindowNs;
}

Result<std::shared_ptr<BloomFilter>> FilterCache::Open(Store& store, std::string_view name) {
  REDBLOOM_ASSIGN_OR_RETURN(std::unique_ptr<BloomFilter> opened, BloomFilter::Open(store, name));
  metrics_->FilterOpened();
  std::shared_ptr<BloomFilter> filter = std::move(opened);
  Put(name, filter);
  return filter;
}

Result<std::shared_ptr<BloomFilter>> FilterCache::Get(Store& store, std::string_view name,
                                                      bool* cached) {
  *cached = false;
  std::shared_ptr<Entry> entry;
  {
    std::shared_lock lock(mu_);
    auto it = entries_.find(name);
    if (it != entries_.end()) entry = it->second;
  }
  if (entry == nullptr) return Open(store, name);

  const int64_t now = SteadyNowNs();
  if (now - entry->validated_ns.load(std::memory_order_relaxed) >= revalidate_after_ns_) {
    Result<FilterConfig> stored = store.ReadConfig(name);
    if (!stored.ok()) {
      // The handle was cached: a filter open here that is gone now (or
      // that its store failed on) is the caller's to note.
      *cached = true;
      const StatusCode code = stored.status().code();
      if (code == StatusCode::kNotFound || code == StatusCode::kUnavailable) {
        Evict(name, entry->filter.get());
      }
      return stored.status();
    }
    // Every field, not SameFilterAs: a TTL is no part of a filter's
    // identity, yet a rebuild may change it alone (on Redis, in place), and
    // info said the TTL the handle opened with.
    if (*stored != entry->filter->config()) {
      Evict(name, entry->filter.get());
      return Open(store, name);
    }
    // The same config may be another file's: a backup moved over the
    // filter's by hand. The handle reopens on it; adds went on to the old,
    // unlinked file before, and were lost.
    if (Status current = entry->filter->Revalidate(); !current.ok()) {
      *cached = true;
      if (current.code() == StatusCode::kNotFound) Evict(name, entry->filter.get());
      return current;
    }
    entry->validated_ns.store(now, std::memory_order_relaxed);
  }
  // Written once a second at most (a quarter of idle_after when shorter): a
  // hot filter's requests would all write this line otherwise.
  if (now - entry->used_ns.load(std::memory_order_relaxed) >
      std::min<int64_t>(1'000'000'000, idle_after_ns_ / 4)) {
    entry->used_ns.store(now, std::memory_order_relaxed);
  }
  *cached = true;
  return entry->filter;
}

void FilterCache::Put(std::string_view name, std::shared_ptr<BloomFilter> filter) {
  auto entry = std::make_shared<Entry>();
  entry->filter = std::move(filter);
  const int64_t now = SteadyNowNs();
  entry->validated_ns.store(now, std::memory_order_relaxed);
  entry->used_ns.store(now, std::memory_order_relaxed);
  // What leaves the cache is destroyed after the lock is released: a Redis
  // handle's destructor may talk to its server (counts it still owes).
  std::shared_ptr<Entry> gone;
  std::unique_lock lock(mu_);
  auto it = entries_.find(name);
  if (it != entries_.end()) {
    gone = std::exchange(it->second, std::move(entry));
    lock.unlock();
    return;
  }
  // Bounded so that a client touching many filters cannot pin a mapping or
  // connection state for each. The least recently used goes: begin() was
  // most often the newest (libstdc++), so a new working set evicted itself
  // while old handles stayed (an audit: 280 opens for 50 hot filters).
  if (entries_.size() >= max_entries_) {
    auto victim = LeastRecentlyUsed();
    gone = std::move(victim->second);
    TellLetGo(std::span(&victim->first, 1));
    entries_.erase(victim);
  }
  entries_.emplace(std::string(name), std::move(entry));
  lock.unlock();
}

size_t FilterCache::EvictOldestQuarter(std::string_view keep) {
  std::vector<std::shared_ptr<Entry>> gone;  // freed (unmapped) after the lock
  std::vector<std::string> let_go;
  std::unique_lock lock(mu_);
  // Set aside while the others are picked from, then put back.
  std::shared_ptr<Entry> kept;
  if (auto it = entries_.find(keep); it != entries_.end()) {
    kept = std::move(it->second);
    entries_.erase(it);
  }
  const size_t n = std::max<size_t>(1, entries_.size() / 4);
  while (gone.size() < n && !entries_.empty()) {
    auto victim = LeastRecentlyUsed();
    gone.push_back(std::move(victim->second));
    let_go.push_back(victim->first);
    entries_.erase(victim);
  }
  if (kept != nullptr) entries_.emplace(std::string(keep), std::move(kept));
  TellLetGo(let_go);
  lock.unlock();
  return gone.size();
}

// A cache of up to kExactLruEntries is scanned whole. A larger one is
// sampled, as Redis samples keys for its LRU: the oldest of kLruSample
// entries from a random bucket on. Scanned whole, each eviction from a full
// cache of 100,000 handles took 44-53 ms under the exclusive lock, and held
// every other request that long (an audit: a cached filter's single check
// at p50 27 ms, p99 105 ms, while another client walked many filters).
FilterCache::Map::iterator FilterCache::LeastRecentlyUsed() {
  constexpr size_t kExactLruEntries = 1024;
  constexpr size_t kLruSample = 32;
  const auto used = [](const std::shared_ptr<Entry>& e) {
    return e->used_ns.load(std::memory_order_relaxed);
  };
  auto victim = entries_.begin();
  if (entries_.size() <= kExactLruEntries) {
    for (auto e = entries_.begin(); e != entries_.end(); ++e) {
      if (used(e->second) < used(victim->second)) victim = e;
    }
    return victim;
  }
  thread_local std::minstd_rand rng(std::random_device{}());
  const size_t buckets = entries_.bucket_count();
  size_t bucket = rng() % buckets;
  const std::string* oldest = nullptr;
  int64_t oldest_ns = INT64_MAX;
  for (size_t seen = 0; seen < kLruSample; bucket = (bucket + 1) % buckets) {
    for (auto e = entries_.begin(bucket); e != entries_.end(bucket) && seen < kLruSample;
         ++e, ++seen) {
      const int64_t ns = used(e->second);
      if (ns < oldest_ns) {
        oldest_ns = ns;
        oldest = &e->first;
      }
    }
  }
  return entries_.find(*oldest);
}

void FilterCache::Evict(std::string_view name, const BloomFilter* only) {
  std::unique_lock lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return;
  if (only != nullptr && it->second->filter.get() != only) return;
  entries_.erase(it);
}

std::vector<std::shared_ptr<BloomFilter>> FilterCache::Snapshot() const {
  std::shared_lock lock(mu_);
  std::vector<std::shared_ptr<BloomFilter>> out;
  out.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) out.push_back(entry->filter);
  return out;
}

size_t FilterCache::size() const {
  std::shared_lock lock(mu_);
  return entries_.size();
}

void FilterCache::Clear() {
  std::unique_lock lock(mu_);
  entries_.clear();
}

template <typename Pred>
bool FilterCache::EvictIf(Pred&& evict, size_t limit) {
  std::vector<std::shared_ptr<Entry>> gone;  // freed (unmapped) after the lock
  std::vector<std::string> names;
  std::unique_lock lock(mu_);
  bool more = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!evict(it->first, *it->second)) {
      ++it;
      continue;
    }
    if (gone.size() == limit) {
      more = true;
      break;
    }
    gone.push_back(std::move(it->second));
    names.push_back(it->first);
    it = entries_.erase(it);
  }
  TellLetGo(names);
  lock.unlock();
  return more;
}

void FilterCache::KeepOnly(const std::vector<std::string>& names) {
  const std::unordered_set<std::string_view> listed(names.begin(), names.end());
  EvictIf([&](const std::string& name, const Entry&) { return listed.count(name) == 0; });
}

void FilterCache::SweepIdle() {
  // One sweep per interval: the first caller past it takes the turn.
  constexpr int64_t kSweepEveryNs = int64_t{10} * 1000 * 1000 * 1000;
  const int64_t now = SteadyNowNs();
  int64_t due = next_sweep_ns_.load(std::memory_order_relaxed);
  if (now < due ||
      !next_sweep_ns_.compare_exchange_strong(due, now + std::min(kSweepEveryNs, idle_after_ns_),
                                              std::memory_order_relaxed)) {
    return;
  }
  // A few handles per sweep: the request that runs it pays for their
  // unmapping (or a Redis handle's unsent counts), and a sweep of every
  // idle handle cost one request 125 ms at 4096 plain filters and a /readyz
  // 1.6 s at 2,040 scaling ones, past a probe's timeout. What is left goes
  // at the next request's sweep, due at once.
  constexpr size_t kSweepHandles = 64;
  const bool more = EvictIf(
      [&](const std::string&, const Entry& entry) {
        return now - entry.used_ns.load(std::memory_order_relaxed) >= idle_after_ns_;
      },
      kSweepHandles);
  if (more) next_sweep_ns_.store(now, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// Service

Service::Service(ServiceOptions options, Metrics* metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      // A handle the cache closes was open here: finding its filter gone
      // later is a vanished filter (unseen, a filter used less than once a
      // filter_idle_ms went uncounted: an audit).
      cache_(options_.revalidate_after, options_.filter_cache_size, metrics, options_.idle_after,
             [this](std::span<const std::string> names) { remembered_.Add(names); }) {}

Service::~Service() {
  {
    std::lock_guard lock(retry_mu_);
    stop_retry_ = true;
  }
  retry_cv_.notify_all();
  if (retry_thread_.joinable()) retry_thread_.join();
  cache_.Clear();
}

std::string Service::store_url() const {
  Store* store = store_.load();
  return store != nullptr ? store->url() : options_.store_url;
}

Status Service::Start() {
  Result<std::unique_ptr<Store>> opened = Store::Open(options_.store_url, options_.store_options);
  const std::optional<Store::Traits> traits = Store::TraitsOf(options_.store_url);
  const bool server = traits.has_value() && !traits->local;
  if (opened.ok()) {
    // A local store that cannot take writes (a read-only directory, or one
    // whose parent is missing) still serves what it can; said now, not
    // first by a /readyz probe.
    if (!server) {
      if (Status ready = (*opened)->Ping(); !ready.ok()) {
        std::fprintf(stderr,
                     "redbloomd: warning: the store cannot take writes (%s); /readyz answers 503 "
                     "until it can\n",
                     ready.ToString().c_str());
      }
    }
    std::lock_guard lock(store_mu_);
    owned_store_ = std::move(opened).value();
    store_.store(owned_store_.get());
    return Status::Ok();
  }
  // A server may come up later; a local store that failed to open will not.
  if (!server || !opened.status().IsTransient()) return opened.status();
  {
    std::lock_guard lock(store_mu_);
    last_open_error_ = opened.status();
  }
  Result<std::thread> retry =
      internal::StartThread("the thread that would retry it", [this] { RetryOpenLoop(); });
  if (!retry.ok()) {
    // The URL is not repeated: main prints it redacted.
    return Status::ResourceExhausted("not reachable yet (" + opened.status().ToString() +
                                     "), and " + retry.status().message());
  }
  retry_thread_ = std::move(retry).value();
  std::fprintf(stderr, "redbloomd: store is not reachable yet (%s); retrying every second\n",
               opened.status().ToString().c_str());
  return Status::Ok();
}

void Service::RetryOpenLoop() {
  std::unique_lock lock(retry_mu_);
  while (!stop_retry_) {
    retry_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_retry_; });
    if (stop_retry_) return;
    lock.unlock();
    Result<std::unique_ptr<Store>> opened = Store::Open(options_.store_url, options_.store_options);
    lock.lock();
    std::lock_guard store_lock(store_mu_);
    if (opened.ok()) {
      owned_store_ = std::move(opened).value();
      store_.store(owned_store_.get());
      std::fprintf(stderr, "redbloomd: store %s is open\n", owned_store_->url().c_str());
      return;
    }
    last_open_error_ = opened.status();
  }
}

Result<Store*> Service::GetStore() const {
  Store* store = store_.load();
  if (store != nullptr) return store;
  std::lock_guard lock(store_mu_);
  return Status(StatusCode::kUnavailable,
                "the store is not open yet: " + last_open_error_.message(),
                last_open_error_.reason());
}

Reply Service::StoreErrorReply(const Status& status) {
  // Contention between clients is no fault of the store: counted, it fired
  // the store-error alert the docs suggest on a PUT racing DELETEs.
  if (status.reason() == StatusReason::kContended) {
    Reply r = ErrorReply(status);
    r.headers.emplace_back("Retry-After", "1");
    return r;
  }
  if (IsStoreFault(status.code())) metrics_->StoreError(status.code());
  return ErrorReply(status);
}

void Service::RememberOpen(std::string_view name) {
  const std::string held(name);
  remembered_.Add(std::span(&held, 1));
}

bool Service::ForgetOpen(std::string_view name) { return remembered_.Remove(name); }

// A filter this service had open is gone: dropped by another client, or
// lost (its keys evicted, a Redis restarted without persistence, its file
// deleted). From here both read as not found (404), which no store error
// counts: this is what an alert can watch.
void Service::NoteGone(std::string_view name, const Status& why) {
  if (dropped_here_.Recent(name, SteadyNowNs())) return;
  metrics_->FilterVanished();
  std::fprintf(stderr,
               "redbloomd: filter '%s', open here, is gone: %s (dropped by another client, or "
               "lost: evicted keys, a store restarted without persistence, a deleted file)\n",
               std::string(name).c_str(), why.message().c_str());
}

template <typename Op>
Status Service::OnFilter(std::string_view name, Op&& op) {
  REDBLOOM_ASSIGN_OR_RETURN(Store * store, GetStore());
  cache_.SweepIdle();
  bool cached = false;
  Result<std::shared_ptr<BloomFilter>> opened = cache_.Get(*store, name, &cached);
  // A file: filter the process could not map for want of memory mappings
  // (vm.max_map_count; StatusReason::kMappingLimit): one per open filter
  // file, each scaling layer and window slice included, and the cache's
  // handles hold most of them. Letting the least recently used quarter go
  // (and trying an open once more) keeps the service serving there; the
  // handles reopen when next asked for.
  if (!opened.ok() && opened.status().reason() == StatusReason::kMappingLimit &&
      cache_.EvictOldestQuarter(name) > 0) {
    opened = cache_.Get(*store, name, &cached);
  }
  if (!opened.ok()) {
    // Failed on a cached handle's re-read (it was open here), or on a name
    // whose handle an earlier store failure evicted: both were open here.
    const StatusCode code = opened.status().code();
    if (code == StatusCode::kNotFound && (ForgetOpen(name) || cached)) {
      NoteGone(name, opened.status());
    } else if (code == StatusCode::kUnavailable && cached) {
      RememberOpen(name);  // a Redis restarted without its data says so once
    }
    return opened.status();
  }
  std::shared_ptr<BloomFilter> filter = std::move(opened).value();
  // Found on a fresh open: no longer a name to count as vanished if it is
  // missing later (a cached handle's name is never remembered).
  if (!cached) ForgetOpen(name);
  Status s = op(*filter);
  // A layer or slice the call could not map: the call may have written part
  // of its items, so it is not run again (an add would then answer "not
  // new" for them); the handles go, so that the client's retry finds room.
  if (s.reason() == StatusReason::kMappingLimit) cache_.EvictOldestQuarter(name);
  if (cached && (s.code() == StatusCode::kConflict || s.code() == StatusCode::kNotFound)) {
    cache_.Evict(name, filter.get());
    Result<std::shared_ptr<BloomFilter>> reopened = cache_.Get(*store, name, &cached);
    if (!reopened.ok() && reopened.status().code() == StatusCode::kNotFound) {
      ForgetOpen(name);
      NoteGone(name, reopened.status());
    }
    REDBLOOM_ASSIGN_OR_RETURN(filter, std::move(reopened));
    s = op(*filter);
  }
  // A handle that followed a rebuild keeps the old filter's state (on file:
  // its deleted file, mapped, with its disk space) for as long as it lives:
  // the next request opens a fresh one, and this one goes with the last
  // request that holds it. A handle whose write met a full disk, or a file
  // it could not write (a read-only mount), keeps its file mapped read-only:
  // the next request opens the file again, so writes resume once there is
  // room.
  // (Not at the mapping limit: the handle asked for is what the client's
  // retry needs, with the layers it mapped.)
  if (filter->Reopened() ||
      (s.code() == StatusCode::kResourceExhausted && s.reason() != StatusReason::kMappingLimit) ||
      s.code() == StatusCode::kUnavailable) {
    cache_.Evict(name, filter.get());
    // The filter was open: if it is gone when next asked for (a Redis that
    // restarted without its data fails one call "restarted", then has no
    // filters), that is a vanished filter.
    if (!filter->Reopened()) RememberOpen(name);
  }
  return s;
}

Status Service::FlushAll() {
  Status first;
  for (const auto& filter : cache_.Snapshot()) {
    Status s = filter->Flush();
    if (!s.ok() && first.ok()) first = s.WithContext("flushing filter '" + filter->name() + "'");
  }
  // Filters written through handles the cache has let go of (full, or
  // replaced after a rebuild or a store error) have no handle to flush.
  if (Store* store = store_.load(); store != nullptr) {
    Status s = store->Sync();
    if (!s.ok() && first.ok()) first = s.WithContext("syncing the store");
  }
  return first;
}

Status Service::RemoveExpired() {
  Store* store = store_.load();
  if (store == nullptr) return Status::Ok();
  Result<std::vector<std::string>> names = store->List();  // a listing removes what expired
  if (!names.ok()) return names.status();
  // And the handles to them go too (as ListFilters lets go of them): a
  // PUT's handle held an expired filter's memory, or its file mapped and its
  // disk space taken, until it went idle and a request came.
  cache_.KeepOnly(*names);
  return Status::Ok();
}

Reply Service::Health() const { return JsonReply(200, Json{{"status", "ok"}}); }

Reply Service::Ready() {
  if (shutting_down_.load()) return ErrorReply(503, "unavailable", "shutting down");
  Result<Store*> store = GetStore();
  if (!store.ok()) return StoreErrorReply(store.status());
  Status s = (*store)->Ping();
  if (!s.ok()) return StoreErrorReply(s);
  // Probes come when nothing else does. After the ping: a Redis handle let
  // go sends its unsent counts, which must not hold a probe on a store
  // that does not answer.
  cache_.SweepIdle();
  Json body{{"status", "ready"}};
  // Which server takes writes now: with Sentinel it changes at a failover,
  // and an operator wants to see that each instance followed it.
  if (std::string master = (*store)->Master(); !master.empty()) body["master"] = master;
  // Still ready, but an operator should act: e.g. a Redis that can evict
  // filter keys (each then fails with data_loss on its next use).
  Result<std::vector<std::string>> warnings = (*store)->Warnings();
  if (!warnings.ok()) return StoreErrorReply(warnings.status());
  if (!warnings->empty()) body["warnings"] = *warnings;
  return JsonReply(200, body);
}

Reply Service::MetricsText() const {
  Reply r;
  r.body = metrics_->Render(cache_.size(), store_.load() != nullptr);
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return r;
}

Reply Service::ListFilters() {
  Result<Store*> store = GetStore();
  if (!store.ok()) return StoreErrorReply(store.status());
  Result<std::vector<std::string>> names = (*store)->List();
  if (!names.ok()) return StoreErrorReply(names.status());
  // Listing removes expired filters (file:, mem:); any gone are let go of
  // here, or their handles kept the files mapped, and the disk space taken.
  cache_.KeepOnly(*names);
  return JsonReply(200, Json{{"filters", *names}});
}

Reply Service::PutFilter(std::string_view name, std::string_view body) {
  Result<FilterOptions> options = ParseFilterOptions(body);
  if (!options.ok()) return ErrorReply(options.status());
  if (options_.max_filter_bytes != 0) {
    // Checked before the store is touched: sizing is arithmetic, and a
    // filter too large for the machine must not be half-created.
    // A TTL or a window past 100 years is Create's to refuse (400), or to
    // open as an older build stored it: nothing is made, so nothing sized.
    Result<std::optional<FilterConfig>> config = frontend::ConfigToSize(*options);
    if (!config.ok()) return ErrorReply(config.status());
    if (*config) {
      Result<uint64_t> bytes = FilterBytes(**config);
      if (!bytes.ok()) return ErrorReply(bytes.status());
      if (*bytes > options_.max_filter_bytes) {
        return ErrorReply(Status::TooLarge(
            "filter '" + std::string(name) + "' needs " + std::to_string(*bytes) + " bytes (" +
            HumanBytes(*bytes) + ") for capacity " + std::to_string((*config)->capacity) +
            " at error_rate " + FormatDouble((*config)->error_rate) + "; this server's limit is " +
            std::to_string(options_.max_filter_bytes) + " bytes (" +
            HumanBytes(options_.max_filter_bytes) +
            "): ask for less, or raise max_filter_bytes in the config file (or "
            "--max-filter-bytes)"));
      }
    }
  }
  Result<Store*> store = GetStore();
  if (!store.ok()) return StoreErrorReply(store.status());
  bool created = false;
  Result<FilterInfo> info = Status::Internal("unreached");
  // A DELETE that lands between the create and its info: made again, as a
  // PUT after the DELETE would have; a PUT never answers 404 (a drop that
  // wins every time is a retryable 503).
  constexpr int kAttempts = 3;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    Result<std::unique_ptr<BloomFilter>> filter =
        BloomFilter::Create(**store, name, *options, &created);
    if (!filter.ok()) return StoreErrorReply(filter.status());
    if (!created) {
      Status ttl = frontend::CheckExistingTtl(name, (*filter)->config(), *options);
      if (!ttl.ok()) return StoreErrorReply(ttl);
    }
    std::shared_ptr<BloomFilter> handle = std::move(filter).value();
    metrics_->FilterOpened();
    // A new filter replaces whatever handle an earlier filter of this name left.
    cache_.Put(name, handle);
    ForgetOpen(name);
    info = handle->Info();
    if (info.ok() || info.status().code() != StatusCode::kNotFound) break;
    // Retryable, as the library's Create says of a drop that keeps winning.
    if (attempt == kAttempts) info = frontend::DroppedAsMade(name, kAttempts);
  }
  if (!info.ok()) return StoreErrorReply(info.status());
  Reply r = JsonReply(created ? 201 : 200, frontend::InfoJson(*info, (*store)->url()));
  if (created)
    r.headers.emplace_back("Location", "/v1/filters/" + internal::PercentEncode(name, ":@"));
  return r;
}

Reply Service::GetFilter(std::string_view name) {
  FilterInfo info;
  Status s = OnFilter(name, [&](BloomFilter& f) -> Status {
    REDBLOOM_ASSIGN_OR_RETURN(info, f.Info());
    return Status::Ok();
  });
  if (!s.ok()) return StoreErrorReply(s);
  return JsonReply(200, frontend::InfoJson(info, store_url()));
}

Reply Service::DeleteFilter(std::string_view name) {
  Result<Store*> store = GetStore();
  if (!store.ok()) return StoreErrorReply(store.status());
  cache_.Evict(name);
  ForgetOpen(name);
  // Before the drop: a request that finds the filter gone meanwhile is
  // racing this DELETE.
  dropped_here_.Add(name, SteadyNowNs());
  Status s = BloomFilter::Drop(**store, name);
  // Evict again: a request running during the drop may have reopened it.
  cache_.Evict(name);
  if (s.ok() || s.code() == StatusCode::kNotFound) {
    dropped_here_.Add(name, SteadyNowNs());  // its window starts as it ends
  } else {
    dropped_here_.Remove(name);
  }
  if (!s.ok()) return StoreErrorReply(s);
  return JsonReply(200, Json{{"name", std::string(name)}, {"deleted", true}});
}

Reply Service::AddItems(std::string_view name, std::string_view body) {
  ItemsBody items;
  std::vector<uint8_t> added;
  Status s = OnFilter(name, [&](BloomFilter& f) -> Status {
    REDBLOOM_RETURN_IF_ERROR(
        items.Parse(body, IsIntegerEncoding(f.config().encoding), options_.limits));
    return f.AddMany(items.items(), &added);
  });
  uint64_t new_items = 0;
  for (uint8_t a : added) new_items += a;
  if (!s.ok()) {
    Reply r = StoreErrorReply(s);
    // Only for a store that failed: a filter found gone or changed on a
    // retry has no answers to give (those of an attempt before would be of
    // the filter that went).
    if (added.empty() || !IsStoreFault(s.code())) return r;
    // The store failed part way and confirmed the leading items (Redis's
    // transactions answered before the failure, a scaling filter's layers
    // before one that could not be made): their answers go with the error,
    // as a retry would read every one of them as not new.
    metrics_->ItemsAdded(added.size(), new_items);
    Json j = ErrorJson(s);
    Json answers = Json::array();
    for (uint8_t a : added) answers.push_back(a != 0);
    j["added"] = std::move(answers);
    r.body = Dump(j);
    return r;
  }
  metrics_->ItemsAdded(added.size(), new_items);
  Reply r;
  r.body = BoolArrayBody("added", added);
  return r;
}

Reply Service::CheckItems(std::string_view name, std::string_view body) {
  ItemsBody items;
  std::vector<uint8_t> present;
  Status s = OnFilter(name, [&](BloomFilter& f) -> Status {
    REDBLOOM_RETURN_IF_ERROR(
        items.Parse(body, IsIntegerEncoding(f.config().encoding), options_.limits));
    return f.ContainsMany(items.items(), &present);
  });
  if (!s.ok()) return StoreErrorReply(s);
  uint64_t hits = 0;
  for (uint8_t p : present) hits += p;
  metrics_->ItemsChecked(present.size(), hits);
  Reply r;
  r.body = BoolArrayBody("present", present);
  return r;
}

Reply Service::RemoveItems(std::string_view name, std::string_view body) {
  ItemsBody items;
  std::vector<uint8_t> removed;
  Status s = OnFilter(name, [&](BloomFilter& f) -> Status {
    REDBLOOM_RETURN_IF_ERROR(
        items.Parse(body, IsIntegerEncoding(f.config().encoding), options_.limits));
    return f.RemoveMany(items.items(), &removed);
  });
  if (!s.ok()) return StoreErrorReply(s);
  uint64_t count = 0;
  for (uint8_t r : removed) count += r;
  metrics_->ItemsRemoved(count);
  Reply r;
  r.body = BoolArrayBody("removed", removed);
  return r;
}

Status Service::CheckItemSize(std::string_view item) const {
  if (item.size() > options_.limits.max_item_bytes) {
    return Status::TooLarge("item is " + std::to_string(item.size()) + " bytes; the limit is " +
                            std::to_string(options_.limits.max_item_bytes));
  }
  return Status::Ok();
}

Reply Service::CheckItem(std::string_view name, std::string_view item) {
  if (Status s = CheckItemSize(item); !s.ok()) return ErrorReply(s);
  bool present = false;
  Status s = OnFilter(name, [&](BloomFilter& f) -> Status {
    REDBLOOM_ASSIGN_OR_RETURN(present, f.Contains(item));
    return Status::Ok();
  });
  if (!s.ok()) return StoreErrorReply(s);
  metrics_->ItemsChecked(1, present ? 1 : 0);
  Reply r;
  r.body = present ? "{\"present\":true}" : "{\"present\":false}";
  return r;
}

Reply Service::RemoveItem(std::string_view name, std::string_view item) {
  if (Status s = CheckItemSize(item); !s.ok()) return ErrorReply(s);
  bool removed = false;
  Status s = OnFilter(name, [&](BloomFilter& f) { return f.Remove(item, &removed); });
  if (!s.ok()) return StoreErrorReply(s);
  metrics_->ItemsRemoved(removed ? 1 : 0);
  Reply r;
  r.body = removed ? "{\"removed\":true}" : "{\"removed\":false}";
  return r;
}

}  // namespace redbloom::server
