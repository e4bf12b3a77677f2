// The request head as the connection layer reads it, before cpp-httplib
// does: how its body is framed (so the event thread can read the body ahead
// of a worker), and the rewrites that make httplib read the head as RFC 9110
// and 9112 mean it (TidyHead). Pure functions over the bytes read, tested
// on their own.
#ifndef REDBLOOM_SERVER_REQUEST_HEAD_H_
#define REDBLOOM_SERVER_REQUEST_HEAD_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redbloom::server {

// What the event thread needs of a complete request head, buf[begin, end),
// to read the body itself: the length of a body framed by one Content-Length
// (or the same one repeated) and no Transfer-Encoding, the line of an
// "Expect: 100-continue", and the Authorization value (for
// ConnectionOptions::read_ahead), in HTTP/1.1 or 1.0. Anything else (no
// body, chunked, two different lengths or a malformed one, a repeated
// Authorization, folded or bare-LF header lines, another expectation, or any
// in HTTP/1.0) leaves `length` unset: the
// worker reads the request as before, and the HTTP layer answers what is
// wrong with it.
struct BodyFraming {
  std::optional<uint64_t> length;
  size_t expect_begin = 0;  // absolute; equal to expect_end when absent
  size_t expect_end = 0;
  // As the client sent it (TidyHead escaped its '%' for httplib); empty
  // when absent.
  std::string authorization;
  // A Content-Length with no value: the HTTP layer would never see it
  // (httplib drops empty headers), so the connection layer answers it.
  bool empty_length = false;
  // Neither Content-Length nor Transfer-Encoding: the request has no body
  // (RFC 9112, 6.3).
  bool unframed = false;
};

BodyFraming ParseFraming(std::string_view buf, size_t begin, size_t end);

// The coding cpp-httplib is to compress the answer with, from the request's
// Accept-Encoding values: "br" or "gzip", whichever the client weighs more
// (br on a tie, as httplib prefers it), or none. httplib looks for the
// substrings "br" and "gzip" in the first such line alone, so it compressed
// for "gzip;q=0", which refuses gzip, and not for "GZIP" or "*".
std::string_view ChosenCoding(const std::vector<std::string>& values);

// Tidies the head (buf[begin, end), its request line first) for httplib;
// returns where it now ends. Range lines go: no answer honours a range (the
// HTTP layer clears valid ones), but cpp-httplib answers a malformed one 416
// before any route or token check, on /healthz too. Accept-Encoding lines
// become one that names the coding chosen (ChosenCoding), or none. An
// absolute-form target becomes the origin form (OriginForm). Connection
// lines become one that httplib reads as meant (HasCloseOption).
// `malformed` is set for a header line that is no "name: value" (no colon,
// a name that is no token): httplib skips such a line and serves the
// request; RFC 9112 and our docs say 400, in HTTP/1.0 too. `hosts` counts
// the Host lines.
size_t TidyHead(std::string& buf, size_t begin, size_t end, bool* malformed, int* hosts);

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_REQUEST_HEAD_H_
