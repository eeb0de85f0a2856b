// Pooled means: the per-block means of Q and K (and V, for the coarse branch) that block
// selection scores. launch_attention computes them with a pass of its own over Q and K (at 32,768
// tokens, 24 heads x 128, about as long as the whole select kernel); a kernel that writes Q and K
// anyway (a RoPE kernel, say) can write the means as it goes and pass PooledMeans::InWorkspace,
// so attention reads Q and K once fewer. This header is the format and the CTA helper that writes
// it, the one the library's own pooling kernel uses, so both give the same bits.
//
// Format, in the call's workspace at the offsets of workspace_layout(shape, policy):
//   pooled_q  fp32 [batch, heads, blocks, head_dim]: the mean of each 64-token block's rows;
//   pooled_k  the same means as split bf16 words: dims d..d+3 of a row as one 16-byte word
//             split_four(x[d], x[d+1], x[d+2], x[d+3]) (the select kernel's tensor-core operands);
//   pooled_v  fp32 like pooled_q; only when the layout has_pooled_v (the coarse branch).
// A block's mean is over its valid tokens: the last block of the sequence may hold fewer than 64.
// The means are of the values attention reads (after RoPE, rounded to bf16).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "memplan/attention/policy.hpp"

namespace memplan::attention {

// x = hi + lo with hi = bf16(x) and lo = bf16(x - hi) (16 bits of mantissa), for a pair (a, b).
__device__ __forceinline__ void split_pair(float a, float b, std::uint32_t& hi, std::uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  const float2 back = __bfloat1622float2(h);
  const __nv_bfloat162 l = __floats2bfloat162_rn(a - back.x, b - back.y);
  hi = *reinterpret_cast<const std::uint32_t*>(&h);
  lo = *reinterpret_cast<const std::uint32_t*>(&l);
}

// Four consecutive dims as one split word: {hi(a, b), hi(c, d), lo(a, b), lo(c, d)}, each a bf16
// pair with its first value in the low half.
__device__ __forceinline__ uint4 split_four(float a, float b, float c, float d) {
  uint4 w;
  split_pair(a, b, w.x, w.z);
  split_pair(c, d, w.y, w.w);
  return w;
}

// One CTA of kThreads threads means one 64-token block of one head of one tensor. Thread t covers
// dims [8 * lane(t), 8 * lane(t) + 8) (16 bytes of bf16) of the block's rows row(t, s) for
// s = 0 .. kRowsPerThread - 1. Each thread adds its rows' values in that order of s (0 for a row
// past the valid ones, or no addition: adding zero changes no sum), then the whole CTA calls
// store(). The order of every addition and the rounding of each are fixed here (no contraction,
// IEEE division), so a kernel that follows it writes the library's bits from the same values.
// (The library builds with --use_fast_math, which flushes subnormals to zero: a producer built
// without it can differ only where a sum or a mean is below 2^-126 in magnitude.)
template <int D, int kThreads = 256>
struct BlockMeans {
  static_assert(D == 64 || D == 128, "head_dim 64 or 128, as attention");
  static constexpr int kLanes = D / 8;                       // threads a row: 8 dims each
  static constexpr int kRowsInParallel = kThreads / kLanes;  // rows read side by side
  static constexpr int kRowsPerThread = kBlockTokens / kRowsInParallel;
  static_assert(kThreads % kLanes == 0 && kBlockTokens % kRowsInParallel == 0 && kThreads >= D,
                "whole rows of a 64-token block, one thread per dim at the end");

  struct Storage {
    float partial[kRowsInParallel][D];
  };

  __device__ static int lane() { return static_cast<int>(threadIdx.x) % kLanes; }
  // The block's row (0..63) that thread slot s covers.
  __device__ static int row(int s) {
    return static_cast<int>(threadIdx.x) / kLanes + s * kRowsInParallel;
  }

  // sum[i] += the 8 values of one row (bf16, 16 bytes), in dim order.
  __device__ static void add_row(float (&sum)[8], uint4 raw) {
    const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 x = __bfloat1622float2(pairs[i]);
      sum[2 * i] = __fadd_rn(sum[2 * i], x.x);
      sum[2 * i + 1] = __fadd_rn(sum[2 * i + 1], x.y);
    }
  }

  // Combines the threads' sums into the block's mean over `valid` rows (1..64) and writes row
  // `out_row` of fp32 means (split == false: out + out_row * D floats) or of split words
  // (split == true: out + out_row * D / 4 uint4). Every thread of the CTA must call it; it
  // synchronises the CTA.
  __device__ static void store(Storage& storage, const float (&sum)[8], int valid, void* out,
                               std::int64_t out_row, bool split) {
    auto* mine = reinterpret_cast<float4*>(&storage.partial[threadIdx.x / kLanes][8 * lane()]);
    mine[0] = make_float4(sum[0], sum[1], sum[2], sum[3]);
    mine[1] = make_float4(sum[4], sum[5], sum[6], sum[7]);
    __syncthreads();
    if (threadIdx.x < D) {
      float total = 0.0f;
#pragma unroll
      for (int g = 0; g < kRowsInParallel; ++g)
        total = __fadd_rn(total, storage.partial[g][threadIdx.x]);
      const float mean = __fdiv_rn(total, static_cast<float>(valid));
      if (!split) {
        static_cast<float*>(out)[out_row * D + threadIdx.x] = mean;
      } else {  // whole warps here (D is 64 or 128): lane 4t gathers dims 4t..4t+3
        const float b = __shfl_down_sync(0xffffffffu, mean, 1);
        const float c = __shfl_down_sync(0xffffffffu, mean, 2);
        const float d = __shfl_down_sync(0xffffffffu, mean, 3);
        if (threadIdx.x % 4 == 0)
          static_cast<uint4*>(out)[(out_row * D + threadIdx.x) / 4] = split_four(mean, b, c, d);
      }
    }
  }
};

// The row of (batch, head, block) in the pooled tensors: [batch, heads, blocks].
__host__ __device__ constexpr std::int64_t pooled_row(int batch, int head, int block, int heads,
                                                      int blocks) {
  return (static_cast<std::int64_t>(batch) * heads + head) * blocks + block;
}

}  // namespace memplan::attention
