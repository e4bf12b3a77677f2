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
// GMT"), for the Date header of every answer; made once a second per thread.
inline const std::string& HttpDate() {
  thread_local std::time_t made = -1;
  thread_local std::string text;
  const std::time_t now = std::time(nullptr);
  if (now != made) {
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char buf[40];
    text.assign(buf, std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm));
    made = now;
  }
  return text;
}

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_HEADER_TEXT_H_
