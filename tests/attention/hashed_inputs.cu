// The device side of hashed_inputs.hpp: one thread per pair of elements.
#include <cuda_runtime.h>

#include "hashed_inputs.hpp"
#include "memplan/cuda_check.hpp"

namespace memplan::attention::test {
namespace {

__global__ void fill_kernel(std::uint32_t* out, std::int64_t pairs, HashedShape s) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs;
       i += stride) {
    const std::int64_t e = 2 * i;
    const int d = static_cast<int>(e % s.head_dim);
    const std::int64_t row = e / s.head_dim;  // (b * tokens + t) * heads + h
    const int h = static_cast<int>(row % s.heads);
    const std::int64_t bt = row / s.heads;
    const std::int64_t t = bt % s.tokens;
    const std::int64_t b = bt / s.tokens;
    const std::uint32_t lo = hashed_bits(hashed_value(s, b, t, h, d));
    const std::uint32_t hi = hashed_bits(hashed_value(s, b, t, h, d + 1));
    out[i] = lo | (hi << 16);
  }
}

}  // namespace

void fill_hashed(void* tensor, std::int64_t batch, const HashedShape& shape, void* stream) {
  const std::int64_t pairs = batch * shape.tokens * shape.heads * shape.head_dim / 2;
  fill_kernel<<<132 * 16, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<std::uint32_t*>(tensor), pairs, shape);
  check_launch("fill_kernel");
}

}  // namespace memplan::attention::test
