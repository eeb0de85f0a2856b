// The Hopper flash forward kernel with a TMA producer warp (flash_tma.cu): its launcher. Same
// conditions as flash_wgmma.hpp (head_dim 128, a device where flash_wgmma_available()), and the
// driver must offer tensor maps (tensor_maps_available()); the default path there (flash_fwd.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "launchers.hpp"

namespace memplan::attention::detail {

// Dense launches and block lists run different set-ups of the kernel (flash_tma.cu). Block
// lists: one consumer warpgroup per CTA (`tma`, the default), or a candidate being measured
// against it (MEMPLAN_ATTENTION_KERNEL=tma-sparse-wr, tma-sparse-rq, tma-sparse-pair,
// tma-sparse-pair128, tma-sparse-pair-rq, tma-sparse-pair128-rq, tma-sparse-persistent,
// tma-sparse-rq128, tma-sparse-persistent128).
enum class TmaSparse {
  OneGroup,
  WarpRelease,
  QInRegisters,
  Pair,
  Pair128,
  PairQInRegisters,
  Pair128QInRegisters,
  Persistent,
  QInRegisters128,
  Persistent128
};

void run_flash_tma(const FlashParams& params, TmaSparse sparse, cudaStream_t stream);

}  // namespace memplan::attention::detail
