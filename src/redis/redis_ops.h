// The shape of a check's cell reads, chosen per chunk of items. Internal.
//
// A check reads k cells per item, as k BITFIELD_RO GET u1 ops: Redis pays
// per argument, about 1.9 us of redis-server CPU per item at k = 7 here. When
// every item of a chunk keeps its k bits in one aligned 64-byte range (the
// `block` strategy does, by construction), the chunk reads each item's range
// with one GETRANGE instead, and the bits are tested here: 0.55 us per item
// measured in a MULTI on this machine (one BITFIELD_RO GET i64 per word of
// the range would be six ops again, 1.55 us). Redis's cost is per command,
// not per byte (a 1 KiB GETRANGE cost about what a 64-byte one did), so the
// items' blocks are read in ascending order and blocks at most kMergeGap
// bytes apart share one GETRANGE.
#ifndef REDBLOOM_SRC_REDIS_REDIS_OPS_H_
#define REDBLOOM_SRC_REDIS_REDIS_OPS_H_

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "redbloom/status.h"
#include "redis/redis_client.h"

namespace redbloom::internal {

// Bytes one block read covers: a 512-bit block.
inline constexpr uint64_t kBlockReadBytes = 64;
// Blocks whose gap is at most this many bytes are read by one GETRANGE. At a
// 1e6-item filter (19,500 blocks) about a fifth of a 1000-item batch's reads
// merge, for ~24 more bytes per item on the wire; a wider gap would save
// more commands but send whole kilobytes no item needs.
inline constexpr uint64_t kMergeGap = 256;

// True when each of the `items` runs of k offsets lies within one aligned
// 64-byte range of the bitmap.
bool ItemsInBlocks(const uint64_t* offsets, size_t items, uint32_t k);

// The GETRANGEs of one chunk's check: byte ranges of the bitmap, ascending,
// and for each item the range that holds its block.
struct BlockReads {
  std::vector<uint64_t> first;     // first byte of each range
  std::vector<uint64_t> last;      // last byte of each range
  std::vector<uint32_t> range_of;  // item -> its range
  std::vector<uint64_t> scratch;   // the items' block offsets, for sorting
  std::vector<uint32_t> order;     // items in ascending block order
};
// Plans the reads of `items` runs of k offsets (ItemsInBlocks must hold).
void PlanBlockReads(const uint64_t* offsets, size_t items, uint32_t k, BlockReads* plan);

// Appends GETRANGE key FIRST LAST.
void AppendRangeRead(CommandBuffer* cmd, std::string_view key, uint64_t first, uint64_t last);

// *present = 1 if the GETRANGE reply `r`, the bytes from `first` on, has all
// k bits of `item` set. A reply shorter than asked (a bitmap shorter than its
// filter) reads as zeros past its end.
Status DecodeBlockRead(const redisReply* r, uint64_t first, const uint64_t* item, uint32_t k,
                       uint8_t* present);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_OPS_H_
