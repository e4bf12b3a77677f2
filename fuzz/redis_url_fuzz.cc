// Store URLs for Redis: parsed or refused with a message; a parsed one has a
// host and a port in range, or (redis+unix://) an absolute socket path the
// kernel takes, which its redacted form names again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "redbloom/store.h"
#include "redis/redis_url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  auto parsed = redbloom::internal::ParseRedisUrl(url, redbloom::StoreOptions{});
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) std::abort();
    return 0;
  }
  if (parsed->hosts.empty()) std::abort();
  for (const auto& h : parsed->hosts) {
    if (!h.unix_path.empty()) {
      if (h.unix_path.front() != '/' || h.unix_path.size() > 107 ||
          h.unix_path.find('\0') != std::string::npos || parsed->hosts.size() != 1 ||
          parsed->tls.enabled) {
        std::abort();
      }
      auto again = redbloom::internal::ParseRedisUrl(parsed->Redacted(), redbloom::StoreOptions{});
      if (!again.ok() || again->hosts.front().unix_path != h.unix_path || again->db != parsed->db) {
        std::abort();
      }
      continue;
    }
    if (h.host.empty() || h.port < 1 || h.port > 65535) std::abort();
  }
  return 0;
}
