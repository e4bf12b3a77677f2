// The request head's rewrites and framing (server/request_head.h) on any
// bytes the connection layer would hand them: a head of CRLF lines ended by
// an empty one, after what earlier requests left in the buffer and before a
// body. Besides what ASan and UBSan catch in their index arithmetic, checks
// that the bytes around the head are kept, that the head still ends where
// TidyHead says, with the lines it drops gone, and that a body length
// ParseFraming frames is one the head declared.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "header_text.h"
#include "request_head.h"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view head) {
  std::fprintf(stderr, "request_head_fuzz: %s\nhead: '%.*s'\n", what, static_cast<int>(head.size()),
               head.data());
  std::abort();
}

// Where the head that starts at `begin` ends (past its empty line), as
// ConnectionServer::Loop::HeadComplete finds it, or npos when that reader
// would not hand it to TidyHead: no empty line, a line ended by a bare LF
// (answered 400 before), or a '#' in the request line (400 too). Empty lines
// before the request line are the reader's to drop; the harness starts at
// one that is not.
size_t HeadEnd(std::string_view buf, size_t begin) {
  const size_t line_end = buf.find('\n', begin);
  if (line_end == std::string_view::npos || line_end == begin || buf[line_end - 1] != '\r' ||
      line_end == begin + 1) {
    return std::string_view::npos;
  }
  if (buf.substr(begin, line_end - begin).find('#') != std::string_view::npos) {
    return std::string_view::npos;
  }
  size_t at = line_end + 1;
  while (true) {
    const size_t nl = buf.find('\n', at);
    if (nl == std::string_view::npos || nl == at || buf[nl - 1] != '\r') {
      return std::string_view::npos;
    }
    if (nl == at + 1) return nl + 1;
    at = nl + 1;
  }
}

// The header lines of buf[begin, end) after the request line, each without
// its CRLF, to `visit` as (name, value); stops at the empty line.
template <typename Visit>
void ForEachHeader(std::string_view buf, size_t begin, size_t end, Visit visit) {
  size_t at = buf.find('\n', begin) + 1;
  while (at < end) {
    const size_t nl = buf.find('\n', at);
    const std::string_view line = buf.substr(at, nl - 1 - at);
    if (line.empty()) return;
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      visit(line.substr(0, colon), line.substr(colon + 1));
    }
    at = nl + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using redbloom::server::EqualsIgnoreCase;
  using redbloom::server::Trim;
  if (size == 0) return 0;
  // The first byte: how many of the bytes that follow are left over from an
  // earlier request (the head starts after them).
  const std::string input(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t begin = std::min<size_t>(data[0] % 16, input.size());
  const size_t end = HeadEnd(input, begin);
  if (end == std::string_view::npos) return 0;
  const std::string_view head(input.data() + begin, end - begin);

  std::string buf = input;
  bool malformed = false;
  int hosts = 0;
  const size_t tidy_end = redbloom::server::TidyHead(buf, begin, end, &malformed, &hosts);
  if (tidy_end > buf.size() || tidy_end <= begin) Fail("the head ends outside the buffer", head);
  if (buf.compare(0, begin, input, 0, begin) != 0) Fail("the bytes before the head changed", head);
  if (buf.compare(tidy_end, std::string::npos, input, end) != 0) {
    Fail("the bytes after the head (its body) changed", head);
  }
  const std::string_view tidy(buf.data() + begin, tidy_end - begin);
  if (!tidy.ends_with("\r\n\r\n")) Fail("the tidied head does not end in an empty line", head);
  if (HeadEnd(buf, begin) != tidy_end) Fail("the tidied head ends elsewhere", head);
  int ranges = 0;
  int codings = 0;
  int connections = 0;
  int host_lines = 0;
  ForEachHeader(buf, begin, tidy_end, [&](std::string_view name, std::string_view) {
    ranges += EqualsIgnoreCase(name, "Range");
    codings += EqualsIgnoreCase(name, "Accept-Encoding");
    connections += EqualsIgnoreCase(name, "Connection");
  });
  ForEachHeader(input, begin, end, [&](std::string_view name, std::string_view) {
    host_lines += EqualsIgnoreCase(name, "Host");
  });
  if (ranges != 0) Fail("a Range line is left", head);
  if (codings > 1 || connections > 1) Fail("more than one Accept-Encoding or Connection", head);
  if (hosts != host_lines) Fail("the Host lines are miscounted", head);

  const redbloom::server::BodyFraming f = redbloom::server::ParseFraming(buf, begin, tidy_end);
  if (f.expect_begin > f.expect_end ||
      (f.expect_end != 0 && (f.expect_begin < begin || f.expect_end > tidy_end))) {
    Fail("the Expect line is outside the head", head);
  }
  if (f.length.has_value()) {
    if (*f.length == 0 || f.unframed || f.empty_length) Fail("a framed length is no length", head);
    // Every Content-Length the client sent says that length, and no
    // Transfer-Encoding came with them.
    int lengths = 0;
    ForEachHeader(input, begin, end, [&](std::string_view name, std::string_view value) {
      if (EqualsIgnoreCase(name, "Transfer-Encoding")) Fail("a length framed beside chunks", head);
      if (!EqualsIgnoreCase(name, "Content-Length")) return;
      ++lengths;
      std::string_view digits = Trim(value);
      while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
      if (digits != std::to_string(*f.length)) Fail("a length the head did not declare", head);
    });
    if (lengths == 0) Fail("a length framed with no Content-Length", head);
  }
  return 0;
}
