// The reproducers of issue 10 as step scripts on the host backend (rogue_cases.hpp; the GPU
// twins are in gpu_compiler_test.cpp): a seen path never breaks again, and a replayed step never
// calls the backend, also after a buffer outlived its step.
#include "rogue_cases.hpp"

namespace memplan::testing {
namespace {

TEST(StepScript, ASeenPathDoesNotBreakAgainAfterARogueCameAndWent) {
  Harness h;
  seen_path_does_not_break_again_after_a_rogue_came_and_went(h);
}

TEST(StepScript, AReplayedStepMakesNoBackendCallAfterALateFree) {
  Harness h;
  replayed_step_makes_no_backend_call_after_a_late_free(h);
}

TEST(StepScript, ALearnedSiteLeakedAgainCostsItsBytesOnceAndNoCallInTheNextStep) {
  Harness h;
  learned_site_leaked_again_costs_its_bytes_once(h);
}

TEST(StepScript, LearningIsBySiteNotByTag) {
  Harness h;
  learning_is_by_site_not_by_tag(h);
}

// Found by PerturbedSteps (perturbed_steps_test.cpp), shrunk by shrink_script: a path's plan lies
// where the rogue of another path now lives, and the seen path breaks ("range held by a rogue").
TEST(StepScript, ARogueOfAnotherPathDoesNotBreakASeenPath) {
  Harness h;
  const auto steps = run_script(h, R"(
step denoise
A 1 6000 kv
F 1
end
step denoise
A 2 4096 -
end
step denoise
A 3 6000 kv
F 3
end
)");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_LE(steps[1].breaks, 1u);  // a new path
  EXPECT_EQ(steps[2].breaks, 0u);  // seen in step 0
  EXPECT_EQ(steps[2].memory_calls, 0u);
  h.expect_all_intact();
}

// Found by PerturbedSteps (seed 3), shrunk: step 2 breaks at a rogue and records a path next to
// step 0's, which shares its first two allocations and frees in another order. Step 3 follows
// step 2's path, but replay commits to step 0's branch and breaks at the free ("unexpected free").
TEST(StepScript, APathRecordedBesideASimilarOneReplays) {
  Harness h;
  const auto steps = run_script(h, R"(
step denoise
A 3 1000 -
A 4 256 x
F 3
end
F 4
step denoise
A 13 256 - @4096
end
step denoise
A 23 1000 -
F 13
A 24 256 x
F 24
F 23
end
step denoise
A 163 1000 -
A 164 256 x
F 164
F 163
end
)");
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_LE(steps[1].breaks, 1u);  // new paths
  EXPECT_LE(steps[2].breaks, 1u);
  EXPECT_EQ(steps[3].breaks, 0u);  // seen in step 2
  EXPECT_EQ(steps[3].memory_calls, 0u);
  EXPECT_TRUE(seen_path_failures(steps).empty());
  h.expect_all_intact();
}

// Found by perturbed_steps_bench (1,000,000 steps, seed 1), shrunk: step 4 follows step 0's path,
// but a rogue (3042) holds the plan of its second allocation; replay falls to the sibling that
// step 2 recorded beside it and breaks where that one goes on differently ("unknown allocation").
TEST(StepScript, ASeenPathUnderARogueDoesNotFollowASiblingsPath) {
  Harness h;
  const auto steps = run_script(h, R"(
step denoise
A 2401 4096 -
A 2402 16384 kv P
A 2403 65536 x
F 2403
F 2402
A 2407 65536 -
F 2407
F 2401
end
step denoise
A 2618 256 kv
end
step denoise
A 2621 4096 -
A 2623 65536 x
F 2623
F 2621
end
F 2618
step denoise
A 3042 16384 x
end
step denoise
A 3051 4096 -
A 3052 16384 kv P
A 3053 65536 x
F 3053
F 3042
F 3052
A 3057 65536 -
F 3057
F 3051
end
)");
  ASSERT_EQ(steps.size(), 5u);
  for (std::size_t s = 1; s < 4; ++s) EXPECT_LE(steps[s].breaks, 1u) << "step " << s;  // new paths
  EXPECT_EQ(steps[4].breaks, 0u);  // seen in step 0
  EXPECT_EQ(steps[4].memory_calls, 0u);
  EXPECT_TRUE(seen_path_failures(steps).empty());
  h.expect_all_intact();
}

}  // namespace
}  // namespace memplan::testing
