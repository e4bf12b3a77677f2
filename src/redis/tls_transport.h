// TLS under a Redis connection (rediss://), with OpenSSL. Internal.
//
// Debian 12's hiredis (0.14) has no TLS, so redbloom runs the TLS session on
// its own socket (transport.h) and keeps hiredis for what it does well,
// parsing RESP (redis_client.cc). OpenSSL never touches the socket itself:
// a small BIO of ours sends with MSG_NOSIGNAL (a closed peer is an error, not
// a SIGPIPE) and notes the first bytes the server sent, which tell a plain
// Redis port ("-ERR ...") from a failed handshake.
//
// Verification is on by default: the chain against `cacert` (else the
// system's CAs) and the name: `sni` if given, else the host (an IP address
// is matched against the certificate's IP SANs). redis-cli checks the chain
// only; Lettuce (Spring Boot's default client) checks both, as here.
#ifndef REDBLOOM_SRC_REDIS_TLS_TRANSPORT_H_
#define REDBLOOM_SRC_REDIS_TLS_TRANSPORT_H_

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "redis/redis_url.h"
#include "redis/transport.h"

struct ssl_ctx_st;

namespace redbloom::internal {

// The CA, certificate and key of one set of TlsOptions, loaded once and
// shared by every connection made with them (every server of a store), and
// loaded again for new connections once the files change (rotated
// certificates: checked at most once a second, by their identity, size and
// modification time). Files that cannot be loaded then keep the ones loaded
// before in use.
class TlsContext {
 public:
  // The context for `options`: the same object while any holder of it
  // lives, so a store's pools and its Sentinel or Cluster nodes load the
  // files once; a store opened later loads them again (rotated files).
  static std::shared_ptr<const TlsContext> For(const TlsOptions& options);

  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ~TlsContext();

  const TlsOptions& options() const { return options_; }
  // Why the CA, certificate or key could not be loaded at first ("" if
  // they were); every connection attempt then fails with it (kTlsConfig).
  std::string error() const;
  // The context for a new connection (reloaded if the files changed), with
  // a reference the caller frees (SSL_CTX_free); null with *error set if
  // none could ever be loaded.
  ssl_ctx_st* Acquire(std::string* error) const;

 private:
  explicit TlsContext(TlsOptions options);
  // A context loaded from the files now, or null with *error set.
  static ssl_ctx_st* Load(const TlsOptions& options, std::string* error);
  // The files' identities, sizes and times, to tell a change.
  std::string Signature() const;

  TlsOptions options_;
  mutable std::mutex mu_;
  mutable ssl_ctx_st* ctx_ = nullptr;  // mu_
  mutable std::string error_;          // mu_
  mutable std::string signature_;      // mu_: of the files ctx_ or error_ came from
  mutable std::chrono::steady_clock::time_point checked_at_;  // mu_: of the last Signature()
};

// Runs the TLS handshake over `socket` (connected, non-blocking) before
// `deadline`, as the client of `host`. On failure returns null and fills
// *failure: kCertificate (with OpenSSL's reason), kHandshake,
// kHandshakeTimeout, kIo/kClosed, or kTlsConfig.
std::unique_ptr<Transport> StartTls(Socket socket, const TlsContext& context,
                                    const std::string& host, Deadline deadline, IoFailure* failure);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_TLS_TRANSPORT_H_
