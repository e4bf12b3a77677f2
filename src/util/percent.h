// Percent-encoding (RFC 3986), the one implementation for every place that
// needs it: the user and password of redis:// URLs, the HTTP service's path
// segments and Location headers, and the tests' HTTP client.
#ifndef REDBLOOM_UTIL_PERCENT_H_
#define REDBLOOM_UTIL_PERCENT_H_

#include <string>
#include <string_view>

#include "redbloom/status.h"

namespace redbloom::internal {

// Decodes %XX escapes (hex digits of either case). Every other byte is kept
// as it is, '+' included: it is a plus in a path or a URL's user info, not a
// form body's space. A truncated or non-hex escape is kInvalidArgument naming
// `what` ("the path", "the password"); the message never quotes the input, so
// a password cannot leak through it.
Result<std::string> PercentDecode(std::string_view s, std::string_view what);

// Encodes every byte outside RFC 3986's unreserved set [A-Za-z0-9-._~] and
// `also_keep` as %XX (upper-case hex).
std::string PercentEncode(std::string_view s, std::string_view also_keep = "");

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_PERCENT_H_
