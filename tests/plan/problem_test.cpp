// check_problem accepts valid buffers and names the first bad one; arena_size counts only
// buffers that occupy memory.
#include <gtest/gtest.h>

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
