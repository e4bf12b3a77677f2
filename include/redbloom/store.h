// Stores: where filters live. One URL syntax everywhere (library, CLI, service):
//   mem:                                  in-process, for tests and embedding
//   file:DIR                              one memory-mapped file per filter (the default)
//   redis://[user:password@]host[:port][/db][?options]   one Redis server
//
// A Store is a namespace of filters: it creates, describes, lists and drops
// them, and opens a BitStore over one filter's bits. A BitStore is batch-first:
// it sets or tests the offsets of many items per call, in as few round trips as
// the medium allows, and reports per item whether it was new / maybe present.
//
// Thread safety: Store and BitStore methods may be called concurrently. A
// Store must outlive the BitStores and BloomFilters opened from it.
#ifndef REDBLOOM_STORE_H_
#define REDBLOOM_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/filter_config.h"
#include "redbloom/status.h"

namespace redbloom {

// Names are 1..200 bytes of printable ASCII or UTF-8, without whitespace,
// '/', '\' or a leading '.', and not ending in ":meta". The same rule holds on
// every store, so a name that works on one works on all.
inline constexpr size_t kMaxNameBytes = 200;
Status ValidateFilterName(std::string_view name);

struct StoreOptions {
  // Redis: time allowed to open a TCP connection (and AUTH/SELECT on it).
  std::chrono::milliseconds connect_timeout{2000};
  // Redis: time allowed for one round trip before the call fails with
  // kDeadlineExceeded. A timed-out connection is closed, never reused.
  std::chrono::milliseconds command_timeout{5000};
  // Redis: connections kept for concurrent callers; more callers wait.
  int pool_size = 8;
  // Redis: extra attempts, with backoff, for idempotent operations (checks,
  // reads, and adds, since setting a bit twice is harmless) after a lost
  // connection. 0 disables retries.
  int max_retries = 2;
  // Redis: items per command. Bounds how long one command holds the server
  // (about 2.1 us per item at k = 7, so 1000 items is ~2 ms). 1 to 1000000.
  size_t batch_items = 1000;
};

// The stored state of one filter, beyond its config.
struct FilterStats {
  uint64_t bits_set = 0;     // cells that are non-zero
  uint64_t items_added = 0;  // adds that changed at least one cell
};

class BitStore {
 public:
  BitStore() = default;
  BitStore(const BitStore&) = delete;
  BitStore& operator=(const BitStore&) = delete;
  virtual ~BitStore() = default;

  // How many items one call should carry: the facade slices input by this.
  virtual size_t preferred_batch() const = 0;

  // `offsets` holds `items` runs of `k` offsets each. Sets them; when
  // `changed` is not null, changed[i] = 1 if item i turned any bit on (it was
  // new). The stored item count grows by the number of such items (counting
  // filters: by every item, since each add needs its own remove). On error
  // some items may have been written; none is reported as new.
  virtual Status Add(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* changed) = 0;
  // present[i] = 1 if all k bits of item i are set (it may be present).
  virtual Status Test(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* present) = 0;
  // Counting filters only. Removes each item whose k counters are all
  // non-zero, atomically per item: removed[i] = 1 if it was removed. Counters
  // at their maximum (15) stay there. Other stores: kUnimplemented.
  virtual Status Remove(const uint64_t* offsets, size_t items, uint32_t k, uint8_t* removed);
  // The stored item count alone; cheaper than Stats() on Redis.
  virtual Result<uint64_t> ItemCount();

  virtual Result<FilterStats> Stats() = 0;
  // Clears every bit and the item count.
  virtual Status Clear() = 0;
  // Makes written bits durable (msync for files). Redis and memory: no-op.
  virtual Status Flush() { return Status::Ok(); }

  // Bulk access, for load, import, export and merge. Bytes are in Redis bit
  // order (bit i in byte i/8, mask 0x80 >> i%8); a filter's bitmap is
  // config.data_bytes() long.
  //
  // Reads bytes [offset, offset + len) of the bitmap into *out (shorter only
  // if the bitmap ends first).
  virtual Status ReadBits(uint64_t offset, size_t len, std::string* out);
  // Merges `bitmap` (at most data_bytes() long, starting at byte 0) into the
  // filter. Bits are ORed in; 4-bit counters (counting filters) are added,
  // each saturating at 15, since the union of two counting filters is the sum
  // of their counts (ORing 1 into 2 would give 3, ORing 1 into 1 would lose
  // an item to its first remove). Never lowers a cell, so it is safe with
  // concurrent writers: each of their adds survives. The stored item count
  // grows by `new_items`.
  virtual Status OrBits(std::string_view bitmap, uint64_t new_items);
};

class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;

  // Opens a store by URL. Nothing is contacted for mem: and file: beyond
  // creating the directory; redis:// connects once to fail fast.
  static Result<std::unique_ptr<Store>> Open(std::string_view url,
                                             const StoreOptions& options = StoreOptions());

  // The URL, with any password replaced by "***".
  virtual std::string url() const = 0;

  // Creates a filter, sizing its bits up front. kAlreadyExists if it exists
  // with the same config (the caller may treat that as success), kConflict if
  // it exists with another config.
  virtual Status Create(std::string_view name, const FilterConfig& config) = 0;
  // Adopts bits written by another program (the Java seed service) by
  // recording `config` for them, without changing a bit. Stores that cannot
  // hold foreign bits answer kUnimplemented.
  virtual Status Attach(std::string_view name, const FilterConfig& config);
  // kNotFound if there is no such filter; kDataLoss if its stored config is
  // corrupt or of an unknown format version.
  virtual Result<FilterConfig> ReadConfig(std::string_view name) = 0;
  virtual Result<std::vector<std::string>> List() = 0;
  // kNotFound if there is no such filter.
  virtual Status Drop(std::string_view name) = 0;
  // Opens the bits of a filter whose config the caller has read. kConflict if
  // the stored config no longer matches `config` (dropped and re-created).
  virtual Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                                     const FilterConfig& config) = 0;
  // OK if the store can be used now (for readiness checks).
  virtual Status Ping() = 0;

  // Parts: the extra bit arrays of scaling filters (layers 1, 2, ...) and of
  // window filters (one per time slice, numbered by slice: now / slice length).
  // Part 0 of a scaling filter is its main array (OpenBits). A part is sized
  // by SizePart(config, part). A window part expires by itself once its slice
  // has left the window; every part expires with the filter's TTL.
  //
  // Opens a part; with `create`, creates it first if missing (idempotent, safe
  // when several clients race), else kNotFound if missing.
  virtual Result<std::unique_ptr<BitStore>> OpenPart(std::string_view name,
                                                     const FilterConfig& config, uint64_t part,
                                                     bool create);
  // The parts that exist (and have not expired), ascending.
  virtual Result<std::vector<uint64_t>> ListParts(std::string_view name,
                                                  const FilterConfig& config);
  // Scaling filters: how many layers the filter has (>= 1).
  virtual Result<uint64_t> Layers(std::string_view name, const FilterConfig& config);
  // Scaling filters: creates layer `seen` and raises the layer count from
  // `seen` to `seen + 1`, unless another client already grew past `seen`;
  // returns the count after. Two clients that both see a full last layer and
  // both call this add exactly one layer between them.
  virtual Result<uint64_t> GrowLayers(std::string_view name, const FilterConfig& config,
                                      uint64_t seen);
  // Rebuilds: atomically makes filter `source` the filter called `name`,
  // replacing what was there, and removes the name `source`. Readers of the
  // old filter get kConflict on their next call (the facade then reopens), so
  // every call answers from either the old or the new filter, never neither.
  // Plain and counting filters only.
  virtual Status Replace(std::string_view name, std::string_view source);
};

// The store URL the CLI and the service use when none is given:
// $REDBLOOM_STORE if set, else "file:./redbloom-data".
std::string DefaultStoreUrl();

}  // namespace redbloom

#endif  // REDBLOOM_STORE_H_
