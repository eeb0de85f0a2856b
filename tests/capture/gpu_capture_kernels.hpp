// Tiny kernels for the capture tests: each launch checks its own error.
#pragma once

#include <cuda_runtime_api.h>

namespace memplan::capture::testing {

// p[i] = base + i for i < n.
void launch_iota(int* p, int n, int base, cudaStream_t stream);
// dst[i] = src[i] + add for i < n.
void launch_add(int* dst, const int* src, int n, int add, cudaStream_t stream);

}  // namespace memplan::capture::testing
