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
  Store::Traits traits;     // before `open`, so that a line cannot leave it out
  Result<std::unique_ptr<Store>> (*open)(std::string_view url, const StoreOptions& options);
};

constexpr Store::Traits kInProcess{.local = true};
constexpr Store::Traits kLocalFiles{.local = true, .persistent = true, .syncs = true};
constexpr Store::Traits kServer{.persistent = true};

const StoreScheme kSchemes[] = {
    {"mem:", "mem:", kInProcess, &internal::NewMemoryStore},
    {"file:", "file:DIR", kLocalFiles, &internal::NewFileStore},
    {"redis://", "redis://[user:password@]host[:port][/db][?options]", kServer,
     &internal::NewRedisStore},
    {"rediss://", "rediss://... (TLS)", kServer, &internal::NewRedisStore},
    {"redis+unix://", "redis+unix://[user:password@]/path/to/redis.sock[?db=N&options]", kServer,
     &internal::NewRedisStore},
    {"redis-cluster://", "redis-cluster://[user:password@]host:port[,host:port...][?options]",
     kServer, &internal::NewRedisStore},
    {"rediss-cluster://", "rediss-cluster://... (TLS)", kServer, &internal::NewRedisStore},
    {"redis-sentinel://",
     "redis-sentinel://[user:password@]host:port[,host:port...]/MASTER[/db][?options]", kServer,
     &internal::NewRedisStore},
    {"rediss-sentinel://", "rediss-sentinel://... (TLS)", kServer, &internal::NewRedisStore},
};

// A URL that starts or ends with white space is refused: a file: path
// ending in a space (or the CR of an environment file with Windows line
// ends) was a directory of that name, made silently by the first create
// beside the one meant (an audit).
Status CheckNoSpaceAround(std::string_view url) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  if (url.empty() || (kSpace.find(url.front()) == std::string_view::npos &&
                      kSpace.find(url.back()) == std::string_view::npos)) {
    return Status::Ok();
  }
  std::string shown;
  for (const char c : internal::RedactUrl(url)) {
    shown += c == '\r' ? "\\r" : c == '\n' ? "\\n" : c == '\t' ? "\\t" : std::string(1, c);
  }
  return Status::InvalidArgument("store URL '" + shown +
                                 "' starts or ends with white space (a space, a tab, or the CR of "
                                 "a file with Windows line ends): remove it");
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(std::string_view url, const StoreOptions& options) {
  if (!options.clock) return Status::InvalidArgument("StoreOptions::clock is null");
  REDBLOOM_RETURN_IF_ERROR(CheckNoSpaceAround(url));
  for (const StoreScheme& s : kSchemes) {
    if (url.starts_with(s.prefix)) return s.open(url, options);
  }
  return CheckScheme(url);
}

Status Store::CheckScheme(std::string_view url) {
  REDBLOOM_RETURN_IF_ERROR(CheckNoSpaceAround(url));
  if (TraitsOf(url).has_value()) return Status::Ok();
  std::string forms;
  for (const std::string& form : UrlForms()) forms += (forms.empty() ? "" : ", ") + form;
  return Status::InvalidArgument("unknown store URL '" + internal::RedactUrl(url) + "' (expected " +
                                 forms + ")");
}

std::optional<Store::Traits> Store::TraitsOf(std::string_view url) {
  for (const StoreScheme& s : kSchemes) {
    if (url.starts_with(s.prefix)) return s.traits;
  }
  return std::nullopt;
}

std::vector<std::string> Store::UrlForms() {
  std::vector<std::string> out;
  for (const StoreScheme& s : kSchemes) out.emplace_back(s.form);
  return out;
}

}  // namespace redbloom
