// A TCP relay on 127.0.0.1 in front of a redis-server, for timeouts that must
// bound a whole reply or a whole send. It passes bytes unchanged (plain RESP
// or TLS records alike) until told to slow one direction down:
//   Trickle(true)  passes the server's bytes to the client one at a time,
//                  `gap` apart: every byte arrives well within a timeout, the
//                  whole reply does not;
//   Throttle(true) reads the client's bytes 4 KiB at a time, `gap` apart:
//                  every write makes progress within a timeout, a large send
//                  does not finish.
//   HoldOnce(text) keeps back the first piece of the client's bytes that
//                  holds `text` (and all the client sends after it) until
//                  Release(): a command caught between two others.
//   DropReplyOnce(text) passes the first piece of the client's bytes that
//                  holds `text` to the server, then reads the server's next
//                  bytes and closes both sides instead of passing them on: a
//                  command that ran, its answer lost with the connection.
#ifndef REDBLOOM_TESTS_SLOW_RELAY_H_
#define REDBLOOM_TESTS_SLOW_RELAY_H_

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "redbloom/bloom_filter.h"

namespace redbloom::testing {

class SlowRelay {
 public:
  // `client_buffer`, when not 0, is the receive buffer of the client's side
  // (so that a throttled send is not absorbed by the kernel's buffers).
  SlowRelay(int server_port, std::chrono::milliseconds gap, int client_buffer = 0)
      : server_port_(server_port), gap_(gap) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (client_buffer > 0) {  // set before listen(): accepted sockets inherit it
      ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &client_buffer, sizeof(client_buffer));
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  SlowRelay(const SlowRelay&) = delete;
  SlowRelay& operator=(const SlowRelay&) = delete;
  ~SlowRelay() {
    stop_ = true;
    thread_.join();
    for (auto [client, server] : pairs_) {
      ::close(client);
      ::close(server);
    }
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  void Trickle(bool on) { trickle_ = on; }
  void Throttle(bool on) { throttle_ = on; }
  void HoldOnce(std::string text) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_text_ = std::move(text);
  }
  bool holding() const { return holding_; }
  void Release() { release_ = true; }
  void DropReplyOnce(std::string text) {
    std::lock_guard<std::mutex> lock(mu_);
    drop_text_ = std::move(text);
    dropped_ = false;
  }
  bool dropped() const { return dropped_; }

 private:
  void Run() {
    char buf[65536];
    while (!stop_) {
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
      for (auto [client, server] : pairs_) {
        // A held client's input waits unread: not polled, or poll would
        // return at once for it, round after round.
        const bool held = holding_ && held_server_ == server;
        fds.push_back({client, static_cast<short>(held ? 0 : POLLIN), 0});
        fds.push_back({server, POLLIN, 0});
      }
      if (holding_ && release_) {
        WriteAll(held_server_, held_.data(), held_.size());
        held_.clear();
        holding_ = false;
      }
      if (::poll(fds.data(), fds.size(), 10) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(server_port_));
        if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
          pairs_.emplace_back(client, server);
        } else {
          ::close(client);
          ::close(server);
        }
        continue;
      }
      for (size_t i = 0; i < pairs_.size(); ++i) {
        const auto [client, server] = pairs_[i];
        if ((fds[1 + 2 * i].revents & (POLLIN | POLLHUP)) &&
            !(holding_ && held_server_ == server)) {
          const ssize_t n = ::read(client, buf, throttle_ ? 4096 : sizeof(buf));
          if (n > 0 && Holds(buf, static_cast<size_t>(n))) {
            held_.assign(buf, static_cast<size_t>(n));
            held_server_ = server;
            holding_ = true;
            continue;
          }
          if (n <= 0) {
            Close(i);  // the client went: a closed socket polls readable for ever
            break;     // fds no longer lines up with pairs_
          }
          if (Drops(buf, static_cast<size_t>(n))) dropping_server_ = server;
          WriteAll(server, buf, static_cast<size_t>(n));
          if (throttle_) std::this_thread::sleep_for(gap_);
        }
        if (fds[2 + 2 * i].revents & (POLLIN | POLLHUP)) {
          if (server == dropping_server_) {
            const ssize_t ignored = ::read(server, buf, sizeof(buf));
            (void)ignored;
            dropped_ = true;  // before the client can see the connection go
            Close(i);
            dropping_server_ = -1;
            break;
          }
          const ssize_t n = ::read(server, buf, trickle_ ? 1 : sizeof(buf));
          if (n <= 0) {
            Close(i);
            break;
          }
          WriteAll(client, buf, static_cast<size_t>(n));
          if (trickle_) std::this_thread::sleep_for(gap_);
        }
      }
    }
  }

  // Closes pair i's two sockets and forgets it.
  void Close(size_t i) {
    if (pairs_[i].second == dropping_server_) dropping_server_ = -1;
    if (pairs_[i].second == held_server_) {  // what it held has nowhere to go
      held_.clear();
      held_server_ = -1;
      holding_ = false;
    }
    ::close(pairs_[i].first);
    ::close(pairs_[i].second);
    pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  bool Holds(const char* data, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (hold_text_.empty() || holding_ || release_) return false;
    if (::memmem(data, n, hold_text_.data(), hold_text_.size()) == nullptr) return false;
    hold_text_.clear();
    return true;
  }

  bool Drops(const char* data, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (drop_text_.empty()) return false;
    if (::memmem(data, n, drop_text_.data(), drop_text_.size()) == nullptr) return false;
    drop_text_.clear();
    return true;
  }

  static void WriteAll(int fd, const char* data, size_t n) {
    while (n > 0) {
      const ssize_t put = ::write(fd, data, n);
      if (put <= 0) return;
      data += put;
      n -= static_cast<size_t>(put);
    }
  }

  const int server_port_;
  const std::chrono::milliseconds gap_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> trickle_{false};
  std::atomic<bool> throttle_{false};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string hold_text_;  // guarded by mu_
  std::string drop_text_;  // guarded by mu_
  std::atomic<bool> dropped_{false};
  int dropping_server_ = -1;  // the relay's thread only
  std::atomic<bool> holding_{false};
  std::atomic<bool> release_{false};
  std::string held_;                        // the relay's thread only
  int held_server_ = -1;                    // the relay's thread only
  std::vector<std::pair<int, int>> pairs_;  // client, server; the relay's thread only
  std::thread thread_;
};

// A counting add of `items` through `via` (a filter on a store that reaches
// its server through `relay`) whose answer the relay drops (after the first
// piece the client sends holding `text`): the add fails unavailable, ran
// (each item is present through `mine`, on a store of its own), and ran once
// (one remove through `mine` takes each out). Sent again, it counted its
// items twice. Call it with ASSERT_NO_FATAL_FAILURE.
inline void ExpectALostAddRanOnce(SlowRelay& relay, BloomFilter& via, BloomFilter& mine,
                                  std::span<const std::string_view> items,
                                  const std::string& text) {
  std::vector<uint8_t> present;
  ASSERT_TRUE(via.ContainsMany(items, &present).ok());  // the handle's cells are read
  relay.DropReplyOnce(text);
  const Status added = via.AddMany(items, nullptr);
  ASSERT_TRUE(relay.dropped());
  EXPECT_EQ(added.code(), StatusCode::kUnavailable) << added.ToString();
  ASSERT_TRUE(mine.ContainsMany(items, &present).ok());
  ASSERT_EQ(std::count(present.begin(), present.end(), 1), std::ssize(items))
      << "the add whose answer was lost did not run";
  ASSERT_TRUE(mine.RemoveMany(items, nullptr).ok());
  ASSERT_TRUE(mine.ContainsMany(items, &present).ok());
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 0) << "an item was added twice";
}

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_SLOW_RELAY_H_
