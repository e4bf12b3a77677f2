#include "redbloom/funnel.h"

#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace redbloom {
namespace {

Hash128 HashOf(Encoding e, std::string_view item) {
  std::string scratch;
  Hash128 h;
  Status s = HashItem(e, item, &scratch, &h);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return h;
}

TEST(FunnelTest, Utf8x2HashesTheStringTwice) {
  EXPECT_EQ(HashOf(Encoding::kUtf8x2, "订单"), Murmur3_128(std::string_view("订单订单")));
  EXPECT_NE(HashOf(Encoding::kUtf8x2, "x"), HashOf(Encoding::kUtf8, "x"));
}

TEST(FunnelTest, IntsAreLittleEndianLikePutIntAndPutLong) {
  ByteSink sink;
  sink.PutInt32(0x01020304);
  EXPECT_EQ(sink.bytes(), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(HashOf(Encoding::kInt32, "16909060"), Murmur3_128(sink.bytes()));
  sink.Clear();
  sink.PutInt64(-2);
  EXPECT_EQ(sink.bytes(), std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8));
  EXPECT_EQ(HashOf(Encoding::kInt64, "-2"), Murmur3_128(sink.bytes()));
  EXPECT_EQ(HashOf(Encoding::kInt32, "+7"), HashOf(Encoding::kInt32, "7"));
}

TEST(FunnelTest, RejectsItemsJavaCouldNotHaveProduced) {
  std::string scratch;
  Hash128 h;
  for (std::string_view bad : {"", "12x", "2147483648", "-2147483649", "+-1", " 1", "1.0"}) {
    EXPECT_EQ(HashItem(Encoding::kInt32, bad, &scratch, &h).code(), StatusCode::kInvalidArgument)
        << "'" << bad << "'";
  }
  EXPECT_TRUE(HashItem(Encoding::kInt64, "9223372036854775807", &scratch, &h).ok());
  EXPECT_EQ(HashItem(Encoding::kInt64, "9223372036854775808", &scratch, &h).code(),
            StatusCode::kInvalidArgument);
  // Invalid UTF-8: a lone continuation byte, an overlong '/', a surrogate.
  for (std::string_view bad : {"\x80", "\xc0\xaf", "\xed\xa0\x80", "abc\xff"}) {
    EXPECT_EQ(HashItem(Encoding::kUtf8, bad, &scratch, &h).code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(HashItem(Encoding::kBytes, bad, &scratch, &h).ok());
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
  EXPECT_EQ(HashObject(Order{42, "eu"}, funnel), Murmur3_128(expected.bytes()));
}

TEST(FunnelTest, EncodingNamesRoundTrip) {
  for (Encoding e :
       {Encoding::kUtf8, Encoding::kUtf8x2, Encoding::kInt32, Encoding::kInt64, Encoding::kBytes}) {
    EXPECT_EQ(testing::ValueOrFail(ParseEncoding(EncodingName(e))), e);
  }
  EXPECT_EQ(ParseEncoding("latin1").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace redbloom
