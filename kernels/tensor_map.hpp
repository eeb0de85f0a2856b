// TMA tensor maps of the attention tensors, made on the host (cuTensorMapEncodeTiled, reached
// through the runtime's driver entry point: nothing links libcuda). A map is passed to the kernel
// by value as a __grid_constant__ parameter, so launches stay capturable.
#pragma once

#include <cuda.h>

#include "launchers.hpp"

namespace memplan::attention::detail {

// Whether the driver offers cuTensorMapEncodeTiled (CUDA 12.0 drivers and later).
bool tensor_maps_available();

// [batch, tokens, heads, 128] bf16 as a 4-D tensor (fastest first: head_dim, heads, tokens,
// batch), boxes of 64 head_dim elements x 1 head x 64 tokens (8 KB), 128B swizzle. Tokens past
// the end of a batch's sequence arrive as zeros. `name` names the tensor in errors.
CUtensorMap head_tensor_map(const char* name, const void* tensor, const FlashParams& params);

}  // namespace memplan::attention::detail
