// Runs the real redbloomd binary as a child process on a free loopback port,
// for end-to-end tests over real HTTP.
#ifndef REDBLOOM_TESTS_SERVER_PROCESS_H_
#define REDBLOOM_TESTS_SERVER_PROCESS_H_

#include <httplib.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace redbloom::testing {

class RedbloomdProcess {
 public:
  struct Options {
    std::string store;                    // --store
    std::string token;                    // --token, when not empty
    std::string config_json;              // written to a file and passed as --config
    std::vector<std::string> extra_args;  // more flags
    std::vector<std::string> env;         // "NAME=value" added to the environment
    bool wait_ready = true;               // wait for /healthz before Start() returns
    bool listen_via_env = false;          // REDBLOOMD_LISTEN instead of --listen
  };

  explicit RedbloomdProcess(Options options);
  // The common case: a store URL and optionally a config file's JSON.
  RedbloomdProcess(std::string store, std::string config_json = "");
  RedbloomdProcess(const RedbloomdProcess&) = delete;
  RedbloomdProcess& operator=(const RedbloomdProcess&) = delete;
  ~RedbloomdProcess();  // SIGKILL if still running

  // Starts the binary (REDBLOOMD_PATH) with --listen 127.0.0.1:<free port>
  // and waits until /healthz answers. Throws std::runtime_error on failure,
  // with the process's stderr in the message.
  void Start();
  // Sends `sig` and waits up to `timeout` for the exit; returns the exit code
  // (-1 if killed by a signal or if it had to be killed after the timeout).
  int Stop(int sig, std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // Waits for the process to exit on its own (for startup failures).
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(15));
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Everything the process wrote to stderr so far.
  std::string Stderr() const;
  const std::string& dir() const { return dir_.path(); }
  // A client for this server; with `auth`, it sends the configured token.
  std::unique_ptr<httplib::Client> Client(bool auth = true) const;

 private:
  Options options_;
  TempDir dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// One HTTP exchange, decoded. status is 0 when no response came back, and
// body then holds the transport error.
struct Answer {
  int status = 0;
  std::string body;
  httplib::Headers headers;
  nlohmann::json json;  // the body parsed, or null if it is not JSON

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  // json["error"] as a string, or "" (for assertions on error codes).
  std::string error() const {
    return json.is_object() && json.contains("error") && json["error"].is_string()
               ? json["error"].get<std::string>()
               : "";
  }
};

// Sends `method path` with `body` (as application/json unless `headers` sets
// a Content-Type). The path is sent as given: encode it yourself.
Answer Call(httplib::Client& client, const std::string& method, const std::string& path,
            const std::string& body = "", httplib::Headers headers = {});

// Percent-encodes every byte outside [A-Za-z0-9-._~].
std::string EncodePathSegment(const std::string& s);

// The value of one sample (`series` with its labels, e.g.
// `redbloom_items_added_total` or `x{route="/healthz"}`) in Prometheus
// text, or -1 if absent.
double Sample(const std::string& text, const std::string& series);

// A raw TCP connection to 127.0.0.1:port, for requests that a client library
// would not send (truncated bodies, a body sent in two parts).
class RawConnection {
 public:
  explicit RawConnection(int port);  // throws std::runtime_error if refused
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  ~RawConnection();

  void Send(const std::string& bytes);
  // Sends all of `bytes`, no write waiting more than 10 s: the errno of a
  // failed send (ECONNRESET, or EPIPE after a reset), or 0.
  int SendAll(const std::string& bytes);
  void ShutdownWrite();
  // Everything read until the end of the stream, no read waiting more than
  // `timeout`; *error: the errno of a failed read (ECONNRESET for a reset,
  // ETIMEDOUT for the timeout), or 0 for a clean end.
  std::string ReadToEnd(int* error, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // One whole response (headers and Content-Length bytes), or what came
  // before the server closed or `timeout` passed.
  std::string ReadResponse(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // True once the server has closed the connection (a read sees the end, or
  // a reset), within `timeout`; bytes still arriving are read and dropped.
  bool WaitClosed(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
};

// True if something accepts TCP connections on 127.0.0.1:port.
bool Accepting(int port);

// Opens a TCP connection to 127.0.0.1:port, sends `bytes`, then (when
// `shut_write`) half-closes, and returns everything read until the server
// closes or `timeout` passes.
std::string RawExchange(int port, const std::string& bytes, bool shut_write,
                        std::chrono::milliseconds timeout = std::chrono::seconds(5));

// How many HTTP/1.1 responses `bytes` holds (their status lines; a body
// need not end in a newline, so the next status line can follow it).
int CountResponses(const std::string& bytes);

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_SERVER_PROCESS_H_
