// The library's internal utilities that the CLI, the service and the tests
// share: percent-encoding, UTF-8 well-formedness and errno texts; and the
// Status every call returns.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "redbloom/funnel.h"
#include "test_util.h"
#include "util/errno_text.h"
#include "util/percent.h"
#include "util/utf8.h"

namespace redbloom::internal {
namespace {

TEST(PercentTest, DecodesEscapesOfEitherCaseAndKeepsPlus) {
  EXPECT_EQ(testing::ValueOrFail(PercentDecode("a%2Fb%20c+d%E2%82%ac", "the path")), "a/b c+d€");
  EXPECT_EQ(testing::ValueOrFail(PercentDecode("%25", "the path")), "%");
  EXPECT_EQ(testing::ValueOrFail(PercentDecode("", "the path")), "");
}

TEST(PercentTest, RejectsMalformedEscapesWithoutQuotingThem) {
  for (const char* bad : {"%", "%2", "a%zz", "%g0", "p%4"}) {
    auto r = PercentDecode(bad, "the password");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("in the password"), std::string::npos);
    if (std::string_view(bad).size() > 2) {  // "%" and "%2" occur in any such message
      EXPECT_EQ(r.status().message().find(bad), std::string::npos) << r.status().message();
    }
  }
}

TEST(PercentTest, EncodesAllButUnreservedAndRoundTrips) {
  EXPECT_EQ(PercentEncode("a/b c+d€~._-"), "a%2Fb%20c%2Bd%E2%82%AC~._-");
  EXPECT_EQ(PercentEncode("user:x@y/z", ":@"), "user:x@y%2Fz");
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  EXPECT_EQ(testing::ValueOrFail(PercentDecode(PercentEncode(all), "the path")), all);
}

TEST(Utf8Test, SequenceLengthFollowsTheUnicodeTable) {
  EXPECT_EQ(Utf8SequenceLength("a", 0), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xc3\xa9", 0), 2u);          // é
  EXPECT_EQ(Utf8SequenceLength("\xe8\xae\xa2", 0), 3u);      // 订
  EXPECT_EQ(Utf8SequenceLength("\xf0\x9f\x98\x80", 0), 4u);  // 😀
  for (const char* bad :
       {"\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf0\x80\x80\xaf",
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xc3", "\xe8\xae", "\xff"}) {
    EXPECT_EQ(Utf8SequenceLength(bad, 0), 0u) << ::testing::PrintToString(std::string(bad));
    EXPECT_FALSE(IsValidUtf8(bad)) << ::testing::PrintToString(std::string(bad));
  }
  EXPECT_TRUE(IsValidUtf8("pedido-ção-订单-😀"));
  EXPECT_TRUE(IsValidUtf8(std::string_view("a\0b", 3)));
  EXPECT_FALSE(IsValidUtf8("ok\xed\xbf\xbf"));  // a lone low surrogate at the end
}

// NonAsciiBits reads a word at a time, one branch per length class (under 4,
// 4 to 7, 8 to 16, past 16): every byte of every length up to 40 is looked at.
TEST(Utf8Test, NonAsciiBitsSeesEveryByteAtEveryLength) {
  for (size_t n = 0; n <= 40; ++n) {
    std::string s(n, 'a');
    EXPECT_EQ(NonAsciiBits(s), 0u) << n;
    EXPECT_TRUE(IsUtf8(s)) << n;
    for (size_t at = 0; at < n; ++at) {
      s[at] = '\x80';
      EXPECT_NE(NonAsciiBits(s), 0u) << "length " << n << ", byte " << at;
      EXPECT_FALSE(IsUtf8(s)) << "length " << n << ", byte " << at;  // a lone continuation
      s[at] = 'a';
    }
  }
}

// An OK Status is a null pointer and an error one on the heap (status.h): a
// copy must own its own code and message, a moved-from one reads as OK, and
// a kOk code never makes an error.
TEST(StatusTest, CopiesOwnTheirErrorAndOkHoldsNone) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_EQ(ok.message(), "");
  EXPECT_EQ(ok.ToString(), "ok");
  EXPECT_TRUE(Status(StatusCode::kOk, "ignored").ok());
  EXPECT_EQ(Status(StatusCode::kOk, "ignored").message(), "");

  Status copy;
  Status assigned = Status::Conflict("to be replaced");
  {
    const Status original = Status::NotFound("filter 'orders' does not exist");
    copy = original;
    assigned = original;
    Status self = original;
    self = *&self;  // self-assignment keeps the error
    EXPECT_EQ(self.ToString(), original.ToString());
  }  // the original's message is freed here; the copies keep theirs
  for (const Status* s : {&copy, &assigned}) {
    EXPECT_FALSE(s->ok());
    EXPECT_EQ(s->code(), StatusCode::kNotFound);
    EXPECT_EQ(s->ToString(), "not_found: filter 'orders' does not exist");
  }
  const Status with = copy.WithContext("open");
  EXPECT_EQ(with.code(), StatusCode::kNotFound);
  EXPECT_EQ(with.message(), "open: filter 'orders' does not exist");
  EXPECT_EQ(copy.message(), "filter 'orders' does not exist");
  EXPECT_TRUE(ok.WithContext("open").ok());
  EXPECT_EQ(with.reason(), StatusReason::kNone);
  // A reason survives context and a suffix: callers decide by it, never by
  // the message's first words.
  const Status denied(StatusCode::kUnavailable, "authentication failed for redis x",
                      StatusReason::kAuthFailed);
  const Status told = denied.WithContext("creating filter 'orders'").WithSuffix(" (see the URL)");
  EXPECT_EQ(told.code(), StatusCode::kUnavailable);
  EXPECT_EQ(told.reason(), StatusReason::kAuthFailed);
  EXPECT_EQ(told.message(),
            "creating filter 'orders': authentication failed for redis x (see the URL)");
  EXPECT_EQ(Status(told).reason(), StatusReason::kAuthFailed);
  EXPECT_EQ(StatusReasonName(told.reason()), "auth_failed");
  EXPECT_EQ(ok.reason(), StatusReason::kNone);
  EXPECT_TRUE(ok.WithSuffix(" more").ok());
  EXPECT_TRUE(Status::Unavailable("down").IsTransient());
  EXPECT_FALSE(Status::InvalidArgument("bad").IsTransient());
  EXPECT_FALSE(ok.IsTransient());

  Status moved = std::move(copy);
  EXPECT_EQ(moved.code(), StatusCode::kNotFound);
  EXPECT_TRUE(copy.ok());  // NOLINT(bugprone-use-after-move): what a moved-from Status reads as

  const Result<bool> from_ok{Status()};
  ASSERT_FALSE(from_ok.ok());
  EXPECT_EQ(from_ok.status().code(), StatusCode::kInternal);
  const Result<bool> answer{true};
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer.status().ok());
  EXPECT_TRUE(*answer);
}

// strerror_r's text, whichever of its two forms the C library gives, and a
// message (not an empty string) for a number no errno names.
TEST(ErrnoTextTest, NamesErrnoValuesAndUnknownOnes) {
  EXPECT_EQ(ErrnoText(ENOENT), "No such file or directory");
  EXPECT_EQ(ErrnoText(ENOSPC), "No space left on device");
  EXPECT_NE(ErrnoText(99999).find("nknown error"), std::string::npos) << ErrnoText(99999);
}

}  // namespace
}  // namespace redbloom::internal
