// Aborted steps on the host (abort_cases.hpp): an exception before any event of a step leaves
// memory at its pre-step level to the byte — the compiler's counts and the limit's used bytes —
// and the next steps replay the known path without a break.
#include "abort_cases.hpp"
#include "limited_host.hpp"

namespace memplan::testing {
namespace {

void check_scenario(const std::string& name) {
  for (const AbortScenario& scenario : abort_scenarios<LimitedHarness>()) {
    if (scenario.name == name) return check_aborts_at_every_event<LimitedHarness>(scenario);
  }
  FAIL() << "test bug: no scenario '" << name << "'";
}

TEST(Abort, WhileRecordingMemoryReturnsToThePreStepLevel) { check_scenario("recording"); }
TEST(Abort, WhileReplayingMemoryReturnsToThePreStepLevel) { check_scenario("replaying"); }
TEST(Abort, WithARogueLiveMemoryReturnsToThePreStepLevel) { check_scenario("with a rogue live"); }
TEST(Abort, AfterAGraphBreakMemoryReturnsToThePreStepLevel) {
  check_scenario("after a graph break");
}
TEST(Abort, PastTheBranchCapMemoryReturnsToThePreStepLevel) {
  check_scenario("past the branch cap");
}
TEST(Abort, AtALearnedRogueSiteMemoryReturnsToThePreStepLevel) {
  check_scenario("at a learned rogue site");
}

}  // namespace
}  // namespace memplan::testing
