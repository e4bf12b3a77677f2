#include "request_head.h"

#include <algorithm>

#include "header_text.h"

namespace redbloom::server {

namespace {

// The weight of one element of an Accept-Encoding list (RFC 9110, 12.4.2),
// in thousandths: 1000 without a "q" parameter, nullopt when the weight
// does not parse.
std::optional<int> CodingWeight(std::string_view params) {
  while (!params.empty()) {
    const size_t semi = params.find(';');
    std::string_view param = Trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos || !EqualsIgnoreCase(Trim(param.substr(0, eq)), "q")) {
      continue;
    }
    const std::string_view q = Trim(param.substr(eq + 1));
    if (q.empty() || (q[0] != '0' && q[0] != '1')) return std::nullopt;
    if (q.size() > 1 && (q[1] != '.' || q.size() > 5)) return std::nullopt;
    int thousandths = 0;
    for (size_t i = 2, scale = 100; i < q.size(); ++i, scale /= 10) {
      if (q[i] < '0' || q[i] > '9') return std::nullopt;
      thousandths += (q[i] - '0') * static_cast<int>(scale);
    }
    if (q[0] == '1') return thousandths == 0 ? std::optional<int>(1000) : std::nullopt;
    return thousandths;
  }
  return 1000;
}

}  // namespace

std::string_view ChosenCoding(const std::vector<std::string>& values) {
  std::optional<int> br, gzip, any;
  for (const std::string& value : values) {
    std::string_view list = value;
    while (!list.empty()) {
      const size_t comma = list.find(',');
      const std::string_view element = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      const size_t semi = element.find(';');
      const std::string_view coding = Trim(element.substr(0, semi));
      const std::optional<int> weight =
          CodingWeight(semi == std::string_view::npos ? "" : element.substr(semi + 1));
      if (!weight) continue;
      if (EqualsIgnoreCase(coding, "br")) br = std::max(br.value_or(0), *weight);
      if (EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip")) {
        gzip = std::max(gzip.value_or(0), *weight);
      }
      if (coding == "*") any = std::max(any.value_or(0), *weight);
    }
  }
  const int br_weight = br.value_or(any.value_or(0));
  const int gzip_weight = gzip.value_or(any.value_or(0));
  if (br_weight > 0 && br_weight >= gzip_weight) return "br";
  if (gzip_weight > 0) return "gzip";
  return {};
}

namespace {

// Rewrites an absolute-form target ("GET http://host:8080/v1/filters
// HTTP/1.1") in the request line at buf[begin] as the origin-form httplib
// routes ("/v1/filters"); returns how many bytes went. RFC 9112 (3.2.2) has
// a server accept the absolute form, which was answered 404; the authority
// it names is not checked, as Host is not.
size_t OriginForm(std::string& buf, size_t begin) {
  const size_t target = buf.find(' ', begin) + 1;
  const size_t line_end = buf.find('\n', begin);
  if (target == 0 || target > line_end) return 0;
  const std::string_view rest(buf.data() + target, line_end - target);
  size_t scheme = 0;
  if (rest.size() > 7 && EqualsIgnoreCase(rest.substr(0, 7), "http://")) scheme = 7;
  if (rest.size() > 8 && EqualsIgnoreCase(rest.substr(0, 8), "https://")) scheme = 8;
  if (scheme == 0) return 0;
  const size_t path = rest.find_first_of("/? \r", scheme);
  if (path == std::string_view::npos) return 0;
  if (rest[path] == '/') {
    buf.erase(target, path);
    return path;
  }
  // No path: the origin form is "/" (and the query, if any, follows it).
  buf.replace(target, path, "/");
  return path - 1;
}

// An HTTP token (RFC 9110, 5.6.2): a header's name, and no empty one.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s) {
    const bool alnum =
        (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(ch) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// The request headers the service reads (http_server.cc): their values
// must reach it as sent.
bool ReadByTheService(std::string_view name) {
  for (std::string_view read :
       {"Authorization", "Content-Type", "Content-Encoding", "Transfer-Encoding", "Expect"}) {
    if (EqualsIgnoreCase(name, read)) return true;
  }
  return false;
}

// True when a Connection header's list holds the "close" option.
bool HasCloseOption(std::string_view list) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (EqualsIgnoreCase(Trim(list.substr(0, comma)), "close")) return true;
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return false;
}

}  // namespace

size_t TidyHead(std::string& buf, size_t begin, size_t end, bool* malformed, int* hosts) {
  end -= OriginForm(buf, begin);
  const size_t first = buf.find('\n', begin) + 1;  // past the request line
  std::vector<std::string> accept;
  bool close = false;
  size_t at = first;
  while (at < end) {
    const size_t nl = buf.find('\n', at);
    if (nl == std::string::npos || nl >= end) break;
    const std::string_view line(buf.data() + at, nl + 1 - at);
    if (line == "\r\n") break;  // the blank line that ends the head
    const size_t colon = line.find(':');
    const std::string_view name =
        colon == std::string_view::npos ? std::string_view() : line.substr(0, colon);
    // A name that is no token is malformed (RFC 9112, 5.1: 400): none at
    // all, one with a space or tab before its colon ("Content-Length :"),
    // and a folded line (obs-fold, 5.2), which starts with one. httplib
    // took such lines or skipped them, and read a body framed otherwise
    // than a proxy in front may have framed it: a request hidden in a body
    // was served as a request of its own.
    if (!IsToken(name)) *malformed = true;
    // The value, without its line end (empty for a line with no colon).
    std::string_view value =
        colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) {
      value.remove_suffix(1);
    }
    // A length is digits (RFC 9110, 8.6): httplib percent-decodes header
    // values, so "1%35" framed a body of 15 bytes that a proxy would not.
    // (An empty one is ParseFraming's to answer.)
    if (EqualsIgnoreCase(name, "Content-Length") &&
        Trim(value).find_first_not_of("0123456789") != std::string_view::npos) {
      *malformed = true;
    }
    // NUL and a bare CR are no part of any field value (RFC 9110, 5.5: a
    // recipient must reject them or replace them): httplib kept both. (The
    // line's own CRLF is the only CR it may hold: "a\r\r\n" is refused too.)
    const std::string_view raw_value =
        colon == std::string_view::npos
            ? std::string_view()
            : line.substr(colon + 1, line.size() - colon - 1 - (line.ends_with("\r\n") ? 2 : 1));
    if (raw_value.find_first_of(std::string_view("\0\r", 2)) != std::string_view::npos) {
      *malformed = true;
    }
    if (EqualsIgnoreCase(name, "Host")) ++*hosts;
    const bool range = EqualsIgnoreCase(name, "Range");
    const bool connection = EqualsIgnoreCase(name, "Connection");
    if (EqualsIgnoreCase(name, "Accept-Encoding") || connection) {
      if (connection) {
        close = close || HasCloseOption(value);
      } else {
        accept.emplace_back(value);
      }
    } else if (!range) {
      at = nl + 1;
      // A '%' in a value the service reads is given to httplib as "%25",
      // which it decodes back (it percent-decodes every header value): each
      // such value reaches the service as sent, so "chunke%64" is not
      // chunked, and a token holding "%41" matches itself (it could never
      // authenticate). Other headers are left as they are: escaping grows a
      // line, and httplib refuses one past 8 KiB (a cookie full of '%').
      if (colon != std::string_view::npos && line.find('%', colon) != std::string_view::npos &&
          ReadByTheService(name)) {
        std::string escaped;
        for (char ch : line.substr(colon + 1)) {
          escaped += ch;
          if (ch == '%') escaped += "25";
        }
        const size_t value_at = at - line.size() + colon + 1;
        buf.replace(value_at, line.size() - colon - 1, escaped);
        at += escaped.size() - (line.size() - colon - 1);
        end += escaped.size() - (line.size() - colon - 1);
      }
      continue;
    }
    buf.erase(at, nl + 1 - at);
    end -= nl + 1 - at;
  }
  // Connection options are case-insensitive tokens in a list (RFC 9110,
  // 7.6.1); httplib honours the exact value "close" only, so "Close" or
  // "keep-alive, close" kept a connection its client meant to end (it read to
  // EOF for keep_alive_timeout_s). The lines go, and "close" comes back as
  // httplib reads it. An HTTP/1.0 connection carries one request and is told
  // "close" outright: httplib kept one asking "Keep-Alive" open without the
  // "Connection: keep-alive" its client needs, and announced "Keep-Alive:
  // timeout=..." on one it closed (ab -k then reused it).
  const std::string_view request_line(buf.data() + begin, first - begin);
  if (request_line.ends_with(" HTTP/1.0\r\n")) close = true;
  std::string lines = close ? "Connection: close\r\n" : "";
  if (!accept.empty()) {
    if (const std::string_view coding = ChosenCoding(accept); !coding.empty()) {
      lines += "Accept-Encoding: " + std::string(coding) + "\r\n";
    }
  }
  buf.insert(first, lines);
  return end + lines.size();
}

namespace {

// True when an HTTP/1.x head (its request line at `begin`) has neither a
// Content-Length nor a Transfer-Encoding line: a request without a body
// (RFC 9112, 6.3). Separate from ParseFraming, whose early returns (a second
// Authorization, an Expect it does not handle) only turn read-ahead off.
bool Unframed(std::string_view buf, size_t begin, size_t end) {
  size_t at = buf.find('\n', begin) + 1;
  const std::string_view line = buf.substr(begin, at - begin);
  if (!line.ends_with(" HTTP/1.0\r\n") && !line.ends_with(" HTTP/1.1\r\n")) return false;
  while (at < end) {
    const size_t nl = buf.find('\n', at);
    if (nl == std::string_view::npos || nl + 1 > end) return false;
    const std::string_view header = buf.substr(at, nl - at);
    const size_t colon = header.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view name = header.substr(0, colon);
      if (EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding")) {
        return false;
      }
    }
    at = nl + 1;
  }
  return true;
}

}  // namespace

BodyFraming ParseFraming(std::string_view buf, size_t begin, size_t end) {
  BodyFraming f;
  f.unframed = Unframed(buf, begin, end);
  size_t at = buf.find('\n', begin) + 1;  // past the request line
  const std::string_view line = buf.substr(begin, at - begin);
  const bool http10 = line.ends_with(" HTTP/1.0\r\n");
  if (!http10 && !line.ends_with(" HTTP/1.1\r\n")) return f;
  std::optional<uint64_t> length;
  int lengths = 0;
  while (at < end) {
    const size_t nl = buf.find('\n', at);
    if (nl == at + 1 && buf[at] == '\r') break;  // the blank line that ends the head
    std::string_view header = buf.substr(at, nl + 1 - at);
    if (!header.ends_with("\r\n") || header[0] == ' ' || header[0] == '\t') return f;
    header.remove_suffix(2);
    const size_t colon = header.find(':');
    if (colon == std::string_view::npos || colon == 0) return f;  // TidyHead's to answer
    const std::string_view name = header.substr(0, colon);
    const std::string_view value = Trim(header.substr(colon + 1));
    if (EqualsIgnoreCase(name, "Content-Length")) {
      ++lengths;
      uint64_t n = 0;
      if (value.empty()) {
        f.empty_length = true;
        return f;
      }
      if (value.size() > 15) return f;
      for (char ch : value) {
        if (ch < '0' || ch > '9') return f;
        n = n * 10 + static_cast<uint64_t>(ch - '0');
      }
      if (length && *length != n) return f;  // two lengths: the HTTP layer's 400
      length = n;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      return f;
    } else if (EqualsIgnoreCase(name, "Authorization")) {
      if (!f.authorization.empty()) return f;
      f.authorization = value;
      for (size_t p = f.authorization.find("%25"); p != std::string::npos;
           p = f.authorization.find("%25", p + 1)) {
        f.authorization.erase(p + 1, 2);
      }
    } else if (EqualsIgnoreCase(name, "Expect")) {
      // No 100 Continue goes to an HTTP/1.0 client (RFC 9110, 10.1.1).
      if (http10 || !EqualsIgnoreCase(value, "100-continue") || f.expect_end != 0) return f;
      f.expect_begin = at;
      f.expect_end = nl + 1;
    }
    at = nl + 1;
  }
  // The same length repeated frames the body one way, as the HTTP layer
  // reads it too; it went to a worker, which a client trickling such a
  // body held for body_timeout_s.
  if (lengths >= 1 && *length > 0) f.length = length;
  return f;
}

}  // namespace redbloom::server
