// Parsing of redis:// store URLs. Internal.
//
//   redis://[user:password@]host[:port][/db][?option=value&...]
//
// user and password are percent-decoded ("p%40ss" is "p@ss"); ":password@"
// alone authenticates as the default user (AUTH password), "user:password@"
// as an ACL user (AUTH user password). Options override StoreOptions:
//   connect_timeout_ms, command_timeout_ms, pool_size, max_retries,
//   batch_items, keys=plain|jdk (how filter names become key bytes, see
//   redis_keys.h).
#ifndef REDBLOOM_SRC_REDIS_REDIS_URL_H_
#define REDBLOOM_SRC_REDIS_REDIS_URL_H_

#include <optional>
#include <string>
#include <string_view>

#include "redbloom/status.h"
#include "redbloom/store.h"
#include "redis/redis_keys.h"

namespace redbloom::internal {

struct RedisUrl {
  std::string host;
  int port = 6379;
  std::string user;                     // empty: the default user
  std::optional<std::string> password;  // nullopt: no AUTH
  int db = 0;
  KeyMode keys = KeyMode::kPlain;
  StoreOptions options;  // the caller's options with the URL's applied

  // The URL in canonical form, with the password shown as "***".
  std::string Redacted() const;
};

// kInvalidArgument, naming the problem, for anything malformed or out of range.
Result<RedisUrl> ParseRedisUrl(std::string_view url, const StoreOptions& defaults);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_URL_H_
