#include "redis/redis_url.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

#include "util/percent.h"
#include "util/redact_url.h"

namespace redbloom::internal {
namespace {

Status BadUrl(std::string_view why) {
  return Status::InvalidArgument(
      "bad redis URL: " + std::string(why) +
      " (expected redis[s]://[user:password@]host[:port][/db][?options], "
      "redis+unix://[user:password@]/path/to/redis.sock[?db=N&options], "
      "redis[s]-cluster://[user:password@]host:port[,host:port...][?options] or "
      "redis[s]-sentinel://[user:password@]host:port[,host:port...]/MASTER[/db][?options])");
}

// What brackets may hold, in a host and in sni= (RFC 3986).
bool IsIpv6Address(const std::string& text) {
  in6_addr v6{};
  return ::inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}

Result<std::string> DecodeUserInfo(std::string_view s, std::string_view what) {
  Result<std::string> decoded = PercentDecode(s, "the " + std::string(what));
  if (!decoded.ok()) return BadUrl(decoded.status().message());
  return decoded;
}

// "user:password" (the user may be empty), percent-decoded into `url`.
Status ParseCredentials(std::string_view cred, RedisUrl* url) {
  const size_t colon = cred.find(':');
  if (colon == std::string_view::npos) {
    return BadUrl("credentials need a password: use user:password@ or :password@");
  }
  REDBLOOM_ASSIGN_OR_RETURN(url->user, DecodeUserInfo(cred.substr(0, colon), "user name"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string password,
                            DecodeUserInfo(cred.substr(colon + 1), "password"));
  if (password.empty()) return BadUrl("the password after ':' is empty");
  url->password = std::move(password);
  return Status::Ok();
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

Result<bool> ParseFlag(std::string_view value, std::string_view what) {
  if (value == "1" || value == "true" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "no") return false;
  return BadUrl(std::string(what) + "='" + std::string(value) + "' (expected 1 or 0)");
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
  } else if (key == "idle_timeout_ms") {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 0, 86'400'000, key));
    o.idle_timeout = std::chrono::milliseconds(v);
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
  } else if (key == "wait_replicas") {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 0, 64, key));
    url->wait_replicas = static_cast<int>(v);
  } else if (key == "wait_timeout_ms") {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 1, 3'600'000, key));
    url->wait_timeout = std::chrono::milliseconds(v);
  } else if (key == "read_from") {
    if (value == "master") {
      url->read_from = ReadFrom::kMaster;
    } else if (value == "replica") {
      url->read_from = ReadFrom::kReplica;
    } else {
      return BadUrl("read_from='" + std::string(value) + "' (expected master or replica)");
    }
  } else if (key == "tls") {
    REDBLOOM_ASSIGN_OR_RETURN(bool on, ParseFlag(value, key));
    url->tls.enabled = url->tls.enabled || on;
  } else if (key == "insecure") {
    REDBLOOM_ASSIGN_OR_RETURN(url->tls.insecure, ParseFlag(value, key));
  } else if (key == "cacert" || key == "cert" || key == "key" || key == "sni") {
    REDBLOOM_ASSIGN_OR_RETURN(std::string text, PercentDecode(value, key));
    if (text.empty()) return BadUrl(std::string(key) + " is empty");
    // sni=[::1], as the host is written, names the address: "[::1]" went
    // out as a host name and matched no certificate.
    if (key == "sni" && text.starts_with('[')) {
      if (!text.ends_with(']') || !IsIpv6Address(text.substr(1, text.size() - 2))) {
        return BadUrl("sni='" + text + "' is not a name or an IPv6 address in brackets");
      }
      text = text.substr(1, text.size() - 2);
    }
    (key == "cacert" ? url->tls.cacert
     : key == "cert" ? url->tls.cert
     : key == "key"  ? url->tls.key
                     : url->tls.sni) = std::move(text);
  } else if (key == "sentinel_password") {
    REDBLOOM_ASSIGN_OR_RETURN(std::string text, PercentDecode(value, key));
    if (text.empty()) return BadUrl("sentinel_password is empty");
    url->sentinel_password = std::move(text);
  } else if (key == "sentinel_user") {
    REDBLOOM_ASSIGN_OR_RETURN(url->sentinel_user, PercentDecode(value, key));
  } else if (key == "db") {
    if (url->hosts.empty() || url->hosts.front().unix_path.empty()) {
      return BadUrl("db= is for redis+unix:// only: put the database in the path (host:port/db)");
    }
    REDBLOOM_ASSIGN_OR_RETURN(int64_t db, ParseInt(value, 0, 1'000'000, "database number"));
    url->db = static_cast<int>(db);
  } else {
    return BadUrl(
        "unknown option '" + std::string(key) +
        "' (known: connect_timeout_ms, command_timeout_ms, idle_timeout_ms, pool_size, "
        "max_retries, batch_items, keys, wait_replicas, wait_timeout_ms, read_from, tls, cacert, "
        "cert, key, sni, insecure, sentinel_user, sentinel_password, db)");
  }
  return Status::Ok();
}

// "host[:port]" or "[v6]:port".
Result<HostPort> ParseHost(std::string_view rest, int default_port) {
  HostPort hp;
  hp.port = default_port;
  std::string_view port_text;
  if (rest.starts_with('[')) {  // [IPv6]
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return BadUrl("unterminated '[' in the host");
    hp.host = std::string(rest.substr(1, close - 1));
    // Brackets hold an IPv6 address and nothing else (RFC 3986): a port
    // written inside them ("[::1:6379]") is another IPv6 address, which was
    // then tried on port 6379.
    if (!hp.host.empty() && !IsIpv6Address(hp.host)) {
      return BadUrl("'[" + hp.host +
                    "]' is not an IPv6 address in brackets (expected [IPv6]:PORT)");
    }
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return BadUrl("unexpected text after ']'");
      port_text = after.substr(1);
      if (port_text.empty()) return BadUrl("empty port after ':'");
    }
  } else {
    const size_t colon = rest.find(':');
    if (colon != std::string_view::npos && rest.find(':', colon + 1) != std::string_view::npos) {
      return BadUrl("'" + std::string(rest) +
                    "' has an IPv6 host without brackets (expected HOST:PORT or [IPv6]:PORT)");
    }
    hp.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      if (port_text.empty()) return BadUrl("empty port after ':'");
    }
  }
  if (hp.host.empty()) return BadUrl("the host is missing");
  for (char c : hp.host) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == '%' || c == '@' || c == ',') {
      return BadUrl("the host '" + hp.host + "' contains a character hosts cannot have");
    }
  }
  if (!port_text.empty()) {
    REDBLOOM_ASSIGN_OR_RETURN(int64_t port, ParseInt(port_text, kMinPort, kMaxPort, "port"));
    hp.port = static_cast<int>(port);
  }
  return hp;
}

Status ValidateOptions(const StoreOptions& o) {
  if (o.connect_timeout.count() < 1 || o.command_timeout.count() < 1) {
    return Status::InvalidArgument("redis timeouts must be at least 1 ms");
  }
  if (o.pool_size < 1) return Status::InvalidArgument("redis pool_size must be at least 1");
  // The URL parser's bound too: past it, now - idle_timeout could overflow.
  if (o.idle_timeout.count() < 0 || o.idle_timeout.count() > 86'400'000) {
    return Status::InvalidArgument("redis idle_timeout must be between 0 and 86400000 ms");
  }
  if (o.max_retries < 0) return Status::InvalidArgument("redis max_retries must be >= 0");
  // The URL parser's bound, for options passed in code too: a batch's ops
  // (batch_items * k, k <= 255) are indexed with 32 bits.
  if (o.batch_items < 1 || o.batch_items > 1'000'000) {
    return Status::InvalidArgument("redis batch_items must be between 1 and 1000000");
  }
  return Status::Ok();
}

// The URL parsed; its errors may quote pieces of a password.
Result<RedisUrl> ParseUnredacted(std::string_view text, const StoreOptions& defaults) {
  RedisUrl url;
  url.options = defaults;
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos) return BadUrl("'" + std::string(text) + "' has no scheme");
  const std::string_view scheme = text.substr(0, sep);
  const bool unix_socket = scheme == "redis+unix";
  if (scheme == "redis" || scheme == "rediss" || unix_socket) {
    url.mode = RedisMode::kSingle;
  } else if (scheme == "redis-cluster" || scheme == "rediss-cluster") {
    url.mode = RedisMode::kCluster;
  } else if (scheme == "redis-sentinel" || scheme == "rediss-sentinel") {
    url.mode = RedisMode::kSentinel;
  } else {
    return BadUrl("unknown scheme '" + std::string(scheme) + "'");
  }
  url.tls.enabled = scheme.starts_with("rediss");
  std::string_view rest = text.substr(sep + 3);
  // A raw '/', '?' or '#' in the credentials would end them early (below),
  // and an error would then quote a piece of the password as the port.
  // Seen as an authority without '@' whose port is not a number, with an
  // '@' after it ("u:pa/ss@h", "u:pa?ss@h"); a sentinel master name with
  // an '@' ("h:26379/my@master") has a numeric port and is not one.
  if (const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
      authority.size() < rest.size() && authority.find('@') == std::string_view::npos &&
      rest.find('@', authority.size()) != std::string_view::npos && !authority.ends_with(']')) {
    const size_t colon = authority.rfind(':');
    const std::string_view port =
        colon == std::string_view::npos ? std::string_view() : authority.substr(colon + 1);
    if (!port.empty() && port.find_first_not_of("0123456789") != std::string_view::npos) {
      return BadUrl(
          "the user name or password holds a '/', '?' or '#': percent-encode them (%2F, %3F, "
          "%23)");
    }
  }

  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (unix_socket) {
    // redis+unix://[user:password@]/path: an empty authority, or credentials
    // alone, before the absolute path. The '@' that ends the credentials is
    // the one before the path's first '/'.
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) {
      return BadUrl("redis+unix:// needs the socket's absolute path: redis+unix:///run/redis.sock");
    }
    const std::string_view authority = rest.substr(0, slash);
    if (!authority.empty() && !authority.ends_with('@')) {
      return BadUrl(authority.find('@') == std::string_view::npos
                        ? "redis+unix:// takes a socket path, not a host: "
                          "redis+unix:///run/redis.sock (three slashes)"
                        : "the user name or password holds a '/': percent-encode it (%2F)");
    }
    if (!authority.empty()) {
      REDBLOOM_RETURN_IF_ERROR(ParseCredentials(authority.substr(0, authority.size() - 1), &url));
    }
    HostPort hp;
    REDBLOOM_ASSIGN_OR_RETURN(hp.unix_path, DecodeUserInfo(rest.substr(slash), "socket path"));
    // sockaddr_un's sun_path holds 108 bytes with the terminating NUL.
    constexpr size_t kMaxSocketPath = 107;
    if (hp.unix_path.size() > kMaxSocketPath) {
      return BadUrl("the socket path has " + std::to_string(hp.unix_path.size()) +
                    " bytes; a Unix socket's holds at most " + std::to_string(kMaxSocketPath));
    }
    if (hp.unix_path.find('\0') != std::string::npos) {
      return BadUrl("the socket path holds a NUL byte");
    }
    url.hosts.push_back(std::move(hp));
    rest = std::string_view();
  }
  std::string_view path;
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  // The password may itself contain '@' only percent-encoded, so the last '@'
  // ends the credentials.
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    REDBLOOM_RETURN_IF_ERROR(ParseCredentials(rest.substr(0, at), &url));
    rest = rest.substr(at + 1);
  }

  const bool many = url.mode != RedisMode::kSingle;
  while (!unix_socket) {
    const size_t comma = rest.find(',');
    if (comma != std::string_view::npos && !many) {
      return BadUrl(
          "redis:// takes one host; use redis-cluster:// or redis-sentinel:// for several");
    }
    // Sentinels listen on 26379 unless told otherwise; servers on 6379.
    REDBLOOM_ASSIGN_OR_RETURN(
        HostPort hp,
        ParseHost(rest.substr(0, comma), url.mode == RedisMode::kSentinel ? 26379 : 6379));
    url.hosts.push_back(std::move(hp));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (url.mode == RedisMode::kSentinel) {
    const size_t slash = path.find('/');
    REDBLOOM_ASSIGN_OR_RETURN(url.master_name, PercentDecode(path.substr(0, slash), "master name"));
    if (url.master_name.empty()) {
      return BadUrl("redis-sentinel:// needs the master's name: redis-sentinel://host:port/MASTER");
    }
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  if (!path.empty()) {
    if (url.mode == RedisMode::kCluster) {
      return BadUrl("a Redis Cluster has database 0 only; drop the '/" + std::string(path) + "'");
    }
    // Redis accepts up to the server's "databases" setting (16 by default);
    // the server itself rejects a db it does not have.
    REDBLOOM_ASSIGN_OR_RETURN(int64_t db, ParseInt(path, 0, 1'000'000, "database number"));
    url.db = static_cast<int>(db);
  }

  std::vector<std::string_view> given;  // an option given twice is a mistake, not "the last wins"
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos)
      return BadUrl("option '" + std::string(pair) + "' has no '='");
    const std::string_view key = pair.substr(0, eq);
    if (std::find(given.begin(), given.end(), key) != given.end()) {
      return BadUrl("option '" + std::string(key) + "' is given twice");
    }
    given.push_back(key);
    REDBLOOM_RETURN_IF_ERROR(ApplyOption(key, pair.substr(eq + 1), &url));
  }
  if (unix_socket && url.tls.enabled) {
    return BadUrl("Redis serves TLS on TCP ports only, not on its Unix socket: drop tls=1");
  }
  if (url.mode == RedisMode::kSingle && url.read_from == ReadFrom::kReplica) {
    return BadUrl(
        "read_from=replica needs replicas to find: use redis-sentinel:// or redis-cluster:// "
        "(redis:// names one server, which serves every read)");
  }
  if (!url.tls.enabled && (url.tls.insecure || !url.tls.cacert.empty() || !url.tls.cert.empty() ||
                           !url.tls.key.empty() || !url.tls.sni.empty())) {
    return BadUrl("cacert, cert, key, sni and insecure need TLS: use rediss:// (or tls=1)");
  }
  if (url.tls.cert.empty() != url.tls.key.empty()) {
    return BadUrl("a client certificate needs both cert= and key=");
  }
  if (url.mode != RedisMode::kSentinel &&
      (url.sentinel_password.has_value() || !url.sentinel_user.empty())) {
    return BadUrl("sentinel_user and sentinel_password apply to redis-sentinel:// only");
  }
  REDBLOOM_RETURN_IF_ERROR(ValidateOptions(url.options));
  return url;
}

}  // namespace

Result<RedisUrl> ParseRedisUrl(std::string_view text, const StoreOptions& defaults) {
  Result<RedisUrl> url = ParseUnredacted(text, defaults);
  if (url.ok()) return url;
  // The parser quotes what it could not read, which a password with a raw
  // '@' or '&' makes a piece of the password.
  return Status(url.status().code(), HideUrlSecrets(url.status().message(), text));
}

std::string HostPort::Display() const {
  if (!unix_path.empty()) return unix_path;
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::string RedisUrl::Redacted() const {
  if (!hosts.empty() && !hosts.front().unix_path.empty()) {
    // The path percent-encoded as it was parsed, so the result parses back.
    std::string s = "redis+unix://";
    if (password.has_value()) s += PercentEncode(user) + ":***@";
    s += PercentEncode(hosts.front().unix_path, "/");
    std::string query;
    auto add = [&](const std::string& kv) { query += (query.empty() ? "?" : "&") + kv; };
    if (db != 0) add("db=" + std::to_string(db));
    if (keys == KeyMode::kJdk) add("keys=jdk");
    if (wait_replicas > 0) add("wait_replicas=" + std::to_string(wait_replicas));
    return s + query;
  }
  std::string s = mode == RedisMode::kCluster    ? "redis-cluster"
                  : mode == RedisMode::kSentinel ? "redis-sentinel"
                                                 : "redis";
  if (tls.enabled) s.insert(5, "s");
  s += "://";
  if (password.has_value()) s += user + ":***@";
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i > 0) s += ",";
    s += hosts[i].Display();
  }
  if (mode == RedisMode::kSentinel) s += "/" + master_name;
  if (mode != RedisMode::kCluster) s += "/" + std::to_string(db);
  std::string query;
  auto add = [&](const std::string& kv) { query += (query.empty() ? "?" : "&") + kv; };
  if (keys == KeyMode::kJdk) add("keys=jdk");
  if (wait_replicas > 0) add("wait_replicas=" + std::to_string(wait_replicas));
  if (read_from == ReadFrom::kReplica) add("read_from=replica");
  if (tls.insecure) add("insecure=1");
  if (sentinel_password.has_value()) add("sentinel_password=***");
  return s + query;
}

}  // namespace redbloom::internal
