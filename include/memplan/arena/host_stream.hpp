// A host stream: an in-order work queue on its own thread, the host backend's counterpart of a
// CUDA stream. Work queued on it may touch arena memory later, so an arena that lists it as a user
// waits for it (a fence is a ticket: the number of tasks queued so far) before unmapping.
#pragma once

#include "memplan/arena/backend.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace memplan::arena {

class HostStream {
 public:
  HostStream();
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;
  ~HostStream();  // finishes the queued work, then joins

  // Queues `task`; tasks run one at a time, in order. A task must not throw.
  void enqueue(std::function<void()> task);
  // The ticket of the work queued so far: wait(ticket) returns once all of it has run.
  std::uint64_t record();
  void wait(std::uint64_t ticket);
  // Whether the work of `ticket` has run, without blocking.
  bool done(std::uint64_t ticket);
  void synchronize() { wait(record()); }

  StreamRef ref() noexcept { return StreamRef{this}; }

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable queued_;
  std::condition_variable done_;
  std::deque<std::function<void()>> tasks_;
  std::uint64_t enqueued_ = 0;
  std::uint64_t completed_ = 0;
  bool stopping_ = false;
  std::thread worker_;  // last: starts once the members above exist
};

}  // namespace memplan::arena
