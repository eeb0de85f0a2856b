// The Hopper flash forward kernel with a TMA producer warp (flash_tma.cu): its launcher. Same
// conditions as flash_wgmma.hpp (head_dim 128, a device where flash_wgmma_available()); chosen
// with MEMPLAN_ATTENTION_KERNEL=tma or tma-alt (flash_fwd.cu) until it is measured.
#pragma once

#include <cuda_runtime_api.h>

#include "launchers.hpp"

namespace memplan::attention::detail {

// `alternative`: dense without ping-pong, sparse rows with 128-key tiles instead of 64.
void run_flash_tma(const FlashParams& params, bool alternative, cudaStream_t stream);

}  // namespace memplan::attention::detail
