// Warp-level exact top-k boundary of one row of block scores (select.cu), over either row view
// of score_row.cuh.
//
// Wanted: the k-th best score among the row's candidate blocks, `cut`, and how many scores
// equal to it are kept, `ties`, so that "score > cut, or among the first `ties` equal to cut"
// keeps exactly k. A radix select over the 32 bits of a rank key costs 32 passes over the row,
// or 4 passes of 8-bit digits whose shared histogram takes every lane's atomic on the same bin
// (a row's scores share their sign and exponent bits). Here:
//   1. min and max of the candidates' scores (one pass);
//   2. a 256-bin histogram over the linear map (s - min) * 256 / (max - min): monotone in s, so
//      every score in a higher bin is strictly greater; Gaussian-like rows spread over the bins,
//      so the shared atomics rarely collide;
//   3. a warp scan over the bins from the top finds the bin holding the k-th best and how many
//      are above it; that bin's scores (a handful) are gathered in index order and ranked
//      against each other, which gives cut and ties exactly.
// If the bin holds more than 32 candidates (many equal or clustered scores) or the row is flat,
// the bitwise radix select over the whole row answers instead: slower, same result.
#pragma once

#include <cstdint>

#include "score_row.cuh"

namespace memplan::attention::detail {

// The fallback: one bit of the rank key per pass, counts by warp sums.
template <typename Row>
__device__ void topk_cut_bitwise(const Row& row, int k, float& cut, int& ties) {
  unsigned prefix = 0;
  int remaining = k;
  for (int bit = 31; bit >= 0; --bit) {
    const unsigned high = ~0u << bit;
    // An opaque zero mixed into each score: without it the compiler hoists every column's key
    // out of this loop, a second copy of a register row, and spills.
    unsigned zero;
    asm volatile("mov.u32 %0, 0;" : "=r"(zero));
    int c = 0;
    row.each([&](const Column& col) {
      const unsigned key = rank_key(__uint_as_float(__float_as_uint(col.s) ^ zero));
      c += col.candidate() && (key & high) == prefix;
    });
    c = warp_sum(c);
    if (c < remaining) {
      remaining -= c;
      prefix |= 1u << bit;
    }
  }
  cut = score_of_key(prefix);
  ties = remaining;
}

// `hist`: 256 zeroed words of this warp's shared memory, left zeroed. 0 < k <= candidates.
template <typename Row>
__device__ void topk_cut(const Row& row, int k, unsigned* hist, float& cut, int& ties) {
  const int lane = threadIdx.x % 32;
  const unsigned below_me = (1u << lane) - 1u;

  // 1. Range of the candidates.
  float lo = INFINITY;
  float hi = -INFINITY;
  row.each([&](const Column& col) {
    lo = col.candidate() ? fminf(lo, col.s) : lo;
    hi = col.candidate() ? fmaxf(hi, col.s) : hi;
  });
  lo = warp_min(lo);
  hi = warp_max(hi);
  const float inv = 256.0f / (hi - lo);
  if (!(hi > lo) || !isfinite(inv)) {
    topk_cut_bitwise(row, k, cut, ties);
    return;
  }
  const float offset = -lo * inv;
  auto bin_of = [&](float s) {
    const float t = fmaf(s, inv, offset);  // ~(s - lo) * inv, clamped into [0, 255]
    return min(max(static_cast<int>(t), 0), 255);
  };

  // 2. Histogram.
  row.each([&](const Column& col) {
    if (col.candidate()) atomicAdd(&hist[bin_of(col.s)], 1u);
  });
  __syncwarp();

  // 3. Lane l owns bins 255-8l .. 248-8l (best first); an inclusive scan of the lanes' totals
  //    finds the lane, then the bin, at which the count from the top reaches k.
  unsigned c[8];
  unsigned local = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    c[i] = hist[255 - 8 * lane - i];
    local += c[i];
  }
  unsigned inclusive = local;
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const unsigned up = __shfl_up_sync(0xffffffffu, inclusive, off);
    if (lane >= off) inclusive += up;
  }
  const unsigned want = static_cast<unsigned>(k);
  const bool mine = inclusive - local < want && want <= inclusive;
  int bin = 0;
  unsigned above = 0;
  unsigned in_bin = 0;
  if (mine) {
    unsigned run = inclusive - local;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (run + c[i] >= want && in_bin == 0) {
        bin = 255 - 8 * lane - i;
        above = run;
        in_bin = c[i];
      }
      run += c[i];
    }
  }
  const int owner = __ffs(__ballot_sync(0xffffffffu, mine)) - 1;
  bin = __shfl_sync(0xffffffffu, bin, owner);
  above = __shfl_sync(0xffffffffu, above, owner);
  in_bin = __shfl_sync(0xffffffffu, in_bin, owner);
  __syncwarp();  // every lane's histogram reads are done before the bins are cleared
#pragma unroll
  for (int i = 0; i < 8; ++i) hist[8 * lane + i] = 0u;
  __syncwarp();
  if (in_bin > 32u) {
    topk_cut_bitwise(row, k, cut, ties);
    return;
  }

  // 4. Gather the bin's scores (ascending block index) into hist[0..in_bin), rank them: with
  //    canonical zeros, float order and equality are those of the rank keys.
  const int remaining = k - static_cast<int>(above);  // 1 <= remaining <= in_bin
  unsigned written = 0;
  row.each([&](const Column& col) {
    const bool in = col.candidate() && bin_of(col.s) == bin;
    const unsigned mask = __ballot_sync(0xffffffffu, in);
    if (in) hist[written + __popc(mask & below_me)] = __float_as_uint(col.s);
    written += __popc(mask);
  });
  __syncwarp();
  const float mine_s = lane < static_cast<int>(in_bin) ? __uint_as_float(hist[lane]) : -INFINITY;
  int better = 0;
  int equal = 0;
  for (int i = 0; i < static_cast<int>(in_bin); ++i) {
    const float other = __uint_as_float(hist[i]);
    better += other > mine_s;
    equal += other == mine_s;
  }
  const bool is_cut =
      lane < static_cast<int>(in_bin) && better < remaining && remaining <= better + equal;
  const int cut_lane = __ffs(__ballot_sync(0xffffffffu, is_cut)) - 1;
  cut = __shfl_sync(0xffffffffu, mine_s, cut_lane);
  ties = remaining - __shfl_sync(0xffffffffu, better, cut_lane);
  __syncwarp();
  if (lane < static_cast<int>(in_bin)) hist[lane] = 0u;
  __syncwarp();
}

}  // namespace memplan::attention::detail
