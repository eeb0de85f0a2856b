// Weight streaming planned with the activations. The weights of each block (a transformer block's
// tensors, one contiguous range) live in host memory the caller owns (pinned on CUDA). Resident
// blocks are copied once into the compiler's persistent pool; a streamed block gets, in every
// step, a device staging slot that is an ordinary tagged allocation of the step ("weights"), so
// the compiler plans the slots in the same solve as the activations, replays them at fixed offsets
// with no allocator call, and a captured step holds the copies as graph nodes.
//
// In a step (StreamedStep, one per step, on the step's StepContext):
//   enter(i): for every streamed block j <= i + depth not yet fetched, allocates j's slot and
//             launches copy_after (the copy starts once the work queued so far has run: the
//             slot's range was freed by it); then launches wait_for(i) when i is streamed, so
//             block i's kernels wait for its copy. Returns block i's device weights.
//   leave(i): frees block i's slot, after block i's launches.
// Blocks are entered in order, each once. So block i + depth is copied while block i computes,
// and depth + 1 slots are live at once at most. An exception in the step (an abort) frees every
// slot the step holds, after waiting for the copies already issued, so no slot stays held and no
// copy lands in memory the compiler hands out again.
#pragma once

#include <cstddef>
#include <vector>

#include "memplan/capture/step_runner.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/stream/copy_engine.hpp"
#include "memplan/stream/streaming_plan.hpp"

namespace memplan::stream {

struct WeightBlock {
  const void* host = nullptr;  // pinned host memory on CUDA; the caller keeps it alive
  std::size_t bytes = 0;
};

// The slots' tag in the step's trace, pictures and reports.
inline constexpr std::string_view kSlotTag = "weights";

class WeightStreamer {
 public:
  // Throws InvalidArgument when the plan is not for these blocks or a block is empty. Makes the
  // engine's events (one per block).
  WeightStreamer(Compiler& compiler, CopyEngine& engine, std::vector<WeightBlock> blocks,
                 StreamingPlan plan);
  WeightStreamer(const WeightStreamer&) = delete;
  WeightStreamer& operator=(const WeightStreamer&) = delete;
  ~WeightStreamer();  // frees the resident blocks

  // Outside steps: allocates the resident blocks in the persistent pool and copies them, waiting
  // for the copies. `stream` is the compute stream that will read them. Once.
  void load_resident(StreamRef stream);

  [[nodiscard]] const StreamingPlan& plan() const noexcept { return plan_; }
  [[nodiscard]] std::size_t blocks() const noexcept { return blocks_.size(); }
  [[nodiscard]] const WeightBlock& block(std::size_t i) const { return blocks_.at(i); }
  // A resident block's device copy (after load_resident); nullptr for a streamed block.
  [[nodiscard]] void* resident(std::size_t i) const { return resident_.at(i); }
  [[nodiscard]] CopyEngine& engine() const noexcept { return engine_; }

 private:
  Compiler& compiler_;
  CopyEngine& engine_;
  std::vector<WeightBlock> blocks_;
  StreamingPlan plan_;
  std::vector<void*> resident_;
  bool loaded_ = false;
};

class StreamedStep {
 public:
  StreamedStep(WeightStreamer& streamer, capture::StepContext& ctx);
  StreamedStep(const StreamedStep&) = delete;
  StreamedStep& operator=(const StreamedStep&) = delete;
  // Frees the slots still held (an abort, or a step that left early), after waiting for the
  // copies issued so far.
  ~StreamedStep();

  // Before block i's launches; blocks in order, each once. Throws InvalidArgument otherwise.
  [[nodiscard]] void* enter(std::size_t block);
  // After block i's launches: frees its slot (nothing for a resident block).
  void leave(std::size_t block);
  // Slots held now (copies issued and blocks not yet left).
  [[nodiscard]] std::size_t slots_held() const noexcept;

 private:
  void fetch(std::size_t block);

  WeightStreamer& streamer_;
  capture::StepContext& ctx_;
  std::vector<void*> slots_;  // per block: its slot while held
  std::size_t next_enter_ = 0;
  std::size_t next_fetch_ = 0;
  bool in_block_ = false;
};

}  // namespace memplan::stream
