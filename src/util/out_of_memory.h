// The error for a call that could not allocate what it needs (a filter's
// bits past what the process may allocate), said alike by the library's
// calls that hold a whole filter and by the CLI's last resort.
#ifndef REDBLOOM_UTIL_OUT_OF_MEMORY_H_
#define REDBLOOM_UTIL_OUT_OF_MEMORY_H_

#include <string>
#include <string_view>

#include "redbloom/status.h"

namespace redbloom::internal {

// "out of memory: <what> (ulimit -v, a cgroup's memory.max, or the
// machine's memory)", kResourceExhausted.
inline Status OutOfMemory(std::string_view what) {
  return Status::ResourceExhausted("out of memory: " + std::string(what) +
                                   " (ulimit -v, a cgroup's memory.max, or the machine's memory)");
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_OUT_OF_MEMORY_H_
