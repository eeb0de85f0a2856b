// Mean-pooling of Q, K (and V) per 64-token block into fp32 [batch, heads, blocks, head_dim]:
// the inputs of block scoring. Memory-bound: each thread reads bf16 pairs, so a warp covers
// 128 contiguous bytes of one token's head; fp32 partial sums are combined through shared memory.
// A partial tail block is the mean of its valid tokens only.
#include <cuda_bf16.h>

#include "cuda_check.hpp"
#include "launchers.hpp"

namespace memplan::attention::detail {

namespace {

constexpr int kPoolThreads = 256;

template <int D>
__global__ void __launch_bounds__(kPoolThreads) pool_kernel(const PoolParams p) {
  constexpr int kPairs = D / 2;
  constexpr int kGroups = kPoolThreads / kPairs;  // token rows read in parallel
  __shared__ float partial[kGroups][D];

  const int block = blockIdx.x;
  const int head = blockIdx.y;
  const int batch = blockIdx.z / p.count;
  const int tensor = blockIdx.z % p.count;
  const int pair = threadIdx.x % kPairs;
  const int group = threadIdx.x / kPairs;

  const std::int64_t stride = static_cast<std::int64_t>(p.heads) * D;
  // Select by comparison: indexing the parameter arrays at run time would copy them to the stack.
  const void* base = tensor == 0 ? p.in[0] : (tensor == 1 ? p.in[1] : p.in[2]);
  float* out = tensor == 0 ? p.out[0] : (tensor == 1 ? p.out[1] : p.out[2]);
  const auto* in = static_cast<const __nv_bfloat16*>(base) +
                   static_cast<std::int64_t>(batch) * p.tokens * stride +
                   static_cast<std::int64_t>(head) * D + 2 * pair;
  const std::int64_t token0 = static_cast<std::int64_t>(block) * 64;
  const std::int64_t left = p.tokens - token0;
  const int valid = left < 64 ? static_cast<int>(left) : 64;

  float sum0 = 0.0f;
  float sum1 = 0.0f;
  for (int r = group; r < valid; r += kGroups) {
    const float2 x =
        __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(in + (token0 + r) * stride));
    sum0 += x.x;
    sum1 += x.y;
  }
  partial[group][2 * pair] = sum0;
  partial[group][2 * pair + 1] = sum1;
  __syncthreads();

  if (threadIdx.x < D) {
    float total = 0.0f;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) total += partial[g][threadIdx.x];
    const std::int64_t row = (static_cast<std::int64_t>(batch) * p.heads + head) * p.blocks + block;
    out[row * D + threadIdx.x] = total / static_cast<float>(valid);
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
