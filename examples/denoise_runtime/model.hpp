// The model: N transformer blocks of {rmsnorm, QKV projection, rope, attention (dense outside the
// schedule window, block-sparse inside), output projection, residual, rmsnorm, MLP with GELU,
// residual}, a final projection to the velocity, and one flow-matching Euler update per step.
// Weights are synthetic (a seeded hash); the step program is written once against StepMemory and
// Ops, so the three allocation modes and both devices run exactly the same work.
#pragma once

#include <cstdint>
#include <map>
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

  // One denoise step of `pass` at `step`: every activation and workspace through `mem`.
  // `rope` caches the rope table per token count across steps (kept buffers).
  void step(const Pass& pass, Attn attn, std::map<std::int64_t, void*>& rope,
            StepMemory& mem) const;

  [[nodiscard]] std::vector<float> read_latents(const Pass& pass) const;

 private:
  void* weight(std::size_t elements, float scale, bool act, Stream s);

  const Config& config_;
  Ops& ops_;
  std::vector<void*> fixed_;
  std::vector<BlockWeights> blocks_;
  void* temb_ = nullptr;
  void* final_norm_ = nullptr;
  void* final_out_ = nullptr;
  std::vector<Pass> passes_;
};

}  // namespace denoise
