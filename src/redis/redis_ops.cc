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

void PlanBlockReads(const uint64_t* offsets, size_t items, uint32_t k, BlockReads* plan) {
  plan->first.clear();
  plan->last.clear();
  plan->range_of.assign(items, 0);
  plan->scratch.resize(items);
  for (size_t i = 0; i < items; ++i) plan->scratch[i] = offsets[i * k] / kBlockReadBits;
  SortedOrder(plan->scratch.data(), items, &plan->order);
  for (uint32_t i : plan->order) {
    const uint64_t first = plan->scratch[i] * kBlockReadBytes;
    const uint64_t last = first + kBlockReadBytes - 1;
    if (plan->last.empty() || first > plan->last.back() + 1 + kMergeGap) {
      plan->first.push_back(first);
      plan->last.push_back(last);
    } else if (last > plan->last.back()) {
      plan->last.back() = last;
    }
    plan->range_of[i] = static_cast<uint32_t>(plan->first.size() - 1);
  }
}

void AppendRangeRead(CommandBuffer* cmd, std::string_view key, uint64_t first, uint64_t last) {
  cmd->Begin(4);
  cmd->Arg("GETRANGE");
  cmd->Arg(key);
  cmd->Arg(first);
  cmd->Arg(last);
}

Status DecodeBlockRead(const redisReply* r, uint64_t first, const uint64_t* item, uint32_t k,
                       uint8_t* present) {
  if (r->type != REDIS_REPLY_STRING) return Unexpected("GETRANGE", r);
  const auto* bytes = reinterpret_cast<const unsigned char*>(r->str);
  uint8_t all = 1;
  for (uint32_t j = 0; j < k; ++j) {
    const uint64_t byte = item[j] / 8 - first;  // the range holds the item's block
    const unsigned mask = 0x80u >> (item[j] % 8);
    all &= byte < r->len && (bytes[byte] & mask) != 0 ? 1 : 0;
  }
  *present = all;
  return Status::Ok();
}

}  // namespace redbloom::internal
