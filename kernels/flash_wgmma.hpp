// The Hopper (sm_90a, wgmma) flash forward kernel's host side: whether this device can run it,
// and its launcher. head_dim 128 only; flash_fwd.cu falls back to mma.sync otherwise.
#pragma once

#include <cuda_runtime_api.h>

#include "launchers.hpp"

namespace memplan::attention::detail {

// True when the current device is compute capability 9.0 and the sm_90a image loads on it.
bool flash_wgmma_available();

void run_flash_wgmma(const FlashParams& params, cudaStream_t stream);

}  // namespace memplan::attention::detail
