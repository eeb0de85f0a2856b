// The check heap on the host, where a HostStream can be held at a point of its queue (a kernel
// still running): freed pages stay mapped and poisoned until every user stream has passed the
// free, a late reader on such a stream sees the poison, and only then do the pages go back
// (counted by the backend). Guard gaps are checked for faults by asking the kernel
// (support/readable.hpp) instead of raising SIGSEGV.
#include "memplan/arena/check_heap.hpp"
#include "memplan/arena/host_backend.hpp"
#include "memplan/arena/host_stream.hpp"
#include "memplan/arena/limiting_backend.hpp"
#include "memplan/error.hpp"

#include "support/host_gate.hpp"
#include "support/readable.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace memplan::arena {
namespace {

using namespace std::chrono_literals;
using memplan::testing::Gate;
using memplan::testing::readable;

constexpr std::uint32_t kFresh = 0x7FFA7FFAu;
constexpr std::uint32_t kFreed = 0x7FFD7FFDu;

std::uint32_t word_at(const void* p) {
  std::uint32_t w = 0;
  std::memcpy(&w, p, 4);
  return w;
}

CheckHeapOptions poisoned(std::size_t reserve_bytes) {
  return CheckHeapOptions{.reserve_bytes = reserve_bytes,
                          .guard_gaps = true,
                          .fill_on_allocate = kFresh,
                          .fill_on_free = kFreed};
}

// A poisoning heap with guard gaps on the host backend, and streams that outlive it (the heap
// fences its user streams until its destruction).
struct HostCheckHeap : ::testing::Test {
  HostBackend backend;
  const std::size_t page = backend.granularity();
  HostStream side;   // a user whose queued work is still running at a free
  HostStream other;  // an idle user
  CheckHeap heap{backend, poisoned(64 * page)};
};

TEST_F(HostCheckHeap, GuardGapsFaultOnBothSidesAndTheBufferEndsAtItsPages) {
  auto* a = static_cast<std::byte*>(heap.allocate(page, 4, StreamRef{}));
  auto* b = static_cast<std::byte*>(heap.allocate(100, 4, StreamRef{}));
  EXPECT_TRUE(readable(a));
  EXPECT_TRUE(readable(a + page - 1));
  EXPECT_FALSE(readable(a - 1));     // the guard before the first allocation
  EXPECT_FALSE(readable(a + page));  // the gap after it
  EXPECT_TRUE(readable(b + 99));
  EXPECT_FALSE(readable(b + 100));    // 100 is whole words: the buffer ends where its page ends
  EXPECT_TRUE(readable(b - 1));       // the page's padding before a small buffer is mapped
  EXPECT_EQ(word_at(b - 4), kFresh);  // ... and poisoned
  heap.deallocate(a, StreamRef{});
  heap.deallocate(b, StreamRef{});
  EXPECT_FALSE(readable(a));  // released: any access now faults
  EXPECT_FALSE(readable(b + 99));
}

TEST_F(HostCheckHeap, FreedPagesStayPoisonedUntilEveryUserStreamPassesTheFreeThenComeBack) {
  heap.add_user(side.ref());
  heap.add_user(other.ref());
  auto* p = static_cast<std::uint32_t*>(heap.allocate(page, 4, StreamRef{}));
  std::fill_n(p, page / 4, 0x11111111u);

  Gate gate(side);
  const CallCounts before = backend.calls();
  heap.deallocate(p, StreamRef{});  // default stream: the poison lands at once
  EXPECT_EQ(word_at(p), kFreed);
  EXPECT_EQ(heap.region_of(p), CheckRegion::Freed);
  const CallCounts at_free = backend.calls() - before;
  EXPECT_EQ(at_free[Call::Fill], 1u);
  EXPECT_EQ(at_free[Call::RecordFence], 3u);  // side, other, and the default stream that freed
  EXPECT_EQ(at_free[Call::Unmap], 0u);
  EXPECT_EQ(at_free[Call::ReleaseChunk], 0u);

  // Later calls poll without blocking; the side stream has not passed the free.
  void* q = heap.allocate(page, 4, StreamRef{});
  EXPECT_EQ(heap.collect(), 0u);
  EXPECT_EQ((backend.calls() - before)[Call::ReleaseChunk], 0u);
  EXPECT_EQ((backend.calls() - before)[Call::WaitFence], 0u);
  EXPECT_EQ(heap.stats().pending, 1u);
  EXPECT_EQ(heap.stats().pending_bytes, page);
  EXPECT_TRUE(readable(p));

  gate.open();
  side.synchronize();
  EXPECT_EQ(word_at(p), kFreed);  // passed, not yet collected: still mapped
  EXPECT_EQ(heap.collect(), 1u);
  const CallCounts after = backend.calls() - before;
  EXPECT_EQ(after[Call::Unmap], 1u);
  EXPECT_EQ(after[Call::ReleaseChunk], 1u);
  EXPECT_EQ(after[Call::WaitFence], 0u);  // never blocked
  EXPECT_FALSE(readable(p));
  EXPECT_EQ(heap.region_of(p), CheckRegion::Released);
  heap.deallocate(q, StreamRef{});
}

TEST_F(HostCheckHeap, ALateReaderOnAUserStreamSeesThePoisonNotTheNextBuffer) {
  heap.add_user(side.ref());
  auto* a = static_cast<std::uint32_t*>(heap.allocate(page, 4, StreamRef{}));
  std::fill_n(a, page / 4, 0x11111111u);
  std::uint32_t seen = 0;
  std::atomic<bool> go{false};
  side.enqueue([&] {  // queued before the free, runs after the next buffer is written
    while (!go.load()) std::this_thread::yield();
    seen = a[page / 8];
  });
  heap.deallocate(a, StreamRef{});  // no event from the side stream: the planted bug
  auto* b = static_cast<std::uint32_t*>(heap.allocate(page, 4, StreamRef{}));
  std::fill_n(b, page / 4, 0x22222222u);
  EXPECT_NE(a, b);
  go = true;
  side.synchronize();
  EXPECT_EQ(seen, kFreed);
  heap.deallocate(b, StreamRef{});
}

TEST_F(HostCheckHeap, FreeingOnABusyStreamPoisonsInItsOrder) {
  auto* p = static_cast<std::uint32_t*>(heap.allocate(page, 4, side.ref()));
  side.synchronize();  // the hand-out poison was queued there too
  EXPECT_EQ(word_at(p), kFresh);
  std::uint32_t last_write_seen = 0;
  {
    Gate gate(side);
    side.enqueue([&] {
      p[0] = 0x33333333u;
      last_write_seen = p[0];
    });  // the stream's last use
    heap.deallocate(p, side.ref());
    EXPECT_EQ(word_at(p), kFresh);  // the poison waits behind the stream's work
  }
  side.synchronize();
  EXPECT_EQ(last_write_seen, 0x33333333u);
  EXPECT_EQ(word_at(p), kFreed);
  EXPECT_EQ(heap.collect(), 1u);
}

TEST(CheckHeap, DestructionWaitsForQueuedWorkOnLiveAndFreedPages) {
  HostBackend backend;
  const std::size_t page = backend.granularity();
  HostStream stream;
  std::atomic<int> done{0};
  {
    CheckHeap heap(backend, poisoned(64 * page));
    heap.add_user(stream.ref());
    auto* live = static_cast<std::uint32_t*>(heap.allocate(page, 4, StreamRef{}));
    auto* freed = static_cast<std::uint32_t*>(heap.allocate(page, 4, StreamRef{}));
    stream.enqueue([&, live, freed] {
      std::this_thread::sleep_for(30ms);  // still running when the heap is destroyed
      live[0] = freed[0];
      ++done;
    });
    // Freed on the task's stream: the poison is queued behind the read (a free on the null stream
    // would poison at once, racing the task; TSan saw that).
    heap.deallocate(freed, stream.ref());
  }
  EXPECT_EQ(done.load(), 1);  // an early unmap would have faulted the task instead
  const CallCounts c = backend.calls();
  EXPECT_EQ(c[Call::Unmap], 2u);
  EXPECT_EQ(c[Call::ReleaseChunk], 2u);
  EXPECT_EQ(c[Call::FreeVa], 1u);
  EXPECT_EQ(c[Call::CreateFence], c[Call::DestroyFence]);
}

TEST(CheckHeap, OutOfMemoryWaitsForPendingFreesThenRetries) {
  HostBackend host;
  const std::size_t page = host.granularity();
  LimitingBackend limited(host, 2 * page);
  HostStream stream;  // outlives the heap, which fences it until its destruction
  CheckHeap heap(limited, poisoned(64 * page));
  heap.add_user(stream.ref());
  void* a = heap.allocate(page, 4, StreamRef{});
  void* b = heap.allocate(page, 4, StreamRef{});
  stream.enqueue([] { std::this_thread::sleep_for(30ms); });
  heap.deallocate(a, StreamRef{});  // pending behind the stream's 30 ms of work
  EXPECT_EQ(heap.stats().pending, 1u);
  void* c = heap.allocate(page, 4, StreamRef{});  // waits for the stream, then reuses the memory
  EXPECT_EQ(heap.stats().pending, 0u);
  EXPECT_EQ(host.calls()[Call::WaitFence], 2u);  // the free's fences: the busy stream, the default
  try {
    (void)heap.allocate(page, 4, StreamRef{});
    FAIL() << "a third page fitted under a limit of two";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("2 live allocation(s)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("limit of"), std::string::npos) << e.what();
  }
  heap.deallocate(b, StreamRef{});
  heap.deallocate(c, StreamRef{});
  EXPECT_EQ(limited.used_bytes(), 0u);
}

}  // namespace
}  // namespace memplan::arena
