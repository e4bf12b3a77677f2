// Prefetch hints that the compiler keeps. Internal.
//
// GCC (12, -O2) deletes a loop whose only effect is __builtin_prefetch: C++
// lets it assume such a loop terminates and has no observable effect
// (-ffinite-loops). That silently removed the prefetch of every k-offset
// loop here; the empty asm statement below is an effect it must keep.
#ifndef REDBLOOM_SRC_PREFETCH_H_
#define REDBLOOM_SRC_PREFETCH_H_

namespace redbloom::internal {

// Brings the cache line of `p` towards L1, for a read.
inline void PrefetchForRead(const void* p) {
  __builtin_prefetch(p, 0, 3);
  asm volatile("" : : "r"(p));
}

// The same before a write (prefetchw where the target has it).
inline void PrefetchForWrite(const void* p) {
  __builtin_prefetch(p, 1, 3);
  asm volatile("" : : "r"(p));
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_PREFETCH_H_
