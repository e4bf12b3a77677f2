#include "frontend/create.h"

#include "config_codec.h"
#include "stores.h"

namespace redbloom::frontend {

Result<std::optional<FilterConfig>> ConfigToSize(const FilterOptions& options) {
  Result<FilterConfig> config = MakeConfig(options);
  if (config.ok()) return std::optional<FilterConfig>(*std::move(config));
  if (internal::MakeStoredConfig(options).ok()) return std::optional<FilterConfig>();
  return config.status();
}

Status DroppedAsMade(std::string_view name, int attempts) {
  return internal::DroppedAsMadeStatus(name, attempts);
}

}  // namespace redbloom::frontend
