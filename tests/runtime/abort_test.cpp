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
TEST(Abort, AfterABreakMemoryReturnsToThePreStepLevel) { check_scenario("after a break"); }
TEST(Abort, PastTheBranchCapMemoryReturnsToThePreStepLevel) {
  check_scenario("past the branch cap");
}
TEST(Abort, AtALearnedRogueSiteMemoryReturnsToThePreStepLevel) {
  check_scenario("at a learned rogue site");
}

// Buffers the caller keeps past the abort are rogues: their bytes stay, they are counted but their
// sites are not learned, and the plans move clear of them, so the next step replays without a
// break. Freed and trimmed, the arena is back at the plan's chunks.
TEST(Abort, BuffersTheCallerKeepsAreRoguesUntilFreed) {
  LimitedHarness h;
  for (int s = 0; s < 2; ++s) h.run_step(kAbortProgram);
  const MemoryLevel before = memory_level(h);
  try {
    auto step = h.compiler().step("denoise");
    h.allocate(11, 4096);  // buffers 1 and 2 of kAbortProgram, kept by the caller
    h.allocate(12, 8192);
    throw ModelFailed();
  } catch (const ModelFailed&) {
  }
  Stats st = h.compiler().stats();
  EXPECT_EQ(st.live_rogues, 2u);
  EXPECT_EQ(st.live_rogue_bytes, 4096u + 8192u);
  EXPECT_EQ(st.learned_rogue_sites, 0u);
  EXPECT_EQ(st.window_moves, 1u);
  h.run_step(kAbortProgram);  // the plans moved clear of the rogues: no break
  h.expect_all_intact();
  st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);
  h.release(11);
  h.release(12);
  h.compiler().trim();
  const MemoryLevel after = memory_level(h);
  EXPECT_EQ(after.live_rogues, before.live_rogues);
  EXPECT_EQ(after.live_rogue_bytes, before.live_rogue_bytes);
  EXPECT_EQ(after.pool_allocated, before.pool_allocated);
  EXPECT_LE(after.mapped,
            h.compiler().stats().planned_peak_bytes + h.compiler().options().chunk_bytes);
  EXPECT_EQ(after.mapped, before.mapped);
  for (int s = 0; s < 2; ++s) h.run_step(kAbortProgram);
  EXPECT_EQ(h.compiler().stats().breaks, 0u);
}

}  // namespace
}  // namespace memplan::testing
