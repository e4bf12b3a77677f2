#include "redis/redis_companion.h"

#include "redis/redis_pipeline.h"
#include "redis/redis_scripts.h"
#include "strategy/strategy_def.h"

namespace redbloom::internal {

const CompanionHash* CompanionOf(const FilterConfig& c) {
  const StrategyDef* s = FindStrategy(c.strategy);
  return s == nullptr ? nullptr : s->companion;
}

std::string CompanionKey(std::string_view name, KeyMode mode, const FilterConfig& c) {
  const CompanionHash* companion = CompanionOf(c);
  return companion == nullptr ? "" : CompanionKeyFor(name, mode, companion->suffix);
}

Status CheckCompanionPlacement(std::string_view name, KeyMode mode, const FilterConfig& c) {
  const CompanionHash* companion = CompanionOf(c);
  if (companion == nullptr) return Status::Ok();
  const std::string strategy(StrategyName(c.strategy));
  if (c.kind != FilterKind::kPlain) {
    return Status::InvalidArgument("strategy " + strategy +
                                   " on Redis shares the filter with its Java side, which reads "
                                   "one plain bitmap: a " +
                                   std::string(FilterKindName(c.kind)) +
                                   " filter would be unreadable there (use it on mem: or file:, "
                                   "or another strategy)");
  }
  if (c.shards != 1) {
    return Status::InvalidArgument("strategy " + strategy +
                                   " on Redis shares the filter with its Java side, which reads "
                                   "one bitmap: it cannot be sharded");
  }
  if (mode == KeyMode::kJdk) {
    return Status::InvalidArgument("strategy " + strategy +
                                   " shares its keys with a Java client that names them in plain "
                                   "UTF-8; ?keys=jdk is for Spring's RedisTemplate: leave it out");
  }
  const std::string key = CompanionKeyFor(name, mode, companion->suffix);
  if (KeySlot(key) != KeySlot(KeysFor(name, mode).bitmap)) {
    return Status::InvalidArgument(
        "the " + strategy + " config of '" + std::string(name) + "' lives at '" +
        DisplayKey(key, mode) +
        "', in another Redis Cluster slot than its bitmap (braces that make no hash tag of the "
        "bitmap's own); choose a name without braces, or with a hash tag such as '{orders}x'");
  }
  return Status::Ok();
}

Result<std::optional<FoundCompanion>> FindCompanionHash(const RedisShared& shared,
                                                        std::string_view name) {
  if (shared.keys != KeyMode::kPlain) return std::optional<FoundCompanion>();
  for (const StrategyDef* def : StrategyTable()) {
    if (def->companion == nullptr) continue;
    const std::string key = CompanionKeyFor(name, shared.keys, def->companion->suffix);
    std::string size, iterations;
    REDBLOOM_RETURN_IF_ERROR(shared.source->Run(
        key, Access::kMaster, /*idempotent=*/true, [&](Connection& conn) -> Status {
          CommandBuffer cmd;
          AppendCompanionRead(&cmd, key);
          REDBLOOM_RETURN_IF_ERROR(conn.Append(cmd));
          REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, conn.Read());
          if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
              r->element[0]->type == REDIS_REPLY_STRING &&
              r->element[1]->type == REDIS_REPLY_STRING) {
            size = ReplyString(r->element[0]);
            iterations = ReplyString(r->element[1]);
          }
          return Status::Ok();
        }));
    if (!size.empty())
      return std::optional<FoundCompanion>(FoundCompanion{def, key, size, iterations});
  }
  return std::optional<FoundCompanion>();
}

Status CheckNoForeignCompanion(const RedisShared& shared, std::string_view name,
                               const FilterConfig& c, std::string_view doing) {
  // A Java side names its keys in plain UTF-8 (keys=jdk is Spring's).
  if (CompanionOf(c) != nullptr || shared.keys != KeyMode::kPlain) return Status::Ok();
  // A filter redbloom already keeps under the name is the create or attach
  // script's to compare (a create repeated alike succeeds, as before).
  const std::string meta = KeysFor(name, shared.keys).meta;
  bool exists = false;
  REDBLOOM_RETURN_IF_ERROR(shared.source->Run(
      meta, Access::kMaster, /*idempotent=*/true, [&](Connection& conn) -> Status {
        CommandBuffer cmd;
        cmd.Command({"EXISTS", meta});
        REDBLOOM_RETURN_IF_ERROR(conn.Append(cmd));
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, conn.Read());
        exists = r->type == REDIS_REPLY_INTEGER && r->integer != 0;
        return Status::Ok();
      }));
  if (exists) return Status::Ok();
  REDBLOOM_ASSIGN_OR_RETURN(const std::optional<FoundCompanion> found,
                            FindCompanionHash(shared, name));
  if (!found.has_value()) return Status::Ok();
  const std::string strategy(found->strategy->name);
  return Status::Conflict(
      "'" + std::string(name) + "' is a " + strategy + " filter: its config hash '" +
      DisplayKey(found->key, shared.keys) + "' holds size=" + found->size +
      " hashIterations=" + found->iterations +
      (name.find('{') == std::string_view::npos
           ? " (the Java side names it '" + std::string(name) + "', or '{" + std::string(name) +
                 "}', whose config is there too)"
           : std::string()) +
      ". A " + std::string(StrategyName(c.strategy)) +
      " filter there would hash its items another way (the Java side's items would read "
      "absent): " +
      (doing == "attach" ? "attach" : "adopt it with attach") + " --strategy " + strategy +
      ", or choose another name");
}

void AppendCompanionRead(CommandBuffer* cmd, const std::string& companion_key) {
  cmd->Command({"HMGET", companion_key, kCompanionBitsField, kCompanionHashesField});
}

Status CheckCompanionReply(const redisReply* r, std::string_view name, std::string_view key_display,
                           const FilterConfig& c) {
  const std::string bits = std::to_string(c.geometry.bits);
  const std::string hashes = std::to_string(c.geometry.hashes);
  const std::string head =
      "filter '" + std::string(name) + "': its config hash '" + std::string(key_display) + "' ";
  const std::string tail =
      "; redbloom's metadata still describes the old filter (to follow the new one, delete that "
      "metadata key and attach again)";
  if (r->type == REDIS_REPLY_ERROR) {
    return Status::Conflict(head + "is no longer a hash (" + std::string(ReplyText(r)) + ")" +
                            tail);
  }
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) return Unexpected("HMGET", r);
  if (r->element[0]->type == REDIS_REPLY_NIL && r->element[1]->type == REDIS_REPLY_NIL) {
    return Status::Conflict(head + "is gone (deleted by a " +
                            std::string(StrategyName(c.strategy)) + " client, or expired)" + tail);
  }
  const std::string_view size = ReplyText(r->element[0]);
  const std::string_view iterations = ReplyText(r->element[1]);
  if (size != bits || iterations != hashes) {
    return Status::Conflict(head + "now holds size=" + std::string(size) +
                            " hashIterations=" + std::string(iterations) + ", not size=" + bits +
                            " hashIterations=" + hashes + ": a " +
                            std::string(StrategyName(c.strategy)) +
                            " client re-created it with other parameters" + tail);
  }
  return Status::Ok();
}

Status CompanionChangedStatus(std::string_view name, std::string_view key_display,
                              const FilterConfig& c) {
  return Status::Conflict("filter '" + std::string(name) + "': its config hash '" +
                          std::string(key_display) +
                          "' no longer holds size=" + std::to_string(c.geometry.bits) +
                          " hashIterations=" + std::to_string(c.geometry.hashes) + " (a " +
                          std::string(StrategyName(c.strategy)) +
                          " client deleted the filter or re-created it with other parameters)");
}

void BeginCompanionEval(CommandBuffer* cmd, bool create, const FilterKeys& keys,
                        const std::string& companion_key, const FilterConfig& config,
                        uint64_t bytes, uint64_t expires_at,
                        const std::vector<std::pair<std::string, std::string>>& meta_fields) {
  const std::vector<std::string> script_keys = {keys.meta, keys.bitmap, companion_key};
  if (create) {
    const auto fields =
        CompanionOf(config)->fields(config.capacity, config.error_rate, config.geometry);
    BeginEval(cmd, scripts::kCreateCompanion, script_keys,
              3 + 2 * fields.size() + 2 * meta_fields.size());
    cmd->Arg(bytes);
    cmd->Arg(expires_at);
    cmd->Arg(uint64_t{2 * fields.size()});
    for (const auto& [field, value] : fields) {
      cmd->Arg(field);
      cmd->Arg(value);
    }
  } else {
    BeginEval(cmd, scripts::kAttachCompanion, script_keys, 4 + 2 * meta_fields.size());
    cmd->Arg(bytes);
    cmd->Arg(expires_at);
    cmd->Arg(config.geometry.bits);
    cmd->Arg(uint64_t{config.geometry.hashes});
  }
  for (const auto& [field, value] : meta_fields) {
    cmd->Arg(field);
    cmd->Arg(value);
  }
}

Status CompanionCodeStatus(const redisReply* r, std::string_view name, std::string_view key_display,
                           const FilterConfig& config) {
  const std::string strategy(StrategyName(config.strategy));
  const std::string key = "'" + std::string(key_display) + "'";
  // {code, type} or {code, size, hashIterations} (code 10).
  if (!IsArray(r, 2) || r->element[0]->type != REDIS_REPLY_INTEGER ||
      (r->element[0]->integer == 10 && r->elements < 3)) {
    return Unexpected("the create/attach script", r);
  }
  switch (r->element[0]->integer) {
    case 8:
      if (ReplyString(r->element[1]) == "none") {
        return Status::NotFound("filter '" + std::string(name) + "' has no " + strategy +
                                " config hash at " + key + ": nothing to attach");
      }
      if (const std::string type = ReplyString(r->element[1]); type != "hash") {
        // Not Redisson's: another program's key, or another filter's bitmap
        // (a plain filter may be named "{NAME}:config"), which a delete
        // would destroy.
        return Status::Conflict("a " + strategy + " filter '" + std::string(name) +
                                "' needs its config hash at " + key + ", where a " + type +
                                " is (another program's key, or another filter's bitmap): give "
                                "this filter another name");
      }
      return Status::Conflict("a " + strategy + " filter '" + std::string(name) +
                              "' already exists (its config hash " + key +
                              " is there) without redbloom metadata: adopt it with attach "
                              "--strategy " +
                              strategy + ", or delete it");
    case 9:
      return Status::DataLoss("the " + strategy + " config " + key + " of '" + std::string(name) +
                              "' holds a " + ReplyString(r->element[1]) + ", not a hash");
    case 10:
      return Status::Conflict("filter '" + std::string(name) + "': its " + strategy +
                              " config hash " + key + " holds size=" + ReplyString(r->element[1]) +
                              " hashIterations=" + ReplyString(r->element[2]) +
                              ", not size=" + std::to_string(config.geometry.bits) +
                              " hashIterations=" + std::to_string(config.geometry.hashes) + " (" +
                              config.ToString() +
                              "); attach without --capacity and --error to take its own");
    default:
      return Unexpected("the create/attach script", r);
  }
}

Result<FilterOptions> ReadCompanionOptions(const RedisShared& shared, std::string_view name,
                                           Strategy strategy) {
  const StrategyDef* def = FindStrategy(strategy);
  if (def == nullptr) return Status::InvalidArgument("unknown strategy");
  if (def->companion == nullptr) {
    return Status::InvalidArgument("strategy " + std::string(def->name) +
                                   " keeps no parameters beside its bits: give the capacity and "
                                   "error rate its Java side was created with");
  }
  const std::string key = CompanionKeyFor(name, shared.keys, def->companion->suffix);
  const std::string display = DisplayKey(key, shared.keys);
  FilterOptions options;
  options.strategy = strategy;
  Status s =
      shared.source->Run(key, Access::kMaster, /*idempotent=*/true, [&](Connection& c) -> Status {
        CommandBuffer cmd;
        cmd.Command({"TYPE", key});
        cmd.Command({"HGETALL", key});
        REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr type, c.ReadOk());
        REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr hash, c.Read());
        const std::string t = ReplyString(type.get());
        if (t == "none") {
          return Status::NotFound("no " + std::string(def->name) + " filter '" + std::string(name) +
                                  "': its config hash '" + display + "' does not exist");
        }
        if (t != "hash" || hash->type != REDIS_REPLY_ARRAY || hash->elements % 2 != 0) {
          return Status::DataLoss("the " + std::string(def->name) + " config '" + display +
                                  "' holds a " + t + ", not a hash");
        }
        FieldMap fields;
        for (size_t i = 0; i + 1 < hash->elements; i += 2) {
          fields[std::string(ReplyText(hash->element[i]))] =
              std::string(ReplyText(hash->element[i + 1]));
        }
        const std::string where = std::string(def->name) + " config '" + display + "'";
        return def->companion->parameters(fields, where, &options.capacity, &options.error_rate);
      });
  if (!s.ok()) return s;
  return options;
}

Result<std::string> StoredCompanionKey(Connection& c, KeyMode mode, std::string_view name,
                                       const FilterKeys& keys) {
  CommandBuffer cmd;
  cmd.Command({"HGET", keys.meta, "strategy"});
  REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
  REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
  // Not a hash, no metadata or no strategy: the drop or replace script
  // itself reports what is wrong.
  if (r->type != REDIS_REPLY_STRING) return std::string();
  const StrategyDef* def = FindStrategy(ReplyText(r.get()));
  if (def == nullptr || def->companion == nullptr) return std::string();
  return CompanionKeyFor(name, mode, def->companion->suffix);
}

}  // namespace redbloom::internal
