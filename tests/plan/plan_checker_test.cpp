// The independent plan checker (tests/support/plan_checker.hpp) is itself checked: its sweep
// agrees with brute force and with the library's validator on random placements, and it finds
// overlaps whose end addresses pass 2^63, where 64-bit sums wrap.
#include "support/plan_checker.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

#include "memplan/plan/validator.hpp"

namespace memplan::plan {
namespace {

using testing::overlap_by_pairs;
using testing::overlap_by_sweep;
using testing::plan_fault;
using testing::solution_fault;

Buffer buf(Time lower, Time upper, Bytes size, Bytes alignment = 1) {
  return Buffer{.id = "b", .lower = lower, .upper = upper, .size = size, .alignment = alignment};
}

bool has_overlap(const std::vector<Violation>& violations) {
  for (const Violation& v : violations) {
    if (v.kind == Violation::Kind::Overlap) return true;
  }
  return false;
}

TEST(PlanChecker, SweepAgreesWithPairsAndTheValidatorOnRandomPlacements) {
  std::mt19937 random(7);
  int overlapping = 0;
  for (int round = 0; round < 3000; ++round) {
    Problem problem;
    std::vector<Bytes> offsets;
    const int n = 1 + static_cast<int>(random() % 9);
    for (int i = 0; i < n; ++i) {
      const Time lower = random() % 8;
      problem.buffers.push_back(buf(lower, lower + random() % 5, random() % 4));
      offsets.push_back(random() % 10);
    }
    const bool by_pairs = overlap_by_pairs(problem, offsets).has_value();
    ASSERT_EQ(overlap_by_sweep(problem, offsets).has_value(), by_pairs) << "round " << round;
    ASSERT_EQ(has_overlap(find_violations(problem, offsets, 0)), by_pairs) << "round " << round;
    ASSERT_EQ(plan_fault(problem, offsets).has_value(), by_pairs) << "round " << round;
    overlapping += by_pairs;
  }
  // Both outcomes are common, so the agreement means something.
  EXPECT_GT(overlapping, 500);
  EXPECT_LT(overlapping, 2500);
}

TEST(PlanChecker, TouchingRangesAndLifetimesAreNoOverlap) {
  const Problem p{{buf(0, 4, 8), buf(4, 8, 8), buf(0, 8, 8), buf(2, 2, 8), buf(0, 8, 0)}};
  EXPECT_EQ(plan_fault(p, std::vector<Bytes>{0, 0, 8, 0, 4}), std::nullopt);
  EXPECT_NE(plan_fault(p, std::vector<Bytes>{0, 0, 7, 0, 4}), std::nullopt);
}

TEST(PlanChecker, FindsOverlapsWhoseEndsPassTwoToThe63) {
  // a spans [2^62, 2^63 + 2^61): its end wraps negative in 64 bits. b sits inside it.
  const Bytes two_62 = Bytes{1} << 62;
  const Problem p{{buf(0, 2, two_62 + (two_62 >> 1)), buf(1, 3, 8)}};
  const std::vector<Bytes> offsets{two_62, two_62 + (two_62 >> 2)};
  EXPECT_TRUE(overlap_by_pairs(p, offsets));
  EXPECT_TRUE(overlap_by_sweep(p, offsets));
  // And the arena must cover the end past 2^63, which no 64-bit arena size does.
  const auto fault = plan_fault(Problem{{p.buffers[0]}}, std::vector<Bytes>{two_62},
                                std::numeric_limits<Bytes>::max());
  ASSERT_TRUE(fault);
  EXPECT_NE(fault->find("ends at 11529215046068469760, past the arena size"), std::string::npos)
      << *fault;
}

TEST(PlanChecker, NamesEachKindOfFault) {
  Problem p{{buf(0, 4, 8, 8)}};
  EXPECT_EQ(plan_fault(p, std::vector<Bytes>{}), "0 offsets for 1 buffers");
  EXPECT_NE(plan_fault(p, std::vector<Bytes>{-8})->find("negative offset"), std::string::npos);
  EXPECT_NE(plan_fault(p, std::vector<Bytes>{4})->find("not a multiple of alignment 8"),
            std::string::npos);
  p.buffers[0].fixed_offset = 16;
  EXPECT_NE(plan_fault(p, std::vector<Bytes>{8})->find("fixed offset 16 not kept"),
            std::string::npos);
  p.buffers[0].alignment = 12;
  EXPECT_NE(plan_fault(p, std::vector<Bytes>{16})->find("not a positive power of two"),
            std::string::npos);
}

TEST(PlanChecker, ChecksTheReportedArenaAndBound) {
  const Problem p{{buf(0, 4, 10), buf(2, 6, 10)}};
  Solution s{.offsets = {0, 10}, .arena_size = 20, .lower_bound = 20};
  EXPECT_EQ(solution_fault(p, s), std::nullopt);
  s.arena_size = 19;
  EXPECT_NE(solution_fault(p, s), std::nullopt);  // a buffer ends past it
  s.arena_size = 24;
  EXPECT_NE(solution_fault(p, s), std::nullopt);  // not the highest end
  s.arena_size = 20;
  s.lower_bound = 21;
  EXPECT_NE(solution_fault(p, s), std::nullopt);  // a bound above a valid plan
}

TEST(PlanChecker, PrintsWideNumbers) {
  EXPECT_EQ(testing::wide_string(testing::Wide{std::numeric_limits<Bytes>::max()} * 4),
            "36893488147419103228");
  EXPECT_EQ(testing::wide_string(-testing::Wide{12}), "-12");
}

}  // namespace
}  // namespace memplan::plan
