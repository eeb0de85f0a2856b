// What the two flash forward kernels (mma.sync in flash_fwd.cuh, wgmma in flash_wgmma.cu) share:
// the CTA's row of the block list with its tensors' offsets, and the store of a finished output
// row (normalise by the softmax sum, add the gated coarse output, write bf16 pairs; the TMA kernel
// stages them in shared memory instead, flash_tma.cu).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "launchers.hpp"

namespace memplan::attention::detail {

// One (batch, head, query block): which key blocks it visits and where its tokens live.
template <int D>
struct FlashRow {
  std::int64_t row = 0;          // into kv_count, the kv_idx rows and coarse
  int count = 0;                 // key blocks to visit
  const int* list = nullptr;     // null: a dense row, visit i is block i
  std::int64_t stride = 0;       // elements from one token to the next
  std::int64_t head_offset = 0;  // elements to token 0 of this (batch, head)

  // The row's index into kv_count, the kv_idx rows and coarse.
  [[nodiscard]] __device__ static std::int64_t index(const FlashParams& p, int q_block, int head,
                                                     int batch) {
    return (static_cast<std::int64_t>(batch) * p.heads + head) * p.blocks + q_block;
  }

  __device__ FlashRow(const FlashParams& p, int q_block, int head, int batch) {
    row = index(p, q_block, head, batch);
    const int listed = p.kv_count != nullptr ? p.kv_count[row] : p.blocks;
    const bool dense = listed >= p.blocks;
    count = dense ? p.blocks : listed;
    list = dense ? nullptr : p.kv_idx + row * p.max_k;
    stride = static_cast<std::int64_t>(p.heads) * D;
    head_offset =
        static_cast<std::int64_t>(batch) * p.tokens * stride + static_cast<std::int64_t>(head) * D;
  }

  [[nodiscard]] __device__ int key_block(int i) const {
    return list == nullptr ? i : __ldg(list + i);
  }
  [[nodiscard]] __device__ const __nv_bfloat16* at(const void* tensor) const {
    return static_cast<const __nv_bfloat16*>(tensor) + head_offset;
  }
};

// The row's softmax sum from the quad's four parts (every lane of the warp must call this), and
// its inverse: an empty row (count 0: only a hand-made list can have one) writes zeros, not NaN.
__device__ __forceinline__ float inverse_row_sum(float l) {
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  return l > 0.0f ? 1.0f / l : 0.0f;
}

// Output columns `col` and `col + 1` of a row: the accumulators times the inverse sum, plus the
// gated coarse output where there is one (`coarse`: the row's, or null).
__device__ __forceinline__ __nv_bfloat162 output_pair(const FlashParams& p, const float* coarse,
                                                      int col, float inv, float v0, float v1) {
  float x0 = v0 * inv;
  float x1 = v1 * inv;
  if (coarse != nullptr) {
    x0 = fmaf(p.coarse_gate, coarse[col], x0);
    x1 = fmaf(p.coarse_gate, coarse[col + 1], x1);
  }
  return __floats2bfloat162_rn(x0, x1);
}

// Stores row `r` (0-63) of the query block from an accumulator fragment whose lane holds columns
// 8*dt + 2*(lane%4) + j (dt < D/8, j < 2) as value(dt, j); `l` is the lane's part of the row's
// softmax sum, summed over the quad here, so every lane of the warp must call this.
template <int D, typename Value>
__device__ __forceinline__ void store_row(const FlashParams& p, const FlashRow<D>& fr, int q_block,
                                          int r, float l, int lane, Value value) {
  const float inv = inverse_row_sum(l);
  const std::int64_t token = static_cast<std::int64_t>(q_block) * 64 + r;
  if (token >= p.tokens) return;  // a tail block's rows past the end are computed, not stored
  __nv_bfloat16* dst = static_cast<__nv_bfloat16*>(p.out) + fr.head_offset + token * fr.stride;
  const float* coarse = p.coarse != nullptr ? p.coarse + fr.row * D : nullptr;
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    const int col = dt * 8 + 2 * (lane % 4);
    *reinterpret_cast<__nv_bfloat162*>(dst + col) =
        output_pair(p, coarse, col, inv, value(dt, 0), value(dt, 1));
  }
}

}  // namespace memplan::attention::detail
