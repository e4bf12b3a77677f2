#include "redbloom/status.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
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

// A failed Result moved from still reads as failed: the moved-from Status
// read as OK, so `if (!r.ok()) return r.status();` on one
// returned OK from a call that had failed.
TEST_F(StatusTest, AMovedFromFailedResultStaysFailed) {
  Result<int> failed = Status::NotFound("x");
  Result<int> moved = std::move(failed);
  EXPECT_FALSE(failed.ok());                                 // NOLINT: read after move
  EXPECT_EQ(failed.status().code(), StatusCode::kInternal);  // NOLINT
  EXPECT_NE(failed.status().message().find("after move"), std::string::npos);  // NOLINT
  EXPECT_EQ(moved.status().code(), StatusCode::kNotFound);
  Result<int> assigned = 1;
  assigned = std::move(moved);
  EXPECT_FALSE(moved.status().ok());  // NOLINT
  EXPECT_EQ(assigned.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(assigned.ok());
  // And moving stays cheap and noexcept, as containers want it.
  static_assert(std::is_nothrow_move_constructible_v<Result<int>>);
  static_assert(std::is_nothrow_move_constructible_v<Result<std::string>>);
}

// Two on one line (a caller's own macro): the temporaries were named by
// __LINE__ and collided.
Status TwoOnOneLine(Result<int> a, Result<int> b, int* sum) {
  // clang-format off
  REDBLOOM_ASSIGN_OR_RETURN(int x, std::move(a)); REDBLOOM_ASSIGN_OR_RETURN(int y, std::move(b));
  // clang-format on
  *sum = x + y;
  return Status::Ok();
}

TEST_F(StatusTest, AssignOrReturnTwiceOnOneLine) {
  int sum = 0;
  ASSERT_TRUE(TwoOnOneLine(1, 2, &sum).ok());
  EXPECT_EQ(sum, 3);
  EXPECT_EQ(TwoOnOneLine(1, Status::Conflict("no"), &sum).code(), StatusCode::kConflict);
}

// One nested in another on one line (a one-line lambda): named by
// __LINE__, the inner status shadowed the outer, an error under -Wshadow
// -Werror in a caller's build.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wshadow"
Status NestedOnOneLine(Status inner) {
  // clang-format off
  REDBLOOM_RETURN_IF_ERROR([&]() -> Status { REDBLOOM_RETURN_IF_ERROR(inner); return Status::Ok(); }());
  // clang-format on
  return Status::Ok();
}
#pragma GCC diagnostic pop

TEST_F(StatusTest, ReturnIfErrorNestedOnOneLine) {
  EXPECT_TRUE(NestedOnOneLine(Status::Ok()).ok());
  EXPECT_EQ(NestedOnOneLine(Status::Conflict("no")).code(), StatusCode::kConflict);
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
