// Sequence parallelism, Ulysses-style, for the step program: rank r of N holds tokens
// [r T/N, (r+1) T/N) of a pass and runs the embedding, norms, projections, MLP and Euler update on
// those rows alone. Around attention the exchange goes from token shards to head shards and back:
// q, k, v of the shard ([T/N, H, d]) are packed into N blocks of [T/N, H/N, d], one all_to_all
// gives every rank all T tokens of its H/N heads, attention runs on them (the same kernels, dense
// or block-sparse), and the output goes back the same way. After the update an all_gather gives
// every rank the whole latents (the next step's input; the next pass's seed). Every buffer is a
// step allocation and every collective a launch, so they run on planned addresses and are part of
// a captured step. Shards are equal: T and H must divide by N (checked up front, the numbers
// named).
#pragma once

#include <cstdint>

#include "config.hpp"
#include "memplan/comm/communicator.hpp"
#include "model.hpp"
#include "ops.hpp"
#include "span_timer.hpp"
#include "step_memory.hpp"

namespace denoise {

struct TokenShard {
  std::int64_t first = 0;  // the shard's first token in the pass
  std::int64_t rows = 0;
};

class SequenceParallel {
 public:
  SequenceParallel(Ops& ops, memplan::comm::Communicator& comm) : ops_(ops), comm_(comm) {}

  [[nodiscard]] int rank() const noexcept { return comm_.rank(); }
  [[nodiscard]] int ranks() const noexcept { return comm_.ranks(); }

  // Throws InvalidArgument naming the numbers when a pass's tokens or the heads do not split into
  // `ranks` equal shards.
  static void check_shape(const Config& config, int ranks);

  // This rank's rows of a pass of `tokens` tokens.
  [[nodiscard]] TokenShard shard(std::int64_t tokens) const;

  // q, k, v of this rank's tokens ([3][rows][H d] at `qkv`, rope applied; freed here) -> the
  // attention output of the same tokens, [rows][H d], a step allocation of `mem`. `full`: the
  // whole pass (all tokens, all heads).
  [[nodiscard]] void* attend(StepMemory& mem, void* qkv, const Dims& full, Attn attn);

  // latents[shard] + dt * velocity ([rows][hidden] at `velocity`), gathered into every rank's
  // latents; the step counter advanced.
  void update_latents(StepMemory& mem, const Pass& pass, const void* velocity);

  // Times every collective with `timer` (steps that run eagerly), or nothing when null.
  void time_collectives(SpanTimer* timer) noexcept { timer_ = timer; }

 private:
  void all_to_all(const void* send, void* recv, std::size_t bytes_per_rank, Stream s);
  void all_gather(const void* send, void* recv, std::size_t bytes, Stream s);

  Ops& ops_;
  memplan::comm::Communicator& comm_;
  SpanTimer* timer_ = nullptr;
};

}  // namespace denoise
