// Pieces shared by the redbloom CLI's command files. Internal to the CLI.
#ifndef REDBLOOM_TOOLS_CLI_H_
#define REDBLOOM_TOOLS_CLI_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "redbloom/status.h"
#include "redbloom/store.h"

namespace redbloom::cli {

inline constexpr int kExitAbsent = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitIo = 3;

// Prints "redbloom: error: <message> [<code>]" and returns the exit code.
int Fail(const Status& s);

struct Context {
  std::string store_url;
  std::unique_ptr<Store> store;

  Status OpenStore();
};

// Registers load, import, export, merge and dedup on `app`. Returns a function
// that runs whichever of them was parsed, or -1 if none was.
std::function<int()> AddBulkCommands(CLI::App& app, Context& ctx);

}  // namespace redbloom::cli

#endif  // REDBLOOM_TOOLS_CLI_H_
