// What the two Hopper flash kernels (flash_wgmma.cu: cp.async ring, 64-key tiles; flash_tma.cu:
// TMA producer, mbarrier rings, 64-, 128- or 192-key tiles) share: the product of one key tile and
// the online softmax over it. A key tile is KEYS / 64 listed 64-token blocks side by side; each
// shared K or V tile holds two head_dim halves of KEYS rows x 128 bytes, 16-byte chunks
// XOR-swizzled by (row & 7) (the 128B swizzle of wgmma descriptors and of TMA), so the KEYS rows
// of a half are one K-major operand of N = KEYS rows and one MN-major V operand of K = KEYS.
// Accumulator layout of m64nN (per warp, as mma.sync's m16n8 C tiles side by side): element
// 4j + e is row lane/4 + 8*(e/2) of the warp's 16, column 8j + 2*(lane%4) + e%2.
#pragma once

#include <cmath>
#include <cstdint>

#include "mma.cuh"
#include "wgmma.cuh"

namespace memplan::attention::detail {

constexpr int kWgD = 128;               // head_dim of the Hopper kernels
constexpr int kWgHalfBytes = 64 * 128;  // 64 rows x 64 bf16: a Q half, a 64-key block's half
constexpr int kWgQBytes = 2 * kWgHalfBytes;

// Byte offset of 16-byte chunk `chunk` (0-15) of row `row` (0-63) in a 64-row tile of head_dim
// 128 bf16: two 64-column halves, each row's 8 chunks XOR-swizzled by (row & 7) (the 128B
// swizzle of wgmma descriptors and TMA).
__device__ __forceinline__ std::uint32_t swizzled(int row, int chunk) {
  return static_cast<std::uint32_t>((chunk / 8) * kWgHalfBytes + row * 128 +
                                    (((chunk % 8) ^ (row & 7)) << 4));
}

// Bytes of one shared K or V tile of KEYS keys (two head_dim halves of KEYS rows).
template <int KEYS>
constexpr int kv_tile_bytes() {
  return KEYS * 2 * kWgD;
}

// Keys of the 64-token block starting at token `token0` that exist (64 but for the last block).
__device__ __forceinline__ int keys_in_block(std::int64_t token0, std::int64_t tokens) {
  return token0 + 64 > tokens ? static_cast<int>(tokens - token0) : 64;
}

// With a stale max (softmax_step's kStaleMax), a row keeps its max while a tile's own stays within
// 2^kStaleMaxLog2 of it (in exp2's units): P may then reach 2^8, which bf16 holds with the same
// relative precision and the fp32 sums with room to spare, and the output needs no rescale for
// that tile (correction exactly 1). It moves only when a tile's max passes the kept one by more.
inline constexpr float kStaleMaxLog2 = 8.0f;

// Masks the keys that do not exist (valid[b]: keys of the tile's block b, 64 but for the last,
// partial block; 0 for a block slot past the end of the list) and runs the online softmax on S:
// s becomes P (exp2 of the scaled scores minus the row max), m and l are updated, and
// `correction` is the factor the output accumulated so far must be scaled by. The four lanes of
// a quad share a row. kStaleMax: the row max moves only past kStaleMaxLog2 (above).
template <int KEYS, bool kStaleMax = false>
__device__ __forceinline__ void softmax_step(float (&s)[KEYS / 2], float (&m)[2], float (&l)[2],
                                             float (&correction)[2], const int (&valid)[KEYS / 64],
                                             float scale_log2, int lane) {
#pragma unroll
  for (int b = 0; b < KEYS / 64; ++b) {
    if (valid[b] < 64) {
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const int col = (i / 4) * 8 + 2 * (lane % 4) + (i & 1);
        if (col >= valid[b]) s[32 * b + i] = -INFINITY;
      }
    }
  }
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float mx = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < KEYS / 8; ++nt) {
      mx = fmaxf(mx, fmaxf(s[4 * nt + 2 * hr], s[4 * nt + 2 * hr + 1]));
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    float m_new = fmaxf(m[hr], mx * scale_log2);
    if (kStaleMax && m_new <= m[hr] + kStaleMaxLog2) m_new = m[hr];
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // all masked so far: exp2 -> 0
    correction[hr] = kStaleMax && m_new == m[hr] ? 1.0f : fast_exp2(m[hr] - m_use);
    m[hr] = m_new;
    float sum = 0.0f;
#pragma unroll
    for (int nt = 0; nt < KEYS / 8; ++nt) {
#pragma unroll
      for (int e = 2 * hr; e < 2 * hr + 2; ++e) {
        const float pr = fast_exp2(fmaf(s[4 * nt + e], scale_log2, -m_use));
        s[4 * nt + e] = pr;
        sum += pr;
      }
    }
    l[hr] = l[hr] * correction[hr] + sum;
  }
}

// P (S columns 16kk..16kk+15) as the register A fragments of the P V k-steps.
template <int KEYS>
__device__ __forceinline__ void pack_p(std::uint32_t (&a)[KEYS / 16][4],
                                       const float (&s)[KEYS / 2]) {
#pragma unroll
  for (int kk = 0; kk < KEYS / 16; ++kk) {
    a[kk][0] = pack_bf16(s[8 * kk + 0], s[8 * kk + 1]);
    a[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
    a[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
    a[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

__device__ __forceinline__ void rescale(float (&o)[64], const float (&correction)[2]) {
#pragma unroll
  for (int dt = 0; dt < kWgD / 8; ++dt) {
    o[4 * dt + 0] *= correction[0];
    o[4 * dt + 1] *= correction[0];
    o[4 * dt + 2] *= correction[1];
    o[4 * dt + 3] *= correction[1];
  }
}

// S = Q K^T over a tile of KEYS keys: k-step kk covers columns 16kk.. of head_dim: half kk/4,
// 32 bytes per step; the Q tile's halves are 64 rows apart, the K tile's KEYS rows apart.
template <int KEYS>
__device__ __forceinline__ void issue_s(float (&s)[KEYS / 2], std::uint32_t s_q,
                                        std::uint32_t s_k) {
#pragma unroll
  for (int kk = 0; kk < kWgD / 16; ++kk) {
    const std::uint32_t q_offset = (kk / 4) * kWgHalfBytes + (kk % 4) * 32;
    const std::uint32_t k_offset = (kk / 4) * (KEYS * 128) + (kk % 4) * 32;
    const std::uint64_t a = wgmma_desc(s_q + q_offset, 16, 1024);
    const std::uint64_t b = wgmma_desc(s_k + k_offset, 16, 1024);
    if constexpr (KEYS == 64) {
      wgmma_m64n64k16_ss(s, a, b, kk > 0 ? 1 : 0);
    } else if constexpr (KEYS == 128) {
      wgmma_m64n128k16_ss(s, a, b, kk > 0 ? 1 : 0);
    } else {
      static_assert(KEYS == 192, "key tiles of 64, 128 or 192 keys");
      wgmma_m64n192k16_ss(s, a, b, kk > 0 ? 1 : 0);
    }
  }
  wgmma_commit();
}

// Q of the warpgroup's 64-row query block as the register A fragments of S's eight k-steps
// (32 registers a thread), read once from the swizzled shared Q tile: ldmatrix.x4 of the warp's
// 16 rows, lanes 0-15 naming rows 0-15 of the k-step's first 8 columns, lanes 16-31 the next 8.
__device__ __forceinline__ void load_q_fragments(std::uint32_t (&qa)[kWgD / 16][4],
                                                 std::uint32_t s_q, int warp, int lane) {
  const int row = warp * 16 + lane % 16;
#pragma unroll
  for (int kk = 0; kk < kWgD / 16; ++kk) {
    const int chunk = (kk % 4) * 2 + lane / 16;
    ldmatrix_x4(qa[kk], s_q + (kk / 4) * kWgHalfBytes + row * 128 + ((chunk ^ (row & 7)) * 16));
  }
}

// S = Q K^T as issue_s, with Q from registers (load_q_fragments): only K is read from shared
// memory, half the operand bytes of a 64-key tile.
template <int KEYS>
__device__ __forceinline__ void issue_s_rs(float (&s)[KEYS / 2],
                                           const std::uint32_t (&qa)[kWgD / 16][4],
                                           std::uint32_t s_k) {
#pragma unroll
  for (int kk = 0; kk < kWgD / 16; ++kk) {
    const std::uint64_t b = wgmma_desc(s_k + (kk / 4) * (KEYS * 128) + (kk % 4) * 32, 16, 1024);
    if constexpr (KEYS == 64) {
      wgmma_m64n64k16_rs(s, qa[kk], b, kk > 0 ? 1 : 0);
    } else {
      static_assert(KEYS == 128, "Q from registers on 64- or 128-key tiles");
      wgmma_m64n128k16_rs(s, qa[kk], b, kk > 0 ? 1 : 0);
    }
  }
  wgmma_commit();
}

// O += P V: V rows 16kk.. start 16 rows * 128 bytes further; the two head_dim halves (KEYS rows
// apart) are the N-direction atoms.
template <int KEYS>
__device__ __forceinline__ void issue_pv(float (&o)[64], const std::uint32_t (&a)[KEYS / 16][4],
                                         std::uint32_t s_v) {
#pragma unroll
  for (int kk = 0; kk < KEYS / 16; ++kk) {
    wgmma_m64n128k16_rs_tb(o, a[kk], wgmma_desc(s_v + kk * 16 * 128, KEYS * 128, 1024));
  }
  wgmma_commit();
}

}  // namespace memplan::attention::detail
