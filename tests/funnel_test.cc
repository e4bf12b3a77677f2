// Funnels make bytes only; which hash runs over them is the strategy's.
#include "redbloom/funnel.h"

#include <gtest/gtest.h>

#include <charconv>
#include <string>
#include <vector>

#include "redbloom/strategy.h"
#include "test_util.h"

namespace redbloom {
namespace {

std::string BytesOf(Encoding e, std::string_view item) {
  std::string scratch;
  std::string_view bytes;
  Status s = EncodeItem(e, item, &scratch, &bytes);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::string(bytes);
}

TEST(FunnelTest, Utf8x2IsTheStringTwice) {
  EXPECT_EQ(BytesOf(Encoding::kUtf8x2, "订单"), "订单订单");
  EXPECT_EQ(BytesOf(Encoding::kUtf8, "订单"), "订单");
  EXPECT_EQ(BytesOf(Encoding::kBytes, std::string_view("a\0b", 3)), std::string("a\0b", 3));
}

TEST(FunnelTest, IntsAreLittleEndianLikePutIntAndPutLong) {
  ByteSink sink;
  sink.PutInt32(0x01020304);
  EXPECT_EQ(sink.bytes(), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(BytesOf(Encoding::kInt32, "16909060"), sink.bytes());
  sink.Clear();
  sink.PutInt64(-2);
  EXPECT_EQ(sink.bytes(), std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8));
  EXPECT_EQ(BytesOf(Encoding::kInt64, "-2"), sink.bytes());
  EXPECT_EQ(BytesOf(Encoding::kInt32, "+7"), BytesOf(Encoding::kInt32, "7"));
}

TEST(FunnelTest, RejectsItemsJavaCouldNotHaveProduced) {
  std::string scratch;
  std::string_view b;
  for (std::string_view bad : {"", "12x", "2147483648", "-2147483649", "+-1", " 1", "1.0"}) {
    EXPECT_EQ(EncodeItem(Encoding::kInt32, bad, &scratch, &b).code(), StatusCode::kInvalidArgument)
        << "'" << bad << "'";
  }
  EXPECT_TRUE(EncodeItem(Encoding::kInt64, "9223372036854775807", &scratch, &b).ok());
  EXPECT_EQ(EncodeItem(Encoding::kInt64, "9223372036854775808", &scratch, &b).code(),
            StatusCode::kInvalidArgument);
  // Invalid UTF-8: a lone continuation byte, an overlong '/', a surrogate.
  for (std::string_view bad : {"\x80", "\xc0\xaf", "\xed\xa0\x80", "abc\xff"}) {
    EXPECT_EQ(EncodeItem(Encoding::kUtf8, bad, &scratch, &b).code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(EncodeItem(Encoding::kBytes, bad, &scratch, &b).ok());
  }
}

// What Java's parseInt / parseLong accept, as the funnel took it before the
// hot path summed short numbers itself: one '+' (not "+-"), or '-', then
// digits, in range.
template <typename Int>
bool ReferenceParse(std::string_view text, Int* out) {
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+' && (e - b == 1 || b[1] != '-')) ++b;
  auto [ptr, ec] = std::from_chars(b, e, *out, 10);
  return !text.empty() && ec == std::errc() && ptr == e;
}

template <typename Int>
void ExpectParsesLikeReference(Encoding e, std::string_view text) {
  Int want = 0;
  const bool ok = ReferenceParse(text, &want);
  std::string scratch;
  std::string_view bytes;
  const Status s = EncodeItem(e, text, &scratch, &bytes);
  ASSERT_EQ(s.ok(), ok) << "'" << text << "': " << s.ToString();
  if (!ok) return;
  ByteSink sink;
  if (sizeof(Int) == 4) {
    sink.PutInt32(static_cast<int32_t>(want));
  } else {
    sink.PutInt64(static_cast<int64_t>(want));
  }
  EXPECT_EQ(bytes, sink.bytes()) << "'" << text << "'";
}

// Every sign prefix before 0 to 22 digits (the fast sum stops at 9 and 18),
// leading zeros, both ends of the ranges and one past them, and junk inside.
TEST(FunnelTest, DecimalsParseLikeJavaAtEveryLength) {
  uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  std::vector<std::string> texts = {"2147483647",
                                    "2147483648",
                                    "-2147483648",
                                    "-2147483649",
                                    "9223372036854775807",
                                    "9223372036854775808",
                                    "-9223372036854775808",
                                    "-9223372036854775809",
                                    "99999999999999999999",
                                    "0000000000000000000000123",
                                    "1_000",
                                    "1 ",
                                    "٣"};
  for (std::string_view sign : {"", "-", "+", "+-", "-+", "--", "++", " "}) {
    for (size_t digits = 0; digits <= 22; ++digits) {
      for (int round = 0; round < 6; ++round) {
        std::string t(sign);
        for (size_t d = 0; d < digits; ++d) {
          t.push_back(static_cast<char>('0' + (round == 0 && d < 3 ? 0 : next() % 10)));
        }
        if (round == 5 && digits > 0) t[next() % t.size()] = "x.:/ "[next() % 5];
        texts.push_back(t);
      }
    }
  }
  for (const std::string& t : texts) {
    ExpectParsesLikeReference<int32_t>(Encoding::kInt32, t);
    ExpectParsesLikeReference<int64_t>(Encoding::kInt64, t);
  }
}

TEST(FunnelTest, Utf8ValidatorAcceptsAllPlanes) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("ação"));
  EXPECT_TRUE(IsValidUtf8("订单"));
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x98\x80"));   // U+1F600
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe6\xb3"));          // truncated
}

TEST(FunnelTest, CustomFunnelMatchesBuiltIn) {
  struct Order {
    int64_t id;
    std::string region;
  };
  auto funnel = [](const Order& o, ByteSink& sink) { sink.PutInt64(o.id).PutString(o.region); };
  ByteSink expected;
  expected.PutInt64(42).PutString("eu");
  EXPECT_EQ(HashObject(Strategy::kGuava64, Order{42, "eu"}, funnel),
            HashBytes(Strategy::kGuava64, expected.bytes()));
  Hash128 h;
  std::string scratch;
  ASSERT_TRUE(HashItem(Strategy::kGuava64, Encoding::kBytes, expected.bytes(), &scratch, &h).ok());
  EXPECT_EQ(h, Murmur3_128(expected.bytes())) << "guava64 hashes with murmur3_128";
}

TEST(FunnelTest, EncodingNamesRoundTrip) {
  for (Encoding e : AllEncodings()) EXPECT_EQ(*ParseEncoding(EncodingName(e)), e);
  EXPECT_EQ(AllEncodings().size(), 5u);
  EXPECT_EQ(ParseEncoding("latin1").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace redbloom
