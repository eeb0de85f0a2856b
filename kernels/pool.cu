// Mean-pooling of Q, K (and V) per 64-token block into fp32 [batch, heads, blocks, head_dim]:
// the inputs of block scoring. Memory-bound: each thread issues all its 16-byte loads (8 bf16 of
// one token's head) before summing, so a CTA keeps its whole 64-token block in flight; fp32
// partial sums are combined through shared memory.
// A partial tail block is the mean of its valid tokens only. A tensor marked split (pooled K) is
// written as split bf16 words (split_bf16.cuh), the select kernel's operands.
#include <cuda_bf16.h>

#include "launchers.hpp"
#include "memplan/cuda_check.hpp"
#include "split_bf16.cuh"

namespace memplan::attention::detail {

namespace {

constexpr int kPoolThreads = 256;

template <int D>
__global__ void __launch_bounds__(kPoolThreads) pool_kernel(const PoolParams p) {
  constexpr int kLanes = D / 8;                   // threads per token row, 16 bytes each
  constexpr int kGroups = kPoolThreads / kLanes;  // token rows read in parallel
  constexpr int kSteps = 64 / kGroups;            // loads in flight per thread
  __shared__ __align__(16) float partial[kGroups][D];

  const int block = blockIdx.x;
  const int head = blockIdx.y;
  const int batch = blockIdx.z / p.count;
  const int tensor = blockIdx.z % p.count;
  const int chunk = threadIdx.x % kLanes;
  const int group = threadIdx.x / kLanes;

  const std::int64_t stride = static_cast<std::int64_t>(p.heads) * D;
  // Select by comparison: indexing the parameter arrays at run time would copy them to the stack.
  const void* base = tensor == 0 ? p.in[0] : (tensor == 1 ? p.in[1] : p.in[2]);
  void* out = tensor == 0 ? p.out[0] : (tensor == 1 ? p.out[1] : p.out[2]);
  const bool split = tensor == 0 ? p.split[0] : (tensor == 1 ? p.split[1] : p.split[2]);
  const auto* in = static_cast<const __nv_bfloat16*>(base) +
                   static_cast<std::int64_t>(batch) * p.tokens * stride +
                   static_cast<std::int64_t>(head) * D + 8 * chunk;
  const std::int64_t token0 = static_cast<std::int64_t>(block) * 64;
  const std::int64_t left = p.tokens - token0;
  const int valid = left < 64 ? static_cast<int>(left) : 64;

  uint4 raw[kSteps];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {  // all loads first, then the sums
    const int r = group + s * kGroups;
    raw[s] = r < valid ? __ldg(reinterpret_cast<const uint4*>(in + (token0 + r) * stride))
                       : make_uint4(0u, 0u, 0u, 0u);  // bf16 zeros
  }
  float sum[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw[s]);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 x = __bfloat1622float2(pairs[i]);
      sum[2 * i] += x.x;
      sum[2 * i + 1] += x.y;
    }
  }
  auto* mine = reinterpret_cast<float4*>(&partial[group][8 * chunk]);
  mine[0] = make_float4(sum[0], sum[1], sum[2], sum[3]);
  mine[1] = make_float4(sum[4], sum[5], sum[6], sum[7]);
  __syncthreads();

  if (threadIdx.x < D) {
    float total = 0.0f;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) total += partial[g][threadIdx.x];
    const std::int64_t row = (static_cast<std::int64_t>(batch) * p.heads + head) * p.blocks + block;
    const float mean = total / static_cast<float>(valid);
    if (!split) {
      static_cast<float*>(out)[row * D + threadIdx.x] = mean;
    } else {  // whole warps here (D is 64 or 128): lane 4t gathers dims 4t..4t+3
      const float b = __shfl_down_sync(0xffffffffu, mean, 1);
      const float c = __shfl_down_sync(0xffffffffu, mean, 2);
      const float d = __shfl_down_sync(0xffffffffu, mean, 3);
      if (threadIdx.x % 4 == 0)
        static_cast<uint4*>(out)[(row * D + threadIdx.x) / 4] = split_four(mean, b, c, d);
    }
  }
}

}  // namespace

void run_pool(const PoolParams& params, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(params.blocks), static_cast<unsigned>(params.heads),
                  static_cast<unsigned>(params.batch * params.count));
  if (params.head_dim == 64) {
    pool_kernel<64><<<grid, kPoolThreads, 0, stream>>>(params);
  } else {
    pool_kernel<128><<<grid, kPoolThreads, 0, stream>>>(params);
  }
  check_launch("pool_kernel");
}

}  // namespace memplan::attention::detail
