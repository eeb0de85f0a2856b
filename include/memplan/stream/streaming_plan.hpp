// How many weight blocks stay resident and how deep the prefetch goes, from the budget and the
// activations' recorded peak. Resident blocks are the first ones the step runs (their compute
// hides the copies of the first streamed blocks); each streamed block needs a staging slot from
// the moment its copy is issued (before block i - depth runs) until it has run, so depth + 1 slots
// are live at once at most, beside the activations, in the same plan. The choice keeps as many
// blocks resident as fit at depth 1 (each resident block takes its bytes off every step's
// copies), then deepens the prefetch (up to max_depth) only with room to spare.
#pragma once

#include <cstddef>
#include <vector>

namespace memplan::stream {

struct StreamingInputs {
  std::size_t budget_bytes = 0;  // device memory for everything below; 0: no budget (all resident)
  std::size_t fixed_bytes = 0;   // what the caller holds outside the blocks and the step's plan
  std::size_t activation_peak_bytes = 0;  // the step's recorded plan without weights
  std::vector<std::size_t> block_bytes;   // each block's weights, in the order the step runs them
  std::size_t arena_chunk_bytes = 1;      // the planned arena maps in these (CompilerOptions)
  std::size_t pool_chunk_bytes = 1;       // the persistent pool maps in these
  std::size_t max_depth = 2;              // >= 1
};

struct StreamingPlan {
  std::size_t blocks = 0;
  std::size_t resident_blocks = 0;  // blocks [0, resident_blocks) live in the persistent pool
  std::size_t depth = 0;  // block i + depth's copy is issued before block i runs; 0: none streamed
  std::size_t resident_bytes = 0;        // in the pool, rounded up to its chunk
  std::size_t slot_bytes = 0;            // staging slots live at once, at most
  std::size_t streamed_bytes = 0;        // copied host to device in every step
  std::size_t predicted_peak_bytes = 0;  // fixed + resident + activations and slots (arena chunks)
  std::size_t budget_bytes = 0;

  [[nodiscard]] bool streamed(std::size_t block) const noexcept { return block >= resident_blocks; }
};

// Throws OutOfMemory naming the budget and each part when not even one block streamed at depth 1
// fits, InvalidArgument for no blocks, a zero-byte block or max_depth 0.
[[nodiscard]] StreamingPlan choose_streaming(const StreamingInputs& inputs);

// Every block resident, nothing streamed (no budget, or the caller's choice).
[[nodiscard]] StreamingPlan all_resident(const std::vector<std::size_t>& block_bytes);

}  // namespace memplan::stream
