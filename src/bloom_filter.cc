#include "redbloom/bloom_filter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <numeric>
#include <stdexcept>

#include "config_codec.h"
#include "encode_items.h"
#include "hashed_cells.h"
#include "item_hashing.h"
#include "kinds/filter_context.h"
#include "kinds/kind_def.h"
#include "redbloom/funnel.h"
#include "redbloom/sizing.h"
#include "redbloom/strategy.h"
#include "stores.h"
#include "strategy/strategy_def.h"
#include "thread_scratch.h"
#include "util/out_of_memory.h"
#include "util/utf8.h"
#include "word_bits.h"
#include "word_kernels.h"

namespace redbloom {

using internal::FilterContext;
using internal::KindOf;

// What an open filter holds: its config, its cells on the store, and what its
// kind's policy keeps between calls.
struct BloomFilter::State {
  FilterConfig config;
  std::unique_ptr<BitStore> bits;
  internal::PartCache cache;
  // The config's table entries, looked up once rather than per call.
  const internal::StrategyDef* strategy = nullptr;
  const internal::KindPolicy* policy = nullptr;
  // Single items of a one-array filter of one shard on an in-process store
  // (mem:, file:), in any encoding, with a strategy that has
  // kernels for its geometry (seed and redisson have none): the cells the
  // kind's policy would end up calling (OneArrayPolicy: part 0), called
  // directly; null for every other filter. That path's FilterContext, policy
  // and Status layers were 60% of a single `block` check's instructions
  // (callgrind); without them a check is short enough for the core to
  // overlap the cache misses of consecutive calls. ContainsMany takes it too
  // where the kernels hash a batch themselves. Anything it cannot answer
  // (a rebuilt or dropped filter, a read-only file) goes the general way,
  // which reopens or says why.
  internal::WordBitStore* single = nullptr;
  // Part 0's geometry, the strategy's hash, and the kernels' test_one
  // resolved for that geometry (WordKernels::TestOneFor).
  internal::SingleCheck single_check;
  // A single check's hash and test in one call (WordKernels::CheckItemFor).
  internal::CheckItemFn single_check_item = nullptr;
  // And its set_one_exclusive (WordKernels::SetOneFor).
  internal::SetOneFn single_set_one = nullptr;
  // AddMany may take the kernels' one pass (WordBitStore::AddItems): items
  // that are their bytes, kernels that have it, an array with a writer gate.
  bool single_add_items = false;
};

BloomFilter::BloomFilter(Store& store, std::string name, std::shared_ptr<State> state)
    : store_(store), name_(std::move(name)), current_(state.get()) {
  states_.push_back(std::move(state));
}

BloomFilter::~BloomFilter() = default;

Result<std::shared_ptr<BloomFilter::State>> BloomFilter::Load(Store& store, std::string_view name) {
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, store.ReadConfig(name));
  auto state = std::make_shared<State>();
  state->config = config;
  REDBLOOM_ASSIGN_OR_RETURN(state->bits, store.OpenBits(name, config));
  state->strategy = &internal::StrategyOf(config.strategy);
  state->policy = KindOf(config.kind).policy;
  state->cache.set_hashed_cells(internal::HashedCellsOf(*state->bits));
  state->cache.set_strategy(state->strategy);
  if (config.one_array()) {
    auto sizing = state->cache.Sizing(config, 0);
    auto* cells = dynamic_cast<internal::WordBitStore*>(state->bits.get());
    if (sizing.ok() && cells != nullptr &&
        cells->SingleItemsFit(*state->strategy, sizing->geometry)) {
      state->single = cells;
      const internal::WordKernels& kernels = *state->strategy->word_kernels;
      state->single_check = {.geometry = sizing->geometry,
                             .hash = state->strategy->hash,
                             .test_one = kernels.TestOneFor(sizing->geometry)};
      state->single_check_item = kernels.CheckItemFor(sizing->geometry);
      state->single_set_one = kernels.SetOneFor(sizing->geometry);
      state->single_add_items = internal::ItemsAreTheirBytes(config.encoding) &&
                                kernels.set_items_exclusive != nullptr && cells->ItemAddsFit();
    }
  }
  return state;
}

namespace internal {

Result<std::unique_ptr<BloomFilter>> OpenMadeFilter(Store& store, std::string_view name,
                                                    bool made) {
  auto opened = BloomFilter::Open(store, name);
  if (opened.ok() || !made || opened.status().code() != StatusCode::kResourceExhausted) {
    return opened;
  }
  const Status& why = opened.status();
  Status dropped = store.Drop(name);
  if (dropped.ok() || dropped.code() == StatusCode::kNotFound) {
    return why.WithContext("filter '" + std::string(name) + "' was made, and dropped again");
  }
  return why.WithContext("filter '" + std::string(name) + "' was made, and could not be dropped (" +
                         dropped.message() + "): drop it before using it");
}

}  // namespace internal

Result<std::unique_ptr<BloomFilter>> BloomFilter::Create(Store& store, std::string_view name,
                                                         const FilterOptions& options,
                                                         bool* created) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  // Some refusals are for new filters only: a TTL or a window past 100
  // years, and a window that does not divide into its slices' whole
  // milliseconds (1,099 ms in 100 slices lived 1,000). A filter an older
  // build stored so keeps what it was made with, and a create that finds it
  // there opens it, as for any other filter (the TTL not compared: the
  // front ends tell another one as a conflict).
  const auto stored_as_given = [&](const FilterConfig& config) {
    const Result<FilterConfig> stored = store.ReadConfig(name);
    return stored.ok() && stored->SameFilterAs(config);
  };
  Result<FilterConfig> made = MakeConfig(options);
  if (!made.ok()) {
    Result<FilterConfig> stored = internal::MakeStoredConfig(options);
    if (!stored.ok() || !stored_as_given(*stored)) return made.status();
    made = std::move(stored);
  }
  const FilterConfig& config = *made;
  if (config.kind == FilterKind::kWindow && config.window_millis % config.slices != 0 &&
      !stored_as_given(config)) {
    const uint64_t slice = config.window_millis / config.slices;
    return Status::InvalidArgument(
        "a window of " + std::to_string(config.window_millis) + " ms does not divide into " +
        std::to_string(config.slices) + " slices of whole milliseconds: use a window of " +
        std::to_string(slice * config.slices) + " or " +
        std::to_string((slice + 1) * config.slices) + " ms, or another number of slices");
  }
  // A drop by another client can land between the create and the open: the
  // filter is then made again, as a create after the drop would have.
  // Answering not_found, which no order of a create and a drop gives, was
  // what redbloomd's PUT did (1,511 of 2,467 PUTs racing DELETEs on file:).
  // (A drop inside a store's create is that store's to retry: file:'s.)
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    Status s = store.Create(name, config);
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    if (created != nullptr) *created = s.ok();
    auto opened = internal::OpenMadeFilter(store, name, /*made=*/s.ok());
    if (opened.ok() || opened.status().code() != StatusCode::kNotFound) return opened;
    // Dropped again each time: a contention that passes, so retryable
    // (redbloomd's 503), never the not_found that no order of a create
    // and a drop gives (an audit: 30% of PUTs racing six DELETE loops).
    if (attempt == kAttempts) return internal::DroppedAsMadeStatus(name, kAttempts);
  }
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Open(Store& store, std::string_view name) {
  REDBLOOM_ASSIGN_OR_RETURN(auto state, Load(store, name));
  return std::unique_ptr<BloomFilter>(new BloomFilter(store, std::string(name), std::move(state)));
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Attach(Store& store, std::string_view name,
                                                         const FilterOptions& options) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  FilterOptions adopted = options;
  if (options.capacity == 0 && options.error_rate == 0) {
    REDBLOOM_ASSIGN_OR_RETURN(FilterOptions recorded,
                              store.ReadForeignOptions(name, options.strategy));
    adopted.capacity = recorded.capacity;
    adopted.error_rate = recorded.error_rate;
  }
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, MakeConfig(adopted));
  if (config.kind != FilterKind::kPlain) {
    return Status::InvalidArgument("attach adopts plain bitmaps only");
  }
  if (config.shards != 1) {
    return Status::InvalidArgument(
        "attach adopts one existing bitmap; it cannot be sharded (create a sharded filter "
        "instead)");
  }
  REDBLOOM_RETURN_IF_ERROR(store.Attach(name, config));
  return Open(store, name);
}

Status BloomFilter::Drop(Store& store, std::string_view name) {
  Status s = store.Drop(name);
  // A rebuild of the name stopped before its swap (killed) left its
  // temporary filter, which no listing shows and `--force` reaches only
  // while the name exists: it goes with the name. A rebuild still running
  // fails either way (its swap finds the name gone).
  // (A drop whose sync failed is an error, yet done: the name is gone.)
  const bool gone = s.ok() || s.code() == StatusCode::kNotFound ||
                    store.ReadConfig(name).status().code() == StatusCode::kNotFound;
  if (gone && ValidateFilterName(name).ok()) {
    (void)store.Drop(TemporaryName(name));
  }
  return s;
}

Status BloomFilter::Rebuild(Store& store, std::string_view name, const FilterOptions& options,
                            const std::function<Status(BloomFilter&)>& fill, Leftover leftover) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, MakeConfig(options));
  const std::string context = "rebuild of '" + std::string(name) + "'";
  if (!config.one_array()) return internal::CheckReplaceable(config).WithContext(context);
  // The filter replaced must be one array as well: the other parts of a
  // sharded, scaling or window filter would outlive the swap, orphaned
  // beside a filter that no longer knows them. Asked before anything is
  // built; the stores' Replace asks again at the swap.
  // And it must exist: a rebuild replaces a filter, and a misspelt name
  // would otherwise make a new one.
  Result<FilterConfig> old = store.ReadConfig(name);
  if (old.status().code() == StatusCode::kNotFound) return old.status().WithContext(context);
  REDBLOOM_RETURN_IF_ERROR(internal::CheckReplaced(name, old).WithContext(context));
  // A name no user filter can have, kept beside NAME by every store. Made
  // here or not at all: its creation is what keeps a second rebuild out.
  const std::string temp = TemporaryName(name);
  if (leftover == Leftover::kDrop) {
    if (Status s = store.Drop(temp); !s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  if (Status s = store.Create(temp, config); !s.ok()) {
    if (s.code() != StatusCode::kAlreadyExists && s.code() != StatusCode::kConflict) {
      return s.WithContext(context);
    }
    return Status::Conflict(
        context + ": its temporary filter '" + temp +
        "' exists: another rebuild of it is running, or one was stopped before its swap. "
        "When none is running, rebuild again with --force "
        "(BloomFilter::Leftover::kDrop), which drops the temporary filter first");
  }
  // The temporary goes when the rebuild fails, or the next rebuild would
  // ask for --force; a drop that fails too (a user denied the command that
  // failed the rebuild may be denied the drop's) is said with the error.
  const auto without_temp = [&](const Status& failed) {
    const Status dropped = store.Drop(temp);
    if (dropped.ok() || dropped.code() == StatusCode::kNotFound) return failed;
    return failed.WithSuffix("; its temporary filter '" + temp +
                             "' is left (dropping it failed: " + dropped.message() +
                             "): rebuild again with --force once that is fixed");
  };
  // A drop of the name while the rebuild runs takes its temporary filter
  // too: the fill or the swap then fails on that ("'.rebuild~NAME' does
  // not exist"), which the CLI told as "the old filter is unchanged". It
  // is said as what it is.
  const auto dropped_meanwhile = [&](const Status& failed) {
    if (failed.code() != StatusCode::kNotFound && failed.code() != StatusCode::kConflict) {
      return failed;
    }
    if (store.ReadConfig(name).status().code() != StatusCode::kNotFound) return failed;
    return internal::DroppedWhileRebuiltStatus(name);
  };
  // (A drop between the temporary's create and this open took it too.)
  Result<std::unique_ptr<BloomFilter>> opened = Open(store, temp);
  if (!opened.ok()) return without_temp(dropped_meanwhile(opened.status())).WithContext(context);
  std::unique_ptr<BloomFilter> replacement = std::move(opened).value();
  Status s;
  try {
    s = fill(*replacement);
  } catch (...) {
    // The caller's fill threw (its own I/O or parsing): the exception is
    // theirs to see, and the temporary must not stay to refuse the next
    // rebuild ("rebuild again with --force").
    replacement.reset();
    (void)store.Drop(temp);
    throw;
  }
  if (s.ok()) s = replacement->Flush();
  // (without_temp last: its "temporary filter is left" stays said.)
  if (!s.ok()) return without_temp(dropped_meanwhile(s)).WithContext(context);  // untouched
  s = dropped_meanwhile(store.Replace(name, temp));
  // Refused before the swap (the temporary is still there): the old filter
  // is untouched.
  if (!s.ok() && store.ReadConfig(temp).status().code() != StatusCode::kNotFound) {
    s = without_temp(s);
  }
  return s.WithContext(context);
}

FilterConfig BloomFilter::config() const { return state().config; }

template <typename Op>
Status BloomFilter::WithReopen(Op&& op_on, Same same) {
  // Every shard of a sharded filter exists from creation on (so the store
  // tells a missing one by its own metadata, as it tells a dropped filter).
  const auto op = [&](State& st) {
    Status s = op_on(st);
    if (s.code() != StatusCode::kNotFound || st.config.shards <= 1) return s;
    std::vector<uint64_t> shards(st.config.initial_parts());
    std::iota(shards.begin(), shards.end(), uint64_t{0});
    return MissingPart(std::move(s), st, shards);
  };
  State* current = &state();
  const FilterConfig& began = current->config;  // states live as long as the handle
  Status s = op(*current);
  // The filter may have been rebuilt or re-created under us. Reopen it; if it
  // is still the same filter the conflict was something else: report it. A
  // second swap can land while reopening (two rebuilds in a row: the config
  // read from one file, the cells opened from the next), so try a few times.
  for (int attempt = 0; attempt < 4 && s.code() == StatusCode::kConflict; ++attempt) {
    auto fresh = Load(store_, name_);
    if (!fresh.ok()) {
      if (fresh.status().code() == StatusCode::kConflict) continue;
      // Why the filter cannot be read again (gone, corrupt metadata, the
      // store down) is the answer: a conflict would send the caller to
      // reopen, which fails the same way.
      return fresh.status();
    }
    {
      std::lock_guard lock(mu_);
      if (current_.load(std::memory_order_relaxed) == current) {
        states_.push_back(*fresh);
        reopened_.store(true, std::memory_order_relaxed);
        current_.store(fresh->get(), std::memory_order_release);
      }
      current = current_.load(std::memory_order_relaxed);
    }
    const FilterConfig& now = current->config;
    const bool kept =
        same == Same::kAny ||
        (same == Same::kHashing ? now.strategy == began.strategy && now.encoding == began.encoding
                                : now.SameFilterAs(began));
    if (!kept) {
      return Status::Conflict("filter '" + name_ + "' was rebuilt or re-created (" +
                              began.ToString() + " -> " + now.ToString() +
                              ") during the call, which worked on the old one; nothing was "
                              "done to the new one");
    }
    s = op(*current);
  }
  return s;
}

Status BloomFilter::MissingPart(Status not_found, State& st, std::span<const uint64_t> parts) {
  // A drop and a create by others between the call and the config's read
  // (redbloomd's DELETE and PUT racing a GET) read like a lost part, and
  // were answered data_loss. A new filter shows as a conflict on the old
  // handle (another incarnation on Redis; the main array retired on file:
  // and mem:, which a part the new filter lacks, a scaling filter's upper
  // layer, does not show), or has every part the old one had from creation
  // on: only a part missing at three looks in a row under a filter that is
  // there, and the handle's own array still live, is lost.
  std::vector<uint64_t> probes;
  if (st.config.initial_parts() > 0) probes.push_back(0);  // the handle's own array
  probes.insert(probes.end(), parts.begin(), parts.end());
  const auto recreated = [&] {
    return Status::Conflict("filter '" + name_ + "' was dropped and created again during the call");
  };
  std::string probe;
  for (int look = 0; look < 3; ++look) {
    if (auto now = store_.ReadConfig(name_); !now.ok()) {
      return now.status().code() == StatusCode::kNotFound ? not_found : now.status();
    }
    bool missing = false;
    for (uint64_t id : probes) {
      Status there = st.bits->ReadBits(id, 0, 1, &probe);
      if (there.code() == StatusCode::kConflict) return recreated();
      if (there.code() == StatusCode::kNotFound) {
        missing = true;
        break;
      }
      REDBLOOM_RETURN_IF_ERROR(there);
    }
    if (!missing) return recreated();
  }
  return Status::DataLoss("filter '" + name_ +
                          "' exists, but a part it has from creation on is missing: its keys "
                          "were deleted, or lost with a server");
}

namespace {

// What a single item hashes as under `encoding`, into *bytes: the item
// itself for bytes and utf8 (false if it is not UTF-8), else its encoding (a
// number's 4 or 8 bytes, the text twice) in per-thread scratch. No Status is
// built.
// The built encodings' part of SingleItemBytes, out of line.
[[gnu::noinline]] bool BuiltItemBytes(Encoding encoding, std::string_view item,
                                      std::string_view* bytes) {
  if (!internal::EncodingBuildsBytes(encoding)) return false;  // SingleItemError says why
  if (encoding == Encoding::kUtf8x2 && !internal::IsUtf8(item)) return false;
  std::string& scratch = internal::Scratch().built_item;
  if (scratch.capacity() > internal::kBuildScratch) std::string().swap(scratch);
  scratch.resize(internal::BuiltSize(encoding, item));
  if (!internal::BuildItem(encoding, item, scratch.data())) return false;
  *bytes = scratch;
  return true;
}

[[gnu::always_inline]] inline bool SingleItemBytes(Encoding encoding, std::string_view item,
                                                   std::string_view* bytes) {
  *bytes = item;
  if (encoding == Encoding::kBytes) return true;
  if (encoding == Encoding::kUtf8) return internal::IsUtf8(item);
  return BuiltItemBytes(encoding, item, bytes);
}

}  // namespace

// See WithReopenHashed.
struct BloomFilter::Hashed {
  std::span<const std::string_view> items;  // none: the caller's own hashes
  std::vector<Hash128>* hashes = nullptr;   // the items' hashes
  std::span<const Hash128> given;           // the caller's hashes
  Strategy strategy{};
  Encoding encoding{};
  // Given hashes made for `strategy` and `encoding` (the pinned Hashes forms).
  bool pinned = false;

  // Hashes the items for `config`.
  Status Make(const FilterConfig& config) {
    strategy = config.strategy;
    encoding = config.encoding;
    hashes->resize(items.size());
    return internal::HashItems(config, items, hashes->data());
  }
  // `items`, to be hashed into `hashes` (Make).
  static Hashed Items(std::span<const std::string_view> items, std::vector<Hash128>* hashes) {
    return Hashed{.items = items, .hashes = hashes, .given = {}, .strategy = {}, .encoding = {}};
  }
  // The caller's hashes. Whoever made them, they are taken as made for the
  // state the call begins on: WithReopen's Same::kHashing refuses a reopen
  // that changes the strategy or encoding (a handle whose state moved
  // before the call cannot tell, which the Hashes forms document).
  static Hashed Given(std::span<const Hash128> hashes) {
    return Hashed{.items = {}, .hashes = nullptr, .given = hashes, .strategy = {}, .encoding = {}};
  }
  // The caller's hashes, made for `config`: refused on any state whose
  // strategy or encoding is another.
  static Hashed GivenFor(const FilterConfig& config, std::span<const Hash128> hashes) {
    return Hashed{.items = {},
                  .hashes = nullptr,
                  .given = hashes,
                  .strategy = config.strategy,
                  .encoding = config.encoding,
                  .pinned = true};
  }
  // For a pinned batch, the conflict with a state of another strategy or
  // encoding; else OK.
  Status CheckPinned(const std::string& name, const FilterConfig& now) const {
    if (!pinned || (now.strategy == strategy && now.encoding == encoding)) return Status::Ok();
    return Status::Conflict(
        "filter '" + name + "' has strategy " + std::string(StrategyName(now.strategy)) +
        " and encoding " + std::string(EncodingName(now.encoding)) + ", not the " +
        std::string(StrategyName(strategy)) + " and " + std::string(EncodingName(encoding)) +
        " its hashes were made for (rebuilt or re-created): hash again, with "
        "the new config()");
  }
  std::span<const Hash128> span() const {
    return hashes != nullptr ? std::span<const Hash128>(*hashes) : given;
  }
  size_t size() const { return span().size(); }
};

Status BloomFilter::OneItem(One op, std::string_view item, bool* answer) {
  uint8_t out = 0;
  Status s = WithReopen([&](State& st) -> Status {
    // Hashed here, under the state's config: a reopen may change the strategy.
    std::string_view bytes;
    if (!SingleItemBytes(st.config.encoding, item, &bytes)) {
      return internal::ItemError(st.config.encoding, item);
    }
    const Hash128 hash = st.strategy->hash(bytes);
    const std::span<const Hash128> one(&hash, 1);
    out = 0;
    FilterContext f(name_, st.config, *st.bits, store_.clock(), st.cache);
    const internal::KindPolicy& policy = *st.policy;
    switch (op) {
      case One::kAdd:
        return policy.Add(f, one, answer != nullptr ? &out : nullptr);  // as AddHashes
      case One::kContains:
        return policy.Contains(f, one, &out);
      case One::kRemove:
        return RemoveRefused(policy.Remove(f, one, &out), st);
    }
    return Status::Internal("unknown operation");
  });
  if (s.ok() && answer != nullptr) *answer = out != 0;
  return s;
}

namespace {

// Runs a policy operation that fills one answer per item, into *out itself
// (its capacity is reused from batch to batch): `out` is zeroed before each
// attempt, and on failure it reports no item (never half an answer that reads
// as "absent" or "new").
template <typename Op>
Status Answer(size_t n, std::vector<uint8_t>* out, Op&& op) {
  std::vector<uint8_t> own;
  std::vector<uint8_t>& answers = out != nullptr ? *out : own;
  answers.assign(n, 0);
  Status s = op(answers);
  if (!s.ok()) answers.clear();
  return s;
}

// A batch refused before the store is asked (an item the encoding does not
// take) leaves no answers either, as Answer does for one the store fails.
Status Refused(Status s, std::vector<uint8_t>* out) {
  if (out != nullptr) out->clear();
  return s;
}

}  // namespace

Status BloomFilter::Add(std::string_view item, bool* added) {
  if (const State& st = state(); st.single != nullptr) {
    std::string_view bytes;
    if (!SingleItemBytes(st.config.encoding, item, &bytes)) {
      return internal::ItemError(st.config.encoding, item);
    }
    bool fresh = false;
    if (st.single->AddOne(st.strategy->hash(bytes), *st.strategy->word_kernels, st.single_set_one,
                          st.single_check.geometry, &fresh)) {
      if (added != nullptr) *added = fresh;
      return Status::Ok();
    }
  }
  return OneItem(One::kAdd, item, added);
}

Status BloomFilter::AddMany(std::span<const std::string_view> items, std::vector<uint8_t>* added) {
  // The direct path of single calls, as ContainsMany takes it, for kernels
  // that hash a batch in the pass that sets it (block's
  // set_items_exclusive, State::single_add_items): the items are validated
  // first, so that a bad one writes nothing, then hashed and added in one
  // pass. Anything it does not take (another writer holding the filter, a
  // rebuilt filter) goes the general way.
  if (const State& st = state(); st.single_add_items) {
    if (st.config.encoding == Encoding::kUtf8) {
      if (Status s = internal::CheckUtf8(items, 0); !s.ok()) return Refused(std::move(s), added);
    }
    if (added != nullptr) added->resize(items.size());
    if (st.single->AddItems(items, *st.strategy->word_kernels, st.single_check.geometry,
                            added != nullptr ? added->data() : nullptr)) {
      return Status::Ok();
    }
  }
  std::vector<Hash128> own;
  Hashed batch = Hashed::Items(items, &internal::HashScratch(items.size(), own));
  if (Status s = batch.Make(state().config); !s.ok()) return Refused(std::move(s), added);
  return AddHashed(batch, added);
}

// A single check of a bytes item or an ASCII utf8 one (most ids) on a filter
// with single-item kernels: the array is found before the item is hashed,
// so that nothing after the hash's call can fall back, and everything else
// is in ContainsSlowly. Callgrind, a block check of an 11-byte id: 210 -> 202
// instructions (four registers saved instead of six, the item's bytes no
// longer kept on the stack). Release at 1e6, single / batched checks, in a
// slow hour of the host, eight processes alternating with the build before:
// block 2.05-2.16 against 1.95-2.28 (lower in six pairs of eight), at 0.1%
// 2.02-2.16 against 2.15-2.45 (all eight). In its usual phase, three
// processes against d2e7f9c (before this and the pointer Status and the
// two-load ASCII test): block 1.93-1.94 against 2.03-2.07, at 0.1%
// 1.98-2.01 against 2.07-2.08. The kernel is the one resolved for the
// filter's geometry when it was opened (WordKernels::test_one_for): block's
// AVX2 form is called directly, without TestOne's dispatch on k and with no
// stack frame, 201 -> 193 instructions at 0.1%; eight processes each,
// alternating with the build before: medians 1.94 -> 1.88 at 1%, 2.02 ->
// 1.99 at 0.1%. The hash and the test are one call (State::single_check_item,
// block's inlines XXH3 for ids of up to 16 bytes), and Contains keeps no
// hash between two: callgrind 193 -> 171 instructions per block check of an
// 11-byte id, with its caller's loop (0.1%: 213 -> 189; guava64 338 -> 340).
// On a Zen 3 host (no AVX-512, 512 KiB of L2), Release at 1e6, single /
// batched block checks, seven alternating pairs of processes: 2.16-2.42 ->
// 1.97-2.02 where neither process hit the host's slow phase.
Result<bool> BloomFilter::Contains(std::string_view item) {
  const State& st = state();
  const Encoding encoding = st.config.encoding;
  if (st.single != nullptr &&
      (encoding == Encoding::kBytes ||
       (encoding == Encoding::kUtf8 && internal::NonAsciiBits(item) == 0))) {
    if (uint64_t* const words = st.single->SingleCheckWords(); words != nullptr) {
      return st.single_check_item(item, st.single_check, words);
    }
  }
  return ContainsSlowly(item);
}

[[gnu::noinline]] Result<bool> BloomFilter::ContainsSlowly(std::string_view item) {
  if (const State& st = state(); st.single != nullptr) {
    std::string_view bytes;
    if (!SingleItemBytes(st.config.encoding, item, &bytes)) {
      return internal::ItemError(st.config.encoding, item);
    }
    bool present = false;
    if (st.single->TestOne(st.strategy->hash(bytes), *st.strategy->word_kernels,
                           st.single_check.geometry, &present)) {
      return present;
    }
  }
  bool present = false;
  REDBLOOM_RETURN_IF_ERROR(OneItem(One::kContains, item, &present));
  return present;
}

Status BloomFilter::ContainsMany(std::span<const std::string_view> items,
                                 std::vector<uint8_t>* present) {
  // The direct path of single calls (State::single), for a batch of items
  // whose kernels hash them themselves (block's test_items): one pass, no
  // hashes stored between two. Anything else, and anything it cannot answer
  // (a rebuilt or dropped filter, a geometry the kernels do not take), goes
  // the general way below.
  if (const State& st = state(); st.single != nullptr && present != nullptr &&
                                 st.strategy->word_kernels->test_items != nullptr &&
                                 internal::ItemsAreTheirBytes(st.config.encoding)) {
    present->resize(items.size());
    bool ascii = false;
    if (st.single->TestItems(items, *st.strategy->word_kernels, st.single_check.geometry,
                             present->data(), &ascii)) {
      if (ascii || st.config.encoding == Encoding::kBytes) return Status::Ok();
      if (Status s = internal::CheckUtf8(items, 0); !s.ok()) return Refused(std::move(s), present);
      return Status::Ok();
    }
  }
  std::vector<Hash128> own;
  Hashed batch = Hashed::Items(items, &internal::HashScratch(items.size(), own));
  if (Status s = batch.Make(state().config); !s.ok()) return Refused(std::move(s), present);
  return ContainsHashed(batch, present);
}

Status BloomFilter::Remove(std::string_view item, bool* removed) {
  return OneItem(One::kRemove, item, removed);
}

Status BloomFilter::RemoveMany(std::span<const std::string_view> items,
                               std::vector<uint8_t>* removed) {
  std::vector<Hash128> own;
  Hashed batch = Hashed::Items(items, &internal::HashScratch(items.size(), own));
  if (Status s = batch.Make(state().config); !s.ok()) return Refused(std::move(s), removed);
  return RemoveHashed(batch, removed);
}

// WithReopen for a batch: each attempt runs on hashes made by the state's
// strategy and encoding. Before, a batch hashed once, under the state the
// handle had, and a reopen ran those hashes on the filter a rebuild with
// --strategy, or a drop and create with another encoding, had put under the
// name: checks answered absent for present items, and adds were
// acknowledged and set bits no check of the items reads.
template <typename Op>
Status BloomFilter::WithReopenHashed(Hashed& batch, Op&& op) {
  // The caller's hashes stay valid only while the strategy and encoding do.
  // Pinned hashes are checked against every state they meet (CheckPinned),
  // so a reopen to another strategy may go on: it may be the one they were
  // made for, which a handle that had not followed the rebuild yet refused.
  const Same same = batch.hashes == nullptr && !batch.pinned ? Same::kHashing : Same::kAny;
  return WithReopen(
      [&](State& st) -> Status {
        if (batch.hashes != nullptr &&
            (st.config.strategy != batch.strategy || st.config.encoding != batch.encoding)) {
          REDBLOOM_RETURN_IF_ERROR(batch.Make(st.config));
        }
        REDBLOOM_RETURN_IF_ERROR(batch.CheckPinned(name_, st.config));
        return op(st, batch.span());
      },
      same);
}

Status BloomFilter::AddHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* added) {
  Hashed batch = Hashed::Given(hashes);
  return AddHashed(batch, added);
}

Status BloomFilter::ContainsHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* present) {
  Hashed batch = Hashed::Given(hashes);
  return ContainsHashed(batch, present);
}

Status BloomFilter::RemoveHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* removed) {
  Hashed batch = Hashed::Given(hashes);
  return RemoveHashed(batch, removed);
}

Status BloomFilter::AddHashes(const FilterConfig& hashed_for, std::span<const Hash128> hashes,
                              std::vector<uint8_t>* added) {
  Hashed batch = Hashed::GivenFor(hashed_for, hashes);
  return AddHashed(batch, added);
}

Status BloomFilter::ContainsHashes(const FilterConfig& hashed_for, std::span<const Hash128> hashes,
                                   std::vector<uint8_t>* present) {
  Hashed batch = Hashed::GivenFor(hashed_for, hashes);
  return ContainsHashed(batch, present);
}

Status BloomFilter::RemoveHashes(const FilterConfig& hashed_for, std::span<const Hash128> hashes,
                                 std::vector<uint8_t>* removed) {
  Hashed batch = Hashed::GivenFor(hashed_for, hashes);
  return RemoveHashed(batch, removed);
}

Status BloomFilter::AddHashed(Hashed& batch, std::vector<uint8_t>* added) {
  std::vector<uint8_t> own;
  std::vector<uint8_t>& out = added != nullptr ? *added : own;
  out.assign(batch.size(), 0);
  size_t confirmed = 0;
  Status s = WithReopenHashed(batch, [&](State& st, std::span<const Hash128> hashes) {
    std::fill(out.begin(), out.end(), 0);
    FilterContext f(name_, st.config, *st.bits, store_.clock(), st.cache);
    // No answers asked for, none kept: a store may then send an add again
    // whose answer it lost (RedisBitStore::AddBatch).
    Status added_all = st.policy->Add(f, hashes, added != nullptr ? out.data() : nullptr);
    confirmed = added_all.ok() ? hashes.size() : f.confirmed();
    return added_all;
  });
  // The answers of the items the store confirmed before it failed (dedup
  // prints those lines; dropping them would lose them for good, since a
  // second run finds them present).
  if (!s.ok()) out.resize(confirmed);
  return s;
}

Status BloomFilter::ContainsHashed(Hashed& batch, std::vector<uint8_t>* present) {
  return Answer(batch.size(), present, [&](std::vector<uint8_t>& out) {
    return WithReopenHashed(batch, [&](State& st, std::span<const Hash128> hashes) {
      std::fill(out.begin(), out.end(), 0);
      FilterContext f(name_, st.config, *st.bits, store_.clock(), st.cache);
      return st.policy->Contains(f, hashes, out.data());
    });
  });
}

Status BloomFilter::RemoveHashed(Hashed& batch, std::vector<uint8_t>* removed) {
  return Answer(batch.size(), removed, [&](std::vector<uint8_t>& out) {
    return WithReopenHashed(batch, [&](State& st, std::span<const Hash128> hashes) {
      std::fill(out.begin(), out.end(), 0);
      FilterContext f(name_, st.config, *st.bits, store_.clock(), st.cache);
      return RemoveRefused(st.policy->Remove(f, hashes, out.data()), st);
    });
  });
}

Status BloomFilter::RemoveRefused(Status s, const State& st) {
  if (s.code() != StatusCode::kUnimplemented) return s;
  // The refusal asked no store; the filter may since have been rebuilt or
  // made again as a counting one, which nothing else in the call would
  // show: the first remove on a handle that had not seen it was refused,
  // naming the old kind. A conflict then, which reopens.
  Result<FilterConfig> now = store_.ReadConfig(name_);
  if (now.ok() && !now->SameFilterAs(st.config)) {
    return Status::Conflict("filter '" + name_ + "' changed since this handle read it");
  }
  if (now.status().code() == StatusCode::kNotFound) return now.status();
  return s;
}

namespace {

// ItemOffsets of a config known to be valid (a handle's, read from a store).
Result<std::vector<uint64_t>> OffsetsOf(const FilterConfig& config, std::string_view item) {
  Hash128 hash;
  std::string scratch;
  REDBLOOM_RETURN_IF_ERROR(HashItem(config.strategy, config.encoding, item, &scratch, &hash));
  std::vector<uint64_t> offsets(config.geometry.hashes);
  ComputeOffsets(config.strategy, hash, config.geometry, offsets.data());
  return offsets;
}

}  // namespace

Result<std::vector<uint64_t>> ItemOffsets(const FilterConfig& config, std::string_view item) {
  REDBLOOM_RETURN_IF_ERROR(internal::CheckMadeConfig(config));
  return OffsetsOf(config, item);
}

Result<std::vector<uint64_t>> BloomFilter::Offsets(std::string_view item) const {
  return OffsetsOf(config(), item);
}

Status BloomFilter::Clear() {
  return WithReopen([&](State& st) { return st.bits->Clear(); });
}

Status BloomFilter::Flush() { return state().bits->Flush(); }

Status BloomFilter::Revalidate() {
  return WithReopen([&](State& st) { return st.bits->CheckCurrent(); });
}

namespace {

// Whether part `id` may vanish while its filter lives: a window slice that
// expired. Shards and scaling layers go only with the filter.
bool ExpiresAlone(const FilterConfig& c, uint64_t id) {
  return id >= c.initial_parts() && !KindOf(c.kind).dense_parts;
}

Status NotOneArray(const std::string& name, const FilterConfig& c, std::string_view what) {
  return Status::InvalidArgument("filter '" + name + "' is a " +
                                 std::string(FilterKindName(c.kind)) +
                                 " filter with several bit arrays; " + std::string(what));
}

}  // namespace

Result<uint64_t> PartBytes(const FilterConfig& config, uint64_t part) {
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(config, part));
  return sizing.bytes(config.cell_bits());
}

Status BloomFilter::ReadBitmap(std::string* out) try {
  return ReadWhole(
      [&](const FilterConfig& c, std::span<const Part>) -> Status {
        if (!c.one_array()) return NotOneArray(name_, c, "read them with ReadParts");
        out->assign(static_cast<size_t>(c.data_bytes()), '\0');
        return Status::Ok();
      },
      [&](uint64_t, uint64_t offset, std::string_view bytes) -> Status {
        std::memcpy(out->data() + offset, bytes.data(), bytes.size());
        return Status::Ok();
      });
} catch (const std::bad_alloc&) {
  // A large filter's bits may not fit in the caller's memory: an error, as
  // BitmapBuilder::Make gives, not a throw through a call that returns a
  // Status (it ended a library user's process).
  return internal::OutOfMemory("no room to read the " + std::to_string(config().data_bytes()) +
                               " bytes of filter '" + name_ + "'");
}

Status BloomFilter::ReadBitmap(std::span<char> out) {
  // A size other than the handle's is the caller's; one that the handle had
  // until a rebuild changed it during the call is a conflict.
  const FilterConfig& now = state().config;
  if (!now.one_array()) return NotOneArray(name_, now, "read them with ReadParts");
  const uint64_t expected = now.data_bytes();
  if (out.size() != expected) {
    return Status::InvalidArgument("a buffer of " + std::to_string(out.size()) +
                                   " bytes for filter '" + name_ + "', which holds " +
                                   std::to_string(expected) + " (config().data_bytes())");
  }
  return ReadWhole(
      [&](const FilterConfig& c, std::span<const Part>) -> Status {
        if (!c.one_array()) return NotOneArray(name_, c, "read them with ReadParts");
        if (out.size() != c.data_bytes()) {
          return Status::Conflict("filter '" + name_ + "' holds " + std::to_string(c.data_bytes()) +
                                  " bytes of bits, not " + std::to_string(out.size()) +
                                  ": it was rebuilt during the call");
        }
        std::memset(out.data(), 0, out.size());
        return Status::Ok();
      },
      [&](uint64_t, uint64_t offset, std::string_view bytes) -> Status {
        std::memcpy(out.data() + offset, bytes.data(), bytes.size());
        return Status::Ok();
      });
}

Status BloomFilter::ReadWhole(
    const std::function<Status(const FilterConfig&, std::span<const Part>)>& begin,
    const std::function<Status(uint64_t part, uint64_t offset, std::string_view bytes)>& piece) {
  // Nothing is the caller's until the call ends, so a filter swapped during
  // the read for one of the same parameters (a rebuild) is read again;
  // another filter is a conflict, as for every call that reads a filter's
  // bits for its caller (Same::kFilter).
  const FilterConfig began = config();
  Status s;
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (attempt > 0 && !config().SameFilterAs(began)) break;
    s = StreamParts(begin, piece);
    if (s.code() != StatusCode::kConflict) break;
  }
  return s;
}

Status BloomFilter::ReadParts(std::vector<Part>* out) try {
  size_t at = 0;  // the part the pieces fill, in listing order
  Status s = ReadWhole(
      [&](const FilterConfig& c, std::span<const Part> parts) -> Status {
        out->clear();
        at = 0;
        for (const Part& listed : parts) {
          REDBLOOM_ASSIGN_OR_RETURN(uint64_t bytes, PartBytes(c, listed.id));
          out->push_back({.id = listed.id, .items = listed.items, .bytes = {}});
          out->back().bytes.resize(static_cast<size_t>(bytes));
        }
        return Status::Ok();
      },
      [&](uint64_t part, uint64_t offset, std::string_view bytes) -> Status {
        while (at < out->size() && (*out)[at].id != part) ++at;
        if (at == out->size()) return Status::Internal("a piece of a part not listed");
        std::memcpy((*out)[at].bytes.data() + offset, bytes.data(), bytes.size());
        return Status::Ok();
      });
  if (!s.ok()) out->clear();
  return s;
} catch (const std::bad_alloc&) {
  out->clear();
  return internal::OutOfMemory("reading the bit arrays of filter '" + name_ + "'");
}

Status BloomFilter::StreamParts(
    const std::function<Status(const FilterConfig&, std::span<const Part>)>& begin,
    const std::function<Status(uint64_t part, uint64_t offset, std::string_view bytes)>& piece) {
  // The listing may reopen the filter (rebuilt before anything was taken);
  // the bytes may not: the callbacks have taken part of the old one by then.
  State* used = nullptr;
  std::vector<Part> parts;
  std::string mark;
  REDBLOOM_RETURN_IF_ERROR(WithReopen(
      [&](State& st) -> Status {
        const FilterConfig& c = st.config;
        FilterContext f(name_, c, *st.bits, store_.clock(), st.cache);
        REDBLOOM_ASSIGN_OR_RETURN(mark, st.bits->SwapMark());
        parts.clear();
        REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> ids, KindOf(c.kind).policy->LiveParts(f));
        for (uint64_t id : ids) {
          Result<uint64_t> items = st.bits->ItemCount(id);
          if (items.status().code() == StatusCode::kNotFound && ExpiresAlone(c, id)) continue;
          if (items.status().code() == StatusCode::kNotFound) {
            return MissingPart(items.status(), st, {&id, 1})
                .WithContext("part " + std::to_string(id));
          }
          REDBLOOM_RETURN_IF_ERROR(items.status());
          parts.push_back({.id = id, .items = *items, .bytes = {}});
        }
        used = &st;
        return Status::Ok();
      },
      Same::kFilter));
  const FilterConfig& c = used->config;
  // A swap met part-way: the handle moves to the new filter for its next
  // call (ReadParts reads again), though this call fails.
  const auto swapped = [&](Status s) {
    (void)WithReopen([&](State& st) { return &st == used ? s : Status::Ok(); });
    return s;
  };
  REDBLOOM_RETURN_IF_ERROR(begin(c, parts));
  std::string chunk;
  for (const Part& part : parts) {
    REDBLOOM_ASSIGN_OR_RETURN(uint64_t total, PartBytes(c, part.id));
    for (uint64_t offset = 0; offset < total; offset += kStreamPiece) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(kStreamPiece, total - offset));
      Status s = used->bits->ReadBits(part.id, offset, len, &chunk);
      if (!s.ok() && ExpiresAlone(c, part.id) && LeftTheFilter(*used, part.id)) break;
      if (s.code() == StatusCode::kNotFound) s = MissingPart(std::move(s), *used, {&part.id, 1});
      if (s.code() == StatusCode::kConflict)
        return swapped(s.WithContext("part " + std::to_string(part.id)));
      if (!s.ok()) return s.WithContext("part " + std::to_string(part.id));
      // A swap the read went on across (a Redis rebuild with the same
      // parameters) would join two filters' bits in what the callbacks take.
      REDBLOOM_ASSIGN_OR_RETURN(const std::string now, used->bits->SwapMark());
      if (now != mark) {
        return swapped(Status::Conflict("filter '" + name_ +
                                        "' was rebuilt during the call; what it took so far was "
                                        "the old filter's"));
      }
      // A bitmap shorter than its config (a Redis key never pre-sized, as
      // the Java service leaves it) reads as zeros past its end.
      chunk.resize(len, '\0');
      REDBLOOM_RETURN_IF_ERROR(piece(part.id, offset, chunk));
    }
  }
  return Status::Ok();
}

bool BloomFilter::LeftTheFilter(State& st, uint64_t part) {
  // A window slice that expired as it was read: its key or file is gone
  // (Redis reads a key that vanished under a read as data_loss).
  FilterContext f(name_, st.config, *st.bits, store_.clock(), st.cache);
  Result<std::vector<uint64_t>> live = KindOf(st.config.kind).policy->LiveParts(f);
  return live.ok() && std::find(live->begin(), live->end(), part) == live->end();
}

namespace {

// A count to add, as the stores keep counts: below 2^63 (Redis's HINCRBY
// refused more as "internal", mem: and file: wrapped past 2^64).
Status CheckNewItems(uint64_t new_items) {
  if (new_items <= static_cast<uint64_t>(INT64_MAX)) return Status::Ok();
  return Status::InvalidArgument("an item count of " + std::to_string(new_items) +
                                 " is past 2^63 - 1");
}

}  // namespace

Status BloomFilter::MergeParts(std::span<const Part> parts) {
  return WithReopen(
      [&](State& st) -> Status {
        const FilterConfig& c = st.config;
        for (const Part& part : parts) {
          REDBLOOM_RETURN_IF_ERROR(
              CheckNewItems(part.items).WithContext("part " + std::to_string(part.id)));
          auto bytes = PartBytes(c, part.id);
          if (!bytes.ok()) return bytes.status().WithContext("part " + std::to_string(part.id));
          if (part.bytes.size() != *bytes) {
            return Status::InvalidArgument("part " + std::to_string(part.id) + " has " +
                                           std::to_string(part.bytes.size()) + " bytes; filter '" +
                                           name_ + "' needs " + std::to_string(*bytes));
          }
        }
        FilterContext f(name_, c, *st.bits, store_.clock(), st.cache);
        const internal::KindPolicy& policy = *KindOf(c.kind).policy;
        for (const Part& part : parts) {
          bool skip = false;
          REDBLOOM_RETURN_IF_ERROR(policy.PrepareMerge(f, part.id, &skip));
          if (skip) continue;
          REDBLOOM_RETURN_IF_ERROR(st.bits->OrBits(part.id, part.bytes, part.items));
        }
        return Status::Ok();
      },
      Same::kFilter);
}

Status BloomFilter::MergePartBytes(uint64_t part, uint64_t offset, std::string_view bytes,
                                   uint64_t new_items, bool* skipped) {
  REDBLOOM_RETURN_IF_ERROR(CheckNewItems(new_items));
  return WithReopen(
      [&](State& st) -> Status {
        const FilterConfig& c = st.config;
        auto size = PartBytes(c, part);
        if (!size.ok()) return size.status().WithContext("part " + std::to_string(part));
        if (offset > *size || bytes.size() > *size - offset) {
          return Status::InvalidArgument("bytes [" + std::to_string(offset) + ", " +
                                         std::to_string(offset + bytes.size()) + ") of part " +
                                         std::to_string(part) + " lie outside its " +
                                         std::to_string(*size) + " bytes");
        }
        FilterContext f(name_, c, *st.bits, store_.clock(), st.cache);
        bool skip = false;
        REDBLOOM_RETURN_IF_ERROR(KindOf(c.kind).policy->PrepareMerge(f, part, &skip));
        if (skipped != nullptr) *skipped = skip;
        if (skip) return Status::Ok();
        return st.bits->OrBitsAt(part, offset, bytes, new_items);
      },
      Same::kFilter);
}

Result<FilterStats> BloomFilter::PartStats(uint64_t part) {
  // A part the kind cannot have is not found, on every store, checked here
  // as ReadBitmap checks a buffer's size: Redis sized it first
  // (kInvalidArgument, or kResourceExhausted past a scaling filter's last
  // layer), and WithReopen takes a sharded filter's kNotFound for a lost
  // shard (kDataLoss).
  if (Result<uint64_t> bytes = PartBytes(state().config, part); !bytes.ok()) {
    return Status::NotFound("part " + std::to_string(part) + " of filter '" + name_ +
                            "' does not exist: " + bytes.status().message());
  }
  FilterStats stats;
  Status s = WithReopen([&](State& st) -> Status {
    REDBLOOM_ASSIGN_OR_RETURN(stats, st.bits->Stats(part));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return stats;
}

Status BloomFilter::OrBitmap(std::string_view bitmap, uint64_t new_items) {
  REDBLOOM_RETURN_IF_ERROR(CheckNewItems(new_items));
  return WithReopen(
      [&](State& st) -> Status {
        const FilterConfig& c = st.config;
        if (!c.one_array()) {
          return NotOneArray(name_, c,
                             "bulk loads, imports and merges of one bitmap apply to plain "
                             "and counting filters");
        }
        if (bitmap.size() != c.data_bytes()) {
          return Status::InvalidArgument("bitmap has " + std::to_string(bitmap.size()) +
                                         " bytes; filter '" + name_ + "' has " +
                                         std::to_string(c.data_bytes()));
        }
        return st.bits->OrBits(0, bitmap, new_items);
      },
      Same::kFilter);
}

Result<FilterInfo> BloomFilter::Info() {
  FilterInfo info;
  Status s = WithReopen([&](State& st) -> Status {
    const FilterConfig& c = st.config;
    info = FilterInfo();
    info.name = name_;
    info.config = c;
    FilterContext f(name_, c, *st.bits, store_.clock(), st.cache);
    REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> ids, KindOf(c.kind).policy->LiveParts(f));
    // log of the probability that no part answers "present" for a fresh item;
    // log1p/expm1 keep rates like 1e-17 from rounding to 0.
    double log_miss = 0.0;
    double shard_fpp = 0.0;  // the sum of the parts' rates (shards: see below)
    for (uint64_t id : ids) {
      auto stats = st.bits->Stats(id);
      if (!stats.ok() && stats.status().code() == StatusCode::kNotFound) {
        // A window slice may expire between the listing and the read. A part
        // the filter keeps while it lives (a plain filter's shards, a scaling
        // filter's layers) is gone with the filter (dropped, expired:
        // NotFound as before), or else its data is lost, which is no smaller
        // filter.
        if (ExpiresAlone(c, id)) continue;
        return MissingPart(stats.status(), st, {&id, 1}).WithContext("part " + std::to_string(id));
      }
      if (!stats.ok()) return stats.status();
      REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, f.Sizing(id));
      const Geometry& g = sizing.geometry;
      ++info.parts;
      info.bits += g.bits;
      info.memory_bytes += sizing.bytes(c.cell_bits());
      info.bits_set += stats->bits_set;
      info.bits_set_exact = info.bits_set_exact && stats->bits_set_exact;
      info.items_added += stats->items_added;
      const uint64_t estimate = EstimateItems(c.strategy, stats->bits_set, g);
      info.approximate_items = (estimate == UINT64_MAX || info.approximate_items == UINT64_MAX)
                                   ? UINT64_MAX
                                   : info.approximate_items + estimate;
      const double fpp = FalsePositiveRate(c.strategy, stats->bits_set, g);
      log_miss += std::log1p(-fpp);
      shard_fpp += fpp;
    }
    info.fill_ratio = info.bits == 0 ? 0 : static_cast<double>(info.bits_set) / info.bits;
    // A check reads every layer or slice, so any may answer it; but one shard
    // only, the item's: a sharded filter's rate is the shards' mean (their
    // union read 13% for a 16-shard filter measuring 0.9%).
    if (c.shards > 1) {
      info.current_fpp = info.parts == 0 ? 0.0 : shard_fpp / static_cast<double>(info.parts);
    } else {
      info.current_fpp = log_miss == 0 ? 0.0 : -std::expm1(log_miss);
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return info;
}

}  // namespace redbloom
