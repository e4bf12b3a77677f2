// Small helpers for HTTP header text, shared by the connection layer and the
// request handlers.
#ifndef REDBLOOM_SERVER_HEADER_TEXT_H_
#define REDBLOOM_SERVER_HEADER_TEXT_H_

#include <algorithm>
#include <cctype>
#include <ctime>
#include <string>
#include <string_view>

namespace redbloom::server {

// ASCII case-insensitive equality, as header names and tokens compare.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Without the optional whitespace (spaces and tabs) around a header value.
inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The time as an HTTP date (RFC 9110, 5.6.7: "Sun, 06 Nov 1994 08:49:37
// GMT"), for the Date header of every answer; made once a second per thread,
// in plain arrays, not a thread_local std::string (see src/thread_scratch.h).
inline std::string_view HttpDate() {
  thread_local std::time_t made = -1;
  thread_local char text[40];
  thread_local size_t size = 0;
  const std::time_t now = std::time(nullptr);
  if (now != made) {
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    size = std::strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    made = now;
  }
  return std::string_view(text, size);
}

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_HEADER_TEXT_H_
