// redbloom load, import, export, merge and dedup.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.h"
#include "frontend/existing_ttl.h"
#include "item_reader.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/transfer.h"
#include "stop_signals.h"
#include "util/errno_text.h"
#include "util/sync_dir.h"

namespace redbloom::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string Human(double v) {
  char buf[32];
  if (v >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  }
  return buf;
}

// A progress bar on a terminal (items, items/s, and for regular files the
// share read and an ETA); nothing otherwise, since scripts want a summary.
class Progress {
 public:
  explicit Progress(uint64_t total_bytes)
      : tty_(::isatty(2) == 1), total_bytes_(total_bytes), start_(Clock::now()) {}

  void Update(uint64_t items, uint64_t bytes, bool force = false) {
    if (!tty_) return;
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? items / secs : 0;
    std::string line =
        "\r" + Human(static_cast<double>(items)) + " items, " + Human(rate) + " items/s";
    if (total_bytes_ > 0) {
      const double frac = std::min(1.0, static_cast<double>(bytes) / total_bytes_);
      const int width = 30;
      const int done = static_cast<int>(frac * width);
      line = "\r[" + std::string(done, '#') + std::string(width - done, ' ') + "] " +
             std::to_string(static_cast<int>(frac * 100)) + "% " + line.substr(1);
      if (frac > 0 && secs > 0.5) {
        line += ", ETA " + std::to_string(static_cast<int>(secs / frac - secs)) + " s";
      }
    }
    std::cerr << line << "   " << std::flush;
  }
  void Message(const std::string& text) {
    if (tty_) std::cerr << "\r" << text << std::string(20, ' ') << std::flush;
  }
  void Done() {
    if (tty_) std::cerr << "\n";
  }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  bool tty_;
  uint64_t total_bytes_;
  Clock::time_point start_;
  Clock::time_point last_{};
};

constexpr size_t kBatch = 65536;

// Load into a filter that is not one array (sharded, scaling, window): one
// bitmap cannot be built locally, so the items are added in batches, as
// `add --file` does. What was acknowledged stays if a batch fails.
int LoadInBatches(BloomFilter& filter, const std::string& name, ItemReader& reader) {
  Progress progress(reader.total_bytes());
  std::vector<std::string> lines;
  std::vector<std::string_view> views;
  std::vector<uint8_t> added;
  uint64_t items = 0, fresh = 0;
  Revalidator revalidator(filter);
  while (true) {
    auto more = reader.Next(&lines, kBatch, /*streaming=*/false);
    if (!more.ok()) {
      progress.Done();
      if (items == 0) return Fail(more.status());
      return FailAfterWrites(
          more.status().WithContext("load (the " + std::to_string(items) +
                                    " items before it were added; fix the input and load again: "
                                    "adding them again is harmless)"),
          filter);
    }
    if (!*more) break;
    if (Status s = revalidator.Due(); !s.ok()) {
      progress.Done();
      return FailAfterWrites(s.WithContext("load (the batches before this one were written)"),
                             filter);
    }
    views.assign(lines.begin(), lines.end());
    if (Status s = filter.AddMany(views, &added); !s.ok()) {
      progress.Done();
      return FailAfterWrites(reader.Locate(s, filter.config().encoding, lines)
                                 .WithContext("load (the batches before this one were written; "
                                              "loading again is harmless)"),
                             filter);
    }
    items += lines.size();
    fresh += static_cast<uint64_t>(std::count(added.begin(), added.end(), 1));
    progress.Update(items, reader.bytes_read());
  }
  progress.Done();
  if (Status s = filter.Flush(); !s.ok()) return Fail(s);
  const double secs = progress.seconds();
  std::cerr << "loaded " << items << " items into " << name << ": ";
  if (filter.config().cell_bits() == 4) {
    // Every add of a counting filter counts (its "new" says only whether a
    // counter went from 0).
    std::cerr << items << " counted (a counting filter counts every add), in ";
  } else {
    std::cerr << fresh << " new, " << items - fresh
              << " already present (repeats, or false positives), in ";
  }
  std::cerr << FormatDouble(secs) << " s (" << Human(secs > 0 ? items / secs : 0)
            << " items/s), in batches: a " << FilterKindName(filter.config().kind)
            << (filter.config().shards > 1 ? " sharded" : "") << " filter is not one bitmap\n";
  return 0;
}

int RunLoad(Context& ctx, const std::string& name, const std::string& file) {
  ItemReader reader({}, file);
  if (Status s = reader.Open(); !s.ok()) return Fail(s);
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  auto filter = BloomFilter::Open(*ctx.store, name);
  if (!filter.ok()) return Fail(filter.status());
  if (!(*filter)->config().one_array()) return LoadInBatches(**filter, name, reader);

  // A plain filter's load starts from the filter's bits, so that the count
  // grows only by items that set a new bit, as adds count them (loading the
  // same items twice adds nothing, issue #15.9). A counting filter counts
  // every item, as its adds do, and its builder holds only the load's
  // counters (OrBitmap adds them).
  const bool counters = (*filter)->config().cell_bits() == 4;
  // A plain filter's bits are read straight into the builder: one copy in memory.
  Result<BitmapBuilder> made =
      counters ? BitmapBuilder::Make((*filter)->config()) : BitmapBuilder::StartingFrom(**filter);
  if (!made.ok()) return Fail(made.status().WithContext("load (nothing was written)"));
  BitmapBuilder& builder = *made;
  Progress progress(reader.total_bytes());
  std::vector<std::string> lines;
  std::vector<std::string_view> views;
  while (true) {
    auto more = reader.Next(&lines, kBatch, /*streaming=*/false);
    if (!more.ok()) return Fail(more.status());
    if (!*more) break;
    views.assign(lines.begin(), lines.end());
    if (Status s = builder.Add(views); !s.ok()) {
      progress.Done();
      return Fail(reader.Locate(s, (*filter)->config().encoding, lines)
                      .WithContext("load (nothing was written)"));
    }
    progress.Update(builder.items(), reader.bytes_read());
  }
  progress.Update(builder.items(), reader.bytes_read(), /*force=*/true);
  progress.Message("merging " + Human(static_cast<double>(builder.bitmap().size())) +
                   "B of bits into " + name + " ...");
  // The input may have taken minutes: the file the name holds now, not one
  // a killed rebuild or a restore left unlinked (see Revalidator).
  Status s = (*filter)->Revalidate();
  if (s.ok()) s = (*filter)->OrBitmap(builder.bitmap(), builder.new_items());
  if (s.ok()) s = (*filter)->Flush();
  progress.Done();
  if (!s.ok())
    return Fail(
        s.WithContext("nothing or part of the load was written; loading again is harmless"));
  const double secs = progress.seconds();
  std::cerr << "loaded " << builder.items() << " items into " << name << ": ";
  if (counters) {
    std::cerr << builder.new_items() << " counted (a counting filter counts every add)";
  } else {
    // An item that sets no new bit is a repeat, an item the filter held, or
    // one it would take for held (a false positive): the filter cannot tell.
    std::cerr << builder.new_items() << " new, " << builder.items() - builder.new_items()
              << " already present (repeats, or false positives)";
  }
  std::cerr << ", in " << FormatDouble(secs) << " s ("
            << Human(secs > 0 ? builder.items() / secs : 0) << " items/s)\n";
  return 0;
}

// Given the flags of create, dedup creates NAME as create would (an
// identical filter is used as it is, one with other parameters is exit 4), so
// the first run of a pipeline needs no separate create.
int RunDedup(Context& ctx, const std::string& name, const std::string& file,
             const SizingFlags& sizing) {
  std::optional<FilterOptions> options;
  if (sizing.given()) {
    auto o = sizing.Parse();
    if (!o.ok()) return Fail(o.status());
    options = *o;
  }
  ItemReader reader({}, file);
  if (Status s = reader.Open(); !s.ok()) return Fail(s);
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  bool created = false;
  auto filter = options ? BloomFilter::Create(*ctx.store, name, *options, &created)
                        : BloomFilter::Open(*ctx.store, name);
  if (!filter.ok()) {
    if (filter.status().code() == StatusCode::kNotFound && !options) {
      return Fail(Status::NotFound("filter '" + name +
                                   "' does not exist; create it, or give dedup --capacity N "
                                   "--error P to create it on first use"));
    }
    return Fail(filter.status());
  }
  if (created) std::cerr << "created " << name << ": " << (*filter)->config().ToString() << "\n";
  if (options && !created) {
    if (Status s = frontend::CheckExistingTtl(name, (*filter)->config(), *options); !s.ok()) {
      return Fail(s);
    }
  }
  std::vector<std::string> lines;
  std::vector<std::string_view> views;
  std::vector<uint8_t> added;
  std::string out;
  // `tail -f log | redbloom dedup NAME | head -1` ends once head has: a line
  // read after that would be added and never printed.
  reader.set_output(1);
  // An error after lines were added: they are made durable all the same.
  const auto fail = [&](const Status& s) { return FailAfterWrites(s, **filter); };
  // Ctrl-C ends a `tail -f | dedup` pipeline: as add, it ends after the
  // lines in hand, printed and synced (killed, it skipped the sync).
  StopSignals stop_signals;
  reader.set_stop(&g_stop_signal);
  uint64_t done = 0;
  // `unwritten`: the write of the last new lines that the signal cut short.
  const auto stopped = [&](const Status& unwritten = Status::Ok()) {
    const int sig = g_stop_signal;
    const Status synced = (*filter)->Flush();
    std::cerr << "redbloom: dedup into " << name << " stopped by signal " << sig << " after "
              << done << (done == 1 ? " line" : " lines") << (synced.ok() ? ", synced" : "")
              << "; nothing after " << (done == 1 ? "it" : "them") << " was added\n";
    if (!unwritten.ok()) std::cerr << "redbloom: " << OneLine(unwritten.message()) << "\n";
    if (!synced.ok()) (void)Fail(synced.WithContext("and what was written may not be durable"));
    return 128 + sig;
  };
  Revalidator revalidator(**filter);
  while (true) {
    if (g_stop_signal != 0) return stopped();
    auto more = reader.Next(&lines, kBatch, /*streaming=*/true);
    if (!more.ok() && g_stop_signal != 0) return stopped();
    if (!more.ok()) return fail(more.status());
    if (!*more) break;
    if (Status s = revalidator.Due(); !s.ok()) return fail(s);
    views.assign(lines.begin(), lines.end());
    const Status s = (*filter)->AddMany(views, &added);
    // On a store error, `added` holds the answers of the lines the store
    // confirmed before it failed: printed, as they are now in the filter
    // and a second run would not print them.
    out.clear();
    for (size_t i = 0; i < added.size(); ++i) {
      if (added[i]) {
        out += lines[i];
        out += '\n';
      }
    }
    if (Status wrote = WriteStdout(out); !wrote.ok()) {
      // The lines are in the filter, and a second run will not print them.
      const Status unwritten =
          added.empty() ? wrote
                        : wrote.WithSuffix("; the new lines from " + reader.Where(0) + " to " +
                                           reader.Where(added.size() - 1) +
                                           " are in the filter but may not have been written, "
                                           "and a second run will not print them");
      // A stop signal that cut the write short (a reader that stalled)
      // stopped the run, as add's does; it was exit 3, "cannot write".
      if (g_stop_signal != 0 && s.ok()) {
        done += lines.size();
        return stopped(unwritten);
      }
      return fail(added.empty() ? wrote : unwritten.WithSuffix("; nothing after them was added"));
    }
    if (!s.ok()) {
      if (s.code() != StatusCode::kInvalidArgument) {
        // The lines after those may be in the filter without having been
        // printed: say which, so that they can be passed on by hand.
        const size_t unsure = lines.size() - added.size();
        const std::string which =
            (added.empty() ? std::string()
                           : "the lines before " + reader.Where(added.size()) +
                                 " were added and the new ones printed; ") +
            (unsure == 1 ? reader.Where(added.size())
                         : reader.Where(added.size()) + " to " + reader.Where(lines.size() - 1) +
                               " (" + std::to_string(unsure) + " lines)");
        std::cerr << "redbloom: dedup: " << OneLine(which)
                  << " may have been added without being printed, and a second run will not "
                     "print "
                  << (unsure == 1 ? "it" : "those") << "; nothing after was added\n";
      }
      return fail(reader.Locate(s, (*filter)->config().encoding, lines).WithContext("dedup"));
    }
    done += lines.size();
  }
  if (Status s = (*filter)->Flush(); !s.ok()) return Fail(s);
  return 0;
}

// After an import or merge into a filter that held items, or a merge of
// several: the cells may now hold more items than the capacity, and answer
// false positives past the rate the filter was made for (two full filters
// merged; a scaling filter's layers, merged layer by layer, each past its
// share). Said, not refused: the union is what was asked for, and every
// item stays present. 1.5x, so that a filter at its capacity stays quiet.
void WarnIfPastRate(BloomFilter& filter) {
  const Result<FilterInfo> info = filter.Info();
  if (!info.ok() || info->current_fpp <= 1.5 * info->config.error_rate) return;
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.2g", info->current_fpp);
  std::cerr << "redbloom: warning: '" << filter.name() << "' now answers false positives at about "
            << rate << " (current_fpp), past its error rate "
            << FormatDouble(info->config.error_rate)
            << ": it holds more items than it was sized for (its own and those merged in add up"
            << (info->config.kind == FilterKind::kScaling
                    ? ", layer by layer: the chain no longer keeps its bound"
                    : "")
            << "); to get the rate back, add the items to a filter sized for all of them\n";
}

// An import's input: a descriptor read in 64 KiB pieces. The importer reads
// it twice (to check it all, then to write it), so it must seek: a file seeks
// itself; what a pipe sends is kept here as it comes, and served again from
// memory after a seek back. Every piece, the second pass's too, checks for a
// stop signal first: once one has come, and for a read that fails, reading
// throws, which the istream turns into its badbit, and the importer fails
// "read failed" where it stands and drops a filter it made. (A std::ifstream
// retries a read a signal interrupts, and waits on at a FIFO; the importer's
// own copy of a pipe's input was read from memory, unchecked, while every
// chunk was written.)
class ImportInput : public std::streambuf {
 public:
  // Takes `fd` (closed with it unless it is stdin).
  explicit ImportInput(int fd) : fd_(fd), kept_(::lseek(fd, 0, SEEK_CUR) < 0), buf_(kPiece) {
    if (kept_) buf_.clear();
    setg(buf_.data(), buf_.data(), buf_.data());
  }
  ImportInput(const ImportInput&) = delete;
  ImportInput& operator=(const ImportInput&) = delete;
  ~ImportInput() override {
    if (fd_ > 0) ::close(fd_);
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (g_stop_signal != 0) throw std::runtime_error("stopped by a signal");
    if (kept_) {
      const size_t at = static_cast<size_t>(gptr() - buf_.data());
      if (at == buf_.size() && !Read()) return traits_type::eof();
      ServeFrom(at);
      return traits_type::to_int_type(*gptr());
    }
    if (!Read()) return traits_type::eof();
    return traits_type::to_int_type(*gptr());
  }
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode) override {
    if (kept_) {
      const off_type here = gptr() - buf_.data();
      if (dir == std::ios_base::end) {
        // Where the input ends (the Guava importer asks for its length):
        // all of it is read, as the importer would have held it.
        while (Read()) {
        }
      }
      const auto size = static_cast<off_type>(buf_.size());
      const off_type to = dir == std::ios_base::beg   ? off
                          : dir == std::ios_base::cur ? here + off
                                                      : size + off;
      if (to < 0 || to > size) return pos_type(off_type(-1));
      ServeFrom(static_cast<size_t>(to));
      return pos_type(to);
    }
    // What is buffered was read from the descriptor but not by the reader.
    const off_t at = dir == std::ios_base::beg   ? ::lseek(fd_, off, SEEK_SET)
                     : dir == std::ios_base::end ? ::lseek(fd_, off, SEEK_END)
                                                 : ::lseek(fd_, off - (egptr() - gptr()), SEEK_CUR);
    if (at < 0) return pos_type(off_type(-1));
    setg(buf_.data(), buf_.data(), buf_.data());
    return pos_type(at);
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    return seekoff(off_type(pos), std::ios_base::beg, which);
  }

 private:
  static constexpr size_t kPiece = 1 << 16;

  // Reads the next piece: into the buffer, or (kept_) onto the end of what
  // is kept, then served from where the reader stood. False at the end.
  bool Read() {
    const size_t at = static_cast<size_t>(gptr() - buf_.data());
    const size_t kept = kept_ ? buf_.size() : 0;
    if (kept_) buf_.resize(kept + kPiece);
    while (true) {
      const ssize_t n = ::read(fd_, buf_.data() + kept, kPiece);
      if (n < 0 && errno == EINTR && g_stop_signal == 0) continue;
      if (n < 0) {
        const int err = errno;
        if (kept_) {
          // The resize may have moved what is kept: the reader's place is
          // set again, as a seek after the failure reads it.
          buf_.resize(kept);
          ServeFrom(at);
        }
        throw std::runtime_error(err == EINTR ? "stopped by a signal" : internal::ErrnoText(err));
      }
      if (kept_) {
        buf_.resize(kept + static_cast<size_t>(n));
        ServeFrom(at);
      } else {
        setg(buf_.data(), buf_.data(), buf_.data() + n);
      }
      return n > 0;
    }
  }
  // Serves what is kept from `at` on, a piece at a time, so that underflow
  // (and its signal check) runs for every piece.
  void ServeFrom(size_t at) {
    setg(buf_.data(), buf_.data() + at, buf_.data() + std::min(buf_.size(), at + kPiece));
  }

  const int fd_;
  const bool kept_;  // the descriptor cannot seek (a pipe): buf_ keeps all it read
  std::vector<char> buf_;
};

int RunImport(Context& ctx, const std::string& name, const std::string& format,
              const std::string& file, const std::string& encoding, bool encoding_given,
              const std::string& capacity, const std::string& error) {
  if (format != "guava" && format != "redbloom") {
    return Fail(Status::InvalidArgument("--format must be guava or redbloom"));
  }
  GuavaImportOptions options;
  if (format == "guava") {
    // Like Guava's readFrom, the file and the funnel are enough: its m and k
    // become the filter's. Given, the capacity and error rate are checked
    // against them.
    if (capacity.empty() != error.empty()) {
      return Fail(Status::InvalidArgument(
          "give both --capacity and --error (BloomFilter.create's expectedInsertions and fpp), "
          "or neither to take the file's bits and hashes"));
    }
    auto e = ParseEncoding(encoding);
    if (!e.ok()) return Fail(e.status());
    options.encoding = *e;
    if (!capacity.empty()) {
      auto n = ParseUint64(capacity);
      if (!n.ok()) return Fail(n.status().WithContext("--capacity"));
      auto p = ParseDouble(error);
      if (!p.ok()) return Fail(p.status().WithContext("--error"));
      options.capacity = *n;
      options.error_rate = *p;
    }
  } else if (!capacity.empty() || !error.empty() || encoding_given) {
    // Given at all, not only other than the default: `--encoding utf8` with
    // a dump was accepted as if it applied.
    return Fail(
        Status::InvalidArgument("--capacity, --error and --encoding apply to --format guava; a "
                                "redbloom dump carries its own"));
  }
  // The input is streamed, not read into memory: the importer reads a file
  // twice (to check it all, then to write it) and holds only what a pipe
  // actually sends, so memory never follows a size the input claims.
  if (Status s = CheckStdinOpen(file); !s.ok()) return Fail(s);
  int fd = 0;
  if (file != "-") {
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return Fail(Status::Unavailable("cannot open " + file + ": " + internal::ErrnoText(errno)));
    }
    // A directory opens, and then every read fails: say so, not "truncated".
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Fail(Status::Unavailable("cannot read " + file + ": " + internal::ErrnoText(EISDIR)));
    }
  }
  ImportInput input(fd);
  std::istream in(&input);
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  const bool existed = ctx.store->ReadConfig(name).ok();  // a restore into a new name is as it was
  StopSignals stop_signals;
  auto filter = format == "guava" ? ImportGuava(*ctx.store, name, in, options)
                                  : ImportDump(*ctx.store, name, in);
  if (!filter.ok() && g_stop_signal != 0) {
    // A filter this import made is dropped again (UndoCreate), unless that
    // could lose another client's adds, or failed: the library's error says.
    std::cerr << "redbloom: import into " << name << " stopped by signal " << g_stop_signal;
    if (!existed && ctx.store->ReadConfig(name).status().code() == StatusCode::kNotFound) {
      std::cerr << "; nothing was imported, and no filter " << name << " is left\n";
    } else {
      std::cerr << ": " << OneLine(filter.status().message()) << "\n";
    }
    return 128 + g_stop_signal;
  }
  if (!filter.ok()) return Fail(filter.status().WithContext("import"));
  std::cerr << "imported into " << name << ": " << (*filter)->config().ToString() << "\n";
  if (existed) WarnIfPastRate(**filter);
  if (g_stop_signal != 0) {
    std::cerr << "redbloom: import into " << name << ": signal " << g_stop_signal
              << " came once the whole input was read; the import completed, and stands\n";
  }
  return 0;
}

// An output stream's buffer over a descriptor, where it stands (appending,
// for one opened to append): an export streams its file through it, so it
// holds the filter's bits and 64 KiB, not the whole file as well. The first
// failed write's errno is kept for the error, and every write after it
// fails.
class DescriptorBuf : public std::streambuf {
 public:
  explicit DescriptorBuf(int fd) : fd_(fd), buf_(1 << 16) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  DescriptorBuf(const DescriptorBuf&) = delete;
  DescriptorBuf& operator=(const DescriptorBuf&) = delete;
  ~DescriptorBuf() override = default;  // an unflushed tail is a failed export

  int error() const { return error_; }
  uint64_t written() const { return written_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!Drain()) return traits_type::eof();
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
    return ch;
  }
  int sync() override { return Drain() ? 0 : -1; }

 private:
  // Writes out what is buffered.
  bool Drain() {
    const char* at = pbase();
    while (error_ == 0 && at < pptr()) {
      const ssize_t n = ::write(fd_, at, static_cast<size_t>(pptr() - at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      at += n;
      written_ += static_cast<uint64_t>(n);
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return error_ == 0;
  }

  const int fd_;
  std::vector<char> buf_;
  int error_ = 0;
  uint64_t written_ = 0;
};

// Streams the export of `filter` in `format` to descriptor `fd`; returns
// the bytes written, or the error, naming `what` for a failed write. The
// exports write each piece as they read it: a store error part-way leaves
// a stream that an import refuses as truncated (a file target is renamed
// into place only once complete).
Result<uint64_t> ExportTo(BloomFilter& filter, const std::string& format, int fd,
                          const std::string& what) {
  DescriptorBuf buf(fd);
  std::ostream out(&buf);
  Status s = format == "guava" ? ExportGuava(filter, out) : ExportDump(filter, out);
  if (buf.error() != 0) return WriteError(what, buf.error());
  if (!s.ok()) return s.WithContext("export");
  return buf.written();
}

// Syncs the directory an export's file was just linked or renamed into:
// until then a power loss can take the new name away (the export's data is
// synced, its entry is not), and with it a backup whose filter was dropped
// after the export answered. A file system that cannot sync a directory
// (EINVAL) has nothing more to do.
Status SyncLinked(const std::string& dir, const std::string& file) {
  const int err = internal::SyncDirErrno(dir);
  // EACCES: a directory this user may write but not read (a drop-box, mode
  // 0300) cannot be opened to sync; the file's data is synced all the same.
  if (err == 0 || err == EACCES) return Status::Ok();
  return Status::Unavailable("wrote " + file + ", but cannot sync its directory " + dir + ": " +
                             internal::ErrnoText(err) + "; it may not survive a power loss");
}

int Exported(const std::string& name, uint64_t bytes, const std::string& format,
             const std::string& file) {
  std::cerr << "exported " << name << " (" << bytes << " bytes, " << format << " format) to "
            << file << "\n";
  return 0;
}

int RunExport(Context& ctx, const std::string& name, const std::string& format,
              const std::string& file) {
  if (format != "guava" && format != "redbloom") {
    return Fail(Status::InvalidArgument("--format must be guava or redbloom"));
  }
  // A descriptor the shell did not open is asked about before the store
  // opens: a store's connection would take its number, and the export
  // would be written to Redis and answer "exported".
  const int named_fd = NamedDescriptor(file);
  if (named_fd >= 0 && ::fcntl(named_fd, F_GETFD) < 0) {
    return Fail(Status::InvalidArgument(
        file + ": descriptor " + std::to_string(named_fd) +
        " is not open (the shell opens it: " + std::to_string(named_fd) + ">FILE)"));
  }
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  auto filter = BloomFilter::Open(*ctx.store, name);
  if (!filter.ok()) return Fail(filter.status());
  if (file == "-") {
    std::cout.flush();
    Result<uint64_t> wrote = ExportTo(**filter, format, 1, "stdout");
    // Said on stderr as for every other target (it said nothing here, where
    // `--file /dev/stdout` said "exported").
    return wrote.ok() ? Exported(name, *wrote, format, "stdout") : Fail(wrote.status());
  }
  if (const int fd = named_fd; fd >= 0) {
    if (fd == 1) std::cout.flush();
    Result<uint64_t> wrote = ExportTo(**filter, format, fd, file);
    if (!wrote.ok()) return Fail(wrote.status());
    return Exported(name, *wrote, format, file);
  }
  // A FIFO, a device or a socket is written to as it is:
  // renaming a file over it would replace it, and whatever reads from it
  // would get nothing while the export said it had written.
  std::error_code ec;
  const auto st = std::filesystem::status(file, ec);  // follows symlinks
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return Fail(WriteError(file, errno));
    Result<uint64_t> wrote = ExportTo(**filter, format, fd, file);
    ::close(fd);
    if (!wrote.ok()) return Fail(wrote.status());
    return Exported(name, *wrote, format, file);
  }
  // A regular file: write beside it, sync and rename, so a failed export
  // (or a crash) never leaves a half-written file under the name. Through a
  // symlink, beside and over its target: the link stays a link.
  // A dangling link's target is made, as `>` makes it.
  std::filesystem::path target = file;
  for (int hops = 0; std::filesystem::is_symlink(std::filesystem::symlink_status(target, ec));
       ++hops) {
    std::filesystem::path next = std::filesystem::read_symlink(target, ec);
    if (ec || hops == 40) {
      return Fail(Status::Unavailable("cannot resolve the link " + file + ": " +
                                      (ec ? ec.message() : "too many levels of symbolic links")));
    }
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  // A file: store's directory holds its filters' files, DIR/NAME.rbf, and
  // their parts, DIR/.NAME.parts/: `export x --file DIR/x.rbf` replaced the
  // filter's own file with its dump and said "exported", the filter gone
  // (and any other .rbf there was listed as a filter). Other names there
  // are the caller's.
  if (ctx.store->OwnsPath(target.string())) {
    return Fail(Status::InvalidArgument(
        file + " is a name the store " + ctx.store->url() +
        " keeps for its filters' own files (NAME.rbf, .NAME.parts/): export to another name"));
  }
  // The export is written to an unnamed file in the target's directory
  // (O_TMPFILE) and linked in when complete: an export killed midway leaves
  // nothing behind (a named temporary stayed, as large as the filter, for
  // ever). File systems without O_TMPFILE take a named temporary.
  const std::string tmp = target.string() + ".tmp." + std::to_string(::getpid());
  std::string dir = target.parent_path().string();
  if (dir.empty()) dir = ".";
  // Linked through /proc/self/fd: without it (a chroot, a private /proc),
  // the named temporary.
  static const bool proc_fds = ::access("/proc/self/fd", X_OK) == 0;
  int fd = proc_fds ? ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666) : -1;
  const bool unnamed = fd >= 0;
  if (!unnamed && proc_fds && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    return Fail(WriteError(file + " (in " + dir + ")", errno));
  }
  const std::string what = unnamed ? file : file + " (through its temporary " + tmp + ")";
  if (!unnamed) fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return Fail(WriteError(what, errno));
  bool tmp_linked = !unnamed;  // a file of ours is under the temporary name
  // A file that is replaced keeps its mode and owner, as `>` would keep them:
  // a backup kept 0600 must not turn world-readable by being rewritten. Set
  // before a byte is written; an owner only root may give is left ours.
  if (struct stat old; ::stat(target.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    if (old.st_uid != ::geteuid() || old.st_gid != ::getegid()) {
      (void)::fchown(fd, old.st_uid, old.st_gid);
    }
    if (::fchmod(fd, old.st_mode & 07777) != 0) {
      const int err = errno;
      ::close(fd);
      if (tmp_linked) std::remove(tmp.c_str());
      return Fail(WriteError(what, err));
    }
  }
  Result<uint64_t> wrote = ExportTo(**filter, format, fd, what);
  if (wrote.ok() && ::fsync(fd) != 0) wrote = WriteError(what, errno);
  if (wrote.ok() && unnamed) {
    // A new name is linked in at once; an existing one is replaced by a
    // rename, as a named temporary would be.
    const std::string from = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, target.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      ::close(fd);  // its data is synced, and it is in place
      if (Status synced = SyncLinked(dir, file); !synced.ok()) return Fail(synced);
      return Exported(name, *wrote, format, file);
    }
    int err = errno;
    if (err == EEXIST) {
      ::unlink(tmp.c_str());  // a stale one, of a process that had this pid
      err = ::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) == 0 ? 0
                                                                                            : errno;
      tmp_linked = err == 0;
    }
    if (err != 0) {
      wrote = Status::Unavailable("cannot link " + file + " into place (through " + tmp +
                                  "): " + internal::ErrnoText(err));
    }
  }
  if (::close(fd) != 0 && wrote.ok()) wrote = WriteError(what, errno);
  if (!wrote.ok()) {
    if (tmp_linked) std::remove(tmp.c_str());
    return Fail(wrote.status());
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;  // the rename's, not the cleanup's
    std::remove(tmp.c_str());
    return Fail(Status::Unavailable("cannot rename to " + target.string() + ": " +
                                    internal::ErrnoText(err)));
  }
  if (Status synced = SyncLinked(dir, file); !synced.ok()) return Fail(synced);
  return Exported(name, *wrote, format, file);
}

int RunMerge(Context& ctx, const std::string& dest, const std::vector<std::string>& sources) {
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  // The destination named among the sources adds nothing ("merge m1 m1"
  // said it merged one filter).
  size_t merged_in = 0;
  // A merge reads every source before it creates or writes anything, then
  // writes for seconds at most: a stop signal waits for it to end rather
  // than cut it short. Killed while writing, a merge left a new destination
  // holding part of the sources' bits, whose other items read absent.
  StopSignals stop_signals;
  Status s = Merge(*ctx.store, dest, sources, &merged_in);
  if (!s.ok()) return Fail(s.WithContext("merge"));
  std::cerr << "merged " << merged_in << " filter(s) into " << dest << "\n";
  if (auto merged = BloomFilter::Open(*ctx.store, dest); merged.ok()) WarnIfPastRate(**merged);
  if (g_stop_signal != 0) {
    std::cerr << "redbloom: merge into " << dest << ": signal " << g_stop_signal
              << " came during the merge, which completed, and stands\n";
  }
  return 0;
}

// A rebuild's replacement: the filter's own parameters (`old`), with those
// the flags give. Leaving a flag out must not turn a seed / utf8x2 filter
// that Java services share into a block / utf8 one (they would then miss
// what they add), nor a counting filter into one that cannot remove, nor
// drop a TTL.
Result<FilterOptions> RebuildOptions(const SizingFlags& flags, bool plain, bool no_ttl,
                                     const FilterConfig& old) {
  FilterOptions o = OptionsOf(old);
  if (!flags.capacity.empty() || !flags.error.empty()) {
    if (old.geometry_given && (flags.capacity.empty() || flags.error.empty())) {
      return Status::InvalidArgument(
          "give both --capacity and --error: the filter's bits and hashes were given, not sized");
    }
    if (!flags.capacity.empty()) {
      REDBLOOM_ASSIGN_OR_RETURN(o.capacity, flags.Capacity());
    }
    if (!flags.error.empty()) {
      REDBLOOM_ASSIGN_OR_RETURN(o.error_rate, flags.ErrorRate());
    }
    o.bits = 0;
    o.hashes = 0;
  }
  if (flags.strategy_option->count() > 0) {
    REDBLOOM_ASSIGN_OR_RETURN(o.strategy, ParseStrategy(flags.strategy));
    // Bits and hashes kept (a Guava file's) that the new strategy cannot
    // take: say which flags would size it, with the filter's own figures.
    if (o.bits != 0 && !GivenGeometry(o.strategy, o.bits, o.hashes).ok()) {
      return Status::InvalidArgument(
          "--strategy " + flags.strategy +
          " sizes a filter by capacity and error rate, and this filter's bits and hashes were "
          "given (an imported Guava file's): give --capacity and --error too (its own, derived "
          "from its bits and hashes, are " +
          std::to_string(old.capacity) + " and " + FormatDouble(old.error_rate) + ")");
    }
  }
  if (flags.encoding_option->count() > 0) {
    REDBLOOM_ASSIGN_OR_RETURN(o.encoding, ParseEncoding(flags.encoding));
  }
  if (flags.counting && plain)
    return Status::InvalidArgument("--counting and --plain exclude each other");
  if (flags.counting) o.kind = FilterKind::kCounting;
  if (plain) o.kind = FilterKind::kPlain;
  if (!flags.ttl.empty() && no_ttl)
    return Status::InvalidArgument("--ttl and --no-ttl exclude each other");
  if (!flags.ttl.empty()) {
    REDBLOOM_ASSIGN_OR_RETURN(o.ttl_seconds, flags.TtlSeconds());
  }
  if (no_ttl) o.ttl_seconds = 0;
  return o;
}

int RunRebuild(Context& ctx, const std::string& name, const SizingFlags& sizing, bool plain,
               bool no_ttl, bool force, bool allow_empty, const std::string& file) {
  ItemReader reader({}, file);
  if (Status s = reader.Open(); !s.ok()) return Fail(s);
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  // The filter must exist: rebuild replaces, it does not create.
  auto old = ctx.store->ReadConfig(name);
  if (!old.ok()) return Fail(old.status());
  auto options = RebuildOptions(sizing, plain, no_ttl, *old);
  if (!options.ok()) return Fail(options.status());
  Progress progress(reader.total_bytes());
  uint64_t items = 0;
  StopSignals stop_signals;
  reader.set_stop(&g_stop_signal);
  const auto stopped = [] {
    return Status::Unavailable("stopped by signal " + std::to_string(g_stop_signal));
  };
  Status s = BloomFilter::Rebuild(
      *ctx.store, name, *options,
      [&](BloomFilter& f) -> Status {
        const FilterConfig config = f.config();
        std::optional<BitmapBuilder> builder;
        if (config.one_array()) {
          REDBLOOM_ASSIGN_OR_RETURN(BitmapBuilder made, BitmapBuilder::Make(config));
          builder.emplace(std::move(made));
        }
        std::vector<std::string> lines;
        std::vector<std::string_view> views;
        while (true) {
          if (g_stop_signal != 0) return stopped();
          REDBLOOM_ASSIGN_OR_RETURN(bool more, reader.Next(&lines, kBatch, /*streaming=*/false));
          if (!more) break;
          views.assign(lines.begin(), lines.end());
          Status add = builder ? builder->Add(views) : f.AddMany(views);
          if (!add.ok()) return reader.Locate(add, config.encoding, lines);
          items += lines.size();
          progress.Update(items, reader.bytes_read());
        }
        if (g_stop_signal != 0) return stopped();
        if (items == 0 && !allow_empty) {
          return Status::InvalidArgument(
              "the input has no items, and the rebuilt filter would hold none of the old one's "
              "(give --allow-empty if that is meant)");
        }
        if (builder) REDBLOOM_RETURN_IF_ERROR(f.OrBitmap(builder->bitmap(), builder->new_items()));
        // The bulk write and the sync of a large filter take a while: a
        // signal that came meanwhile still stops the rebuild, the last time
        // one can (Rebuild swaps as soon as this returns). Synced here, the
        // sync Rebuild makes before its swap has next to nothing to do.
        REDBLOOM_RETURN_IF_ERROR(f.Flush());
        if (g_stop_signal != 0) return stopped();
        return Status::Ok();
      },
      force ? BloomFilter::Leftover::kDrop : BloomFilter::Leftover::kRefuse);
  progress.Done();
  if (!s.ok() && g_stop_signal != 0) {
    // The temporary filter was dropped on the way out (unless the store
    // failed too, which Rebuild's error would then say).
    std::cerr << "redbloom: rebuild of " << name << " stopped by signal " << g_stop_signal
              << "; the old filter is unchanged\n";
    return 128 + g_stop_signal;
  }
  if (!s.ok()) {
    // The library names its own way to drop a leftover temporary filter
    // beside the CLI's; a CLI user needs only --force.
    std::string message = s.message();
    const std::string api = " (BloomFilter::Leftover::kDrop)";
    if (const size_t at = message.find(api); at != std::string::npos) message.erase(at, api.size());
    // A filter dropped meanwhile is gone, not unchanged: the error says so
    // (a not_found of the temporary alone, with the name there, is not).
    const Status said(s.code(), message, s.reason());
    const bool gone = s.code() == StatusCode::kNotFound &&
                      ctx.store->ReadConfig(name).status().code() == StatusCode::kNotFound;
    return Fail(gone ? said : said.WithContext("the old filter is unchanged"));
  }
  std::cerr << "rebuilt " << name << " from " << items << " items in "
            << FormatDouble(progress.seconds()) << " s and swapped it in\n";
  if (g_stop_signal != 0) {
    // Too late to stop: the new filter is in place, and stays.
    std::cerr << "redbloom: rebuild of " << name << ": signal " << g_stop_signal
              << " came during the swap, which completed\n";
  }
  return 0;
}

}  // namespace

std::function<int()> AddBulkCommands(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string name, file = "-", format, encoding = "utf8", capacity, error;
    std::vector<std::string> sources;
    SizingFlags sizing;
    bool plain = false, no_ttl = false, force = false, allow_empty = false;  // rebuild
    SizingFlags dedup_sizing;
  };
  auto flags = std::make_shared<Flags>();

  auto* load = app.add_subcommand(
      "load",
      "Bulk-load items (one per line): for a plain or counting filter of one array, bits "
      "(counters) are built locally and merged into the filter in one bulk write (on Redis: "
      "upload to a temporary key, then BITOP OR, or a counter-adding script); sharded, scaling "
      "and window filters are added to in batches. Prints a summary.");
  load->add_option("NAME", flags->name, "Filter name")->required();
  load->add_option("--file,-f", flags->file, "PATH, or - for stdin")
      ->check(NonEmptyPath())
      ->required();

  auto* import = app.add_subcommand("import", "Import a Guava writeTo file or a redbloom dump");
  import->add_option("NAME", flags->name, "Filter name (created if missing)")->required();
  import->add_option("--format", flags->format, "guava or redbloom")
      ->check(NonEmptyValue())
      ->required();
  import->add_option("--file,-f", flags->file, "PATH, or - for stdin")
      ->check(NonEmptyPath())
      ->required();
  CLI::Option* import_encoding = import->add_option(
      "--encoding", flags->encoding,
      "guava: the funnel the Java side used (utf8, utf8x2, int32, int64, bytes)");
  import_encoding->capture_default_str()->check(NonEmptyValue());
  import
      ->add_option("--capacity,-n", flags->capacity,
                   "guava, optional: BloomFilter.create's expectedInsertions, checked against "
                   "the file (without: the file's bits and hashes are taken as they are)")
      ->check(NonEmptyValue());
  import
      ->add_option("--error,-p", flags->error,
                   "guava, optional: BloomFilter.create's fpp, checked against the file")
      ->check(NonEmptyValue());

  auto* exp =
      app.add_subcommand("export", "Export a filter as a Guava writeTo file or a redbloom dump");
  exp->add_option("NAME", flags->name, "Filter name")->required();
  exp->add_option("--format", flags->format,
                  "guava (plain guava64 filters only) or redbloom (any kind)")
      ->check(NonEmptyValue())
      ->required();
  exp->add_option("--file,-f", flags->file, "PATH, or - for stdout")
      ->check(NonEmptyPath())
      ->required();

  auto* merge = app.add_subcommand(
      "merge",
      "Union of filters of identical geometry into DEST (created like the first SRC if missing); "
      "counting filters add their counts");
  merge->add_option("DEST", flags->name, "Destination filter")->required();
  merge->add_option("SRC", flags->sources, "Source filters")->required();

  auto* dedup = app.add_subcommand(
      "dedup",
      "Unix filter: print only the input lines not already in the filter, and add them; with "
      "--capacity and --error, create the filter if it does not exist");
  dedup->add_option("NAME", flags->name, "Filter name")->required();
  dedup->add_option("--file,-f", flags->file, "PATH, or - for stdin (the default)")
      ->check(NonEmptyPath())
      ->capture_default_str();
  flags->dedup_sizing.AddTo(dedup, StrategyName(kDefaultStrategy),
                            SizingFlags::Need::kCreateIfMissing);
  flags->dedup_sizing.AddKindsTo(dedup);

  auto* rebuild = app.add_subcommand(
      "rebuild",
      "Atomically replace a plain or counting filter with one built from --file, possibly with "
      "new parameters (those left out stay the filter's own); readers see the old filter until "
      "the swap, then the new one");
  rebuild->add_option("NAME", flags->name, "Filter name (must exist)")->required();
  rebuild->add_option("--file,-f", flags->file, "Items, one per line: PATH, or - for stdin")
      ->check(NonEmptyPath())
      ->required();
  flags->sizing.AddTo(rebuild, StrategyName(kDefaultStrategy), SizingFlags::Need::kFromExisting);
  rebuild->add_flag("--counting", flags->sizing.counting, "Rebuild as a counting filter");
  rebuild->add_flag("--plain", flags->plain, "Rebuild as a plain filter");
  rebuild
      ->add_option("--ttl", flags->sizing.ttl,
                   "Delete the rebuilt filter this long after the rebuild (default: the "
                   "filter's own TTL, counted from the rebuild)")
      ->check(NonEmptyValue());
  rebuild->add_flag("--no-ttl", flags->no_ttl, "The rebuilt filter never expires");
  rebuild->add_flag("--force", flags->force,
                    "Drop the temporary filter a stopped rebuild left (only when no other "
                    "rebuild of NAME is running)");
  rebuild->add_flag("--allow-empty", flags->allow_empty,
                    "Swap in an empty filter when the input has no items (else refused: an "
                    "empty input is more often a mistake than a wish to forget every item)");

  return [=, &ctx]() -> int {
    if (*rebuild) {
      return RunRebuild(ctx, flags->name, flags->sizing, flags->plain, flags->no_ttl, flags->force,
                        flags->allow_empty, flags->file);
    }
    if (*load) return RunLoad(ctx, flags->name, flags->file);
    if (*import) {
      return RunImport(ctx, flags->name, flags->format, flags->file, flags->encoding,
                       import_encoding->count() > 0, flags->capacity, flags->error);
    }
    if (*exp) return RunExport(ctx, flags->name, flags->format, flags->file);
    if (*merge) return RunMerge(ctx, flags->name, flags->sources);
    if (*dedup) return RunDedup(ctx, flags->name, flags->file, flags->dedup_sizing);
    return -1;
  };
}

}  // namespace redbloom::cli
