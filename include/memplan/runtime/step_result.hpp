// What one step did, as Compiler::end_step() returns it: how its events were served, on which
// branch, whether and why it broke. Compiler::step_so_far() gives the same record for the running
// step, up to its last event. A caller (the capture layer, a runtime's log) learns what happened
// from it instead of diffing Stats around the step.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "memplan/runtime/stats.hpp"

namespace memplan {

enum class StepKind : std::uint8_t {
  Replayed,  // every event matched a known branch: base + offset, no allocator call
  Recorded,  // the first run of the step, or a break: it recorded a new branch
  Dynamic,   // a break past the branch cap: served best fit, nothing learned
};
[[nodiscard]] std::string_view to_string(StepKind kind) noexcept;

struct StepResult {
  StepKind kind = StepKind::Replayed;
  std::uint64_t step = 0;    // the step's serial number, as in BreakRecord::step
  std::uint64_t events = 0;  // its allocations and frees (inside pauses and from other threads:
                             // none, the pool serves those)
  std::uint64_t recorded_allocations = 0;   // served best fit, recording or dynamic
  std::optional<BreakReason> break_reason;  // its break: a step breaks at most once (it records
                                            // from there on)
  // end_step only: the branch that served the step (Replayed) or that it recorded (Recorded);
  // none for a dynamic step.
  std::optional<std::uint32_t> branch;
  std::uint64_t rogues = 0;  // end_step only: its allocations still live at its end
  // Which of its branch's two plans served it: 1 only on a branch with a period-two output (an
  // output kept until the next step's exists, docs/compiler.md), whose steps alternate. A
  // capture keyed by branch must be keyed by parity too: the pointers differ.
  std::uint8_t parity = 0;

  [[nodiscard]] bool replayed() const noexcept { return kind == StepKind::Replayed; }
};

}  // namespace memplan
