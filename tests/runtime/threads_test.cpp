// Several threads on one compiler: the step thread replays while another thread allocates and
// frees; steps driven from a thread that is not the lock's owner. Checked by fill patterns and
// counts (and by ASan in the sanitizer build).
#include <atomic>
#include <cstring>
#include <thread>

#include "step_program.hpp"

namespace memplan::testing {
namespace {

// One step of `program` straight on the compiler, filling and checking every buffer.
void run_checked_step(Compiler& compiler, const Program& program) {
  auto step = compiler.step("denoise");
  std::map<int, std::pair<void*, std::size_t>> live;
  for (const Op& op : program) {
    if (op.kind == Op::Alloc) {
      void* p = compiler.allocate(op.size);
      std::memset(p, op.id + 1, op.size);
      live[op.id] = {p, op.size};
    } else {
      const auto [p, size] = live.at(op.id);
      const auto* bytes = static_cast<const unsigned char*>(p);
      ASSERT_EQ(bytes[0], op.id + 1);
      ASSERT_EQ(bytes[size - 1], op.id + 1);
      compiler.deallocate(p);
      live.erase(op.id);
    }
  }
}

TEST(Threads, AnotherThreadsAllocationsNeverBecomeStepEvents) {
  Harness h;
  Compiler& compiler = h.compiler();
  const Program program = dit_step(4, 1024);
  run_checked_step(compiler, program);  // this thread owns the lock's fast path from here

  std::atomic<bool> stop{false};
  std::atomic<int> other_allocations{0};
  std::thread other([&] {
    unsigned seed = 5;
    while (!stop.load()) {
      const std::size_t size = 256 + (seed = seed * 1103515245u + 12345u) % 8192;
      void* p = compiler.allocate(size);
      std::memset(p, 0xab, size);
      const auto* bytes = static_cast<const unsigned char*>(p);
      if (bytes[0] != 0xab || bytes[size - 1] != 0xab) ADD_FAILURE() << "pool buffer overwritten";
      compiler.deallocate(p);
      ++other_allocations;
    }
  });
  for (int s = 0; s < 300; ++s) run_checked_step(compiler, program);
  stop = true;
  other.join();

  const Stats st = compiler.stats();
  EXPECT_EQ(st.graph_breaks, 0u);
  EXPECT_EQ(st.steps_replayed, 300u);
  EXPECT_EQ(st.paused_allocations, static_cast<std::uint64_t>(other_allocations.load()));
  EXPECT_EQ(st.rogues, 0u);
}

TEST(Threads, StepsDrivenByAThreadThatDoesNotOwnTheLockAreStillReplayed) {
  Harness h;
  const Program program = dit_step(4, 1024);
  run_checked_step(h.compiler(), program);  // the owner: this thread
  std::thread driver([&] {
    for (int s = 0; s < 50; ++s) run_checked_step(h.compiler(), program);
  });
  for (int i = 0; i < 2000; ++i) h.compiler().deallocate(h.compiler().allocate(4096));  // outside steps here
  driver.join();
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.graph_breaks, 0u);
  EXPECT_EQ(st.steps_replayed, 50u);
}

}  // namespace
}  // namespace memplan::testing
