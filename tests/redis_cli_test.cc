// Placeholder while the test is being written.
#include <gtest/gtest.h>
TEST(Placeholder, Pending) {}
