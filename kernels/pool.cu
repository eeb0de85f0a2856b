// Mean-pooling of Q, K (and V) per 64-token block into fp32 [batch, heads, blocks, head_dim]:
// the inputs of block scoring. Memory-bound: each thread issues all its 16-byte loads (8 bf16 of
// one token's head) before summing, so a CTA keeps its whole 64-token block in flight. The sums,
// their order and the format are BlockMeans's (memplan/attention/pooled_means.cuh), the helper a
// producer kernel uses to write the same means itself (PooledMeans::InWorkspace).
// A partial tail block is the mean of its valid tokens only. A tensor marked split (pooled K) is
// written as split bf16 words, the select kernel's operands.
#include <cuda_bf16.h>

#include "launchers.hpp"
#include "memplan/attention/pooled_means.cuh"
#include "memplan/cuda_check.hpp"

namespace memplan::attention::detail {

namespace {

constexpr int kPoolThreads = 256;

template <int D>
__global__ void __launch_bounds__(kPoolThreads) pool_kernel(const PoolParams p) {
  using Means = BlockMeans<D, kPoolThreads>;
  __shared__ __align__(16) typename Means::Storage storage;

  const int block = blockIdx.x;
  const int head = blockIdx.y;
  const int batch = blockIdx.z / p.count;
  const int tensor = blockIdx.z % p.count;

  const std::int64_t stride = static_cast<std::int64_t>(p.heads) * D;
  // Select by comparison: indexing the parameter arrays at run time would copy them to the stack.
  const void* base = tensor == 0 ? p.in[0] : (tensor == 1 ? p.in[1] : p.in[2]);
  void* out = tensor == 0 ? p.out[0] : (tensor == 1 ? p.out[1] : p.out[2]);
  const bool split = tensor == 0 ? p.split[0] : (tensor == 1 ? p.split[1] : p.split[2]);
  const auto* in = static_cast<const __nv_bfloat16*>(base) +
                   static_cast<std::int64_t>(batch) * p.tokens * stride +
                   static_cast<std::int64_t>(head) * D + 8 * Means::lane();
  const std::int64_t token0 = static_cast<std::int64_t>(block) * kBlockTokens;
  const std::int64_t left = p.tokens - token0;
  const int valid = left < kBlockTokens ? static_cast<int>(left) : kBlockTokens;

  uint4 raw[Means::kRowsPerThread];
#pragma unroll
  for (int s = 0; s < Means::kRowsPerThread; ++s) {  // all loads first, then the sums
    const int r = Means::row(s);
    raw[s] = r < valid ? __ldg(reinterpret_cast<const uint4*>(in + (token0 + r) * stride))
                       : make_uint4(0u, 0u, 0u, 0u);  // bf16 zeros
  }
  float sum[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int s = 0; s < Means::kRowsPerThread; ++s) Means::add_row(sum, raw[s]);
  Means::store(storage, sum, valid, out, pooled_row(batch, head, block, p.heads, p.blocks), split);
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
