// Stream safety on the host: a HostStream stands in for a CUDA stream, so "release() while work
// is queued must wait" is tested on any machine (an early unmap would fault: the range goes back
// to PROT_NONE).
#include "memplan/arena/host_stream.hpp"
#include "memplan/arena/arena.hpp"
#include "memplan/arena/host_backend.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace memplan::arena {
namespace {

using namespace std::chrono_literals;

TEST(HostStream, RunsTasksInOrderAndWaitsOnTickets) {
  HostStream stream;
  std::vector<int> order;  // written by the worker; read here only when no task can run
  std::atomic<bool> go{false};
  std::atomic<bool> second_may_run{false};
  stream.enqueue([&] {
    while (!go.load()) std::this_thread::yield();
    order.push_back(1);
  });
  const std::uint64_t t1 = stream.record();
  stream.enqueue([&] {
    while (!second_may_run.load()) std::this_thread::yield();
    order.push_back(2);
  });
  go = true;
  stream.wait(t1);
  EXPECT_EQ(order, std::vector<int>{1});  // the first task is done, the second still held
  second_may_run = true;
  stream.synchronize();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(HostStream, ReleaseWaitsForQueuedWorkThatTouchesTheArena) {
  HostBackend backend;
  const std::size_t chunk = backend.granularity();
  Arena arena(backend, 4 * chunk, ArenaOptions{chunk, "t"});
  HostStream stream;
  arena.add_user(stream.ref());
  arena.ensure_mapped(4 * chunk);

  std::atomic<bool> done{false};
  auto* memory = static_cast<unsigned char*>(arena.base());
  stream.enqueue([&] {
    std::this_thread::sleep_for(50ms);  // the "kernel" is still queued when release() starts
    std::memset(memory, 0xAB, 4 * chunk);
    done = true;
  });
  arena.release();
  EXPECT_TRUE(done.load());  // release waited for the stream, so the write hit mapped memory
  EXPECT_EQ(arena.mapped_bytes(), 0u);
  EXPECT_EQ(arena.calls()[Call::WaitFence], 1u);
}

TEST(HostStream, TrimWaitsForEveryRegisteredStream) {
  HostBackend backend;
  const std::size_t chunk = backend.granularity();
  Arena arena(backend, 4 * chunk, ArenaOptions{chunk, "t"});
  HostStream a;
  HostStream b;
  arena.add_user(a.ref());
  arena.add_user(b.ref());
  arena.ensure_mapped(4 * chunk);
  std::atomic<int> done{0};
  auto* top = static_cast<unsigned char*>(arena.address(3 * chunk));
  for (HostStream* s : {&a, &b}) {
    s->enqueue([&, mine = top + (s == &a ? 0 : 1)] {  // a byte each: the streams run at once
      std::this_thread::sleep_for(20ms);
      *mine = 1;
      ++done;
    });
  }
  arena.trim(chunk);
  EXPECT_EQ(done.load(), 2);
  const CallCounts c = arena.calls();
  EXPECT_EQ(c[Call::RecordFence], 2u);
  EXPECT_EQ(c[Call::WaitFence], 2u);
  arena.remove_user(a.ref());
  arena.remove_user(b.ref());
}

}  // namespace
}  // namespace memplan::arena
