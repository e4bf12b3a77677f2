#include "redbloom/clock.h"

namespace redbloom {
namespace {

class SystemClock final : public Clock {
 public:
  uint64_t NowMillis() const override {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  }
};

}  // namespace

std::shared_ptr<const Clock> Clock::System() {
  static const auto clock = std::make_shared<const SystemClock>();
  return clock;
}

}  // namespace redbloom
