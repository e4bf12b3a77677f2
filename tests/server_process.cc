#include "server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "redis_server.h"
#include "util/percent.h"

extern char** environ;

namespace redbloom::testing {

RedbloomdProcess::RedbloomdProcess(Options options) : options_(std::move(options)) {}

RedbloomdProcess::RedbloomdProcess(std::string store, std::string config_json) {
  options_.store = std::move(store);
  options_.config_json = std::move(config_json);
}

RedbloomdProcess::~RedbloomdProcess() {
  if (pid_ > 0) {
    ForgetServerProcess(pid_);  // before the wait: after it the pid may be reused
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void RedbloomdProcess::Start() {
  if (pid_ > 0) throw std::runtime_error("redbloomd already running");
  if (port_ == 0) port_ = FreePort();
  const std::string listen = "127.0.0.1:" + std::to_string(port_);
  std::vector<std::string> args = {REDBLOOMD_PATH};
  if (!options_.listen_via_env) args.insert(args.end(), {"--listen", listen});
  if (!options_.store.empty()) args.insert(args.end(), {"--store", options_.store});
  if (!options_.token.empty()) args.insert(args.end(), {"--token", options_.token});
  if (!options_.config_json.empty()) {
    const std::string path = dir_.path() + "/redbloomd.json";
    std::ofstream(path) << options_.config_json;
    args.insert(args.end(), {"--config", path});
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());

  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  envs.insert(envs.end(), options_.env.begin(), options_.env.end());
  if (options_.listen_via_env) envs.push_back("REDBLOOMD_LISTEN=" + listen);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);

  const std::string err_path = dir_.path() + "/stderr.log";
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Dies with the test's thread that started it; the reaper (see
    // WatchServerProcess) covers the test process itself ending.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) ::dup2(fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  pid_ = pid;
  WatchServerProcess(pid_);
  if (!options_.wait_ready) return;

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  httplib::Client probe("127.0.0.1", port_);
  probe.set_connection_timeout(std::chrono::milliseconds(200));
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      ForgetServerProcess(pid_);
      pid_ = -1;
      throw std::runtime_error("redbloomd exited at start: " + Stderr());
    }
    if (auto res = probe.Get("/healthz"); res && res->status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("redbloomd did not answer /healthz within 10 s: " + Stderr());
}

int RedbloomdProcess::Wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      ForgetServerProcess(pid_);  // it exited by itself: nothing to kill
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ForgetServerProcess(pid_);  // before the wait: after it the pid may be reused
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int RedbloomdProcess::Stop(int sig, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, sig);
  return Wait(timeout);
}

std::string RedbloomdProcess::Stderr() const {
  std::ifstream in(dir_.path() + "/stderr.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<httplib::Client> RedbloomdProcess::Client(bool auth) const {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port_);
  client->set_connection_timeout(std::chrono::seconds(2));
  client->set_read_timeout(std::chrono::seconds(20));
  client->set_url_encode(false);  // tests encode paths themselves
  if (auth && !options_.token.empty()) client->set_bearer_token_auth(options_.token);
  return client;
}

Answer Call(httplib::Client& client, const std::string& method, const std::string& path,
            const std::string& body, httplib::Headers headers) {
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.body = body;
  req.headers = std::move(headers);
  if (!body.empty() && !req.has_header("Content-Type")) {
    req.headers.emplace("Content-Type", "application/json");
  }
  Answer a;
  auto res = client.send(req);
  if (!res) {
    a.body = "transport error: " + httplib::to_string(res.error());
    return a;
  }
  a.status = res->status;
  a.body = res->body;
  a.headers = res->headers;
  a.json = nlohmann::json::parse(a.body, nullptr, /*allow_exceptions=*/false);
  if (a.json.is_discarded()) a.json = nullptr;
  return a;
}

double Sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

std::string EncodePathSegment(const std::string& s) { return internal::PercentEncode(s); }

namespace {

// True once `data` holds a whole response (headers and Content-Length bytes).
bool ResponseComplete(const std::string& data) {
  const size_t end = data.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  std::string headers = data.substr(0, end);
  for (char& c : headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t cl = headers.find("\r\ncontent-length:");
  if (cl == std::string::npos) return true;
  const size_t length = std::stoul(headers.substr(cl + 17));
  return data.size() >= end + 4 + length;
}

}  // namespace

RawConnection::RawConnection(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("connect to port " + std::to_string(port) + " failed");
  }
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

void RawConnection::Send(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t w = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (w <= 0) return;  // the server closed; the caller reads what it said
    sent += static_cast<size_t>(w);
  }
}

int RawConnection::SendAll(const std::string& bytes) {
  timeval limit{10, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t w = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EPIPE;
    sent += static_cast<size_t>(w);
  }
  return 0;
}

void RawConnection::ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }

std::string RawConnection::ReadToEnd(int* error, std::chrono::milliseconds timeout) {
  std::string out;
  char buf[65536];
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      *error = ready == 0 ? ETIMEDOUT : errno;
      return out;
    }
    const ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *error = r < 0 ? errno : 0;
      return out;
    }
    out.append(buf, static_cast<size_t>(r));
  }
}

std::string RawConnection::ReadResponse(std::chrono::milliseconds timeout) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
    if (ResponseComplete(out)) break;
  }
  return out;
}

bool RawConnection::WaitClosed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    if (::recv(fd_, buf, sizeof(buf), 0) <= 0) return true;
  }
}

bool Accepting(int port) {
  try {
    RawConnection c(port);
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

std::string RawExchange(int port, const std::string& bytes, bool shut_write,
                        std::chrono::milliseconds timeout) {
  RawConnection c(port);
  c.Send(bytes);
  if (shut_write) c.ShutdownWrite();
  return c.ReadResponse(timeout);
}

int CountResponses(const std::string& bytes) {
  int n = 0;
  for (size_t at = bytes.find("HTTP/1.1 "); at != std::string::npos;
       at = bytes.find("HTTP/1.1 ", at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace redbloom::testing
