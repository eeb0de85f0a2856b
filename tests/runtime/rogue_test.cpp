// Rogues keep their bytes, cost their own chunks, and are learned, so breaks and memory stay flat
// over many steps.
#include "rogue_cases.hpp"

namespace memplan::testing {
namespace {

TEST(Rogues, CacheAndPooledStatisticsOutsidePauseStayFlat) {
  Harness h;
  std::vector<Flat> history;
  run_workflow(h, 50, /*paused=*/false, &history);
  // Two new paths (the first sparse step allocates the cache, later ones do not); nothing after.
  EXPECT_LE(history.back().breaks, 2u);
  for (int s = 8; s < 50; ++s) EXPECT_EQ(history[s], history[7]) << "step " << s;
  const Stats st = h.compiler().stats();
  EXPECT_GE(st.learned_rogue_sites, 1u + kBlocks);  // the cache and each block's statistics
  EXPECT_LE(st.rogues, 1u + 2u * kBlocks);          // found once or twice per site, never per step
  EXPECT_GE(st.learned_site_allocations, 40u * kBlocks);  // later steps use the pool
  // Rogues cost their own size, not a chunk each.
  EXPECT_LE(st.live_rogue_bytes, 3u * 2048 * 64 + kBlocks * 32u * 128 * 4);
}

TEST(Rogues, ARogueCostsItsOwnChunksAndTheArenaComesBackOnceItIsFreed) {
  a_rogue_costs_its_own_chunks<Harness>();
}

TEST(Rogues, ALearnedSiteThatStopsBeingRogueIsForgotten) {
  Harness h;
  a_learned_site_that_stops_being_rogue_is_forgotten(h);
}

TEST(Rogues, InsidePauseThereAreNoRoguesAndNoExtraBreaks) {
  Harness h;
  std::vector<Flat> history;
  run_workflow(h, 50, /*paused=*/true, &history);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.rogues, 0u);
  // Sparse steps differ from dense ones only by paused allocations: the tree never breaks.
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.paused_allocations, 1u + 45u * kBlocks);
  for (int s = 6; s < 50; ++s) EXPECT_EQ(history[s], history[5]) << "step " << s;
}

TEST(Rogues, ABufferFreedOneStepLateIsLearnedWithoutABreak) {
  Harness h;
  for (int s = 0; s < 20; ++s) {
    auto step = h.compiler().step("denoise");
    if (h.is_live(7)) h.release(7);  // the previous step's buffer, one step late
    h.allocate(1, 1 << 16);
    h.allocate(7, 12345);  // kept to the next step
    h.allocate(2, 1 << 16);
    h.release(1);
    h.release(2);
  }
  h.expect_all_intact();
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);  // the recording planned around it: no break at all
  EXPECT_EQ(st.rogues, 1u);
  EXPECT_EQ(st.learned_rogue_sites, 1u);
  // Served by the pool in step 1; then the habit (freed first thing in the next step) has shown
  // and the buffer is planned in the arena (period_two_test.cpp).
  EXPECT_EQ(st.learned_site_allocations, 1u);
  EXPECT_EQ(st.period_two_outputs, 1u);
}

// Found by a random program (live_bytes_test.cpp): a learned site whose planned range lies where a
// buffer is still live because its free was skipped is served from the pool, which is right; the
// plan of the branch that step then records must not keep the site's range, or the buffer freed
// late (live to the end) and the site's range overlap and no plan exists (end_step threw).
TEST(Rogues, ALearnedSiteServedFromThePoolOverABufferFreedLateStillLetsTheStepBePlanned) {
  Harness h;
  const auto step = [&](bool skip_free_of_1, bool leak_3, bool extra) {
    Program p{alloc(1, 200'000), alloc(2, 1000)};
    if (!skip_free_of_1) p.push_back(free_(1));
    p.push_back(alloc(3, 256));  // planned inside buffer 1's range, once 1 is freed
    p.push_back(alloc(4, 4096));
    if (extra) p.push_back(alloc(5, 12'288));  // a new path: the step records a branch
    if (!leak_3) p.push_back(free_(3));
    p.push_back(free_(2));
    p.push_back(free_(4));
    if (extra) p.push_back(free_(5));
    h.run_step(p);
  };
  step(false, false, false);  // records the path
  step(false, true, false);   // 3 is a rogue: its site is learned (kept in the pool)
  h.release(3);
  step(false, false, false);  // replays, 3 from the pool
  // 1 is not freed where the path frees it: 3's planned range is held, the pool serves it; then
  // the step breaks and its branch is planned with 1 live to the end.
  ASSERT_NO_THROW(step(true, false, true));
  h.release(1);
  EXPECT_EQ(h.compiler().stats().branches, 2u);
  for (int i = 0; i < 3; ++i) step(false, false, false);  // the first path still replays
  EXPECT_EQ(h.compiler().stats().steps_replayed, 5u);     // the rogue step replayed too
  EXPECT_EQ(h.overlaps(), 0u);
  EXPECT_EQ(h.mismatches(), 0u);
}

TEST(Rogues, ARogueOfAReplayedStepIsLearnedAndThePlansMoveClearOfIt) {
  Harness h;
  const Program program{alloc(1, 1 << 16), free_(1), alloc(2, 1 << 16), free_(2)};
  for (int s = 0; s < 3; ++s) h.run_step(program);  // 1 and 2 share their bytes
  h.run_step({alloc(1, 1 << 16)});  // this time buffer 1 outlives the step: a new, shorter path
  EXPECT_EQ(h.compiler().stats().rogues, 1u);
  // Buffer 1's site is now served by the pool, and the plans moved to addresses clear of the
  // rogue, so buffer 2's planned range is free: the next step replays without a break.
  EXPECT_EQ(h.compiler().stats().window_moves, 1u);
  const Program other{alloc(3, 1 << 16), free_(3), alloc(2, 1 << 16), free_(2)};
  h.run_step(other);
  h.expect_all_intact();
  h.release(1);
  for (int s = 0; s < 5; ++s) h.run_step(other);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 1u);
  EXPECT_EQ(st.breaks_by_reason[static_cast<int>(BreakReason::UnexpectedEnd)], 1u);
  EXPECT_EQ(st.breaks_by_reason[static_cast<int>(BreakReason::RangeOccupied)], 0u);
  EXPECT_EQ(st.live_rogues, 0u);
  EXPECT_EQ(st.learned_site_allocations, 6u);
  EXPECT_EQ(st.window_moves, 1u);
}

// Learning is by site: the same tag on another path is another site, served from its own plan
// (it is freed inside its step there, so it never becomes a rogue).
TEST(Rogues, ALearnedSiteDoesNotCaptureTheSameTagOnANewPath) {
  Harness h;
  {
    auto step = h.compiler().step("denoise");
    h.allocate(1, 4096, "cache");
  }
  h.release(1);
  for (int s = 0; s < 3; ++s) {
    auto step = h.compiler().step("denoise");
    h.allocate(2, 100);  // a new path
    h.allocate(3, 4096, "cache");
    h.release(2);
    h.release(3);
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.rogues, 1u);
  EXPECT_EQ(st.learned_site_allocations, 0u);
  EXPECT_EQ(st.breaks, 1u);  // the new path, once
}

// Four steps, each freeing the previous step's buffer and keeping a new one of 4096 B at
// `alignment`: a rogue, unless its site was learned and the pool serves it. Returns the last one.
void* keep_one_buffer_per_step(Harness& h, std::size_t alignment) {
  void* kept = nullptr;
  for (int s = 0; s < 4; ++s) {
    auto step = h.compiler().step("denoise");
    h.compiler().deallocate(kept);  // nullptr at first
    kept = h.compiler().allocate(4096, {}, {}, alignment);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(kept) % alignment, 0u) << "step " << s;
  }
  return kept;
}

TEST(Rogues, ASiteThatNeedsMoreAlignmentThanThePoolIsNotLearned) {
  Harness h;
  h.compiler().deallocate(keep_one_buffer_per_step(h, 8192));
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.learned_rogue_sites, 0u);  // the pool aligns to at most 4096
  EXPECT_EQ(st.rogues, 4u);               // a rogue every step
  EXPECT_EQ(st.live_rogues, 0u);
}

TEST(Rogues, ASiteWith1024AlignmentIsLearnedAndServedAligned) {
  Harness h(Harness::outputs_in_pool());
  void* kept = keep_one_buffer_per_step(h, 1024);
  EXPECT_EQ(h.compiler().stats().pool_live_bytes, 4096u);  // the last one is in the pool
  h.compiler().deallocate(kept);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.rogues, 1u);  // a rogue once, then the pool
  EXPECT_EQ(st.learned_rogue_sites, 1u);
  EXPECT_EQ(st.learned_site_allocations, 3u);
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.live_rogues, 0u);
  EXPECT_EQ(st.pool_live_bytes, 0u);
}

TEST(Rogues, AnAlignedTagOnANewPathKeepsItsAlignmentInTheArena) {
  Harness h;
  void* first = nullptr;
  {
    auto step = h.compiler().step("denoise");
    first = h.compiler().allocate(4096, {}, "cache", 2048);  // live at the end: a rogue
  }
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 2048, 0u);
  h.compiler().deallocate(first);
  for (int s = 0; s < 3; ++s) {
    auto step = h.compiler().step("denoise");
    void* other = h.compiler().allocate(100);  // a new path: a new site, planned in the arena
    void* cache = h.compiler().allocate(4096, {}, "cache", 2048);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(cache) % 2048, 0u) << "step " << s;
    h.compiler().deallocate(other);
    h.compiler().deallocate(cache);
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.rogues, 1u);
  EXPECT_EQ(st.learned_rogue_sites, 1u);
  EXPECT_EQ(st.learned_site_allocations, 0u);
}

}  // namespace
}  // namespace memplan::testing
