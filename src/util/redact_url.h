// Store URLs in messages without their secrets: the one place that knows
// where a URL may hold a password, for the service's and the CLI's messages
// and for the library's own errors about a URL.
#ifndef REDBLOOM_UTIL_REDACT_URL_H_
#define REDBLOOM_UTIL_REDACT_URL_H_

#include <string>
#include <string_view>

namespace redbloom::internal {

// `url` with any password replaced by "***" (redis://user:***@host, and
// options whose name holds "password"). A URL that is malformed because its
// password holds a raw '@', '/', '?' or '#' is still hidden: the last '@'
// ends the credentials, wherever it is.
std::string RedactUrl(std::string_view url);

// `message`, an error about `url`, with every quoted piece ('...') that may
// be part of a password replaced by '***', and a hint appended when one was:
// a parser quotes what it could not read, and a password with a raw '@'
// makes it read a piece of the password as the port or the database.
std::string HideUrlSecrets(std::string message, std::string_view url);

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_REDACT_URL_H_
