// BloomFilter: the facade most callers want. It turns items into hashes
// (funnel), hashes into offsets (strategy), and hands batches of offsets to a
// BitStore.
//
//   auto store = redbloom::Store::Open("file:/var/lib/redbloom");
//   redbloom::FilterOptions o{.capacity = 1'000'000, .error_rate = 0.01};
//   auto filter = redbloom::BloomFilter::Create(**store, "orders", o);
//   if (!filter.ok()) { /* filter.status().ToString() */ }
//   redbloom::Status s = (*filter)->Add("ORD-99821");
//   auto hit = (*filter)->Contains("ORD-99821");   // Result<bool>
//
// Guarantees: an item that was added (the call returned OK) is always found.
// Contains answers true for an item never added with probability about the
// configured error rate while at most `capacity` items are in the filter;
// Info() reports the current expected rate. Every batch is validated before
// any bit is written, and every store failure is returned as an error, never
// as "absent".
//
// Kinds (FilterOptions::kind): plain; counting (RemoveMany); scaling (grows by
// layers as it fills); window (forgets items older than its window). The same
// calls serve every kind.
//
// Thread safety: all methods may be called concurrently. The Store must
// outlive the filter.
#ifndef REDBLOOM_BLOOM_FILTER_H_
#define REDBLOOM_BLOOM_FILTER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/filter_config.h"
#include "redbloom/hash.h"
#include "redbloom/status.h"
#include "redbloom/store.h"

namespace redbloom {

// For scaling and window filters every figure sums (or, for the rate,
// combines) the live parts.
struct FilterInfo {
  std::string name;
  FilterConfig config;
  uint64_t parts = 0;              // layers (scaling) or live slices (window); else 1
  uint64_t bits = 0;               // cells in all parts
  uint64_t memory_bytes = 0;       // bytes of all parts (cells * cell bits / 8)
  uint64_t bits_set = 0;           // cells currently non-zero
  uint64_t items_added = 0;        // adds that set a new cell, minus removes
  uint64_t approximate_items = 0;  // distinct items, Guava's estimate from the fill
                                   // (like BF.CARD; UINT64_MAX if a part is full)
  double fill_ratio = 0;           // bits_set / bits
  double current_fpp = 0;          // (fill)^k per part, combined over the parts (a
                                   // sharded filter: their mean, one shard per item)
  // False when bits_set (and so the figures derived from it) was estimated
  // from a sample of a large part (see FilterStats::bits_set_exact).
  bool bits_set_exact = true;
};

class BloomFilter {
 public:
  BloomFilter(const BloomFilter&) = delete;
  BloomFilter& operator=(const BloomFilter&) = delete;
  ~BloomFilter();

  // Creates a filter. If one with identical parameters exists it is opened
  // and *created (if given) is false; other parameters give kConflict. The
  // TTL is not compared (readers need not agree on it): an existing filter
  // keeps its own, which config().ttl_seconds gives.
  static Result<std::unique_ptr<BloomFilter>> Create(Store& store, std::string_view name,
                                                     const FilterOptions& options,
                                                     bool* created = nullptr);
  // Opens an existing filter (kNotFound if none), checking its stored config.
  // kConflict if it was rebuilt with other parameters, or dropped and made
  // again, while it was being opened: open it again.
  static Result<std::unique_ptr<BloomFilter>> Open(Store& store, std::string_view name);
  // Adopts bits that a Java seed service wrote under `name`, recording
  // `options` for them without changing any bit (Redis stores only). With
  // options.capacity and options.error_rate both 0, they are read from what
  // the Java side records (Redisson's config hash; Store::ReadForeignOptions),
  // and only the strategy and encoding come from `options`.
  static Result<std::unique_ptr<BloomFilter>> Attach(Store& store, std::string_view name,
                                                     const FilterOptions& options);
  // Deletes `name` with all its parts, and the temporary filter of a rebuild
  // of it stopped before its swap (also when `name` is gone: kNotFound).
  static Status Drop(Store& store, std::string_view name);
  // Atomic rebuild of an existing plain or counting filter (kNotFound if
  // there is none, kInvalidArgument for a filter of several parts): creates
  // a replacement with `options` (all of them: OptionsOf(config()) gives the
  // old ones) under TemporaryName(name), lets `fill` add its items, then
  // swaps it in with Store::Replace. Readers of NAME answer from
  // the old filter until the swap and from the new one after it, never with
  // an error or a miss caused by the swap. Adds made to the old filter while
  // `fill` runs are not carried over: feed them to `fill` too (or pause them).
  //
  // One rebuild of a name at a time: a temporary filter already there is
  // another rebuild's, running or stopped before its swap (killed, or a
  // crash), and the call answers kConflict without touching it, unless
  // `leftover` is kDrop. Dropping a running rebuild's temporary would let
  // both report success with the items of one missing (each swapped in
  // whatever the name held), so kDrop is for when none runs. An exception
  // from `fill` drops the temporary filter and reaches the caller.
  enum class Leftover { kRefuse, kDrop };
  static Status Rebuild(Store& store, std::string_view name, const FilterOptions& options,
                        const std::function<Status(BloomFilter&)>& fill,
                        Leftover leftover = Leftover::kRefuse);

  const std::string& name() const { return name_; }
  // True once this handle has moved to a newer state of its filter (a
  // rebuild or re-creation that one of its calls met). It keeps every state
  // it used until it is destroyed, since a call may still run on one: on
  // file:, the old file's descriptor, mapping and disk space. A long-lived
  // cache of handles (redbloomd's) replaces such a handle with a fresh one.
  bool Reopened() const { return reopened_.load(std::memory_order_relaxed); }
  // The config in use. It changes only if the filter is rebuilt with other
  // parameters while this handle is open (the handle then reopens it).
  FilterConfig config() const;

  // Adds one item; *added (if given) says whether it was new (turned on a bit).
  Status Add(std::string_view item, bool* added = nullptr);
  // Adds many items. If `added` is not null it is resized to items.size() and
  // added[i] is 1 when item i was new. All items are validated first: one bad
  // item fails the call before anything is written, and the error names it
  // counting from 1 ("item 3" is items[2]). When the store fails
  // part way, *added keeps the answers of the leading items it confirmed
  // added (a plain or counting filter of one array, on Redis: its
  // transactions answered before the failure; a scaling filter: the items
  // placed in layers before the one that failed, as a new layer a full disk
  // refused; a window filter: all of them, when its add in a later slice
  // failed after the one it began with; else none), and the items
  // after them may or may not have been added. The other batch calls below
  // (and their Hashes forms) leave their answer vector empty when they fail.
  Status AddMany(std::span<const std::string_view> items, std::vector<uint8_t>* added = nullptr);
  Result<bool> Contains(std::string_view item);
  // present is resized to items.size(); present[i] is 1 when item i may be present.
  Status ContainsMany(std::span<const std::string_view> items, std::vector<uint8_t>* present);
  // Counting filters: removes items whose counters are all non-zero (atomic
  // per item); removed[i] is 1 when item i was removed. Removing an item that
  // was never added (a false positive) removes someone else's counts: only
  // remove what you added. Other kinds: kUnimplemented.
  Status RemoveMany(std::span<const std::string_view> items, std::vector<uint8_t>* removed);
  Status Remove(std::string_view item, bool* removed = nullptr);

  // The same for items already hashed with the filter's strategy (e.g.
  // through HashObject(config().strategy, value, funnel) and a custom
  // funnel). The encoding of the filter is then the caller's business. A
  // call that finds the filter rebuilt or re-created with another strategy
  // or encoding since the handle last saw it fails kConflict: hash again,
  // with the new config().
  Status AddHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* added = nullptr);
  Status ContainsHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* present);
  Status RemoveHashes(std::span<const Hash128> hashes, std::vector<uint8_t>* removed);
  // The same for hashes made for `hashed_for` (the config() they were made
  // with): kConflict whenever the filter's strategy or encoding is not that
  // config's. Threads that share a handle need these: "since the handle last
  // saw it" above counts every thread's calls, so once another thread's call
  // has followed a rebuild, hashes made before it are taken for the new
  // strategy (checks answer absent, adds set bits no check reads).
  Status AddHashes(const FilterConfig& hashed_for, std::span<const Hash128> hashes,
                   std::vector<uint8_t>* added = nullptr);
  Status ContainsHashes(const FilterConfig& hashed_for, std::span<const Hash128> hashes,
                        std::vector<uint8_t>* present);
  Status RemoveHashes(const FilterConfig& hashed_for, std::span<const Hash128> hashes,
                      std::vector<uint8_t>* removed);

  // Hashes and offsets of one item, in the strategy's order.
  Result<std::vector<uint64_t>> Offsets(std::string_view item) const;

  Status Clear();
  Result<FilterInfo> Info();
  Status Flush();
  // Reopens the handle if its store names another filter now, one the
  // handle was not told of: a file: filter's file moved over by hand (mv,
  // rsync of a backup without --inplace), whose old file the handle wrote
  // (its adds lost with it). Redbloom's own drops, rebuilds and re-creations
  // the handle sees by itself. One stat on file:, a lookup on mem:, kNotFound
  // if the filter is gone; nothing on Redis, whose next call says it (OK
  // here). A long-lived process calls it now and then (redbloomd: every
  // filter_revalidate_ms, beside a read of the stored config).
  Status Revalidate();

  // The whole bitmap (config().data_bytes() bytes, Redis bit order), read in
  // bounded chunks. Concurrent adds may or may not be included.
  Status ReadBitmap(std::string* out);
  // The same into `out`, which must be config().data_bytes() long (else
  // kInvalidArgument; kConflict if a rebuild changed the size during the
  // call). kResourceExhausted from the string form, and from ReadParts,
  // when the process has no memory for the bits.
  Status ReadBitmap(std::span<char> out);
  // Merges a bitmap built elsewhere into this filter (plain and counting
  // filters): bits are ORed, counters added with saturation (see
  // BitStore::OrBits). Never lowers a cell.
  Status OrBitmap(std::string_view bitmap, uint64_t new_items);

  // Every bit array of the filter, for dumps and merges, whatever its kind:
  // part 0 for plain and counting filters, layers 0..L-1 of a scaling filter,
  // the live slices of a window filter (absolute slice numbers). Each holds
  // PartBytes(config(), part) bytes in Redis order, and the part's count.
  struct Part {
    uint64_t id = 0;
    uint64_t items = 0;
    std::string bytes;
  };
  Status ReadParts(std::vector<Part>* out);
  // ReadParts a piece at a time, for callers that stream a filter of any
  // size in bounded memory (exports). `begin` gets the config the parts
  // belong to and every live part with its count (bytes empty), read
  // first; then `piece` gets each part's bytes in order, in pieces of at
  // most kStreamPiece bytes at offsets that are multiples of it, zeros past
  // a bitmap's stored end included. Adds during the call may or may not be
  // in the bytes. A window slice that expires during the call ends early
  // (its items gone with it); a lost shard or layer is kDataLoss; a filter
  // dropped kNotFound, and one rebuilt or re-created after `begin` kConflict,
  // since what the callbacks took cannot be taken back. A callback's error
  // ends the call with it.
  // 4 MiB bounds one Redis command's reply and the time it holds the
  // server, while keeping round trips few (a 1e7-item filter is 3 reads).
  static constexpr size_t kStreamPiece = 4 << 20;
  Status StreamParts(
      const std::function<Status(const FilterConfig&, std::span<const Part>)>& begin,
      const std::function<Status(uint64_t part, uint64_t offset, std::string_view bytes)>& piece);
  // Merges parts (as ReadParts gives them, from this filter or one with the
  // same config) into this filter, as OrBitmap does for each: a scaling
  // filter grows layers up to the highest part, a window filter creates the
  // slices it lacks and skips those that have left its window. Every part is
  // checked (id and size) before anything is written.
  Status MergeParts(std::span<const Part> parts);
  // MergeParts for one piece of a part, so that imports stream a filter of
  // any size in bounded memory: merges `bytes` into part `part` at byte
  // `offset` (making the part exist first, as MergeParts does) and adds
  // `new_items` to its count; empty `bytes` only adds to the count.
  // *skipped (if given) is set when the part has left the filter (a window
  // slice past its window): nothing is written then.
  Status MergePartBytes(uint64_t part, uint64_t offset, std::string_view bytes, uint64_t new_items,
                        bool* skipped = nullptr);
  // One part's fill and count (kNotFound if the part does not exist, or
  // cannot: part 1 of a plain filter).
  Result<FilterStats> PartStats(uint64_t part);

 private:
  struct State;
  BloomFilter(Store& store, std::string name, std::shared_ptr<State> state);
  static Result<std::shared_ptr<State>> Load(Store& store, std::string_view name);
  // The state in use. Read without a lock or a reference count: single-item
  // calls cost ~40 ns less that way.
  State& state() const { return *current_.load(std::memory_order_acquire); }
  // Add and Contains of one item: a batch of one without a heap allocation.
  enum class One { kAdd, kContains, kRemove };
  Status OneItem(One op, std::string_view item, bool* answer);
  // Contains past its fast path (an item whose bytes are built or not ASCII,
  // a filter without single-item kernels, a replaced array): out of line, so
  // that the fast path keeps few values across its one call.
  Result<bool> ContainsSlowly(std::string_view item);
  // Runs `op` on the current state; if the store says the filter changed
  // under us (a rebuild swapped it), reopens and runs it again, on the new
  // filter if it is `Same` enough as the one the call began with, else
  // failing kConflict: bits made for another filter (a merge, a load), or
  // read for another (an export), would be silently wrong.
  enum class Same {
    kAny,      // anything under the name (an item-level call, hashed per state)
    kHashing,  // the same strategy and encoding (hashes the caller made)
    kFilter,   // the same filter parameters (FilterConfig::SameFilterAs)
  };
  template <typename Op>
  Status WithReopen(Op&& op, Same same = Same::kAny);
  // A batch's hashes and the strategy and encoding that made them. A reopen
  // may bring another (a rebuild with --strategy, a drop and create with
  // another encoding): the batch calls then hash their items again for the
  // new state, as OneItem does for one item; the Hashes forms, whose hashes
  // the caller made, fail kConflict.
  struct Hashed;
  template <typename Op>
  Status WithReopenHashed(Hashed& batch, Op&& op);
  Status AddHashed(Hashed& batch, std::vector<uint8_t>* added);
  Status ContainsHashed(Hashed& batch, std::vector<uint8_t>* present);
  Status RemoveHashed(Hashed& batch, std::vector<uint8_t>* removed);
  // `not_found` came from one of `parts`, which the filter of `st` has from
  // creation on. With the filter's config gone too the filter was dropped
  // (or expired): not_found as it is. With every part there now, it was
  // dropped and created again during the call: kConflict, which WithReopen
  // answers by reopening. Else a part's data is lost: kDataLoss.
  Status MissingPart(Status not_found, State& st, std::span<const uint64_t> parts);
  // `s`, a remove's answer on `st`, unless that refused it for a kind that
  // the filter no longer has: kConflict then, for WithReopen.
  Status RemoveRefused(Status s, const State& st);
  // StreamParts for the calls that give their caller nothing until they end
  // (ReadParts, ReadBitmap): a swap of the same filter met part-way is read
  // again from `begin`; another filter is a conflict.
  Status ReadWhole(
      const std::function<Status(const FilterConfig&, std::span<const Part>)>& begin,
      const std::function<Status(uint64_t part, uint64_t offset, std::string_view bytes)>& piece);
  // Whether part `part` (a window slice) is no longer among the live parts.
  bool LeftTheFilter(State& st, uint64_t part);

  Store& store_;
  std::string name_;
  mutable std::mutex mu_;  // serialises reopening
  std::atomic<State*> current_;
  // Every state this handle has used, kept until it is destroyed: a call may
  // still run on a state that a reopen replaced. A handle gains one per
  // rebuild or re-creation of its filter that it sees (guarded by mu_).
  std::vector<std::shared_ptr<State>> states_;
  std::atomic<bool> reopened_{false};
};

// Bytes of part `part` of a filter (see BloomFilter::ReadParts).
Result<uint64_t> PartBytes(const FilterConfig& config, uint64_t part);

// Offsets of `item` under a config, without any store (for `redbloom offsets`).
// kInvalidArgument for a config not made by MakeConfig (or read from a store).
Result<std::vector<uint64_t>> ItemOffsets(const FilterConfig& config, std::string_view item);

// Builds a filter's bitmap in local memory (config.data_bytes() bytes), for
// bulk loads of plain and counting filters: hashing millions of items here and
// writing the result with one OrBitmap() replaces millions of per-item store
// commands. For a counting filter it builds 4-bit counters (saturating at 15),
// which OrBitmap adds.
class BitmapBuilder {
 public:
  // Throws std::bad_alloc if there is no memory for the bitmap, and
  // std::invalid_argument for a config not made by MakeConfig (or read from
  // a store), or one of several bit arrays (scaling, window, sharded), which
  // OrBitmap does not take.
  explicit BitmapBuilder(const FilterConfig& config);
  // Starts from `bitmap` (a plain filter's ReadBitmap()), so that new_items()
  // counts the items that set a bit neither the filter nor an earlier item
  // had: what adding them one by one would count. Plain filters only (a
  // counting filter's OrBitmap adds counters, so its builder starts empty).
  // Throws as the constructor above, and std::invalid_argument for a
  // counting config or a bitmap of other than config.data_bytes() bytes.
  BitmapBuilder(const FilterConfig& config, std::string_view bitmap);
  // The same, reading a plain filter's bitmap straight into the builder:
  // one copy of the bits in memory, where ReadBitmap() and the constructor
  // above hold two while it runs. kResourceExhausted if there is no memory.
  static Result<BitmapBuilder> StartingFrom(BloomFilter& filter);
  // The first constructor, with kResourceExhausted and kInvalidArgument
  // instead of its throws.
  static Result<BitmapBuilder> Make(const FilterConfig& config);
  ~BitmapBuilder();
  // A moved-from builder may only be destroyed or assigned to.
  BitmapBuilder(BitmapBuilder&&) noexcept;
  BitmapBuilder& operator=(BitmapBuilder&&) noexcept;

  // Validates every item first, then sets their bits; a bad item fails the
  // call without changing the bitmap.
  Status Add(std::span<const std::string_view> items);
  Status AddHashes(std::span<const Hash128> hashes);

  // The bitmap so far: config.data_bytes() bytes in Redis bit order, valid
  // while the builder lives and until its next Add.
  std::string_view bitmap() const;
  // Items that set at least one bit not already set in this builder (by the
  // bitmap it started from, or an earlier item); counting filters: every item.
  uint64_t new_items() const { return new_items_; }
  uint64_t items() const { return items_; }

 private:
  // The bitmap as the in-memory stores keep their cells (64-bit words on
  // huge pages), so that it is built with the same kernels as their adds.
  struct Words;
  FilterConfig config_;
  std::unique_ptr<Words> words_;
  std::vector<uint64_t> offsets_;
  uint64_t new_items_ = 0;
  uint64_t items_ = 0;
};

}  // namespace redbloom

#endif  // REDBLOOM_BLOOM_FILTER_H_
