// The compiler's lock, biased towards the thread that drives the steps.
//
// Replay takes the lock twice per allocate/free pair, and an atomic read-modify-write costs about
// as much as the whole replay. So the thread that began the first step (the owner) enters with
// plain stores and loads: it announces itself in `owner_inside_` and proceeds unless another
// thread has revoked the bias. Any other thread takes a mutex, revokes the bias, and then makes
// the owner's stores visible with one heavy barrier (membarrier(2)) before it waits for the owner
// to leave. The heavy barrier on one side and the compiler barrier on the other guarantee that
// either the revoker sees the owner inside, or the owner sees the revocation (an asymmetric
// Dekker, as in userspace RCU). The revocation stays until the owner next takes the mutex, so a
// second thread that keeps calling pays for one barrier, not one per call.
//
// Without membarrier (old kernels, some sandboxes) every thread takes the mutex. A compiler built
// with thread_safe = false takes no lock at all.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace memplan {

class CompilerLock {
 public:
  explicit CompilerLock(bool enabled) noexcept;

  void lock() noexcept {
    if (!enabled_) return;
    if (biased_ && owner_.load(std::memory_order_relaxed) == std::this_thread::get_id() &&
        !revoked_.load(std::memory_order_relaxed)) [[likely]] {
      owner_inside_.store(true, std::memory_order_relaxed);
      std::atomic_signal_fence(
          std::memory_order_seq_cst);  // the revoker's membarrier pairs with it
      if (!revoked_.load(std::memory_order_acquire)) [[likely]] {
        held_by_owner_fast_ = true;
        return;
      }
      owner_inside_.store(false, std::memory_order_release);
    }
    lock_slow();
  }

  void unlock() noexcept {
    if (!enabled_) return;
    if (held_by_owner_fast_) [[likely]] {
      held_by_owner_fast_ = false;
      owner_inside_.store(false, std::memory_order_release);
      return;
    }
    mutex_.unlock();
  }

  // Makes the calling thread the owner if there is none yet; call with the lock held.
  void claim_ownership() noexcept {
    if (owner_.load(std::memory_order_relaxed) == std::thread::id()) {
      owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    }
  }

 private:
  void lock_slow() noexcept;

  const bool enabled_;
  const bool biased_;                      // membarrier is available
  std::atomic<std::thread::id> owner_{};   // set once, by the first step's thread
  std::atomic<bool> owner_inside_{false};  // written by the owner only
  std::atomic<bool> revoked_{false};       // the owner must take the mutex
  bool held_by_owner_fast_ = false;        // touched only by the holder of the lock
  std::mutex mutex_;
};

}  // namespace memplan
