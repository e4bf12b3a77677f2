// Stop signals for the CLI's commands that must end cleanly.
#ifndef REDBLOOM_TOOLS_STOP_SIGNALS_H_
#define REDBLOOM_TOOLS_STOP_SIGNALS_H_

#include <signal.h>

#include <array>
#include <csignal>

namespace redbloom::cli {

// SIGINT, SIGTERM and SIGHUP during a rebuild, an import, a merge, an add,
// a remove or a dedup: the signal's number, for the command to stop at (between
// reads, and in a read it interrupts; a merge, at its end; an add, after
// its chunk, synced), so that the library drops what it made: a rebuild's
// temporary filter (killed outright, a rebuild leaves it, and the next one
// then needs --force), an import's new filter (killed outright, an import
// left a filter holding part of its bits, whose other items read absent).
inline volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" inline void OnStopSignal(int sig) { g_stop_signal = sig; }

// Catches the stop signals for its life: without SA_RESTART (a blocked read
// returns EINTR) and once (SA_RESETHAND: a second signal ends the process as
// usual). A signal ignored when the command started (a background job of a
// script) stays ignored.
class StopSignals {
 public:
  StopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction was {};
      if (::sigaction(kSignals[i], nullptr, &was) != 0 || was.sa_handler == SIG_IGN) continue;
      struct sigaction on {};
      on.sa_handler = OnStopSignal;
      on.sa_flags = SA_RESETHAND;
      sigemptyset(&on.sa_mask);
      if (::sigaction(kSignals[i], &on, &old_[i]) == 0) caught_[i] = true;
    }
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) {
      if (caught_[i]) ::sigaction(kSignals[i], &old_[i], nullptr);
    }
  }

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
  std::array<bool, 3> caught_{};
};

}  // namespace redbloom::cli

#endif  // REDBLOOM_TOOLS_STOP_SIGNALS_H_
