#include "gpu_capture_kernels.hpp"

#include <string>

#include "memplan/cuda_check.hpp"
#include "memplan/error.hpp"

namespace memplan::capture::testing {
namespace {

__global__ void iota_kernel(int* p, int n, int base) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) p[i] = base + i;
}

__global__ void add_kernel(int* dst, const int* src, int n, int add) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) dst[i] = src[i] + add;
}

}  // namespace

void launch_iota(int* p, int n, int base, cudaStream_t stream) {
  iota_kernel<<<(n + 255) / 256, 256, 0, stream>>>(p, n, base);
  memplan::check_launch("iota_kernel");
}

void launch_add(int* dst, const int* src, int n, int add, cudaStream_t stream) {
  add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(dst, src, n, add);
  memplan::check_launch("add_kernel");
}

}  // namespace memplan::capture::testing
