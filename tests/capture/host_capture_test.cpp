// The capture policy on the host capturer: when a step is captured, when the graph is launched
// instead of the launches, and when it is dropped. Launches write into arena memory, so the tests
// check the data the graph produced, not only the counters.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "memplan/arena/host_backend.hpp"
#include "memplan/capture/step_runner.hpp"

namespace memplan::capture {
namespace {

CompilerOptions small() {
  CompilerOptions o;
  o.reserve_bytes = std::size_t{1} << 30;
  o.chunk_bytes = std::size_t{2} << 20;
  o.pool_reserve_bytes = std::size_t{256} << 20;
  o.pool_chunk_bytes = std::size_t{2} << 20;
  o.plan_budget = std::chrono::milliseconds(20);
  return o;
}

struct Fixture : ::testing::Test {
  arena::HostBackend backend{arena::HostBackendOptions{.commit = false}};
  Compiler compiler{backend, small()};
  HostStepCapturer capturer;
  std::vector<int> out = std::vector<int>(4, 0);  // what the last step produced
  int launches_run = 0;

  // A step of three buffers: a = value, b = a + 1, out[slot] = b; `extra` adds a workspace
  // allocation (the schedule window's sparse path).
  StepRunner::Body body(int value, bool extra = false, int slot = 0) {
    return [this, value, extra, slot](StepContext& ctx) {
      auto* a = static_cast<int*>(ctx.allocate(1 << 16));
      auto* b = static_cast<int*>(ctx.allocate(1 << 16));
      void* ws = extra ? ctx.allocate(1 << 20, "workspace") : nullptr;
      int* dst = &out[static_cast<std::size_t>(slot)];
      ctx.depends_on(dst);
      ctx.launch([this, a, value](StreamRef) {
        ++launches_run;
        *a = value;
      });
      ctx.launch([this, a, b](StreamRef) {
        ++launches_run;
        *b = *a + 1;
      });
      ctx.launch([this, b, dst](StreamRef) {
        ++launches_run;
        *dst = *b;
      });
      ctx.deallocate(a);
      if (ws != nullptr) ctx.deallocate(ws);
      ctx.deallocate(b);
    };
  }
};

TEST_F(Fixture, EagerWhenDisabledRunsEachLaunchAtOnce) {
  StepRunner runner(compiler, capturer, {}, {.enabled = false});
  for (int s = 0; s < 5; ++s) {
    EXPECT_EQ(runner.run("denoise", "k", body(s)), StepPath::Eager);
    EXPECT_EQ(out[0], s + 1);
  }
  EXPECT_EQ(runner.stats().eager_steps, 5u);
  EXPECT_EQ(runner.stats().captures, 0u);
  EXPECT_EQ(launches_run, 15);
}

// Check mode poisons and fences each buffer at its free, so a launch deferred past the frees of
// its step would touch freed (here: already unmapped) memory. The runner runs such steps eagerly.
TEST_F(Fixture, CheckModeRunsEveryStepEagerly) {
  CompilerOptions options = small();
  options.check = {
      .poison = true, .no_reuse = true, .guard_gaps = true, .reserve_bytes = std::size_t{16} << 30};
  Compiler checked(backend, options);
  StepRunner runner(checked, capturer, {}, {.capture_after = 1});
  EXPECT_FALSE(runner.options().enabled);
  for (int s = 0; s < 5; ++s) {
    EXPECT_EQ(runner.run("denoise", "k", body(s)), StepPath::Eager);
    EXPECT_EQ(out[0], s + 1);
  }
  EXPECT_EQ(runner.stats().captures, 0u);
  EXPECT_EQ(launches_run, 15);
}

TEST_F(Fixture, CapturesAfterStableReplaysThenLaunchesTheGraphWithoutBackendCalls) {
  StepRunner runner(compiler, capturer, {}, {.capture_after = 2});
  std::vector<StepPath> paths;
  for (int s = 0; s < 3; ++s) paths.push_back(runner.run("denoise", "k", body(7)));
  const auto calls = backend.calls();
  for (int s = 0; s < 5; ++s) paths.push_back(runner.run("denoise", "k", body(7)));
  EXPECT_EQ((backend.calls() - calls).memory_calls(), 0u);
  // step 0 records, step 1 is the first replay, step 2 the second: captured.
  const std::vector<StepPath> want{StepPath::Eager, StepPath::Eager, StepPath::Captured,
                                   StepPath::Graph, StepPath::Graph, StepPath::Graph,
                                   StepPath::Graph, StepPath::Graph};
  EXPECT_EQ(paths, want);
  EXPECT_EQ(out[0], 8);
  EXPECT_EQ(runner.stats().captures, 1u);
  EXPECT_EQ(runner.stats().graph_launches, 6u);
  EXPECT_EQ(runner.stats().invalidations, 0u);
  EXPECT_EQ(launches_run, 24);                     // the graph runs the same three launches
  EXPECT_EQ(compiler.stats().steps_replayed, 7u);  // the compiler saw every step
}

TEST_F(Fixture, AGraphReplaysTheCapturedValuesNotTheHostState) {
  // A value baked into a launch argument is captured: this is why per-step values belong in
  // memory (or in the key), and why the fingerprint covers declared dependencies.
  StepRunner runner(compiler, capturer, {}, {.capture_after = 1});
  for (int s = 0; s < 3; ++s) runner.run("denoise", "k", body(10));
  EXPECT_EQ(runner.run("denoise", "k", body(20)), StepPath::Graph);
  EXPECT_EQ(out[0], 11);
}

TEST_F(Fixture, ABreakUnderTheSameKeyInvalidatesAndTheNewBranchIsCapturedOnce) {
  StepRunner runner(compiler, capturer, {}, {.capture_after = 2});
  for (int s = 0; s < 4; ++s) runner.run("denoise", "k", body(1));
  ASSERT_EQ(runner.stats().live_graphs, 1u);
  const auto breaks = compiler.stats().breaks;
  // Same key, but the step now allocates a workspace: a break, new pointers, the graph is stale.
  EXPECT_TRUE(runner.last_step()->replayed());
  EXPECT_EQ(runner.run("denoise", "k", body(2, true)), StepPath::Eager);
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(compiler.stats().breaks, breaks + 1);
  // The compiler's word on the step, as end_step gave it.
  ASSERT_TRUE(runner.last_step());
  EXPECT_EQ(runner.last_step()->kind, StepKind::Recorded);
  EXPECT_EQ(runner.last_step()->break_reason, BreakReason::UnknownAllocation);
  EXPECT_EQ(runner.last_step()->branch, 1u);
  EXPECT_EQ(runner.stats().invalidations, 1u);
  EXPECT_EQ(runner.stats().live_graphs, 0u);
  EXPECT_EQ(runner.run("denoise", "k", body(2, true)), StepPath::Eager);
  EXPECT_EQ(runner.run("denoise", "k", body(2, true)), StepPath::Captured);
  EXPECT_EQ(runner.run("denoise", "k", body(2, true)), StepPath::Graph);
  EXPECT_EQ(runner.stats().captures, 2u);
  EXPECT_EQ(compiler.stats().breaks, breaks + 1);
}

TEST_F(Fixture, EachKeyKeepsItsGraphWhileBranchesAlternate) {
  StepRunner runner(compiler, capturer, {}, {.capture_after = 1});
  for (int round = 0; round < 6; ++round) {
    runner.run("denoise", "dense", body(1, false, 0));
    runner.run("denoise", "sparse", body(2, true, 1));
  }
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(runner.stats().captures, 2u);
  EXPECT_EQ(runner.stats().invalidations, 0u);
  EXPECT_EQ(runner.stats().live_graphs, 2u);
  EXPECT_GE(runner.stats().graph_launches, 8u);
  EXPECT_EQ(compiler.stats().breaks, 1u);  // the sparse path, once
}

// A step whose output outlives it, kept until the next step's exists (the previous one freed late
// in the step): once the compiler plans it with period two, the step's plans alternate, and so do
// the pointers. The runner keeps a graph per parity and launches each only at its parity: every
// step from the second capture on is a graph, and each writes the output the step was handed.
TEST_F(Fixture, APeriodTwoOutputGetsOneGraphPerParityAndEachStepWritesItsOwnOutput) {
  StepRunner runner(compiler, capturer, {}, {.capture_after = 2});
  auto* input = static_cast<int*>(compiler.allocate(sizeof(int), {}));  // outside steps: the pool
  int* previous = nullptr;
  std::vector<std::uint8_t> parities;
  std::vector<StepPath> paths;
  for (int s = 0; s < 14; ++s) {
    *input = 100 + s;
    int* output = nullptr;
    paths.push_back(runner.run("denoise", "k", [&](StepContext& ctx) {
      auto* t = static_cast<int*>(ctx.allocate(1 << 16));
      output = static_cast<int*>(ctx.allocate(1 << 16));
      ctx.depends_on(input);
      ctx.launch([t, input](StreamRef) { *t = *input; });
      ctx.launch([t, o = output](StreamRef) { *o = *t + 1; });
      ctx.deallocate(t);
      if (previous != nullptr) ctx.deallocate(previous);
    }));
    previous = output;
    EXPECT_EQ(*output, 101 + s) << "step " << s << " (" << to_string(paths.back()) << ")";
    parities.push_back(runner.last_step()->parity);
  }
  compiler.deallocate(previous);
  compiler.deallocate(input);
  EXPECT_EQ(compiler.stats().period_two_outputs, 1u);
  // Planned at the begin of step 2; steps 3 on alternate. Each parity's fingerprint is stable
  // from its second step on (step 2 frees an output of the pool): captured at steps 5 and 6.
  EXPECT_EQ(paths[5], StepPath::Captured);
  EXPECT_EQ(paths[6], StepPath::Captured);
  for (std::size_t s = 3; s < 14; ++s) {
    if (s >= 7) {
      EXPECT_EQ(paths[s], StepPath::Graph) << "step " << s;
    }
    EXPECT_NE(parities[s], parities[s - 1]) << "step " << s;
  }
  EXPECT_EQ(runner.stats().captures, 2u);
  EXPECT_EQ(runner.stats().invalidations, 0u);
  EXPECT_EQ(runner.stats().live_graphs, 2u);
}

TEST_F(Fixture, AChangedDependencyInvalidatesTheGraph) {
  StepRunner runner(compiler, capturer, {}, {.capture_after = 1});
  for (int s = 0; s < 3; ++s) runner.run("denoise", "k", body(5, false, 0));
  // Another output buffer: the old graph would write the old one. Dropped, and (capture_after
  // is 1, the step replayed) the step is captured again with the new pointer.
  EXPECT_EQ(runner.run("denoise", "k", body(5, false, 2)), StepPath::Captured);
  EXPECT_EQ(out[2], 6);
  EXPECT_EQ(runner.stats().invalidations, 1u);
  EXPECT_EQ(runner.stats().captures, 2u);
  EXPECT_EQ(compiler.stats().breaks, 0u);  // the compiler saw the same allocations
}

TEST_F(Fixture, AThrowingBodyAbortsTheStepLaunchesNothingAndTheRunnerGoesOn) {
  StepRunner runner(compiler, capturer, {}, {.capture_after = 1});
  for (int s = 0; s < 3; ++s) runner.run("denoise", "k", body(1));
  const int before = launches_run;
  EXPECT_THROW(runner.run("denoise", "k",
                          [](StepContext& ctx) {
                            ctx.launch([](StreamRef) { FAIL() << "must not run"; });
                            throw InvalidState("model failed");
                          }),
               InvalidState);
  EXPECT_EQ(launches_run, before);
  EXPECT_FALSE(runner.last_step());  // the step was aborted, not ended
  EXPECT_FALSE(compiler.in_step());
  EXPECT_EQ(compiler.stats().steps_aborted, 1u);
  EXPECT_EQ(runner.run("denoise", "k", body(4)), StepPath::Graph);
  EXPECT_EQ(out[0], 2);  // the graph's captured value
}

TEST_F(Fixture, AReleasedArenaIsMappedBackBeforeTheGraphRuns) {
  StepRunner runner(compiler, capturer, {}, {.capture_after = 1});
  for (int s = 0; s < 3; ++s) runner.run("denoise", "k", body(9));
  compiler.release();
  EXPECT_EQ(compiler.stats().mapped_bytes, 0u);
  EXPECT_EQ(runner.run("denoise", "k", body(9)), StepPath::Graph);  // writes would fault if not
  EXPECT_EQ(out[0], 10);
  EXPECT_GT(compiler.stats().mapped_bytes, 0u);
}

// trim() keeps the branch of each live graph: key "narrow" has a graph (2 MiB), key "wide" (the
// same step with 6 MiB more, another branch) has none yet. Its chunks go; the graph's steps then
// make no backend call and still compute, and the wide step maps what it uses back.
TEST_F(Fixture, TrimKeepsTheBranchesOfTheLiveGraphs) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  StepRunner runner(compiler, capturer, {}, {.capture_after = 2});
  const auto step = [&](int value, bool wide) {
    return [this, value, wide](StepContext& ctx) {
      auto* a = static_cast<int*>(ctx.allocate(2 * kMiB));
      void* ws = wide ? ctx.allocate(6 * kMiB, "workspace") : nullptr;
      int* dst = &out[0];
      ctx.depends_on(dst);
      ctx.launch([a, value](StreamRef) { *a = value; });
      ctx.launch([a, ws, dst](StreamRef) {
        if (ws != nullptr) *static_cast<int*>(ws) = *a;
        *dst = ws != nullptr ? *static_cast<int*>(ws) + 100 : *a + 1;
      });
      if (ws != nullptr) ctx.deallocate(ws);
      ctx.deallocate(a);
    };
  };
  for (int s = 0; s < 3; ++s) runner.run("denoise", "narrow", step(5, false));
  ASSERT_EQ(runner.stats().live_graphs, 1u);
  for (int s = 0; s < 2; ++s)
    EXPECT_EQ(runner.run("denoise", "wide", step(5, true)), StepPath::Eager);
  ASSERT_EQ(compiler.step_branches().front().second, 2u);
  compiler.trim();
  EXPECT_EQ(compiler.stats().mapped_bytes, 8 * kMiB);
  runner.trim();
  EXPECT_EQ(compiler.stats().mapped_bytes, 2 * kMiB);

  const auto calls = backend.calls();
  EXPECT_EQ(runner.run("denoise", "narrow", step(5, false)), StepPath::Graph);
  EXPECT_EQ(out[0], 6);
  EXPECT_EQ((backend.calls() - calls).memory_calls(), 0u);
  // Its third replay in a row: captured now, from the chunks mapped back as it was served.
  EXPECT_EQ(runner.run("denoise", "wide", step(7, true)), StepPath::Captured);
  EXPECT_EQ(out[0], 107);
  EXPECT_GT((backend.calls() - calls).memory_calls(), 0u);
  EXPECT_EQ(compiler.stats().mapped_bytes, 8 * kMiB);
}

// With no graph, trim() is the compiler's.
TEST_F(Fixture, TrimWithoutGraphsIsTheCompilersTrim) {
  StepRunner runner(compiler, capturer, {}, {.enabled = false});
  for (int s = 0; s < 2; ++s) runner.run("denoise", "k", body(3));
  const std::uint64_t mapped = compiler.stats().mapped_bytes;
  runner.trim();
  EXPECT_EQ(compiler.stats().mapped_bytes, mapped);
  EXPECT_GT(mapped, 0u);
}

TEST(CaptureOptionsTest, CaptureAfterBelowOneIsRejected) {
  arena::HostBackend backend{arena::HostBackendOptions{.commit = false}};
  Compiler compiler{backend, small()};
  HostStepCapturer capturer;
  EXPECT_THROW(StepRunner(compiler, capturer, {}, {.capture_after = 0}), InvalidArgument);
}

}  // namespace
}  // namespace memplan::capture
