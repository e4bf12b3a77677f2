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

// A thread running `f`, or kResourceExhausted "cannot start WHAT: why".
template <typename F>
Result<std::thread> StartThread(std::string_view what, F&& f) {
  try {
    return std::thread(std::forward<F>(f));
  } catch (const std::system_error& e) {
    return Status::ResourceExhausted("cannot start " + std::string(what) + ": " + e.what());
  }
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_START_THREAD_H_
