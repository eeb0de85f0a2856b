// RoPE on q and k in place, one CTA per (head, 64-token block, batch and tensor) in BlockMeans's
// thread layout (memplan/attention/pooled_means.cuh): thread t rotates the dims
// [8 lane, 8 lane + 8) of its rows of the block. With means, the CTA also writes the block's mean
// of what it wrote, in the format selection reads (K's as split words), so attention need not read
// q and k again to pool them. Every load (rows and their table entries) is issued before the first
// store. With pairs of halves a thread needs its partner's dims too (the other half of the head):
// a row's lanes are consecutive threads of one warp, so it takes them from the partner's registers
// with a shuffle (and half of the table entries both need: each reads four pairs), so no thread
// reads what another writes and no barrier is needed; at 80 registers, 3 CTAs share an SM
// (16 bytes of spills with halves: 266-268 us at 32k tokens against 296 for 2 CTAs without, H200,
// 2026-12-03). Heads are the grid's fastest dimension: the CTAs that read a block's table rows
// run together and find them in L2. The arithmetic is rope.hpp's: each product and sum rounded on
// its own.
#include <cuda_bf16.h>

#include "launchers.hpp"
#include "memplan/attention/pooled_means.cuh"
#include "memplan/cuda_check.hpp"

namespace memplan::attention::detail {

namespace {

constexpr int kRopeThreads = 256;

// (x, y) rotated by (c, s): x c - y s and x s + y c, no contraction.
__device__ __forceinline__ float rotated_first(float x, float y, float c, float s) {
  return __fsub_rn(__fmul_rn(x, c), __fmul_rn(y, s));
}
__device__ __forceinline__ float rotated_second(float x, float y, float c, float s) {
  return __fadd_rn(__fmul_rn(x, s), __fmul_rn(y, c));
}

template <int D, bool kHalves>
__global__ void __launch_bounds__(kRopeThreads, 3) rope_kernel(const RopeParams p) {
  using Means = BlockMeans<D, kRopeThreads>;
  constexpr int kRows = Means::kRowsPerThread;
  constexpr int kHalfLanes = Means::kLanes / 2;  // lanes of the first half of a head's dims
  constexpr int kTableLoads = 2;  // float4s of (cos, sin): 4 pairs (halves: half of the 8 needed)
  __shared__ __align__(16) typename Means::Storage storage;

  const int head = static_cast<int>(blockIdx.x);
  const int block = static_cast<int>(blockIdx.y);
  const int batch = static_cast<int>(blockIdx.z) / 2;
  const bool is_k = blockIdx.z % 2 == 1;
  const std::int64_t stride = static_cast<std::int64_t>(p.heads) * D;
  auto* x = static_cast<__nv_bfloat16*>(is_k ? p.k : p.q) +
            static_cast<std::int64_t>(batch) * p.tokens * stride +
            static_cast<std::int64_t>(head) * D;
  const std::int64_t token0 = static_cast<std::int64_t>(block) * kBlockTokens;
  const std::int64_t left = p.tokens - token0;
  const int valid = left < kBlockTokens ? static_cast<int>(left) : kBlockTokens;

  const int lane = Means::lane();
  const bool first_half = lane < kHalfLanes;
  // The table entry of the thread's first pair: 4 pairs from 4 lane (interleaved). With halves a
  // thread's 8 dims need the 8 pairs from (8 lane) mod (D / 2), as do its partner's: each reads
  // 4 of them (the first half's lane the first 4) and they swap the rest by shuffle.
  const int pair0 = kHalves ? (8 * lane) % (D / 2) + (first_half ? 0 : 4) : 4 * lane;
  auto row_at = [&](int r, int l) {
    return reinterpret_cast<uint4*>(x + (token0 + r) * stride + 8 * l);
  };

  uint4 own[kRows];
  float4 cs[kRows][kTableLoads];
#pragma unroll
  for (int s = 0; s < kRows; ++s) {
    const int r = Means::row(s);
    own[s] = r < valid ? *row_at(r, lane) : uint4{};  // zeros past the end: shuffled, not stored
  }
#pragma unroll
  for (int s = 0; s < kRows; ++s) {
    const bool inside = Means::row(s) < valid;
    const auto* t =
        reinterpret_cast<const float4*>(p.table + ((token0 + Means::row(s)) * (D / 2) + pair0) * 2);
#pragma unroll
    for (int i = 0; i < kTableLoads; ++i) cs[s][i] = inside ? __ldg(t + i) : float4{};
  }

  float sum[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int s = 0; s < kRows; ++s) {
    // The partner's dims, before any lane of the warp leaves for a row past the end.
    uint4 other{};
    if constexpr (kHalves) {
      other.x = __shfl_xor_sync(0xffffffffu, own[s].x, kHalfLanes);
      other.y = __shfl_xor_sync(0xffffffffu, own[s].y, kHalfLanes);
      other.z = __shfl_xor_sync(0xffffffffu, own[s].z, kHalfLanes);
      other.w = __shfl_xor_sync(0xffffffffu, own[s].w, kHalfLanes);
    }
    // (cos, sin) of the thread's pairs in order; with halves, 4 of the 8 are the partner's.
    float angles[kHalves ? 16 : 8];
    const float* mine_cs = reinterpret_cast<const float*>(cs[s]);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if constexpr (kHalves) {
        const float theirs_cs = __shfl_xor_sync(0xffffffffu, mine_cs[i], kHalfLanes);
        angles[i] = first_half ? mine_cs[i] : theirs_cs;
        angles[8 + i] = first_half ? theirs_cs : mine_cs[i];
      } else {
        angles[i] = mine_cs[i];
      }
    }
    if (Means::row(s) >= valid) continue;  // the library's pooling adds zeros there: same sums
    auto* mine = reinterpret_cast<__nv_bfloat162*>(&own[s]);
    if constexpr (kHalves) {
      const auto* theirs = reinterpret_cast<const __nv_bfloat162*>(&other);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 a = __bfloat1622float2(mine[j]);
        const float2 b = __bfloat1622float2(theirs[j]);
        const float c0 = angles[4 * j], s0 = angles[4 * j + 1];
        const float c1 = angles[4 * j + 2], s1 = angles[4 * j + 3];
        // First half: (own, partner) = (x, y); second half: (partner, own) = (x, y).
        mine[j] = first_half ? __floats2bfloat162_rn(rotated_first(a.x, b.x, c0, s0),
                                                     rotated_first(a.y, b.y, c1, s1))
                             : __floats2bfloat162_rn(rotated_second(b.x, a.x, c0, s0),
                                                     rotated_second(b.y, a.y, c1, s1));
      }
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 v = __bfloat1622float2(mine[j]);
        const float c = angles[2 * j], sn = angles[2 * j + 1];
        mine[j] =
            __floats2bfloat162_rn(rotated_first(v.x, v.y, c, sn), rotated_second(v.x, v.y, c, sn));
      }
    }
    *row_at(Means::row(s), lane) = own[s];
    Means::add_row(sum, own[s]);
  }
  if (p.q_means != nullptr) {
    Means::store(storage, sum, valid, is_k ? p.k_means : static_cast<void*>(p.q_means),
                 pooled_row(batch, head, block, p.heads, p.blocks), /*split=*/is_k);
  }
}

template <int D>
void launch(const RopeParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.heads), static_cast<unsigned>(p.blocks),
                  static_cast<unsigned>(2 * p.batch));
  if (p.halves) {
    rope_kernel<D, true><<<grid, kRopeThreads, 0, stream>>>(p);
  } else {
    rope_kernel<D, false><<<grid, kRopeThreads, 0, stream>>>(p);
  }
}

}  // namespace

void run_rope(const RopeParams& params, cudaStream_t stream) {
  if (params.head_dim == 64) {
    launch<64>(params, stream);
  } else {
    launch<128>(params, stream);
  }
  check_launch("rope_kernel");
}

}  // namespace memplan::attention::detail
