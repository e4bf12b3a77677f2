// Syncing a directory, so that the entries linked, renamed or unlinked in it
// survive a power loss. Internal.
#ifndef REDBLOOM_SRC_UTIL_SYNC_DIR_H_
#define REDBLOOM_SRC_UTIL_SYNC_DIR_H_

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "util/fd_above_stdio.h"

namespace redbloom::internal {

// Makes the directory's entries durable (a file linked, renamed or
// unlinked in it). The error, if any, as errno; 0 on success, and on file
// systems that cannot sync a directory (EINVAL, ENOTSUP: some network and
// FUSE ones), where there is nothing more to do.
inline int SyncDirErrno(const std::string& dir) {
  const int fd = AboveStdio(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd < 0) return errno;
  int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  if (err == EINVAL || err == ENOTSUP) err = 0;
  return err;
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_UTIL_SYNC_DIR_H_
