// Issue 10's randomized differential run at length: the perturbed steps of
// tests/runtime/perturbed_steps.hpp (random base programs, skipped allocations, changed sizes,
// swapped frees, leaks past `end` freed between or inside later steps, allocations moved into or
// out of pauses) on the host backend, checked by the tests' shadow model. One iteration is one
// step; the counters are the test's: a correct compiler shows 0 overlaps, 0 mismatches, 0 breaks
// and 0 memory calls on seen paths.
//
//   perturbed_steps_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include "runtime/perturbed_steps.hpp"

namespace {

using memplan::testing::Harness;
using memplan::testing::PerturbConfig;
using memplan::testing::PerturbedRunner;

// range(0): the branch cap (Dynamic past it); 1024 holds every path of this configuration.
void BM_PerturbedSteps(benchmark::State& state) {
  memplan::CompilerOptions options = Harness::small_options();
  options.branch_cap = static_cast<std::size_t>(state.range(0));
  options.over_cap = memplan::OverCapPolicy::Dynamic;
  Harness h(options);
  PerturbedRunner runner(h,
                         PerturbConfig{.seed = 1, .bases = 4, .menu = 8, .max_perturbations = 3});
  for (auto _ : state) runner.step();
  runner.finish();
  const auto c = runner.counts();
  const auto counter = [&](const char* name, std::uint64_t value) {
    state.counters[name] = static_cast<double>(value);
  };
  counter("overlaps", c.overlaps);
  counter("mismatches", c.mismatches);
  counter("seen_breaks", c.breaks_on_seen_paths);
  counter("seen_broken_steps", c.seen_path_steps_that_broke);
  counter("seen_mem_calls", c.seen_path_memory_calls);
  counter("seen_leaking_mem_calls", c.leaking_seen_path_memory_calls);
  const auto seen_breaks = [&](memplan::BreakReason reason) {
    return c.seen_path_breaks_by_reason[static_cast<std::size_t>(reason)];
  };
  counter("seen_unknown_alloc", seen_breaks(memplan::BreakReason::UnknownAllocation));
  counter("seen_rogue_range", seen_breaks(memplan::BreakReason::RangeOccupied));
  counter("seen_unexpected_end", seen_breaks(memplan::BreakReason::UnexpectedEnd));
  counter("seen_steps", c.seen_path_steps);
  counter("breaks", c.breaks);
  counter("paths", c.distinct_keys);
  counter("rogues", c.rogues);
  counter("past_cap", c.dynamic_steps);
  counter("leaked", c.leaked);
  counter("freed_in_step", c.freed_in_later_steps);
}
BENCHMARK(BM_PerturbedSteps)
    ->Arg(1024)
    ->Arg(8)
    ->ArgName("branch_cap")
    ->Iterations(1'000'000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
