// add, check and remove: items in, one answer each out. Internal to the CLI.
#ifndef REDBLOOM_TOOLS_ITEMS_COMMAND_H_
#define REDBLOOM_TOOLS_ITEMS_COMMAND_H_

#include <string>
#include <vector>

#include "cli.h"

namespace redbloom::cli {

enum class ItemOp { kAdd, kCheck, kRemove };

// Runs `op` on filter `name` for the items given as `args`, or read from
// `file` ("-" for stdin), in chunks. Prints "1<TAB>item" or "0<TAB>item"
// per item (nothing if `quiet`), or one JSON document (`json`). Returns the
// exit code: 0; 1 for a check that found an absent item or a remove of one
// that was not there; 128+N for an add or remove stopped by signal N after
// the chunk in hand; else the error's (ExitCodeFor).
int RunItems(Context& ctx, const std::string& name, const std::vector<std::string>& args,
             const std::string& file, bool quiet, bool json, ItemOp op);

}  // namespace redbloom::cli

#endif  // REDBLOOM_TOOLS_ITEMS_COMMAND_H_
