// The Ulysses exchange (see sequence_parallel.hpp). With N ranks, t = T/N rows, H/N heads and C
// the bytes of one token's H/N heads (H/N * d activations):
//   qkv  [3][t][N][C]   --transpose (3t, N)-->  send [N][3][t][C]   (block r: rank r's heads)
//   send --all_to_all-->  recv [N][3][t][C]                         (block s: rank s's tokens)
//   recv --transpose (N, 3)-->  heads [3][N t][C] = q, k, v of all T tokens, this rank's heads
//   attention -> out [T][C] = [N][t][C]: already the blocks to send back (block s: s's tokens)
//   out  --all_to_all-->  back [N][t][C]   --transpose (N, t)-->  att [t][N][C] = [t][H d]
#include "sequence_parallel.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <string>

#include "memplan/error.hpp"

namespace denoise {

void SequenceParallel::check_shape(const Config& c, int ranks) {
  if (ranks < 1) throw memplan::InvalidArgument(fmt::format("--ranks {}: need >= 1", ranks));
  const auto refuse = [&](const std::string& what, std::int64_t n) {
    throw memplan::InvalidArgument(fmt::format(
        "--ranks {}: {} do not split into {} equal shards ({} % {} = {}); sequence parallelism "
        "needs the heads and every pass's tokens divisible by the ranks",
        ranks, what, ranks, n, ranks, n % ranks));
  };
  if (c.heads % ranks != 0) refuse(fmt::format("{} heads", c.heads), c.heads);
  if (c.tokens % ranks != 0) refuse(fmt::format("the first pass's {} tokens", c.tokens), c.tokens);
  if (c.second_tokens % ranks != 0)
    refuse(fmt::format("the second pass's {} tokens", c.second_tokens), c.second_tokens);
}

TokenShard SequenceParallel::shard(std::int64_t tokens) const {
  const std::int64_t rows = tokens / ranks();
  return {rows * rank(), rows};
}

void* SequenceParallel::attend(StepMemory& mem, void* qkv, const Dims& full, Attn attn) {
  Ops& ops = ops_;
  const std::int64_t n = ranks();
  const std::int64_t t = full.tokens / n;
  const Dims mine{full.tokens, static_cast<int>(full.heads / n), full.head_dim};
  const std::size_t chunk = static_cast<std::size_t>(mine.hidden()) * ops.act_bytes();
  const std::size_t shard_bytes = static_cast<std::size_t>(t) * n * chunk;  // [t][H d]

  void* send = mem.alloc(3 * shard_bytes, "sp_send");
  mem.launch([&ops, send, qkv, t, n, chunk](Stream s) {
    ops.transpose_blocks(send, qkv, 3 * t, n, chunk, s);
  });
  mem.free(qkv);
  void* recv = mem.alloc(3 * shard_bytes, "sp_recv");
  mem.launch([this, send, recv, t, chunk](Stream s) { all_to_all(send, recv, 3 * t * chunk, s); });
  mem.free(send);
  void* heads = mem.alloc(3 * shard_bytes, "sp_heads");
  mem.launch([&ops, heads, recv, t, n, chunk](Stream s) {
    ops.transpose_blocks(heads, recv, n, 3, t * chunk, s);
  });
  mem.free(recv);

  const std::size_t ws_bytes = ops.attention_workspace(mine, attn);
  void* ws = ws_bytes != 0 ? mem.alloc(ws_bytes, "attn_workspace") : nullptr;
  void* out = mem.alloc(shard_bytes, "sp_attention");
  auto* q = static_cast<std::byte*>(heads);
  std::byte* k = q + shard_bytes;
  std::byte* v = k + shard_bytes;
  mem.launch([&ops, out, q, k, v, ws, ws_bytes, mine, attn](Stream s) {
    ops.attention(out, q, k, v, ws, ws_bytes, mine, attn, /*means_given=*/false, s);
  });
  if (ws != nullptr) mem.free(ws);
  mem.free(heads);

  void* back = mem.alloc(shard_bytes, "sp_back");
  mem.launch([this, out, back, t, chunk](Stream s) { all_to_all(out, back, t * chunk, s); });
  mem.free(out);
  void* att = mem.alloc(shard_bytes);
  mem.launch([&ops, att, back, t, n, chunk](Stream s) {
    ops.transpose_blocks(att, back, n, t, chunk, s);
  });
  mem.free(back);
  return att;
}

void SequenceParallel::update_latents(StepMemory& mem, const Pass& pass, const void* velocity) {
  Ops& ops = ops_;
  const TokenShard mine = shard(pass.dims.tokens);
  const std::int64_t n = mine.rows * pass.dims.hidden();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  auto* next = static_cast<float*>(mem.alloc(bytes, "sp_latents"));
  const float* from = pass.latents + mine.first * pass.dims.hidden();
  mem.launch([this, &ops, next, from, velocity, pass, n, bytes](Stream s) {
    ops.copy(next, from, bytes, s);
    ops.euler(next, velocity, pass.sched, pass.counter, n, s);
    all_gather(next, pass.latents, bytes, s);
    ops.advance(pass.counter, s);
  });
  mem.free(next);
}

void SequenceParallel::all_to_all(const void* send, void* recv, std::size_t bytes_per_rank,
                                  Stream s) {
  if (timer_ != nullptr) timer_->begin(s);
  comm_.all_to_all(send, recv, bytes_per_rank, s);
  if (timer_ != nullptr) timer_->end(s);
}

void SequenceParallel::all_gather(const void* send, void* recv, std::size_t bytes, Stream s) {
  if (timer_ != nullptr) timer_->begin(s);
  comm_.all_gather(send, recv, bytes, s);
  if (timer_ != nullptr) timer_->end(s);
}

}  // namespace denoise
