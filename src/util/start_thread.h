// Starting a thread without unwinding: std::thread throws std::system_error
// (EAGAIN) when a thread or memory limit is reached, and a caller that lets
// it out either terminates (a joinable thread destroyed on the way) or
// reports a bare "Resource temporarily unavailable" that names nothing.
#ifndef REDBLOOM_UTIL_START_THREAD_H_
#define REDBLOOM_UTIL_START_THREAD_H_

#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "redbloom/status.h"

namespace redbloom::internal {

// Why a thread could not start, from std::thread's error: for EAGAIN with
// the limits that give it, as "Resource temporarily unavailable" alone sent
// an operator to `ulimit -u` when the address space (`ulimit -v`, against
// which each thread reserves its stack) was the one reached (an audit).
inline std::string ThreadStartError(const std::system_error& e) {
  std::string why = e.what();
  if (e.code() == std::errc::resource_unavailable_try_again) {
    why +=
        " (a limit on threads, ulimit -u or a cgroup's pids.max, or on address space, "
        "ulimit -v, against which each thread reserves its stack, ulimit -s)";
  }
  return why;
}

// A thread running `f`, or kResourceExhausted "cannot start WHAT: why".
template <typename F>
Result<std::thread> StartThread(std::string_view what, F&& f) {
  try {
    return std::thread(std::forward<F>(f));
  } catch (const std::system_error& e) {
    return Status::ResourceExhausted("cannot start " + std::string(what) + ": " +
                                     ThreadStartError(e));
  }
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_START_THREAD_H_
