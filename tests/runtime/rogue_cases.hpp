// Issue 10's cases as functions of the harness, so that the host tests (step_script_test.cpp,
// rogue_test.cpp) and the GPU tests (gpu_compiler_test.cpp) check the same promises: a seen path
// never breaks again, a replayed step never calls the backend (also after a late free), learning
// is by site, and a rogue costs its own chunks.
#pragma once

#include "step_script.hpp"
#include "workflows.hpp"

namespace memplan::testing {

template <class H>
void seen_path_does_not_break_again_after_a_rogue_came_and_went(H& h) {
  const auto steps = run_script(h, R"(
step denoise
A 1 1048576 x
A 2 1048576 n
F 2
A 3 1048576 d
F 3
F 1
end
step denoise
A 11 1048576 x
A 14 4096 cache
A 12 1048576 n
F 12
A 15 1048576 s
F 15
F 11
end
step denoise
A 21 1048576 x
A 22 1048576 n
F 22
A 25 1048576 s
F 25
F 21
end
F 14
step denoise
A 31 1048576 x
A 32 1048576 n
F 32
A 33 1048576 d
F 33
F 31
end
step denoise
A 41 1048576 x
A 42 1048576 n
F 42
A 43 1048576 d
F 43
F 41
end
)");
  ASSERT_EQ(steps.size(), 5u);
  const std::vector<std::uint64_t> expected{0, 1, 1, 0,
                                            0};  // new paths once each, seen paths never
  for (std::size_t s = 0; s < steps.size(); ++s)
    EXPECT_EQ(steps[s].breaks, expected[s]) << "step " << s;
  h.expect_all_intact();
}

template <class H>
void replayed_step_makes_no_backend_call_after_a_late_free(H& h) {
  const auto steps = run_script(h, R"(
step denoise
A 1 1048576 x
F 1
end
step denoise
A 2 1048576 x
end
F 2
step denoise
A 3 1048576 x
F 3
end
step denoise
A 4 1048576 x
F 4
end
)");
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[2].memory_calls, 0u);
  EXPECT_EQ(steps[3].memory_calls, 0u);
  // The late free is no break: the step passes the path's Free node with the buffer live.
  const std::vector<std::uint64_t> breaks{0, 0, 0, 0};
  for (std::size_t s = 0; s < steps.size(); ++s)
    EXPECT_EQ(steps[s].breaks, breaks[s]) << "step " << s;
}

// A learned site leaked again: its buffer stays in the pool, so the next step's allocation there
// needs a block of its own. The end of the step that leaked it maps that room (the leak's cost,
// its bytes, once); the steps after make no backend call.
template <class H>
void learned_site_leaked_again_costs_its_bytes_once(H& h) {
  const auto steps = run_script(h, R"(
step denoise
A 1 2097152 x
F 1
end
step denoise
A 2 2097152 x
end
step denoise
A 3 2097152 x
end
step denoise
A 4 2097152 x
F 4
end
F 2
F 3
step denoise
A 5 2097152 x
F 5
end
)");
  ASSERT_EQ(steps.size(), 5u);
  const std::vector<std::uint64_t> breaks{0, 0, 0, 0, 0};  // leaks pass the Free node late
  for (std::size_t s = 0; s < steps.size(); ++s)
    EXPECT_EQ(steps[s].breaks, breaks[s]) << "step " << s;
  EXPECT_EQ(steps[3].memory_calls, 0u);  // 3 is still live in the pool: 4 takes the room mapped
  EXPECT_EQ(steps[4].memory_calls, 0u);
  EXPECT_LE(h.compiler().stats().pool_mapped_bytes, 2u * 2097152);  // 3 and 4, no more
  h.expect_all_intact();
}

template <class H>
void learning_is_by_site_not_by_tag(H& h) {
  // One `x` freed a step late must not send every later `x` of the step to the pool.
  const auto steps = run_script(h, R"(
step denoise
A 1 65536 x
F 1
A 2 65536 x
F 2
end
step denoise
A 3 65536 x
F 3
A 4 65536 x
end
F 4
step denoise
A 5 65536 x
A 7 4096 y
F 7
F 5
A 6 65536 x
F 6
end
)");
  ASSERT_EQ(steps.size(), 3u);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.learned_rogue_sites, 1u);
  // The third step breaks at `y` and records: its second `x` is a new site, served in the arena.
  EXPECT_EQ(st.learned_site_allocations, 0u);
  h.expect_all_intact();
}

// Issue 10: a rogue costs at most its own bytes rounded up to the chunk, once per site. The
// field's workflow at 16k tokens (a plan of many chunks, statistics spread over them): the rogue
// run maps at most that much more than the paused run, and once the rogues are freed, trim()
// brings the arena back to the paused run's level to the byte.
// A site learned after its plan placed it, and then freed inside its step 8 times in a row, has
// stopped being a rogue: it is forgotten and served from the plan again, without a break or a
// backend call, and the bytes of every buffer stay intact.
template <class H>
void a_learned_site_that_stops_being_rogue_is_forgotten(H& h) {
  const Program program{alloc(1, 65536), alloc(2, 4096), free_(2), free_(1)};
  for (int s = 0; s < 3; ++s) h.run_step(program);
  // 1 outlives the step: the path's Free node for it is passed late, the step replays.
  h.run_step({alloc(1, 65536), alloc(2, 4096), free_(2)});
  h.release(1);
  for (int s = 0; s < 8; ++s) h.run_step(program);  // served from the pool, freed in the step
  const Stats learned = h.compiler().stats();
  EXPECT_EQ(learned.learned_rogue_sites, 1u);
  EXPECT_EQ(learned.forgotten_rogue_sites, 1u);
  EXPECT_EQ(learned.learned_site_allocations, 8u);
  const std::uint64_t calls = h.backend().calls().memory_calls();
  for (int s = 0; s < 5; ++s) h.run_step(program);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.learned_site_allocations, 8u);  // none since it was forgotten
  EXPECT_EQ(st.replayed_allocations - learned.replayed_allocations, 10u);
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(h.backend().calls().memory_calls(), calls);
  h.expect_all_intact();
}

template <class H>
void a_rogue_costs_its_own_chunks() {
  constexpr std::size_t kTokens = 16384;
  H paused;
  run_workflow(paused, 20, /*paused=*/true, nullptr, kTokens);
  H rogue;
  run_workflow(rogue, 20, /*paused=*/false, nullptr, kTokens);
  const Stats p = paused.compiler().stats();
  const Stats r = rogue.compiler().stats();
  const std::size_t chunk = rogue.compiler().options().chunk_bytes;
  const auto chunks_of = [&](std::size_t bytes) { return (bytes + chunk - 1) / chunk * chunk; };
  const std::size_t allowance =
      chunks_of(3 * kTokens * 64) + kBlocks * chunks_of(32 * 128 * 4) + chunk;
  EXPECT_EQ(r.planned_peak_bytes, p.planned_peak_bytes);  // no plan works around a rogue
  EXPECT_GE(r.window_moves, 1u);
  EXPECT_LE(r.mapped_bytes + r.pool_mapped_bytes, p.mapped_bytes + p.pool_mapped_bytes + allowance)
      << rogue.compiler().report();
  // The rogues' own chunks, not the plan, are what the arena holds beyond the plan.
  EXPECT_LE(r.mapped_bytes,
            chunks_of(r.planned_peak_bytes) + chunks_of(r.live_rogue_bytes) + kBlocks * chunk);

  rogue.release(kRope);
  for (int b = 0; b < kBlocks; ++b) rogue.release(kStatsBase + b);
  paused.release(kRope);
  for (int b = 0; b < kBlocks; ++b) paused.release(kStatsBase + b);
  rogue.compiler().trim();
  paused.compiler().trim();
  EXPECT_EQ(rogue.compiler().stats().live_rogues, 0u);
  EXPECT_EQ(rogue.compiler().stats().mapped_bytes, paused.compiler().stats().mapped_bytes);
  EXPECT_EQ(rogue.compiler().stats().mapped_bytes, chunks_of(r.planned_peak_bytes));
}

}  // namespace memplan::testing
