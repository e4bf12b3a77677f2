// Pieces shared by the redbloom CLI's command files. Internal to the CLI.
#ifndef REDBLOOM_TOOLS_CLI_H_
#define REDBLOOM_TOOLS_CLI_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "exit_codes.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/filter_config.h"
#include "redbloom/status.h"
#include "redbloom/store.h"

namespace redbloom::cli {

// "[unavailable]", or with the failure's reason "[unavailable: answers_lost]".
std::string CodeTag(const Status& s);

// Prints "redbloom: error: <message> [<code>]" and returns the exit code.
int Fail(const Status& s);

// Fail(s), for a write command that stops on an error after writing to
// `filter`: what it wrote is made durable (msync on file:) all the same, as
// a run that ends well makes it, and a sync that fails too is said.
int FailAfterWrites(const Status& s, BloomFilter& filter);

// `message` with its control characters escaped (\n, \r, \t, \xNN), so an
// error naming a path or an item with a line break in it stays one line,
// as the README promises.
std::string OneLine(std::string_view message);

// A failed write of `what` ("to stdout", a path) with errno `err`: "cannot
// write <what>: <errno text>", kResourceExhausted for a full disk (as the
// stores report it), else kUnavailable.
Status WriteError(const std::string& what, int err);

// Writes `text` to stdout and flushes it. A failed write (a full device, a
// pipe whose reader is gone: the CLI ignores SIGPIPE) is "cannot write to
// stdout: <errno text>", kResourceExhausted for a full disk, else
// kUnavailable (exit 3); every write after it fails too.
Status WriteStdout(std::string_view text);
// Flushes what is buffered for stdout; the error as WriteStdout's.
Status FlushStdout();

// For --file: an empty value (an unset shell variable) is an error, not "no
// file". Read as none, `rebuild --file "$F"` swapped in an empty filter.
inline const CLI::Validator& NonEmptyPath() {
  static const CLI::Validator kValidator(
      [](const std::string& path) {
        return path.empty() ? std::string("needs a path (or - for standard input or output)")
                            : std::string();
      },
      "PATH");
  return kValidator;
}

// For the flags that take a value: an empty one (`--ttl "$TTL"` with TTL
// unset) is an error, not "not given". Read as not given, an empty --ttl
// made a filter that never expires, and said nothing.
inline const CLI::Validator& NonEmptyValue() {
  static const CLI::Validator kValidator(
      [](const std::string& value) {
        return value.empty()
                   ? std::string("needs a value (an empty one is most likely an unset variable)")
                   : std::string();
      },
      "");
  return kValidator;
}

struct Context {
  std::string store_url;
  // No --store, and REDBLOOM_STORE set but empty (`REDBLOOM_STORE="$URL"`
  // with URL unset): a mistake, as an empty --store is, not a wish for the
  // default store.
  bool store_env_empty = false;
  // store_url came from REDBLOOM_STORE (no --store): its errors name it.
  bool store_from_env = false;
  std::unique_ptr<Store> store;
  bool warned_mem = false;

  // Opens store_url (kInvalidArgument if store_env_empty); for mem:, warns
  // on stderr (once) that nothing persists.
  Status OpenStore();
};

// Options shared by the commands that size a filter.
struct SizingFlags {
  std::string capacity;
  std::string error;
  std::string strategy{StrategyName(kDefaultStrategy)};
  std::string encoding = "utf8";
  // Kinds (create and rebuild only).
  bool counting = false;
  bool scaling = false;
  std::string expansion;
  std::string window;
  std::string slices;
  std::string ttl;
  std::string shards;

  void AddKindsTo(CLI::App* cmd) {
    cmd->add_option("--shards", shards,
                    "Redis only: split a plain or counting filter over this many keys (1-1024), "
                    "each in its own cluster slot, to pass one key's 512 MB and spread the load")
        ->check(NonEmptyValue());
    cmd->add_flag("--counting", counting,
                  "Counting filter: 4-bit counters, so items can be removed (4x the memory)");
    cmd->add_flag("--scaling", scaling,
                  "Scaling filter: grows by sub-filters when full, keeping the error rate");
    cmd->add_option("--expansion", expansion,
                    "Scaling: capacity factor of each new sub-filter (default 2)")
        ->check(NonEmptyValue());
    cmd->add_option("--window", window,
                    "Time-window filter: remember items for this long (e.g. 24h, 90m, 30s)")
        ->check(NonEmptyValue());
    cmd->add_option("--slices", slices, "Time-window: sub-filters in the window (e.g. 24)")
        ->check(NonEmptyValue());
    cmd->add_option("--ttl", ttl, "Delete the whole filter this long after creation (e.g. 7d)")
        ->check(NonEmptyValue());
  }

  // Whether --capacity and --error must be given.
  enum class Need {
    kRequired,
    // attach: both may be left out when the Java side records them
    // (Redisson's config hash).
    kJavaRecorded,
    // dedup: given, they (and the kind flags) create the filter if it is
    // missing; left out, the filter must exist.
    kCreateIfMissing,
    // rebuild: what is left out is the filter's own (RebuildOptions).
    kFromExisting,
  };
  Need need = Need::kRequired;
  const CLI::Option* strategy_option = nullptr;
  const CLI::Option* encoding_option = nullptr;

  void AddTo(CLI::App* cmd, std::string_view default_strategy, Need how = Need::kRequired) {
    strategy = std::string(default_strategy);
    need = how;
    const std::string capacity_help =
        how == Need::kCreateIfMissing
            ? "Create the filter if it does not exist, sized for this many distinct items (with "
              "--error and the flags of create below)"
            : "Expected number of distinct items (e.g. 1000000 or 1e6)" +
                  std::string(how == Need::kJavaRecorded
                                  ? "; leave out with --error to take those Redisson recorded "
                                    "(strategy redisson)"
                              : how == Need::kFromExisting
                                  ? "; leave out with --error to keep the filter's own"
                                  : "");
    auto* n = cmd->add_option("--capacity,-n", capacity, capacity_help)->check(NonEmptyValue());
    auto* p = cmd->add_option("--error,-p", error,
                              "Target false-positive rate, strictly between 0 and 1 (redisson: 0 "
                              "to 1, as Redisson takes it)")
                  ->check(NonEmptyValue());
    if (how == Need::kRequired) {
      n->required();
      p->required();
    }
    std::string help = "Index strategy:";
    for (Strategy s : Strategies()) {
      help += "\n  " + std::string(StrategyName(s)) + ": " + std::string(StrategySummary(s));
    }
    std::string encoding_help = "Item encoding: utf8, utf8x2, int32, int64 or bytes";
    if (how == Need::kFromExisting) {
      help += "\n(default: the filter's own)";
      encoding_help += " (default: the filter's own)";
    }
    auto* s = cmd->add_option("--strategy", strategy, help)->check(NonEmptyValue());
    auto* e = cmd->add_option("--encoding", encoding, encoding_help)->check(NonEmptyValue());
    if (how != Need::kFromExisting) {
      s->capture_default_str();
      e->capture_default_str();
    }
    strategy_option = s;
    encoding_option = e;
  }

  // Whether any flag that sizes or shapes a new filter was given.
  bool given() const {
    return !capacity.empty() || !error.empty() || counting || scaling || !expansion.empty() ||
           !window.empty() || !slices.empty() || !ttl.empty() || !shards.empty() ||
           (strategy_option != nullptr && strategy_option->count() > 0) ||
           (encoding_option != nullptr && encoding_option->count() > 0);
  }

  Result<FilterOptions> Parse() const {
    FilterOptions o;
    if (need == Need::kJavaRecorded && capacity.empty() && error.empty()) {
      // Both 0: BloomFilter::Attach reads what the Java side recorded.
      REDBLOOM_ASSIGN_OR_RETURN(o.strategy, ParseStrategy(strategy));
      REDBLOOM_ASSIGN_OR_RETURN(o.encoding, ParseEncoding(encoding));
      return o;
    }
    if (capacity.empty() || error.empty()) {
      return Status::InvalidArgument(
          "give both --capacity and --error" +
          std::string(need == Need::kJavaRecorded
                          ? ", or neither to take those the Java side recorded (strategy redisson)"
                      : need == Need::kCreateIfMissing
                          ? " to create the filter if it does not exist, or none of the flags of "
                            "create to use an existing filter"
                          : ""));
    }
    REDBLOOM_ASSIGN_OR_RETURN(o.capacity, Capacity());
    REDBLOOM_ASSIGN_OR_RETURN(o.error_rate, ErrorRate());
    REDBLOOM_ASSIGN_OR_RETURN(o.strategy, ParseStrategy(strategy));
    REDBLOOM_ASSIGN_OR_RETURN(o.encoding, ParseEncoding(encoding));
    const int kinds = (counting ? 1 : 0) + (scaling ? 1 : 0) + (window.empty() ? 0 : 1);
    if (kinds > 1) {
      return Status::InvalidArgument("--counting, --scaling and --window exclude each other");
    }
    if (counting) o.kind = FilterKind::kCounting;
    if (scaling) o.kind = FilterKind::kScaling;
    if (!expansion.empty()) {
      if (!scaling) return Status::InvalidArgument("--expansion needs --scaling");
      auto x = ParseDouble(expansion);
      if (!x.ok()) return x.status().WithContext("--expansion");
      o.expansion = *x;
    }
    if (!window.empty()) {
      o.kind = FilterKind::kWindow;
      auto w = ParseDurationMillis(window);
      if (!w.ok()) return w.status().WithContext("--window");
      o.window_millis = *w;
      if (slices.empty()) return Status::InvalidArgument("--window needs --slices");
    }
    if (!slices.empty()) {
      if (window.empty()) return Status::InvalidArgument("--slices needs --window");
      auto sl = ParseUint64(slices);
      if (!sl.ok() || *sl > kMaxSlices) {
        return Status::InvalidArgument("--slices must be a number from 1 to 1024");
      }
      o.slices = static_cast<uint32_t>(*sl);
    }
    if (!shards.empty()) {
      auto sh = ParseUint64(shards);
      if (!sh.ok() || *sh < 1 || *sh > kMaxShards) {
        return Status::InvalidArgument("--shards must be a number from 1 to " +
                                       std::to_string(kMaxShards));
      }
      o.shards = static_cast<uint32_t>(*sh);
    }
    if (!ttl.empty()) {
      REDBLOOM_ASSIGN_OR_RETURN(o.ttl_seconds, TtlSeconds());
    }
    return o;
  }

  // The flags' values, each checked and named in its error (given flags
  // only: the caller asks for those that are not empty).
  Result<uint64_t> Capacity() const {
    auto n = ParseUint64(capacity);
    if (n.ok() && *n < (uint64_t{1} << 63)) return *n;
    // Past 2^64 is past a capacity's own bound, which is said, not 2^64's;
    // and said alike on either side of 2^64.
    if (auto x = ParseDouble(capacity); n.ok() || (x.ok() && *x >= 0x1p63)) {
      return Status::InvalidArgument("--capacity must be below 2^63, not " + capacity);
    }
    return n.status().WithContext("--capacity");
  }
  Result<double> ErrorRate() const {
    auto p = ParseDouble(error);
    if (!p.ok()) return p.status().WithContext("--error");
    return *p;
  }
  Result<uint64_t> TtlSeconds() const {
    auto t = ParseDurationMillis(ttl);
    if (!t.ok()) return t.status().WithContext("--ttl");
    if (*t < 1000) return Status::InvalidArgument("--ttl must be at least 1s");
    // Filters keep whole seconds (as the service's ttl_seconds): 1500ms was
    // silently 1 s.
    if (*t % 1000 != 0) {
      return Status::InvalidArgument(
          "--ttl must be whole seconds (a TTL is kept in seconds); got '" + ttl + "'");
    }
    return *t / 1000;
  }
};

// Long-running commands (add, check, remove and dedup on a stream, a load in
// batches) check once a second at most that their handle still reads the
// file their filter's name holds (BloomFilter::Revalidate, as redbloomd
// does): a rebuild killed between its swap and flagging the old file left
// `tail -f | redbloom add` adding to the old, unlinked file for good (an
// audit: every add after the swap acknowledged and lost).
class Revalidator {
 public:
  explicit Revalidator(BloomFilter& filter)
      : filter_(filter), last_(std::chrono::steady_clock::now()) {}
  Status Due() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(1)) return Status::Ok();
    last_ = now;
    return filter_.Revalidate();
  }

 private:
  BloomFilter& filter_;
  std::chrono::steady_clock::time_point last_;
};

// Registers load, import, export, merge, dedup and rebuild on `app`. Returns a function
// that runs whichever of them was parsed, or -1 if none was.
std::function<int()> AddBulkCommands(CLI::App& app, Context& ctx);

}  // namespace redbloom::cli

#endif  // REDBLOOM_TOOLS_CLI_H_
