// The compiler on the CUDA VMM backend, against device memory: the host tests' guarantees
// (replay without driver calls at stable addresses, converging breaks, flat memory with rogues,
// the shadow model, aborted steps) checked on the H200 with cudaMemset fills and cudaMemcpy
// read-backs.
// Every test skips without a GPU.
#include <cuda_runtime.h>

#include <random>

#include "abort_cases.hpp"
#include "memplan/arena/cuda_vmm_backend.hpp"
#include "rogue_cases.hpp"
#include "support/gpu.hpp"

namespace memplan::testing {
namespace {

void check(cudaError_t status, const char* what) {
  ASSERT_EQ(status, cudaSuccess) << what << ": " << cudaGetErrorString(status);
}

struct DeviceMemory {
  using Backend = arena::CudaVmmBackend;
  static std::unique_ptr<Backend> make_backend() { return std::make_unique<Backend>(); }
  static void fill(void* p, std::size_t size, unsigned char value) {
    check(cudaMemset(p, value, size), "cudaMemset");
  }
  static std::size_t first_difference(const void* p, std::size_t size, unsigned char value) {
    std::vector<unsigned char> host(size);
    check(cudaMemcpy(host.data(), p, size, cudaMemcpyDeviceToHost), "cudaMemcpy");
    for (std::size_t i = 0; i < size; ++i) {
      if (host[i] != value) return i;
    }
    return size;
  }
};
using GpuHarness = BasicHarness<DeviceMemory>;

TEST(GpuCompiler, SteadyStateReplaysAtStableDeviceAddressesWithoutDriverCalls) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  const Program step = dit_step(8, 4096);
  h.run_step(step);
  const arena::CallCounts after_recording = h.backend().calls();
  std::vector<void*> replayed;
  for (int s = 1; s < 50; ++s) {
    const std::vector<void*> pointers = h.run_step(step);
    if (s == 1) replayed = pointers;
    ASSERT_EQ(pointers, replayed) << "step " << s;
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.steps_replayed, 49u);
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ((h.backend().calls() - after_recording).total(), 0u);
  EXPECT_LE(static_cast<double>(st.planned_peak_bytes),
            1.01 * static_cast<double>(st.lower_bound_bytes));
}

TEST(GpuCompiler, ScheduleWindowAndSecondPassConverge) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  for (int round = 0; round < 2; ++round) {
    for (int s = 0; s < 20; ++s) h.run_step(dit_step(4, 4096, s >= 5));
    for (int s = 0; s < 5; ++s) h.run_step(dit_step(4, 8192, true));
  }
  EXPECT_EQ(h.compiler().stats().breaks, 2u);
}

TEST(GpuCompiler, RoguesKeepTheirBytesAndMemoryStaysFlat) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  std::vector<Flat> history;
  run_workflow(h, 30, /*paused=*/false, &history);
  for (int s = 8; s < 30; ++s) EXPECT_EQ(history[s], history[7]) << "step " << s;
  EXPECT_LE(history.back().breaks, 2u);
}

TEST(GpuCompiler, ReplayedBuffersAreUsableByKernelsAfterRelease) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  const Program step = dit_step(4, 4096);
  h.run_step(step);
  h.run_step(step);
  h.compiler().release();  // unmapped, addresses kept
  EXPECT_EQ(h.compiler().stats().mapped_bytes, 0u);
  h.run_step(step);  // mapped back: fills and checks run on device memory again
  EXPECT_EQ(h.compiler().stats().breaks, 0u);
}

TEST(GpuCompiler, ShadowModelOnRandomPrograms) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  std::mt19937 rng(11);
  GpuHarness h;
  std::vector<Program> variants;
  for (int v = 0; v < 4; ++v) {
    Program p;
    for (int id = 0; id < 12; ++id) {
      p.push_back(alloc(id, 4096 * (1 + rng() % 8) + 256 * (rng() % 3)));
      if (id >= 2 && rng() % 2 == 0) p.push_back(free_(id - 2));
    }
    for (int id = 0; id < 12; ++id) {
      bool freed = false;
      for (const Op& op : p) freed |= op.kind == Op::Free && op.id == id;
      if (!freed) p.push_back(free_(id));
    }
    variants.push_back(p);
  }
  for (int s = 0; s < 200; ++s) {
    h.run_step(variants[rng() % variants.size()]);
    ASSERT_FALSE(::testing::Test::HasFailure()) << "step " << s;
  }
  EXPECT_LE(h.compiler().stats().branches, 64u);
}

// Issue 10's cases (rogue_cases.hpp) on the VMM backend: the same promises as on the host.
TEST(GpuCompiler, ASeenPathDoesNotBreakAgainAfterARogueCameAndWent) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  seen_path_does_not_break_again_after_a_rogue_came_and_went(h);
}

TEST(GpuCompiler, AReplayedStepMakesNoDriverCallAfterALateFree) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  replayed_step_makes_no_backend_call_after_a_late_free(h);
}

TEST(GpuCompiler, ALearnedSiteLeakedAgainCostsItsBytesOnceAndNoCallInTheNextStep) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  learned_site_leaked_again_costs_its_bytes_once(h);
}

TEST(GpuCompiler, LearningIsBySiteNotByTag) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  learning_is_by_site_not_by_tag(h);
}

TEST(GpuCompiler, ALearnedSiteThatStopsBeingRogueIsForgotten) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuHarness h;
  a_learned_site_that_stops_being_rogue_is_forgotten(h);
}

TEST(GpuCompiler, ARogueCostsItsOwnChunksAndTheArenaComesBackOnceItIsFreed) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  a_rogue_costs_its_own_chunks<GpuHarness>();
}

// The host's abort tests (abort_cases.hpp) on device memory: an exception before any event of a
// step, in every scenario, leaves the compiler's counts and the chunks the driver holds for it
// (cuMemCreate - cuMemRelease calls) at their pre-step level, and the next steps replay.
TEST(GpuCompiler, AnAbortAtAnyEventLeavesMemoryAtItsPreStepLevel) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  for (const AbortScenario& scenario : abort_scenarios<GpuHarness>()) {
    check_aborts_at_every_event<GpuHarness>(scenario);
  }
}

}  // namespace
}  // namespace memplan::testing
