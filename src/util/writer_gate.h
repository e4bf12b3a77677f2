// The writers of one in-process bit array (WordArray::writers): any number
// at once, each setting bits with locked ORs ("shared"), or one alone, with
// plain loads and stores. The lone side only ever tries (a writer that does
// not get the gate alone shares it), so a sharer waits only while one lone
// writer finishes its call, and no lone writer enters while a sharer waits.
//
// std::shared_mutex does the same job; it is not used because a single-item
// add takes the gate alone on every call and glibc's rwlock made that the
// call's largest cost: try_lock + unlock 19 ns on this host, against 5.6 ns
// for one compare-and-swap and one store (and 13.5 ns against 11.6 for
// lock_shared + unlock_shared). Named as the standard's lockable
// requirements ask, so std::unique_lock and std::shared_lock take it.
#ifndef REDBLOOM_UTIL_WRITER_GATE_H_
#define REDBLOOM_UTIL_WRITER_GATE_H_

#include <atomic>
#include <cstdint>

namespace redbloom::internal {

class WriterGate {
 public:
  WriterGate() = default;
  WriterGate(const WriterGate&) = delete;
  WriterGate& operator=(const WriterGate&) = delete;

  // Alone: never waits. True if no other writer holds the gate and no sharer
  // waits for it: a sharer that waits goes first, else a thread that adds
  // single items back to back (alone a few nanoseconds at a time) could keep
  // a woken sharer out indefinitely.
  bool try_lock() noexcept {
    if (waiting_.load(std::memory_order_relaxed) != 0) return false;
    uint32_t free = 0;
    return state_.compare_exchange_strong(free, kAlone, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }
  void unlock() noexcept {
    state_.store(0, std::memory_order_release);
    state_.notify_all();  // sharers waiting in lock_shared (no system call if none)
  }

  // Shared: waits (futex, via std::atomic::wait) while a lone writer holds
  // it, counted in waiting_ until it is in.
  void lock_shared() noexcept {
    uint32_t s = state_.load(std::memory_order_relaxed);
    bool counted = false;
    while (true) {
      if ((s & kAlone) != 0) {
        if (!counted) {
          waiting_.fetch_add(1, std::memory_order_relaxed);
          counted = true;
        } else {
          state_.wait(s, std::memory_order_relaxed);
        }
        s = state_.load(std::memory_order_relaxed);
      } else if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
        break;
      }
    }
    if (counted) waiting_.fetch_sub(1, std::memory_order_relaxed);
  }
  void unlock_shared() noexcept { state_.fetch_sub(1, std::memory_order_release); }

  // Whether a sharer waits for a lone writer to leave (tests).
  bool sharers_waiting() const noexcept { return waiting_.load(std::memory_order_relaxed) != 0; }

 private:
  // kAlone, or the number of sharers: kAlone is set only from 0, and no
  // sharer enters while it is set.
  static constexpr uint32_t kAlone = uint32_t{1} << 31;
  std::atomic<uint32_t> state_{0};
  // Sharers that found kAlone set and are not in yet.
  std::atomic<uint32_t> waiting_{0};
};

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_WRITER_GATE_H_
