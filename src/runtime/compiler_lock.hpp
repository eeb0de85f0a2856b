// The compiler's lock. Replay takes it twice per allocate/free pair, so it must cost little when
// uncontended: a test-and-test-and-set flag is one atomic exchange and one store, where std::mutex
// costs about twice that. Waiters yield the processor, so a thread waiting while another plans a
// branch (milliseconds) does not burn a core. A compiler built with thread_safe = false (one
// thread drives it) skips the lock entirely.
#pragma once

#include <atomic>
#include <thread>

namespace memplan {

class CompilerLock {
 public:
  explicit CompilerLock(bool enabled) noexcept : enabled_(enabled) {}

  void lock() noexcept {
    if (!enabled_) return;
    while (held_.exchange(true, std::memory_order_acquire)) {
      while (held_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept {
    if (enabled_) held_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> held_{false};
  const bool enabled_;
};

}  // namespace memplan
