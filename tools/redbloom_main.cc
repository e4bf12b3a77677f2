// redbloom: the command-line front end. It uses the public library API only.
//
// Its text interface is a contract scripts rely on (README, "CLI"):
//   add/check print one line per item, "1<TAB>item" or "0<TAB>item";
//   exit codes: 0 ok (check: all present), 1 check found an absent item or
//   remove one that was not there, 2 invalid arguments or input, 3 store or
//   I/O error, 4 filter not found or exists with other parameters, 128+N a
//   rebuild or import stopped by signal N.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "build_id.h"
#include "cli.h"
#include "frontend/existing_ttl.h"
#include "frontend/info_json.h"
#include "item_reader.h"
#include "items_command.h"
#include "redbloom/bloom_filter.h"
#include "redbloom/filter_config.h"
#include "redbloom/store.h"
#include "util/errno_text.h"
#include "util/fd_above_stdio.h"
#include "util/out_of_memory.h"

namespace redbloom::cli {

std::string CodeTag(const Status& s) {
  std::string tag = "[" + std::string(StatusCodeName(s.code()));
  if (s.reason() != StatusReason::kNone) tag += ": " + std::string(StatusReasonName(s.reason()));
  return tag + "]";
}

std::string OneLine(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

int Fail(const Status& s) {
  std::cerr << "redbloom: error: " << OneLine(s.message()) << " " << CodeTag(s) << "\n";
  return ExitCodeFor(s);
}

int FailAfterWrites(const Status& s, BloomFilter& filter) {
  const int code = Fail(s);
  if (Status synced = filter.Flush(); !synced.ok()) {
    std::cerr << "redbloom: error: and what was written before it may not be durable: "
              << OneLine(synced.message()) << " " << CodeTag(synced) << "\n";
  }
  return code;
}

Status WriteError(const std::string& what, int err) {
  const std::string message = "cannot write " + what + ": " + internal::ErrnoText(err);
  if (internal::IsNoRoom(err)) return Status::ResourceExhausted(message);
  return Status::Unavailable(message);
}

Status WriteStdout(std::string_view text) {
  // errno of the write that failed: the stream keeps only that one failed.
  errno = 0;
  std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::cout.flush();
  if (std::cout) return Status::Ok();
  if (errno == 0) return Status::Unavailable("cannot write to stdout");
  return WriteError("to stdout", errno);
}

Status FlushStdout() { return WriteStdout({}); }

Status Context::OpenStore() {
  if (store_env_empty) {
    return Status::InvalidArgument(
        "REDBLOOM_STORE is set but empty: give it a store URL, or unset it for the default "
        "(file:./redbloom-data), or give --store");
  }
  auto s = Store::Open(store_url);
  // A URL that came from the environment is named as such: the error
  // showed a URL the command line never gave.
  if (!s.ok() && store_from_env && s.status().code() == StatusCode::kInvalidArgument) {
    return s.status().WithContext("REDBLOOM_STORE");
  }
  if (!s.ok()) return s.status();
  store = std::move(s).value();
  // mem: lives in this process, so a CLI run's filters end with it: say so,
  // once, since a filter that "vanishes" between two commands looks like a bug.
  if (!Store::TraitsOf(store->url()).value_or(Store::Traits{.persistent = true}).persistent &&
      !warned_mem) {
    warned_mem = true;
    std::cerr << "redbloom: warning: store mem: keeps filters in this process's memory; nothing "
                 "persists past this process (use file:DIR or redis://... to keep them)\n";
  }
  return Status::Ok();
}

namespace {

std::string Yes(bool b) { return b ? "yes" : "no"; }

void PrintInfoText(const FilterInfo& info, const std::string& store_url) {
  const FilterConfig& c = info.config;
  std::cout << "name:              " << info.name << "\n"
            << "store:             " << store_url << "\n"
            << "kind:              " << FilterKindName(c.kind) << "\n"
            << "strategy:          " << StrategyName(c.strategy) << "\n"
            << "encoding:          " << EncodingName(c.encoding) << "\n"
            << "capacity:          " << c.capacity
            << (c.geometry_given ? " (derived from bits and hashes: m ln 2 / k)" : "") << "\n"
            << "error_rate:        " << FormatDouble(c.error_rate)
            << (c.geometry_given ? " (derived from hashes: 2^-k)" : "") << "\n"
            << "geometry:          " << (c.geometry_given ? "given" : "derived") << "\n"
            << "bits:              " << c.geometry.bits << "\n"
            << "hashes:            " << c.geometry.hashes << "\n"
            << "capped:            " << Yes(c.geometry.capped);
  if (c.geometry.capped) {
    std::cout << " (Java's (int) cast saturated the size at 2^31-1 bits; the real error rate at "
                 "capacity is higher than asked)";
  }
  std::cout << "\n";
  if (c.kind == FilterKind::kScaling) {
    std::cout << "expansion:         " << FormatDouble(c.expansion) << "\n"
              << "layers:            " << info.parts << "\n";
  }
  if (c.kind == FilterKind::kWindow) {
    std::cout << "window:            " << c.window_millis << " ms in " << c.slices << " slices\n"
              << "live_slices:       " << info.parts << "\n";
  }
  if (c.shards > 1) std::cout << "shards:            " << c.shards << "\n";
  if (c.ttl_seconds != 0) std::cout << "ttl:               " << c.ttl_seconds << " s\n";
  // As --json: "bits" sizes one part (shard, layer, slice); these count all.
  if (!c.one_array()) std::cout << "total_bits:        " << info.bits << "\n";
  std::cout << "memory_bytes:      " << info.memory_bytes << "\n"
            << "bits_set:          " << info.bits_set
            << (info.bits_set_exact ? "" : " (sampled: parts over 64 MiB are estimated)") << "\n"
            << "items_added:       " << info.items_added << "\n"
            << "approximate_items: "
            << (info.approximate_items == UINT64_MAX ? std::string("unbounded (every bit is set)")
                                                     : std::to_string(info.approximate_items))
            << "\n"
            << "fill_ratio:        " << FormatDouble(info.fill_ratio) << "\n"
            << "current_fpp:       " << FormatDouble(info.current_fpp) << "\n";
}

int RunCreate(Context& ctx, const std::string& name, const SizingFlags& flags, bool attach) {
  auto options = flags.Parse();
  if (!options.ok()) return Fail(options.status());
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  bool created = false;
  auto filter = attach ? BloomFilter::Attach(*ctx.store, name, *options)
                       : BloomFilter::Create(*ctx.store, name, *options, &created);
  if (!filter.ok()) return Fail(filter.status());
  const FilterConfig& c = (*filter)->config();
  if (!attach && !created) {
    if (Status s = frontend::CheckExistingTtl(name, c, *options); !s.ok()) return Fail(s);
  }
  const char* verb = attach ? "attached" : (created ? "created" : "exists (same parameters)");
  std::cerr << verb << " " << name << ": " << c.ToString() << "\n";
  // attach adopts bits: none there most likely means another key than the
  // Java side's (an audit followed the README's plain key against a
  // service whose RedisTemplate writes JDK-serialized keys: every item of
  // the service's then read absent, silently). Said, not refused: attaching
  // before the service has written is a documented way to start.
  if (attach) {
    auto info = (*filter)->Info();
    if (info.ok() && info->bits_set == 0) {
      std::cerr << "redbloom: warning: " << name
                << " holds no bits yet: if a Java service writes this filter, check that this is "
                   "its exact key"
                << (ctx.store->url().find("keys=jdk") == std::string::npos
                        ? " (Spring's default RedisTemplate writes keys JDK-serialized: add "
                          "?keys=jdk to the store URL)"
                        : "")
                << "\n";
    }
  }
  if (c.geometry.capped) {
    std::cerr << "note: the size was capped at 2^31-1 bits, as the Java helper's (int) cast does; "
                 "the error rate at capacity will be above "
              << FormatDouble(c.error_rate) << "\n";
  }
  return 0;
}

int RunInfo(Context& ctx, const std::string& name, bool json) {
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  auto filter = BloomFilter::Open(*ctx.store, name);
  if (!filter.ok()) return Fail(filter.status());
  auto info = (*filter)->Info();
  if (!info.ok()) return Fail(info.status());
  // Setup problems of the store (a Redis that can evict filter keys) go to
  // stderr, and into the JSON for scripts.
  auto warnings = ctx.store->Warnings();
  if (!warnings.ok()) return Fail(warnings.status());
  for (const auto& w : *warnings) std::cerr << "redbloom: warning: " << w << "\n";
  if (json) {
    auto j = frontend::InfoJson(*info, ctx.store->url());
    if (!warnings->empty()) j["warnings"] = *warnings;
    std::cout << j.dump(2) << "\n";
  } else {
    PrintInfoText(*info, ctx.store->url());
  }
  return 0;
}

int RunList(Context& ctx) {
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  auto names = ctx.store->List();
  if (!names.ok()) return Fail(names.status());
  std::string out;
  for (const auto& n : *names) out.append(n).append("\n");
  if (Status wrote = WriteStdout(out); !wrote.ok()) return Fail(wrote);
  // No filters and no directory: most likely a mistyped file: URL, which
  // printed nothing, exit 0, as an empty store does. Said on stderr; stdout
  // and the exit code stay an empty store's.
  if (const std::string dir = ctx.store->directory(); names->empty() && !dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec) && !ec) {
      std::cerr << "redbloom: note: " << OneLine(dir)
                << " does not exist (the first create makes it); no filters\n";
    }
  }
  return 0;
}

int RunDrop(Context& ctx, const std::string& name) {
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  if (Status s = BloomFilter::Drop(*ctx.store, name); !s.ok()) return Fail(s);
  std::cerr << "dropped " << name << "\n";
  return 0;
}

int RunOffsets(const SizingFlags& flags, const std::vector<std::string>& items) {
  auto options = flags.Parse();
  if (!options.ok()) return Fail(options.status());
  auto config = MakeConfig(*options);
  if (!config.ok()) return Fail(config.status());
  std::string out;
  for (size_t n = 0; n < items.size(); ++n) {
    auto offsets = ItemOffsets(*config, items[n]);
    if (!offsets.ok()) {
      return Fail(offsets.status().WithContext("argument " + std::to_string(n + 1)));
    }
    for (size_t i = 0; i < offsets->size(); ++i) {
      if (i > 0) out += ' ';
      out += std::to_string((*offsets)[i]);
    }
    out += '\n';
  }
  // Written at once, so a failure keeps its reason (a stream that failed
  // part way loses it by the final flush).
  if (Status wrote = WriteStdout(out); !wrote.ok()) return Fail(wrote);
  return 0;
}

// Whether `name` ("--json") is an option of the app or of one of its
// commands that takes no value (a flag).
bool IsFlag(CLI::App& app, const std::string& name) {
  const auto flag = [&](const CLI::App& a) {
    const CLI::Option* o = a.get_option_no_throw(name);
    return o != nullptr && o->get_expected_max() == 0;
  };
  if (flag(app)) return true;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (flag(*sub)) return true;
  }
  return false;
}

// The arguments, with "--name=" (an empty value, as --name "" is) given to
// CLI11 as "--name" "": it took the next word for the value ("--store=
// list" was "A subcommand is required", "--error= -p 0.1" an unexpected
// 0.1). Not a flag's ("--json=" is the flag: split, its "" was an item).
// After a "--" every word is the user's.
std::vector<std::string> EmptyValuesSplit(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args;
  bool ended = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    ended = ended || a == "--";
    if (!ended && a.size() > 3 && a.starts_with("--") && a.find('=') == a.size() - 1 &&
        !IsFlag(app, std::string(a.substr(0, a.size() - 1)))) {
      args.emplace_back(a.substr(0, a.size() - 1));
      args.emplace_back();
    } else {
      args.emplace_back(a);
    }
  }
  return args;
}

// CLI11, like getopt, reads every argument after "--" as a positional: that
// is how a name starting with "-" is given. A command whose one positional is
// NAME also takes its options after such a name: "create -- -x -n 10 -p 0.1"
// is read as "create -n 10 -p 0.1 -- -x". (Commands with items keep getopt's
// rule: "add -- -x -a" adds the item "-a" to the filter "-x".)
std::vector<std::string> OptionsBeforeDashedName(const CLI::App& app,
                                                 std::vector<std::string> args) {
  const CLI::App* cmd = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      if (cmd == nullptr || i + 1 >= args.size()) return args;
      const auto positionals =
          cmd->get_options([](const CLI::Option* o) { return o->get_positional(); });
      if (positionals.size() != 1 || positionals[0]->get_items_expected_max() != 1) return args;
      std::string name = std::move(args[i + 1]);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
                 args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      args.push_back("--");
      args.push_back(std::move(name));
      return args;
    }
    if (cmd == nullptr) {
      const auto named =
          app.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == args[i]; });
      if (!named.empty()) cmd = named.front();
    }
  }
  return args;
}

// Leaves hidden positionals (keep_dashes_in, below) out of usage lines.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_option_usage(const CLI::Option* opt) const override {
    return opt->get_group().empty() ? std::string() : CLI::Formatter::make_option_usage(opt);
  }
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string usage = CLI::Formatter::make_usage(app, std::move(name));
    // The space the empty usage above leaves before the line's end.
    if (const size_t end = usage.rfind(" \n"); end != std::string::npos && end + 2 == usage.size())
      usage.erase(end, 1);
    return usage;
  }
};

int Main(int argc, char** argv) {
  CLI::App app{
      "redbloom: Bloom filters in memory, in local files or in plain Redis, byte-compatible with "
      "Guava and the Java Redis helper.\n"
      "Exit codes: 0 ok (check: all present), 1 check found an absent item or remove one that "
      "was not there, 2 invalid arguments or input, 3 store or I/O error, 4 filter not found or "
      "exists with other parameters, 128+N a rebuild, import, add, remove or dedup stopped by "
      "signal N (a rebuild's or import's new filter dropped, a rebuild's old one unchanged; an "
      "add, remove or dedup finished its chunk and synced).\n"
      "A name or item starting with '-' goes after '--' (redbloom add -- -x -y adds -y to -x); "
      "a command whose one argument is NAME takes its options after it too (redbloom create -- "
      "-x -n 1000 -p 0.01).",
      "redbloom"};
  app.formatter(std::make_shared<UsageFormatter>());
  // The commit too (cmake/build_id.cmake): the docs name builds by it.
  app.set_version_flag("--version", "redbloom " REDBLOOM_VERSION_TEXT);
  app.require_subcommand(1);
  app.fallthrough();
  Context ctx;
  ctx.store_url = DefaultStoreUrl();
  const CLI::Option* store_option =
      app.add_option("--store,-s", ctx.store_url,
                     "Store URL: file:DIR, mem:, redis://[user:password@]host[:port][/db], "
                     "rediss:// (TLS), redis+unix://, redis-cluster:// or redis-sentinel:// "
                     "(default $REDBLOOM_STORE, else file:./redbloom-data)");

  std::string name;
  std::vector<std::string> items;
  std::string file;
  bool quiet = false;
  bool json = false;
  SizingFlags create_flags, attach_flags, offsets_flags;

  auto* create =
      app.add_subcommand("create", "Create a filter sized for --capacity items at --error");
  create->add_option("NAME", name, "Filter name")->required();
  create_flags.AddTo(create, StrategyName(kDefaultStrategy));
  create_flags.AddKindsTo(create);

  auto* attach = app.add_subcommand(
      "attach",
      "Adopt a bitmap a Java service already writes (Redis), recording its parameters without "
      "changing a bit; a Redisson RBloomFilter's (--strategy redisson) come from its config "
      "hash");
  attach->add_option("NAME", name, "Filter name: exactly the Redis key the Java service uses")
      ->required();
  attach_flags.AddTo(attach, "seed", SizingFlags::Need::kJavaRecorded);

  // CLI11 (2.1) hands a "--" back to the parent command once every
  // positional has its least count, so "check orders a -- -b" failed on
  // "-b" although "check orders -- -b" worked. A hidden positional that
  // never fills (ITEM takes every value first) keeps "--" in the command.
  std::string unused_after_items;
  auto keep_dashes_in = [&](CLI::App* cmd) {
    cmd->add_option("AFTER-ITEMS", unused_after_items)->group("");
  };
  auto add_item_flags = [&](CLI::App* cmd, std::string_view answer) {
    cmd->add_option("NAME", name, "Filter name")->required();
    cmd->add_option("ITEM", items, "Items (or use --file)");
    keep_dashes_in(cmd);
    cmd->add_option("--file,-f", file, "Read one item per line from PATH, or - for stdin")
        ->check(NonEmptyPath());
    auto* q = cmd->add_flag("--quiet,-q", quiet, "Print nothing; only the exit code tells");
    cmd->add_flag("--json", json,
                  "Print one JSON document: per item {\"item\": ..., \"" + std::string(answer) +
                      "\": true|false}, then the counts (README, \"CLI\")")
        ->excludes(q);
  };
  auto* add = app.add_subcommand(
      "add", "Add items; prints 1<TAB>item if it was new, 0<TAB>item if it may have been there");
  add_item_flags(add, "new");
  auto* check = app.add_subcommand(
      "check",
      "Check items; prints 1<TAB>item if it may be present, 0<TAB>item if it is surely absent; "
      "exit 1 if any is absent");
  add_item_flags(check, "present");
  auto* remove = app.add_subcommand(
      "remove",
      "Remove items from a counting filter; prints 1<TAB>item if removed, 0<TAB>item if it was "
      "not present; exit 1 if any was not");
  add_item_flags(remove, "removed");

  auto* info = app.add_subcommand("info", "Show a filter's parameters and fill");
  info->add_option("NAME", name, "Filter name")->required();
  info->add_flag("--json", json, "Print JSON");

  auto* list = app.add_subcommand("list", "List filters in the store");
  auto* drop = app.add_subcommand("drop", "Delete a filter and its bits");
  drop->add_option("NAME", name, "Filter name")->required();

  auto* offsets = app.add_subcommand(
      "offsets", "Print each item's bit offsets, in the strategy's order, one line per item");
  offsets_flags.AddTo(offsets, StrategyName(kDefaultStrategy));
  offsets->add_option("ITEM", items, "Items")->required();
  keep_dashes_in(offsets);

  auto run_bulk = AddBulkCommands(app, ctx);

  // "A subcommand is required" for `redbloom bogus`, and the main help for
  // `redbloom bogus --help` (exit 0, as if the command were there): name the
  // word taken for a command, and the commands there are.
  auto unknown_command = [&app]() -> bool {
    const std::vector<std::string> rest = app.remaining();
    if (!app.get_subcommands().empty() || rest.empty() || rest.front().starts_with("-")) {
      return false;
    }
    std::string commands;
    for (const CLI::App* c : app.get_subcommands([](CLI::App*) { return true; })) {
      commands += (commands.empty() ? "" : ", ") + c->get_name();
    }
    std::cerr << "redbloom: error: unknown command '" << OneLine(rest.front())
              << "' (commands: " << commands << ") [invalid_argument]\n";
    return true;
  };
  // `redbloom --stor mem: -h` printed the main help, exit 0: CLI11 answers
  // a help or version flag before it refuses what it could not parse.
  // The same for a command's own options: `redbloom add --jsn -h`.
  auto unknown_option = [&app]() -> bool {
    std::vector<std::string> rest = app.remaining();
    std::string command;
    if (!app.get_subcommands().empty()) {
      const CLI::App* sub = app.get_subcommands().front();
      command = sub->get_name() + " ";
      const std::vector<std::string> own = sub->remaining();
      rest.insert(rest.end(), own.begin(), own.end());
      // After "--", words are names and items, whatever they look like.
      rest.erase(std::find(rest.begin(), rest.end(), "--"), rest.end());
      std::erase_if(rest, [](const std::string& a) { return a.size() < 2 || a[0] != '-'; });
    }
    if (rest.empty()) return false;
    std::cerr << "redbloom: error: unknown option '" << OneLine(rest.front()) << "'; see redbloom "
              << command << "--help [invalid_argument]\n";
    return true;
  };
  try {
    auto args = OptionsBeforeDashedName(app, EmptyValuesSplit(app, argc, argv));
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(std::move(args));
  } catch (const CLI::CallForHelp& e) {
    if (unknown_command() || unknown_option()) return kExitUsage;
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    if (unknown_command() || unknown_option()) return kExitUsage;
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    if (unknown_command() || unknown_option()) return kExitUsage;
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (unknown_command()) return kExitUsage;
    // One line, as every error is (README): a script that keeps the last
    // line of stderr keeps the cause.
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    for (char& ch : what) {
      if (ch == '\n') ch = ' ';
    }
    // CLI11's words for a flag given twice ("-p 0.1 ... -p 0"), in ours.
    constexpr std::string_view kTwice = "At Most 1 required but received ";
    if (const size_t at = what.find(kTwice); at != std::string::npos) {
      what.replace(at, kTwice.size(), "given ");
      what += " times; give it once";
    }
    std::cerr << "redbloom: error: " << OneLine(what) << "; see redbloom "
              << (app.get_subcommands().empty() ? ""
                                                : app.get_subcommands().front()->get_name() + " ")
              << "--help [invalid_argument]\n";
    return kExitUsage;
  }

  if (const char* env = std::getenv("REDBLOOM_STORE");
      env != nullptr && store_option->count() == 0) {
    ctx.store_env_empty = *env == '\0';
    ctx.store_from_env = true;
  }
  if (*create) return RunCreate(ctx, name, create_flags, /*attach=*/false);
  if (*attach) return RunCreate(ctx, name, attach_flags, /*attach=*/true);
  if (*add) return RunItems(ctx, name, items, file, quiet, json, ItemOp::kAdd);
  if (*check) return RunItems(ctx, name, items, file, quiet, json, ItemOp::kCheck);
  if (*remove) return RunItems(ctx, name, items, file, quiet, json, ItemOp::kRemove);
  if (*info) return RunInfo(ctx, name, json);
  if (*list) return RunList(ctx);
  if (*drop) return RunDrop(ctx, name);
  if (*offsets) return RunOffsets(offsets_flags, items);
  if (int rc = run_bulk(); rc >= 0) return rc;
  return kExitUsage;
}

}  // namespace
}  // namespace redbloom::cli

int main(int argc, char** argv) {
  // A reader that goes away (`redbloom dedup NAME | head -3`) is a failed
  // write, which each command reports with what it did (exit 3), not a
  // SIGPIPE that kills it silently (141) with lines in the filter that were
  // never delivered.
  ::signal(SIGPIPE, SIG_IGN);
  // A file past the process's file-size limit (`ulimit -f`, a container's
  // fsize) is a write that fails with EFBIG, said as any full disk is
  // (exit 3), not SIGXFSZ, which killed a create with no message (153) and
  // an export with its dump half written.
  ::signal(SIGXFSZ, SIG_IGN);
  // A parent that runs this with the stop signals blocked (a mask exec
  // keeps: some supervisors and language runtimes leave one) made it deaf
  // to them: an add never stopped for SIGTERM (128 + N, synced), and a
  // check was not ended by it. An ignored signal stays ignored (nohup).
  sigset_t stops;
  sigemptyset(&stops);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
  ::sigprocmask(SIG_UNBLOCK, &stops, nullptr);
  // Before anything is opened: a filter file on a closed stdout would take
  // this program's output over its header. Output to a closed stdout still
  // fails (exit 3), as to a full device: dedup's lines and an export's dump
  // exited 0, lost.
  // A closed stdin reads /dev/null then; a command told to read it refuses
  // (CheckStdinOpen), where it took no input as none and exited 0.
  if (!redbloom::internal::OpenClosedStdio(/*output_fails=*/true, &redbloom::cli::g_stdin_closed)) {
    return redbloom::cli::kExitIo;
  }
  try {
    const int rc = redbloom::cli::Main(argc, argv);
    // Every command's output, checked once it is all written: info, list
    // and offsets to a full device exited 0. A run stopped by a signal
    // (128 + N) has said what it may not have written.
    if (redbloom::Status wrote = redbloom::cli::FlushStdout();
        !wrote.ok() && rc != redbloom::cli::kExitIo && rc < 128) {
      return redbloom::cli::Fail(wrote);
    }
    return rc;
  } catch (const std::bad_alloc&) {
    // A command that holds a filter's bits (merge, an import from a pipe)
    // or a long batch of items, past what this process may allocate.
    return redbloom::cli::Fail(
        redbloom::internal::OutOfMemory("the command needs more than this process may allocate"));
  } catch (const std::exception& e) {
    std::cerr << "redbloom: internal error: " << e.what() << "\n";
    return redbloom::cli::kExitIo;
  }
}
