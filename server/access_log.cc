#include "access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/errno_text.h"
#include "util/start_thread.h"

namespace redbloom::server {

AccessLog::~AccessLog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  std::unique_lock lock(mu_);
  const std::string note = FlushLocked();
  if (owned_ && fd_ >= 0) ::close(fd_);
  lock.unlock();
  Say(note);
}

Status AccessLog::Open(const std::string& target, std::chrono::milliseconds flush_interval,
                       Metrics* metrics) {
  std::lock_guard lock(mu_);
  if (fd_ >= 0) return Status::Internal("access log opened twice");
  flush_interval_ = flush_interval;
  metrics_ = metrics;
  if (target == "off") return Status::Ok();
  if (target == "-" || target.empty()) {
    fd_ = STDERR_FILENO;
  } else {
    const int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
      return Status::Unavailable("cannot open access log " + target + ": " +
                                 internal::ErrnoText(errno));
    }
    fd_ = fd;
    owned_ = true;
    path_ = target;
  }
  if (flush_interval_.count() > 0) {
    Result<std::thread> flusher = internal::StartThread("the access log's flush thread", [this] {
      std::unique_lock lk(mu_);
      while (!stop_) {
        cv_.wait_for(lk, flush_interval_, [this] { return stop_; });
        const std::string note = FlushLocked();
        if (!note.empty()) {
          lk.unlock();
          Say(note);
          lk.lock();
        }
      }
    });
    if (!flusher.ok()) {
      // The log stays closed rather than buffering lines nothing would flush.
      if (owned_) ::close(fd_);
      fd_ = -1;
      owned_ = false;
      path_.clear();
      return flusher.status();
    }
    flusher_ = std::move(flusher).value();
  }
  enabled_ = true;
  return Status::Ok();
}

Status AccessLog::Reopen() {
  std::unique_lock lock(mu_);
  if (!owned_) return Status::Ok();
  // The old file gets every line written before the rotation.
  if (const std::string note = FlushLocked(); !note.empty()) {
    lock.unlock();
    Say(note);
    lock.lock();
  }
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    return Status::Unavailable("cannot reopen access log " + path_ + ": " +
                               internal::ErrnoText(errno));
  }
  ::close(fd_);
  fd_ = fd;
  return Status::Ok();
}

void AccessLog::Write(std::string_view line) {
  std::string note;
  {
    std::lock_guard lock(mu_);
    if (fd_ < 0) return;
    buffer_.append(line);
    if (flush_interval_.count() == 0 || buffer_.size() >= kFlushBytes) note = FlushLocked();
  }
  Say(note);
}

void AccessLog::Flush() {
  std::string note;
  {
    std::lock_guard lock(mu_);
    note = FlushLocked();
  }
  Say(note);
}

void AccessLog::Say(const std::string& note) {
  if (note.empty()) return;
  [[maybe_unused]] const size_t n = std::fwrite(note.data(), 1, note.size(), stderr);
}

std::string AccessLog::FlushLocked() {
  size_t done = 0;
  std::string failure;
  while (fd_ >= 0 && done < buffer_.size()) {
    const ssize_t w = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      failure = w < 0 ? internal::ErrnoText(errno) : "nothing written";
      break;
    }
    done += static_cast<size_t>(w);
  }
  const std::string shown = path_.empty() ? "(stderr)" : path_;
  std::string note;
  if (!failure.empty()) {
    // A full disk must not fail requests: the lines are dropped, counted,
    // and said once per run of failures (stderr is the service log).
    const auto lost = static_cast<uint64_t>(
        std::count(buffer_.begin() + static_cast<ptrdiff_t>(done), buffer_.end(), '\n'));
    if (metrics_ != nullptr) metrics_->AccessLogLinesLost(lost);
    if (!failing_) {
      note = "redbloomd: cannot write the access log " + shown + ": " + failure +
             "; its lines are dropped until a write succeeds "
             "(redbloomd_access_log_lines_lost_total counts them)\n";
    }
    failing_ = true;
  } else if (failing_ && done > 0) {
    failing_ = false;
    note = "redbloomd: the access log " + shown + " is written again\n";
  }
  buffer_.clear();
  return note;
}

}  // namespace redbloom::server
