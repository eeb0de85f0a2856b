// Warp-level exact top-k boundary of one row of block scores held in shared memory (select.cu).
//
// Wanted: the k-th smallest "rank key" (an order-preserving map of the score, inverted: smaller
// key = higher score) among the row's candidate blocks, `cut`, and how many keys equal to it are
// kept, `ties`, so that "key < cut, or among the first `ties` keys equal to cut" keeps exactly k.
// The old way, a radix select over the 32 key bits, cost 32 passes over the row, or 4 passes of
// 8-bit digits whose shared histogram took every lane's atomic on the same bin (a row's scores
// share their sign and exponent bits). Here:
//   1. min and max of the candidates' scores (one pass);
//   2. a 256-bin histogram over the linear map (s - min) * 256 / (max - min): monotone in s, so
//      every score in a higher bin is strictly greater; Gaussian-like rows spread over the bins,
//      so the shared atomics rarely collide;
//   3. a warp scan over the bins from the top finds the bin holding the k-th best and how many
//      are above it; that bin's keys (a handful) are gathered in index order and ranked against
//      each other, which gives cut and ties exactly.
// If the bin holds more than 32 candidates (many equal or clustered scores) or the row is flat,
// the bitwise radix select over the whole row answers instead: slower, same result.
#pragma once

#include <cstdint>

namespace memplan::attention::detail {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ int warp_sum(int v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

__device__ __forceinline__ float warp_min(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Smaller key = higher score (order-preserving map of the float, inverted).
__device__ __forceinline__ unsigned rank_key(float score) {
  const unsigned bits = __float_as_uint(score);
  return ~((bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u));
}

// The fallback: one bit of the key per pass, counts by warp sums.
template <typename Forced>
__device__ void topk_cut_bitwise(const float* scores, int n, int k, Forced forced, unsigned& cut,
                                 int& ties) {
  const int lane = threadIdx.x % 32;
  unsigned prefix = 0;
  int remaining = k;
  for (int bit = 31; bit >= 0; --bit) {
    const unsigned high = ~0u << bit;
    int c = 0;
    for (int j = lane; j < n; j += 32) c += !forced(j) && (rank_key(scores[j]) & high) == prefix;
    c = warp_sum(c);
    if (c < remaining) {
      remaining -= c;
      prefix |= 1u << bit;
    }
  }
  cut = prefix;
  ties = remaining;
}

// `hist`: 256 zeroed words of this warp's shared memory, left zeroed. 0 < k <= candidates.
template <typename Forced>
__device__ void topk_cut(const float* scores, int n, int k, Forced forced, unsigned* hist,
                         unsigned& cut, int& ties) {
  const int lane = threadIdx.x % 32;
  const unsigned below_me = (1u << lane) - 1u;

  // 1. Range of the candidates.
  float lo = INFINITY;
  float hi = -INFINITY;
  for (int j = lane; j < n; j += 32) {
    if (forced(j)) continue;
    lo = fminf(lo, scores[j]);
    hi = fmaxf(hi, scores[j]);
  }
  lo = warp_min(lo);
  hi = warp_max(hi);
  const float inv = 256.0f / (hi - lo);
  if (!(hi > lo) || !isfinite(inv)) {
    topk_cut_bitwise(scores, n, k, forced, cut, ties);
    return;
  }
  auto bin_of = [&](float s) {
    const float t = (s - lo) * inv;  // >= 0: s >= lo
    return t >= 255.0f ? 255 : static_cast<int>(t);
  };

  // 2. Histogram.
  for (int j = lane; j < n; j += 32) {
    if (!forced(j)) atomicAdd(&hist[bin_of(scores[j])], 1u);
  }
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
    topk_cut_bitwise(scores, n, k, forced, cut, ties);
    return;
  }

  // 4. Gather the bin's keys (ascending block index) into hist[0..in_bin), rank them.
  const int remaining = k - static_cast<int>(above);  // 1 <= remaining <= in_bin
  unsigned written = 0;
  for (int base = 0; base < n; base += 32) {
    const int j = base + lane;
    const bool in = j < n && !forced(j) && bin_of(scores[j]) == bin;
    const unsigned mask = __ballot_sync(0xffffffffu, in);
    if (in) hist[written + __popc(mask & below_me)] = rank_key(scores[j]);
    written += __popc(mask);
  }
  __syncwarp();
  const unsigned key = lane < static_cast<int>(in_bin) ? hist[lane] : ~0u;
  int less = 0;
  int equal = 0;
  for (int i = 0; i < static_cast<int>(in_bin); ++i) {
    const unsigned other = hist[i];
    less += other < key;
    equal += other == key;
  }
  const bool is_cut = lane < static_cast<int>(in_bin) && less < remaining && remaining <= less + equal;
  const int cut_lane = __ffs(__ballot_sync(0xffffffffu, is_cut)) - 1;
  cut = __shfl_sync(0xffffffffu, key, cut_lane);
  ties = remaining - __shfl_sync(0xffffffffu, less, cut_lane);
  __syncwarp();
  if (lane < static_cast<int>(in_bin)) hist[lane] = 0u;
  __syncwarp();
}

}  // namespace memplan::attention::detail
