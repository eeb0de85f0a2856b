// end_step() says what the step did: recorded, replayed or dynamic, on which branch, with which
// break; step_so_far() says the same of the running step. Each agrees with the Stats counters.
#include "step_program.hpp"

namespace memplan::testing {
namespace {

StepResult run_one(Compiler& c, std::initializer_list<std::size_t> sizes) {
  c.begin_step("step");
  for (const std::size_t bytes : sizes) c.deallocate(c.allocate(bytes));
  return c.end_step();
}

TEST(StepResult, SaysRecordedThenReplayedThenWhereItBroke) {
  Harness h;
  Compiler& c = h.compiler();
  const StepResult first = run_one(c, {4096, 8192});
  EXPECT_EQ(first.kind, StepKind::Recorded);
  EXPECT_FALSE(first.break_reason);  // the first run records, and that is no break
  EXPECT_EQ(first.branch, 0u);
  EXPECT_EQ(first.events, 4u);
  EXPECT_EQ(first.recorded_allocations, 2u);

  const StepResult second = run_one(c, {4096, 8192});
  EXPECT_TRUE(second.replayed());
  EXPECT_EQ(second.step, first.step + 1);
  EXPECT_EQ(second.branch, 0u);
  EXPECT_EQ(second.events, 4u);
  EXPECT_EQ(second.recorded_allocations, 0u);
  EXPECT_EQ(second.rogues, 0u);

  const StepResult third = run_one(c, {4096, 1024});  // the second size breaks
  EXPECT_EQ(third.kind, StepKind::Recorded);
  EXPECT_EQ(third.break_reason, BreakReason::UnknownAllocation);
  EXPECT_EQ(third.branch, 1u);
  EXPECT_EQ(third.recorded_allocations, 1u);
  EXPECT_EQ(c.stats().steps_replayed, 1u);
  EXPECT_EQ(c.stats().breaks, 1u);
}

TEST(StepResult, StepSoFarFollowsTheRunningStep) {
  Harness h;
  Compiler& c = h.compiler();
  EXPECT_FALSE(c.step_so_far());
  run_one(c, {4096});
  c.begin_step("step");
  void* p = c.allocate(4096);
  ASSERT_TRUE(c.step_so_far());
  EXPECT_TRUE(c.step_so_far()->replayed());
  EXPECT_EQ(c.step_so_far()->events, 1u);
  EXPECT_FALSE(c.step_so_far()->branch);  // known at the end only
  void* q = c.allocate(512);              // not on the path: a break
  EXPECT_EQ(c.step_so_far()->kind, StepKind::Recorded);
  EXPECT_EQ(c.step_so_far()->recorded_allocations, 1u);
  c.deallocate(q);
  c.deallocate(p);
  EXPECT_EQ(c.end_step().break_reason, BreakReason::UnknownAllocation);
  EXPECT_FALSE(c.step_so_far());
}

TEST(StepResult, CountsRoguesAndDynamicSteps) {
  CompilerOptions options = Harness::small_options();
  options.branch_cap = 1;
  options.over_cap = OverCapPolicy::Dynamic;
  Harness h(options);
  Compiler& c = h.compiler();
  run_one(c, {4096});
  c.begin_step("step");
  void* kept = c.allocate(2048);  // a break past the cap, and live at the end: a rogue
  const StepResult dynamic = c.end_step();
  EXPECT_EQ(dynamic.kind, StepKind::Dynamic);
  EXPECT_EQ(dynamic.break_reason, BreakReason::UnknownAllocation);
  EXPECT_FALSE(dynamic.branch);
  EXPECT_EQ(dynamic.rogues, 1u);
  EXPECT_EQ(to_string(dynamic.kind), "dynamic");
  c.deallocate(kept);
}

}  // namespace
}  // namespace memplan::testing
