// Placeholder until the Redis store lands (issue #3).
#include "stores.h"

namespace redbloom::internal {

Result<std::unique_ptr<Store>> NewRedisStore(std::string_view url, const StoreOptions&) {
  return Status::Unimplemented("redis stores are not built yet: " + std::string(url));
}

}  // namespace redbloom::internal
