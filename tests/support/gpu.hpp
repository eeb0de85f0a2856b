// GPU tests skip, never fail, on a machine without a usable CUDA device (CI has none).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#define MEMPLAN_SKIP_WITHOUT_GPU()                                                           \
  do {                                                                                       \
    int memplan_device_count_ = 0;                                                           \
    const cudaError_t memplan_status_ = cudaGetDeviceCount(&memplan_device_count_);          \
    if (memplan_status_ != cudaSuccess || memplan_device_count_ == 0) {                      \
      GTEST_SKIP() << "no CUDA device available ("                                           \
                   << (memplan_status_ == cudaSuccess ? "0 devices"                          \
                                                      : cudaGetErrorString(memplan_status_)) \
                   << ")";                                                                   \
    }                                                                                        \
  } while (0)
