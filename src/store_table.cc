// The store table: one line per URL scheme, each store in its own folder
// (src/mem, src/file, src/redis). Adding a store is its folder plus its line
// here.
#include <string>

#include "redbloom/store.h"
#include "stores.h"
#include "util/redact_url.h"

namespace redbloom {

namespace {

// The store table: one line per URL scheme, each store in its own folder.
struct StoreScheme {
  std::string_view prefix;  // what a URL starts with
  std::string_view form;    // its syntax, for help texts
  Result<std::unique_ptr<Store>> (*open)(std::string_view url, const StoreOptions& options);
};

const StoreScheme kSchemes[] = {
    {"mem:", "mem:", &internal::NewMemoryStore},
    {"file:", "file:DIR", &internal::NewFileStore},
    {"redis://", "redis://[user:password@]host[:port][/db][?options]", &internal::NewRedisStore},
    {"rediss://", "rediss://... (TLS)", &internal::NewRedisStore},
    {"redis+unix://", "redis+unix://[user:password@]/path/to/redis.sock[?db=N&options]",
     &internal::NewRedisStore},
    {"redis-cluster://", "redis-cluster://[user:password@]host:port[,host:port...][?options]",
     &internal::NewRedisStore},
    {"rediss-cluster://", "rediss-cluster://... (TLS)", &internal::NewRedisStore},
    {"redis-sentinel://",
     "redis-sentinel://[user:password@]host:port[,host:port...]/MASTER[/db][?options]",
     &internal::NewRedisStore},
    {"rediss-sentinel://", "rediss-sentinel://... (TLS)", &internal::NewRedisStore},
};

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(std::string_view url, const StoreOptions& options) {
  if (!options.clock) return Status::InvalidArgument("StoreOptions::clock is null");
  for (const StoreScheme& s : kSchemes) {
    if (url.starts_with(s.prefix)) return s.open(url, options);
  }
  std::string forms;
  for (const StoreScheme& s : kSchemes) {
    if (!forms.empty()) forms += ", ";
    forms += s.form;
  }
  return Status::InvalidArgument("unknown store URL '" + internal::RedactUrl(url) + "' (expected " +
                                 forms + ")");
}

std::vector<std::string> Store::UrlForms() {
  std::vector<std::string> out;
  for (const StoreScheme& s : kSchemes) out.emplace_back(s.form);
  return out;
}

}  // namespace redbloom
