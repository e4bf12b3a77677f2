#include "redis/redis_ops.h"

#include "redis/redis_pipeline.h"

namespace redbloom::internal {
namespace {

constexpr uint64_t kBlockReadBits = kBlockReadBytes * 8;

}  // namespace

bool ItemsInBlocks(const uint64_t* offsets, size_t items, uint32_t k) {
  for (size_t i = 0; i < items; ++i) {
    const uint64_t* item = offsets + i * k;
    const uint64_t block = item[0] / kBlockReadBits;
    for (uint32_t j = 1; j < k; ++j) {
      if (item[j] / kBlockReadBits != block) return false;
    }
  }
  return true;
}

void AppendBlockRead(CommandBuffer* cmd, std::string_view key, const uint64_t* item) {
  const uint64_t first = item[0] / kBlockReadBits * kBlockReadBytes;
  cmd->Begin(4);
  cmd->Arg("GETRANGE");
  cmd->Arg(key);
  cmd->Arg(first);
  cmd->Arg(first + kBlockReadBytes - 1);
}

Status DecodeBlockRead(const redisReply* r, const uint64_t* item, uint32_t k, uint8_t* present) {
  if (r->type != REDIS_REPLY_STRING) return Unexpected("GETRANGE", r);
  const uint64_t first = item[0] / kBlockReadBits * kBlockReadBytes;
  const auto* bytes = reinterpret_cast<const unsigned char*>(r->str);
  uint8_t all = 1;
  for (uint32_t j = 0; j < k; ++j) {
    const uint64_t byte = item[j] / 8 - first;  // < 64: the item is in this block
    const unsigned mask = 0x80u >> (item[j] % 8);
    all &= byte < r->len && (bytes[byte] & mask) != 0 ? 1 : 0;
  }
  *present = all;
  return Status::Ok();
}

}  // namespace redbloom::internal
