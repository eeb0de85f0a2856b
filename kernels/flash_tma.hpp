// The Hopper flash forward kernel with a TMA producer warp (flash_tma.cu): its launcher. Same
// conditions as flash_wgmma.hpp (head_dim 128, a device where flash_wgmma_available()), and the
// driver must offer tensor maps (tensor_maps_available()); the default path there (flash_fwd.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "launchers.hpp"

namespace memplan::attention::detail {

// The set-up of dense launches (block lists run one set-up): the default ping-pong of two
// consumer warpgroups with a producer warp, or a warp-specialised CTA whose producer warpgroup
// hands its registers to the consumers, which pipeline as well, on 128-key tiles
// (MEMPLAN_ATTENTION_KERNEL=tma-ws) or 192-key tiles (tma-ws-192).
enum class TmaDense { PingPong, WarpSpecialised, WarpSpecialised192 };

void run_flash_tma(const FlashParams& params, TmaDense dense, cudaStream_t stream);

}  // namespace memplan::attention::detail
