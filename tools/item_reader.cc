#include "item_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "util/errno_text.h"

namespace redbloom::cli {

// The descriptor a path names by number (/dev/stdout, /dev/stderr,
// /dev/fd/N, /proc/self/fd/N), or -1. Such a path is the descriptor the
// shell gave us: opening it again would open its file anew, truncated and at
// offset 0 (`>> log` would lose the log), and renaming over its target would
// replace that file.
int NamedDescriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!path.starts_with(prefix)) continue;
    const std::string digits = path.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return -1;
    }
    return std::stoi(digits);
  }
  return -1;
}

Status CheckStdinOpen(const std::string& path) {
  if (!g_stdin_closed) return Status::Ok();
  if (path != "-" && path != "/dev/stdin" && NamedDescriptor(path) != 0) return Status::Ok();
  return Status::InvalidArgument(
      (path == "-" ? std::string() : path + ": ") +
      "stdin is not open (redbloom was started with it closed, as by <&-): give --file PATH, "
      "or input on a pipe");
}

ItemReader::ItemReader(std::vector<std::string> args, std::string path)
    : args_(std::move(args)), path_(std::move(path)) {}

ItemReader::~ItemReader() {
  if (fd_ > 0) ::close(fd_);
}

Status ItemReader::Open() {
  if (path_.empty()) return Status::Ok();
  if (Status s = CheckStdinOpen(path_); !s.ok()) return s;
  if (path_ == "-") {
    fd_ = 0;
  } else {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      return Status::Unavailable("cannot open " + path_ + ": " + internal::ErrnoText(errno));
    }
  }
  struct stat st {};
  // A directory opens, and fails its first read: dedup and rebuild had made
  // their filter by then.
  if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status::Unavailable("cannot read " + Name() + ": " + internal::ErrnoText(EISDIR));
  }
  if (S_ISREG(st.st_mode)) {
    regular_ = true;
    total_bytes_ = static_cast<uint64_t>(st.st_size);
  }
  return Status::Ok();
}

Result<bool> ItemReader::Next(std::vector<std::string>* out, size_t max, bool streaming) {
  out->clear();
  batch_first_arg_ = next_arg_;
  size_t bytes = 0;
  const auto full = [&] {
    return out->size() >= max || (!out->empty() && bytes >= kMaxBatchBytes);
  };
  while (next_arg_ < args_.size() && !full()) {
    out->push_back(args_[next_arg_++]);
    bytes += out->back().size();
  }
  batch_args_ = out->size();
  batch_first_line_ = lines_ + 1;
  if (fd_ < 0) return !out->empty();
  const auto take_line = [&](size_t end) -> Status {
    const size_t length = end > pos_ && buf_[end - 1] == '\r' ? end - 1 - pos_ : end - pos_;
    if (length > kMaxLineBytes) return TooLong();
    out->emplace_back(buf_, pos_, length);
    bytes += length;
    ++lines_;
    return Status::Ok();
  };
  while (!full()) {
    const size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos) {
      REDBLOOM_RETURN_IF_ERROR(take_line(nl));
      pos_ = nl + 1;
      continue;
    }
    if (eof_) {
      if (pos_ < buf_.size()) {
        REDBLOOM_RETURN_IF_ERROR(take_line(buf_.size()));
        pos_ = buf_.size();
      }
      break;
    }
    // A line and its "\r" that already pass the limit: stop reading it.
    if (buf_.size() - pos_ > kMaxLineBytes + 1) return TooLong();
    if (streaming && !out->empty() && !InputReady()) break;
    buf_.erase(0, pos_);
    pos_ = 0;
    if (Status filled = Fill(); !filled.ok()) {
      // Stopped with items in hand: they are the batch, for the caller to
      // finish before it sees the stop. A quiet add dropped up to 65,535
      // lines it had read while it waited for more.
      if (!out->empty() && stop_ != nullptr && *stop_ != 0) return true;
      return filled;
    }
  }
  return !out->empty();
}

std::string ItemReader::Where(size_t i) const {
  if (i < batch_args_) return "argument " + std::to_string(batch_first_arg_ + i + 1);
  return "line " + std::to_string(batch_first_line_ + (i - batch_args_)) + " of " + Name();
}

Status ItemReader::Locate(const Status& s, Encoding encoding,
                          const std::vector<std::string>& batch) const {
  if (s.code() != StatusCode::kInvalidArgument) return s;
  std::string scratch;
  std::string_view bytes;
  for (size_t i = 0; i < batch.size(); ++i) {
    Status item = EncodeItem(encoding, batch[i], &scratch, &bytes);
    if (!item.ok()) return item.WithContext(Where(i));
  }
  return s;
}

Status ItemReader::TooLong() const {
  return Status::InvalidArgument("line " + std::to_string(lines_ + 1) + " of " + Name() +
                                 ": longer than " + std::to_string(kMaxLineBytes) +
                                 " bytes, the most an item may be");
}

bool ItemReader::InputReady() const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

Status ItemReader::Fill() {
  chunk_.resize(size_t{1} << 16);
  const auto interrupted = [&] {
    return Status::Unavailable("reading " + Name() + " was interrupted by a signal");
  };
  while (true) {
    // Input that may wait (a pipe, a terminal) is waited for in ppoll(),
    // with the stop signals blocked but inside it, which lets them in
    // atomically: one that lands between the stop's check and the wait ends
    // the wait (EINTR). With poll() and read() alone, one that landed just
    // before the wait was missed, and the read waited for input that might
    // never come (the next signal then killed the process unsynced).
    const bool watch_output = output_ >= 0 && !regular_;
    if (!regular_ && (stop_ != nullptr || watch_output)) {
      sigset_t stops, before;
      sigemptyset(&stops);
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
      ::pthread_sigmask(SIG_BLOCK, &stops, &before);
      if (stop_ != nullptr && *stop_ != 0) {
        ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
        return interrupted();
      }
      // A pipe's write end reports POLLERR once its reader is gone, a
      // socket's POLLHUP; both come without being asked for.
      pollfd p[2] = {{fd_, POLLIN, 0}, {output_, 0, 0}};
      const int ready = ::ppoll(p, watch_output ? 2 : 1, nullptr, &before);
      const int err = errno;
      ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
      if (ready < 0 && err == EINTR) {
        if (stop_ != nullptr && *stop_ != 0) return interrupted();
        continue;
      }
      if (ready < 0) {
        return Status::Unavailable("cannot wait for " + Name() + ": " + internal::ErrnoText(err));
      }
      if (watch_output && (p[1].revents & (POLLERR | POLLHUP)) != 0) {
        return Status::Unavailable(
            std::string("cannot write to ") + (output_ == 1 ? "stdout" : "the output") +
            ": whatever read it is gone (a closed pipe); stopped reading " + Name());
      }
      if (watch_output && (p[1].revents & POLLNVAL) != 0) output_ = -1;
      if (p[0].revents == 0) continue;  // only the output spoke
    }
    const ssize_t r = ::read(fd_, chunk_.data(), chunk_.size());
    if (r < 0 && errno == EINTR) {
      if (stop_ != nullptr && *stop_ != 0) return interrupted();
      continue;
    }
    if (r < 0) {
      return Status::Unavailable("read error on " + Name() + ": " + internal::ErrnoText(errno));
    }
    if (r == 0) eof_ = true;
    buf_.append(chunk_.data(), static_cast<size_t>(r));
    bytes_read_ += static_cast<uint64_t>(r);
    return Status::Ok();
  }
}

}  // namespace redbloom::cli
