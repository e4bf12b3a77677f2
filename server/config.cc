#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "redbloom/store.h"
#include "util/errno_text.h"
#include "util/redact_url.h"

namespace redbloom::server {
namespace {

using Json = nlohmann::ordered_json;

Status Invalid(std::string_view key, std::string_view what) {
  return Status::InvalidArgument("config \"" + std::string(key) + "\": " + std::string(what));
}

Status GetString(const Json& v, std::string_view key, std::string* out) {
  if (!v.is_string()) return Invalid(key, "must be a string");
  // "\u0000" is valid JSON, but every value here ends up in a C string (a
  // path, an address): "/var/log/a\u0000b" wrote to /var/log/a.
  if (v.get_ref<const std::string&>().find('\0') != std::string::npos) {
    return Invalid(key, "holds a NUL character (\\u0000)");
  }
  *out = v.get<std::string>();
  return Status::Ok();
}

Status GetBool(const Json& v, std::string_view key, bool* out) {
  if (!v.is_boolean()) return Invalid(key, "must be true or false");
  *out = v.get<bool>();
  return Status::Ok();
}

template <typename T>
Status GetInt(const Json& v, std::string_view key, int64_t lo, int64_t hi, T* out) {
  if (!v.is_number_integer()) return Invalid(key, "must be an integer");
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX;
  const int64_t x = huge ? 0 : v.get<int64_t>();
  if (huge || x < lo || x > hi) {
    return Invalid(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  *out = static_cast<T>(x);
  return Status::Ok();
}

Status ValidateToken(const std::string& token, std::string_view source) {
  if (token.size() > 4096) {
    return Status::InvalidArgument("token from " + std::string(source) + " is over 4096 bytes");
  }
  for (unsigned char c : token) {
    if (c <= 0x20 || c >= 0x7f) {
      return Status::InvalidArgument("token from " + std::string(source) +
                                     " must be printable ASCII without spaces");
    }
  }
  return Status::Ok();
}

Result<std::string> ReadSmallFile(const std::string& path, std::string_view what) {
  // With the reason: a directory read as "truncated JSON" or an "empty"
  // token file, and a missing or unreadable file gave none.
  const auto unreadable = [&](const std::string& reason) {
    return Status::InvalidArgument("cannot read " + std::string(what) + " " + path +
                                   (reason.empty() ? "" : ": " + reason));
  };
  const auto errno_reason = [] { return errno != 0 ? internal::ErrnoText(errno) : ""; };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return unreadable("it is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return unreadable(errno_reason());
  std::string data;
  data.resize(kMaxConfigFileBytes + 1);
  errno = 0;
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  if (in.bad()) return unreadable(errno_reason());
  data.resize(static_cast<size_t>(in.gcount()));
  if (data.size() > kMaxConfigFileBytes) {
    return Status::InvalidArgument(std::string(what) + " " + path + " is larger than " +
                                   std::to_string(kMaxConfigFileBytes) + " bytes");
  }
  return data;
}

// The revalidation interval when the config does not set one: a file store's
// check is one small local read (~3 us), cheap enough for every request; a
// network store's is a round trip, so it is done at most once a second.
// Every store now tells an open handle when its filter was dropped, replaced
// or re-created (Redis checks the metadata on each call; file and memory
// stores flag the retired file or buffer), and the handle reopens by itself.
// The periodic re-read is a second line of defence, cheap at once a second.
std::chrono::milliseconds DefaultRevalidate(std::string_view /*store_url*/) {
  return std::chrono::milliseconds(1000);
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a byte size (e.g. 1073741824, 1GiB, 512M)");
  };
  // At most 2^63 - 1, as the config file's max_filter_bytes (a JSON
  // integer): the flag took up to 2^64 - 1.
  const auto too_large = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is larger than 9223372036854775807 bytes (2^63 - 1)");
  };
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) return too_large();
  if (ec != std::errc() || ptr == text.data()) return bad();
  std::string suffix(ptr, text.data() + text.size());
  for (char& ch : suffix) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (suffix.ends_with("ib")) {
    suffix.resize(suffix.size() - 2);
    if (suffix.empty()) return bad();  // "512ib" was 512 bytes
  }
  int shift = 0;
  if (suffix == "k") {
    shift = 10;
  } else if (suffix == "m") {
    shift = 20;
  } else if (suffix == "g") {
    shift = 30;
  } else if (suffix == "t") {
    shift = 40;
  } else if (!suffix.empty()) {
    return bad();
  }
  if (v > (static_cast<uint64_t>(INT64_MAX) >> shift)) return too_large();
  return v << shift;
}

namespace {

// A memory limit file's number ("max", unreadable or absurd: none).
uint64_t ReadLimit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return UINT64_MAX;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0) return UINT64_MAX;
  return v;
}

// This process's cgroup memory limit (v2 memory.max, v1
// memory.limit_in_bytes), or UINT64_MAX.
uint64_t CgroupMemoryLimit() {
  std::ifstream in("/proc/self/cgroup");
  uint64_t limit = UINT64_MAX;
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      limit = std::min(limit, ReadLimit("/sys/fs/cgroup" + path + "/memory.max"));
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      limit = std::min(limit, ReadLimit("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"));
    }
  }
  return limit;
}

}  // namespace

uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  uint64_t bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  // What this process may use: a container's cgroup or an address-space
  // limit can be far below the machine's memory (a filter sized by the
  // machine was OOM-killed in a 1 GiB cgroup, or failed to map).
  bytes = std::min(bytes, CgroupMemoryLimit());
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    bytes = std::min<uint64_t>(bytes, as.rlim_cur);
  }
  return bytes;
}

uint64_t DefaultMaxFilterBytes(std::string_view store_url, uint64_t physical_bytes) {
  // A quarter leaves room for several filters, the page cache and the rest
  // of the machine: a filter larger than memory works, but each add or check
  // then waits for the disk.
  const std::optional<Store::Traits> traits = Store::TraitsOf(store_url);
  return traits.has_value() && traits->local ? physical_bytes / 4 : 0;
}

bool IsLoopbackHost(std::string_view host) {
  // Host names are case-insensitive: "LOCALHOST" resolves as "localhost".
  if (host.size() == 9 && strncasecmp(host.data(), "localhost", 9) == 0) return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

Status ParseListen(std::string_view listen, std::string* host, int* port) {
  const auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("listen address '" + std::string(listen) + "' " +
                                   std::string(why) + " (expected HOST:PORT or [IPv6]:PORT)");
  };
  std::string_view h;
  std::string_view p;
  if (listen.starts_with("[")) {
    const size_t close = listen.find(']');
    if (close == std::string_view::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return bad("is malformed");
    }
    h = listen.substr(1, close - 1);
    p = listen.substr(close + 2);
    // Brackets hold an IPv6 address only (RFC 3986), as in store URLs.
    // A zone id ("%eth0", which getaddrinfo takes) follows the address.
    in6_addr v6{};
    if (!h.empty() &&
        inet_pton(AF_INET6, std::string(h.substr(0, h.find('%'))).c_str(), &v6) != 1) {
      return bad("has brackets around what is not an IPv6 address");
    }
  } else {
    const size_t colon = listen.rfind(':');
    if (colon == std::string_view::npos) return bad("has no port");
    h = listen.substr(0, colon);
    p = listen.substr(colon + 1);
    if (h.find(':') != std::string_view::npos) return bad("has an IPv6 host without brackets");
  }
  if (h.empty()) return bad("has no host");
  int v = -1;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || v < 0 || v > 65535) {
    return bad("has an invalid port");
  }
  *host = std::string(h);
  *port = v;
  return Status::Ok();
}

// A string setting left empty (an unset template variable, most often)
// would fall back to a default or, for a token, turn authentication off:
// refused, as any other invalid value.
Status GetNonEmptyString(const Json& v, std::string_view key, std::string* out) {
  REDBLOOM_RETURN_IF_ERROR(GetString(v, key, out));
  if (out->empty()) {
    return Invalid(key,
                   std::string("must not be empty") +
                       (key == "token" || key == "token_file"
                            ? " (leave it out, or pass --token \"\" to turn authentication off)"
                            : " (leave it out for the default)"));
  }
  return Status::Ok();
}

Status ApplyConfigJson(std::string_view text, ServerConfig* c) {
  // nlohmann takes a NUL byte for the end of its input: what followed one
  // (a token, say) was dropped unread.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Status::InvalidArgument("config file is not valid JSON: a NUL byte at byte " +
                                   std::to_string(nul));
  }
  Json j;
  // A key given twice would count only its last value (nlohmann keeps it),
  // so a token could be overridden by a later line unseen: the parse notes
  // the first top-level key it meets again.
  std::set<std::string> seen;
  std::string dup;
  try {
    j = Json::parse(text, [&](int depth, Json::parse_event_t event, Json& parsed) {
      if (depth == 1 && event == Json::parse_event_t::key && dup.empty() &&
          !seen.insert(parsed.get<std::string>()).second) {
        dup = parsed.get<std::string>();
      }
      return true;
    });
  } catch (const Json::exception& e) {
    const bool truncated =
        std::string_view(e.what()).find("unexpected end of input") != std::string_view::npos;
    return Status::InvalidArgument(std::string(truncated ? "config file is truncated JSON: "
                                                         : "config file is not valid JSON: ") +
                                   e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument("config file must hold a JSON object");
  if (!dup.empty()) return Status::InvalidArgument("config file sets \"" + dup + "\" twice");
  std::string token_file;
  bool has_token = false;
  for (const auto& [key, v] : j.items()) {
    HttpOptions& h = c->http;
    ServiceOptions& s = c->service;
    Status st;
    if (key == "listen") {
      st = GetNonEmptyString(v, key, &c->listen);
      c->listen_source = "config";
    } else if (key == "store") {
      st = GetNonEmptyString(v, key, &c->store);
      c->store_source = "config";
    } else if (key == "token") {
      st = GetNonEmptyString(v, key, &h.token);
      c->token_source = "config";
      has_token = true;
    } else if (key == "token_file") {
      st = GetNonEmptyString(v, key, &token_file);
    } else if (key == "access_log") {
      st = GetNonEmptyString(v, key, &c->access_log);
    } else if (key == "access_log_flush_ms") {
      int64_t ms = 0;
      st = GetInt(v, key, 0, 10000, &ms);
      c->access_log_flush = std::chrono::milliseconds(ms);
    } else if (key == "log_items") {
      st = GetBool(v, key, &h.log_items);
    } else if (key == "public_metrics") {
      st = GetBool(v, key, &h.public_metrics);
    } else if (key == "threads") {
      st = GetInt(v, key, 1, 1024, &h.threads);
    } else if (key == "keep_alive_timeout_s") {
      st = GetInt(v, key, 1, 3600, &h.keep_alive_timeout_s);
    } else if (key == "keep_alive_max_requests") {
      st = GetInt(v, key, 1, 1000000, &h.keep_alive_max_requests);
    } else if (key == "read_timeout_s") {
      st = GetInt(v, key, 1, 3600, &h.read_timeout_s);
    } else if (key == "write_timeout_s") {
      st = GetInt(v, key, 1, 3600, &h.write_timeout_s);
    } else if (key == "header_timeout_s") {
      st = GetInt(v, key, 1, 3600, &h.header_timeout_s);
    } else if (key == "body_timeout_s") {
      st = GetInt(v, key, 1, 3600, &h.body_timeout_s);
    } else if (key == "max_connections") {
      // Each is a descriptor (the packaged unit allows 65536) and up to
      // 64 KiB of header buffer.
      st = GetInt(v, key, 1, 60000, &h.max_connections);
    } else if (key == "max_connections_per_client") {
      // As many as max_connections may be: behind a proxy every client
      // shares one address, and the docs say to raise it to the proxy's pool
      // (or to max_connections), which 1000 refused above that.
      st = GetInt(v, key, 0, 60000, &h.max_connections_per_client);
    } else if (key == "max_filter_bytes") {
      uint64_t bytes = 0;
      st = GetInt(v, key, 0, INT64_MAX, &bytes);
      c->max_filter_bytes = bytes;
      c->max_filter_bytes_source = "config";
    } else if (key == "max_body_bytes") {
      st = GetInt(v, key, 1024, int64_t{1} << 30, &h.max_body_bytes);
    } else if (key == "body_buffer_bytes") {
      st = GetInt(v, key, 0, int64_t{1} << 40, &h.body_buffer_bytes);
    } else if (key == "max_items") {
      st = GetInt(v, key, 1, 10000000, &s.limits.max_items);
    } else if (key == "max_item_bytes") {
      st = GetInt(v, key, 1, 1 << 20, &s.limits.max_item_bytes);
    } else if (key == "filter_revalidate_ms") {
      int64_t ms = 0;
      st = GetInt(v, key, 0, 3600000, &ms);
      c->filter_revalidate_ms = ms;
    } else if (key == "filter_cache_size") {
      st = GetInt(v, key, 1, 1000000, &s.filter_cache_size);
    } else if (key == "filter_idle_ms") {
      int64_t ms = 0;
      st = GetInt(v, key, 100, 86400000, &ms);
      s.idle_after = std::chrono::milliseconds(ms);
    } else if (key == "sync_interval_ms") {
      int64_t ms = 0;
      st = GetInt(v, key, 0, 3600000, &ms);
      s.sync_interval = std::chrono::milliseconds(ms);
    } else if (key == "expiry_sweep_ms") {
      int64_t ms = 0;
      st = GetInt(v, key, 0, 86400000, &ms);
      s.expiry_sweep = std::chrono::milliseconds(ms);
    } else if (key == "store_connect_timeout_ms") {
      int64_t ms = 0;
      st = GetInt(v, key, 1, 600000, &ms);
      s.store_options.connect_timeout = std::chrono::milliseconds(ms);
    } else if (key == "store_command_timeout_ms") {
      int64_t ms = 0;
      st = GetInt(v, key, 1, 600000, &ms);
      s.store_options.command_timeout = std::chrono::milliseconds(ms);
    } else if (key == "store_idle_timeout_ms") {
      int64_t ms = 0;
      st = GetInt(v, key, 0, 86400000, &ms);
      s.store_options.idle_timeout = std::chrono::milliseconds(ms);
    } else if (key == "store_pool_size") {
      st = GetInt(v, key, 1, 1024, &s.store_options.pool_size);
    } else if (key == "store_max_retries") {
      st = GetInt(v, key, 0, 100, &s.store_options.max_retries);
    } else if (key == "store_batch_items") {
      st = GetInt(v, key, 1, 1000000, &s.store_options.batch_items);
    } else {
      st = Status::InvalidArgument("config file has an unknown key \"" + key +
                                   "\" (see docs/http-api.md, \"Config file\")");
    }
    REDBLOOM_RETURN_IF_ERROR(st);
  }
  if (!token_file.empty()) {
    if (has_token) return Status::InvalidArgument("config sets both \"token\" and \"token_file\"");
    REDBLOOM_ASSIGN_OR_RETURN(std::string token, ReadSmallFile(token_file, "token file"));
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                              token.back() == '\t')) {
      token.pop_back();
    }
    if (token.empty()) return Status::InvalidArgument("token file " + token_file + " is empty");
    // Named here, with the file: the check after all sources said only
    // "token from config".
    if (token.find('\n') != std::string::npos) {
      return Status::InvalidArgument("token file " + token_file +
                                     " holds more than one line; the token is its one line");
    }
    REDBLOOM_RETURN_IF_ERROR(ValidateToken(token, "token file " + token_file));
    c->http.token = std::move(token);
    c->token_source = "config";
  }
  return Status::Ok();
}

Result<ServerConfig> ResolveConfig(const Flags& flags,
                                   const std::function<const char*(const char*)>& getenv) {
  ServerConfig c;
  if (flags.config) {
    REDBLOOM_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(*flags.config, "config file"));
    REDBLOOM_RETURN_IF_ERROR(ApplyConfigJson(text, &c).WithContext(*flags.config));
    c.config_file = *flags.config;
  }
  const auto env = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  if (auto v = env("REDBLOOMD_LISTEN")) {
    c.listen = *v;
    c.listen_source = "env";
  }
  if (auto v = env("REDBLOOM_STORE")) {
    c.store = *v;
    c.store_source = "env";
  }
  if (auto v = env("REDBLOOMD_TOKEN")) {
    c.http.token = *v;
    c.token_source = "env";
  }
  if (flags.listen) {
    c.listen = *flags.listen;
    c.listen_source = "flag";
  }
  if (flags.store) {
    // As the CLI does: an empty flag is a mistake (`--store "$URL"` with the
    // variable unset), not a request for the default file store.
    if (flags.store->empty()) {
      return Status::InvalidArgument(
          "--store is empty: give a store URL, or leave the flag out for the default (" +
          DefaultStoreUrl() + ")");
    }
    c.store = *flags.store;
    c.store_source = "flag";
  }
  if (flags.token) {
    c.http.token = *flags.token;  // an explicit empty token turns auth off
    c.token_source = "flag";
  }
  if (flags.max_filter_bytes) {
    Result<uint64_t> bytes = ParseByteSize(*flags.max_filter_bytes);
    if (!bytes.ok()) return bytes.status().WithContext("--max-filter-bytes");
    c.max_filter_bytes = *bytes;
    c.max_filter_bytes_source = "flag";
  }
  // As the CLI: an empty REDBLOOM_STORE (`REDBLOOM_STORE="$URL"` with the
  // variable unset) that would leave the default file store in its place is
  // a mistake, not a choice: served, it answered every item absent from an
  // empty local store instead of the Redis meant. A config file's store
  // still applies below it, as for any empty variable.
  if (const char* v = getenv("REDBLOOM_STORE");
      v != nullptr && *v == '\0' && c.store_source == "default") {
    return Status::InvalidArgument(
        "REDBLOOM_STORE is set but empty: give it a store URL, or unset it for the default (" +
        DefaultStoreUrl() + "), or give --store");
  }
  // redbloomd's own variables start REDBLOOMD_, the store's is the CLI's:
  // the natural slip was ignored, and the default store served.
  if (const char* v = getenv("REDBLOOMD_STORE"); v != nullptr) {
    return Status::InvalidArgument(
        "REDBLOOMD_STORE is set, but the store comes from REDBLOOM_STORE (no D: the same "
        "variable as the CLI's), --store or the config file's \"store\"; unset it");
  }
  if (c.store.empty()) c.store = DefaultStoreUrl();
  // Checked here, not only when the store opens, so --print-config says so.
  REDBLOOM_RETURN_IF_ERROR(
      Store::CheckScheme(c.store).WithContext("store (from " + c.store_source + ")"));
  REDBLOOM_RETURN_IF_ERROR(ValidateToken(c.http.token, c.token_source));
  REDBLOOM_RETURN_IF_ERROR(ParseListen(c.listen, &c.http.host, &c.http.port));
  if (c.http.token == kPlaceholderToken && !IsLoopbackHost(c.http.host)) {
    return Status::InvalidArgument(
        "the token (from " + c.token_source + ") is still the placeholder \"" +
        std::string(kPlaceholderToken) + "\" of the packaged config, and " + c.listen +
        " is beyond loopback: set a secret token (\"token\" or \"token_file\" in the config, "
        "or REDBLOOMD_TOKEN), or listen on 127.0.0.1");
  }
  c.service.store_url = c.store;
  c.service.max_filter_bytes = c.max_filter_bytes
                                   ? *c.max_filter_bytes
                                   : DefaultMaxFilterBytes(c.store, PhysicalMemoryBytes());
  c.service.revalidate_after = c.filter_revalidate_ms
                                   ? std::chrono::milliseconds(*c.filter_revalidate_ms)
                                   : DefaultRevalidate(c.store);
  return c;
}

std::string RedactUrl(std::string_view url) { return internal::RedactUrl(url); }

std::string ConfigToJson(const ServerConfig& c) {
  Json j;
  j["listen"] = c.http.host.find(':') != std::string::npos
                    ? "[" + c.http.host + "]:" + std::to_string(c.http.port)
                    : c.http.host + ":" + std::to_string(c.http.port);
  j["store"] = RedactUrl(c.store);
  j["token"] = c.http.token.empty() ? "" : "***";
  j["sources"] = {{"listen", c.listen_source},
                  {"store", c.store_source},
                  {"token", c.token_source},
                  {"max_filter_bytes", c.max_filter_bytes_source}};
  j["config_file"] = c.config_file;
  j["access_log"] = c.access_log;
  j["access_log_flush_ms"] = c.access_log_flush.count();
  j["log_items"] = c.http.log_items;
  j["public_metrics"] = c.http.public_metrics;
  j["threads"] = c.http.threads;
  j["keep_alive_timeout_s"] = c.http.keep_alive_timeout_s;
  j["keep_alive_max_requests"] = c.http.keep_alive_max_requests;
  j["read_timeout_s"] = c.http.read_timeout_s;
  j["write_timeout_s"] = c.http.write_timeout_s;
  j["header_timeout_s"] = c.http.header_timeout_s;
  j["body_timeout_s"] = c.http.body_timeout_s;
  j["max_connections"] = c.http.max_connections;
  j["max_connections_per_client"] = c.http.max_connections_per_client;
  j["max_body_bytes"] = c.http.max_body_bytes;
  j["body_buffer_bytes"] = c.http.body_buffer_bytes;
  j["max_items"] = c.service.limits.max_items;
  j["max_item_bytes"] = c.service.limits.max_item_bytes;
  j["max_filter_bytes"] = c.service.max_filter_bytes;
  j["filter_revalidate_ms"] = c.service.revalidate_after.count();
  j["filter_cache_size"] = c.service.filter_cache_size;
  j["filter_idle_ms"] = c.service.idle_after.count();
  j["sync_interval_ms"] = c.service.sync_interval.count();
  j["expiry_sweep_ms"] = c.service.expiry_sweep.count();
  j["store_connect_timeout_ms"] = c.service.store_options.connect_timeout.count();
  j["store_command_timeout_ms"] = c.service.store_options.command_timeout.count();
  j["store_idle_timeout_ms"] = c.service.store_options.idle_timeout.count();
  j["store_pool_size"] = c.service.store_options.pool_size;
  j["store_max_retries"] = c.service.store_options.max_retries;
  j["store_batch_items"] = c.service.store_options.batch_items;
  return j.dump(2, ' ', false, Json::error_handler_t::replace);
}

}  // namespace redbloom::server
