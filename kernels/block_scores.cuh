// Block scores on the tensor cores, for select.cu: the scores of a CTA's 32 query blocks against
// every key block of their head, s = Qbar . Kbar / sqrt(d), into shared memory.
//
// The pooled means are fp32 and the selection must agree with an fp32 rule, so each operand is
// split into two bf16 parts, x = hi + lo (hi = bf16(x), lo = bf16(x - hi): 16 bits of mantissa),
// and s = hi.hi + hi.lo + lo.hi with fp32 accumulation (mma m16n8k16): the dropped lo.lo term and
// the split's residue leave a relative error near 2^-16 per product, far below the spread of a
// row's scores. On CUDA cores the same product ran at 17-21 TFLOP/s, latency-bound with one CTA
// per SM (the scores fill shared memory).
//
// The reduction order over head_dim is free, so both operands use the same permutation of each
// 16-wide k-step: lane t of a quad holds dims 4t..4t+3, so one 16-byte load feeds a fragment.
// Q (fixed for the CTA): fragments built once, hi and lo, in shared memory in lane order (one
// conflict-free 16-byte load each). K: split once by the pooling kernel (the split words of
// memplan/attention/pooled_means.cuh), so each warp reads its 8 key rows' operands straight from
// global memory (L2: a head's pooled K is 0.6 MB at 1,182 blocks), the next 8 x 16 warps' rows
// prefetched into registers while the current ones are multiplied.
#pragma once

#include <cstdint>

#include "launchers.hpp"
#include "memplan/attention/pooled_means.cuh"
#include "mma.cuh"

namespace memplan::attention::detail::scores {

constexpr int kRows = 32;  // query blocks per CTA: two m16 tiles

template <int D>
struct Shape {
  static constexpr int kSteps = D / 16;  // k-steps of m16n8k16
  // Q fragments: [m tile][k-step][hi, lo][lane] of uint4.
  static constexpr std::size_t kFragmentBytes = 2u * kSteps * 2u * 32u * sizeof(uint4);
};

// Builds the Q fragments of score rows [first, limit) (zeros past `limit`, up to kRows rows)
// into `fragments` (Shape<D>::kFragmentBytes, 16-byte aligned). Score row r is query block r, or
// with span 2 the mean of blocks 2r and 2r + 1 (2r alone when it is the last of n): scores are
// linear in Qbar, so that row is the mean of the two blocks' rows. All threads call it; a
// barrier must follow before use.
template <int D, int kThreads>
__device__ __forceinline__ void load_query_fragments(uint4* fragments, const float* pooled_q,
                                                     int first, int limit, int span, int n) {
  constexpr int kSteps = Shape<D>::kSteps;
  for (int id = threadIdx.x; id < 2 * kSteps * 32; id += kThreads) {
    const int lane = id % 32;
    const int step = (id / 32) % kSteps;
    const int tile = id / (32 * kSteps);
    const int row = first + tile * 16 + lane / 4;
    const int dim = step * 16 + 4 * (lane % 4);
    // A fragment registers: (row, dims 0-1), (row + 8, dims 0-1), (row, 2-3), (row + 8, 2-3).
    auto block = [&](int b) {
      return *reinterpret_cast<const float4*>(pooled_q + static_cast<std::int64_t>(b) * D + dim);
    };
    auto at = [&](int r) {
      const float4 a = block(span * r);
      if (span == 1 || span * r + 1 >= n) return a;
      const float4 b = block(span * r + 1);
      return make_float4(0.5f * (a.x + b.x), 0.5f * (a.y + b.y), 0.5f * (a.z + b.z),
                         0.5f * (a.w + b.w));
    };
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float4 top = row < limit ? at(row) : zero;
    const float4 bottom = row + 8 < limit ? at(row + 8) : zero;
    uint4 hi;
    uint4 lo;
    split_pair(top.x, top.y, hi.x, lo.x);
    split_pair(bottom.x, bottom.y, hi.y, lo.y);
    split_pair(top.z, top.w, hi.z, lo.z);
    split_pair(bottom.z, bottom.w, hi.w, lo.w);
    fragments[((tile * kSteps + step) * 2 + 0) * 32 + lane] = hi;
    fragments[((tile * kSteps + step) * 2 + 1) * 32 + lane] = lo;
  }
}

// Shared floats from one score row to the next for n keys: even (pairs are stored as float2)
// and 8 banks apart, so a half-warp's float2 stores (rows lane/4, keys 2*(lane%4)) hit 16
// different bank pairs.
__host__ __device__ constexpr int row_stride(int n) { return (n + 23) / 32 * 32 + 8; }

// scores[r * row_stride(n) + key] = scale * Qbar_r . Kbar_key for r < rows (<= 16 * kTiles),
// every key < n: kTiles m16 tiles of query rows (1 when rows <= 16). `pooled_k_split` points at
// the head's key block 0, in split words (pooled_means.cuh). Every warp of the CTA calls it.
//
// The three products of a k-step go to two accumulator chains a tile, summed at the end: a
// single chain is 24 dependent mma per pass, and with one tile nothing else hides them.
// kPrefetch: the next pass's keys are loaded while this one multiplies (twice the registers for
// K; without it, another CTA on the SM has to hide the loads).
template <int D, int kWarps, int kTiles, bool kPrefetch>
__device__ __forceinline__ void compute(const uint4* fragments, const void* pooled_k_split, int n,
                                        int rows, float scale, float* scores) {
  static_assert(kTiles == 1 || kTiles == 2);
  const int stride = row_stride(n);
  constexpr int kSteps = Shape<D>::kSteps;
  constexpr int kSpan = 8 * kWarps;  // keys per pass: 8 per warp
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const auto* words = static_cast<const uint4*>(pooled_k_split) + lane % 4;

  // Lane t of a quad: dims 4t..4t+3 of each 16-wide k-step of key `key`, one word each.
  auto load = [&](uint4(&k)[kSteps], int first) {
    const int key = first + 8 * warp + lane / 4;
    const uint4* src = words + static_cast<std::int64_t>(key) * (D / 4);
#pragma unroll
    for (int s = 0; s < kSteps; ++s) k[s] = key < n ? __ldg(src + 4 * s) : make_uint4(0, 0, 0, 0);
  };

  uint4 current[kSteps];
  if constexpr (kPrefetch) load(current, 0);
  for (int first = 0; first < n; first += kSpan) {
    uint4 next[kSteps];
    if constexpr (kPrefetch) {
      if (first + kSpan < n) load(next, first + kSpan);  // warp-uniform
    } else {
      load(current, first);
    }

    float acc[kTiles][2][4] = {};  // [tile][chain]: hi.hi, then hi.lo + lo.hi
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const std::uint32_t b_hi[2] = {current[s].x, current[s].y};
      const std::uint32_t b_lo[2] = {current[s].z, current[s].w};
#pragma unroll
      for (int tile = 0; tile < kTiles; ++tile) {
        const uint4 hi4 = fragments[((tile * kSteps + s) * 2 + 0) * 32 + lane];
        const uint4 lo4 = fragments[((tile * kSteps + s) * 2 + 1) * 32 + lane];
        const std::uint32_t a_hi[4] = {hi4.x, hi4.y, hi4.z, hi4.w};
        const std::uint32_t a_lo[4] = {lo4.x, lo4.y, lo4.z, lo4.w};
        mma_bf16(acc[tile][0], a_hi, b_hi[0], b_hi[1]);
        mma_bf16(acc[tile][1], a_hi, b_lo[0], b_lo[1]);
        mma_bf16(acc[tile][1], a_lo, b_hi[0], b_hi[1]);
      }
    }

    // C fragment: rows lane/4 (+8), keys 2*(lane%4) (+1) of the warp's eight.
    const int key = first + 8 * warp + 2 * (lane % 4);
#pragma unroll
    for (int tile = 0; tile < kTiles; ++tile) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = tile * 16 + lane / 4 + 8 * half;
        float* dst = scores + r * stride + key;
        const float x = (acc[tile][0][2 * half] + acc[tile][1][2 * half]) * scale;
        const float y = (acc[tile][0][2 * half + 1] + acc[tile][1][2 * half + 1]) * scale;
        if (r >= rows || key >= n) continue;
        if (key + 1 < n) {
          *reinterpret_cast<float2*>(dst) = make_float2(x, y);
        } else {
          *dst = x;
        }
      }
    }
    if (kPrefetch && first + kSpan < n) {
#pragma unroll
      for (int s = 0; s < kSteps; ++s) current[s] = next[s];
    }
  }
}

}  // namespace memplan::attention::detail::scores
