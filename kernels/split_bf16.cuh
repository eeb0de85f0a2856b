// fp32 values as two bf16 parts, x = hi + lo (hi = bf16(x), lo = bf16(x - hi): 16 bits of
// mantissa), for the block scores' tensor-core products (block_scores.cuh).
//
// Pooled K is written in this form by the pooling kernel, once per key block, so the select
// kernel's CTAs (a head's pooled K is read by every CTA of the head) load mma operands directly
// instead of each splitting the same fp32 rows again. Four consecutive dims d..d+3 of a row
// become one 16-byte word, the size of the four floats they replace:
//   {hi(d, d+1), hi(d+2, d+3), lo(d, d+1), lo(d+2, d+3)}   (bf16 pairs, low half first).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace memplan::attention::detail {

// hi and lo bf16 pairs of (a, b).
__device__ __forceinline__ void split_pair(float a, float b, std::uint32_t& hi, std::uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  const float2 back = __bfloat1622float2(h);
  const __nv_bfloat162 l = __floats2bfloat162_rn(a - back.x, b - back.y);
  hi = *reinterpret_cast<const std::uint32_t*>(&h);
  lo = *reinterpret_cast<const std::uint32_t*>(&l);
}

// Four consecutive floats as the 16-byte split word above.
__device__ __forceinline__ uint4 split_four(float a, float b, float c, float d) {
  uint4 w;
  split_pair(a, b, w.x, w.z);
  split_pair(c, d, w.y, w.w);
  return w;
}

}  // namespace memplan::attention::detail
