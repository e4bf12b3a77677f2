#include "util/fork_generation.h"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <random>
#include <vector>

namespace redbloom::internal {
namespace {

std::atomic<uint64_t> generation{0};

void InChild() { generation.fetch_add(1, std::memory_order_relaxed); }

// At static initialisation, before any store exists. A registration that
// fails (ENOMEM, then) leaves every process generation 0: stores behave as
// before, sharing sockets with a parent.
[[maybe_unused]] const bool registered = ::pthread_atfork(nullptr, nullptr, InChild) == 0;

}  // namespace

uint64_t ForkGeneration() { return generation.load(std::memory_order_relaxed); }

void AbandonParentsThread(std::thread& thread) {
  if (!thread.joinable()) return;
  static std::mutex mu;
  static auto* abandoned = new std::vector<std::thread>();  // never destroyed
  std::lock_guard lock(mu);
  abandoned->push_back(std::move(thread));
}

uint64_t UniqueRandom64() {
  // Trivially destructible: no thread-exit hook to register (see
  // thread_scratch.h).
  struct Engine {
    std::mt19937_64 rng;
    uint64_t generation = 0;
    bool seeded = false;
  };
  thread_local Engine engine;
  if (const uint64_t now = ForkGeneration(); !engine.seeded || engine.generation != now) {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    engine.rng.seed(seed);
    engine.generation = now;
    engine.seeded = true;
  }
  return engine.rng();
}

}  // namespace redbloom::internal
