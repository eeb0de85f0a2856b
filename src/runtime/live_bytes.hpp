// Bytes live now and the most that were live at once: in the planned arena (the running step's
// buffers and the rogues) and in the persistent pool. Every allocation and free of the compiler
// passes here, the replay fast path included, so the counts are exact, not sampled. A peak can
// only rise when something is allocated, so only allocations compare: a few adds and compares.
// The rogues' and the pool's live bytes are kept where they are counted already (Stats, the
// pool) and passed in.
#pragma once

#include <algorithm>
#include <cstdint>

#include "memplan/types.hpp"

namespace memplan {

class LiveBytes {
 public:
  // A buffer of the running step was placed in the planned arena.
  void step_allocated(Bytes size, std::uint64_t rogue_bytes, std::uint64_t pool_bytes) noexcept {
    step_ += static_cast<std::uint64_t>(size);
    noted(rogue_bytes, pool_bytes);
  }
  void step_freed(Bytes size) noexcept { step_ -= static_cast<std::uint64_t>(size); }
  // A buffer of the step outlives it in the arena as a carried output (carried_outputs.hpp), or
  // one is freed (or becomes a rogue, counted there from then on).
  void carried(Bytes size) noexcept { carried_ += static_cast<std::uint64_t>(size); }
  void carried_gone(Bytes size) noexcept { carried_ -= static_cast<std::uint64_t>(size); }
  // The step ended: its buffers still live became rogues (counted there from now on).
  void step_ended() noexcept { step_ = 0; }
  // Something was allocated (in the arena, the pool), or rogues were made: the peaks may rise.
  void noted(std::uint64_t rogue_bytes, std::uint64_t pool_bytes) noexcept {
    const std::uint64_t arena = step_ + carried_ + rogue_bytes;
    arena_peak_ = std::max(arena_peak_, arena);
    pool_peak_ = std::max(pool_peak_, pool_bytes);
    rogue_peak_ = std::max(rogue_peak_, rogue_bytes);
    total_peak_ = std::max(total_peak_, arena + pool_bytes);
  }

  [[nodiscard]] std::uint64_t step_bytes() const noexcept { return step_; }
  [[nodiscard]] std::uint64_t carried_bytes() const noexcept { return carried_; }
  [[nodiscard]] std::uint64_t arena_peak() const noexcept { return arena_peak_; }
  [[nodiscard]] std::uint64_t pool_peak() const noexcept { return pool_peak_; }
  [[nodiscard]] std::uint64_t rogue_peak() const noexcept { return rogue_peak_; }
  [[nodiscard]] std::uint64_t total_peak() const noexcept { return total_peak_; }

 private:
  std::uint64_t step_ = 0;
  std::uint64_t carried_ = 0;
  std::uint64_t arena_peak_ = 0;
  std::uint64_t pool_peak_ = 0;
  std::uint64_t rogue_peak_ = 0;
  std::uint64_t total_peak_ = 0;
};

}  // namespace memplan
