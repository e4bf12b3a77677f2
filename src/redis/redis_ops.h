// The shape of a check's cell reads, chosen per chunk of items. Internal.
//
// A check reads k cells per item, as k BITFIELD_RO GET u1 ops: Redis pays
// per argument, about 1.9 us of redis-server CPU per item at k = 7 here. When
// every item of a chunk keeps its k bits in one aligned 64-byte range (the
// `block` strategy does, by construction), the chunk reads each item's range
// with one GETRANGE instead, and the bits are tested here: 0.55 us per item
// measured in a MULTI on this machine (one BITFIELD_RO GET i64 per word of
// the range would be six ops again, 1.55 us).
#ifndef REDBLOOM_SRC_REDIS_REDIS_OPS_H_
#define REDBLOOM_SRC_REDIS_REDIS_OPS_H_

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "redbloom/status.h"
#include "redis/redis_client.h"

namespace redbloom::internal {

// Bytes one block read covers: a 512-bit block.
inline constexpr uint64_t kBlockReadBytes = 64;

// True when each of the `items` runs of k offsets lies within one aligned
// 64-byte range of the bitmap.
bool ItemsInBlocks(const uint64_t* offsets, size_t items, uint32_t k);

// Appends GETRANGE key FIRST LAST for the block of one item's k offsets.
void AppendBlockRead(CommandBuffer* cmd, std::string_view key, const uint64_t* item);

// *present = 1 if the GETRANGE reply `r` (the item's block) has all k bits
// of `item` set. A reply shorter than the block (a bitmap shorter than its
// filter) reads as zeros past its end.
Status DecodeBlockRead(const redisReply* r, const uint64_t* item, uint32_t k, uint8_t* present);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_REDIS_OPS_H_
