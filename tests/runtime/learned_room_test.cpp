// The pool's room for learned sites (src/runtime/learned_sites.hpp): as many blocks as the
// caller's habit keeps live, plus one; backend calls only where the habit changes. Outputs stay in
// the pool here (no period-two placement: period_two_test.cpp).
#include <random>

#include "step_program.hpp"

namespace memplan::testing {
namespace {

constexpr std::size_t kOut = std::size_t{4} << 20;  // whole pool chunks: rooms are countable

// One step: temporaries, then the output (kept past the step, as a model's return value).
void* output_step(Harness& h, int out_id) {
  auto step = h.compiler().step("forward");
  h.allocate(1, 3 << 20);
  h.allocate(2, 1 << 20);
  h.release(1);
  void* out = h.allocate(out_id, kOut);
  h.release(2);
  return out;
}

std::uint64_t memory_calls(Harness& h) { return h.compiler().stats().backend_calls.memory_calls(); }

// `out = model(x)`, the previous output dropped once the new one exists: two outputs are live at
// each step's end, one is freed before the next, so two rooms serve every later step (the rule
// "one more than is live" kept a third: a whole logits tensor of a language model).
TEST(LearnedRoom, ALoopThatKeepsEachOutputUntilTheNextExistsHoldsTwoRoomsNotThree) {
  Harness h(Harness::outputs_in_pool());
  std::uint64_t calls_after_warm_up = 0;
  for (int s = 0; s < 16; ++s) {
    output_step(h, 100 + s);
    if (s > 0) h.release(100 + s - 1);
    if (s == 3) calls_after_warm_up = memory_calls(h);
  }
  h.expect_all_intact();
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.learned_rogue_sites, 1u);
  EXPECT_EQ(st.pool_mapped_bytes, 2 * kOut);
  EXPECT_EQ(memory_calls(h), calls_after_warm_up) << "steady steps made backend calls";
}

// The caller keeps every output from step 6 on: step 7 finds no room and grows the pool (the one
// cost of the changed habit); from then on each step's end maps the next room, as for any step
// that leaves a buffer live, and no step body maps anything.
TEST(LearnedRoom, ACallerThatStartsKeepingEveryOutputPaysOnceInsideAStepThenAtStepEnds) {
  Harness h(Harness::outputs_in_pool());
  for (int s = 0; s < 14; ++s) {
    const std::uint64_t before = memory_calls(h);
    {
      auto step = h.compiler().step("forward");
      h.allocate(1, 3 << 20);
      h.allocate(100 + s, kOut);
      h.release(1);
      const std::uint64_t in_body = memory_calls(h) - before;
      if (s >= 3 && s != 7) {
        EXPECT_EQ(in_body, 0u) << "step " << s;
      }
      if (s == 7) {
        EXPECT_GT(in_body, 0u) << "the changed habit should cost step 7 a growth";
      }
    }
    if (s > 0 && s < 6) h.release(100 + s - 1);
  }
  h.expect_all_intact();
  // Outputs 5..13 are live: 9 rooms, and one more mapped for the next step.
  EXPECT_EQ(h.compiler().stats().pool_mapped_bytes, 10 * kOut);
}

// Random habits: the caller keeps the last k outputs, k changing now and then. Nothing is ever
// overwritten, the pool never holds more than one room beyond the most outputs ever live at a
// step's end, and a step body grows the pool only right after k rose.
TEST(LearnedRoom, RandomHabitsNeverCorruptAndMapRoomOnlyWhereTheHabitGrew) {
  for (unsigned seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    Harness h(Harness::outputs_in_pool());
    std::mt19937 rng(seed);
    std::vector<int> kept;
    int keep = 1;
    std::size_t most_live = 0;
    bool grew_since_last_step = false;
    std::size_t dropped_last = 0;
    for (int s = 0; s < 60; ++s) {
      const std::uint64_t before = memory_calls(h);
      {
        auto step = h.compiler().step("forward");
        h.allocate(1, 2 << 20);
        h.allocate(1000 + s, kOut);
        h.release(1);
        const std::uint64_t in_body = memory_calls(h) - before;
        if (s >= 3 && !grew_since_last_step) {
          EXPECT_EQ(in_body, 0u) << "step " << s;
        }
      }
      kept.push_back(1000 + s);
      most_live = std::max(most_live, kept.size());
      if (rng() % 8 == 0) keep = 1 + static_cast<int>(rng() % 4);
      const std::size_t live_before = kept.size();
      while (static_cast<int>(kept.size()) > keep) {
        h.release(kept.front());
        kept.erase(kept.begin());
      }
      // The habit grew when fewer outputs were dropped than after the step before.
      const std::size_t dropped = live_before - kept.size();
      grew_since_last_step = s == 0 || dropped < dropped_last;
      dropped_last = dropped;
      h.expect_all_intact();
    }
    EXPECT_LE(h.compiler().stats().pool_mapped_bytes, (most_live + 1) * kOut);
  }
}

}  // namespace
}  // namespace memplan::testing
