// The chunk the pool lends (window_home.cpp): with no rogue live, the plans start past the pool's
// bytes in the pool's last chunk, which the planned arena maps as its first, whenever that saves
// the arena a chunk. The two views alias one physical chunk, so every test checks that the pool's
// buffers and the plans' keep their bytes (the harness's fill patterns).
#include "step_program.hpp"

namespace memplan::testing {
namespace {

constexpr std::size_t kChunk = std::size_t{2} << 20;  // Harness::small_options(), arena and pool
constexpr std::size_t kKiB = 1024;

// A plan of about `bytes`: two buffers live together.
Program plan_of(std::size_t bytes) {
  return {alloc(1, bytes / 2), alloc(2, bytes - bytes / 2), free_(1), free_(2)};
}

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST(WindowHome, PlansStartPastThePoolsBytesInItsLastChunkAndSaveTheArenaAChunk) {
  Harness h;
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);  // the model's weights, in the pool
  h.run_step(plan_of(1600 * kKiB));                  // recorded, planned: the window goes home
  const std::vector<void*> replayed = h.run_step(plan_of(1600 * kKiB));
  h.expect_all_intact();
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.steps_replayed, 1u);
  EXPECT_EQ(st.window_moves, 1u);
  ASSERT_GT(st.pool_lent_bytes, 0u);
  EXPECT_LE(st.pool_lent_bytes, kChunk - 300 * kKiB);
  EXPECT_GE(st.pool_lent_bytes, st.planned_peak_bytes);  // the whole plan fits the loan
  EXPECT_EQ(st.mapped_bytes, 0u);                        // no chunk of the arena's own
  EXPECT_EQ(st.pool_mapped_bytes, kChunk);
  const std::uintptr_t start = address(h.compiler().arena_base()) + (kChunk - st.pool_lent_bytes);
  for (void* p : replayed) {
    EXPECT_GE(address(p), start);
    EXPECT_LT(address(p), address(h.compiler().arena_base()) + kChunk);
  }
  EXPECT_NE(h.compiler().report().find("lent to the plans"), std::string::npos);

  CompilerOptions apart = Harness::small_options();
  apart.share_pool_chunk = false;
  Harness control(apart);
  control.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  control.run_step(plan_of(1600 * kKiB));
  control.run_step(plan_of(1600 * kKiB));
  EXPECT_EQ(control.compiler().stats().mapped_bytes, kChunk);
  EXPECT_EQ(control.compiler().stats().pool_lent_bytes, 0u);
  EXPECT_EQ(control.compiler().stats().window_moves, 0u);
}

TEST(WindowHome, ReplayedStepsMakeNoBackendCallWithALoanOutAndALearnedSiteInThePool) {
  Harness h;
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  const Program leaky = {alloc(1, 800 * kKiB), alloc(2, 700 * kKiB), alloc(3, 64 * kKiB), free_(1),
                         free_(2)};  // 3 outlives the step: a learned pool site
  for (int s = 0; s < 4; ++s) {
    h.run_step(leaky);
    h.release(3);
  }
  // The first step's buffer 3 was a rogue: the window moved clear of it, to the next chunk, with
  // the loan there.
  const Stats warm = h.compiler().stats();
  ASSERT_GT(warm.pool_lent_bytes, 0u);
  ASSERT_GE(warm.learned_rogue_sites, 1u);
  for (int s = 0; s < 20; ++s) {
    h.run_step(leaky);
    h.release(3);
  }
  h.expect_all_intact();
  const Stats st = h.compiler().stats();
  EXPECT_EQ((st.backend_calls - warm.backend_calls).memory_calls(), 0u);
  EXPECT_EQ(st.breaks, warm.breaks);
  EXPECT_EQ(st.pool_lent_bytes, warm.pool_lent_bytes);
}

TEST(WindowHome, TheLoanFollowsThePlansAsTheyGrowAndEndsWhenItSavesNothing) {
  Harness h;
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  h.run_step(plan_of(1 * kChunk / 2), "small");
  Stats st = h.compiler().stats();
  ASSERT_GT(st.pool_lent_bytes, 0u);
  EXPECT_EQ(st.mapped_bytes, 0u);

  // 1.9 MiB leave 100 KiB in the plans' last chunk, less than the pool's 300 KiB: no loan.
  h.run_step(plan_of(1900 * kKiB), "larger");
  st = h.compiler().stats();
  EXPECT_EQ(st.pool_lent_bytes, 0u);
  EXPECT_EQ(st.mapped_bytes, kChunk);
  EXPECT_EQ(st.window_moves, 2u);

  // 3.5 MiB leave 512 KiB: a loan again, and one chunk of the arena's own instead of two.
  h.run_step(plan_of(3584 * kKiB), "largest");
  st = h.compiler().stats();
  EXPECT_GT(st.pool_lent_bytes, 300 * kKiB);
  EXPECT_EQ(st.window_moves, 3u);
  for (const char* name : {"small", "larger", "largest", "small"}) {
    h.run_step(name == std::string("small")    ? plan_of(kChunk / 2)
               : name == std::string("larger") ? plan_of(1900 * kKiB)
                                               : plan_of(3584 * kKiB),
               name);
  }
  h.expect_all_intact();
  st = h.compiler().stats();
  EXPECT_EQ(st.mapped_bytes, kChunk);
  EXPECT_EQ(st.window_moves, 3u);  // replays move nothing
  EXPECT_EQ(st.steps_replayed, 4u);
}

TEST(WindowHome, ARogueInThePoolsChunkKeepsItsBytesAndTheLoanUntilItIsFreed) {
  Harness h;
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  h.run_step(plan_of(kChunk / 2));
  ASSERT_GT(h.compiler().stats().pool_lent_bytes, 0u);
  // A step whose first buffer outlives it: planned at the window's start, inside the lent bytes.
  h.run_step({alloc(50, kChunk / 4), alloc(2, kChunk / 4), free_(2)});
  Stats st = h.compiler().stats();
  ASSERT_EQ(st.live_rogues, 1u);
  EXPECT_GT(st.pool_lent_bytes, 0u);  // the rogue lives in the pool's chunk
  for (int s = 0; s < 3; ++s) h.run_step(plan_of(kChunk / 2), "other");
  h.expect_all_intact();
  h.release(50);
  // No rogue live: home again, past the pool's weights and the room it keeps for the learned
  // site's next buffer (kChunk / 4); the plans, at most kChunk / 2, fit the rest of the chunk.
  h.run_step(plan_of(kChunk / 4), "third");
  h.run_step(plan_of(kChunk / 4), "third");
  h.expect_all_intact();
  st = h.compiler().stats();
  EXPECT_EQ(st.live_rogues, 0u);
  EXPECT_GT(st.pool_lent_bytes, 0u);
  EXPECT_EQ(st.mapped_bytes, 0u);
}

TEST(WindowHome, ReleaseEndsAnUnusedLoanSoThePoolCanTrimItsChunk) {
  Harness h;
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  h.run_step(plan_of(kChunk / 2));
  ASSERT_GT(h.compiler().stats().pool_lent_bytes, 0u);
  h.release(100);
  h.compiler().trim();  // the plans keep the loan: the pool keeps its chunk
  EXPECT_EQ(h.compiler().stats().pool_mapped_bytes, kChunk);
  h.compiler().release();  // the plans let go of it
  h.compiler().trim();
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.pool_lent_bytes, 0u);
  EXPECT_EQ(st.pool_mapped_bytes, 0u);
  EXPECT_EQ(st.mapped_bytes, 0u);
  h.run_step(plan_of(kChunk / 2));  // the window stays inside a chunk, now the arena's own
  h.expect_all_intact();
  EXPECT_EQ(h.compiler().stats().mapped_bytes, kChunk);
}

TEST(WindowHome, SettleSendsThePlansHomeOnceTheRoguesAreFreedAndReplaysStayOffTheBackend) {
  Harness h;
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  // The first step's buffer 50 outlives it (a rogue at the window's start): the window moves
  // clear of it, and the loan cannot follow (the rogue lives in the loan's chunk).
  h.run_step({alloc(50, kChunk / 4), alloc(2, kChunk / 4), free_(2)}, "first");
  h.run_step(plan_of(kChunk / 2), "work");
  ASSERT_EQ(h.compiler().stats().live_rogues, 1u);
  EXPECT_FALSE(h.compiler().settle());  // a rogue lives in the arena: nothing moves
  const Stats away = h.compiler().stats();
  EXPECT_EQ(away.mapped_bytes, kChunk);
  h.release(50);
  h.run_step(plan_of(kChunk / 2), "work");  // a replay: the window stays where it is
  EXPECT_EQ(h.compiler().stats().window_moves, away.window_moves);

  EXPECT_TRUE(h.compiler().settle());
  const Stats home = h.compiler().stats();
  EXPECT_EQ(home.window_moves, away.window_moves + 1);
  EXPECT_GT(home.pool_lent_bytes, 0u);
  EXPECT_EQ(home.mapped_bytes, 0u);     // the plan fits the lent chunk
  EXPECT_FALSE(h.compiler().settle());  // home already
  for (int s = 0; s < 5; ++s) h.run_step(plan_of(kChunk / 2), "work");
  h.expect_all_intact();
  const Stats st = h.compiler().stats();
  EXPECT_EQ((st.backend_calls - home.backend_calls).memory_calls(), 0u);
  EXPECT_EQ(st.steps_replayed, home.steps_replayed + 5);
  EXPECT_EQ(st.window_moves, home.window_moves);
}

TEST(WindowHome, SettleDoesNothingWithoutTheOptionAndRefusesARunningStep) {
  CompilerOptions apart = Harness::small_options();
  apart.share_pool_chunk = false;
  Harness h(apart);
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  h.run_step({alloc(50, kChunk / 4), alloc(2, kChunk / 4), free_(2)}, "first");
  h.release(50);
  const Stats before = h.compiler().stats();
  EXPECT_FALSE(h.compiler().settle());
  EXPECT_EQ(h.compiler().stats().window_moves, before.window_moves);
  EXPECT_EQ(h.compiler().stats().backend_calls.memory_calls(), before.backend_calls.memory_calls());

  Harness on;
  auto step = on.compiler().step("running");
  EXPECT_THROW((void)on.compiler().settle(), InvalidState);
}

}  // namespace
}  // namespace memplan::testing
