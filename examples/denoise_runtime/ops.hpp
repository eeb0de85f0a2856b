// The kernels of the model, behind one interface with two implementations: CUDA (cuBLAS GEMMs,
// memplan's block-sparse attention, small elementwise kernels; activations in bf16) and the CPU
// (plain loops in float). Every op enqueues work on a stream and neither allocates nor syncs, so a
// step's launches can be captured. Per-step values (the timestep) are read from device memory
// (the schedule indexed by a device counter), never baked into a launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memplan/arena/backend.hpp"

namespace denoise {

using Stream = memplan::StreamRef;

struct Dims {
  std::int64_t tokens = 0;
  int heads = 0;
  int head_dim = 0;
  [[nodiscard]] int hidden() const { return heads * head_dim; }
};

enum class Attn : std::uint8_t { Dense, Sparse };

class Ops {
 public:
  Ops() = default;
  Ops(const Ops&) = delete;
  Ops& operator=(const Ops&) = delete;
  virtual ~Ops() = default;

  [[nodiscard]] virtual std::string name() const = 0;
  // Bytes of one activation element (2 for bf16 on the GPU, 4 for float on the CPU).
  [[nodiscard]] virtual std::size_t act_bytes() const = 0;
  [[nodiscard]] virtual std::size_t attention_workspace(const Dims& dims, Attn attn) const = 0;
  // Query blocks sharing one key-block list in sparse attention (attention_policy.hpp): 1 or 2.
  // The model sets it from its configuration; it holds for every later op.
  void set_query_blocks_per_list(int blocks) { query_blocks_per_list_ = blocks; }
  [[nodiscard]] int query_blocks_per_list() const { return query_blocks_per_list_; }

  // Memory outside the compared step memory: weights, latents, schedules (plain allocations).
  [[nodiscard]] virtual void* alloc_fixed(std::size_t bytes) = 0;
  virtual void free_fixed(void* p) noexcept = 0;
  virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
  // Host memory that copies to the device can read asynchronously (pinned on the GPU).
  [[nodiscard]] virtual void* alloc_host(std::size_t bytes) = 0;
  virtual void free_host(void* p) noexcept = 0;
  // dst (device) <- src (host) on `s`, and the host waits for it: the naive offloader's copy.
  virtual void copy_blocking(void* dst, const void* src, std::size_t bytes, Stream s) = 0;

  // p[i] = uniform in [-scale, scale] from (seed, i); activations (act) or float.
  virtual void fill(void* p, std::int64_t n, std::uint64_t seed, float scale, bool act,
                    Stream s) = 0;
  // h = act(x + t * temb[c]), t = sched[*counter]; x float [tokens, hidden].
  virtual void embed(void* h, const float* x, const void* temb, const float* sched,
                     const int* counter, std::int64_t tokens, int hidden, Stream s) = 0;
  virtual void rmsnorm(void* out, const void* in, const void* gain, std::int64_t rows, int cols,
                       Stream s) = 0;
  // out[m, n] = in[m, k] * w[k, n]
  virtual void gemm(void* out, const void* in, const void* w, std::int64_t m, int k, int n,
                    Stream s) = 0;
  // qkv[3][m][hidden] = in[m, hidden] * w[3][hidden][hidden]
  virtual void gemm_qkv(void* qkv, const void* in, const void* w, std::int64_t m, int hidden,
                        Stream s) = 0;
  // table[t][j] = (cos, sin)(t * 10000^(-2j/d)), float [tokens][head_dim/2][2]
  virtual void rope_table(float* table, std::int64_t tokens, int head_dim, Stream s) = 0;
  // Rotates q and k in place. With `means` (the attention workspace of a sparse call, laid out
  // for `attn`; only where rope_can_pool()), also writes the pooled means of the rotated q and k
  // into it (memplan/attention/pooled_means.cuh): attention then takes them (means_given)
  // instead of reading q and k once more to pool them.
  [[nodiscard]] virtual bool rope_can_pool() const { return false; }
  virtual void rope(void* q, void* k, const float* table, const Dims& dims, void* means, Attn attn,
                    Stream s) = 0;
  virtual void attention(void* out, const void* q, const void* k, const void* v, void* workspace,
                         std::size_t workspace_bytes, const Dims& dims, Attn attn, bool means_given,
                         Stream s) = 0;
  virtual void gelu(void* x, std::int64_t n, Stream s) = 0;
  // h += o; a null `o` adds 1 (norm gains)
  virtual void add(void* h, const void* o, std::int64_t n, Stream s) = 0;
  // x += (sched[c + 1] - sched[c]) * v, c = *counter
  virtual void euler(float* x, const void* v, const float* sched, const int* counter,
                     std::int64_t n, Stream s) = 0;
  virtual void advance(int* counter, Stream s) = 0;
  // x2[t, c] = a * x1[t % t1, c] + (1 - a) * x2[t, c]
  virtual void blend(float* x2, const float* x1, std::int64_t t2, std::int64_t t1, int hidden,
                     float a, Stream s) = 0;
  // dst <- src, both device memory, on the stream.
  virtual void copy(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  // dst[j][i] = src[i][j] for i < a, j < b, each element `chunk_bytes` long: the packing and
  // unpacking around the sequence-parallel all_to_alls (token shards <-> head shards).
  virtual void transpose_blocks(void* dst, const void* src, std::int64_t a, std::int64_t b,
                                std::size_t chunk_bytes, Stream s) = 0;

 private:
  int query_blocks_per_list_ = 1;
};

}  // namespace denoise
