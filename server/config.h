// redbloomd configuration: command-line flags, environment, a JSON config
// file and defaults, in that order of precedence (documented in
// docs/http-api.md, "Running").
#ifndef REDBLOOM_SERVER_CONFIG_H_
#define REDBLOOM_SERVER_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "http_server.h"
#include "redbloom/status.h"
#include "service.h"

namespace redbloom::server {

struct ServerConfig {
  std::string listen = "127.0.0.1:8080";
  std::string store;  // resolved; never empty after ResolveConfig
  std::string access_log = "-";
  std::chrono::milliseconds access_log_flush{100};
  HttpOptions http;                             // host/port/token filled from listen/token
  ServiceOptions service;                       // store_url filled from store
  std::optional<int64_t> filter_revalidate_ms;  // unset: depends on the store (see config.cc)
  std::optional<uint64_t> max_filter_bytes;     // unset: depends on the store (see config.cc)
  std::string config_file;                      // "" if none was read
  // Where each of listen/store/token came from: "flag", "env", "config", "default".
  std::string listen_source = "default";
  std::string store_source = "default";
  std::string token_source = "default";
  std::string max_filter_bytes_source = "default";
};

// Values given on the command line (unset when absent).
struct Flags {
  std::optional<std::string> listen;
  std::optional<std::string> store;
  std::optional<std::string> token;
  std::optional<std::string> config;
  std::optional<std::string> max_filter_bytes;  // a byte size, see ParseByteSize
};

// Largest config file read; it holds a few dozen settings.
inline constexpr size_t kMaxConfigFileBytes = 64 * 1024;

// The token the packaged config file (/etc/redbloom/redbloomd.json) ships
// with. It is public, so redbloomd refuses to listen beyond loopback while it
// is in effect, from whichever source it came.
inline constexpr std::string_view kPlaceholderToken = "CHANGE-ME";

// True for addresses only this machine can reach: 127.0.0.0/8, ::1,
// ::ffff:127.0.0.0/104 and "localhost". Any other name counts as beyond
// loopback, whatever it resolves to.
bool IsLoopbackHost(std::string_view host);

// Splits "HOST:PORT" or "[IPv6]:PORT"; port 0 asks for any free port.
Status ParseListen(std::string_view listen, std::string* host, int* port);

// A byte count: digits with an optional binary suffix K, M, G, T (or KiB,
// MiB, GiB, TiB; any case): "1073741824", "1GiB", "512m".
Result<uint64_t> ParseByteSize(std::string_view text);

// The default max_filter_bytes for a store: a quarter of physical memory for
// mem: and file: stores, whose filters are mapped into this process; 0 (no
// limit) for Redis, whose server refuses a filter over its maxmemory at
// create. `physical_bytes` is injectable for tests.
uint64_t DefaultMaxFilterBytes(std::string_view store_url, uint64_t physical_bytes);
// The memory this process may use: the machine's (sysconf), or less where
// its cgroup (memory.max) or RLIMIT_AS says so; 0 if unknown.
uint64_t PhysicalMemoryBytes();

// Applies a JSON config file's settings to `config` (kInvalidArgument for an
// unknown key, a wrong type or a value out of range).
Status ApplyConfigJson(std::string_view json, ServerConfig* config);

// Builds the configuration: flag > environment (REDBLOOMD_LISTEN,
// REDBLOOM_STORE, REDBLOOMD_TOKEN) > config file > default. `getenv` is
// injectable for tests. kInvalidArgument when the token is still
// kPlaceholderToken and the address is beyond loopback.
Result<ServerConfig> ResolveConfig(const Flags& flags,
                                   const std::function<const char*(const char*)>& getenv);

// `url` with any password replaced by "***" (redis://user:***@host).
std::string RedactUrl(std::string_view url);

// The effective configuration as JSON, with the token and any store password
// replaced by "***".
std::string ConfigToJson(const ServerConfig& config);

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_CONFIG_H_
