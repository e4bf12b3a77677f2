#include "util/writer_gate.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include "util/sanitizers.h"

namespace redbloom::internal {
namespace {

long Membarrier(int command) { return syscall(__NR_membarrier, command, 0, 0); }

}  // namespace

bool WriterGate::BiasAvailable() noexcept {
  // Registered once per process, before any thread can claim a gate (the
  // expedited barrier requires it). TSan would report the owner's plain
  // writes against a revoker's: it does not know the barrier orders them.
  static const bool available = [] {
    if (kThreadSanitizer) return false;
    const long commands = Membarrier(MEMBARRIER_CMD_QUERY);
    if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return available;
}

uint64_t WriterGate::NextThreadId() noexcept {
  static std::atomic<uint64_t> next{kFirstThread};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void WriterGate::HeavyBarrier() noexcept {
  // Registered by BiasAvailable, which a claim needs, and no revoke runs
  // before a claim; it cannot fail then. Were it ever to, a full fence here
  // would not order the owner's side: stop rather than lose writes.
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) std::abort();
}

}  // namespace redbloom::internal
