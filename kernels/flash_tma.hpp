// The Hopper flash forward kernel with a TMA producer warp (flash_tma.cu): its launcher. Same
// conditions as flash_wgmma.hpp (head_dim 128, a device where flash_wgmma_available()); chosen
// with MEMPLAN_ATTENTION_KERNEL=tma, tma-alt, tma-64 or tma-wide (flash_fwd.cu) until it is
// measured.
#pragma once

#include <cuda_runtime_api.h>

#include "launchers.hpp"

namespace memplan::attention::detail {

// Which configurations run (flash_tma.cu): Main (tma) dense on 128-key tiles with ping-pong,
// sparse rows on 64-key tiles; Alternative (tma-alt) dense without ping-pong, sparse rows on
// 128-key tiles; SmallTiles (tma-64) dense on 64-key tiles, pipelined and ping-pong, sparse rows
// as Main; InlineWide (tma-wide) dense on 128-key tiles, pipelined and ping-pong, copies issued
// by a consumer thread, sparse rows as Main.
enum class TmaVariant { Main, Alternative, SmallTiles, InlineWide };

void run_flash_tma(const FlashParams& params, TmaVariant variant, cudaStream_t stream);

}  // namespace memplan::attention::detail
