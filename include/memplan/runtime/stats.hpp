// What the memory compiler counts, as plain data: steps, breaks and why, rogues, memory.
// Stats is a snapshot (copy it, diff it); the break log keeps one record per break.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "memplan/arena/call_counts.hpp"

namespace memplan {

enum class BreakReason : std::uint8_t {
  UnknownAllocation,  // no recorded allocation of this size/alignment/tag at this point
  RangeOccupied,      // the recorded allocation matches, but a rogue still holds its range
  UnexpectedEnd,      // the step ended where the record goes on
};
inline constexpr std::size_t kBreakReasons = 3;
// (A free is never a break: one the path has later is matched there, see frees_out_of_order.)
[[nodiscard]] std::string_view to_string(BreakReason reason) noexcept;

struct BreakRecord {
  std::uint64_t step = 0;  // step serial number (0-based, over all step names)
  std::string step_name;
  std::string scope;        // the scope path at the break, "denoise/block.3"
  std::uint64_t event = 0;  // index of the event within the step
  BreakReason reason = BreakReason::UnknownAllocation;
  std::string expected;  // what the allocation tree had at this point
  std::string came;      // what the program did instead
};

struct Stats {
  std::uint64_t steps_recorded = 0;  // steps that recorded some or all of their events
  std::uint64_t steps_replayed = 0;  // steps served wholly from a known branch
  std::uint64_t steps_aborted = 0;   // steps ended by an exception (abort_step)
  std::uint64_t steps_dynamic = 0;   // steps served without learning, past the branch cap
  std::uint64_t breaks = 0;
  std::array<std::uint64_t, kBreakReasons> breaks_by_reason{};
  std::uint64_t branches = 0;

  std::uint64_t replayed_allocations = 0;      // served from a plan: base + offset
  std::uint64_t recorded_allocations = 0;      // served dynamically while recording
  std::uint64_t paused_allocations = 0;        // inside pause scopes or outside steps: the pool
  std::uint64_t learned_site_allocations = 0;  // at learned rogue sites: the pool
  std::uint64_t frees_out_of_order = 0;        // replayed frees that came before the path has them

  std::uint64_t rogues = 0;  // rogues ever found (allocations live at step end)
  std::uint64_t rogue_bytes = 0;
  std::uint64_t live_rogues = 0;  // rogues not yet freed
  std::uint64_t live_rogue_bytes = 0;
  std::uint64_t learned_rogue_sites = 0;
  std::uint64_t forgotten_rogue_sites = 0;  // learned, then freed in their step 8+ steps in a row
  std::uint64_t window_moves = 0;  // plans moved: clear of live rogues, or onto the pool's chunk
  // Step outputs kept until the next step's exists, planned in the arena by period-two placement
  // (two plans of their branch that alternate; docs/compiler.md): sites planned so, sites that
  // fell back to the pool (the caller broke the habit), outputs left in the plans at a step's end
  // (ever: a graph launched outside steps must not outlive a new one), and those live now.
  std::uint64_t period_two_outputs = 0;
  std::uint64_t period_two_fallbacks = 0;
  std::uint64_t carried_outputs = 0;
  std::uint64_t live_carried_outputs = 0;
  std::uint64_t live_carried_bytes = 0;

  std::uint64_t planned_peak_bytes = 0;  // the largest plan of any branch
  std::uint64_t lower_bound_bytes = 0;   // that branch's lower bound
  std::uint64_t mapped_bytes = 0;        // physical memory mapped for planned buffers
  // Bytes of a pool chunk that the plans use (share_pool_chunk): the pool's memory, counted in
  // pool_mapped_bytes and not in mapped_bytes.
  std::uint64_t pool_lent_bytes = 0;
  std::uint64_t reserved_bytes = 0;     // virtual addresses reserved for them
  std::uint64_t pool_mapped_bytes = 0;  // the persistent pool's physical memory
  std::uint64_t pool_live_bytes = 0;    // the pool's live buffers, each rounded up to 256

  // Bytes live now and the most live at once since the compiler was made, exact (every
  // allocation and free counts, replayed ones included). The planned arena holds the running
  // step's buffers and the rogues; the pool the pause-scope, outside-step and learned-site
  // buffers. peak_live_bytes is the most of both at once, not the sum of their peaks.
  std::uint64_t arena_live_bytes = 0;  // step buffers + carried outputs + live rogues
  std::uint64_t arena_peak_live_bytes = 0;
  std::uint64_t pool_peak_live_bytes = 0;
  std::uint64_t peak_live_rogue_bytes = 0;
  std::uint64_t live_bytes = 0;  // arena + pool
  std::uint64_t peak_live_bytes = 0;
  // Physical memory: what the arena and the pool map together now and at most, and the budget
  // (CompilerOptions::memory_budget_bytes; 0: none) that the mapped bytes never pass.
  std::uint64_t peak_mapped_bytes = 0;  // arena + pool
  std::uint64_t memory_budget_bytes = 0;

  arena::CallCounts backend_calls;  // every call the physical backend made
};

}  // namespace memplan
