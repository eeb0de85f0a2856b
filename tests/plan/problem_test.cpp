// check_problem accepts valid buffers and names the first bad one; arena_size counts only
// buffers that occupy memory.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "memplan/error.hpp"
#include "memplan/plan/problem.hpp"

namespace memplan::plan {
namespace {

Buffer buf(Time lower, Time upper, Bytes size) {
  return Buffer{.id = "b", .lower = lower, .upper = upper, .size = size};
}

TEST(Problem, AcceptsEmptyAndOrdinaryProblems) {
  EXPECT_NO_THROW(check_problem(Problem{}));
  EXPECT_NO_THROW(check_problem(Problem{{buf(0, 1, 8), buf(3, 3, 0)}}));
}

TEST(Problem, RejectsEachBadFieldWithItsName) {
  const auto message_of = [](Buffer b) {
    try {
      check_problem(Problem{{buf(0, 1, 1), b}});
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message_of(buf(0, 1, -1)).find("buffer 1 (id 'b'): size -1"), std::string::npos);
  EXPECT_NE(message_of(buf(5, 4, 1)).find("lifetime [5, 4) ends before it starts"),
            std::string::npos);
  Buffer odd = buf(0, 1, 1);
  odd.alignment = 3;
  EXPECT_NE(message_of(odd).find("alignment 3 is not a power of two"), std::string::npos);
  Buffer wide = buf(0, 1, 1);
  wide.alignment = Bytes{1} << 53;  // a power of two, but past the limit: say which
  EXPECT_NE(message_of(wide).find(
                "alignment 9007199254740992 is above the limit 4503599627370496 (2^52)"),
            std::string::npos);
  Buffer misplaced = buf(0, 1, 1);
  misplaced.alignment = 16;
  misplaced.fixed_offset = 8;
  EXPECT_NE(message_of(misplaced).find("fixed offset 8 is not a multiple of its alignment 16"),
            std::string::npos);
  Buffer huge = buf(0, 1, Bytes{1} << 60);
  EXPECT_NE(message_of(huge).find("outside"), std::string::npos);
}

std::string message_of_problem(const Problem& problem) {
  try {
    check_problem(problem);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

Problem all_live(std::size_t count, Bytes size) {
  Problem problem;
  problem.buffers.assign(count, buf(0, 1, size));
  return problem;
}

TEST(Problem, RejectsBuffersAliveTogetherPastTheArenaLimit) {
  // 2,049 x 2^52 and 4,097 x 2^51 B alive at once: their sum passes 2^63 and used to wrap.
  for (const auto& [count, size] : {std::pair<std::size_t, Bytes>{2049, Bytes{1} << 52},
                                    std::pair<std::size_t, Bytes>{4097, Bytes{1} << 51}}) {
    const std::string message = message_of_problem(all_live(count, size));
    SCOPED_TRACE(message);
    EXPECT_NE(message.find("at instant 0"), std::string::npos);
    EXPECT_NE(message.find("4611686018427387904"), std::string::npos);  // the limit, 2^62
  }
  // Exactly at the limit is fine, and so are more buffers that take turns.
  EXPECT_NO_THROW(check_problem(all_live(1024, Bytes{1} << 52)));
  Problem turns;
  for (Time t = 0; t < 4096; ++t) turns.buffers.push_back(buf(t, t + 1, Bytes{1} << 52));
  EXPECT_NO_THROW(check_problem(turns));
}

TEST(Problem, AnAlignmentAboveTheLimitIsNamedAsTooLarge) {
  Buffer huge = buf(0, 1, 1);
  huge.alignment = Bytes{1} << 53;
  const std::string message = message_of_problem(Problem{{huge}});
  EXPECT_NE(message.find("alignment 9007199254740992 is above the limit 4503599627370496"),
            std::string::npos)
      << message;
}

TEST(Problem, RejectsFixedBuffersThatShareBytesWhileAlive) {
  Buffer first = buf(0, 10, 16);
  first.id = "first";
  first.fixed_offset = 0;
  Buffer second = buf(5, 20, 16);
  second.id = "second";
  second.fixed_offset = 8;
  const std::string message = message_of_problem(Problem{{buf(0, 30, 4), first, second}});
  EXPECT_NE(message.find("buffer 1 (id 'first', offset 0, size 16, lifetime [0, 10))"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("buffer 2 (id 'second', offset 8, size 16, lifetime [5, 20))"),
            std::string::npos)
      << message;
  // Sharing bytes at different times, or touching in address, is fine.
  second.lower = 10;
  EXPECT_NO_THROW(check_problem(Problem{{first, second}}));
  second.lower = 5;
  second.fixed_offset = 16;
  EXPECT_NO_THROW(check_problem(Problem{{first, second}}));
}

TEST(Problem, ConflictsNeedOverlappingLifetimesAndBytes) {
  EXPECT_TRUE(conflicts(buf(0, 5, 1), buf(4, 9, 1)));
  EXPECT_FALSE(conflicts(buf(0, 5, 1), buf(5, 9, 1)));  // half-open: touching is fine
  EXPECT_FALSE(conflicts(buf(0, 5, 1), buf(2, 2, 1)));  // zero-length lifetime
  EXPECT_FALSE(conflicts(buf(0, 5, 0), buf(0, 5, 1)));  // zero size
}

TEST(Problem, ArenaSizeIgnoresBuffersThatOccupyNothing) {
  const Problem p{{buf(0, 2, 10), buf(1, 1, 1000), buf(3, 4, 0)}};
  const std::vector<Bytes> offsets{5, 0, 999};
  EXPECT_EQ(arena_size(p, offsets), 15);
  EXPECT_EQ(arena_size(Problem{}, {}), 0);
}

}  // namespace
}  // namespace memplan::plan
