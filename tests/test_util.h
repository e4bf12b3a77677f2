// Helpers shared by the tests.
#ifndef REDBLOOM_TESTS_TEST_UTIL_H_
#define REDBLOOM_TESTS_TEST_UTIL_H_

#include <string>
#include <vector>

namespace redbloom::testing {

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

// Finds a free TCP port on 127.0.0.1 (bind to 0, read, close).
int FreePort();

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_TEST_UTIL_H_
