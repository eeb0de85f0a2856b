#include "gpu_kernels.hpp"

namespace memplan::arena::test {
namespace {

__global__ void iota_kernel(std::uint32_t* data, std::size_t words, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < words;
       i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = seed + static_cast<std::uint32_t>(i);
}

__global__ void increment_kernel(std::uint32_t* data, std::size_t words) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < words;
       i += std::size_t{gridDim.x} * blockDim.x)
    data[i] += 1;
}

__global__ void spin_then_fill_kernel(std::uint32_t* data, std::size_t words, std::uint32_t value,
                                      std::uint64_t ns, int* done) {
  if (threadIdx.x == 0) {
    std::uint64_t start = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (std::uint64_t now = start; now - start < ns;)
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
  __syncthreads();
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < words;
       i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = value;
  if (blockIdx.x == 0 && threadIdx.x == 0) *done = 1;
}

__global__ void spin_then_copy_kernel(const std::uint32_t* src, std::uint32_t* dst,
                                      std::size_t words, std::uint64_t ns) {
  if (threadIdx.x == 0) {
    std::uint64_t start = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (std::uint64_t now = start; now - start < ns;)
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
  __syncthreads();
  for (std::size_t i = threadIdx.x; i < words; i += blockDim.x) dst[i] = src[i];
}

constexpr int kThreads = 256;
constexpr int kBlocks = 264;  // 2 per SM on an H200

}  // namespace

void launch_iota(std::uint32_t* data, std::size_t words, std::uint32_t seed, cudaStream_t stream) {
  iota_kernel<<<kBlocks, kThreads, 0, stream>>>(data, words, seed);
}

void launch_increment(std::uint32_t* data, std::size_t words, cudaStream_t stream) {
  increment_kernel<<<kBlocks, kThreads, 0, stream>>>(data, words);
}

void launch_spin_then_fill(std::uint32_t* data, std::size_t words, std::uint32_t value,
                           std::uint64_t ns, int* done, cudaStream_t stream) {
  // One block: done is written after this block's stores; other blocks' stores are not ordered
  // before it, so one block does it all.
  spin_then_fill_kernel<<<1, kThreads, 0, stream>>>(data, words, value, ns, done);
}

void launch_spin_then_copy(const std::uint32_t* src, std::uint32_t* dst, std::size_t words,
                           std::uint64_t ns, cudaStream_t stream) {
  // One block: every read happens after the spin.
  spin_then_copy_kernel<<<1, kThreads, 0, stream>>>(src, dst, words, ns);
}

}  // namespace memplan::arena::test
