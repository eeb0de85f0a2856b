// Rotary position embedding (RoPE) on Q and K, in place, with selection's pooled means written on
// the way. A video DiT rotates Q and K right before attention; a kernel that writes them anyway
// can also write the per-block means that block selection starts from (pooled_means.cuh), so
// attention need not read Q and K once more to pool them (PooledMeans::InWorkspace). This is that
// kernel, for callers whose RoPE is not their own kernel (PyTorch users: memplan.rope_attention).
//
// Arithmetic, fixed so that a reference can give the same bits: per pair (x, y) with its (c, s),
// x' = bf16(fl(x c) - fl(y s)) and y' = bf16(fl(x s) + fl(y c)), each product and sum rounded to
// fp32 on its own (no fused multiply-add), as PyTorch's eager elementwise ops compute
// `x * cos - y * sin` on bf16 tensors promoted to fp32. (The library builds with
// --use_fast_math: products and sums below 2^-126 in magnitude flush to zero.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "memplan/attention/attention.hpp"

namespace memplan::attention {

// Which dims rotate together. Interleaved: (2j, 2j + 1), as complex numbers (Wan, Flux).
// Halves: (j, j + head_dim / 2), as `x * cos + rotate_half(x) * sin` (HunyuanVideo, CogVideoX).
enum class RopePairs : unsigned char { Interleaved, Halves };

// The angles: fp32 [tokens, head_dim / 2, 2], entry (t, j) = (cos, sin) of pair j at token t; one
// table for every batch and head. 16-byte aligned.
struct RopeTable {
  const float* cos_sin = nullptr;
  RopePairs pairs = RopePairs::Interleaved;
};

// Rotates q and k (bf16 [batch, tokens, heads, head_dim], contiguous, 16-byte aligned) in place.
void launch_rope(const AttentionShape& shape, void* q, void* k, const RopeTable& table,
                 cudaStream_t stream);

// launch_rope, and the pooled means of the rotated q and k written into `workspace`, laid out for
// (shape, policy) as launch_attention's: pass that call PooledMeans::InWorkspace. The policy's
// mode must select blocks and need no pooled V (every sparse mode but coarse).
void launch_rope_with_means(const AttentionShape& shape, void* q, void* k, const RopeTable& table,
                            const AttentionPolicy& policy, void* workspace,
                            std::size_t workspace_size, cudaStream_t stream);

// RoPE, then attention of the rotated q and k: one call, as launch_attention. Where the step runs
// a sparse mode whose layout needs no pooled V (every mode but coarse), the RoPE kernel writes the
// pooled means into the workspace and selection starts from them; elsewhere attention pools (or,
// dense, selects nothing). Afterwards q and k hold the rotated values. The output equals
// launch_rope followed by launch_attention (PooledMeans::Compute) bit for bit.
SparsityMode launch_rope_attention(const AttentionShape& shape, void* q, void* k, const void* v,
                                   void* out, const RopeTable& table, const AttentionPolicy& policy,
                                   double step_fraction, void* workspace,
                                   std::size_t workspace_size, cudaStream_t stream);

}  // namespace memplan::attention
