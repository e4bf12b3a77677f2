// The text of an errno value, for error messages: the one place that calls
// strerror_r. POSIX does not make strerror() thread-safe (glibc documents it
// as MT-Unsafe), and the library's stores, the service's threads and the CLI
// build messages from errno concurrently.
#ifndef REDBLOOM_UTIL_ERRNO_TEXT_H_
#define REDBLOOM_UTIL_ERRNO_TEXT_H_

#include <errno.h>
#include <string.h>

#include <string>

namespace redbloom::internal {

namespace errno_text_internal {
// strerror_r comes in two forms: GNU's returns the message (in the buffer or
// not), XSI's an error number with the message in the buffer.
inline const char* Message(const char* gnu, const char*) { return gnu; }
inline const char* Message(int xsi, const char* buffer) {
  return xsi == 0 ? buffer : "unknown error";
}
}  // namespace errno_text_internal

inline std::string ErrnoText(int err) {
  char buffer[128] = "";
  return errno_text_internal::Message(::strerror_r(err, buffer, sizeof(buffer)), buffer);
}

// Whether a failed write or allocation of file space (`err`) means there is
// no room for it: a full disk (ENOSPC), a quota (EDQUOT), or a file past the
// process's file-size limit (EFBIG: `ulimit -f`, a container's fsize) or
// the file system's largest file. None passes with a retry: the stores and
// the CLI answer them kResourceExhausted, not a retryable kUnavailable.
inline bool IsNoRoom(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_ERRNO_TEXT_H_
