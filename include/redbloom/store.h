// Stores: where filters live. One URL syntax everywhere (library, CLI, service):
//   mem:                                  in-process, for tests and embedding;
//                                         each Open is a namespace of its own
//   file:DIR                              one memory-mapped file per filter (the default)
//   redis://[user:password@]host[:port][/db][?options]   one Redis server
//   rediss://...                          the same over TLS
//   redis+unix://[user:password@]/path/to/redis.sock[?db=N&options]
//                                         one Redis server, through its Unix socket
//   redis-cluster://[user:password@]host:port[,host:port...][?options]
//                                         a Redis Cluster, from any of its nodes
//   rediss-cluster://...                  the same over TLS
//   redis-sentinel://[user:password@]host:port[,host:port...]/MASTER[/db][?options]
//                                         the master that Redis Sentinel names
//   rediss-sentinel://...                 the same over TLS
// Each store lives in its own folder (src/mem, src/file, src/redis) and is
// registered by URL scheme in one table (src/store_table.cc).
//
// A Store is a namespace of filters: it creates, describes, lists and drops
// them, and opens a BitStore over one filter's cells. A BitStore is
// batch-first: it sets or tests the offsets of many items per call, in as few
// round trips as the medium allows, and reports per item whether it was new /
// maybe present.
//
// Thread safety: Store and BitStore methods may be called concurrently. A
// Store must outlive the BitStores and BloomFilters opened from it. Both
// processes may go on using them after a fork() made while no other thread
// was inside a call: a child's Redis calls go over connections of its own.
#ifndef REDBLOOM_STORE_H_
#define REDBLOOM_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/clock.h"
#include "redbloom/filter_config.h"
#include "redbloom/status.h"

namespace redbloom {

// Names are 1..200 bytes of printable ASCII or UTF-8, without whitespace,
// '/', '\' or a leading '.', and not ending in ":meta". The same rule holds on
// every store, so a name that works on one works on all.
inline constexpr size_t kMaxNameBytes = 200;
Status ValidateFilterName(std::string_view name);

// The name a rebuild of `name` builds its replacement under (".rebuild~NAME").
// User names never start with '.', so no user filter can have it; stores
// accept it, never list it, and keep it beside `name` (on Redis Cluster, in
// the same slot, so the swap is atomic).
std::string TemporaryName(std::string_view name);

struct StoreOptions {
  // Redis: time allowed to open a TCP connection (and AUTH/SELECT on it).
  std::chrono::milliseconds connect_timeout{2000};
  // Redis: time allowed for one round trip before the call fails with
  // kDeadlineExceeded. A timed-out connection is closed, never reused.
  std::chrono::milliseconds command_timeout{5000};
  // Redis: connections kept for concurrent callers; more callers wait.
  int pool_size = 8;
  // Redis: a pooled connection unused this long is closed the next time its
  // pool lends or takes back a connection, but for the last one handed back
  // (a pool nobody calls keeps its connections), so a burst's extra
  // connections do not stay open, counting against the server's maxclients,
  // once traffic falls. 0 keeps them; at most 86400000 (a day).
  std::chrono::milliseconds idle_timeout{60000};
  // Redis: extra attempts, with backoff, for idempotent operations (checks,
  // reads, and adds, since setting a bit twice is harmless) after a lost
  // connection; not on a single server that took the connection and then
  // did not answer within connect_timeout (a retry would wait as long again).
  // An add whose caller asks which items were new (AddMany with `added`) is
  // not sent again once its answer may have been lost: sent again, it would
  // call its own items old; it fails kUnavailable (reason kAnswersLost).
  // 0 disables retries.
  int max_retries = 2;
  // Redis: items per command. Bounds how long one command holds the server
  // (about 2.1 us per item at k = 7, so 1000 items is ~2 ms). 1 to 1000000.
  size_t batch_items = 1000;
  // Every store: where TTLs and window slices read the time.
  std::shared_ptr<const Clock> clock = Clock::System();
};

// The stored state of one part of a filter, beyond its config.
struct FilterStats {
  uint64_t bits_set = 0;     // cells that are non-zero
  uint64_t items_added = 0;  // the part's item count (see BitStore::Add)
  // False when bits_set is estimated from a sample of the cells, as memory
  // and file stores do for parts over 64 MiB so that Stats never reads a
  // whole large part (the estimate's standard error is under 1e-4 of the
  // cells).
  bool bits_set_exact = true;
};

// One part's share of a call to BitStore: `items` runs of k offsets each,
// where k and the offsets' range [0, m) are the part's geometry
// (SizePart(config, part)). Offsets outside the part are kInvalidArgument.
struct PartBatch {
  uint64_t part = 0;
  uint32_t k = 0;  // offsets per item: the part's geometry.hashes
  const uint64_t* offsets = nullptr;
  size_t items = 0;
  // One answer per item (Test: may be present; Add: was new; Remove: was
  // removed). May be null for Add and Remove.
  uint8_t* out = nullptr;

  // Add only: a part that holds at most `capacity` items (a scaling layer).
  // When non-zero, the store reserves room atomically with each write: the
  // items are added in order, in runs that each fit the part's count plus
  // the run within `capacity`; the count grows by every item of a run (room
  // is reserved before the bits are known). At the first run that does not
  // fit, nothing more is written and `refused` is set. `accepted` says how
  // many leading items were added, `room` how many more items fit after the
  // call. With capacity 0 every item is added and the count grows by the
  // items that turned a cell on, as plain adds do.
  uint64_t capacity = 0;
  bool refused = false;
  size_t accepted = 0;
  uint64_t room = 0;
};

// The cells of one filter: a single array for plain and counting filters
// (part 0), several for scaling filters (layers 0, 1, ...) and window filters
// (one per time slice). A part is identified by its number; its size follows
// from the filter's config and the number. Which parts a call touches is the
// filter kind's business (src/kinds/); a BitStore only reads and writes them,
// in as few round trips as the medium allows.
//
// Errors: kConflict if the filter was dropped and re-created with other
// parameters or replaced by a rebuild (reopen it); kNotFound if it was
// dropped; kDataLoss if a part that exists has lost its bits (a Redis key
// deleted or evicted under it); never "absent" for an unreadable cell.
class BitStore {
 public:
  BitStore() = default;
  BitStore(const BitStore&) = delete;
  BitStore& operator=(const BitStore&) = delete;
  virtual ~BitStore() = default;

  // How many items one call should carry: the facade slices input by this.
  virtual size_t preferred_batch() const = 0;

  // The parts that exist, ascending.
  virtual Result<std::vector<uint64_t>> ListParts() = 0;
  // Creates part `part` unless it exists: idempotent, and safe when several
  // clients race to create it. It expires at `expires_at_ms` (0: when the
  // filter does), and never after the filter.
  virtual Status CreatePart(uint64_t part, uint64_t expires_at_ms) = 0;

  // Tests every batch: out[i] = 1 if all k cells of item i are non-zero. All
  // batches go in one round trip where the store can. A part that does not
  // exist holds nothing (every answer 0). With `parts_now`, also lists the
  // parts that exist, read atomically with the first batch.
  virtual Status Test(std::span<PartBatch> batches, std::vector<uint64_t>* parts_now = nullptr) = 0;
  // Sets the cells of every batch (see PartBatch for reservations). Bits are
  // set; 4-bit counters (counting filters) are incremented, saturating at 15.
  // out[i] = 1 if item i turned a cell on (it was new). Without a capacity,
  // a part's count grows by its items that turned a cell on (counting
  // filters: by every item, since each add needs its own remove). A part that
  // does not exist is kNotFound. On error some items may have been written;
  // none is reported as new.
  virtual Status Add(std::span<PartBatch> batches) = 0;
  // Counting filters: removes each item whose k counters are all non-zero,
  // atomically per item: out[i] = 1 if it was removed. Counters at their
  // maximum (15) stay there. Other filters: kUnimplemented.
  virtual Status Remove(std::span<PartBatch> batches);

  // A part's fill and item count.
  virtual Result<FilterStats> Stats(uint64_t part) = 0;
  // A part's item count alone; cheaper than Stats() on Redis.
  virtual Result<uint64_t> ItemCount(uint64_t part);
  // Clears every cell and count of every part.
  virtual Status Clear() = 0;
  // Makes written cells durable (msync for files). Redis and memory: no-op.
  virtual Status Flush() { return Status::Ok(); }
  // Whether the filter these bits belong to is still the one its name
  // denotes: kConflict if another took the name in a way this handle was
  // not told of (file: a file moved over the filter's by hand),
  // kNotFound if none has it. Every store tells a handle of a drop, a
  // rebuild or a re-creation by redbloom on its next call; this asks the
  // store, for what it cannot tell (one stat on file:, a lookup on mem:;
  // nothing on Redis, which answers at the next call).
  virtual Status CheckCurrent() { return Status::Ok(); }
  // A token that changes whenever another filter is swapped in under the
  // name in a way these bits' reads go on across (a Redis rebuild keeps the
  // incarnation, so that item reads go on on the new filter): a call that
  // reads a filter piece by piece compares it before and after each piece.
  // Empty where the reads of a swapped filter fail by themselves (file:,
  // mem:: the old file or buffer is flagged).
  virtual Result<std::string> SwapMark() { return std::string(); }

  // Bulk access, for load, import, export and merge. Bytes are in Redis bit
  // order (bit i in byte i/8, mask 0x80 >> i%8); a part holds
  // SizePart(config, part).bytes(config.cell_bits()) bytes.
  //
  // Reads bytes [offset, offset + len) of a part into *out (shorter only if
  // the part ends first).
  virtual Status ReadBits(uint64_t part, uint64_t offset, size_t len, std::string* out) = 0;
  // Merges `bitmap` (at most the part's size, from byte 0) into a part. Bits
  // are ORed in; 4-bit counters are added, each saturating at 15, since the
  // union of two counting filters is the sum of their counts (ORing 1 into 2
  // would give 3, ORing 1 into 1 would lose an item to its first remove).
  // Never lowers a cell, so it is safe with concurrent writers: each of their
  // adds survives. The part's count grows by `new_items`.
  Status OrBits(uint64_t part, std::string_view bitmap, uint64_t new_items) {
    return OrBitsAt(part, 0, bitmap, new_items);
  }
  // The same for bytes [offset, offset + bytes.size()) of a part, so that an
  // import streams a large part in pieces; empty `bytes` only adds to the
  // count. kInvalidArgument past the part's end.
  virtual Status OrBitsAt(uint64_t part, uint64_t offset, std::string_view bytes,
                          uint64_t new_items) = 0;
};

class Store {
 public:
  explicit Store(std::shared_ptr<const Clock> clock) : clock_(std::move(clock)) {}
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;

  // Opens a store by URL (the schemes are registered in src/store_table.cc).
  // Nothing is contacted or created for mem: and file: (a file: directory is
  // made by the first create); redis:// connects once to fail fast.
  static Result<std::unique_ptr<Store>> Open(std::string_view url,
                                             const StoreOptions& options = StoreOptions());
  // The registered URL schemes with their syntax, for help texts:
  // "mem:", "file:DIR", "redis://[user:password@]host[:port][/db]", ...
  static std::vector<std::string> UrlForms();
  // What a URL's scheme means to a front end, from the same table, so that
  // no caller decides by a URL's prefix (a new store gets its traits with
  // its line). Traits of an unknown scheme: none.
  struct Traits {
    bool local = false;       // the bits live in this process's memory (mem:, file: mapped):
                              // a filter's size is bounded by this machine's
    bool persistent = false;  // filters outlive the process that made them
    bool syncs = false;       // Sync() writes to durable storage (file:): worth running
                              // periodically
  };
  static std::optional<Traits> TraitsOf(std::string_view url);
  // OK for a URL of a registered scheme; else the kInvalidArgument Open
  // gives ("unknown store URL '...' (expected mem:, file:DIR, ...)", or one
  // for a URL that starts or ends with white space, which Open refuses). The
  // rest of the URL is checked when the store opens.
  static Status CheckScheme(std::string_view url);

  // The URL, with any password replaced by "***".
  virtual std::string url() const = 0;
  // Whether programs other than redbloom may write the bits of a filter of
  // `config` here, which its count does not show: on Redis, one plain,
  // unsharded bitmap (the layout attach adopts) of a strategy whose Java side
  // writes bits (the seed helper, Redisson).
  virtual bool OthersMayWrite(const FilterConfig& /*config*/) const { return false; }
  // The clock this store reads (StoreOptions::clock).
  const Clock& clock() const { return *clock_; }

  // Creates a filter, sizing its bits up front. kAlreadyExists if it exists
  // with the same config (the caller may treat that as success), kConflict if
  // it exists with another config.
  virtual Status Create(std::string_view name, const FilterConfig& config) = 0;
  // Adopts bits written by another program (the Java seed service) by
  // recording `config` for them, without changing a bit. Stores that cannot
  // hold foreign bits answer kUnimplemented.
  virtual Status Attach(std::string_view name, const FilterConfig& config);
  // What a filter's Java side records about it beside its bits, for attach
  // without explicit parameters: Redisson keeps the capacity and error rate
  // in its {NAME}:config hash. Returns options of `strategy` with those
  // filled in. kNotFound if there is no such record, kDataLoss if it is
  // malformed, kInvalidArgument for a strategy whose Java side records
  // nothing; stores that hold no foreign bits answer kUnimplemented.
  virtual Result<FilterOptions> ReadForeignOptions(std::string_view name, Strategy strategy);
  // kNotFound if there is no such filter; kDataLoss if its stored config is
  // corrupt or of an unknown format version.
  virtual Result<FilterConfig> ReadConfig(std::string_view name) = 0;
  // The filters' names. On stores that keep filters in this process or a
  // directory (mem:, file:), a listing also removes the filters whose TTL
  // has passed, as an open of one does: nothing else does (redbloomd lists
  // its store every expiry_sweep_ms for that). Redis expires its own keys.
  virtual Result<std::vector<std::string>> List() = 0;
  // kNotFound if there is no such filter.
  virtual Status Drop(std::string_view name) = 0;
  // Opens the cells of a filter whose config the caller has read, every part
  // of it. kConflict if the stored config no longer matches `config` (dropped
  // and re-created).
  virtual Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                                     const FilterConfig& config) = 0;
  // OK if the store can be used now (for readiness checks).
  virtual Status Ping() = 0;
  // Makes everything written to the store durable, through handles open or
  // closed (file: syncfs(2) of its directory's file system; a filter
  // handle's Flush covers only its own mapping). Redis and memory: no-op.
  virtual Status Sync() { return Status::Ok(); }
  // The server that takes writes now, as "host:port", for readiness reports:
  // redis://'s one server, or the master the sentinels named last for
  // redis-sentinel:// (it changes with a failover). "" for stores without
  // a server (mem:, file:) or before one was found.
  virtual std::string Master() const { return ""; }
  // The local directory the store keeps its filters' files in (file:'s DIR,
  // as its URL gives it), or "" for stores of no directory. It appears with
  // the first filter created, so it may not exist yet.
  virtual std::string directory() const { return ""; }
  // Whether a file written at `path` would land on one of the store's own
  // files (file:'s DIR/NAME.rbf, and anything in DIR/.NAME.parts/): a front
  // end that writes files refuses such a path, which would replace a filter.
  // Pass the path the write lands on (any link resolved); it is compared
  // after canonicalization. False for stores of no directory.
  virtual bool OwnsPath(const std::string& /*path*/) const { return false; }
  // What an operator should change in the store's setup, one sentence each;
  // empty when nothing. Redis: a server whose maxmemory-policy can evict
  // filter keys (an evicted bitmap is data_loss on its next use, see
  // docs/format.md, "Operations"). Errors only if the store cannot be
  // reached; a setting it may not read (an ACL without INFO) is a warning.
  virtual Result<std::vector<std::string>> Warnings() { return std::vector<std::string>(); }

  // Rebuilds: atomically makes filter `source` the filter called `name`,
  // replacing the filter there, and removes the name `source`. Readers of the
  // old filter get kConflict on their next call (the facade then reopens), so
  // every call answers from either the old or the new filter, never neither.
  // kNotFound, with nothing swapped, if `name` holds no filter (dropped while
  // it was rebuilt: no order of a drop and a rebuild leaves it there).
  // Plain and counting filters only.
  virtual Status Replace(std::string_view name, std::string_view source);

 private:
  std::shared_ptr<const Clock> clock_;
};

// The store URL the CLI and the service use when none is given:
// $REDBLOOM_STORE if set, else "file:./redbloom-data".
std::string DefaultStoreUrl();

}  // namespace redbloom

#endif  // REDBLOOM_STORE_H_
