// A warp's view of one row of block scores (select.cu): lane l sees columns l, l + 32, ..., in
// ascending 32-column chunks that every lane visits together, so a visitor may use ballots. Each
// column comes with whether it exists (j < n) and whether it is forced (always kept: not a
// candidate of the rule). Two storages behind the same each():
//   RegisterRow: the row copied once into registers (kSlots per lane) with a bit mask of its
//                forced columns, so the several passes of a rule cost no shared-memory round
//                trips and few instructions: the common case (n <= 32 * kSlots);
//   SharedRow:   the row read in place from shared memory, for longer rows.
// Either may view the mean of two rows (a list shared by a pair of query blocks: the pair's
// score is that of its mean pooled query), given the second row as `partner`.
// Scores are read with -0 turned into +0, so that comparing floats orders them exactly as the
// rank keys do. Also the warp reductions and the score <-> rank key maps the rules share.
#pragma once

#include <cstdint>

namespace memplan::attention::detail {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ int warp_sum(int v) { return __reduce_add_sync(0xffffffffu, v); }

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

// Smaller key = higher score (order-preserving map of the float, inverted), and back.
__device__ __forceinline__ unsigned rank_key(float score) {
  const unsigned bits = __float_as_uint(score);
  return ~((bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u));
}
__device__ __forceinline__ float score_of_key(unsigned key) {
  const unsigned m = ~key;
  return __uint_as_float((m & 0x80000000u) != 0u ? (m & 0x7FFFFFFFu) : ~m);
}

// -0 -> +0 (an intrinsic, so fast-math cannot drop it).
__device__ __forceinline__ float canonical(float score) { return __fadd_rn(score, 0.0f); }

struct Column {
  int j;        // block index
  float s;      // score (0 where !valid)
  bool valid;   // j < n
  bool forced;  // valid and always kept
  [[nodiscard]] __device__ bool candidate() const { return valid && !forced; }
};

// Column j of a row, or of the mean of two rows.
__device__ __forceinline__ float score_at(const float* scores, const float* partner, int j) {
  return canonical(partner != nullptr ? 0.5f * (scores[j] + partner[j]) : scores[j]);
}

template <typename Forced>
struct SharedRow {
  const float* scores;
  const float* partner;  // null: the row alone
  int n;
  Forced forced;

  [[nodiscard]] __device__ float first() const { return score_at(scores, partner, 0); }

  template <typename Visit>
  __device__ __forceinline__ void each(Visit&& visit) const {
    const int lane = threadIdx.x % 32;
    for (int base = 0; base < n; base += 32) {
      const int j = base + lane;
      const bool valid = j < n;
      visit(Column{j, valid ? score_at(scores, partner, j) : 0.0f, valid, valid && forced(j)});
    }
  }
};

template <int kSlots>
struct RegisterRow {
  static_assert(kSlots <= 64, "forced columns are one 64-bit mask");
  float v[kSlots];
  std::uint64_t forced_bits = 0;
  int n;

  template <typename Forced>
  __device__ __forceinline__ RegisterRow(const float* scores, const float* partner, int columns,
                                         Forced forced)
      : n(columns) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      if (32 * i >= n) break;  // uniform, as in each(): slots past the row stay unread
      const int j = 32 * i + lane;
      v[i] = j < n ? score_at(scores, partner, j) : 0.0f;
      if (j < n && forced(j)) forced_bits |= std::uint64_t{1} << i;
    }
  }

  [[nodiscard]] __device__ float first() const { return __shfl_sync(0xffffffffu, v[0], 0); }

  template <typename Visit>
  __device__ __forceinline__ void each(Visit&& visit) const {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      if (32 * i >= n) break;  // uniform: the whole warp leaves together
      const int j = 32 * i + lane;
      visit(Column{j, v[i], j < n, ((forced_bits >> i) & 1u) != 0u});
    }
  }
};

}  // namespace memplan::attention::detail
