// The device side of producer_means.hpp: one CTA per (block, head, batch), BlockMeans's thread
// layout, each row copied as it is summed.
#include <cuda_runtime.h>

#include "memplan/attention/pooled_means.cuh"
#include "memplan/cuda_check.hpp"
#include "producer_means.hpp"

namespace memplan::attention::test {
namespace {

template <int D>
__global__ void copy_with_means_kernel(uint4* dst, const uint4* src, std::int64_t tokens, int heads,
                                       int blocks, void* means, bool split) {
  using Means = BlockMeans<D>;
  __shared__ __align__(16) typename Means::Storage storage;
  const int block = blockIdx.x, head = blockIdx.y, batch = blockIdx.z;
  const std::int64_t left = tokens - static_cast<std::int64_t>(block) * kBlockTokens;
  const int valid = left < kBlockTokens ? static_cast<int>(left) : kBlockTokens;
  float sum[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int s = 0; s < Means::kRowsPerThread; ++s) {
    const int r = Means::row(s);
    if (r >= valid) continue;  // adds nothing: the library adds zeros, the same sum
    const std::int64_t token = static_cast<std::int64_t>(block) * kBlockTokens + r;
    const std::int64_t at = ((batch * tokens + token) * heads + head) * (D / 8) + Means::lane();
    const uint4 raw = src[at];
    dst[at] = raw;
    Means::add_row(sum, raw);
  }
  if (means != nullptr) {
    Means::store(storage, sum, valid, means, pooled_row(batch, head, block, heads, blocks), split);
  }
}

}  // namespace

void copy_with_means(void* dst, const void* src, const AttentionShape& shape, void* means,
                     bool split, void* stream) {
  const dim3 grid(static_cast<unsigned>(shape.blocks()), static_cast<unsigned>(shape.heads),
                  static_cast<unsigned>(shape.batch));
  auto* s = static_cast<cudaStream_t>(stream);
  auto* d = static_cast<uint4*>(dst);
  const auto* in = static_cast<const uint4*>(src);
  if (shape.head_dim == 64) {
    copy_with_means_kernel<64>
        <<<grid, 256, 0, s>>>(d, in, shape.tokens, shape.heads, shape.blocks(), means, split);
  } else {
    copy_with_means_kernel<128>
        <<<grid, 256, 0, s>>>(d, in, shape.tokens, shape.heads, shape.blocks(), means, split);
  }
  check_launch("copy_with_means_kernel");
}

}  // namespace memplan::attention::test
