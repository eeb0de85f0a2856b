// The picture's model: the peak instant and the buffers live there, their shares, colours,
// units, the SVG's aggregation bound at 100,000 buffers, and invalid plans refused by name.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "draw_test_support.hpp"
#include "memplan/draw/model.hpp"
#include "memplan/error.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/planner.hpp"

namespace memplan::draw {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::Plan;

TEST(DrawModel, PeakAndLiveBuffersOfAHandMadePlan) {
  Plan p;
  p.add("a", 0, 4, 100, 0);
  p.add("b", 2, 6, 50, 100);
  p.add("c", 4, 8, 200, 150);
  p.add("empty", 0, 8, 0, 0);  // occupies nothing: neither drawn nor live
  const PictureModel model = build_model(p.problem, p.offsets, {});
  EXPECT_EQ(model.peak_instant, 4);  // a ends at 4 (half-open), c starts: 50 + 200
  EXPECT_EQ(model.peak_bytes, 250);
  ASSERT_EQ(model.live_at_peak.size(), 2u);
  EXPECT_EQ(model.live_at_peak[0].buffer, 2u);
  EXPECT_DOUBLE_EQ(model.live_at_peak[0].share, 0.8);
  EXPECT_EQ(model.live_at_peak[1].buffer, 1u);
  EXPECT_DOUBLE_EQ(model.live_at_peak[1].share, 0.2);
  EXPECT_EQ(model.arena_size, 350);
  EXPECT_EQ(model.time_begin, 0);
  EXPECT_EQ(model.time_end, 8);
  EXPECT_EQ(model.drawn, (std::vector<std::size_t>{0, 1, 2}));
}

TEST(DrawModel, TheFirstOfEqualPeaksIsMarked) {
  Plan p;
  p.add("a", 0, 2, 64, 0);
  p.add("b", 5, 7, 64, 0);
  const PictureModel model = build_model(p.problem, p.offsets, {});
  EXPECT_EQ(model.peak_instant, 0);
  EXPECT_EQ(model.peak_bytes, 64);
}

// The peak found by the sweep against every instant tried one by one, on planned random problems.
TEST(DrawModel, PeakMatchesABruteForceOnRandomPlans) {
  std::mt19937 random(7);
  for (int round = 0; round < 40; ++round) {
    plan::Problem problem;
    const int count = 1 + static_cast<int>(random() % 40);
    for (int i = 0; i < count; ++i) {
      const plan::Time lower = random() % 30;
      problem.buffers.push_back({.id = fmt::format("r{}", i),
                                 .lower = lower,
                                 .upper = lower + static_cast<plan::Time>(random() % 10),
                                 .size = static_cast<Bytes>(random() % 1000)});
    }
    plan::PlanOptions options;
    options.exact = false;
    const plan::Solution solution = plan::plan(problem, options);
    const PictureModel model = build_model(problem, solution.offsets, {});

    Bytes best = 0;
    plan::Time best_instant = 0;
    for (plan::Time t = 0; t < 40; ++t) {
      Bytes live = 0;
      for (const plan::Buffer& b : problem.buffers) {
        if (b.occupies() && b.lower <= t && t < b.upper) live += b.size;
      }
      if (live > best) best = live, best_instant = t;
    }
    EXPECT_EQ(model.peak_bytes, best) << "round " << round;
    EXPECT_EQ(model.peak_bytes, plan::peak_live_bytes(problem)) << "round " << round;
    if (best > 0) {
      EXPECT_EQ(model.peak_instant, best_instant) << "round " << round;
    }

    Bytes live_sum = 0;
    double shares = 0;
    for (std::size_t k = 0; k < model.live_at_peak.size(); ++k) {
      live_sum += model.live_at_peak[k].size;
      shares += model.live_at_peak[k].share;
      if (k > 0) {
        EXPECT_GE(model.live_at_peak[k - 1].size, model.live_at_peak[k].size);
      }
    }
    EXPECT_EQ(live_sum, model.peak_bytes) << "round " << round;
    if (best > 0) {
      EXPECT_NEAR(shares, 1.0, 1e-9) << "round " << round;
    }
  }
}

TEST(DrawModel, AnOverlapIsRefusedNamingBothBuffers) {
  Plan p;
  p.add("left", 0, 10, 100, 0);
  p.add("right", 5, 15, 100, 60);  // shares [60, 100) with "left" during [5, 10)
  try {
    (void)build_model(p.problem, p.offsets, {});
    FAIL() << "an invalid plan was drawn";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(),
                AllOf(HasSubstr("cannot draw an invalid plan"),
                      HasSubstr("buffer 0 (id 'left', offset 0, size 100, lifetime [0, 10))"),
                      HasSubstr("buffer 1 (id 'right', offset 60, size 100, "
                                "lifetime [5, 15))")));
  }
}

TEST(DrawModel, WrongCountsAreRefused) {
  Plan p;
  p.add("a", 0, 1, 8, 0);
  EXPECT_THROW((void)build_model(p.problem, std::vector<Bytes>{}, {}), InvalidArgument);
  const std::vector<std::string> tags{"x", "y"};
  EXPECT_THAT([&] { (void)build_model(p.problem, p.offsets, {.tags = tags}); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("2 tags for 1 buffers")));
}

TEST(DrawModel, OneColourPerTagTheSameInEveryPicture) {
  Plan p;
  p.add("a", 0, 1, 8, 0);
  p.add("b", 0, 1, 8, 8);
  p.add("c", 0, 1, 8, 16);
  const std::vector<std::string> tags{"attention", "mlp", "attention"};
  const PictureModel model = build_model(p.problem, p.offsets, {.tags = tags});
  ASSERT_EQ(model.palette.size(), 2u);
  EXPECT_EQ(model.colour[0], model.colour[2]);
  EXPECT_NE(model.colour[0], model.colour[1]);
  EXPECT_EQ(model.palette[model.colour[0]], colour_for("attention"));
  EXPECT_EQ(model.palette_tags[model.colour[1]], "mlp");
  EXPECT_EQ(to_hex(Rgb{0x12, 0xab, 0x00}), "#12ab00");
}

TEST(DrawModel, TicksAreRoundAndCoverTheAxis) {
  EXPECT_EQ(time_ticks(0, 100, 10),
            (std::vector<double>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
  EXPECT_EQ(time_ticks(0, 3, 10), (std::vector<double>{0, 1, 2, 3}));  // instants are whole
  // Nanoseconds since 1970: steps of 1 are below a double's precision there; still few ticks.
  EXPECT_LE(time_ticks(1.7e18, 1.7e18 + 5, 10).size(), 42u);
  const auto bytes = byte_ticks(Bytes{3} << 30, 6);  // 3 GiB: steps of 0.5 GiB
  ASSERT_EQ(bytes.size(), 7u);
  EXPECT_EQ(bytes[1], Bytes{1} << 29);
  EXPECT_EQ(bytes.back(), Bytes{3} << 30);
}

TEST(DrawModel, SmallPlansAreNotAggregated) {
  const Plan p = testing::lanes_plan(300, 8, 1000, 1);
  const PictureModel model = build_model(p.problem, p.offsets, {});
  const Aggregation aggregation =
      aggregate(p.problem, p.offsets, model, scale_for(model, 900, 600));
  EXPECT_EQ(aggregation.alone, model.drawn);
  EXPECT_TRUE(aggregation.cells.empty());
}

// 100,000 buffers: what is drawn stays within the bound model.hpp states, and every buffer is
// either drawn or counted in a cell.
TEST(DrawModel, AggregationBoundsThePictureAt100kBuffers) {
  const Plan p = testing::lanes_plan(100'000, 64, 1 << 20, 2);
  const PictureModel model = build_model(p.problem, p.offsets, {});
  ASSERT_EQ(model.drawn.size(), 100'000u);
  const double width = 940, height = 580;
  const Aggregation aggregation =
      aggregate(p.problem, p.offsets, model, scale_for(model, width, height));
  EXPECT_LE(aggregation.alone.size(), width * height / kMinDrawnArea);
  EXPECT_LE(aggregation.cells.size(),
            (std::ceil(width / kCellPixels) + 1) * (std::ceil(height / kCellPixels) + 1));
  EXPECT_LT(aggregation.alone.size() + aggregation.cells.size(), 100'000u / 2);
  const std::size_t in_cells =
      std::accumulate(aggregation.cells.begin(), aggregation.cells.end(), std::size_t{0},
                      [](std::size_t sum, const Cell& cell) { return sum + cell.buffers; });
  EXPECT_GE(in_cells + aggregation.alone.size(), model.drawn.size());
  for (const Cell& cell : aggregation.cells) {
    EXPECT_GT(cell.covered, 0);
    EXPECT_LE(cell.covered, kCellPixels * kCellPixels);
  }
}

TEST(DrawModel, ByteTickLabelsKeepTheirUnit) {
  EXPECT_EQ(byte_tick_label(Bytes{3} << 29, Bytes{2} << 30), "1.5 GiB");
  EXPECT_EQ(byte_tick_label(0, 100), "0");
}

}  // namespace
}  // namespace memplan::draw
