// Moving filters in and out: Guava's serialized form, redbloom's own dump, and
// merging filters of identical geometry.
//
// Guava (`BloomFilter.writeTo` / `readFrom`, Guava 31.1):
//   byte   strategy ordinal (1 = MURMUR128_MITZ_64, our guava64)
//   byte   k (unsigned)
//   int32  number of 64-bit words, big-endian
//   int64  words, big-endian; bit i of the filter is bit (i mod 64) of word i/64.
// Redis keeps bit i at mask 0x80 >> (i mod 8) of byte i/8, so every word is
// converted, not copied. Guava files carry neither the capacity, the error
// rate nor the funnel. Like Guava's readFrom, the importer needs only the
// funnel: the file's m and k become the filter's geometry, with capacity and
// error rate derived from them (FilterConfig::geometry_given). A capacity and
// error rate the importer gives are checked against the file's m and k.
//
// redbloom dump (format version 1; docs/dump-format.md has the byte layout):
// the full config and the item count, then the bitmap (or a counting
// filter's 4-bit counters) in chunks, each with its
// offset, length and CRC-32, then an end marker with the number of chunks.
// All-zero chunks are skipped, so a sparse filter dumps small. Any store can
// restore it; a truncated or altered dump is a kDataLoss error and nothing is
// written.
//
// Imports run in bounded memory: nothing is sized from what an input
// declares. An input that can seek (a file) is read twice, once to check all
// of it and once to write it to the store a piece at a time; one that cannot
// (a pipe) is held as it arrives, so memory follows the bytes actually sent.
// Errors are a Status: a stream's exceptions() mask is cleared while a call
// uses it and put back as the call returns, with the stream's state left
// for the caller to read. An output that fails a write is kUnavailable with
// the reason errno holds, and a full disk kResourceExhausted; a stream that
// had already failed (a file that did not open) kInvalidArgument.
//
// Item counts (docs/dump-format.md, "Item counts"): an import or merge into a
// plain, scaling or window filter adds what the filter's fill says it gained
// (Guava's estimate from the bits set, before and after), at most the
// source's count; a source's count is carried exactly into a part that held
// no bits. Importing what a filter already holds adds nothing. A counting
// filter adds the source's count, as each of its adds counts.
#ifndef REDBLOOM_TRANSFER_H_
#define REDBLOOM_TRANSFER_H_

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"

namespace redbloom {

// Writes `filter` (strategy guava64 only) in Guava's writeTo format.
Status ExportGuava(BloomFilter& filter, std::ostream& out);

struct GuavaImportOptions {
  // n and p the Java side created the filter with, or both 0 to take the
  // file's m and k as they are.
  uint64_t capacity = 0;
  double error_rate = 0;
  Encoding encoding = Encoding::kUtf8;  // the funnel the Java side used
};
// Reads a Guava file and ORs its bits into filter `name`, creating it (strategy
// guava64) if it does not exist. Given a capacity and error rate, the file's
// m and k must be what they give, and an existing filter must have them too.
// Without, the new filter has the file's geometry (capacity and error rate
// derived), and an existing plain guava64 filter of the same encoding, m and
// k takes the bits whatever capacity it was created with; a sharded one never
// does (its m and k are one shard's), kConflict. The whole file is
// validated before anything is written: a file shorter than its header's
// word count is kDataLoss ("truncated"), a longer one kInvalidArgument.
Result<std::unique_ptr<BloomFilter>> ImportGuava(Store& store, std::string_view name,
                                                 std::istream& in,
                                                 const GuavaImportOptions& options);

// Writes a redbloom dump of `filter`, of any kind: every part it has (a
// scaling filter's layers, a window filter's live slices), each with its
// item count (docs/dump-format.md). A shard or layer lost from the store is
// kDataLoss, never a dump without it.
Status ExportDump(BloomFilter& filter, std::ostream& out);
// Restores a dump into filter `name`: created with the dump's config if it does
// not exist, else it must have the same config (kConflict otherwise) and the
// dump is merged in: bits ORed, counters added (saturating at 15). A dump
// without a part its filter always has (a shard, a scaling layer) is
// kDataLoss, and bytes after its end marker kInvalidArgument, before anything
// is written.
Result<std::unique_ptr<BloomFilter>> ImportDump(Store& store, std::string_view name,
                                                std::istream& in);

// Merges every source into `dest`: the union of plain filters (bits ORed) or
// of counting filters (counters added, so a remove still works for the items
// of each source). All must have the same kind, strategy, encoding, shards, m
// and k (kInvalidArgument naming the first that differs), and none may be
// named twice (kInvalidArgument); dest may be one of them (its cells are
// there already). A missing dest is created with the first source's config.
// Nothing is created or written on error. `merged_in`, if given, is set to
// the number of sources merged in (dest among them adds nothing).
Status Merge(Store& store, std::string_view dest, std::span<const std::string> sources,
             size_t* merged_in = nullptr);

}  // namespace redbloom

#endif  // REDBLOOM_TRANSFER_H_
