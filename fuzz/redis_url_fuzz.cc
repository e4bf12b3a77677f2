// Store URLs for Redis: parsed or refused with a message; a parsed one has a
// host and a port in range.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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
    if (h.host.empty() || h.port < 1 || h.port > 65535) std::abort();
  }
  return 0;
}
