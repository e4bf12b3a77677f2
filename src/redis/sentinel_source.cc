#include "redis/sentinel_source.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "redis/redis_client.h"
#include "redis/redis_pipeline.h"
#include "util/fd_above_stdio.h"
#include "util/fork_generation.h"
#include "util/start_thread.h"

namespace redbloom::internal {
namespace {

// The +switch-master subscriber PINGs a sentinel that said nothing for this
// long, and gives it up if the PING is not answered by the next round.
constexpr auto kWatchQuiet = std::chrono::seconds(15);
// With read_from=replica and no usable replica, reads go to the master, and
// replicas are looked for again after this long.
constexpr auto kReplicaRetry = std::chrono::seconds(5);
// With no sentinel answering, the master known before serves on (a new
// connection to it still checks ROLE), and the sentinels are asked again
// after this long, by one caller while the others go on.
constexpr auto kLookupRetry = std::chrono::seconds(5);

using PoolPtr = std::shared_ptr<ConnectionPool>;
using Clock = std::chrono::steady_clock;

Result<int> ParsePort(std::string_view text) {
  int port = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !IsPort(port)) {
    return Status::Internal("a sentinel named port '" + std::string(text) + "'");
  }
  return port;
}

// What a sentinel names as a host: an IP address or a hostname (with
// resolve-hostnames), never empty, spaced or binary.
bool IsHostText(std::string_view host) {
  return !host.empty() && host.size() <= 255 &&
         std::all_of(host.begin(), host.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

Result<HostPort> ParseAddress(std::string_view host, std::string_view port) {
  if (!IsHostText(host)) {
    std::string shown(host.substr(0, 64));  // printable in an error message
    for (char& c : shown) c = c > ' ' && c < 0x7f ? c : '?';
    return Status::Internal("a sentinel named host '" + shown + "'");
  }
  REDBLOOM_ASSIGN_OR_RETURN(int p, ParsePort(port));
  return HostPort{std::string(host), p};
}

}  // namespace

Result<HostPort> ParseSentinelMaster(const redisReply* r) {
  if (r->type == REDIS_REPLY_NIL) return Status::NotFound("no master of that name");
  if (!IsArray(r, 2)) return Status::Internal("not an address");
  return ParseAddress(ReplyText(r->element[0]), ReplyText(r->element[1]));
}

std::vector<HostPort> ParseSentinelReplicas(const redisReply* r) {
  std::vector<HostPort> usable;
  if (r->type != REDIS_REPLY_ARRAY) return usable;
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* fields = r->element[i];
    if (fields->type != REDIS_REPLY_ARRAY) continue;
    std::string_view ip, port, flags;
    for (size_t f = 0; f + 1 < fields->elements; f += 2) {
      const std::string_view name = ReplyText(fields->element[f]);
      std::string_view* into = name == "ip"      ? &ip
                               : name == "port"  ? &port
                               : name == "flags" ? &flags
                                                 : nullptr;
      if (into != nullptr) *into = ReplyText(fields->element[f + 1]);
    }
    if (flags.find("down") != std::string_view::npos ||
        flags.find("disconnected") != std::string_view::npos) {
      continue;
    }
    if (Result<HostPort> address = ParseAddress(ip, port); address.ok()) {
      usable.push_back(*std::move(address));
    }
  }
  return usable;
}

Result<std::optional<HostPort>> ParseSwitchMaster(std::string_view text,
                                                  std::string_view master_name) {
  std::vector<std::string_view> words;
  for (size_t start = 0; start <= text.size();) {
    const size_t space = std::min(text.find(' ', start), text.size());
    words.push_back(text.substr(start, space - start));
    start = space + 1;
  }
  if (words.empty() || words[0] != master_name) return std::optional<HostPort>();
  if (words.size() != 5) return Status::Internal("a +switch-master message of another shape");
  REDBLOOM_ASSIGN_OR_RETURN(HostPort address, ParseAddress(words[3], words[4]));
  return std::optional<HostPort>(std::move(address));
}

namespace {

class SentinelSource final : public ConnectionSource {
 public:
  explicit SentinelSource(const RedisUrl& url)
      : ConnectionSource(url.options),
        url_(url),
        // Off 0, 1 and 2: on a closed stdout it took the program's output,
        // and stayed readable, so that each wait woke the watcher at once.
        wake_fd_(AboveStdio(::eventfd(0, EFD_CLOEXEC))),
        fork_generation_(ForkGeneration()) {}

  // Starts the thread that watches the sentinels (+switch-master).
  Status Start() {
    REDBLOOM_ASSIGN_OR_RETURN(
        watcher_, StartThread("the thread that watches the sentinels", [this] { Watch(); }));
    return Status::Ok();
  }

  ~SentinelSource() override {
    if (fork_generation_.load(std::memory_order_relaxed) != ForkGeneration()) {
      // A child's copy it never called: a stop written to the parent's
      // eventfd would wake the parent's watcher at every wait from then on.
      LetGoOfParentsWatcher();
      return;
    }
    {
      std::lock_guard lock(stop_mu_);
      stopping_ = true;
    }
    stop_cv_.notify_all();
    const uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
    if (watcher_.joinable()) watcher_.join();
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  Status Run(std::string_view /*key*/, Access access, bool idempotent, const Op& op) override {
    REDBLOOM_RETURN_IF_ERROR(WatchInThisProcess());
    const bool replica = access == Access::kReplicaOk && url_.read_from == ReadFrom::kReplica;
    for (int attempt = 0;; ++attempt) {
      Status s;
      bool wrote = false;
      bool readonly = false;
      bool ran = false;  // the op ran on a connection (not a pool that stayed busy)
      PoolPtr pool;
      if (Result<PoolPtr> target = Target(replica); !target.ok()) {
        s = target.status();
      } else {
        pool = std::move(target).value();
        Result<ConnectionPool::Lease> lease = pool->Acquire();
        if (!lease.ok()) {
          s = lease.status();
        } else {
          s = op(**lease);
          ran = true;
          wrote = (*lease)->wrote();
          readonly = (*lease)->saw_readonly();
        }
      }
      if (s.ok()) return s;
      bool on_replica = false;
      {
        std::lock_guard lock(mu_);
        on_replica = pool != nullptr && pool != master_;
      }
      // A lost or silent server may have been failed over: whatever it was,
      // the sentinels are asked again before it is used next.
      if (pool != nullptr &&
          (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded)) {
        Forget(pool);
      }
      // A read that a stalled replica timed out goes on to another server,
      // as a refused one does (the replica was forgotten above): it was 504
      // while the master could answer, where Cluster falls back. Not a
      // master's timeout (the same heavy read again), nor a pool that
      // stayed busy (more connections under load).
      const bool retry_read =
          replica && on_replica && ran && s.code() == StatusCode::kDeadlineExceeded;
      if ((s.code() != StatusCode::kUnavailable && !retry_read) || IsPermanentFailure(s) ||
          attempt >= options().max_retries) {
        return s;
      }
      // A write that may have run is sent again only if that is harmless,
      // or if the server said READONLY: it is a replica, so nothing ran.
      if (wrote && !idempotent && !readonly) return s;
      std::this_thread::sleep_for(Backoff(attempt));
    }
  }

  Status ForEachServer(const Op& op) override {
    return Run("", Access::kMaster, /*idempotent=*/true, op);
  }

  Status Check() override {
    REDBLOOM_RETURN_IF_ERROR(WatchInThisProcess());
    REDBLOOM_ASSIGN_OR_RETURN(PoolPtr pool, Target(/*replica=*/false));
    Result<ConnectionPool::Lease> lease = pool->Acquire();
    // A user without +ping is no failure (as for the other sources).
    Status s = lease.ok() ? PingServer(**lease) : lease.status();
    if (!s.ok()) Forget(pool);
    return s;
  }

  std::string Master() const override {
    std::lock_guard lock(mu_);
    return master_ != nullptr ? master_->server().display : "";
  }

  std::string Warning() const override {
    std::lock_guard lock(mu_);
    if (master_ == nullptr) return "";
    if (fallback_) {
      return "no sentinel of master '" + url_.master_name + "' answers (" +
             lookup_failure_.message() + "): using " + master_->server().display +
             ", the master they named last; if the sentinels failed over meanwhile (a network "
             "partition), writes there may be lost";
    }
    if (!watch_lost_.empty()) {
      return "the failover watcher of master '" + url_.master_name + "' is subscribed to none " +
             "of its " + std::to_string(url_.hosts.size()) +
             " sentinels (the last: " + watch_lost_ + "): using " + master_->server().display +
             ", the master they named last; a failover is noticed only when a call there fails";
    }
    return "";
  }

 private:
  // The pool for the next operation: the master's, or with `replica` a
  // replica's (the master's if there is no usable replica).
  Result<PoolPtr> Target(bool replica) {
    if (PoolPtr known = Known(replica)) return known;
    // One lookup at a time: after a failover every caller waits for the
    // first one's answer rather than asking the sentinels itself. While
    // the sentinels do not answer, nobody waits for the one asking again.
    std::unique_lock resolving(resolve_mu_, std::defer_lock);
    if (!resolving.try_lock()) {
      if (PoolPtr fallback = Fallback(replica)) return fallback;
      resolving.lock();
    }
    if (PoolPtr known = Known(replica)) return known;
    if (replica) {
      if (PoolPtr r = FindReplica()) {
        std::lock_guard lock(mu_);
        replica_ = r;
        return r;
      }
    }
    bool stale = false;
    {
      std::lock_guard lock(mu_);
      stale = master_ == nullptr || master_stale_;
    }
    if (stale) {
      Status found;
      {
        std::lock_guard lock(mu_);
        if (Clock::now() < lookup_retry_at_) found = lookup_failure_;
      }
      const bool asked = found.ok();
      if (asked) found = FindMaster();
      if (!found.ok()) {
        std::lock_guard lock(mu_);
        if (asked) {  // not again for a while, by anyone
          lookup_retry_at_ = Clock::now() + kLookupRetry;
          lookup_failure_ = found;
        }
        // The sentinels could not say: the master they named last serves
        // on, rather than failing every call while it is up. Each new
        // connection to it checks ROLE, so one the sentinels demoted and
        // told so is not written to; one cut off from them all (a
        // partition) may still say master, which Warning() reports.
        if (found.code() != StatusCode::kUnavailable || master_ == nullptr) return found;
        fallback_ = true;
        return FallbackPool(replica);
      }
    }
    std::lock_guard lock(mu_);
    if (replica) {
      replica_ = master_;
      replica_retry_at_ = Clock::now() + kReplicaRetry;
    }
    return master_;
  }

  // While the last lookup found no sentinel answering: the pool to use
  // without waiting for the caller asking them again, or null.
  PoolPtr Fallback(bool replica) const {
    std::lock_guard lock(mu_);
    return fallback_ ? FallbackPool(replica) : nullptr;
  }
  // The pool a fallback uses (mu_ held): the replica in use, else the master.
  PoolPtr FallbackPool(bool replica) const {
    return replica && replica_ != nullptr ? replica_ : master_;
  }

  // The pool to use without asking anyone, or null.
  PoolPtr Known(bool replica) const {
    std::lock_guard lock(mu_);
    const bool master_ok = master_ != nullptr && !master_stale_;
    if (!replica) return master_ok ? master_ : nullptr;
    if (replica_ == nullptr) return nullptr;
    if (replica_ == master_ && (!master_ok || Clock::now() >= replica_retry_at_)) return nullptr;
    return replica_;
  }

  // `pool` failed: its server is looked up again before the next use.
  void Forget(const PoolPtr& pool) {
    std::lock_guard lock(mu_);
    if (pool == master_) master_stale_ = true;
    if (pool == replica_) replica_.reset();
  }

  // Makes `host` the master, keeping the pool (and its warm connections) if
  // it already is.
  // `made`, if given, is a pool for `host` made (and reached) already. A
  // lookup passes the switches it saw before asking (`switches_seen`): a
  // +switch-master since is newer than its answer, which is then dropped.
  void SetMaster(const HostPort& host, PoolPtr made = nullptr,
                 uint64_t switches_seen = kAnySwitches) {
    std::lock_guard lock(mu_);
    if (switches_seen != kAnySwitches && switches_seen != switches_) return;
    if (master_ == nullptr || master_->server().display != host.Display()) {
      if (replica_ == master_) replica_.reset();
      master_ = made != nullptr ? std::move(made)
                                : std::make_shared<ConnectionPool>(DataParams(host, "master"),
                                                                   options().pool_size);
    }
    master_stale_ = false;
    fallback_ = false;
    lookup_failure_ = Status::Ok();
  }

  // The master the sentinels name. One that cannot be reached, or says it is
  // a replica, sends the question on to the next sentinel, which may know
  // better: one stale sentinel listed first (restarted with an old config,
  // cut off during a failover) named a replica to every lookup, and the
  // store never opened while the others named the master (an audit). When
  // the next one names the same server, or none other answers, that server
  // is the master, as the sentinels say, and its failure the caller's.
  Status FindMaster() {
    const size_t n = url_.hosts.size();
    std::vector<std::string> tried;
    Status unreached;
    uint64_t switches = 0;
    {
      std::lock_guard lock(mu_);
      switches = switches_;
    }
    for (size_t round = 0;; ++round) {
      HostPort host;
      size_t at = 0;
      Status found = AskForMaster(&host, &at);
      if (!found.ok()) return unreached.ok() || round == 0 ? found : unreached;
      const std::string display = host.Display();
      const bool again = std::find(tried.begin(), tried.end(), display) != tried.end();
      if (again || round + 1 >= n) {
        SetMaster(host, nullptr, switches);
        return Status::Ok();
      }
      auto pool = std::make_shared<ConnectionPool>(DataParams(host, "master"), options().pool_size);
      Status reached = pool->Acquire().status();  // the connection stays, idle, in the pool
      // A refused password or ACL is the answer, not a reason to ask on:
      // another sentinel's stale answer would hide it.
      if (reached.ok() || reached.code() != StatusCode::kUnavailable ||
          IsPermanentFailure(reached)) {
        SetMaster(host, std::move(pool), switches);
        return Status::Ok();
      }
      tried.push_back(display);
      unreached =
          reached.WithSuffix(" (the master sentinel " + url_.hosts[at].Display() + " named)");
      std::lock_guard lock(mu_);
      first_sentinel_ = (at + 1) % n;
    }
  }

  // One sentinel's answer: the master's address in *host, the sentinel's
  // place in the URL in *at.
  Status AskForMaster(HostPort* host, size_t* at) {
    CommandBuffer cmd;
    cmd.Command({"SENTINEL", "get-master-addr-by-name", url_.master_name});
    std::string sentinel;
    Result<ReplyPtr> r = AskSentinels(cmd, &sentinel, /*nil_is_unknown=*/true, at);
    if (r.status().code() == StatusCode::kNotFound) {
      // Every sentinel answered, and none knows the name: the URL's fault
      // when the store opens; later, the sentinels were reconfigured.
      const std::string why =
          r.status().message() + " (the name after the '/' in the URL; see SENTINEL MASTERS)";
      bool opened = false;
      {
        std::lock_guard lock(mu_);
        opened = master_ != nullptr;
      }
      return opened ? Status::Unavailable(why) : Status::InvalidArgument(why);
    }
    if (!r.ok()) return r.status();
    Result<HostPort> master = ParseSentinelMaster(r->get());
    if (!master.ok()) {
      return Status::Internal("sentinel " + sentinel + " answered get-master-addr-by-name for '" +
                              url_.master_name + "' with something else than an address (" +
                              master.status().message() + ")");
    }
    *host = *master;
    return Status::Ok();
  }

  // A replica the sentinels list as up whose ROLE says it is in sync (the
  // check runs as its pool's first connection opens), or null.
  PoolPtr FindReplica() {
    CommandBuffer cmd;
    cmd.Command({"SENTINEL", "replicas", url_.master_name});
    std::string sentinel;
    Result<ReplyPtr> r = AskSentinels(cmd, &sentinel);
    if (!r.ok()) return nullptr;
    std::vector<HostPort> candidates = ParseSentinelReplicas(r->get());
    // Clients pick at random, so that they spread over the replicas.
    thread_local std::minstd_rand rng(std::random_device{}());
    std::shuffle(candidates.begin(), candidates.end(), rng);
    for (const HostPort& host : candidates) {
      auto pool = std::make_shared<ConnectionPool>(DataParams(host, "slave"), options().pool_size);
      if (pool->Acquire().ok()) return pool;  // the connection stays, idle, in the pool
    }
    return nullptr;
  }

  // Sends `cmd` to the sentinels in turn, from the one that answered last,
  // until one answers; *who names it. With `nil_is_unknown`, a nil answer
  // (a sentinel that does not know the master: new, reset, or given
  // another name) sends the question on; if every sentinel answers so,
  // the result is kNotFound.
  Result<ReplyPtr> AskSentinels(const CommandBuffer& cmd, std::string* who,
                                bool nil_is_unknown = false, size_t* index = nullptr) {
    size_t first = 0;
    {
      std::lock_guard lock(mu_);
      first = first_sentinel_;
    }
    const size_t n = url_.hosts.size();
    std::string failures;
    Status first_failure;
    bool all_permanent = true;  // then the first failure is the answer
    size_t unknown = 0;         // sentinels that answered nil
    for (size_t i = 0; i < n; ++i) {
      const size_t at = (first + i) % n;
      const ServerParams params = SentinelParams(url_.hosts[at]);
      Status s;
      {
        Result<std::unique_ptr<Connection>> conn = Connection::Open(params);
        s = conn.status();
        if (s.ok()) s = (*conn)->Append(cmd);
        if (s.ok()) {
          Result<ReplyPtr> r = (*conn)->ReadOk();
          if (r.ok() && nil_is_unknown && (*r)->type == REDIS_REPLY_NIL) {
            ++unknown;
            s = Status::NotFound("sentinel " + params.display + " knows no master named '" +
                                 url_.master_name + "'");
          } else if (r.ok()) {
            std::lock_guard lock(mu_);
            first_sentinel_ = at;
            *who = params.display;
            if (index != nullptr) *index = at;
            return r;
          } else {
            s = r.status();
          }
        }
      }
      failures += (failures.empty() ? "" : "; ") + s.message();
      if (i == 0) first_failure = s;
      all_permanent =
          all_permanent && (IsPermanentFailure(s) || s.code() == StatusCode::kInvalidArgument);
    }
    if (unknown == n) {
      return Status::NotFound(n == 1 ? first_failure.message()
                                     : "no sentinel of " + std::to_string(n) +
                                           " knows a master named '" + url_.master_name + "'");
    }
    if (all_permanent) return first_failure;
    return Status::Unavailable("no sentinel of master '" + url_.master_name +
                               "' answered: " + failures);
  }

  ServerParams SentinelParams(const HostPort& host) const {
    ServerParams p = ServerParamsFor(url_, host);
    p.user = url_.sentinel_user;
    p.password = url_.sentinel_password;
    p.db = 0;
    p.sentinel = true;
    return p;
  }

  ServerParams DataParams(const HostPort& host, const char* role) const {
    ServerParams p = ServerParamsFor(url_, host);
    p.role = role;
    p.standalone = true;
    return p;
  }

  // ---- +switch-master ------------------------------------------------------

  // The subscriber thread: stays subscribed to +switch-master on one
  // sentinel (the next one when it fails), until the source is destroyed.
  void Watch() {
    size_t at = 0;
    int attempt = 0;
    size_t failed = 0;  // sentinels tried in a row without subscribing
    bool subscribed_before = false;
    while (!Stopping()) {
      const ServerParams params = SentinelParams(url_.hosts[at % url_.hosts.size()]);
      bool subscribed = false;
      Status why;
      if (Result<std::unique_ptr<Connection>> conn = Connection::Open(params); conn.ok()) {
        CommandBuffer cmd;
        cmd.Command({"SUBSCRIBE", "+switch-master"});
        why = (*conn)->Append(cmd);
        if (why.ok()) why = (*conn)->ReadOk().status();
        if (why.ok()) {
          subscribed = true;
          // A switch announced while nobody listened is found by asking.
          if (subscribed_before) MarkMasterStale();
          subscribed_before = true;
          attempt = 0;
          failed = 0;
          SetWatchLost("");
          Listen(**conn);
        }
      } else {
        why = conn.status();
      }
      // Every sentinel tried once without success: nobody tells of a
      // failover now, which readiness reports (Warning), with why (a
      // sentinel user without +subscribe is refused every time).
      if (!subscribed && ++failed >= url_.hosts.size()) SetWatchLost(why.ToString());
      ++at;
      std::unique_lock lock(stop_mu_);
      stop_cv_.wait_for(lock, Backoff(attempt++), [this] { return stopping_; });
    }
  }

  // Reads announcements until the connection fails or the source stops.
  void Listen(Connection& c) {
    bool pinged = false;
    for (;;) {
      switch (c.WaitForInput(wake_fd_, kWatchQuiet)) {
        case Connection::Wake::kWoken:
          return;
        case Connection::Wake::kTimeout: {
          if (pinged) return;  // the last PING went unanswered: a dead sentinel
          CommandBuffer ping;
          ping.Command({"PING"});
          if (!c.Append(ping).ok() || !c.Flush().ok()) return;
          pinged = true;
          continue;
        }
        case Connection::Wake::kInput:
          break;
      }
      Result<ReplyPtr> r = c.Read();
      if (!r.ok()) return;
      pinged = false;
      // ["message", "+switch-master", "NAME OLD-IP OLD-PORT NEW-IP NEW-PORT"]
      const redisReply* m = r->get();
      if (IsArray(m, 3) && ReplyText(m->element[0]) == "message") {
        OnSwitch(ReplyText(m->element[2]));
      }
    }
  }

  void OnSwitch(std::string_view text) {
    Result<std::optional<HostPort>> master = ParseSwitchMaster(text, url_.master_name);
    if (!master.ok()) return MarkMasterStale();  // ours, unreadable: ask
    if (!master->has_value()) return;            // another master's
    {
      std::lock_guard lock(mu_);
      ++switches_;
    }
    SetMaster(**master);
    std::lock_guard lock(mu_);
    replica_.reset();  // the replicas are reconfigured too
  }

  // `why` the watcher last failed; "" once it is subscribed.
  void SetWatchLost(std::string why) {
    std::lock_guard lock(mu_);
    watch_lost_ = std::move(why);
  }

  // The watcher subscribed again, or heard of a switch it cannot read: the
  // sentinels answer, and are asked at once (not after a failed lookup's
  // wait), and meanwhile nobody goes on with the master named before.
  void MarkMasterStale() {
    std::lock_guard lock(mu_);
    master_stale_ = true;
    replica_.reset();
    fallback_ = false;
    lookup_retry_at_ = Clock::time_point();
  }

  bool Stopping() {
    std::lock_guard lock(stop_mu_);
    return stopping_;
  }

  // In a child of fork(): watcher_ is the parent's thread, which does not
  // run here, and wake_fd_ the parent's eventfd. Lets go of this process's
  // copies without telling the parent's anything.
  void LetGoOfParentsWatcher() {
    AbandonParentsThread(watcher_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  // In a child of fork(), at its first call: the watcher is the parent's
  // thread, which does not run here, so a failover went unnoticed (a child
  // kept writing to the demoted master: 73 of 100 acknowledged adds lost),
  // and wake_fd_ is the parent's eventfd. The child gets its own of both,
  // and asks the sentinels for the master before its first use.
  Status WatchInThisProcess() {
    if (fork_generation_.load(std::memory_order_relaxed) == ForkGeneration()) return Status::Ok();
    std::lock_guard lock(fork_mu_);
    if (fork_generation_.load(std::memory_order_relaxed) == ForkGeneration()) return Status::Ok();
    LetGoOfParentsWatcher();
    wake_fd_ = AboveStdio(::eventfd(0, EFD_CLOEXEC));
    SetWatchLost("");
    MarkMasterStale();
    REDBLOOM_RETURN_IF_ERROR(Start());
    fork_generation_.store(ForkGeneration(), std::memory_order_relaxed);
    return Status::Ok();
  }

  const RedisUrl url_;
  mutable std::mutex mu_;
  PoolPtr master_;                      // mu_
  bool master_stale_ = false;           // mu_: look the master up before the next use
  PoolPtr replica_;                     // mu_: serves kReplicaOk reads (may be master_)
  Clock::time_point replica_retry_at_;  // mu_: when replica_ == master_
  size_t first_sentinel_ = 0;           // mu_: the sentinel that answered last
  static constexpr uint64_t kAnySwitches = UINT64_MAX;
  uint64_t switches_ = 0;              // mu_: +switch-master notices taken
  bool fallback_ = false;              // mu_: no sentinel answered the last lookup
  std::string watch_lost_;             // mu_: why the watcher reaches no sentinel, or ""
  Status lookup_failure_;              // mu_: why, until lookup_retry_at_
  Clock::time_point lookup_retry_at_;  // mu_
  std::mutex resolve_mu_;              // held while asking the sentinels

  int wake_fd_;  // written once, to stop the subscriber; replaced in a child of fork()
  // The ForkGeneration whose process runs watcher_; written under fork_mu_.
  std::atomic<uint64_t> fork_generation_;
  std::mutex fork_mu_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // stop_mu_
  std::thread watcher_;
};

}  // namespace

Result<std::unique_ptr<ConnectionSource>> NewSentinelSource(const RedisUrl& url) {
  auto source = std::make_unique<SentinelSource>(url);
  REDBLOOM_RETURN_IF_ERROR(source->Start());
  return std::unique_ptr<ConnectionSource>(std::move(source));
}

}  // namespace redbloom::internal
