// Kernels for the GPU arena tests, behind plain C++ launchers (gpu_kernels.cu), so test files stay
// host C++.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace memplan::arena::test {

// data[i] = seed + i for every 32-bit word of [data, data + words).
void launch_iota(std::uint32_t* data, std::size_t words, std::uint32_t seed, cudaStream_t stream);
// data[i] += 1 for every word.
void launch_increment(std::uint32_t* data, std::size_t words, cudaStream_t stream);
// Spins for about `ns` nanoseconds of GPU time, then writes `value` to every word of data and sets
// *done = 1: the work a release() must wait for.
void launch_spin_then_fill(std::uint32_t* data, std::size_t words, std::uint32_t value,
                           std::uint64_t ns, int* done, cudaStream_t stream);
// Spins for about `ns` nanoseconds of GPU time, then copies `words` words from src to dst: a
// reader that runs late (check mode's planted bug).
void launch_spin_then_copy(const std::uint32_t* src, std::uint32_t* dst, std::size_t words,
                           std::uint64_t ns, cudaStream_t stream);

}  // namespace memplan::arena::test
