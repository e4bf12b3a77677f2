#include "thread_scratch.h"

#include <pthread.h>

#include <memory>
#include <new>

namespace redbloom::internal {
namespace {

// Frees a thread's scratch as the thread exits.
void FreeScratch(void* scratch) {
  delete static_cast<ThreadScratch*>(scratch);
  t_scratch = nullptr;
}

// The key whose destructor frees each thread's scratch: made once per
// process. A failure (EAGAIN: every key taken, or ENOMEM) is tried again by
// the next call, and thrown as bad_alloc: the call cannot have its buffers,
// which its callers already answer as no memory.
pthread_key_t ScratchKey() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    if (::pthread_key_create(&k, FreeScratch) != 0) throw std::bad_alloc();
    return k;
  }();
  return key;
}

}  // namespace

ThreadScratch& MakeScratch() {
  const pthread_key_t key = ScratchKey();
  auto made = std::make_unique<ThreadScratch>();
  // Fails (ENOMEM) without taking the process down, unlike a thread_local
  // object's destructor that cannot be recorded.
  if (::pthread_setspecific(key, made.get()) != 0) throw std::bad_alloc();
  t_scratch = made.release();
  return *t_scratch;
}

}  // namespace redbloom::internal
