// Each real-model trace of data/traces/somas, replayed as a step program (allocate
// at `lower`, free at `upper`) for 20 steps: no break after the first step, and physical memory
// within one chunk of the plan. Sizes are the traces' own (up to 15.7 GB): the host backend maps
// them lazily and this test never touches the bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "memplan/arena/host_backend.hpp"
#include "memplan/plan/csv.hpp"
#include "memplan/runtime/compiler.hpp"

namespace memplan {
namespace {

struct Event {
  plan::Time when;
  bool is_alloc;  // frees sort first at the same instant: lifetimes are half-open
  std::size_t buffer;
  friend bool operator<(const Event& a, const Event& b) {
    return std::tie(a.when, a.is_alloc, a.buffer) < std::tie(b.when, b.is_alloc, b.buffer);
  }
};

class TraceReplay : public ::testing::TestWithParam<const char*> {};

TEST_P(TraceReplay, ReplaysWithoutBreaksWithinOneChunkOfThePlan) {
  const plan::Problem problem =
      plan::read_csv_file(std::string(MEMPLAN_TEST_DATA_DIR "/traces/somas/") + GetParam());
  std::vector<Event> events;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const plan::Buffer& b = problem.buffers[i];
    if (!b.occupies()) continue;
    events.push_back({b.lower, true, i});
    events.push_back({b.upper, false, i});
  }
  std::sort(events.begin(), events.end());

  arena::HostBackend backend(arena::HostBackendOptions{.commit = false});
  CompilerOptions options;
  options.reserve_bytes = std::size_t{32} << 30;
  options.pool_reserve_bytes = std::size_t{1} << 30;
  Compiler compiler(backend, options);
  std::vector<void*> pointers(problem.buffers.size());
  for (int s = 0; s < 20; ++s) {
    auto step = compiler.step("model");
    for (const Event& e : events) {
      if (e.is_alloc) {
        pointers[e.buffer] =
            compiler.allocate(static_cast<std::size_t>(problem.buffers[e.buffer].size));
      } else {
        compiler.deallocate(pointers[e.buffer]);
      }
    }
  }
  const Stats st = compiler.stats();
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.steps_recorded, 1u);
  EXPECT_EQ(st.steps_replayed, 19u);
  EXPECT_LE(st.mapped_bytes, st.planned_peak_bytes + options.chunk_bytes);
  // Sizes are rounded to 256-byte alignment by placement, so allow the planner 2% here.
  EXPECT_LE(static_cast<double>(st.planned_peak_bytes),
            1.02 * static_cast<double>(st.lower_bound_bytes));
}

INSTANTIATE_TEST_SUITE_P(Somas, TraceReplay,
                         ::testing::Values("resnet50.csv", "tiny_bert.csv", "bert_base.csv"));

}  // namespace
}  // namespace memplan
