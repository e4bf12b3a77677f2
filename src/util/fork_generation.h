// Which process a connection, a thread or a descriptor was made in, as seen
// by the library's users who fork(): a child inherits a store's pooled
// sockets, which then carry both processes' commands, and each reads the
// other's replies (wrong answers, false negatives among them), but not its
// background threads, which do not run in a child. Internal.
#ifndef REDBLOOM_SRC_UTIL_FORK_GENERATION_H_
#define REDBLOOM_SRC_UTIL_FORK_GENERATION_H_

#include <cstdint>
#include <thread>

namespace redbloom::internal {

// 0 in the process the program started as; one more in each child fork()
// makes (a pthread_atfork handler, registered when the library is loaded).
// Something made under another generation belongs to an ancestor: a child
// must neither use it nor tell it anything (a socket's bytes, an eventfd's
// count), only let go of its own copy.
uint64_t ForkGeneration();

// Lets go of `thread`, a thread of an ancestor, which does not run in this
// child: joining or detaching it would free (or wait on) a stack fork()
// already took back for reuse, by now perhaps another thread's. It is kept,
// never destroyed, where it stays reachable (no leak reported).
void AbandonParentsThread(std::thread& thread);

// A random number for a token another process must not draw (a filter's
// incarnation, an upload key's name): a thread's generator, copied into a
// child by fork(), would draw the parent's numbers there; it is seeded
// again in each process it finds itself in.
uint64_t UniqueRandom64();

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_UTIL_FORK_GENERATION_H_
