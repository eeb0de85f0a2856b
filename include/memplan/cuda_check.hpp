// The CUDA runtime error check: every CUDA runtime call in memplan's CUDA code goes through
// check_cuda, which throws memplan::CudaError naming the call and the error, so a failure is never
// silently dropped. Include it only from code built with the CUDA toolkit.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "memplan/error.hpp"

namespace memplan {

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    // Plain string building: fmt's compile-time format checks do not survive nvcc's front end.
    throw CudaError(std::string(call) + " failed: " + cudaGetErrorString(status) + " (" +
                    std::to_string(static_cast<int>(status)) + ")");
  }
}

// After a kernel launch: launch-configuration errors surface through cudaGetLastError.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

}  // namespace memplan

#define MEMPLAN_CUDA_CHECK(call) ::memplan::check_cuda((call), #call)
