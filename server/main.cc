// redbloomd: the redbloom HTTP/JSON service. See docs/http-api.md.
//
// Exit status: 0 after a clean shutdown (SIGTERM/SIGINT), 1 after a second
// one cut it short (its flush done), 2 for invalid flags or config, 3 when the store cannot be
// opened, the address cannot be bound, flushing filters at shutdown failed, an exception reached
// main (out of memory, no thread could be started), or what --print-config, --version or --help
// printed could not be written.
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "build_id.h"
#include "config.h"
#include "http_server.h"
#include "metrics.h"
#include "redbloom/store.h"
#include "service.h"
#include "util/errno_text.h"
#include "util/fd_above_stdio.h"
#include "util/start_thread.h"

namespace {

using redbloom::server::AccessLog;
using redbloom::server::HttpServer;
using redbloom::server::Metrics;
using redbloom::server::Service;

void Fail(const std::string& message) { std::fprintf(stderr, "redbloomd: %s\n", message.c_str()); }

// Whether stdout was closed at the start (it is /dev/null since, where the
// service's output may go, but not what a flag asked it to print).
bool g_stdout_closed = false;

// `rc`, once what was printed to stdout (--print-config, --version, --help)
// is written; 3 if it could not be (a full device, a closed stdout), which
// exited 0 with the output lost.
int AfterOutput(int rc) {
  if (g_stdout_closed) {
    Fail("cannot write to stdout: it was closed when redbloomd started");
    return 3;
  }
  // A write that failed already (CLI11 ends its text with std::endl) left
  // its errno; a flush that fails now sets its own.
  int err = std::ferror(stdout) != 0 ? errno : 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0) err = errno;
  if (std::cout && std::ferror(stdout) == 0) return rc;
  Fail(std::string("cannot write to stdout: ") +
       (err != 0 ? redbloom::internal::ErrnoText(err) : "write failed"));
  return 3;
}

// The thread that takes the signals (in sigwait), stopped and joined however
// Run leaves: a joinable std::thread destroyed by an exception's unwinding
// would terminate the process before main could say why.
class SignalThread {
 public:
  template <typename F>
  explicit SignalThread(F&& f) {
    redbloom::Result<std::thread> t =
        redbloom::internal::StartThread("the signal thread", std::forward<F>(f));
    if (!t.ok()) throw std::runtime_error(t.status().message());  // main prints it: exit 3
    thread_ = std::move(t).value();
  }
  SignalThread(const SignalThread&) = delete;
  SignalThread& operator=(const SignalThread&) = delete;
  ~SignalThread() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    stopping_.store(true);
    pthread_kill(thread_.native_handle(), SIGUSR1);  // "main is done"
    thread_.join();
  }
  // True once Stop has begun: the SIGUSR1 the thread takes is Stop's.
  static bool Stopping() { return stopping_.load(); }

 private:
  static inline std::atomic<bool> stopping_{false};  // one signal thread per process
  std::thread thread_;
};

// Runs `tick` every `every` on a thread of its own (named `what` in the
// error of a thread that cannot start), until Stop.
class Periodic {
 public:
  Periodic(const char* what, std::chrono::milliseconds every, std::function<void()> tick) {
    if (every.count() <= 0) return;
    redbloom::Result<std::thread> t =
        redbloom::internal::StartThread(what, [this, every, tick = std::move(tick)] {
          std::unique_lock lock(mu_);
          while (!wake_.wait_for(lock, every, [this] { return stop_; })) {
            lock.unlock();
            tick();
            lock.lock();
          }
        });
    if (!t.ok()) throw std::runtime_error(t.status().message());  // main prints it: exit 3
    thread_ = std::move(t).value();
  }
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;
  ~Periodic() { Stop(); }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

// Makes the filters' writes durable (Service::FlushAll, as at shutdown): on
// a thread of its own, as a sync waits for the disk, which no request
// should. A failure is counted, and logged once per run of failures, with
// the recovery.
std::function<void()> SyncTick(Service& service, Metrics& metrics) {
  return [&service, &metrics, failing = false]() mutable {
    const redbloom::Status s = service.FlushAll();
    metrics.Synced(s.ok());
    if (!s.ok() && !failing) {
      Fail(
          "periodic sync failed; writes since the last good one may not survive a power "
          "loss: " +
          s.ToString());
    } else if (s.ok() && failing) {
      std::fprintf(stderr, "redbloomd: periodic sync works again\n");
    }
    failing = !s.ok();
  };
}

// Removes filters whose TTL has passed (Service::RemoveExpired). A failure
// is logged once per run of failures, with the recovery: the requests that
// meet the store then fail too, and say why.
std::function<void()> ExpirySweepTick(Service& service) {
  return [&service, failing = false]() mutable {
    const redbloom::Status s = service.RemoveExpired();
    if (!s.ok() && !failing) {
      Fail("removing expired filters failed: " + s.ToString());
    } else if (s.ok() && failing) {
      std::fprintf(stderr, "redbloomd: removing expired filters works again\n");
    }
    failing = !s.ok();
  };
}

// What a request frees stays in the malloc arena of the worker that served
// it: glibc gives a heap's free pages back only from its top, and makes up
// to 8 arenas per core, so each of the 16 workers came to keep the peak of
// the largest requests it had served. Measured on 2 cores, 3 clients
// adding and checking batches of 1 to 80,000 items for 4 minutes on `mem:`
// (12 MB of filters): 285 MB resident under load, 292 MB idle after. Here
// the arenas are as many as its CPUs (at least 2), unless the environment
// sets them (MALLOC_ARENA_MAX, GLIBC_TUNABLES), and their free pages go back
// to the system at the first kTrimEvery tick that finds no request in
// progress or waiting: a trim holds each arena's lock while it walks it
// (0.1-27 ms there), which a request would wait for.
constexpr std::chrono::milliseconds kTrimEvery{10'000};

void LimitMallocArenas() {
#ifdef __GLIBC__
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr ||
      (tunables != nullptr && std::strstr(tunables, "glibc.malloc.arena_max") != nullptr)) {
    return;
  }
  // The CPUs it may run on (a cpuset, taskset), not the host's: a
  // container given 2 of 64 would allow 64 arenas, no cap for 16 workers.
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (cpu_set_t set; ::sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  ::mallopt(M_ARENA_MAX, std::max(2, cpus));
#endif
}

void TrimMalloc() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
}

int Run(int argc, char** argv) {
  CLI::App app{"redbloomd: HTTP/JSON service for redbloom Bloom filters (docs/http-api.md)"};
  redbloom::server::Flags flags;
  app.add_option("--listen", flags.listen,
                 "HOST:PORT to listen on [env REDBLOOMD_LISTEN, default 127.0.0.1:8080]");
  app.add_option("--store", flags.store,
                 "store URL: file:DIR, redis://[user:pass@]host[:port][/db], rediss:// (TLS), "
                 "redis+unix://, redis-cluster://, redis-sentinel://, mem: "
                 "[env REDBLOOM_STORE, default file:./redbloom-data]");
  app.add_option("--token", flags.token,
                 "bearer token required on /v1 and /metrics [env REDBLOOMD_TOKEN; prefer the "
                 "env or token_file: flags are visible in ps]");
  app.add_option("--config", flags.config, "JSON config file (docs/http-api.md, \"Config file\")");
  app.add_option("--max-filter-bytes", flags.max_filter_bytes,
                 "largest filter PUT may create, e.g. 8GiB; 0 = no limit [config "
                 "max_filter_bytes; default: 1/4 of RAM for mem: and file:, none for Redis]");
  bool print_config = false;
  app.add_flag("--print-config", print_config, "print the effective configuration and exit");
  app.set_version_flag("--version", "redbloomd " REDBLOOM_VERSION_TEXT);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return AfterOutput(app.exit(e));
  } catch (const CLI::ParseError& e) {
    // One line with the program's name, as every other error of redbloomd
    // (CLI11's own print had neither).
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    std::replace(what.begin(), what.end(), '\n', ' ');
    Fail(what + "; see redbloomd --help");
    return 2;
  }

  auto config =
      redbloom::server::ResolveConfig(flags, [](const char* n) { return std::getenv(n); });
  if (!config.ok()) {
    Fail(config.status().message());
    return 2;
  }
  if (print_config) {
    std::printf("%s\n", redbloom::server::ConfigToJson(*config).c_str());
    return AfterOutput(0);
  }

  // A filter file past the process's file-size limit (a unit's LimitFSIZE,
  // a container's fsize) is a create that fails with EFBIG (507), not
  // SIGXFSZ, which killed the service.
  ::signal(SIGXFSZ, SIG_IGN);

  // Signals are taken by one thread with sigwait(), so every other thread
  // (httplib's pool, the store's) must start with them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Metrics metrics;
  AccessLog access_log;
  if (auto s = access_log.Open(config->access_log, config->access_log_flush, &metrics); !s.ok()) {
    Fail(s.message());
    // A path it cannot open is the configuration's fault; no thread is not.
    return s.code() == redbloom::StatusCode::kResourceExhausted ? 3 : 2;
  }
  Service service(config->service, &metrics);
  if (auto s = service.Start(); !s.ok()) {
    Fail("cannot open store " + redbloom::server::RedactUrl(config->store) + ": " + s.message());
    // A URL that cannot work (an unknown scheme, a bad option, a database
    // the server lacks, a CA file that is not there) is configuration:
    // exit 2, which the packaged unit does not restart every 2 s.
    return s.code() == redbloom::StatusCode::kInvalidArgument ? 2 : 3;
  }
  // A stop asked for while the store opened (its first connect can wait
  // store_connect_timeout_ms, and more with retries) is honoured before
  // binding: it bound, said "listening" and only then stopped.
  if (sigset_t pending; sigpending(&pending) == 0) {
    for (int s : {SIGINT, SIGTERM}) {
      if (sigismember(&pending, s) == 1) {
        std::fprintf(stderr, "redbloomd: SIG%s received while the store opened; stopped\n",
                     sigabbrev_np(s));
        return 0;
      }
    }
  }
  HttpServer server(&service, &metrics, &access_log, config->http);
  if (auto s = server.Bind(); !s.ok()) {
    Fail(s.message());
    return s.code() == redbloom::StatusCode::kInvalidArgument ? 2 : 3;
  }

  const std::string& host = config->http.host;
  const bool loopback = redbloom::server::IsLoopbackHost(host);
  std::fprintf(stderr, "redbloomd %s listening on http://%s%s%s:%d store=%s auth=%s\n",
               REDBLOOM_VERSION_TEXT, host.find(':') != std::string::npos ? "[" : "", host.c_str(),
               host.find(':') != std::string::npos ? "]" : "", server.port(),
               redbloom::server::RedactUrl(service.store_url()).c_str(),
               config->http.token.empty() ? "off" : "bearer");
  if (!loopback && config->http.token.empty()) {
    Fail(
        "warning: listening on a non-loopback address without a token; anyone who can reach "
        "it can add, check and drop filters");
  }
  if (config->http.token == redbloom::server::kPlaceholderToken) {
    Fail(
        "warning: the token is the packaged config's placeholder; set a secret one (it is "
        "refused beyond loopback)");
  }

  // Only a file: store's writes wait for a sync; Redis's and mem:'s syncs
  // did nothing, and counted in redbloomd_syncs_total as if they had.
  std::chrono::milliseconds sync_every = config->service.sync_interval;
  if (sync_every.count() > 0 &&
      !redbloom::Store::TraitsOf(service.store_url()).value_or(redbloom::Store::Traits{}).syncs) {
    std::fprintf(stderr,
                 "redbloomd: sync_interval_ms applies to file: stores only; no periodic sync "
                 "runs for this store\n");
    sync_every = std::chrono::milliseconds(0);
  }
  Periodic periodic_sync("the sync thread", sync_every, SyncTick(service, metrics));
  // A store whose filters live in this process or its directory removes an
  // expired one where it meets it; Redis expires its keys itself.
  std::chrono::milliseconds sweep_every = config->service.expiry_sweep;
  if (!redbloom::Store::TraitsOf(service.store_url()).value_or(redbloom::Store::Traits{}).local) {
    sweep_every = std::chrono::milliseconds(0);
  }
  Periodic periodic_sweep("the expiry sweep thread", sweep_every, ExpirySweepTick(service));
  Periodic periodic_trim("the trim thread", kTrimEvery, [&metrics] {
    if (!metrics.Busy()) TrimMalloc();
  });
  SignalThread signal_thread([&] {
    int stops = 0;
    siginfo_t first{};
    std::chrono::steady_clock::time_point first_at;
    while (true) {
      siginfo_t info{};
      const int sig = sigwaitinfo(&signals, &info);
      if (sig < 0) continue;
      if (sig == SIGUSR1) {
        // "main is done" only once SignalThread::Stop says so: a SIGUSR1
        // from outside (a stray `kill -USR1`) ended this thread, and every
        // later SIGTERM, SIGINT and SIGHUP went unheard. (si_code cannot
        // tell them apart: some kernels give SI_USER for a tgkill too.)
        if (SignalThread::Stopping()) return;
        std::fprintf(stderr, "redbloomd: SIGUSR1 from pid %d ignored\n",
                     static_cast<int>(info.si_pid));
        continue;
      }
      if (sig == SIGHUP) {
        if (auto s = access_log.Reopen(); !s.ok()) Fail(s.message());
        continue;
      }
      // The same signal from the same process within a second is one
      // request delivered twice: GNU timeout (and tini -g) signal the
      // child, then its process group. It cut in-flight requests short.
      // A terminal's ^C (no sending process) still counts each time.
      const auto now = std::chrono::steady_clock::now();
      if (stops == 1 && info.si_pid != 0 && info.si_signo == first.si_signo &&
          info.si_pid == first.si_pid && now - first_at < std::chrono::seconds(1)) {
        continue;
      }
      if (++stops == 1) {
        first = info;
        first_at = now;
        std::fprintf(stderr, "redbloomd: SIG%s received; finishing in-flight requests\n",
                     sigabbrev_np(sig));
        service.BeginShutdown();
        server.Stop();
      } else {
        // A second signal means "now": make the bits durable and leave.
        Fail("second signal; flushing and exiting without waiting");
        const auto s = service.FlushAll();
        access_log.Flush();
        std::_Exit(s.ok() ? 1 : 3);
      }
    }
  });

  server.Run();
  periodic_trim.Stop();
  periodic_sync.Stop();
  periodic_sweep.Stop();
  const auto flushed = service.FlushAll();
  access_log.Flush();
  signal_thread.Stop();
  if (!flushed.ok()) {
    Fail(flushed.ToString());
    return 3;
  }
  std::fprintf(stderr, "redbloomd: stopped\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything is opened: a filter file or a socket on a closed stderr
  // would take the log's lines.
  g_stdout_closed = ::fcntl(1, F_GETFD) == -1 && errno == EBADF;
  if (!redbloom::internal::OpenClosedStdio()) return 3;
  LimitMallocArenas();  // before any thread
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    Fail(std::string("fatal: ") + e.what());
  } catch (...) {
    Fail("fatal: an unknown exception");
  }
  return 3;
}
