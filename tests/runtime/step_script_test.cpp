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

}  // namespace
}  // namespace memplan::testing
