// The lower bound is the busiest instant's live bytes, or a fixed buffer's top if higher.
#include <gtest/gtest.h>

#include "memplan/error.hpp"
#include "memplan/plan/lower_bound.hpp"

namespace memplan::plan {
namespace {

Buffer buf(Time lower, Time upper, Bytes size) {
  return Buffer{.id = "b", .lower = lower, .upper = upper, .size = size};
}

TEST(LowerBound, EmptyProblemIsZero) { EXPECT_EQ(lower_bound(Problem{}), 0); }

TEST(LowerBound, SumsBuffersAliveTogether) {
  const Problem p{{buf(0, 10, 4), buf(2, 5, 3), buf(4, 8, 2), buf(8, 9, 100)}};
  EXPECT_EQ(lower_bound(p), 104);  // at t=8: 4 + 100
  EXPECT_EQ(peak_live_bytes(Problem{{buf(0, 10, 4), buf(2, 5, 3), buf(4, 8, 2)}}), 9);
}

TEST(LowerBound, HalfOpenLifetimesDoNotStack) {
  const Problem p{{buf(0, 5, 7), buf(5, 10, 7)}};
  EXPECT_EQ(lower_bound(p), 7);
}

TEST(LowerBound, ZeroLengthAndZeroSizeBuffersCountNothing) {
  const Problem p{{buf(3, 3, 1000), buf(0, 9, 0), buf(0, 9, 5)}};
  EXPECT_EQ(lower_bound(p), 5);
}

TEST(LowerBound, FixedOffsetRaisesTheBound) {
  Buffer fixed = buf(0, 1, 10);
  fixed.fixed_offset = 90;
  EXPECT_EQ(lower_bound(Problem{{fixed, buf(0, 1, 5)}}), 100);
  EXPECT_EQ(peak_live_bytes(Problem{{fixed, buf(0, 1, 5)}}), 15);
}

TEST(LowerBound, BuffersAliveTogetherPastTheArenaLimitAreAnErrorNotAWrap) {
  Problem problem;
  problem.buffers.assign(2049, buf(0, 1, Bytes{1} << 52));  // 2^63 + 2^52 B alive at once
  EXPECT_THROW((void)lower_bound(problem), InvalidArgument);
  problem.buffers.resize(1024);
  EXPECT_EQ(lower_bound(problem), Bytes{1} << 62);
}

}  // namespace
}  // namespace memplan::plan
