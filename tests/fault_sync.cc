// A fault injector for the CLI tests, loaded with LD_PRELOAD: it fails the
// syncs a failing disk would fail, so that tests can see a sync is made and
// its error reported. Syncs it does not match go to the C library.
//   REDBLOOM_FAULT_FSYNC_DIR=PATH  fsync() of directory PATH fails with EIO
//   REDBLOOM_FAULT_FSYNC_PASS=N    ... after the first N of them pass
//   REDBLOOM_FAULT_MSYNC=PATH      msync() of a mapping of a file whose path
//                                  starts with PATH fails with EIO
//   REDBLOOM_FAULT_MSYNC_PASS=N    ... after the first N of them pass
//   REDBLOOM_FAULT_MSYNC_SIGNAL=S  ... instead of failing, the first of them
//                                  raises signal S and then syncs: a signal
//                                  that comes while a filter is synced
//   REDBLOOM_FAULT_TLS_AFTER=PATH  once file PATH exists, registering a
//                                  thread_local's destructor ends the process,
//                                  as glibc does when it has no memory left to
//                                  record one ("failed to register TLS
//                                  destructor: out of memory")
// Paths are compared as the kernel names them (/proc/self/fd, /proc/self/maps).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>

namespace {

bool FdIsDirectory(int fd, const char* path) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  char link[64];
  char target[4096];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  if (n < 0) return false;
  target[n] = '\0';
  return strcmp(target, path) == 0;
}

// Whether `addr` lies in a mapping of a file whose path starts with `prefix`.
bool MapsFileUnder(const void* addr, const char* prefix) {
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == nullptr) return false;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  char line[4352];
  bool found = false;
  while (!found && fgets(line, sizeof(line), maps) != nullptr) {
    uintptr_t from = 0, to = 0;
    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &from, &to) != 2 || a < from || a >= to) continue;
    const char* path = strchr(line, '/');
    found = path != nullptr && strncmp(path, prefix, strlen(prefix)) == 0;
  }
  fclose(maps);
  return found;
}

// Whether a matching sync fails: once the first N (the variable `pass_env`,
// if set) have passed.
bool Fails(const char* pass_env, int* passed) {
  const char* pass = getenv(pass_env);
  if (pass != nullptr && *passed < atoi(pass)) {
    ++*passed;
    return false;
  }
  return true;
}

}  // namespace

extern "C" int fsync(int fd) {
  static auto real = reinterpret_cast<int (*)(int)>(dlsym(RTLD_NEXT, "fsync"));
  static int passed = 0;  // a CLI run syncs from one thread at a time
  const char* dir = getenv("REDBLOOM_FAULT_FSYNC_DIR");
  if (dir != nullptr && FdIsDirectory(fd, dir) && Fails("REDBLOOM_FAULT_FSYNC_PASS", &passed)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

extern "C" int msync(void* addr, size_t length, int flags) {
  static auto real = reinterpret_cast<int (*)(void*, size_t, int)>(dlsym(RTLD_NEXT, "msync"));
  static int passed = 0;
  const char* prefix = getenv("REDBLOOM_FAULT_MSYNC");
  if (prefix != nullptr && MapsFileUnder(addr, prefix) &&
      Fails("REDBLOOM_FAULT_MSYNC_PASS", &passed)) {
    static bool raised = false;
    const char* signal = getenv("REDBLOOM_FAULT_MSYNC_SIGNAL");
    if (signal == nullptr) {
      errno = EIO;
      return -1;
    }
    if (!raised) {
      raised = true;
      raise(atoi(signal));
    }
  }
  return real(addr, length, flags);
}

// libstdc++ registers a thread_local's destructor here (glibc's), the first
// time a thread uses the variable.
extern "C" int __cxa_thread_atexit_impl(void (*dtor)(void*), void* obj, void* dso) {
  static auto real = reinterpret_cast<int (*)(void (*)(void*), void*, void*)>(
      dlsym(RTLD_NEXT, "__cxa_thread_atexit_impl"));
  const char* after = getenv("REDBLOOM_FAULT_TLS_AFTER");
  if (after != nullptr && access(after, F_OK) == 0) {
    static const char kMessage[] =
        "fault_sync: a thread_local made after REDBLOOM_FAULT_TLS_AFTER: failed to register TLS "
        "destructor: out of memory (injected)\n";
    [[maybe_unused]] const ssize_t w = write(2, kMessage, sizeof(kMessage) - 1);
    abort();
  }
  return real(dtor, obj, dso);
}
