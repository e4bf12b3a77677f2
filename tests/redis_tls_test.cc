// rediss://: the Redis store over TLS, against real redis-servers with TLS
// ports, using a CA and certificates the test makes with openssl when it
// runs. Each server also has a plain port, for checking what arrived and for
// the tests that speak plain text to a TLS port and back.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"
#include "redis/connection_source.h"
#include "redis/redis_client.h"
#include "redis/redis_url.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "redis_test_raw.h"
#include "slow_relay.h"
#include "test_util.h"
#include "tls_certs.h"
#ifdef REDBLOOMD_PATH
#include "server_process.h"
#endif

namespace redbloom {
namespace {

using testing::RawRedis;
using testing::RedisServer;
using testing::TestCertificates;
using Millis = std::chrono::milliseconds;

FilterOptions Options(uint64_t n) {
  return FilterOptions{.capacity = n, .error_rate = 0.01, .strategy = Strategy::kGuava64};
}

std::vector<std::string> Items(const std::string& prefix, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// One redis-server with a plain port and a TLS port.
struct TlsServer {
  TlsServer(const TestCertificates& certs, bool auth_clients, bool other_ca = false)
      : tls_port(testing::FreePort()), server(certs.ServerArgs(tls_port, auth_clients, other_ca)) {
    server.Start();
  }
  int tls_port;
  RedisServer server;
};

class RedisTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new TestCertificates();
    tls_ = new TlsServer(*certs_, /*auth_clients=*/false);
    mutual_ = new TlsServer(*certs_, /*auth_clients=*/true);
    other_ = new TlsServer(*certs_, /*auth_clients=*/false, /*other_ca=*/true);
  }
  static void TearDownTestSuite() {
    delete other_;
    delete mutual_;
    delete tls_;
    delete certs_;
  }
  void SetUp() override {
    raw_ = std::make_unique<RawRedis>(tls_->server.port());
    raw_->Run({"FLUSHALL"});
  }

  // rediss://HOST:PORT?cacert=<the test CA, or `cacert`>[&options]
  static std::string Url(int port, const std::string& options = "",
                         const std::string& host = "127.0.0.1", const std::string& cacert = "") {
    return "rediss://" + host + ":" + std::to_string(port) +
           "?cacert=" + (cacert.empty() ? certs_->ca() : cacert) +
           (options.empty() ? "" : "&" + options);
  }

  // Opens `url`, expecting failure; returns the status and how long it took.
  static Status OpenFails(const std::string& url, Millis* took = nullptr) {
    const auto start = std::chrono::steady_clock::now();
    Result<std::unique_ptr<Store>> store = Store::Open(url);
    if (took != nullptr) {
      *took = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start);
    }
    EXPECT_FALSE(store.ok()) << url << " opened";
    return store.ok() ? Status::Ok() : store.status();
  }

  static std::unique_ptr<Store> MustOpen(const std::string& url) {
    Result<std::unique_ptr<Store>> store = Store::Open(url);
    EXPECT_TRUE(store.ok()) << url << ": " << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static int64_t ConnectionsReceived(RawRedis& raw) {
    const std::string info = raw.Str({"INFO", "stats"});
    const std::string field = "total_connections_received:";
    return std::stoll(info.substr(info.find(field) + field.size()));
  }

  static inline TestCertificates* certs_ = nullptr;
  static inline TlsServer* tls_ = nullptr;
  static inline TlsServer* mutual_ = nullptr;
  static inline TlsServer* other_ = nullptr;
  std::unique_ptr<RawRedis> raw_;
};

TEST_F(RedisTlsTest, AddsAndChecksOverTls) {
  auto store = MustOpen(Url(tls_->tls_port));
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "orders", Options(20'000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  const auto items = Items("ORD-", 10'000);
  std::vector<uint8_t> flags;
  ASSERT_TRUE((*filter)->AddMany(Views(items), &flags).ok());
  ASSERT_TRUE((*filter)->ContainsMany(Views(items), &flags).ok());
  for (size_t i = 0; i < items.size(); ++i) ASSERT_EQ(flags[i], 1) << items[i];
  const auto absent = Items("NOT-", 10'000);
  ASSERT_TRUE((*filter)->ContainsMany(Views(absent), &flags).ok());
  size_t false_positives = 0;
  for (uint8_t f : flags) false_positives += f;
  EXPECT_LT(false_positives, 300u) << "a 1% filter at half its capacity";
  // The bits are where a plain client sees them: the same server.
  EXPECT_EQ(raw_->Int({"EXISTS", "orders"}), 1);
  EXPECT_GT(raw_->Int({"BITCOUNT", "orders"}), 10'000);
  EXPECT_EQ(store->Master(), "127.0.0.1:" + std::to_string(tls_->tls_port));
}

TEST_F(RedisTlsTest, LargeBitmapsRoundTripOverTls) {
  // 1.2 MB each way: many TLS records (16 KB at most each), partial writes.
  auto store = MustOpen(Url(tls_->tls_port));
  ASSERT_NE(store, nullptr);
  auto config = MakeConfig(Options(1'000'000));
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(store->Create("big", *config).ok());
  auto bits = store->OpenBits("big", *config);
  ASSERT_TRUE(bits.ok()) << bits.status().ToString();
  std::string bitmap(config->data_bytes(), '\0');
  std::mt19937_64 rng(42);
  for (char& c : bitmap) c = static_cast<char>(rng());
  ASSERT_TRUE((*bits)->OrBits(0, bitmap, 0).ok());
  std::string back;
  ASSERT_TRUE((*bits)->ReadBits(0, 0, bitmap.size(), &back).ok());
  EXPECT_TRUE(back == bitmap) << "bytes differ after a round trip over TLS";
  EXPECT_TRUE(raw_->Str({"GET", "big"}) == bitmap) << "the server holds other bytes";
}

TEST_F(RedisTlsTest, PooledConnectionsAreReused) {
  // A TLS 1.3 server sends session tickets after the handshake; an idle
  // connection that has them unread must not be taken for a closed one.
  auto store = MustOpen(Url(tls_->tls_port, "pool_size=4"));
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "reuse", Options(1000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  const int64_t before = ConnectionsReceived(*raw_);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE((*filter)->Add("item-" + std::to_string(i)).ok());
    ASSERT_TRUE((*filter)->Contains("item-" + std::to_string(i)).ok());
  }
  // The raw client's own connection is counted before; none is opened here.
  EXPECT_LE(ConnectionsReceived(*raw_) - before, 1) << "200 calls opened new TLS connections";
}

// Over TLS a server at maxclients closes a new connection without a word
// (it reads as a failed handshake, "TLS failed", not retried): with the
// pool's own connections up, callers share those, as over plain TCP.
TEST_F(RedisTlsTest, CallersShareThePoolsConnectionsAtTheServersMaxclients) {
  auto store = MustOpen(Url(tls_->tls_port, "pool_size=8&command_timeout_ms=20000"));
  auto created = BloomFilter::Create(*store, "full", Options(200'000));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto& f = *created;
  ASSERT_TRUE(f->Add("first").ok());  // the pool's first connection is up
  const std::string clients = raw_->Str({"INFO", "clients"});
  const int connected = std::stoi(clients.substr(clients.find("connected_clients:") + 18));
  raw_->Must({"CONFIG", "SET", "maxclients", std::to_string(connected + 2)});
  const auto items = Items("m", 24'000);
  const auto views = Views(items);
  const std::vector<Status> results = testing::AddFromThreads(*f, views, 12, 250);
  raw_->Must({"CONFIG", "SET", "maxclients", "10000"});
  for (size_t t = 0; t < results.size(); ++t) {
    EXPECT_TRUE(results[t].ok()) << t << ": " << results[t].ToString();
  }
  std::vector<uint8_t> present;
  ASSERT_TRUE(f->ContainsMany(views, &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 24'000);
}

TEST_F(RedisTlsTest, AnIdleConnectionWithUnreadSessionTicketsIsReused) {
  Result<internal::RedisUrl> url = internal::ParseRedisUrl(Url(tls_->tls_port), StoreOptions());
  ASSERT_TRUE(url.ok());
  internal::ConnectionPool pool(internal::ServerParamsFor(*url, url->hosts.front()), 1);
  const int64_t before = ConnectionsReceived(*raw_);
  {
    Result<internal::ConnectionPool::Lease> lease = pool.Acquire();  // back unused, nothing read
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  }
  // Redis lists a TLS client once its handshake is done, and by then it has
  // sent its session tickets. (A new connection reads INFO server for the
  // run_id, which may consume them; the idle check must pass either way.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (raw_->Str({"CLIENT", "LIST"}).find("cmd=info") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(Millis(5));
  }
  Result<internal::ConnectionPool::Lease> lease = pool.Acquire();
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  internal::CommandBuffer ping;
  ping.Command({"PING"});
  ASSERT_TRUE((*lease)->Append(ping).ok());
  Result<internal::ReplyPtr> pong = (*lease)->ReadOk();
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(ConnectionsReceived(*raw_) - before, 1) << "the idle connection was taken for closed";
}

TEST_F(RedisTlsTest, CertificateOfAnUntrustedCaIsRefused) {
  // The server's certificate is from another CA than cacert=.
  Status s = OpenFails(Url(other_->tls_port));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("does not verify"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("unable to get local issuer certificate"), std::string::npos)
      << s.ToString();
  EXPECT_TRUE(internal::IsPermanentFailure(s)) << "retrying cannot fix a certificate";
  // And trusting the other CA instead refuses the first server.
  s = OpenFails("rediss://127.0.0.1:" + std::to_string(tls_->tls_port) +
                "?cacert=" + certs_->other_ca());
  EXPECT_NE(s.message().find("does not verify"), std::string::npos) << s.ToString();
}

// cacert=, cert= and key= are read again for new connections once they
// change (rotated certificates), and a file that cannot be used then keeps
// the one loaded before. They were read once per store: a CA added to the
// file, or a renewed client certificate, needed a restart, and the outage
// began at the next reconnect, maybe hours after the change.
TEST_F(RedisTlsTest, ChangedCertificateFilesAreReadAgainForNewConnections) {
  testing::TempDir dir;
  const std::string trust = dir.path() + "/trust.pem";
  const auto put = [&](const std::string& from) {
    std::filesystem::copy_file(from, trust + ".new",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(trust + ".new", trust);  // as an operator's tooling does
  };
  put(certs_->ca());
  auto store = MustOpen(Url(tls_->tls_port, "max_retries=0", "127.0.0.1", trust));
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto filter, BloomFilter::Create(*store, "rotated", Options(100)));
  ASSERT_TRUE(filter->Add("x").ok());
  const auto reconnect = [&] {
    raw_->Run({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // past the 1 s check
    (void)filter->Contains("x");                                   // finds its connection closed
    return filter->Contains("x");
  };
  // Now trusting only another CA: new connections verify against it.
  put(certs_->other_ca());
  Result<bool> refused = reconnect();
  EXPECT_FALSE(refused.ok()) << "the CA file was not read again";
  EXPECT_NE(refused.status().message().find("does not verify"), std::string::npos)
      << refused.status().ToString();
  // Back to the right CA: served again, without reopening the store.
  put(certs_->ca());
  Result<bool> served = reconnect();
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  EXPECT_TRUE(*served);
  // A file that holds no certificate (half written, a mistake) keeps the
  // one loaded before.
  std::ofstream(trust + ".new") << "not a certificate\n";
  std::filesystem::rename(trust + ".new", trust);
  served = reconnect();
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  EXPECT_TRUE(*served);
}

// Stores opened at once over one TLS context make their first handshakes at
// once, each verifying the server with the context's one CA certificate.
// OpenSSL fills a certificate's extension cache (its key identifiers) on first
// use, and two first uses at once race on it: ThreadSanitizer saw it between a
// sentinel watcher's handshake and its caller's. The context fills the caches
// itself before it is shared; under scripts/tsan.sh this test fails without
// that (each round a new CA file, so a new context). In any build every store
// opens and works.
TEST_F(RedisTlsTest, FirstHandshakesAtOnceOverANewContext) {
  testing::TempDir dir;
  constexpr int kRounds = 20;
  constexpr int kThreads = 4;
  for (int round = 0; round < kRounds; ++round) {
    const std::string ca = dir.path() + "/ca-" + std::to_string(round) + ".crt";
    std::filesystem::copy_file(certs_->ca(), ca);
    const std::string url = Url(tls_->tls_port, "", "127.0.0.1", ca);
    std::latch start(kThreads);
    std::vector<Status> opened(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        Result<std::unique_ptr<Store>> store = Store::Open(url);
        if (!store.ok()) {
          opened[t] = store.status();
          return;
        }
        auto filter = BloomFilter::Create(
            **store, "first-" + std::to_string(round) + "-" + std::to_string(t), Options(100));
        opened[t] = filter.ok() ? (*filter)->Add("ORD-1") : filter.status();
      });
    }
    for (std::thread& t : threads) t.join();
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_TRUE(opened[t].ok()) << "round " << round << ", thread " << t << ": "
                                  << opened[t].ToString();
    }
  }
}

TEST_F(RedisTlsTest, SystemCasAreTheDefault) {
  // Without cacert= the system's CAs decide, and they do not know the test CA.
  Status s = OpenFails("rediss://127.0.0.1:" + std::to_string(tls_->tls_port));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("does not verify"), std::string::npos) << s.ToString();
}

TEST_F(RedisTlsTest, TheServerNameIsVerified) {
  // The certificate lists 127.0.0.1 and redis.test, not "localhost".
  Status s = OpenFails(Url(tls_->tls_port, "", "localhost"));
  EXPECT_NE(s.message().find("hostname mismatch"), std::string::npos) << s.ToString();
  // sni= names what to verify (and what to send as SNI).
  EXPECT_NE(MustOpen(Url(tls_->tls_port, "sni=redis.test", "localhost")), nullptr);
  s = OpenFails(Url(tls_->tls_port, "sni=other.test"));
  EXPECT_NE(s.message().find("not for 'other.test'"), std::string::npos) << s.ToString();
  // An address names what to verify too, written bare or, as in a host, in
  // brackets: "[::1]" was sent and verified as a host name, and matched none.
  EXPECT_NE(MustOpen(Url(tls_->tls_port, "sni=::1", "localhost")), nullptr);
  EXPECT_NE(MustOpen(Url(tls_->tls_port, "sni=%5B::1%5D", "localhost")), nullptr);
  EXPECT_NE(MustOpen(Url(tls_->tls_port, "sni=[::1]", "localhost")), nullptr);
}

// Stores of one process that share their CA and certificate files share a
// TLS context, but each sends and verifies its own sni=: it was the first
// store's name for all of them, so a store naming another server opened
// (or one naming the right server failed) while the first was open.
TEST_F(RedisTlsTest, EachStoreVerifiesItsOwnServerName) {
  auto first = MustOpen(Url(tls_->tls_port, "sni=redis.test", "localhost"));
  ASSERT_NE(first, nullptr);
  Status s = OpenFails(Url(tls_->tls_port, "sni=other.test", "localhost"));
  EXPECT_NE(s.message().find("not for 'other.test'"), std::string::npos) << s.ToString();
  EXPECT_TRUE(first->Ping().ok());
}

TEST_F(RedisTlsTest, InsecureSkipsVerification) {
  auto store = MustOpen(Url(other_->tls_port, "insecure=1"));
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Ping().ok());
}

TEST_F(RedisTlsTest, PlainTextToATlsPortFailsAtOnceAndSaysSo) {
  Millis took{};
  Status s = OpenFails("redis://127.0.0.1:" + std::to_string(tls_->tls_port), &took);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("rediss://"), std::string::npos) << s.ToString();
  EXPECT_LT(took.count(), 1000) << "the server resets the connection at once";
}

TEST_F(RedisTlsTest, TlsToAPlainPortFailsWithinTheConnectTimeout) {
  // A plain server reads the ClientHello as an inline command and waits for
  // a newline that may never come: only the connect timeout ends that.
  for (int i = 0; i < 3; ++i) {
    Millis took{};
    Status s = OpenFails(Url(tls_->server.port(), "connect_timeout_ms=300"), &took);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("redis://"), std::string::npos) << s.ToString();
    EXPECT_LT(took.count(), 300 + 500) << s.ToString();
  }
}

TEST_F(RedisTlsTest, MutualTlsNeedsACertificateTheServerTrusts) {
  const std::string url = Url(mutual_->tls_port);
  Status s = OpenFails(url);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("client certificate"), std::string::npos) << s.ToString();
  EXPECT_TRUE(internal::IsPermanentFailure(s)) << s.ToString();

  s = OpenFails(url + "&cert=" + certs_->other_client_cert() +
                "&key=" + certs_->other_client_key());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("TLS"), std::string::npos) << s.ToString();

  auto store = MustOpen(url + "&cert=" + certs_->client_cert() + "&key=" + certs_->client_key());
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "mtls", Options(100));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("x").ok());
  EXPECT_TRUE(*(*filter)->Contains("x"));
}

TEST_F(RedisTlsTest, UnreadableCertificateFilesAreInvalidArguments) {
  const std::string base = "rediss://127.0.0.1:" + std::to_string(tls_->tls_port);
  Status s = OpenFails(base + "?cacert=/nonexistent/ca.pem");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("cacert=/nonexistent/ca.pem"), std::string::npos) << s.ToString();
  // A key that is not the certificate's.
  s = OpenFails(Url(mutual_->tls_port,
                    "cert=" + certs_->client_cert() + "&key=" + certs_->other_client_key()));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("is not the key of"), std::string::npos) << s.ToString();
  // A file that holds no certificate.
  s = OpenFails(base + "?cacert=" + certs_->server_key());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  // Whether or not the server is there (it was "connection refused", which
  // redbloomd retried for ever), for every kind of URL.
  const std::string nobody = "127.0.0.1:" + std::to_string(testing::FreePort());
  for (const std::string& url :
       {"rediss://" + nobody + "?cacert=/nonexistent/ca.pem",
        "rediss-cluster://" + nobody + "?cacert=/nonexistent/ca.pem",
        "rediss-sentinel://" + nobody + "/mymaster?cacert=/nonexistent/ca.pem"}) {
    s = OpenFails(url);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << url << ": " << s.ToString();
  }
}

TEST_F(RedisTlsTest, CommandTimeoutHoldsOverTls) {
  auto store = MustOpen(Url(tls_->tls_port, "command_timeout_ms=200&max_retries=0"));
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "slow", Options(100));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  // Every client but this one waits 1.5 s for its next command.
  raw_->Run({"CLIENT", "PAUSE", "1500", "ALL"});
  const auto start = std::chrono::steady_clock::now();
  Result<bool> r = (*filter)->Contains("x");
  const auto took = std::chrono::steady_clock::now() - start;
  raw_->Run({"CLIENT", "UNPAUSE"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_LT(took, Millis(1000));
}

// The command timeout bounds a whole reply over TLS too. A record that
// trickles in (a byte every 20 ms through a relay) needs a wait per byte, and
// each had the whole timeout: the check answered once its record was in,
// about 1.5 s later, where 300 ms was due.
TEST_F(RedisTlsTest, AReplyThatTricklesInTimesOutWithinTheTimeoutOverTls) {
  testing::SlowRelay relay(tls_->tls_port, Millis(20));
  auto store = MustOpen(Url(relay.port(), "command_timeout_ms=300&max_retries=0"));
  ASSERT_NE(store, nullptr);
  auto filter = BloomFilter::Create(*store, "trickle", Options(1000));
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  ASSERT_TRUE((*filter)->Add("x").ok());
  relay.Trickle(true);
  const Status checked = (*filter)->Contains("x").status();  // a record of about 80 bytes
  EXPECT_EQ(checked.code(), StatusCode::kDeadlineExceeded) << checked.ToString();
}

// ---- Redis Cluster over TLS --------------------------------------------------

// rediss-cluster:// (or redis-cluster://...?tls=1): every node is reached over
// TLS. The nodes run tls-cluster yes, so the cluster bus speaks TLS and
// CLUSTER SLOTS names the nodes' TLS ports.
TEST_F(RedisTlsTest, ClusterOverTls) {
  std::vector<std::unique_ptr<RedisServer>> nodes;
  std::vector<int> tls_ports;
  for (int i = 0; i < 3; ++i) {
    tls_ports.push_back(testing::FreePort());
    std::vector<std::string> args = certs_->ServerArgs(tls_ports.back(), /*auth_clients=*/false);
    args.insert(
        args.end(),
        {"--tls-cluster", "yes", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
         "--cluster-port", std::to_string(testing::FreePort()), "--cluster-node-timeout", "1000"});
    nodes.push_back(std::make_unique<RedisServer>(args));
    nodes.back()->Start();
  }
  // redis-cli waits for ever for nodes that cannot join; 30 s bounds that.
  std::vector<std::string> create = {"/usr/bin/env", "timeout",   "30",
                                     "redis-cli",    "--tls",     "--cacert",
                                     certs_->ca(),   "--cluster", "create"};
  for (int port : tls_ports) create.push_back("127.0.0.1:" + std::to_string(port));
  create.push_back("--cluster-yes");
  const testing::CommandResult created = testing::RunCommand(create);
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto all_ok = [&] {
    for (auto& n : nodes) {
      if (n->Cli({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) return false;
    }
    return true;
  };
  while (!all_ok()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the TLS cluster never became ok";
    std::this_thread::sleep_for(Millis(50));
  }
  // Joined with 1 s of node timeout, then as RedisCluster's: with no
  // replicas, a master starved of CPU past it would take the cluster down.
  for (auto& n : nodes) {
    ASSERT_EQ(n->Cli({"CONFIG", "SET", "cluster-node-timeout",
                      std::to_string(testing::RedisCluster::kSteadyNodeTimeoutMs)}),
              "OK\n");
  }

  for (const std::string scheme : {"rediss-cluster://", "redis-cluster://"}) {
    const std::string url = scheme + "127.0.0.1:" + std::to_string(tls_ports[0]) +
                            "?cacert=" + certs_->ca() + (scheme[5] == 's' ? "" : "&tls=1");
    auto store = MustOpen(url);
    ASSERT_NE(store, nullptr);
    // Filters whose keys hash to slots of every node.
    for (int f = 0; f < 12; ++f) {
      const std::string name = "f" + std::to_string(f) + scheme.substr(0, 6);
      auto filter = BloomFilter::Create(*store, name, Options(1000));
      ASSERT_TRUE(filter.ok()) << filter.status().ToString();
      const auto items = Items(name + "-", 200);
      ASSERT_TRUE((*filter)->AddMany(Views(items)).ok());
      std::vector<uint8_t> present;
      ASSERT_TRUE((*filter)->ContainsMany(Views(items), &present).ok());
      for (size_t i = 0; i < items.size(); ++i) ASSERT_EQ(present[i], 1) << items[i];
    }
  }
  for (auto& n : nodes) {
    EXPECT_NE(n->Cli({"DBSIZE"}), "0\n") << "a node got none of 24 filters' keys";
  }
}

// ---- The CLI -------------------------------------------------------------

testing::CommandResult Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {REDBLOOM_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunCommand(argv);
}

TEST_F(RedisTlsTest, CliTakesTlsUrls) {
  const std::string url = Url(tls_->tls_port);
  auto r = Cli({"--store", url, "create", "cli", "--capacity", "1000", "--error", "0.01"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"--store", url, "add", "cli", "a", "b"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"--store", url, "check", "cli", "a", "b"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\ta\n1\tb\n");
}

TEST_F(RedisTlsTest, CliExitsThreeNamingTheCause) {
  auto r = Cli({"--store", Url(other_->tls_port), "list"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("does not verify"), std::string::npos) << r.err;
  r = Cli({"--store", "redis://127.0.0.1:" + std::to_string(tls_->tls_port), "list"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("rediss://"), std::string::npos) << r.err;
  r = Cli({"--store", Url(tls_->server.port(), "connect_timeout_ms=300"), "list"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("redis://"), std::string::npos) << r.err;
}

TEST_F(RedisTlsTest, CliWarnsAboutInsecure) {
  auto r = Cli({"--store", Url(other_->tls_port, "insecure=1"), "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("WARNING"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("insecure=1"), std::string::npos) << r.err;
  // No warning when verification is on.
  r = Cli({"--store", Url(tls_->tls_port), "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("WARNING"), std::string::npos) << r.err;
}

#ifdef REDBLOOMD_PATH
TEST_F(RedisTlsTest, ServiceTakesTlsUrlsAndLogsInsecure) {
  testing::RedbloomdProcess server(Url(other_->tls_port, "insecure=1"));
  server.Start();
  auto client = server.Client();
  testing::Answer ready = testing::Call(*client, "GET", "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.json.value("master", ""), "127.0.0.1:" + std::to_string(other_->tls_port));
  EXPECT_NE(server.Stderr().find("WARNING"), std::string::npos) << server.Stderr();
  EXPECT_NE(server.Stderr().find("insecure=1"), std::string::npos) << server.Stderr();
}
#endif

}  // namespace
}  // namespace redbloom
