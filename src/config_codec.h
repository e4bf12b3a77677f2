// One codec for FilterConfig: the text fields every persisted form of a
// config holds (the file header, the Redis metadata hash, the dump header),
// and the one validation that reads them back. Adding a parameter touches
// this file (and docs/format.md). Internal.
//
// Fields, all decimal text:
//   kind strategy encoding   names (plain, guava64, utf8 ...)
//   capacity error_rate      what the filter was created with
//   bits hashes capped       the derived geometry, stored so that a reader
//                            can check its own sizing agrees
//   expansion                scaling: capacity factor per layer (else 0)
//   window_ms slices         window: the window and its slices (else 0)
//   ttl_seconds              the TTL it was created with (0: none)
//   shards                   plain and counting: shards (1: one array; absent
//                            in configs written before sharding)
//   geometry                 "given" when m and k were given (a Guava file's)
//                            and capacity and error rate derive from them;
//                            absent otherwise
#ifndef REDBLOOM_SRC_CONFIG_CODEC_H_
#define REDBLOOM_SRC_CONFIG_CODEC_H_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redbloom/filter_config.h"
#include "redbloom/status.h"

namespace redbloom::internal {

using ConfigField = std::pair<std::string, std::string>;
using FieldMap = std::map<std::string, std::string, std::less<>>;

// Every field, in the order above. With `relevant_only`, fields that hold
// their "none" value for this kind (expansion 0, window_ms 0, capped 0 ...)
// are left out (for messages).
std::vector<ConfigField> ConfigToFields(const FilterConfig& config, bool relevant_only = false);

// Reads a config from fields (other fields are ignored). A missing,
// malformed or inconsistent field, or a geometry that does not match what
// this build computes from the parameters, is kDataLoss: "<where>: <why>".
// Fields of other kinds may be absent (older dumps omit them) or "0".
Result<FilterConfig> ConfigFromFields(const FieldMap& fields, std::string_view where);

// MakeConfig without the limits put on new filters since 2026-12 (a TTL
// or a window of at most 100 years, kMaxTtlSeconds): the config of a filter
// a build before them stored, up to 10,000 years, kept as it was stored.
// Such a filter opens, and a create that finds it stored as given opens it.
// Past 10,000 years kInvalidArgument ("... is past 10,000 years"); any
// other fault, MakeConfig's error.
Result<FilterConfig> MakeStoredConfig(const FilterOptions& options);

// "key=value\n" lines, and back (kDataLoss on a line without '=').
std::string FieldsToLines(const std::vector<ConfigField>& fields);
Result<FieldMap> LinesToFields(std::string_view text, std::string_view where);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_CONFIG_CODEC_H_
