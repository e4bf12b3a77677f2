// Descriptors the library opens are kept off 0, 1 and 2. A program started
// with stdin, stdout or stderr closed (`cmd >&-`, a daemon that closed them)
// would otherwise get a filter file or a Redis socket there, and its own
// output would be written into the filter, or into the Redis connection.
// Internal.
#ifndef REDBLOOM_SRC_UTIL_FD_ABOVE_STDIO_H_
#define REDBLOOM_SRC_UTIL_FD_ABOVE_STDIO_H_

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace redbloom::internal {

// `fd` itself if it is not 0, 1 or 2 (or is -1); else a close-on-exec
// duplicate at 3 or above, with `fd` closed (-1, errno set, if none).
inline int AboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int err = errno;
  ::close(fd);
  errno = err;
  return moved;
}

// For a program's main, first thing: opens /dev/null on whichever of 0, 1
// and 2 the caller left closed, so that no file or socket opened later (by
// this library or any other) lands there. With `output_fails`, 1 and 2 are
// opened read-only, so that output to them fails as it would have (EBADF)
// rather than vanish: the CLI's answers (dedup's new lines, an export to
// stdout) are its result. Else output there is discarded, as to /dev/null.
// `*stdin_closed`, if given, says whether 0 was closed: a program that reads
// stdin can then refuse to, where /dev/null would read as empty input.
// False if one could not be opened.
inline bool OpenClosedStdio(bool output_fails = false, bool* stdin_closed = nullptr) {
  if (stdin_closed != nullptr) *stdin_closed = false;
  for (int fd = 0; fd < 3; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    if (fd == 0 && stdin_closed != nullptr) *stdin_closed = true;
    const int null = ::open("/dev/null", fd == 0 || output_fails ? O_RDONLY : O_WRONLY);
    if (null < 0) return false;
    if (null != fd) {
      if (::dup2(null, fd) < 0) return false;
      ::close(null);
    }
  }
  return true;
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_UTIL_FD_ABOVE_STDIO_H_
