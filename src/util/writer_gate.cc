#include "util/writer_gate.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "util/sanitizers.h"

namespace redbloom::internal {
namespace {

long Membarrier(int command) { return syscall(__NR_membarrier, command, 0, 0); }

// Every running thread of the process passes a full memory barrier before
// this returns. Registered by BiasAvailable, which a claim needs, and no
// revoke runs before a claim; it cannot fail then. Were it ever to, a full
// fence here would not order the owner's side: stop rather than lose writes.
void HeavyBarrier() {
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) std::abort();
}

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

void WriterGate::Revoke(uint64_t owner) noexcept {
  if (owner >= kFirstThread &&
      owner_.compare_exchange_strong(owner, kRevoking, std::memory_order_relaxed)) {
    // After the barrier, the owner either sees kRevoking and stays out, or
    // its busy_ = 1 is visible here.
    HeavyBarrier();
    while (busy_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    owner_.store(kRevoked, std::memory_order_release);
    return;
  }
  // Another thread revokes: its writes and ours wait alike for the owner.
  while (owner_.load(std::memory_order_acquire) != kRevoked) std::this_thread::yield();
}

}  // namespace redbloom::internal
