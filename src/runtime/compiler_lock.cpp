// The slow side of the biased lock: the mutex, the revocation and the heavy barrier.
#include "compiler_lock.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace memplan {
namespace {

bool register_membarrier() noexcept {
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

// A full memory barrier on every running thread of this process.
void heavy_barrier() noexcept {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // registered at construction: unreachable
  }
}

}  // namespace

CompilerLock::CompilerLock(bool enabled) noexcept
    : enabled_(enabled), biased_(enabled && register_membarrier()) {}

void CompilerLock::lock_slow() noexcept {
  mutex_.lock();
  if (!biased_) return;
  if (owner_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    // The owner holds the mutex: no other thread is inside. Lift the revocation for next time.
    revoked_.store(false, std::memory_order_relaxed);
    return;
  }
  if (!revoked_.load(std::memory_order_relaxed)) {
    revoked_.store(true, std::memory_order_relaxed);
    heavy_barrier();
  }
  while (owner_inside_.load(std::memory_order_acquire)) std::this_thread::yield();
}

}  // namespace memplan
