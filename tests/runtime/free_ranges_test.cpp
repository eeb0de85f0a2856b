// Best fit with alignment around occupied ranges; merging on release; misuse is an error.
#include <gtest/gtest.h>

#include <random>

#include "memplan/error.hpp"
#include "runtime/free_ranges.hpp"

namespace memplan {
namespace {

TEST(FreeRanges, AllocatesBestFitAndAligned) {
  FreeRanges r(1000);
  r.occupy(100, 100);                 // free: [0,100) [200,1000)
  r.occupy(250, 50);                  // free: [0,100) [200,250) [300,1000)
  EXPECT_EQ(r.allocate(40, 1), 200);  // the 50-byte hole fits best
  EXPECT_EQ(r.allocate(64, 64), 0);   // the 100-byte hole, aligned
  EXPECT_EQ(r.allocate(30, 16), 64);  // the 10-byte hole is too small; the 36-byte one fits
  EXPECT_EQ(r.high_water(), 300);     // occupy() counts too
  EXPECT_FALSE(r.allocate(2000, 1));
}

TEST(FreeRanges, ReleaseMergesNeighbours) {
  FreeRanges r(300);
  const auto a = r.allocate(100, 1);
  const auto b = r.allocate(100, 1);
  const auto c = r.allocate(100, 1);
  ASSERT_TRUE(a && b && c);
  EXPECT_FALSE(r.allocate(1, 1));
  r.release(*a, 100);
  r.release(*c, 100);
  r.release(*b, 100);
  EXPECT_EQ(r.allocate(300, 1), 0);  // one range again
}

TEST(FreeRanges, RejectsOccupyingTakenBytesAndDoubleRelease) {
  FreeRanges r(100);
  r.occupy(10, 10);
  EXPECT_THROW(r.occupy(15, 10), InvalidState);
  r.release(10, 10);
  EXPECT_THROW(r.release(10, 10), InvalidState);
}

TEST(FreeRanges, RandomUseNeverHandsOutTakenBytes) {
  std::mt19937 rng(7);
  FreeRanges r(1 << 16);
  std::vector<std::pair<Bytes, Bytes>> live;
  std::vector<int> owner(1 << 16, -1);
  for (int i = 0; i < 5000; ++i) {
    if (!live.empty() && rng() % 2 == 0) {
      const std::size_t k = rng() % live.size();
      r.release(live[k].first, live[k].second);
      for (Bytes b = live[k].first; b < live[k].first + live[k].second; ++b) owner[b] = -1;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    const Bytes size = 1 + rng() % 700;
    const Bytes align = Bytes{1} << (rng() % 8);
    const auto at = r.allocate(size, align);
    if (!at) continue;
    ASSERT_EQ(*at % align, 0);
    for (Bytes b = *at; b < *at + size; ++b) {
      ASSERT_EQ(owner[b], -1) << "byte " << b << " handed out twice";
      owner[b] = i;
    }
    live.emplace_back(*at, size);
  }
}

}  // namespace
}  // namespace memplan
