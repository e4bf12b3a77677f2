// The access log: one line per request, to stderr or a file.
//
// Lines are buffered and written by a background thread every
// `flush_interval` (or as soon as 64 KiB are waiting), because on a busy
// service a write(2) per request is a measurable share of a small request's
// cost. A crash (not SIGTERM, which flushes) can lose the last interval's
// lines; a flush_interval of 0 writes every line at once. Lines a write
// fails for (a full disk) are dropped rather than fail requests: counted in
// Metrics, and said once per run of failures in the service log.
#ifndef REDBLOOM_SERVER_ACCESS_LOG_H_
#define REDBLOOM_SERVER_ACCESS_LOG_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "metrics.h"
#include "redbloom/status.h"

namespace redbloom::server {

class AccessLog {
 public:
  AccessLog() = default;
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;
  ~AccessLog();  // flushes

  // "-" is stderr, "off" disables the log, anything else is a file opened
  // for appending (created 0640). Starts the flusher thread. `metrics`
  // (optional) counts the lines lost to failed writes.
  Status Open(const std::string& target, std::chrono::milliseconds flush_interval,
              Metrics* metrics = nullptr);
  // Flushes, then reopens the file (after logrotate moved it); a no-op for
  // stderr and off. On failure the old file stays in use.
  Status Reopen();
  // Whether Open opened a log. Read on every request without the mutex, so
  // it is its own field: fd_ changes under the mutex when Reopen runs.
  bool enabled() const { return enabled_; }
  // Appends one line (which must end in '\n'). Lines never interleave.
  void Write(std::string_view line);
  void Flush();

 private:
  // Writes the buffer; returns a note for the service log when writing
  // starts or stops failing, which the caller prints (Say) after releasing
  // mu_, so a blocked stderr never holds the request threads' Write.
  std::string FlushLocked();
  static void Say(const std::string& note);

  static constexpr size_t kFlushBytes = 64 * 1024;

  std::mutex mu_;
  std::condition_variable cv_;
  std::string path_;
  std::string buffer_;    // guarded by mu_
  int fd_ = -1;           // guarded by mu_
  bool enabled_ = false;  // set by Open, before any request; never changed after
  bool owned_ = false;
  bool stop_ = false;     // guarded by mu_
  bool failing_ = false;  // the last write failed (said once); mu_
  Metrics* metrics_ = nullptr;
  std::chrono::milliseconds flush_interval_{0};
  std::thread flusher_;
};

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_ACCESS_LOG_H_
