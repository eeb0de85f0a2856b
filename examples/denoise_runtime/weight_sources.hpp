// The weight placements as BlockSources for the step program: streamed (memplan::stream: staging
// slots planned with the activations, copies depth blocks ahead on a copy stream) and naive (a
// slot from the step's allocator and a copy the host waits for, before each block). And the
// streaming plan of a run: the activations' peak recorded by a probe compiler, then
// choose_streaming under the budget.
#pragma once

#include <cstddef>
#include <vector>

#include "config.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/stream/weight_streamer.hpp"
#include "model.hpp"

namespace denoise {

class StreamedBlocks final : public BlockSource {
 public:
  StreamedBlocks(memplan::stream::StreamedStep& step, const BlockLayout& layout)
      : step_(step), layout_(layout) {}
  BlockWeights enter(int block) override;
  void leave(int block) override;

 private:
  memplan::stream::StreamedStep& step_;
  const BlockLayout& layout_;
};

class NaiveBlocks final : public BlockSource {
 public:
  NaiveBlocks(StepMemory& mem, Ops& ops, const Model& model)
      : mem_(mem), ops_(ops), model_(model) {}
  BlockWeights enter(int block) override;
  void leave(int block) override;

 private:
  StepMemory& mem_;
  Ops& ops_;
  const Model& model_;
  void* slot_ = nullptr;
};

// The model's blocks in host memory, for a WeightStreamer.
[[nodiscard]] std::vector<memplan::stream::WeightBlock> host_blocks(const Model& model);

// The largest plan of the step's activations over every path the run takes (each pass, dense and
// sparse where the window has them), recorded by a compiler on a host backend with the launches
// dropped: the step's allocations without any weights.
[[nodiscard]] std::size_t activation_peak(Model& model, const memplan::CompilerOptions& options);

// What the streaming plan is chosen from: the budget, the model's own device bytes and the rope
// tables (in the pool), the activations' peak (a probe), the blocks and the chunks.
[[nodiscard]] memplan::stream::StreamingInputs streaming_inputs(
    const Config& config, Model& model, const memplan::CompilerOptions& options);

// Resident blocks and depth for the budget (all resident without one, with no probe). Throws
// OutOfMemory naming the parts when the budget cannot hold the step.
[[nodiscard]] memplan::stream::StreamingPlan plan_streaming(
    const Config& config, Model& model, const memplan::CompilerOptions& options);

// Host-to-device bandwidth, measured: one block's bytes copied from its host memory `repeats`
// times into a device buffer (the naive copy: on the stream, the host waiting), bytes per second.
[[nodiscard]] double measure_h2d_bandwidth(const Model& model, Ops& ops, int repeats = 5);

}  // namespace denoise
