// The model: N transformer blocks of {rmsnorm, QKV projection, rope, attention (dense outside the
// schedule window, block-sparse inside), output projection, residual, rmsnorm, MLP with GELU,
// residual}, a final projection to the velocity, and one flow-matching Euler update per step.
// Weights are synthetic (a seeded hash); the step program is written once against StepMemory,
// Ops and a BlockSource (where each block's weights are while it runs), so the allocation modes,
// the weight placements and both devices run exactly the same work. A block's six tensors are one
// contiguous range (BlockLayout): on the device when resident, in pinned host memory otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "config.hpp"
#include "ops.hpp"
#include "step_memory.hpp"

namespace denoise {

struct BlockWeights {
  void* norm1 = nullptr;  // [hidden]
  void* qkv = nullptr;    // [3][hidden][hidden]
  void* out = nullptr;    // [hidden][hidden]
  void* norm2 = nullptr;
  void* mlp1 = nullptr;  // [hidden][mlp]
  void* mlp2 = nullptr;  // [mlp][hidden]
};

// Where each tensor of a block sits in the block's one range of bytes (each 256-byte aligned).
struct BlockLayout {
  std::size_t norm1 = 0, qkv = 0, out = 0, norm2 = 0, mlp1 = 0, mlp2 = 0;
  std::size_t bytes = 0;
  [[nodiscard]] BlockWeights at(void* base) const;
};

// The weights of each block during a step: enter(b) before block b's launches (its weights on
// the device), leave(b) after them. Blocks are entered in order.
class SequenceParallel;

class BlockSource {
 public:
  BlockSource() = default;
  BlockSource(const BlockSource&) = delete;
  BlockSource& operator=(const BlockSource&) = delete;
  virtual ~BlockSource() = default;
  [[nodiscard]] virtual BlockWeights enter(int block) = 0;
  virtual void leave(int block) = 0;
};

// One sampling pass: its latents, schedule and step counter live in fixed memory.
struct Pass {
  int index = 0;
  Dims dims;
  int steps = 0;
  float t_start = 1.0f;      // the schedule runs t_start -> 0
  float* latents = nullptr;  // float [tokens, hidden]
  float* sched = nullptr;    // float [steps + 1]
  int* counter = nullptr;    // the step index, advanced by the step's last kernel
};

class Model {
 public:
  Model(const Config& config, Ops& ops);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  ~Model();

  // The passes of the configuration (one, or two with the second pass).
  [[nodiscard]] std::vector<Pass>& passes() { return passes_; }
  // Resets latents (seeded noise) and counters so that every mode starts from the same state.
  void reset_pass(const Pass& pass, Stream s);
  // The second pass starts from the first pass's result, tiled to its token count.
  void seed_from(const Pass& pass, const Pass& previous, Stream s);

  // Whether step `step` of `pass` runs sparse attention (inside the schedule window).
  [[nodiscard]] Attn attention_for(const Pass& pass, int step) const;

  // One denoise step of `pass` at `step`: every activation and workspace through `mem`, each
  // block's weights from `weights`. `rope` caches the rope table per token count across steps
  // (kept buffers). With `sp`, the step of one sequence-parallel rank: its token shard, attention
  // through the rank exchange, the latents gathered at the end (sequence_parallel.hpp).
  void step(const Pass& pass, Attn attn, std::map<std::int64_t, void*>& rope, StepMemory& mem,
            BlockSource& weights, SequenceParallel* sp = nullptr) const;

  // The weights on the device (Weights::Resident), as a source.
  [[nodiscard]] BlockSource& resident_weights();
  [[nodiscard]] const BlockLayout& layout() const { return layout_; }
  // Block b's weights in host memory (pinned on the GPU) when they are not resident.
  [[nodiscard]] const void* host_block(int b) const { return host_blocks_.at(b); }
  [[nodiscard]] int blocks() const { return config_.blocks; }
  // Device bytes the model holds itself (latents, schedules, the resident blocks, the other
  // weights): outside memplan's arena and pool.
  [[nodiscard]] std::size_t fixed_bytes() const { return fixed_bytes_; }

  [[nodiscard]] std::vector<float> read_latents(const Pass& pass) const;

 private:
  void* alloc_fixed(std::size_t bytes);
  void* weight(std::size_t elements, float scale, bool act, Stream s);
  void fill_weight(void* p, std::size_t elements, float scale, bool act, Stream s);

  class Resident;
  const Config& config_;
  Ops& ops_;
  std::vector<void*> fixed_;
  std::size_t fixed_bytes_ = 0;
  std::uint64_t weights_made_ = 0;  // seeds each weight tensor
  BlockLayout layout_;
  std::vector<BlockWeights> blocks_;  // resident: on the device
  std::vector<void*> host_blocks_;    // streamed or naive: in host memory
  std::unique_ptr<BlockSource> resident_;
  void* temb_ = nullptr;
  void* final_norm_ = nullptr;
  void* final_out_ = nullptr;
  std::vector<Pass> passes_;
};

}  // namespace denoise
