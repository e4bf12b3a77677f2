// Where the CLI's items come from: the command line's arguments, then the
// lines of a file or stdin. The one line reader of the CLI (add, check,
// remove, load, dedup, rebuild).
#ifndef REDBLOOM_TOOLS_ITEM_READER_H_
#define REDBLOOM_TOOLS_ITEM_READER_H_

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include "redbloom/funnel.h"
#include "redbloom/status.h"

namespace redbloom::cli {

// Set by main when the program was started with stdin closed (`<&-`): it
// reads /dev/null there then, so that no file or socket lands on 0.
inline bool g_stdin_closed = false;

// The descriptor a path names by number (/dev/stdout, /dev/stderr,
// /dev/fd/N, /proc/self/fd/N), or -1.
int NamedDescriptor(const std::string& path);

// kInvalidArgument "stdin is not open ..." if `path` names stdin ("-",
// /dev/stdin, /dev/fd/0) and it was closed: reading it as empty input made
// `add --file -` exit 0 having added nothing.
Status CheckStdinOpen(const std::string& path);

// Reads items in batches: the arguments first, then one item per line of
// `path` (a file, "-" for stdin, or "" for none). A trailing "\r" is dropped,
// as Java's readLine does, so files written on Windows give the same items;
// an empty line is the empty-string item, and a last line without "\n"
// counts. Memory stays bounded by one batch however long the input is: a
// line longer than kMaxLineBytes is an input error named by its line (so
// `add -f /dev/zero` fails instead of taking all memory).
class ItemReader {
 public:
  // The longest item a line may hold (after its "\r\n" or "\n"): 1 MiB,
  // redbloomd's largest max_item_bytes.
  static constexpr size_t kMaxLineBytes = size_t{1} << 20;
  // A batch ends after this many bytes of items too, whatever `max`: 65,536
  // items of up to 1 MiB each were 64 GiB (an audit: 594 MB for 6000
  // lines of 100 KB, and bad_alloc under 400 MB).
  static constexpr size_t kMaxBatchBytes = size_t{16} << 20;

  ItemReader(std::vector<std::string> args, std::string path);
  ItemReader(const ItemReader&) = delete;
  ItemReader& operator=(const ItemReader&) = delete;
  ~ItemReader();

  // Opens the file: kUnavailable "cannot open PATH: <errno text>".
  Status Open();

  // Fills `out` with up to `max` items; false when nothing is left. An
  // over-long line is kInvalidArgument "line N of PATH: longer than ...". With
  // `streaming`, a batch ends as soon as no more input is ready, so
  // `tail -f log | redbloom dedup` answers each line as it arrives.
  Result<bool> Next(std::vector<std::string>* out, size_t max, bool streaming = false);

  // Where item i of the last batch came from: "argument 2", "line 70001 of
  // items.txt" or "line 3 of stdin".
  std::string Where(size_t i) const;

  // `s` is the error of handing the last batch (`batch`) to a filter of
  // `encoding`. If an item of the batch cannot be hashed, the error is that
  // item's, named by its place in the input (Where); otherwise `s` as it is.
  Status Locate(const Status& s, Encoding encoding, const std::vector<std::string>& batch) const;

  // A read interrupted by a signal stops with kUnavailable ("interrupted")
  // once *stop is non-zero, instead of reading on: a command that catches
  // SIGINT / SIGTERM (rebuild) then ends its work cleanly. Lines read before
  // the signal come first, as a batch of their own (the command finishes
  // it, then sees the stop); a line not yet ended by its newline is dropped.
  void set_stop(const volatile std::sig_atomic_t* stop) { stop_ = stop; }

  // While it waits for input that is not a regular file (a pipe, `tail -f`),
  // it watches descriptor `fd` (stdout) too: once whatever reads that is gone
  // (a closed pipe), Next fails kUnavailable "cannot write to stdout: ..."
  // instead of waiting on for input whose answers could not be written.
  void set_output(int fd) { output_ = fd; }

  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t total_bytes() const { return total_bytes_; }  // 0 when unknown (a pipe)

 private:
  bool InputReady() const;
  Status TooLong() const;  // the error for line lines_ + 1
  Status Fill();
  std::string Name() const { return path_ == "-" ? "stdin" : path_; }
  const volatile std::sig_atomic_t* stop_ = nullptr;
  int output_ = -1;
  bool regular_ = false;  // the file is a regular file: a read never waits

  std::vector<std::string> args_;
  std::string path_;
  size_t next_arg_ = 0;
  int fd_ = -1;
  std::string buf_;
  // What one read(2) takes, on the heap: on the stack, 64 KiB segfaulted
  // under `ulimit -s 64` (an audit).
  std::vector<char> chunk_;
  size_t pos_ = 0;
  bool eof_ = false;
  uint64_t lines_ = 0;  // lines of the file read so far
  uint64_t bytes_read_ = 0;
  uint64_t total_bytes_ = 0;
  // The last batch: its arguments (from index batch_first_arg_), then file
  // lines from line batch_first_line_ (1-based).
  size_t batch_first_arg_ = 0;
  size_t batch_args_ = 0;
  uint64_t batch_first_line_ = 1;
};

}  // namespace redbloom::cli

#endif  // REDBLOOM_TOOLS_ITEM_READER_H_
