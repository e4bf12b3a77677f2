#include "redbloom/status.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "test_util.h"

namespace redbloom {
namespace {

struct Point {
  int x = 0;
};

class StatusTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(StatusTest, OkResultGivesItsValueEveryWay) {
  Result<Point> r(Point{7});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().x, 7);
  EXPECT_EQ((*r).x, 7);
  EXPECT_EQ(r->x, 7);
  const Result<Point>& c = r;
  EXPECT_EQ(c.value().x, 7);
  EXPECT_EQ((*c).x, 7);
  EXPECT_EQ(c->x, 7);
  EXPECT_EQ(std::move(r).value().x, 7);
}

TEST_F(StatusTest, ResultFromAnOkStatusIsAnInternalError) {
  Result<int> r(Status::Ok());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

// Reading a failed Result must crash naming the error, never hand out
// garbage (STYLE.md: "Reading a failed Result is a crash with the status").
TEST_F(StatusTest, ReadingAFailedResultAbortsWithTheStatus) {
  const Result<Point> failed(Status::NotFound("filter 'orders' does not exist"));
  const std::string expected = "not_found: filter 'orders' does not exist";
  EXPECT_DEATH((void)failed.value(), expected);
  EXPECT_DEATH((void)(*failed).x, expected);
  EXPECT_DEATH((void)failed->x, expected);
  Result<std::string> text(Status::Unavailable("redis down"));
  EXPECT_DEATH((void)text.value(), "unavailable: redis down");
  EXPECT_DEATH((void)text->size(), "unavailable: redis down");
  EXPECT_DEATH((void)std::move(text).value(), "unavailable: redis down");
}

// The tests' way of reading a Result inside an expectation fails the test
// with the status instead.
TEST_F(StatusTest, ValueOrFailFailsTheTestWithTheStatus) {
  EXPECT_NONFATAL_FAILURE(
      EXPECT_EQ(testing::ValueOrFail(Result<int>(Status::Conflict("other parameters"))), 0),
      "conflict: other parameters");
  EXPECT_EQ(testing::ValueOrFail(Result<int>(42)), 42);
}

}  // namespace
}  // namespace redbloom
