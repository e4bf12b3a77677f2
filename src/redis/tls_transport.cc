#include "redis/tls_transport.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "util/errno_text.h"

namespace redbloom::internal {
namespace {

// The OpenSSL errors queued on this thread, oldest first, as one line; the
// queue is left empty.
std::string TakeSslErrors() {
  std::string text;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!text.empty()) text += "; ";
    // "error:0A000086:SSL routines::certificate verify failed" -> the reason.
    const char* reason = ERR_reason_error_string(e);
    text += reason != nullptr ? reason : buf;
  }
  return text;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char addr[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), addr) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

// ---- The socket BIO --------------------------------------------------------

// What the BIO knows about its socket, for error messages.
struct BioSocket {
  int fd = -1;
  int last_errno = 0;
  bool eof = false;
  size_t received = 0;
  char first_byte = 0;  // the first byte the server sent
  // The server asked for a client certificate. With TLS 1.3 it judges ours
  // (or its absence) after the client has finished the handshake, and a
  // refusal then shows as a closed connection at the first read.
  bool certificate_requested = false;
};

// Notes a CertificateRequest from the server (SSL_set_msg_callback).
void OnTlsMessage(int write_p, int /*version*/, int content_type, const void* buf, size_t len,
                  SSL* /*ssl*/, void* arg) {
  if (write_p == 0 && content_type == SSL3_RT_HANDSHAKE && len > 0 &&
      *static_cast<const unsigned char*>(buf) == SSL3_MT_CERTIFICATE_REQUEST) {
    static_cast<BioSocket*>(arg)->certificate_requested = true;
  }
}

BioSocket* SocketOf(BIO* bio) { return static_cast<BioSocket*>(BIO_get_data(bio)); }

int BioWrite(BIO* bio, const char* data, int len) {
  BioSocket* s = SocketOf(bio);
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::send(s->fd, data, static_cast<size_t>(len), MSG_NOSIGNAL);
  if (n >= 0) return static_cast<int>(n);
  s->last_errno = errno;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_write(bio);
  return -1;
}

int BioRead(BIO* bio, char* buf, int len) {
  BioSocket* s = SocketOf(bio);
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::recv(s->fd, buf, static_cast<size_t>(len), 0);
  if (n > 0) {
    if (s->received == 0) s->first_byte = buf[0];
    s->received += static_cast<size_t>(n);
    return static_cast<int>(n);
  }
  if (n == 0) {
    s->eof = true;
    return 0;
  }
  s->last_errno = errno;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_read(bio);
  return -1;
}

int BioPuts(BIO* bio, const char* text) {
  return BioWrite(bio, text, static_cast<int>(std::strlen(text)));
}

// libssl asks for a flush after each flight of records; the socket has no
// buffer of its own, so there is nothing to do. Other requests (kTLS, ...)
// are declined.
long BioCtrl(BIO* /*bio*/, int cmd, long /*num*/, void* /*ptr*/) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

int BioDestroy(BIO* /*bio*/) { return 1; }  // the socket belongs to TlsTransport

const BIO_METHOD* SocketBioMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "redbloom socket");
    if (m == nullptr) return m;
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_puts(m, BioPuts);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    BIO_meth_set_destroy(m, BioDestroy);
    return m;
  }();
  return method;
}

struct SslDeleter {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
using SslPtr = std::unique_ptr<SSL, SslDeleter>;

// Waits up to `ms` for the socket to become readable (or writable);
// false on timeout.
bool WaitFor(int fd, bool write, int ms) {
  for (;;) {
    pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    const int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    return n != 0;  // an error shows in the next SSL call
  }
}

// ---- The transport ---------------------------------------------------------

class TlsTransport final : public Transport {
 public:
  TlsTransport(Socket socket, std::unique_ptr<BioSocket> bio_socket, SslPtr ssl,
               bool has_certificate)
      : socket_(std::move(socket)),
        bio_socket_(std::move(bio_socket)),
        ssl_(std::move(ssl)),
        has_certificate_(has_certificate) {}

  // One call waits at most the timeout in all: a record that trickles in
  // needs several waits, and each had the whole timeout, so a server sending
  // a byte every few milliseconds held a reply for as long as it liked.
  ssize_t Read(char* buf, size_t n, IoFailure* failure) override {
    const Deadline deadline = DeadlineFromNow();
    for (;;) {
      ERR_clear_error();
      const int got = SSL_read(ssl_.get(), buf, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
      if (got > 0) {
        answered_ = true;
        return got;
      }
      if (!Retry(got, deadline, failure)) {
        ExplainRefusal(failure);
        return -1;
      }
    }
  }

  ssize_t Write(const char* data, size_t n, IoFailure* failure) override {
    const Deadline deadline = DeadlineFromNow();
    for (;;) {
      ERR_clear_error();
      const int put = SSL_write(ssl_.get(), data, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
      if (put > 0) return put;
      if (!Retry(put, deadline, failure)) {
        ExplainRefusal(failure);
        return -1;
      }
    }
  }

  bool InputReady() override {
    if (SSL_pending(ssl_.get()) > 0) return true;
    pollfd p{socket_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  // A TLS 1.3 server sends session tickets after the handshake, so an idle
  // connection's socket may be readable with nothing for the application:
  // read what is there (the socket is non-blocking) and call it closed only
  // if it was data, an alert or EOF.
  bool LooksClosed() override {
    if (SSL_pending(ssl_.get()) > 0) return true;
    pollfd p{socket_.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) == 0) return false;
    char byte;
    ERR_clear_error();
    const int got = SSL_read(ssl_.get(), &byte, 1);
    if (got > 0) return true;
    const int e = SSL_get_error(ssl_.get(), got);
    ERR_clear_error();
    return e != SSL_ERROR_WANT_READ;
  }

  void SetTimeout(std::chrono::milliseconds timeout) override {
    timeout_ms_ = static_cast<int>(std::clamp<int64_t>(timeout.count(), 1, INT32_MAX));
  }

  int fd() const override { return socket_.get(); }

 private:
  Deadline DeadlineFromNow() const {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  }

  // After an SSL call returned `rc` <= 0: waits until `deadline` at most and
  // returns true if the call should be repeated, else fills *failure and
  // returns false.
  bool Retry(int rc, Deadline deadline, IoFailure* failure) {
    const int e = SSL_get_error(ssl_.get(), rc);
    switch (e) {
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE:
        if (WaitFor(socket_.get(), e == SSL_ERROR_WANT_WRITE, MillisLeft(deadline))) return true;
        *failure = {IoFailure::Kind::kTimeout, "", ""};
        return false;
      case SSL_ERROR_ZERO_RETURN:  // close_notify
        *failure = {IoFailure::Kind::kClosed, "", ""};
        return false;
      case SSL_ERROR_SYSCALL:
        if (bio_socket_->eof || bio_socket_->last_errno == 0) {
          *failure = {IoFailure::Kind::kClosed, "", ""};
        } else {
          *failure = {IoFailure::Kind::kIo, ErrnoText(bio_socket_->last_errno), ""};
        }
        ERR_clear_error();
        return false;
      default: {
        // A fatal alert from the server ("certificate required" when mutual
        // TLS wants a client certificate: TLS 1.3 reports it after the
        // handshake, on the first read) or a corrupt record.
        std::string text = TakeSslErrors();
        std::string hint;
        if (text.find("certificate required") != std::string::npos) {
          hint = "the server wants a client certificate: add cert= and key= to the URL";
        } else if (text.find("certificate expired") != std::string::npos ||
                   text.find("certificate revoked") != std::string::npos) {
          hint =
              "the server refuses our client certificate (cert=): renew it; the files are read "
              "again when they change";
        } else if (text.find("unknown ca") != std::string::npos ||
                   text.find("bad certificate") != std::string::npos) {
          hint =
              "the server does not accept our client certificate (cert=): is it signed by a CA "
              "the server trusts?";
        }
        *failure = {IoFailure::Kind::kTls, text.empty() ? "TLS error" : text, hint};
        return false;
      }
    }
  }

  // A server that asked for a client certificate and closes the connection
  // before answering anything has refused the certificate (or its absence).
  void ExplainRefusal(IoFailure* failure) const {
    if (answered_ || !bio_socket_->certificate_requested ||
        (failure->kind != IoFailure::Kind::kClosed && failure->kind != IoFailure::Kind::kIo)) {
      return;
    }
    failure->kind = IoFailure::Kind::kTls;
    failure->detail = "the server closed the connection after asking for a client certificate";
    failure->hint = has_certificate_
                        ? "it did not accept ours (cert=): is it signed by a CA the server trusts?"
                        : "it wants one: add cert= and key= to the URL";
  }

  Socket socket_;
  std::unique_ptr<BioSocket> bio_socket_;
  SslPtr ssl_;
  const bool has_certificate_;
  bool answered_ = false;  // the server sent application data
  int timeout_ms_ = 5000;
};

// The handshake failed: why, as precisely as the bytes tell.
IoFailure HandshakeFailure(SSL* ssl, int rc, const BioSocket& bio, const std::string& name) {
  const int e = SSL_get_error(ssl, rc);
  const long verify = SSL_get_verify_result(ssl);
  std::string errors = TakeSslErrors();
  if (verify != X509_V_OK) {
    std::string reason = X509_verify_cert_error_string(verify);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      return {IoFailure::Kind::kCertificate, reason + ": the certificate is not for '" + name + "'",
              "connect by a name it lists, or name one with sni="};
    }
    if (verify == X509_V_ERR_CERT_HAS_EXPIRED || verify == X509_V_ERR_CERT_NOT_YET_VALID) {
      return {IoFailure::Kind::kCertificate,
              reason + " (a certificate of the server's chain, or a CA in cacert=)",
              "renew it (cacert= is read again when the file changes), or check this host's "
              "clock"};
    }
    return {IoFailure::Kind::kCertificate, reason,
            "trust its CA with cacert=PATH (read again when the file changes); insecure=1 skips "
            "the check"};
  }
  if (bio.received > 0 && (bio.first_byte == '-' || bio.first_byte == '+')) {
    return {IoFailure::Kind::kHandshake, errors.empty() ? "no TLS answer" : errors,
            "the server answered in plain text: this port does not speak TLS (drop TLS from the "
            "URL: redis://, redis-cluster:// or redis-sentinel://)"};
  }
  if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
    if (bio.eof || bio.last_errno == 0) {
      return {IoFailure::Kind::kClosed, "",
              "the server closed the connection during the TLS handshake"};
    }
    return {IoFailure::Kind::kIo, ErrnoText(bio.last_errno), ""};
  }
  return {IoFailure::Kind::kHandshake, errors.empty() ? "TLS handshake failed" : errors, ""};
}

std::string FileProblem(const std::string& what, const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0) return what + "=" + path + ": " + ErrnoText(errno);
  return "";
}

}  // namespace

// ---- TlsContext ------------------------------------------------------------

namespace {

// OpenSSL fills a certificate's extension cache (its key identifiers, which
// chain verification compares) the first time a handshake uses it, and two
// first handshakes at once over one context race on it: both find the cache
// empty, and one writes it again while the other reads it (ThreadSanitizer, a
// sentinel store's watcher and its caller; OpenSSL issues 25202 and 32609).
// Filled here, while the context is not yet shared, the handshakes only read
// it. Certificates a hash-directory lookup finds later (the system's CAs by
// directory, without cacert=) are loaded per handshake and are not covered.
void FillExtensionCaches(SSL_CTX* ctx) {
  STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
  for (int i = 0; i < sk_X509_OBJECT_num(objects); ++i) {
    X509* cert = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objects, i));
    if (cert != nullptr) X509_check_purpose(cert, -1, 0);  // -1: only fill the cache
  }
  if (X509* own = SSL_CTX_get0_certificate(ctx); own != nullptr) X509_check_purpose(own, -1, 0);
}

}  // namespace

TlsContext::TlsContext(TlsOptions options) : options_(std::move(options)) {
  signature_ = Signature();
  checked_at_ = std::chrono::steady_clock::now();
  ctx_ = Load(options_, &error_);
}

std::string TlsContext::Signature() const {
  std::string signature;
  for (const std::string* path : {&options_.cacert, &options_.cert, &options_.key}) {
    struct stat st {};
    if (!path->empty() && ::stat(path->c_str(), &st) == 0) {
      signature += std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' +
                   std::to_string(st.st_size) + ':' + std::to_string(st.st_mtim.tv_sec) + '.' +
                   std::to_string(st.st_mtim.tv_nsec);
    }
    signature += ';';
  }
  return signature;
}

std::string TlsContext::error() const {
  std::lock_guard lock(mu_);
  return ctx_ == nullptr ? error_ : "";
}

SSL_CTX* TlsContext::Acquire(std::string* error) const {
  // Held while changed files load: new connections of this context wait
  // for them (a second, at worst, on a slow mount), as they would to load.
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - checked_at_ >= std::chrono::seconds(1)) {
    checked_at_ = now;
    if (std::string signature = Signature(); signature != signature_) {
      signature_ = std::move(signature);
      std::string why;
      if (SSL_CTX* fresh = Load(options_, &why); fresh != nullptr) {
        // Connections made with the old one hold their own references.
        if (ctx_ != nullptr) SSL_CTX_free(ctx_);
        ctx_ = fresh;
      } else if (ctx_ == nullptr) {
        error_ = std::move(why);
      }
      // else: a file half rewritten, or a mistake: the files loaded before
      // serve on, and are read again at their next change.
    }
  }
  if (ctx_ == nullptr) {
    *error = error_;
    return nullptr;
  }
  SSL_CTX_up_ref(ctx_);
  return ctx_;
}

SSL_CTX* TlsContext::Load(const TlsOptions& options, std::string* error) {
  std::string& why = *error;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    why = "cannot create a TLS context: " + TakeSslErrors();
    return nullptr;
  }
  // TLS 1.0 and 1.1 are deprecated (RFC 8996); Redis 6+ offers 1.2 and 1.3.
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, options.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
  // Connections are pooled and long-lived: resuming sessions would save a
  // round trip per reconnect only, and caching none keeps state per context.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  ERR_clear_error();
  if (!options.cacert.empty()) {
    why = FileProblem("cacert", options.cacert);
    if (why.empty() && SSL_CTX_load_verify_locations(ctx, options.cacert.c_str(), nullptr) != 1) {
      why = "cacert=" + options.cacert + " holds no usable CA certificate: " + TakeSslErrors();
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    why = "cannot load the system's CA certificates: " + TakeSslErrors();
  }
  if (why.empty() && !options.cert.empty()) {
    why = FileProblem("cert", options.cert);
    if (why.empty()) why = FileProblem("key", options.key);
    if (why.empty() && SSL_CTX_use_certificate_chain_file(ctx, options.cert.c_str()) != 1) {
      why = "cert=" + options.cert + " holds no usable certificate: " + TakeSslErrors();
    }
    if (why.empty() &&
        SSL_CTX_use_PrivateKey_file(ctx, options.key.c_str(), SSL_FILETYPE_PEM) != 1) {
      const std::string ssl_errors = TakeSslErrors();
      why = ssl_errors.find("mismatch") != std::string::npos
                ? "key=" + options.key + " is not the key of cert=" + options.cert
                : "key=" + options.key + " holds no usable private key: " + ssl_errors;
    }
    if (why.empty() && SSL_CTX_check_private_key(ctx) != 1) {
      why = "key=" + options.key + " is not the key of cert=" + options.cert;
    }
  }
  if (why.empty()) FillExtensionCaches(ctx);
  ERR_clear_error();
  if (!why.empty()) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  return ctx;
}

TlsContext::~TlsContext() {
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

std::shared_ptr<const TlsContext> TlsContext::For(const TlsOptions& options) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const TlsContext>> live;
  // Everything StartTls reads from the context's options: sni= too, or a
  // store would send and verify another store's server name.
  std::string key = options.cacert;
  for (const std::string* part : {&options.cert, &options.key, &options.sni}) {
    key.push_back('\0');
    key += *part;
  }
  key.push_back(options.insecure ? '\1' : '\2');
  std::lock_guard lock(mu);
  std::shared_ptr<const TlsContext> context = live[key].lock();
  if (context == nullptr) {
    // A context is some kilobytes; stores come and go rarely, so forgetting
    // the dead ones now and then is enough.
    std::erase_if(live, [](const auto& entry) { return entry.second.expired(); });
    context.reset(new TlsContext(options));
    live[key] = context;
  }
  return context;
}

// ---- Handshake -------------------------------------------------------------

std::unique_ptr<Transport> StartTls(Socket socket, const TlsContext& context,
                                    const std::string& host, Deadline deadline,
                                    IoFailure* failure) {
  std::string unusable;
  SSL_CTX* ctx = context.Acquire(&unusable);
  if (ctx == nullptr) {
    *failure = {IoFailure::Kind::kTlsConfig, unusable, ""};
    return nullptr;
  }
  const TlsOptions& options = context.options();
  ERR_clear_error();
  SslPtr ssl(SSL_new(ctx));
  SSL_CTX_free(ctx);  // the SSL holds its own reference
  auto bio_socket = std::make_unique<BioSocket>();
  bio_socket->fd = socket.get();
  BIO* bio = SocketBioMethod() != nullptr ? BIO_new(SocketBioMethod()) : nullptr;
  if (ssl == nullptr || bio == nullptr) {
    if (bio != nullptr) BIO_free(bio);
    *failure = {IoFailure::Kind::kHandshake, "cannot start TLS: " + TakeSslErrors(), ""};
    return nullptr;
  }
  BIO_set_data(bio, bio_socket.get());
  SSL_set_bio(ssl.get(), bio, bio);  // the SSL owns the BIO now
  // Partial writes let Write() report progress as the socket takes it.
  SSL_set_mode(ssl.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);

  const std::string& name = options.sni.empty() ? host : options.sni;
  const bool ip = IsIpLiteral(name);
  // RFC 6066 forbids IP addresses as server names. (SSL_set_tlsext_host_name
  // is this call in a macro with a C cast.)
  if (!ip) {
    SSL_ctrl(ssl.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(name.c_str()));
  }
  if (!options.insecure) {
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), name.c_str())
                      : SSL_set1_host(ssl.get(), name.c_str());
    if (ok != 1) {
      *failure = {IoFailure::Kind::kHandshake, "cannot verify the name '" + name + "'", ""};
      return nullptr;
    }
  }
  SSL_set_msg_callback(ssl.get(), OnTlsMessage);
  SSL_set_msg_callback_arg(ssl.get(), bio_socket.get());
  SSL_set_connect_state(ssl.get());
  for (;;) {
    ERR_clear_error();
    const int rc = SSL_do_handshake(ssl.get());
    if (rc == 1) break;
    const int e = SSL_get_error(ssl.get(), rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      if (!WaitFor(socket.get(), e == SSL_ERROR_WANT_WRITE, MillisLeft(deadline)) ||
          std::chrono::steady_clock::now() >= deadline) {
        *failure = {IoFailure::Kind::kHandshakeTimeout, "",
                    bio_socket->received == 0
                        ? "nothing came back; if this port does not speak TLS, drop TLS from the "
                          "URL: redis://, redis-cluster:// or redis-sentinel://"
                        : ""};
        return nullptr;
      }
      continue;
    }
    *failure = HandshakeFailure(ssl.get(), rc, *bio_socket, name);
    return nullptr;
  }
  return std::make_unique<TlsTransport>(std::move(socket), std::move(bio_socket), std::move(ssl),
                                        !options.cert.empty());
}

}  // namespace redbloom::internal
