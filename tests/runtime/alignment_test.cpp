// Alignment above 256 wherever the persistent pool serves: outside steps, inside pauses, from
// other threads, and at learned rogue sites (guarantees 1 and 2 with default_alignment 4096).
#include <gmock/gmock.h>

#include <thread>

#include "step_program.hpp"

namespace memplan::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST(Alignment, DefaultAlignment4096ServesPausedOutOfStepAndStepAllocations) {
  CompilerOptions options = Harness::small_options();
  options.default_alignment = 4096;
  Harness h(options);
  Compiler& c = h.compiler();
  void* weights = c.allocate(1000);  // outside steps: the pool
  EXPECT_EQ(addr(weights) % 4096, 0u);
  arena::CallCounts after_recording;
  std::vector<void*> first_replay;
  for (int s = 0; s < 10; ++s) {
    std::vector<void*> step_pointers;
    {
      auto step = c.step("denoise");
      step_pointers.push_back(h.allocate(1, 5000));
      void* cache = h.allocate(2, 300, {}, /*paused=*/true);
      step_pointers.push_back(h.allocate(3, 100));
      h.release(1);
      void* stats = h.allocate(4, 7000, {}, /*paused=*/true);
      step_pointers.push_back(h.allocate(5, 3 * 4096));
      void* loader = nullptr;
      std::thread other([&] {  // another thread's allocation: the pool, not a step event
        loader = c.allocate(3000);
        std::memset(loader, 0x5a, 3000);
      });
      other.join();
      EXPECT_EQ(addr(cache) % 4096, 0u);
      EXPECT_EQ(addr(stats) % 4096, 0u);
      EXPECT_EQ(addr(loader) % 4096, 0u);
      c.deallocate(loader);
      h.release(3);
      h.release(2);
      h.release(4);
      h.release(5);
    }
    for (void* p : step_pointers) EXPECT_EQ(addr(p) % 4096, 0u) << "step " << s;
    if (s == 0) after_recording = h.backend().calls();
    if (s == 1) first_replay = step_pointers;
    if (s > 1) {
      EXPECT_EQ(step_pointers, first_replay) << "step " << s << " moved a buffer";
    }
  }
  const Stats st = c.stats();
  EXPECT_EQ(st.steps_recorded, 1u);
  EXPECT_EQ(st.steps_replayed, 9u);
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.rogues, 0u);
  EXPECT_EQ(st.replayed_allocations, 9u * 3u);
  EXPECT_EQ(st.paused_allocations, 1u + 10u * 3u);  // weights; per step two paused, one loader
  EXPECT_EQ((h.backend().calls() - after_recording).total(), 0u);
  EXPECT_EQ(st.pool_live_bytes, 1024u);  // the weights
  c.deallocate(weights);
  EXPECT_EQ(c.stats().pool_live_bytes, 0u);
}

TEST(Alignment, ExplicitAlignmentsInsideAPauseAndOutsideSteps) {
  Harness h;  // default_alignment 256
  Compiler& c = h.compiler();
  void* outside = c.allocate(64, {}, {}, 2048);
  EXPECT_EQ(addr(outside) % 2048, 0u);
  for (int s = 0; s < 2; ++s) {
    auto step = c.step("denoise");
    void* a = c.allocate(4096);
    void* p1 = nullptr;
    void* p2 = nullptr;
    {
      auto pause = c.pause();
      p1 = c.allocate(100, {}, {}, 1024);
      p2 = c.allocate(5000, {}, {}, 4096);
      try {
        (void)c.allocate(100, {}, {}, 8192);
        ADD_FAILURE() << "alignment 8192 accepted for the pool";
      } catch (const InvalidArgument& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("8192"), HasSubstr("4096"), HasSubstr("pause")));
      }
    }
    EXPECT_EQ(addr(p1) % 1024, 0u);
    EXPECT_EQ(addr(p2) % 4096, 0u);
    void* big = c.allocate(100, {}, {}, 8192);  // a step event: the arena aligns it
    EXPECT_EQ(addr(big) % 8192, 0u);
    c.deallocate(big);
    c.deallocate(p1);
    c.deallocate(a);
    c.deallocate(p2);
  }
  c.deallocate(outside);
  const Stats st = c.stats();
  EXPECT_EQ(st.steps_replayed, 1u);
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.paused_allocations, 1u + 2u * 2u);
  EXPECT_EQ(st.pool_live_bytes, 0u);
}

}  // namespace
}  // namespace memplan::testing
