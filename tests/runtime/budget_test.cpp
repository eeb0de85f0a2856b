// CompilerOptions::memory_budget_bytes: the planned arena and the pool together never map more.
// A recording that would pass it fails with BudgetExceeded naming the budget, the request and the
// largest live buffers with their tags, before anything changed; a plan that no longer fits is
// refused at begin_step, before its first replay; the report says the headroom; and a run that
// keeps inside the budget replays with no backend call, as without one.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "memplan/arena/host_backend.hpp"
#include "memplan/plan/planner.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/types.hpp"

namespace memplan::testing {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

CompilerOptions budgeted(std::size_t budget) {
  CompilerOptions o;
  o.reserve_bytes = std::size_t{1} << 30;
  o.chunk_bytes = 64 << 10;
  o.pool_reserve_bytes = std::size_t{1} << 30;
  o.pool_chunk_bytes = 64 << 10;
  o.plan_budget = std::chrono::milliseconds(20);
  o.memory_budget_bytes = budget;
  return o;
}

std::string budget_message(const auto& call) {
  try {
    call();
  } catch (const BudgetExceeded& e) {
    return e.what();
  }
  ADD_FAILURE() << "no BudgetExceeded";
  return {};
}

void expect_contains(const std::string& text, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
  }
}

TEST(Budget, ARecordingPastItFailsNamingTheLiveBuffersLargestFirst) {
  arena::HostBackend backend({.commit = false});
  Compiler c(backend, budgeted(8 * kMiB));
  {
    auto pause = c.pause();
    (void)c.allocate(kMiB, {}, "weights");
  }
  std::string message;
  {
    auto step = c.step("denoise");
    void* q = c.allocate(2 * kMiB, {}, "qkv");
    void* s = c.allocate(3 * kMiB, {}, "attention.scores");
    message = budget_message([&] { (void)c.allocate(3 * kMiB, {}, "mlp"); });
    c.deallocate(s);
    c.deallocate(q);
  }  // the step ends: the failed allocation left nothing behind
  expect_contains(message,
                  {"allocate 3.00 MiB in step 'denoise' at event 2 (recording)",
                   "over the memory budget of 8.00 MiB (CompilerOptions::memory_budget_bytes",
                   "largest live: attention.scores 3.00 MiB (step), qkv 2.00 MiB (step)"});
  const Stats s = c.stats();
  EXPECT_LE(s.peak_mapped_bytes, 8 * kMiB);
  EXPECT_EQ(s.steps_recorded, 1u);
  // The recorded branch has the two buffers that were served; it replays.
  for (int i = 0; i < 3; ++i) {
    auto step = c.step("denoise");
    void* q = c.allocate(2 * kMiB, {}, "qkv");
    void* t = c.allocate(3 * kMiB, {}, "attention.scores");
    c.deallocate(t);
    c.deallocate(q);
  }
  EXPECT_EQ(c.stats().steps_replayed, 3u);
  EXPECT_EQ(c.stats().breaks, 0u);
}

TEST(Budget, APlanThatNoLongerFitsIsRefusedAtBeginStepBeforeItsFirstReplay) {
  arena::HostBackend backend({.commit = false});
  Compiler c(backend, budgeted(8 * kMiB));
  const auto run = [&] {
    auto step = c.step("denoise");
    void* a = c.allocate(4 * kMiB, {}, "activations");
    c.deallocate(a);
  };
  run();
  c.release();  // the plan's memory goes back; the next step maps it again
  void* weights = nullptr;
  {
    auto pause = c.pause();
    weights = c.allocate(6 * kMiB, {}, "weights");
  }
  const std::string message = budget_message([&] { c.begin_step("denoise"); });
  expect_contains(message, {"begin_step 'denoise': mapping the 4.00 MiB of its plans",
                            "over the memory budget of 8.00 MiB"});
  EXPECT_FALSE(c.in_step());
  c.deallocate(weights);
  c.trim();  // the pool gives its chunks back
  run();
  const auto calls = c.stats().backend_calls.memory_calls();
  run();
  EXPECT_EQ(c.stats().backend_calls.memory_calls(), calls);
  EXPECT_EQ(c.stats().steps_replayed, 2u);
}

TEST(Budget, RandomStepsInsideItNeverMapMoreAndReplayWithoutBackendCalls) {
  for (const unsigned seed : {1u, 2u, 3u}) {
    arena::HostBackend backend({.commit = false});
    const std::size_t budget = 24 * kMiB;
    Compiler c(backend, budgeted(budget));
    std::mt19937 rng(seed);
    std::vector<std::size_t> sizes;
    for (int i = 0; i < 40; ++i) sizes.push_back((rng() % 2048 + 1) * 1024);  // up to 2 MiB
    std::uint64_t failures = 0;
    for (int step = 0; step < 30; ++step) {
      const auto calls = c.stats().backend_calls.memory_calls();
      const bool replay_expected = step > 0;
      try {
        auto guard = c.step("denoise");
        std::vector<void*> live;
        for (const std::size_t size : sizes) {
          live.push_back(c.allocate(size));
          if (live.size() > 8) {  // about 8 MiB live: inside the budget
            c.deallocate(live.front());
            live.erase(live.begin());
          }
        }
        for (void* p : live) c.deallocate(p);
      } catch (const BudgetExceeded&) {
        ++failures;
      }
      if (replay_expected) {
        EXPECT_EQ(c.stats().backend_calls.memory_calls(), calls);
      }
    }
    const Stats s = c.stats();
    EXPECT_EQ(failures, 0u);
    EXPECT_LE(s.peak_mapped_bytes, budget);
    EXPECT_EQ(s.steps_replayed, 29u);
    EXPECT_NE(c.report().find("budget: 24.0 MiB; headroom"), std::string::npos) << c.report();
  }
}

// The exported branch predicts what a later run maps: its plan, re-planned from the trace, is
// within 1 % of the arena's mapped bytes in replayed steps.
TEST(Budget, AnExportedBranchPredictsTheReplayedPeakWithinOnePercent) {
  arena::HostBackend backend({.commit = false});
  CompilerOptions options = budgeted(64 * kMiB);
  options.chunk_bytes = 4096;  // the host's page: the mapped bytes follow the plan closely
  Compiler c(backend, options);
  std::mt19937 rng(7);
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 60; ++i) sizes.push_back((rng() % 1024 + 64) * 1024);
  // Record once, export, predict, replay.
  const auto fixed_run = [&] {
    auto step = c.step("denoise");
    std::vector<void*> live;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      live.push_back(c.allocate(sizes[i]));
      if (live.size() > 6) {
        const std::size_t pick = i % 3 == 0 ? 1 : 0;
        c.deallocate(live[pick]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
      }
    }
    for (void* p : live) c.deallocate(p);
  };
  fixed_run();
  const BranchTrace trace = c.branch_trace("denoise", 0);
  const plan::Solution predicted = plan::plan(trace.problem, {});
  for (int i = 0; i < 3; ++i) fixed_run();
  const Stats s = c.stats();
  EXPECT_EQ(s.steps_replayed, 3u);
  const double mapped = static_cast<double>(s.mapped_bytes);
  const double bound = static_cast<double>(predicted.arena_size);
  EXPECT_GE(mapped, 0.99 * bound) << "mapped " << mapped << " predicted " << bound;
  EXPECT_LE(mapped, 1.01 * bound) << "mapped " << mapped << " predicted " << bound;
}

}  // namespace
}  // namespace memplan::testing
