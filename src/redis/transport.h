// The byte stream under a Redis connection: a TCP socket, plain or TLS, or
// a Unix domain socket (plain only, as Redis serves it)
// (tls_transport.h). Connection (redis_client.h) parses RESP from it with
// hiredis' reply reader and maps every failure reported here to a Status;
// nothing in this file makes a Status. Internal.
//
// Waiting: connecting (and a TLS handshake) waits at most until a deadline,
// with a non-blocking socket and poll(); reads and writes wait at most the
// I/O timeout each (command_timeout after the handshake).
#ifndef REDBLOOM_SRC_REDIS_TRANSPORT_H_
#define REDBLOOM_SRC_REDIS_TRANSPORT_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

namespace redbloom::internal {

using Deadline = std::chrono::steady_clock::time_point;

// What went wrong, in the terms Connection maps to a Status (TransportStatus
// in redis_client.cc).
struct IoFailure {
  enum class Kind {
    kNone,
    kConnect,           // connect() failed: refused, unreachable, no such host
    kConnectTimeout,    // no TCP connection before the deadline
    kHandshakeTimeout,  // no TLS session before the deadline
    kHelloTimeout,      // connected, but no answer to the first commands in time
    kCertificate,       // the server's certificate does not verify
    kHandshake,         // any other TLS handshake failure
    kTimeout,           // a read or write waited longer than the I/O timeout
    kClosed,            // the peer closed the connection
    kIo,                // a socket error (reset, broken pipe, ...)
    kTls,               // a TLS error after the handshake (e.g. an alert)
    kTlsConfig,         // cacert, cert or key could not be loaded
  };
  Kind kind = Kind::kNone;
  std::string detail;  // strerror() or the TLS library's text
  // Why the failure may have happened, when the bytes tell ("the server
  // answered in plain text: ..."); empty if nothing is known.
  std::string hint;
};

class Transport {
 public:
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  virtual ~Transport() = default;

  // Reads 1..n bytes, waiting at most the I/O timeout for the first. Returns
  // the count, or -1 with *failure filled in.
  virtual ssize_t Read(char* buf, size_t n, IoFailure* failure) = 0;
  // Writes 1..n bytes, waiting at most the I/O timeout. Returns the count, or
  // -1 with *failure filled in.
  virtual ssize_t Write(const char* data, size_t n, IoFailure* failure) = 0;
  // True if a Read would find bytes without waiting (or would fail at once).
  virtual bool InputReady() = 0;
  // For a connection nobody is using: true if the peer closed it or sent
  // something nobody asked for, so it must not be reused.
  virtual bool LooksClosed() = 0;
  // The I/O timeout of every later Read and Write.
  virtual void SetTimeout(std::chrono::milliseconds timeout) = 0;
  virtual int fd() const = 0;
};

// A connected TCP socket, closed on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.Release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  int get() const { return fd_; }
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Connects to host:port (every address the name resolves to, in order)
// before `deadline`, with a non-blocking connect() and poll(). The socket
// comes back non-blocking, with TCP_NODELAY and keepalive set.
Socket ConnectTcp(const std::string& host, int port, Deadline deadline, IoFailure* failure);

// Connects to the Unix domain socket at `path` (redis+unix://), before
// `deadline`. The socket comes back non-blocking. A server whose listen
// backlog is full refuses at once (EAGAIN) rather than making us wait.
Socket ConnectUnix(const std::string& path, Deadline deadline, IoFailure* failure);

// Plain TCP: the socket is made blocking, with SO_RCVTIMEO/SO_SNDTIMEO as the
// I/O timeout, so a read that the reply is not there for yet costs one
// system call, as it did under hiredis.
std::unique_ptr<Transport> NewPlainTransport(Socket socket);

// Milliseconds left until `deadline`, at least 0, rounded up.
int MillisLeft(Deadline deadline);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_REDIS_TRANSPORT_H_
