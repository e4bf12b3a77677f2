// Helpers shared by the tests.
#ifndef REDBLOOM_TESTS_TEST_UTIL_H_
#define REDBLOOM_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/status.h"
#include "util/sanitizers.h"

// ASSERT_OK_AND_ASSIGN(auto x, Call()): a fatal test failure that names the
// status when Call() fails, so a test never reads a failed Result (which
// aborts). For test bodies and other functions returning void.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  REDBLOOM_ASSERT_OK_AND_ASSIGN_IMPL_(REDBLOOM_CONCAT_(_rb_assert_, __LINE__), lhs, expr)
#define REDBLOOM_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)          \
  auto tmp = (expr);                                                 \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().ToString(); \
  lhs = std::move(tmp).value()

namespace redbloom::testing {

// Whether this is a ThreadSanitizer build (scripts/tsan.sh), whose shadow
// memory makes a process's resident size about five times what it touches
// (5.5x in bulk_test): tests that bound a process's memory say so and leave
// it to the other builds.
inline constexpr bool kThreadSanitizer = internal::kThreadSanitizer;

// Whether this build runs under AddressSanitizer, whose shadow memory needs
// terabytes of address space: a test that limits a process's address space
// cannot hold under it.
inline constexpr bool kAddressSanitizer = internal::kAddressSanitizer;

// The value of `r`; if it failed, a (non-fatal) test failure at the caller's
// line that names the status, and T{}. For reading a Result inside an
// expectation, e.g. EXPECT_TRUE(ValueOrFail(f->Contains("x"))), without ever
// reading a failed Result.
template <typename T>
T ValueOrFail(Result<T> r, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  if (!r.ok()) {
    ADD_FAILURE_AT(file, line) << r.status().ToString();
    return T{};
  }
  return std::move(r).value();
}

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;  // -1 if killed by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] with arguments (no shell), feeding `input` on stdin.
// `env` entries ("NAME=value") are added to the environment.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input = "",
                         const std::vector<std::string>& env = {});

// Splits on '\n', dropping one trailing empty line.
std::vector<std::string> Lines(const std::string& text);

// The last `max` bytes of a file ("(empty)" if there are none): a server's
// log, quoted in an error because the log goes with its temporary directory.
std::string FileTail(const std::string& path, size_t max = 600);

// A free TCP port on 127.0.0.1, outside the kernel's ephemeral range (so no
// outgoing connection takes it before a server binds it), never the same
// twice in one process, nor one another test process has claimed.
int FreePort();

// The file whose byte N, write-locked by a test process, claims port N for
// it (FreePort's claims are open file description locks, F_OFD_SETLK).
std::string PortClaimsPath();

// Write-locks byte `offset` of `fd` with an open file description lock,
// without waiting: false if another description holds it.
bool LockByte(int fd, int offset);

// Takes every memory mapping vm.max_map_count leaves this process (pages of
// alternating protection, each its own mapping; then a few more of a memfd
// for what the last split left): the next mmap fails ENOMEM. For a forked
// child only (the memory is never given back); false if the limit was not
// reached. Under ASan or TSan the allocators map memory as they go and fail
// there, so callers run it in the normal build.
bool TakeEveryMapping();

// Runs `child` in a child of fork() and returns its exit code (what it
// returns; it leaves with _exit, no destructor or atexit handler run), or
// -1 if a signal ended it. For tests of what a store does across a fork.
int ExitCodeOfChild(const std::function<int()>& child);

// Adds `items` from `threads` threads at once, each its own equal share in
// calls of `per_call` items; each thread's first failure (or Ok).
std::vector<Status> AddFromThreads(BloomFilter& filter, std::span<const std::string_view> items,
                                   int threads, size_t per_call);

// An input whose bytes change once it is read again from an earlier point,
// as a dump file rewritten while it is imported (the import checks the whole
// input, then reads it again to write it).
class ChangingBuf : public std::stringbuf {
 public:
  // `on_change` runs as the bytes change (after the import created its
  // filter: it reads the input again once that is done).
  ChangingBuf(std::string first, std::string second, std::function<void()> on_change = {})
      : std::stringbuf(std::move(first), std::ios_base::in),
        second_(std::move(second)),
        on_change_(std::move(on_change)) {}

 protected:
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    if (!second_.empty() && pos < gptr() - eback()) {
      str(std::move(second_));
      second_.clear();
      if (on_change_) on_change_();
    }
    return std::stringbuf::seekpos(pos, which);
  }

 private:
  std::string second_;
  std::function<void()> on_change_;
};

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_TEST_UTIL_H_
