#include "redis/redis_url.h"

#include <charconv>
#include <cstdint>

#include "util/percent.h"

namespace redbloom::internal {
namespace {

Status BadUrl(std::string_view why) {
  return Status::InvalidArgument("bad redis URL: " + std::string(why) +
                                 " (expected redis://[user:password@]host[:port][/db][?options])");
}

Result<std::string> DecodeUserInfo(std::string_view s, std::string_view what) {
  Result<std::string> decoded = PercentDecode(s, "the " + std::string(what));
  if (!decoded.ok()) return BadUrl(decoded.status().message());
  return decoded;
}

// A decimal integer in [lo, hi], the whole string.
Result<int64_t> ParseInt(std::string_view text, int64_t lo, int64_t hi, std::string_view what) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < lo || v > hi) {
    return BadUrl(std::string(what) + " '" + std::string(text) + "' is not an integer in [" +
                  std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

Status ApplyOption(std::string_view key, std::string_view value, RedisUrl* url) {
  StoreOptions& o = url->options;
  // Bounds are sanity limits: an hour of timeout, 1024 connections, a million
  // items (~28 MB) per command.
  if (key == "connect_timeout_ms") {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 1, 3'600'000, key));
    o.connect_timeout = std::chrono::milliseconds(v);
  } else if (key == "command_timeout_ms") {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 1, 3'600'000, key));
    o.command_timeout = std::chrono::milliseconds(v);
  } else if (key == "pool_size") {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 1, 1024, key));
    o.pool_size = static_cast<int>(v);
  } else if (key == "max_retries") {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 0, 100, key));
    o.max_retries = static_cast<int>(v);
  } else if (key == "batch_items") {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 1, 1'000'000, key));
    o.batch_items = static_cast<size_t>(v);
  } else if (key == "keys") {
    if (value == "plain") {
      url->keys = KeyMode::kPlain;
    } else if (value == "jdk") {
      url->keys = KeyMode::kJdk;
    } else {
      return BadUrl("keys='" + std::string(value) + "' (expected plain or jdk)");
    }
  } else {
    return BadUrl("unknown option '" + std::string(key) +
                  "' (known: connect_timeout_ms, command_timeout_ms, pool_size, max_retries, "
                  "batch_items, keys)");
  }
  return Status::Ok();
}

Status ValidateOptions(const StoreOptions& o) {
  if (o.connect_timeout.count() < 1 || o.command_timeout.count() < 1) {
    return Status::InvalidArgument("redis timeouts must be at least 1 ms");
  }
  if (o.pool_size < 1) return Status::InvalidArgument("redis pool_size must be at least 1");
  if (o.max_retries < 0) return Status::InvalidArgument("redis max_retries must be >= 0");
  // The URL parser's bound, for options passed in code too: a batch's ops
  // (batch_items * k, k <= 255) are indexed with 32 bits.
  if (o.batch_items < 1 || o.batch_items > 1'000'000) {
    return Status::InvalidArgument("redis batch_items must be between 1 and 1000000");
  }
  return Status::Ok();
}

}  // namespace

Result<RedisUrl> ParseRedisUrl(std::string_view text, const StoreOptions& defaults) {
  constexpr std::string_view kScheme = "redis://";
  if (!text.starts_with(kScheme)) return BadUrl("'" + std::string(text) + "' is not redis://");
  RedisUrl url;
  url.options = defaults;
  std::string_view rest = text.substr(kScheme.size());

  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view path;
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  // The password may itself contain '@' only percent-encoded, so the last '@'
  // ends the credentials.
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = cred.find(':');
    if (colon == std::string_view::npos) {
      return BadUrl("credentials need a password: use user:password@ or :password@");
    }
    REDBLOOM_ASSIGN_OR_RETURN(url.user, DecodeUserInfo(cred.substr(0, colon), "user name"));
    REDBLOOM_ASSIGN_OR_RETURN(std::string password,
                              DecodeUserInfo(cred.substr(colon + 1), "password"));
    if (password.empty()) return BadUrl("the password after ':' is empty");
    url.password = std::move(password);
  }

  std::string_view port_text;
  if (rest.starts_with('[')) {  // [IPv6]
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return BadUrl("unterminated '[' in the host");
    url.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return BadUrl("unexpected text after ']'");
      port_text = after.substr(1);
      if (port_text.empty()) return BadUrl("empty port after ':'");
    }
  } else {
    const size_t colon = rest.find(':');
    url.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      if (port_text.empty()) return BadUrl("empty port after ':'");
    }
  }
  if (url.host.empty()) return BadUrl("the host is missing");
  for (char c : url.host) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == '%' || c == '@') {
      return BadUrl("the host '" + url.host + "' contains a character hosts cannot have");
    }
  }
  if (!port_text.empty()) {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t port, ParseInt(port_text, 1, 65535, "port"));
    url.port = static_cast<int>(port);
  }
  if (!path.empty()) {
    // Redis accepts up to the server's "databases" setting (16 by default);
    // the server itself rejects a db it does not have.
    REDBLOOM_ASSIGN_OR_RETURN(int64_t db, ParseInt(path, 0, 1'000'000, "database number"));
    url.db = static_cast<int>(db);
  }

  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos)
      return BadUrl("option '" + std::string(pair) + "' has no '='");
    REDBLOOM_RETURN_IF_ERROR(ApplyOption(pair.substr(0, eq), pair.substr(eq + 1), &url));
  }
  REDBLOOM_RETURN_IF_ERROR(ValidateOptions(url.options));
  return url;
}

std::string RedisUrl::Redacted() const {
  std::string s = "redis://";
  if (password.has_value()) s += user + ":***@";
  s += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  s += ":" + std::to_string(port) + "/" + std::to_string(db);
  if (keys == KeyMode::kJdk) s += "?keys=jdk";
  return s;
}

}  // namespace redbloom::internal
