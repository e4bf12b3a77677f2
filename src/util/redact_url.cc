#include "util/redact_url.h"

#include <cctype>
#include <utility>
#include <vector>

namespace redbloom::internal {
namespace {

// Where the credentials may start: after "://", or after the scheme's ':'
// when a slash is missing ("redis:/:pw@host").
size_t CredentialsStart(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) return scheme + 3;
  // Only a Redis URL carries credentials: a file: path may hold an '@'.
  const bool redis = url.size() >= 5 && std::tolower(static_cast<unsigned char>(url[0])) == 'r' &&
                     std::tolower(static_cast<unsigned char>(url[1])) == 'e' &&
                     std::tolower(static_cast<unsigned char>(url[2])) == 'd' &&
                     std::tolower(static_cast<unsigned char>(url[3])) == 'i' &&
                     std::tolower(static_cast<unsigned char>(url[4])) == 's';
  if (!redis) return std::string_view::npos;
  const size_t colon = url.find(':');
  if (colon == std::string_view::npos) return std::string_view::npos;
  size_t start = colon + 1;
  while (start < url.size() && url[start] == '/') ++start;
  return start;
}

// [begin, end) of the password between CredentialsStart and the last '@'
// (the user name before a ':' is shown), or {npos, npos}.
std::pair<size_t, size_t> PasswordRange(std::string_view url) {
  const size_t start = CredentialsStart(url);
  const size_t at = url.rfind('@');
  if (start == std::string_view::npos || at == std::string_view::npos || at < start) {
    return {std::string_view::npos, std::string_view::npos};
  }
  const size_t colon = url.find(':', start);
  return {colon != std::string_view::npos && colon < at ? colon + 1 : start, at};
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  std::string out;
  size_t rest = 0;
  if (const auto [begin, end] = PasswordRange(url); begin != std::string_view::npos) {
    out.append(url.substr(0, begin)).append("***");
    rest = end;
  }
  const size_t q = url.find('?', rest);
  out.append(url.substr(rest, q == std::string_view::npos ? std::string_view::npos : q - rest));
  if (q == std::string_view::npos) return out;
  // Options that carry a secret (sentinel_password=...) are hidden too.
  std::string_view query = url.substr(q + 1);
  out.push_back('?');
  for (bool first = true;; first = false) {
    const size_t amp = query.find('&');
    const std::string_view option = query.substr(0, amp);
    const size_t eq = option.find('=');
    if (!first) out.push_back('&');
    if (eq != std::string_view::npos &&
        option.substr(0, eq).find("password") != std::string_view::npos) {
      out.append(option.substr(0, eq + 1)).append("***");
    } else {
      out.append(option);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

constexpr std::string_view kHint =
    " (the parts of the URL that may hold its password are not shown: percent-encode '@', ':', "
    "'/', '?', '#', '&' and quotes in a user name or password, as %40 %3A %2F %3F %23 %26 %27)";

std::string HideUrlSecrets(std::string message, std::string_view url) {
  // Where a secret may be: the password, and an option's value from its '='
  // to the end of the URL (a raw '&' in it starts what reads as an option).
  std::vector<std::pair<size_t, size_t>> secret;
  if (const auto range = PasswordRange(url); range.first != std::string_view::npos) {
    secret.push_back(range);
  }
  for (size_t at = url.find("password="); at != std::string_view::npos;
       at = url.find("password=", at + 1)) {
    secret.emplace_back(at + 9, url.size());
  }
  if (secret.empty()) return message;
  // A quote inside a secret would pair the message's quotes wrongly: then
  // everything from the first quote to the last is hidden.
  for (const auto& [begin, end] : secret) {
    if (url.substr(begin, end - begin).find('\'') == std::string_view::npos) continue;
    const size_t first = message.find('\'');
    const size_t last = message.rfind('\'');
    if (first == std::string::npos) return message;
    return message.substr(0, first) + "'***'" + message.substr(last + 1) + std::string(kHint);
  }
  // A quoted piece is shown only where the URL has it outside every secret.
  const auto shown_elsewhere = [&](std::string_view piece) {
    for (size_t at = url.find(piece); at != std::string_view::npos; at = url.find(piece, at + 1)) {
      bool inside = false;
      for (const auto& [begin, end] : secret) inside |= at < end && at + piece.size() > begin;
      if (!inside) return true;
    }
    return url.find(piece) == std::string_view::npos;  // not the URL's text
  };
  std::string out;
  bool hid = false;
  size_t pos = 0;
  while (true) {
    const size_t open = message.find('\'', pos);
    const size_t close = open == std::string::npos ? open : message.find('\'', open + 1);
    if (close == std::string::npos) break;
    const std::string_view piece = std::string_view(message).substr(open + 1, close - open - 1);
    out.append(message, pos, open + 1 - pos);
    if (!piece.empty() && !shown_elsewhere(piece)) {
      out.append("***");
      hid = true;
    } else {
      out.append(piece);
    }
    out.push_back('\'');
    pos = close + 1;
  }
  out.append(message, pos);
  if (hid) out += kHint;
  return out;
}

}  // namespace redbloom::internal
