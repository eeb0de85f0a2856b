// Paths that diverge cost one break each the first time they are seen and none after, whatever
// the number of steps; frees in another order than recorded cost none.
#include "step_program.hpp"

namespace memplan::testing {
namespace {

std::uint64_t breaks(Harness& h) { return h.compiler().stats().breaks; }

TEST(Divergence, ScheduleWindowCostsOneBreakThenNone) {
  Harness h;
  for (int s = 0; s < 50; ++s) h.run_step(dit_step(8, 4096, /*sparse=*/s >= 5));
  EXPECT_EQ(breaks(h), 1u);
  const auto log = h.compiler().breaks();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].step, 5u);
  EXPECT_EQ(log[0].reason, BreakReason::UnknownAllocation);
  EXPECT_NE(log[0].came.find("tag 'kv_idx'"), std::string::npos) << log[0].came;
  EXPECT_NE(log[0].expected.find("alloc 524288 B"), std::string::npos) << log[0].expected;
  for (int s = 0; s < 50; ++s) h.run_step(dit_step(8, 4096, s >= 5));  // the same run again
  EXPECT_EQ(breaks(h), 1u);
  EXPECT_EQ(h.compiler().stats().branches, 2u);
}

TEST(Divergence, SecondPassAtAnotherTokenCountThenBack) {
  Harness h;
  for (int round = 0; round < 3; ++round) {
    for (int s = 0; s < 10; ++s) h.run_step(dit_step(6, 4096));
    for (int s = 0; s < 10; ++s) h.run_step(dit_step(6, 8192));  // the tiled high-res pass
    EXPECT_EQ(breaks(h), 1u) << "round " << round;
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.branches, 2u);
  EXPECT_EQ(st.steps_recorded, 2u);
  EXPECT_EQ(st.steps_replayed, 58u);
  EXPECT_EQ(h.compiler().breaks()[0].event, 0u);  // all sizes differ: the first event breaks
}

// Frees match in any order: one that comes before the path has it is settled where the path
// frees it. No break, no new branch, the same bytes.
TEST(Divergence, FreesInAnotherOrderAreNotABreak) {
  Harness h;
  const Program in_order{alloc(1, 4096), alloc(2, 4096), free_(1), free_(2)};
  const Program reversed{alloc(1, 4096), alloc(2, 4096), free_(2), free_(1)};
  const Program early{alloc(1, 4096), free_(1), alloc(2, 4096), free_(2)};
  for (int i = 0; i < 3; ++i) h.run_step(in_order);
  for (int i = 0; i < 3; ++i) h.run_step(reversed);
  EXPECT_EQ(breaks(h), 0u);
  EXPECT_EQ(h.compiler().stats().frees_out_of_order, 3u);
  for (int i = 0; i < 5; ++i) {
    h.run_step(in_order);
    h.run_step(reversed);
    h.run_step(early);  // 1 freed before 2 is allocated: early too
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.branches, 1u);
  EXPECT_EQ(st.frees_out_of_order, 3u + 5u + 2u * 5u);  // early: 2 comes before the path frees 1
}

// A free that comes later than the path has it, after an allocation the plan put on its bytes, is
// a new path: it breaks once, and from then on both orders replay.
TEST(Divergence, AFreeAfterTheNextAllocationBreaksOnceThenReplays) {
  Harness h;
  const Program on_time{alloc(1, 4096), free_(1), alloc(2, 4096), free_(2)};
  const Program late{alloc(1, 4096), alloc(2, 4096), free_(1), free_(2)};
  for (int i = 0; i < 2; ++i) h.run_step(on_time);
  h.run_step(late);
  EXPECT_EQ(breaks(h), 1u);
  for (int i = 0; i < 5; ++i) {
    h.run_step(late);
    h.run_step(on_time);
  }
  EXPECT_EQ(breaks(h), 1u);
  EXPECT_EQ(h.compiler().stats().branches, 2u);
}

TEST(Divergence, AStepThatEndsEarlyBreaksOnce) {
  Harness h;
  const Program full{alloc(1, 4096), free_(1), alloc(2, 8192), free_(2)};
  const Program prefix{alloc(1, 4096), free_(1)};
  h.run_step(full);
  h.run_step(prefix);
  h.run_step(prefix);
  h.run_step(full);
  EXPECT_EQ(breaks(h), 1u);
  EXPECT_EQ(h.compiler().breaks()[0].reason, BreakReason::UnexpectedEnd);
}

TEST(Divergence, EachStepNameHasItsOwnTree) {
  Harness h;
  for (int i = 0; i < 4; ++i) {
    h.run_step(dit_step(2, 1024), "encode");
    h.run_step(dit_step(4, 4096), "denoise");
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.steps_recorded, 2u);
  EXPECT_EQ(st.steps_replayed, 6u);
}

TEST(Divergence, ScopesNameWhereABreakHappened) {
  Harness h;
  const auto run = [&](std::size_t size) {
    auto step = h.compiler().step("denoise");
    auto block = h.compiler().scope("block.3");
    auto attention = h.compiler().scope("attention");
    h.compiler().deallocate(h.compiler().allocate(size));
  };
  run(1024);
  run(2048);
  ASSERT_EQ(h.compiler().breaks().size(), 1u);
  EXPECT_EQ(h.compiler().breaks()[0].scope, "denoise/block.3/attention");
}

}  // namespace
}  // namespace memplan::testing
