// The validator accepts valid placements and names every kind of invalid one.
#include <gtest/gtest.h>

#include <random>

#include "memplan/error.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/validator.hpp"

namespace memplan::plan {
namespace {

Buffer buf(Time lower, Time upper, Bytes size, Bytes alignment = 1) {
  return Buffer{.id = "b", .lower = lower, .upper = upper, .size = size, .alignment = alignment};
}

Violation::Kind first_kind(const Problem& p, std::vector<Bytes> offsets) {
  const auto v = find_violations(p, offsets);
  EXPECT_FALSE(v.empty());
  return v.empty() ? Violation::Kind::WrongCount : v.front().kind;
}

TEST(Validator, AcceptsDisjointPlacements) {
  const Problem p{{buf(0, 4, 10), buf(2, 6, 10), buf(4, 8, 10)}};
  EXPECT_TRUE(find_violations(p, std::vector<Bytes>{0, 10, 0}).empty());
}

TEST(Validator, FindsOverlapsAndNamesBothBuffers) {
  const Problem p{{buf(0, 4, 10), buf(2, 6, 10)}};
  const auto v = find_violations(p, std::vector<Bytes>{0, 9});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Violation::Kind::Overlap);
  EXPECT_NE(v[0].message.find("buffer 1"), std::string::npos);
  EXPECT_NE(v[0].message.find("buffer 0"), std::string::npos);
}

TEST(Validator, TouchingLifetimesOrRangesAreFine) {
  const Problem p{{buf(0, 4, 10), buf(4, 6, 10), buf(0, 6, 5)}};
  EXPECT_TRUE(find_violations(p, std::vector<Bytes>{0, 0, 10}).empty());
}

TEST(Validator, ZeroSizeAndZeroLengthBuffersOverlapNothing) {
  const Problem p{{buf(0, 4, 10), buf(1, 2, 0), buf(2, 2, 10)}};
  EXPECT_TRUE(find_violations(p, std::vector<Bytes>{0, 3, 0}).empty());
}

TEST(Validator, ChecksCountSignAlignmentAndFixedOffsets) {
  const Problem p{{buf(0, 4, 10, 8)}};
  EXPECT_EQ(first_kind(p, {}), Violation::Kind::WrongCount);
  EXPECT_EQ(first_kind(p, {-8}), Violation::Kind::Negative);
  EXPECT_EQ(first_kind(p, {4}), Violation::Kind::Misaligned);
  Problem fixed = p;
  fixed.buffers[0].fixed_offset = 16;
  EXPECT_EQ(first_kind(fixed, {8}), Violation::Kind::FixedOffsetMoved);
  EXPECT_TRUE(find_violations(fixed, std::vector<Bytes>{16}).empty());
}

TEST(Validator, ValidateChecksTheReportedSizes) {
  const Problem p{{buf(0, 4, 10), buf(2, 6, 10)}};
  Solution s{.offsets = {0, 10}, .arena_size = 20, .lower_bound = 20};
  EXPECT_NO_THROW(validate(p, s));
  s.arena_size = 25;
  EXPECT_THROW(validate(p, s), Error);
  s.arena_size = 20;
  s.lower_bound = 30;
  EXPECT_THROW(validate(p, s), Error);
  s.lower_bound = 20;
  s.offsets = {0, 5};
  EXPECT_THROW(validate(p, s), Error);
}

TEST(Validator, AnEndPastTheLargestOffsetIsAViolationAndHidesNoOverlap) {
  // 2^62 + 2^61 + 2^60 + 2^61 passes 2^63: the end used to wrap negative and hide the overlap.
  const Bytes high = (Bytes{1} << 62) + (Bytes{1} << 61) + (Bytes{1} << 60);
  const Problem p{{buf(0, 4, Bytes{1} << 61), buf(0, 4, 8)}};
  const auto violations = find_violations(p, std::vector<Bytes>{high, high + 8});
  bool out_of_range = false;
  bool overlap = false;
  for (const Violation& v : violations) {
    out_of_range |= v.kind == Violation::Kind::OutOfRange && v.buffer == 0;
    overlap |= v.kind == Violation::Kind::Overlap;
  }
  EXPECT_TRUE(out_of_range);
  EXPECT_TRUE(overlap);
  EXPECT_THROW((void)arena_size(p, std::vector<Bytes>{high, 0}), InvalidArgument);
}

// Against brute force on random small problems: the sweep finds an overlap exactly when one
// exists among the O(n^2) pairs.
TEST(Validator, AgreesWithPairwiseCheckOnRandomPlacements) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 2000; ++round) {
    Problem p;
    std::vector<Bytes> offsets;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      const Time lower = rng() % 10;
      p.buffers.push_back(buf(lower, lower + static_cast<Time>(rng() % 6), 1 + rng() % 8));
      offsets.push_back(static_cast<Bytes>(rng() % 20));
    }
    bool overlap = false;
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        const auto &a = p.buffers[i], &b = p.buffers[j];
        overlap |=
            conflicts(a, b) && offsets[i] < offsets[j] + b.size && offsets[j] < offsets[i] + a.size;
      }
    }
    EXPECT_EQ(!find_violations(p, offsets).empty(), overlap) << "round " << round;
  }
}

// Thousands of buffers (the sweep's ordered set then spans several summary levels): a valid
// plan with one buffer moved is invalid exactly when the moved buffer meets another.
TEST(Validator, FindsTheOneMovedBufferAmongThousands) {
  std::mt19937 rng(99);
  Problem p;
  std::vector<Bytes> offsets;
  Bytes next_free = 0;
  for (int i = 0; i < 5000; ++i) {  // stacked in address order: valid, and every rank differs
    const Time lower = rng() % 200;
    p.buffers.push_back(buf(lower, lower + 1 + static_cast<Time>(rng() % 20), 1 + rng() % 64));
    offsets.push_back(next_free);
    next_free += p.buffers.back().size;
  }
  ASSERT_TRUE(find_violations(p, offsets).empty());
  int invalid = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<Bytes> moved = offsets;
    const std::size_t k = rng() % p.buffers.size();
    moved[k] = static_cast<Bytes>(rng() % static_cast<unsigned>(next_free));
    bool overlap = false;
    for (std::size_t j = 0; j < p.buffers.size(); ++j) {
      overlap |= j != k && conflicts(p.buffers[j], p.buffers[k]) &&
                 moved[j] < moved[k] + p.buffers[k].size && moved[k] < moved[j] + p.buffers[j].size;
    }
    invalid += overlap ? 1 : 0;
    EXPECT_EQ(!find_violations(p, moved).empty(), overlap) << "round " << round;
  }
  EXPECT_GT(invalid, 0);
  EXPECT_LT(invalid, 300);
}

}  // namespace
}  // namespace memplan::plan
