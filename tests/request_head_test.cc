// The connection layer's reading of request heads (server/request_head.h),
// on its own: framing for the read-ahead, and the rewrites that make
// cpp-httplib read a head as RFC 9110 and 9112 mean it. The end-to-end
// behaviour is in server_api_test and server_limits_test.
#include "request_head.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace redbloom::server {
namespace {

BodyFraming Framing(const std::string& head) { return ParseFraming(head, 0, head.size()); }

TEST(RequestHeadTest, OneContentLengthFramesTheBody) {
  const BodyFraming f = Framing(
      "POST /v1/filters/a/items HTTP/1.1\r\nHost: x\r\n"
      "Content-Length: 12\r\nAuthorization: Bearer t%25k\r\n\r\n");
  ASSERT_TRUE(f.length.has_value());
  EXPECT_EQ(*f.length, 12u);
  EXPECT_EQ(f.authorization, "Bearer t%k");  // as sent, TidyHead's escape undone
  EXPECT_FALSE(f.unframed);
  // The same length twice frames it one way too.
  EXPECT_EQ(Framing("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n").length,
            3u);
}

TEST(RequestHeadTest, AnythingButOneLengthIsLeftToTheHttpLayer) {
  for (const std::string& head : std::vector<std::string>{
           "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
           "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 3x\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n",
           "POST / HTTP/1.1\r\nA: 1\r\n folded\r\nContent-Length: 3\r\n\r\n",
           "POST / HTTP/1.1\nContent-Length: 3\n\n",
           "POST / HTTP/2.0\r\nContent-Length: 3\r\n\r\n",
           "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
           "POST / HTTP/1.1\r\nAuthorization: a\r\nAuthorization: b\r\nContent-Length: 3\r\n\r\n",
       }) {
    EXPECT_FALSE(Framing(head).length.has_value()) << head;
  }
  EXPECT_TRUE(Framing("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n").empty_length);
  EXPECT_TRUE(Framing("GET / HTTP/1.1\r\nHost: x\r\n\r\n").unframed);
  EXPECT_FALSE(Framing("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unframed);
}

TEST(RequestHeadTest, ExpectContinueIsFoundOnHttp11Only) {
  const std::string head = "POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n";
  const BodyFraming f = Framing(head);
  ASSERT_TRUE(f.length.has_value());
  EXPECT_EQ(head.substr(f.expect_begin, f.expect_end - f.expect_begin), "Expect: 100-Continue\r\n");
}

TEST(RequestHeadTest, TheCodingIsTheOneTheClientWeighsMost) {
  using V = std::vector<std::string>;
  EXPECT_EQ(ChosenCoding(V{"gzip, br"}), "br");
  EXPECT_EQ(ChosenCoding(V{"gzip;q=0.9, br;q=0.5"}), "gzip");
  EXPECT_EQ(ChosenCoding(V{"gzip;q=0"}), "");
  EXPECT_EQ(ChosenCoding(V{"GZIP"}), "gzip");
  EXPECT_EQ(ChosenCoding(V{"*;q=0.2", "br;q=0"}), "gzip");
  EXPECT_EQ(ChosenCoding(V{"identity"}), "");
  EXPECT_EQ(ChosenCoding(V{"gzip;q=2"}), "");  // no weight: the element is ignored
}

struct Tidied {
  std::string head;
  bool malformed = false;
  int hosts = 0;
};

Tidied Tidy(std::string head) {
  Tidied t;
  const size_t end = TidyHead(head, 0, head.size(), &t.malformed, &t.hosts);
  t.head = head.substr(0, end);
  return t;
}

TEST(RequestHeadTest, TidyHeadRewritesWhatHttplibMisreads) {
  const Tidied t = Tidy(
      "GET http://h:8080/v1/filters?x=1 HTTP/1.1\r\nHost: h\r\nRange: bytes=x\r\n"
      "Connection: keep-alive, Close\r\nAccept-Encoding: gzip;q=0, br;q=0.1\r\n"
      "Authorization: Bearer a%41\r\nX-Other: 50%\r\n\r\n");
  EXPECT_FALSE(t.malformed);
  EXPECT_EQ(t.hosts, 1);
  EXPECT_EQ(t.head,
            "GET /v1/filters?x=1 HTTP/1.1\r\nConnection: close\r\nAccept-Encoding: br\r\n"
            "Host: h\r\nAuthorization: Bearer a%2541\r\nX-Other: 50%\r\n\r\n");
  EXPECT_EQ(Tidy("GET https://h?q HTTP/1.1\r\nHost: h\r\n\r\n").head,
            "GET /?q HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(Tidy("GET / HTTP/1.0\r\n\r\n").head, "GET / HTTP/1.0\r\nConnection: close\r\n\r\n");
}

TEST(RequestHeadTest, MalformedLinesAndHostsAreCounted) {
  using namespace std::string_literals;
  for (const std::string& head : std::vector<std::string>{
           "GET / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n"s,
           "GET / HTTP/1.1\r\nHost: h\r\nContent-Length : 3\r\n\r\n",
           "GET / HTTP/1.1\r\nHost: h\r\n folded: x\r\n\r\n",
           "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1%35\r\n\r\n",
           "GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"s,
           "GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n",
       }) {
    EXPECT_TRUE(Tidy(head).malformed) << head;
  }
  EXPECT_EQ(Tidy("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n").hosts, 2);
  EXPECT_EQ(Tidy("GET / HTTP/1.1\r\n\r\n").hosts, 0);
}

}  // namespace
}  // namespace redbloom::server
