// Buffers a thread keeps across library calls, so that a call allocates
// nothing once its thread has seen its largest batch. One object per
// thread, made by its first call that needs one and freed when the thread
// exits. It is reached through a plain pointer, not a thread_local object:
// glibc ends the process ("failed to register TLS destructor: out of
// memory") when it cannot record a thread_local's destructor, which a
// thread's first call made under a memory limit (redbloomd died so); here a
// call that finds no memory for it throws std::bad_alloc, as any other
// allocation of the call would.
#ifndef REDBLOOM_SRC_THREAD_SCRATCH_H_
#define REDBLOOM_SRC_THREAD_SCRATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "redbloom/hash.h"
#include "redbloom/store.h"

namespace redbloom::internal {

// One member per place that uses it: no two of them are ever one buffer.
struct ThreadScratch {
  std::string built_item;                           // bloom_filter.cc: BuiltItemBytes
  std::string built_items;                          // item_hashing.cc: HashBuiltItems
  std::vector<Hash128> hashes;                      // item_hashing.cc: HashScratch
  std::vector<uint64_t> existing_parts;             // filter_context.cc: TestIn
  std::vector<std::vector<uint64_t>> part_offsets;  // filter_context.cc: TestInStore
  std::vector<std::vector<uint8_t>> part_answers;   // filter_context.cc: TestInStore
  std::vector<PartBatch> part_batches;              // filter_context.cc: TestInStore
  std::vector<uint64_t> add_offsets;                // filter_context.cc: AddToStore
  std::vector<uint64_t> slice_offsets;              // word_bits.cc: ForEachOffsetSlice
};

// This thread's scratch, or null before its first Scratch(). Trivially
// destructible, so no destructor is registered for it.
inline thread_local ThreadScratch* t_scratch = nullptr;

// Makes this thread's scratch and sets t_scratch (throws std::bad_alloc).
ThreadScratch& MakeScratch();

inline ThreadScratch& Scratch() {
  if (t_scratch != nullptr) [[likely]]
    return *t_scratch;
  return MakeScratch();
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_THREAD_SCRATCH_H_
