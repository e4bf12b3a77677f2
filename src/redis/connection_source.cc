#include "redis/connection_source.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <system_error>
#include <thread>

#include "redis/cluster_source.h"
#include "redis/sentinel_source.h"
#include "redis/tls_transport.h"

namespace redbloom::internal {

std::chrono::milliseconds ConnectionSource::Backoff(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  const int64_t base = std::min<int64_t>(1000, int64_t{25} << std::min(attempt, 10));
  return std::chrono::milliseconds(base / 2 + static_cast<int64_t>(rng() % (base / 2 + 1)));
}

Status ConnectionSource::InParallel(const std::vector<std::string>& keys,
                                    const std::vector<std::function<Status()>>& tasks,
                                    OnFailure on_failure) {
  if (tasks.empty()) return Status::Ok();
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < tasks.size(); ++i) groups[Route(keys[i])].push_back(i);
  std::vector<Status> results(tasks.size());
  auto run_group = [&](const std::vector<size_t>& which) {
    for (size_t i : which) {
      results[i] = tasks[i]();
      if (!results[i].ok() && on_failure == OnFailure::kStopThatServer) return;
    }
  };
  std::vector<std::thread> threads;
  for (auto it = std::next(groups.begin()); it != groups.end(); ++it) {
    try {
      threads.emplace_back(run_group, std::cref(it->second));
    } catch (const std::system_error&) {
      // No thread to be had (a thread or memory limit): this group runs
      // here, in turn. Unwinding instead would destroy the threads already
      // started while joinable, which terminates the host process.
      run_group(it->second);
    }
  }
  run_group(groups.begin()->second);
  for (auto& t : threads) t.join();
  for (const Status& s : results) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status ConnectionSource::RunEach(const std::vector<std::string>& keys, Access access,
                                 bool idempotent, const std::vector<Op>& ops,
                                 OnFailure on_failure) {
  std::vector<std::function<Status()>> tasks;
  for (size_t i = 0; i < ops.size(); ++i) {
    tasks.push_back([&, i] { return Run(keys[i], access, idempotent, ops[i]); });
  }
  return InParallel(keys, tasks, on_failure);
}

namespace {

class SingleServerSource final : public ConnectionSource {
 public:
  SingleServerSource(ServerParams server, const StoreOptions& options)
      : ConnectionSource(options), pool_(std::move(server), options.pool_size) {}

  // One server serves every access; read_from=replica needs a topology
  // (Sentinel or Cluster) to find replicas. A stalled server (it took the
  // connection, then said nothing for connect_timeout) is not retried: with
  // no other server to try, each retry waited as long again, so it held every
  // call three times the timeout its error named.
  Status Run(std::string_view /*key*/, Access /*access*/, bool idempotent, const Op& op) override {
    for (int attempt = 0;; ++attempt) {
      Status s;
      bool wrote = false;
      {
        Result<ConnectionPool::Lease> lease = pool_.Acquire();
        if (!lease.ok()) {
          s = lease.status();
        } else {
          s = op(**lease);
          wrote = (*lease)->wrote();
        }
      }
      if (s.ok() || s.code() != StatusCode::kUnavailable || IsPermanentFailure(s) ||
          IsStalledServer(s) || attempt >= options().max_retries || (wrote && !idempotent)) {
        return s;
      }
      std::this_thread::sleep_for(Backoff(attempt));
    }
  }

  Status ForEachServer(const Op& op) override {
    return Run("", Access::kMaster, /*idempotent=*/true, op);
  }

  std::string Master() const override { return pool_.server().display; }

  Status Check() override {
    Result<ConnectionPool::Lease> lease = pool_.Acquire();
    if (!lease.ok()) return lease.status();
    return PingServer(**lease);
  }

 private:
  ConnectionPool pool_;
};

}  // namespace

ServerParams ServerParamsFor(const RedisUrl& url, const HostPort& host) {
  ServerParams server;
  server.host = host.host;
  server.port = host.port;
  server.unix_path = host.unix_path;
  server.user = url.user;
  server.password = url.password;
  server.db = url.db;
  server.connect_timeout = url.options.connect_timeout;
  server.command_timeout = url.options.command_timeout;
  server.idle_timeout = url.options.idle_timeout;
  server.display = host.Display();
  if (url.tls.enabled) server.tls = TlsContext::For(url.tls);
  return server;
}

namespace {

// insecure=1 is for trying things out; it must never go unnoticed in
// production, so it is said on stderr (the service's log), once per URL and
// process.
void WarnIfInsecure(const RedisUrl& url) {
  if (!url.tls.enabled || !url.tls.insecure) return;
  static std::mutex mu;
  static std::set<std::string> warned;
  const std::string shown = url.Redacted();
  std::lock_guard lock(mu);
  if (!warned.insert(shown).second) return;
  std::fprintf(stderr,
               "redbloom: WARNING: %s: insecure=1 turns off TLS certificate verification; anyone "
               "on the network path can read and change this traffic\n",
               shown.c_str());
}

}  // namespace

Result<std::unique_ptr<ConnectionSource>> NewConnectionSource(const RedisUrl& url) {
  WarnIfInsecure(url);
  // A CA file, certificate or key that cannot be used is the URL's fault
  // whether or not the server can be reached now: said at open, not as
  // "connection refused" (and not retried by redbloomd for ever).
  // Held to the end of the call, so that a single server's source, made
  // below, finds it in TlsContext::For's cache instead of reading the files
  // again.
  std::shared_ptr<const TlsContext> tls;
  if (url.tls.enabled) {
    tls = TlsContext::For(url.tls);
    if (!tls->error().empty()) return Status::InvalidArgument(tls->error());
  }
  switch (url.mode) {
    case RedisMode::kSingle: {
      ServerParams server = ServerParamsFor(url, url.hosts.front());
      server.standalone = true;
      return NewSingleServerSource(std::move(server), url.options);
    }
    case RedisMode::kCluster:
      if (url.keys == KeyMode::kJdk) {
        return Status::InvalidArgument(
            "keys=jdk is not supported on a Redis Cluster: a Java-serialized bitmap key lands in "
            "another slot than the filter's other keys");
      }
      return std::unique_ptr<ConnectionSource>(NewClusterSource(url));
    case RedisMode::kSentinel:
      // It starts a thread that watches the sentinels; without one to be
      // had, opening the store fails with a Status, not an exception.
      return NewSentinelSource(url);
  }
  return Status::InvalidArgument("unknown redis mode");
}

std::unique_ptr<ConnectionSource> NewSingleServerSource(ServerParams server,
                                                        const StoreOptions& options) {
  return std::make_unique<SingleServerSource>(std::move(server), options);
}

}  // namespace redbloom::internal
