// The Hopper flash forward kernel with a TMA producer warpgroup (flash_tma.cu): its launcher.
// Same conditions as flash_wgmma.hpp (head_dim 128, a device where flash_wgmma_available()), and
// the driver must offer tensor maps (tensor_maps_available()); the default path there
// (flash_fwd.cu). Dense launches and block lists run different set-ups of the kernel.
#pragma once

#include <cuda_runtime_api.h>

#include "launchers.hpp"

namespace memplan::attention::detail {

void run_flash_tma(const FlashParams& params, cudaStream_t stream);

}  // namespace memplan::attention::detail
