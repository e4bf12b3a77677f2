// Clock: where stores and filters read the time (TTLs, window slices).
//
// Every store takes its clock from StoreOptions::clock, so a test moves time
// with a ManualClock instead of sleeping, and an embedding application can
// supply its own. The system clock is the default.
#ifndef REDBLOOM_CLOCK_H_
#define REDBLOOM_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace redbloom {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch. Redis stores turn TTLs into absolute
  // PEXPIREAT times with it, so it should track the servers' clocks.
  virtual uint64_t NowMillis() const = 0;

  // The wall clock (std::chrono::system_clock), shared.
  static std::shared_ptr<const Clock> System();
};

// A clock that moves only when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(uint64_t now_millis) : now_(now_millis) {}
  uint64_t NowMillis() const override { return now_.load(std::memory_order_acquire); }
  void Set(uint64_t now_millis) { now_.store(now_millis, std::memory_order_release); }
  void Advance(std::chrono::milliseconds by) {
    now_.fetch_add(static_cast<uint64_t>(by.count()), std::memory_order_acq_rel);
  }

 private:
  std::atomic<uint64_t> now_;
};

}  // namespace redbloom

#endif  // REDBLOOM_CLOCK_H_
