// The CLI's exit codes: a contract scripts rely on (README, "Exit codes").
#ifndef REDBLOOM_TOOLS_EXIT_CODES_H_
#define REDBLOOM_TOOLS_EXIT_CODES_H_

#include "redbloom/status.h"

namespace redbloom::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitAbsent = 1;  // check: an item is surely absent; remove: one was not there
inline constexpr int kExitUsage = 2;   // invalid arguments or input
inline constexpr int kExitIo = 3;      // store or I/O error, including a store out of room
inline constexpr int kExitNotFound = 4;  // no such filter, or it exists with other parameters

// The exit code for a status; the one place where codes become exit codes.
int ExitCodeFor(const Status& status);

}  // namespace redbloom::cli

#endif  // REDBLOOM_TOOLS_EXIT_CODES_H_
