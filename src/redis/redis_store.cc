// redis://host[:port][/db] -- filters shared through plain Redis: the
// namespace of filters (create, attach, list, drop, replace). The cells of an
// open filter are a RedisBitStore (redis_bit_store.h); the key layout is in
// docs/format.md and redis_keys.h, the metadata in redis_meta.h.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "kinds/kind_def.h"
#include "redis/connection_source.h"
#include "redis/redis_bit_store.h"
#include "redis/redis_client.h"
#include "redis/redis_companion.h"
#include "redis/redis_keys.h"
#include "redis/redis_meta.h"
#include "redis/redis_pipeline.h"
#include "redis/redis_scripts.h"
#include "redis/redis_url.h"
#include "redis/redis_warnings.h"
#include "stores.h"
#include "strategy/strategy_def.h"

namespace redbloom::internal {
namespace {

// SETBIT and BITFIELD address at most 2^32 bits (512 MB) in one string.
constexpr uint64_t kMaxBitsPerKey = uint64_t{1} << 32;

// `shardable`: whether shards could hold it (a plain or counting filter
// sized from capacity and error rate, being created rather than attached).
Status CheckSize(std::string_view what, const Geometry& g, uint32_t cell_bits, bool shardable) {
  if (g.bits * cell_bits > kMaxBitsPerKey) {
    return Status::InvalidArgument(
        std::string(what) + " needs " + std::to_string(g.bits * cell_bits) + " bits (" +
        std::to_string((g.bits * cell_bits + 7) / 8) +
        " bytes), but one Redis key holds at most 2^32 bits (536870912 bytes, 512 MiB); use a "
        "larger error rate" +
        (shardable ? ", a smaller capacity, or more shards (create --shards N, \"shards\" in a "
                     "PUT)"
                   : " or a smaller capacity"));
  }
  return Status::Ok();
}

Status CollisionStatus(std::string_view name, std::string_view owner, std::string_view meta_key,
                       KeyMode mode) {
  // The owner's metadata may sit there in the layout of builds before
  // 2026-12-01 (a name with a brace but no hash tag), not as the other of
  // a pair like 'x' and '{x}': where that layout kept it, and this one
  // would not ('a{b', made here, sits at '{rbN}a{b:meta', which the name
  // '{rbN}a{b' also maps to).
  const std::string legacy_key = LegacyMetaKey(owner, mode);
  const bool legacy = !legacy_key.empty() && legacy_key == KeysFor(name, mode).meta;
  return Status::Conflict("filter '" + std::string(name) + "' shares its metadata key '" +
                          std::string(meta_key) + "' with filter '" + std::string(owner) + "' (" +
                          (legacy
                               ? "made by a redbloom build before 2026-12-01, which kept it there"
                               : "names 'x' and '{x}' map to the same key") +
                          "); choose another name");
}

// The one layout a Java side shares (attach adopts it): a plain, unsharded
// bitmap.
bool JavaLayout(const FilterConfig& config) {
  return config.kind == FilterKind::kPlain && config.shards == 1;
}

class RedisStore final : public Store {
 public:
  RedisStore(RedisUrl url, std::shared_ptr<RedisShared> shared)
      : Store(url.options.clock), url_(std::move(url)), shared_(std::move(shared)) {}

  std::string url() const override { return url_.Redacted(); }
  bool OthersMayWrite(const FilterConfig& config) const override {
    return internal::StrategyOf(config.strategy).java_writes_bits && JavaLayout(config);
  }
  std::string Master() const override { return shared_->source->Master(); }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    // A sharded filter's geometry is one shard's.
    REDBLOOM_RETURN_IF_ERROR(
        CheckSize(config.shards > 1 ? "each of the " + std::to_string(config.shards) +
                                          " shards of filter '" + std::string(name) + "'"
                                    : "filter '" + std::string(name) + "'",
                  config.geometry, config.cell_bits(),
                  /*shardable=*/KindOf(config.kind).one_array && !config.geometry_given));
    REDBLOOM_RETURN_IF_ERROR(CheckCompanionPlacement(name, shared_->keys, config));
    REDBLOOM_RETURN_IF_ERROR(CheckNoForeignCompanion(*shared_, name, config, "create"));
    REDBLOOM_RETURN_IF_ERROR(RefuseLegacyLayout(name));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const uint64_t expires_at = FilterExpiry(clock(), config);
    if (config.shards > 1) return CreateSharded(name, config, keys, expires_at);
    // Part 0 is sized now unless the kind's parts all come later (a window
    // filter's time slices); then the first must fit under maxmemory now, or
    // no add ever could (an audit: a create answered "created" and every add
    // 507).
    const uint64_t main_bytes = config.initial_parts() > 0 ? config.data_bytes() : 0;
    uint64_t later_part_bytes = 0;
    if (main_bytes == 0) {
      REDBLOOM_ASSIGN_OR_RETURN(PartSizing first, SizePart(config, 0));
      later_part_bytes = first.bytes(config.cell_bits());
    }
    // Not idempotent: a create whose answer was lost and that is sent again
    // would report kAlreadyExists for the filter it made itself.
    return shared_->source->Run(
        keys.meta, Access::kMaster, /*idempotent=*/false, [&](Connection& c) -> Status {
          // The server zero-fills the bitmap inside the script.
          Connection::LongerWait wait(c, Connection::AllocationWait(main_bytes));
          REDBLOOM_ASSIGN_OR_RETURN(
              ReplyPtr r, EvalWithMeta(c, scripts::kCreate, name, keys, config, main_bytes,
                                       expires_at, "create", {}, later_part_bytes));
          const int64_t code = r->element[0]->integer;
          if (code == 0) return WaitForReplicas(c, *shared_);
          if (code == 1) {
            REDBLOOM_ASSIGN_OR_RETURN(StoredMeta existing, ExistingMeta(r.get(), name));
            return ExistsStatus(name, existing.config, config);
          }
          if (code == 2) {
            const std::string type = ReplyString(r->element[1]);
            if (type != "string") return WrongTypeStatus(DisplayName(name), type);
            return Status::Conflict(
                "key '" + DisplayName(name) +
                "' exists without redbloom metadata (written by another program, "
                "e.g. a Java service?); use attach to adopt it, or delete it");
          }
          if (code == 5 && r->elements >= 3) {
            if (main_bytes > 0) return NoRoom(name, main_bytes, r.get());
            return NoRoom(name, later_part_bytes, r.get(), "a slice's");
          }
          if (code == 6) return ExpiryPast(c, name, expires_at, r.get());
          if (code == 7) return LeftPartsStatus(name, "created");
          if (code >= 8)
            return CompanionCodeStatus(r.get(), name, DisplayCompanion(name, config), config);
          return MetaWrongType(r.get(), name);
        });
  }

  Status Attach(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    if (!JavaLayout(config)) {
      return Status::InvalidArgument("attach adopts one plain, unsharded bitmap only");
    }
    REDBLOOM_RETURN_IF_ERROR(CheckSize("filter '" + std::string(name) + "'", config.geometry,
                                       config.cell_bits(),
                                       /*shardable=*/false));
    REDBLOOM_RETURN_IF_ERROR(CheckCompanionPlacement(name, shared_->keys, config));
    REDBLOOM_RETURN_IF_ERROR(CheckNoForeignCompanion(*shared_, name, config, "attach"));
    REDBLOOM_RETURN_IF_ERROR(RefuseLegacyLayout(name));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const uint64_t expires_at = FilterExpiry(clock(), config);
    // Idempotent: attaching again with the same parameters succeeds.
    return shared_->source->Run(
        keys.meta, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
          REDBLOOM_ASSIGN_OR_RETURN(
              ReplyPtr r, EvalWithMeta(c, scripts::kAttach, name, keys, config, config.data_bytes(),
                                       expires_at, "attach", {}));
          const int64_t code = r->element[0]->integer;
          if (code == 0) return WaitForReplicas(c, *shared_);
          if (code == 1) {
            REDBLOOM_ASSIGN_OR_RETURN(StoredMeta existing, ExistingMeta(r.get(), name));
            if (existing.config.SameFilterAs(config)) return Status::Ok();
            return ExistsStatus(name, existing.config, config);
          }
          if (code == 2) return WrongTypeStatus(DisplayName(name), ReplyString(r->element[1]));
          if (code == 4) {
            return Status::Conflict(
                "key '" + DisplayName(name) + "' is " + std::to_string(r->element[1]->integer) +
                " bytes long, but a filter of " + config.ToString() + " has only " +
                std::to_string(config.data_bytes()) +
                " bytes: whoever wrote it used more bits (another capacity or error rate?); attach "
                "with the writer's exact parameters");
          }
          if (code == 6) return ExpiryPast(c, name, expires_at, r.get());
          if (code == 7) return LeftPartsStatus(name, "attached");
          if (code >= 8)
            return CompanionCodeStatus(r.get(), name, DisplayCompanion(name, config), config);
          return MetaWrongType(r.get(), name);
        });
  }

  Result<FilterConfig> ReadConfig(std::string_view name) override {
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(name));
    return meta.config;
  }

  Result<FilterOptions> ReadForeignOptions(std::string_view name, Strategy strategy) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    return ReadCompanionOptions(*shared_, name, strategy);
  }

  Result<std::vector<std::string>> List() override {
    std::vector<std::string> names;
    // Every server that holds keys is scanned (a cluster's every master).
    Status s = shared_->source->ForEachServer([&](Connection& c) -> Status {
      std::string cursor = "0";
      do {
        CommandBuffer cmd;
        // TYPE needs Redis 6.0; COUNT 1000 bounds each step's server time.
        cmd.Command({"SCAN", cursor, "MATCH", "*:meta", "COUNT", "1000", "TYPE", "hash"});
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
        if (!IsArray(r.get(), 2) || !IsArray(r->element[1], 0)) return Unexpected("SCAN", r.get());
        cursor = ReplyString(r->element[0]);
        const redisReply* keys = r->element[1];
        if (keys->elements == 0) continue;
        CommandBuffer names_cmd;
        for (size_t i = 0; i < keys->elements; ++i) {
          names_cmd.Command({"HGET", ReplyText(keys->element[i]), "name"});
        }
        REDBLOOM_RETURN_IF_ERROR(c.Append(names_cmd));
        for (size_t i = 0; i < keys->elements; ++i) {
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr name, c.Read());
          if (name->type == REDIS_REPLY_ERROR) {
            // Not a reason to leave the filter out: an ACL denial, say.
            Drain(c, keys->elements - i - 1);
            return ReplyErrorStatus(ReplyText(name.get()), c.server());
          }
          const std::string text = ReplyString(name.get());
          // Only hashes that are the metadata of the name they hold, in this
          // store's key mode, are filters; anything else merely ends in :meta.
          // A name with a brace but no hash tag whose metadata is where
          // builds before 2026-12-01 kept it is listed too: its reads and
          // creates refuse it, naming that layout (RefuseLegacyLayout), and
          // a listing that left it out hid it from an operator after an
          // upgrade.
          const std::string_view key = ReplyText(keys->element[i]);
          if (name->type != REDIS_REPLY_STRING || !ValidateFilterName(text).ok() ||
              (KeysFor(text, shared_->keys).meta != key &&
               LegacyMetaKey(text, shared_->keys) != key)) {
            continue;
          }
          names.push_back(text);
        }
      } while (cursor != "0");
      return Status::Ok();
    });
    if (!s.ok()) return s;
    // SCAN may return a key more than once.
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

  // Runs a script over a filter's keys and all its parts' keys, read just
  // before. The parts change only when a client adds one: a script that finds
  // other parts than it was given answers 2 and runs again with a fresh list
  // (a few times at most in practice). `interpret` gets any other answer, an
  // array whose first element is an integer. A `build` that takes the
  // fields that are no part numbers too (PartNumbers' strays) gets them;
  // with one that does not, they are refused.
  template <typename Build, typename Interpret>
  Status WithParts(Connection& c, const FilterKeys& keys, std::string_view name,
                   std::string_view doing, Build build, Interpret interpret) {
    constexpr bool kTakesStrays =
        std::is_invocable_v<Build&, const std::vector<uint64_t>&, const std::vector<std::string>&,
                            CommandBuffer*>;
    std::vector<std::string> strays;
    for (int round = 0; round < 100; ++round) {
      REDBLOOM_ASSIGN_OR_RETURN(auto parts,
                                PartNumbers(c, keys, name, kTakesStrays ? &strays : nullptr));
      CommandBuffer cmd;
      if constexpr (kTakesStrays) {
        build(parts, strays, &cmd);
      } else {
        build(parts, &cmd);
      }
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
      if (!IsArray(r.get(), 1) || r->element[0]->type != REDIS_REPLY_INTEGER) {
        return Unexpected(doing, r.get());
      }
      if (r->element[0]->integer == 2) continue;
      return interpret(r.get());
    }
    return Status::Unavailable("filter '" + std::string(name) +
                               "' kept gaining parts while being " + std::string(doing) +
                               "; try again");
  }

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    // A sharded filter's shards live in other slots: the metadata goes first
    // (the filter is gone for every client at once), then the shards. A drop
    // cut short between the two leaves shards nobody reads; the next create
    // of the name replaces them. The metadata step checks that the filter is
    // still the one read here (its shard token): one dropped and made again
    // in between has shards this drop would not know of, so it reads again.
    for (int round = 0; round < 3; ++round) {
      auto meta = ReadMeta(name, /*wait_ready=*/false);
      const uint32_t shards = meta.ok() ? meta->config.shards : 1;
      // Metadata that cannot be read (corrupt) must still be droppable.
      std::string token = "*";
      if (meta.ok()) {
        token = meta->shard_token;
      } else if (meta.status().code() == StatusCode::kNotFound) {
        token.clear();
      }
      // A window's slices in or near its window go too, listed or not: a
      // slice whose list entry was evicted would outlive the drop, and a
      // filter made again alike would read its bits as lost (data_loss)
      // until it expired. They go in the drop's own script, so never a
      // slice of a filter made after it.
      std::vector<uint64_t> slices;
      if (const TimeParts* t = meta.ok() ? KindOf(meta->config.kind).time_parts : nullptr) {
        const auto [first, last] = t->may_exist(meta->config, shared_->options.clock->NowMillis());
        for (uint64_t p = first; p <= last; ++p) slices.push_back(p);
      }
      bool made_again = false;
      Status dropped = DropMain(name, keys, token, slices, &made_again);
      if (made_again) continue;
      // Nothing to drop: what ReadMeta found instead is said, not "does not
      // exist" alone while keys stay (a filter of the old layout of braced
      // names; a filter whose metadata went, whose remains redbloom cannot
      // tell are all its own, so it does not delete them).
      if (dropped.code() == StatusCode::kNotFound && !meta.ok() &&
          (meta.status().code() == StatusCode::kNotFound ||
           meta.status().code() == StatusCode::kConflict)) {
        return meta.status();
      }
      if (!dropped.ok() || shards == 1) return dropped;
      // The filter is gone; what is left of it is not one a second drop
      // finds. The error said "retry", and the retry answered not_found
      // and deleted nothing (an audit: a third of a filter's memory left).
      Status left = DropShards(name, shards, token);
      if (left.ok()) return left;
      const ShardKeys first = ShardKeysFor(name, shared_->keys, 1, shards);
      return left.WithContext(
          "filter '" + std::string(name) +
          "' is dropped (its metadata is gone: every client reads it as not found), but keys of "
          "its other " +
          std::to_string(shards - 1) +
          " shards could not all be deleted, and stay unread: a second drop does not find them; "
          "the next create of the name with " +
          std::to_string(shards) + " shards replaces them, or delete them by hand (" +
          DisplayKey(first.meta, shared_->keys) + " and " +
          DisplayKey(first.bitmap, shared_->keys) + " for shard 1, alike for the others)");
    }
    return Status::Conflict("filter '" + std::string(name) +
                            "' kept being made again while it was dropped; try again");
  }

  // A sharded filter: its metadata first (as the lock: of racing creators one
  // wins, the others see the filter exist), marked not ready; then every
  // shard, each a script in its own slot; then ready. Readers wait for ready.
  Status CreateSharded(std::string_view name, const FilterConfig& config, const FilterKeys& keys,
                       uint64_t expires_at) {
    const std::string fresh = NewIncarnation();
    std::string token = fresh;
    REDBLOOM_RETURN_IF_ERROR(ClaimSharded(name, config, keys, &token, &expires_at));
    Status placed = PlaceShards(name, config, token, expires_at);
    if (placed.code() == StatusCode::kResourceExhausted && token == fresh) {
      // Out of memory (a shard refused, or OOM): the shards placed so far
      // would hold the server past its limit for a filter no one can use,
      // and every write to any filter would fail OOM. This create made the
      // filter, so it takes it back, unless another create has finished it
      // (or the name was dropped and made again) meanwhile.
      if (std::optional<Status> back = TakeBackUnready(name, config, keys, token, placed)) {
        return *back;
      }
    }
    REDBLOOM_RETURN_IF_ERROR(
        placed.WithContext("creating the shards of filter '" + std::string(name) + "'"));
    return MarkShardsReady(name, config, keys, token);
  }

  // The sharded create's metadata step: OK when this create goes on to place
  // the shards, with *token and *expires_at those of the create it finishes
  // (its own, or one that stopped before its shards were all placed).
  Status ClaimSharded(std::string_view name, const FilterConfig& config, const FilterKeys& keys,
                      std::string* token_out, uint64_t* expires_at_out) {
    std::string& token = *token_out;
    uint64_t& expires_at = *expires_at_out;
    bool won = false;
    uint64_t room = 0;
    Status s = shared_->source->Run(
        keys.meta, Access::kMaster, /*idempotent=*/false, [&](Connection& c) -> Status {
          Connection::LongerWait wait(c, Connection::AllocationWait(config.data_bytes()));
          room = ShardBytesBeside(name, config, keys);
          REDBLOOM_ASSIGN_OR_RETURN(
              ReplyPtr r,
              EvalWithMeta(c, scripts::kCreate, name, keys, config, config.data_bytes(), expires_at,
                           "create", {{"shard_token", token}, {"shards_ready", "0"}}, room));
          const int64_t code = r->element[0]->integer;
          if (code == 0) {
            won = true;
            return Status::Ok();
          }
          if (code == 1) {
            REDBLOOM_ASSIGN_OR_RETURN(StoredMeta existing, ExistingMeta(r.get(), name));
            // A create of this filter that stopped before its shards were
            // all in place (WAIT found too few replicas, or the client
            // died): finish it, with its token and expiry, so that
            // repeating the create is enough (kCreateShard leaves a shard
            // it already placed alone, should that create still be
            // running).
            if (!existing.shards_ready && existing.config.SameFilterAs(config)) {
              won = true;
              token = existing.shard_token;
              expires_at = existing.expires_at_ms;
              return Status::Ok();
            }
            return ExistsStatus(name, existing.config, config);
          }
          if (code == 2) {
            return Status::Conflict("key '" + DisplayName(name) +
                                    "' exists without redbloom metadata; delete it first");
          }
          if (code == 5 && r->elements >= 3) {
            return NoRoom(name, room, r.get(),
                          room == config.data_bytes() ? "its first shard's" : "its shards'");
          }
          if (code == 6) return ExpiryPast(c, name, expires_at, r.get());
          if (code == 7) return LeftPartsStatus(name, "created");
          return MetaWrongType(r.get(), name);
        });
    return won ? Status::Ok() : s;
  }

  // Places shards 1.. of a sharded create (token `token`); each server's in
  // turn, servers in parallel.
  Status PlaceShards(std::string_view name, const FilterConfig& config, const std::string& token,
                     uint64_t expires_at) {
    std::vector<std::string> routes;
    std::vector<ConnectionSource::Op> ops;
    for (uint32_t shard = 1; shard < config.shards; ++shard) {
      const ShardKeys k = ShardKeysFor(name, shared_->keys, shard, config.shards);
      std::vector<std::pair<std::string, std::string>> fields;
      const std::vector<std::string> checked = CheckedValues(name, config, "");
      for (size_t i = 0; i < kChecked; ++i) {
        fields.emplace_back(kCheckedFields[i],
                            i + 1 == kChecked ? ShardIdentity(name, shard, token) : checked[i]);
      }
      fields.emplace_back("count", "0");
      routes.push_back(k.meta);
      ops.push_back([this, k, fields, &config, expires_at, name](Connection& c) -> Status {
        CommandBuffer cmd;
        BeginEval(&cmd, scripts::kCreateShard, {k.meta, k.bitmap}, 2 + 2 * fields.size());
        Connection::LongerWait wait(c, Connection::AllocationWait(config.data_bytes()));
        cmd.Arg(config.data_bytes());
        cmd.Arg(expires_at);
        for (const auto& [f, v] : fields) {
          cmd.Arg(f);
          cmd.Arg(v);
        }
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
        if (IsArray(r.get(), 3) && r->element[0]->type == REDIS_REPLY_INTEGER &&
            r->element[0]->integer == 5) {
          // This shard's server (on a cluster, not the URL's), this shard.
          return NoRoom(name, config.data_bytes(), r.get(), "a shard's", c.server().display);
        }
        return WaitForReplicas(c, *shared_);
      });
    }
    // Idempotent: placing a shard twice leaves the same empty shard.
    return shared_->source->RunEach(routes, Access::kMaster, /*idempotent=*/true, ops,
                                    ConnectionSource::OnFailure::kStopThatServer);
  }

  // After `placed` found no room: takes the filter back if it is still this
  // create's and not ready, and says so (nullopt if another create has it).
  std::optional<Status> TakeBackUnready(std::string_view name, const FilterConfig& config,
                                        const FilterKeys& keys, const std::string& token,
                                        const Status& placed) {
    bool taken = false;
    (void)shared_->source->Run(
        keys.meta, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
          CommandBuffer cmd;
          BeginEval(&cmd, scripts::kDropUnready, {keys.meta, keys.bitmap}, 1);
          cmd.Arg(token);
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
          taken = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
          return Status::Ok();
        });
    if (taken) {
      // Said as it is: a shard's server that failed now too keeps what it
      // holds (it said "were dropped" whatever the drop answered).
      const Status left = DropShards(name, config.shards, token);
      const ShardKeys first = ShardKeysFor(name, shared_->keys, 1, config.shards);
      return placed.WithContext(
          "filter '" + std::string(name) + "' was not created (" +
          (left.ok() ? std::string("its shards placed so far were dropped")
                     : "its shards placed so far could not all be dropped (" + left.message() +
                           "): the next create of the name with " + std::to_string(config.shards) +
                           " shards replaces them, or delete "
                           "them by hand (" +
                           DisplayKey(first.meta, shared_->keys) + " and " +
                           DisplayKey(first.bitmap, shared_->keys) +
                           " for shard 1, alike for the others)") +
          ")");
    }
    return std::nullopt;
  }

  // Marks a sharded create's shards ready: the filter is there for readers.
  Status MarkShardsReady(std::string_view name, const FilterConfig& config, const FilterKeys& keys,
                         const std::string& token) {
    // Of identical creates racing, the one that marks the shards ready made
    // the filter; the others finished it too, and say it exists (each was
    // told "created": 2-6 of 6 concurrent PUTs answered 201, an audit). A
    // repeat after a create that failed part-way marks them, and made it.
    // A retry (its first answer lost) may find its own mark: only a first
    // send's 2 is another create's.
    bool marked_before = false;
    int sends = 0;
    REDBLOOM_RETURN_IF_ERROR(shared_->source->Run(
        keys.meta, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
          ++sends;
          CommandBuffer cmd;
          BeginEval(&cmd, scripts::kShardsReady, {keys.meta}, 1);
          cmd.Arg(token);
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
          if (r->type != REDIS_REPLY_INTEGER) return Unexpected("shards ready", r.get());
          if (r->integer == 0) {
            return Status::Conflict("filter '" + std::string(name) +
                                    "' was dropped or re-created while its shards were placed");
          }
          marked_before = r->integer == 2 && sends == 1;
          return WaitForReplicas(c, *shared_);
        }));
    return marked_before ? ExistsStatus(name, config, config) : Status::Ok();
  }

  // The shards of the filter `name` of token `token` (its incarnation): a
  // shard another create of the name has placed since is left alone.
  Status DropShards(std::string_view name, uint32_t shards, const std::string& token) {
    std::vector<std::string> routes;
    std::vector<ConnectionSource::Op> ops;
    for (uint32_t s = 1; s < shards; ++s) {
      const ShardKeys k = ShardKeysFor(name, shared_->keys, s, shards);
      routes.push_back(k.meta);
      ops.push_back([k, identity = ShardIdentity(name, s, token)](Connection& c) -> Status {
        CommandBuffer cmd;
        BeginEval(&cmd, scripts::kDropShard, {k.meta, k.bitmap, k.scratch}, 1);
        cmd.Arg(identity);
        return Call(c, cmd).status();
      });
    }
    // Idempotent: unlinking twice leaves the same nothing. Every shard is
    // tried: what one failure leaves, the others need not.
    return shared_->source->RunEach(routes, Access::kMaster, /*idempotent=*/true, ops,
                                    ConnectionSource::OnFailure::kGoOn);
  }

  // `token`: the shard token read with the metadata ("" for none, "*" for
  // metadata that could not be read); a filter with another one sets
  // `*made_again` and stays. `also`: part numbers whose keys go too if they
  // exist, listed or not.
  Status DropMain(std::string_view name, const FilterKeys& keys, const std::string& token,
                  const std::vector<uint64_t>& also, bool* made_again) {
    // Not idempotent: a repeated drop would answer kNotFound.
    return shared_->source->Run(
        keys.meta, Access::kMaster, /*idempotent=*/false, [&](Connection& c) -> Status {
          // A Java side's companion hash (Redisson's config) goes with the filter.
          REDBLOOM_ASSIGN_OR_RETURN(const std::string companion,
                                    StoredCompanionKey(c, shared_->keys, name, keys));
          auto build = [&](const std::vector<uint64_t>& parts,
                           const std::vector<std::string>& strays, CommandBuffer* cmd) {
            // Scratch keys go too: a batch add whose commit failed left its
            // bitmap at one (the next add puts it back; a drop must take it).
            std::vector<std::string> all = {keys.meta, keys.bitmap, keys.parts, keys.scratch};
            std::vector<uint64_t> dropped = parts;
            for (uint64_t p : also) {
              if (std::find(parts.begin(), parts.end(), p) == parts.end()) dropped.push_back(p);
            }
            for (uint64_t p : dropped) {
              const PartKeys part = PartKeysFor(name, shared_->keys, p);
              all.push_back(part.bitmap);
              all.push_back(part.scratch);
            }
            if (!companion.empty()) all.push_back(companion);
            BeginEval(cmd, scripts::kDrop, all, 3 + parts.size() + strays.size());
            cmd->Arg(name);
            cmd->Arg(token);
            cmd->Arg(companion.empty() ? "0" : "1");
            for (uint64_t p : parts) cmd->Arg(p);
            // Named for the script's check that the list is still the one
            // read; they have no keys of their own, and go with the hash.
            for (const std::string& stray : strays) cmd->Arg(stray);
          };
          // The companion refusals' (5, 7) start and end.
          const std::string not_dropped = "filter '" + std::string(name) +
                                          "' was not dropped: its config hash '" +
                                          DisplayKey(companion, shared_->keys) + "' ";
          const std::string forget = "to make redbloom forget its own record only, delete '" +
                                     DisplayKey(keys.meta, shared_->keys) +
                                     "' (and attach again to use the Java side's filter)";
          return WithParts(c, keys, name, "dropped", build, [&](const redisReply* r) -> Status {
            switch (r->element[0]->integer) {
              case 1:
                return Status::Ok();
              case 0:
                return NotFoundStatus(name);
              case -1:
                return CollisionStatus(name, ReplyString(r->element[1]), DisplayMeta(name),
                                       shared_->keys);
              case 4:
                *made_again = true;
                return Status::Ok();
              case 5: {
                if (r->elements < 3) return Unexpected("drop", r);
                const bool not_a_hash = ReplyString(r->element[1]) == "not a hash";
                // A read of the config refused (an ACL's key patterns) is no
                // other program's key: said as the refusal it is.
                if (not_a_hash && !ReplyText(r->element[2]).empty() &&
                    !ReplyText(r->element[2]).starts_with("WRONGTYPE")) {
                  return ReplyErrorStatus(ReplyText(r->element[2]), c.server());
                }
                return Status::Conflict(not_dropped +
                                        (not_a_hash
                                             ? std::string("is no hash now, another program's key")
                                             : "now holds size=" + ReplyString(r->element[1]) +
                                                   " hashIterations=" + ReplyString(r->element[2]) +
                                                   ", another filter its Java side made since") +
                                        "; " + forget);
              }
              case 7:
                return Status::Conflict(
                    not_dropped +
                    "holds its parameters, but its bitmap is shorter than the one redbloom sized "
                    "and not empty: a Java client deleted the filter and made it again (delete(), "
                    "tryInit() and adds); " +
                    forget);
              default:
                return MetaWrongType(r, name);
            }
          });
        });
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(name));
    if (!meta.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    REDBLOOM_RETURN_IF_ERROR(CheckCompanion(name, config));
    return std::unique_ptr<BitStore>(
        std::make_unique<RedisBitStore>(shared_, std::string(name), config, meta.expires_at_ms,
                                        meta.shard_token, meta.incarnation));
  }

  Status Replace(std::string_view name, std::string_view source) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(source));
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta replacement, ReadMeta(source));
    REDBLOOM_RETURN_IF_ERROR(CheckReplaceable(replacement.config));
    const Result<FilterConfig> old = ReadConfig(name);
    REDBLOOM_RETURN_IF_ERROR(CheckReplaced(name, old));
    // What was checked, checked again in the swap's script: a filter
    // re-created between the two as one of several parts would otherwise be
    // replaced, its other parts orphaned.
    std::string old_kind = "*";
    std::string old_shards = "1";
    if (old.ok()) {
      old_kind = std::string(FilterKindName(old->kind));
      old_shards = std::to_string(old->shards);
    } else if (old.status().code() == StatusCode::kNotFound) {
      old_kind = "";
    }
    const FilterKeys keys = KeysFor(name, shared_->keys);
    const FilterKeys from = KeysFor(source, shared_->keys);
    // Readers of the old filter see the new one on their next call: the same
    // keys, checked against their parameters (kConflict if they differ, and
    // the facade reopens). Not idempotent: done twice, the source is gone.
    return shared_->source->Run(
        keys.meta, Access::kMaster, /*idempotent=*/false, [&](Connection& c) -> Status {
          // Companion hashes (Redisson's config): the replacement's becomes
          // the name's, and the old filter's goes.
          REDBLOOM_ASSIGN_OR_RETURN(const std::string old_companion,
                                    StoredCompanionKey(c, shared_->keys, name, keys));
          const std::string new_companion = CompanionKey(source, shared_->keys, replacement.config);
          const bool companions = !old_companion.empty() || !new_companion.empty();
          const std::string name_companion =
              !old_companion.empty() ? old_companion
                                     : CompanionKey(name, shared_->keys, replacement.config);
          auto build = [&](const std::vector<uint64_t>& parts, CommandBuffer* cmd) {
            std::vector<std::string> all = {keys.meta, keys.bitmap, keys.parts, from.meta,
                                            from.bitmap};
            if (companions) {
              all.push_back(name_companion);
              all.push_back(new_companion.empty() ? name_companion : new_companion);
            }
            for (uint64_t p : parts) all.push_back(PartKeysFor(name, shared_->keys, p).bitmap);
            BeginEval(cmd, companions ? scripts::kReplaceCompanion : scripts::kReplace, all,
                      (companions ? 6 : 4) + parts.size());
            cmd->Arg(name);
            cmd->Arg(source);
            if (companions) {
              cmd->Arg(old_companion.empty() ? "0" : "1");
              cmd->Arg(new_companion.empty() ? "0" : "1");
            }
            cmd->Arg(old_kind);
            cmd->Arg(old_shards);
            for (uint64_t p : parts) cmd->Arg(p);
          };
          return WithParts(c, keys, name, "replaced", build, [&](const redisReply* r) -> Status {
            switch (r->element[0]->integer) {
              case 1:
                return Status::Ok();
              case 0:
                return NotFoundStatus(source);
              case 4:
                return Status::Conflict("filter '" + std::string(name) +
                                        "' was dropped and re-created while it was being "
                                        "replaced; nothing was swapped in");
              case 5:
                return DroppedWhileRebuiltStatus(name);
              case 6: {
                if (r->elements < 2) return Unexpected("replace", r);
                const std::string state = ReplyString(r->element[1]);
                if (state == "foreign") {
                  return Status::Conflict(
                      "filter '" + std::string(name) + "': its config hash key '" +
                      DisplayKey(name_companion, shared_->keys) +
                      "' holds a hash this filter did not make (a Redisson client's?), which "
                      "the rebuild would overwrite; nothing was swapped in");
                }
                return Status::Conflict(
                    "filter '" + std::string(name) + "': its config hash '" +
                    DisplayKey(old_companion, shared_->keys) + "' " +
                    (state == "gone"    ? "is gone (a Java client deleted the filter)"
                     : state == "other" ? "holds another filter (a Java client re-created it)"
                                        : "holds its parameters over a bitmap shorter than "
                                          "redbloom sized and not empty (a Java client deleted "
                                          "the filter and made it again)") +
                    "; nothing was swapped in, and the Java side's keys are untouched");
              }
              case 7:
                if (r->elements < 2) return Unexpected("replace", r);
                return Status::Conflict("filter '" + std::string(name) + "': its key '" +
                                        DisplayKey(keys.bitmap, shared_->keys) + "' holds a " +
                                        ReplyString(r->element[1]) +
                                        ", not its bitmap: another program's key, which a rebuild "
                                        "does not overwrite; nothing was swapped in");
              default:
                return Unexpected("replace", r);
            }
          });
        });
  }

  Result<std::vector<std::string>> Warnings() override {
    std::vector<std::string> out;
    std::mutex mu;  // a cluster's masters are asked in parallel
    Status s = shared_->source->ForEachServer([&](Connection& c) -> Status {
      // INFO replication as its own command (Redis 6 takes one section per
      // INFO). A user allowed INFO memory alone must not lose its readiness
      // to a warning it does not need: without wait_replicas any error of it
      // is passed over (and a refusal stops the asking), with it a refusal
      // is a warning.
      const bool replicas = shared_->wait_replicas > 0;
      const bool ask_replication = replicas || !shared_->replication_info_refused.load();
      CommandBuffer cmd;
      cmd.Command({"INFO", "memory"});
      if (ask_replication) cmd.Command({"INFO", "replication"});
      REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
      REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr memory, c.Read());
      ReplyPtr replication;
      if (ask_replication) {
        REDBLOOM_ASSIGN_OR_RETURN(replication, c.Read());
      }
      // A NOPERM answer is a warning of its own; other errors fail the call.
      const auto refused = [&](const redisReply* r, std::string_view what,
                               std::optional<std::string>* warning) -> Status {
        const Status e = ReplyErrorStatus(ReplyText(r), c.server());
        if (!IsRefusedCommandReply(ReplyText(r))) return e;
        *warning = "redis " + c.server().display +
                   " does not let this user run INFO (its ACL or a rename-command), so " +
                   std::string(what) + " is unknown (" + e.message() + ")";
        return Status::Ok();
      };
      const std::string& server = c.server().display;
      std::optional<std::string> unknown[2];  // INFO memory, INFO replication refused
      std::vector<std::optional<std::string>> found;
      if (memory->type == REDIS_REPLY_ERROR) {
        REDBLOOM_RETURN_IF_ERROR(
            refused(memory.get(), "whether it can evict filter keys", &unknown[0]));
      } else {
        const std::string info = ReplyString(memory.get());
        found = {EvictionWarning(info, server), FullWarning(info, server)};
      }
      if (replication != nullptr && replication->type == REDIS_REPLY_ERROR) {
        if (replicas) {
          REDBLOOM_RETURN_IF_ERROR(
              refused(replication.get(), "whether wait_replicas counts its replicas", &unknown[1]));
        } else if (IsRefusedCommandReply(ReplyText(replication.get()))) {
          shared_->replication_info_refused.store(true);
        }
      } else if (replication != nullptr) {
        const std::string info = ReplyString(replication.get());
        found.push_back(ReplicaWarning(info, server, shared_->wait_replicas));
        found.push_back(NoReplicasWarning(info, server));
        found.push_back(ReplicaRoleWarning(info, server));
      }
      found.insert(found.end(), std::begin(unknown), std::end(unknown));
      std::lock_guard<std::mutex> lock(mu);
      for (auto& w : found) {
        if (w.has_value()) out.push_back(std::move(*w));
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    if (std::string w = shared_->source->Warning(); !w.empty()) out.push_back(std::move(w));
    std::sort(out.begin(), out.end());
    return out;
  }

  Status Ping() override {
    return shared_->source->ForEachServer([&](Connection& c) { return PingServer(c); });
  }

 private:
  std::string DisplayName(std::string_view name) const { return DisplayKey(name, shared_->keys); }
  std::string DisplayCompanion(std::string_view name, const FilterConfig& config) const {
    return DisplayKey(CompanionKey(name, shared_->keys, config), shared_->keys);
  }

  // A filter whose Java side keeps a companion hash is opened only while
  // that hash still describes it (see CheckCompanionReply). From the master,
  // as ReadMeta reads the metadata: a replica may not have a new filter's
  // hash yet.
  Status CheckCompanion(std::string_view name, const FilterConfig& config) {
    const std::string key = CompanionKey(name, shared_->keys, config);
    if (key.empty()) return Status::Ok();
    return shared_->source->Run(
        key, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
          CommandBuffer cmd;
          AppendCompanionRead(&cmd, key);
          REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
          return CheckCompanionReply(r.get(), name, DisplayKey(key, shared_->keys), config);
        });
  }
  // Create and attach meet the parts list of an earlier scaling or window
  // filter of `name` whose metadata is gone (evicted or deleted): a create
  // took its layers for the new filter's (an empty filter answered its items
  // present), an attach adopted its first layer alone (most of its items then
  // answered absent).
  Status LeftPartsStatus(std::string_view name, std::string_view verb) const {
    return Status::Conflict("filter '" + std::string(name) + "' cannot be " + std::string(verb) +
                            ": " + LeftPartsText(name) + "; delete those keys first");
  }
  std::string LeftPartsText(std::string_view name) const {
    // Plain keys, rendered in the store's key mode (DisplayKey).
    const FilterKeys keys = KeysFor(name, KeyMode::kPlain);
    std::string part = PartKeysFor(name, KeyMode::kPlain, 0).bitmap;
    part.back() = 'N';  // ".../part/N"
    return "the parts list '" + DisplayKey(keys.parts, shared_->keys) +
           "' of an earlier scaling or window filter of that name is there without its "
           "metadata '" +
           DisplayKey(keys.meta, shared_->keys) +
           "' (evicted, or deleted by hand), with the layers or slices it lists ('" +
           DisplayKey(part, shared_->keys) +
           "' for each field N) and a scaling filter's first "
           "layer '" +
           DisplayName(name) + "'";
  }
  std::string DisplayMeta(std::string_view name) const {
    return DisplayKey(KeysFor(name, KeyMode::kPlain).meta, shared_->keys);
  }

  // The stored metadata of `name`, validated (see ParseMeta). A sharded
  // filter whose create is still placing its shards is waited for (up to a
  // few seconds) when `wait_ready`, then kUnavailable.
  Result<StoredMeta> ReadMeta(std::string_view name, bool wait_ready = true) {
    for (int attempt = 0;; ++attempt) {
      REDBLOOM_ASSIGN_OR_RETURN(StoredMeta meta, ReadMetaOnce(name));
      if (!wait_ready || meta.shards_ready) return meta;
      if (attempt >= 100) {
        return BeingCreatedStatus(name);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
  }

  Result<StoredMeta> ReadMetaOnce(std::string_view name) {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    const FilterKeys keys = KeysFor(name, shared_->keys);
    StoredMeta meta;
    bool no_meta = false;
    bool left_parts = false;  // a parts list without metadata
    std::string bare_type;    // the type of a bitmap key without metadata
    Status s = shared_->source->Run(
        keys.meta, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
          // HGETALL and EXISTS only, so that a reader's ACL needs no TYPE;
          // TYPE is asked only to word an error.
          CommandBuffer cmd;
          cmd.Command({"HGETALL", keys.meta});
          cmd.Command({"EXISTS", keys.bitmap});
          REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr hash, c.Read());
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr bitmap_exists, c.ReadOk());
          if (hash->type == REDIS_REPLY_ERROR) {
            if (ReplyText(hash.get()).starts_with("WRONGTYPE")) {
              return Status::DataLoss("metadata key '" + DisplayMeta(name) + "' holds a " +
                                      KeyType(c, keys.meta) + ", not a hash");
            }
            return ReplyErrorStatus(ReplyText(hash.get()), c.server());
          }
          if (hash->type == REDIS_REPLY_ARRAY && hash->elements == 0) {
            no_meta = true;
            if (bitmap_exists->type == REDIS_REPLY_INTEGER && bitmap_exists->integer != 0) {
              bare_type = KeyType(c, keys.bitmap);
            }
            // Only to word the error, so a refusal (an ACL's key patterns)
            // is not one.
            cmd.Clear();
            cmd.Command({"EXISTS", keys.parts});
            REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
            REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr parts_exist, c.Read());
            left_parts = parts_exist->type == REDIS_REPLY_INTEGER && parts_exist->integer != 0;
            return Status::Ok();
          }
          REDBLOOM_ASSIGN_OR_RETURN(meta, ParseMeta(hash.get(), DisplayMeta(name)));
          if (meta.name != name)
            return CollisionStatus(name, meta.name, DisplayMeta(name), shared_->keys);
          return Status::Ok();
        });
    if (!s.ok()) return s;
    if (!no_meta) return meta;
    // Without a bitmap too (a window filter has none), a filter of the old
    // layout still is one.
    REDBLOOM_RETURN_IF_ERROR(RefuseLegacyLayout(name));
    // Neither an attach nor a create can take what is left (LeftPartsStatus).
    if (left_parts) {
      return Status::NotFound("filter '" + std::string(name) +
                              "' does not exist: " + LeftPartsText(name));
    }
    // A Redisson filter Java made (tryInit) has its config hash, and until
    // its first add no bitmap: a read said "does not exist" and no more (or,
    // after an add, to attach without the strategy it needs), where a create
    // names attach --strategy redisson. Only to word the error: a probe
    // that fails finds none.
    const Result<std::optional<FoundCompanion>> found = FindCompanionHash(*shared_, name);
    if (found.ok() && found->has_value()) {
      const std::string strategy((*found)->strategy->name);
      return Status::NotFound("filter '" + std::string(name) + "' does not exist: a " + strategy +
                              " filter's config hash '" + DisplayKey((*found)->key, shared_->keys) +
                              "' is there without redbloom metadata (made by a Java client?); "
                              "adopt it with attach --strategy " +
                              strategy);
    }
    if (bare_type.empty()) return NotFoundStatus(name);
    return Status::NotFound(
        "filter '" + std::string(name) + "' does not exist: key '" + DisplayName(name) + "' is a " +
        bare_type + " without redbloom metadata" +
        (bare_type == "string"
             ? "; if it is a plain filter's bitmap or another program's, adopt it with attach "
               "(a counting or sharded filter's cannot be)"
             : ""));
  }

  // Builds before 2026-12-01 kept the metadata of a name with a brace but no
  // hash tag at another key, in another slot (LegacyMetaKey): such a filter
  // is refused by name, by reads and by creates alike, rather than read as
  // missing (and made again beside its old keys) or as a bare bitmap (whose
  // attach keeps one layer of a scaling filter). One EXISTS, asked only for
  // such names, on the node that holds that key. A probe that fails (an ACL
  // whose key patterns leave that key out, that key's node down) finds no
  // old filter: the old layout is a rarity, and must not make every create
  // of such a name depend on another key's server.
  Status RefuseLegacyLayout(std::string_view name) {
    const std::string legacy = LegacyMetaKey(name, shared_->keys);
    if (legacy.empty()) return Status::Ok();
    // That key is also the metadata key of the filter named "{NAME}" in
    // this layout ("{x}}" has the tag "x}"): only a hash that names this
    // filter, or none (its name field lost), is the old one. An EXISTS took
    // a live "{x}}" for an old "x}", and refused creating, reading and
    // dropping "x}" (an audit).
    bool found = false;
    (void)shared_->source->Run(
        legacy, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
          CommandBuffer cmd;
          cmd.Command({"EXISTS", legacy});
          cmd.Command({"HGET", legacy, "name"});
          REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exists, c.Read());
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr named, c.Read());
          found = exists->type == REDIS_REPLY_INTEGER && exists->integer == 1 &&
                  (named->type == REDIS_REPLY_NIL ||
                   (named->type == REDIS_REPLY_STRING && ReplyText(named.get()) == name));
          return Status::Ok();
        });
    if (!found) return Status::Ok();
    return Status::Conflict(
        "filter '" + std::string(name) +
        "' was made by a redbloom build before 2026-12-01, which kept the metadata of "
        "a name with a brace but no hash tag at '" +
        LegacyMetaKey(name, KeyMode::kPlain) +
        "'; this build does not read that layout. Move it with the build "
        "that made it (export --format redbloom, then drop) and import the dump "
        "here; attaching the bitmap would lose a scaling filter's other layers");
  }

  // The part numbers in a filter's parts hash. With `strays`, a field that
  // is no part number (PartOfField) goes there, not refused: a drop takes
  // the whole hash, and must not be kept from it by a field it cannot read.
  Result<std::vector<uint64_t>> PartNumbers(Connection& c, const FilterKeys& keys,
                                            std::string_view name,
                                            std::vector<std::string>* strays = nullptr) {
    CommandBuffer cmd;
    cmd.Command({"HKEYS", keys.parts});
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
    if (!IsArray(r.get(), 0)) return Unexpected("HKEYS", r.get());
    std::vector<uint64_t> parts;
    if (strays != nullptr) strays->clear();
    for (size_t i = 0; i < r->elements; ++i) {
      Result<uint64_t> p = PartOfField(name, ReplyText(r->element[i]), ReplyString(r->element[i]),
                                       keys.parts, shared_->keys);
      if (!p.ok() && strays != nullptr) {
        strays->emplace_back(ReplyText(r->element[i]));
        continue;
      }
      REDBLOOM_RETURN_IF_ERROR(p.status());
      parts.push_back(*p);
    }
    return parts;
  }

  Status PartScriptError(Connection& c, const redisReply* r, std::string_view name) const {
    const std::string_view text = ReplyText(r);
    if (text.find("REDBLOOM_GONE") != std::string_view::npos) return NotFoundStatus(name);
    if (text.find("REDBLOOM_CHANGED") != std::string_view::npos) return ConfigChangedStatus(name);
    if (text.find("REDBLOOM_CORRUPT") != std::string_view::npos) {
      return Status::DataLoss("filter '" + std::string(name) + "': " + std::string(text));
    }
    return ReplyErrorStatus(text, c.server());
  }

  // Runs a create/attach script with the metadata fields as arguments (for a
  // filter with a companion hash, its companion variant); returns its array
  // reply, whose first element is the outcome code.
  Result<ReplyPtr> EvalWithMeta(Connection& c, std::string_view script, std::string_view name,
                                const FilterKeys& keys, const FilterConfig& config, uint64_t bytes,
                                uint64_t expires_at, std::string_view origin,
                                const std::vector<std::pair<std::string, std::string>>& extra,
                                uint64_t room_bytes = 0) {
    auto fields = MetaFields(name, config, origin, expires_at);
    fields.insert(fields.end(), extra.begin(), extra.end());
    CommandBuffer cmd;
    if (const std::string companion = CompanionKey(name, shared_->keys, config);
        !companion.empty()) {
      BeginCompanionEval(&cmd, script == scripts::kCreate, keys, companion, config, bytes,
                         expires_at, fields);
    } else {
      const bool create = script == scripts::kCreate;
      BeginEval(&cmd, script, {keys.meta, keys.bitmap, keys.parts},
                (create ? 3 : 2) + 2 * fields.size());
      cmd.Arg(bytes);
      cmd.Arg(expires_at);
      if (create) cmd.Arg(std::max(bytes, room_bytes));
      for (const auto& [field, value] : fields) {
        cmd.Arg(field);
        cmd.Arg(value);
      }
    }
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, Call(c, cmd));
    // {0} and {6} (keys that expired as they were made) stand alone; other
    // codes carry a value.
    if (!IsArray(r.get(), 1) || r->element[0]->type != REDIS_REPLY_INTEGER ||
        (r->element[0]->integer != 0 && r->element[0]->integer != 6 && r->elements < 2)) {
      return Unexpected("the create/attach script", r.get());
    }
    return r;
  }

  Result<StoredMeta> ExistingMeta(const redisReply* r, std::string_view name) const {
    REDBLOOM_ASSIGN_OR_RETURN(StoredMeta existing, ParseMeta(r->element[1], DisplayMeta(name)));
    if (existing.name != name) {
      return CollisionStatus(name, existing.name, DisplayMeta(name), shared_->keys);
    }
    return existing;
  }

  // The bytes of a sharded filter's shards that go where its metadata does:
  // all of them on one server, those of its node on a cluster. The create's
  // first script checks they fit: checked shard by shard, a create too big
  // for the server placed ~19 shards, filling it to maxmemory, before one was
  // refused, then named their bytes as the server's use.
  uint64_t ShardBytesBeside(std::string_view name, const FilterConfig& config,
                            const FilterKeys& keys) const {
    const std::string home = shared_->source->Route(keys.meta);
    uint64_t shards = 1;
    for (uint32_t shard = 1; shard < config.shards; ++shard) {
      if (shared_->source->Route(ShardKeysFor(name, shared_->keys, shard, config.shards).meta) ==
          home) {
        ++shards;
      }
    }
    return shards * config.data_bytes();
  }

  // The create script found no room under maxmemory (code 5): {5, used, max}.
  Status NoRoom(std::string_view name, uint64_t bytes, const redisReply* r,
                std::string_view whose = "its", std::string_view server = "") const {
    return Status::ResourceExhausted(
        (server.empty() ? url_.Redacted() : "redis " + std::string(server)) +
        " has no room for filter '" + DisplayName(name) + "': " + std::string(whose) + " " +
        std::to_string(bytes) + " bytes and the " + std::to_string(r->element[1]->integer) +
        " bytes in use exceed maxmemory " + std::to_string(r->element[2]->integer));
  }

  // A create or attach script's {6, now} or {6}: see ExpiryPastStatus.
  Status ExpiryPast(Connection& c, std::string_view name, uint64_t expires_at,
                    const redisReply* r) const {
    std::optional<uint64_t> server_ms;
    if (r->elements >= 2 && r->element[1]->type == REDIS_REPLY_INTEGER) {
      server_ms = static_cast<uint64_t>(r->element[1]->integer);
    }
    return ExpiryPastStatus(c.server().display, "filter '" + DisplayName(name) + "'", expires_at,
                            server_ms);
  }

  Status MetaWrongType(const redisReply* r, std::string_view name) const {
    const std::string type = r->elements > 1 ? ReplyString(r->element[1]) : "value";
    return Status::DataLoss("metadata key '" + DisplayMeta(name) + "' holds a " + type +
                            ", not a hash");
  }

  const RedisUrl url_;
  std::shared_ptr<RedisShared> shared_;
};

}  // namespace

Result<std::unique_ptr<Store>> NewRedisStore(std::string_view url_text,
                                             const StoreOptions& options) {
  REDBLOOM_ASSIGN_OR_RETURN(RedisUrl url, ParseRedisUrl(url_text, options));
  auto shared = std::make_shared<RedisShared>();
  shared->options = url.options;
  shared->keys = url.keys;
  shared->wait_replicas = url.wait_replicas;
  shared->wait_timeout = url.wait_timeout;
  REDBLOOM_ASSIGN_OR_RETURN(shared->source, NewConnectionSource(url));
  REDBLOOM_RETURN_IF_ERROR(shared->source->Check());
  return std::unique_ptr<Store>(std::make_unique<RedisStore>(std::move(url), shared));
}

}  // namespace redbloom::internal
