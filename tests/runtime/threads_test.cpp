// Several threads on one compiler: the step thread replays while another thread allocates and
// frees; steps driven from a thread that is not the lock's owner; and a stress run of two
// compilers on one limiting backend. Checked by fill patterns, counts and bytes (and by ASan and
// TSan in the sanitizer builds), never by time.
#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "memplan/arena/limiting_backend.hpp"
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
  EXPECT_EQ(st.breaks, 0u);
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
  for (int i = 0; i < 2000; ++i)
    h.compiler().deallocate(h.compiler().allocate(4096));  // outside steps here
  driver.join();
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.steps_replayed, 50u);
}

// Pool traffic from a thread that never runs a step: a window of live buffers of random sizes
// (now and then one larger than a pool chunk, so the pool grows), each filled and checked when
// freed, plus the frees of buffers the step thread handed over. Returns its allocations.
int pool_traffic(Compiler& compiler, int allocations, std::deque<void*>& handed_over,
                 std::mutex& handover_mutex, const std::atomic<bool>& steps_done) {
  std::deque<std::pair<unsigned char*, std::size_t>> window;
  unsigned seed = 17;
  auto free_oldest = [&] {
    const auto [p, size] = window.front();
    const auto value = static_cast<unsigned char>(size % 251);
    if (p[0] != value || p[size / 2] != value || p[size - 1] != value) {
      ADD_FAILURE() << "a pool buffer of " << size << " B was overwritten";
    }
    compiler.deallocate(p);
    window.pop_front();
  };
  auto free_handed_over = [&] {
    const std::lock_guard lock(handover_mutex);
    for (void* p : handed_over) compiler.deallocate(p);
    handed_over.clear();
  };
  for (int i = 0; i < allocations; ++i) {
    seed = seed * 1103515245u + 12345u;
    const std::size_t size = i % 97 == 0 ? (std::size_t{3} << 20) : 256 + (seed >> 8) % (256 << 10);
    auto* p = static_cast<unsigned char*>(compiler.allocate(size));
    std::memset(p, static_cast<int>(size % 251), size);
    window.emplace_back(p, size);
    if (window.size() > 8) free_oldest();
    if (i % 16 == 0) free_handed_over();
  }
  while (!window.empty()) free_oldest();
  while (!steps_done.load()) std::this_thread::yield();
  free_handed_over();
  return allocations;
}

// Runs `body`; an exception becomes a test failure instead of std::terminate on a thread.
template <class Body>
void reporting_failures(Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "thread ended by: " << e.what();
  }
}

// A compiler with a step thread and a pool thread, sharing a hand-over queue.
struct Lane {
  std::unique_ptr<Compiler> compiler;
  std::deque<void*> handed_over;
  std::mutex handover_mutex;
  std::atomic<bool> steps_done{false};
  int pool_allocations = 0;
};

// The step thread: replays, hands a paused buffer to the pool thread each step, trims after
// every step and releases after every fifth (so chunks are unmapped and mapped back all along).
void run_lane_steps(Lane& lane, int steps) {
  const Program program = dit_step(4, 1024);
  for (int s = 0; s < steps; ++s) {
    run_checked_step(*lane.compiler, program);
    void* kept = nullptr;
    {
      auto pause = lane.compiler->pause();
      kept = lane.compiler->allocate(4096);
    }
    {
      const std::lock_guard lock(lane.handover_mutex);
      lane.handed_over.push_back(kept);
    }
    if (s % 5 == 4) {
      lane.compiler->release();
    } else {
      lane.compiler->trim();
    }
  }
}

// Two compilers share one limiting backend, each with a step thread and a pool thread: chunks
// come and go on both compilers at once, so the shared limit's accounts are kept from several
// threads, while each compiler serves its step and pool threads together.
TEST(Threads, TwoCompilersOnASharedLimitStayExactUnderStepsAndPoolTraffic) {
  constexpr int kSteps = 60;
  constexpr int kPoolAllocations = 3000;
  arena::HostBackend host(arena::HostBackendOptions{.commit = false});
  arena::LimitingBackend limited(host, std::size_t{256} << 20);
  std::array<Lane, 2> lanes;
  for (Lane& lane : lanes)
    lane.compiler = std::make_unique<Compiler>(limited, Harness::small_options());

  std::vector<std::thread> threads;
  for (Lane& lane : lanes) {
    threads.emplace_back([&lane] {
      reporting_failures([&] { run_lane_steps(lane, kSteps); });
      lane.steps_done = true;
    });
    threads.emplace_back([&lane] {
      reporting_failures([&] {
        lane.pool_allocations = pool_traffic(*lane.compiler, kPoolAllocations, lane.handed_over,
                                             lane.handover_mutex, lane.steps_done);
      });
    });
  }
  for (std::thread& t : threads) t.join();

  std::size_t mapped = 0;
  for (Lane& lane : lanes) {
    const Stats st = lane.compiler->stats();
    EXPECT_EQ(st.steps_recorded, 1u);
    EXPECT_EQ(st.steps_replayed, static_cast<std::uint64_t>(kSteps - 1));
    EXPECT_EQ(st.breaks, 0u);
    EXPECT_EQ(st.rogues, 0u);
    EXPECT_EQ(st.paused_allocations, static_cast<std::uint64_t>(lane.pool_allocations + kSteps));
    EXPECT_EQ(st.pool_live_bytes, 0u);
    mapped += st.mapped_bytes + st.pool_mapped_bytes;
  }
  EXPECT_EQ(limited.used_bytes(), mapped);  // the limit counts exactly what is mapped
  for (Lane& lane : lanes) lane.compiler.reset();
  EXPECT_EQ(limited.used_bytes(), 0u);
  EXPECT_EQ(host.calls()[arena::Call::CreateChunk], host.calls()[arena::Call::ReleaseChunk]);
  // No refusal: the limit (256 MiB) is far above what the two compilers map.
  EXPECT_EQ(limited.calls()[arena::Call::CreateChunk], host.calls()[arena::Call::CreateChunk]);
}

}  // namespace
}  // namespace memplan::testing
