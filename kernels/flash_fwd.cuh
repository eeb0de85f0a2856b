// Block-sparse flash-attention forward, mma.sync (sm_80+) version.
//
// One CTA computes one 64-token query block of one (batch, head). It walks the key blocks of its
// row of the block list (all blocks when the row is dense), streaming each 64-token K and V tile
// through a STAGES-deep cp.async ring in shared memory while the tensor cores work on the
// previous one. Each warp owns 16*MT query rows: S = Q K^T with ldmatrix fragments, an online
// softmax in the exp2 domain with fp32 max/sum per row, then O += P V with P re-packed from the
// S accumulators straight into A fragments (no shared-memory round trip).
// Shared tiles are 64 rows of head_dim bf16, 16-byte chunks XOR-swizzled by (row & 7), so the
// eight row addresses of every ldmatrix phase fall in distinct banks.
// Tails: K/V rows past `tokens` are zero-filled by cp.async and their scores masked to -inf;
// query rows past `tokens` are computed on zeros and never stored.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "flash_row.cuh"
#include "launchers.hpp"
#include "mma.cuh"

namespace memplan::attention::detail {

template <int D, int MT, int STAGES>
struct FlashConfig {
  static_assert(D == 64 || D == 128, "head_dim 64 or 128");
  static_assert(MT == 1 || MT == 2, "16 or 32 query rows per warp");
  static constexpr int kRows = 64;  // query and key rows per tile (one block)
  static constexpr int kWarps = kRows / (16 * MT);
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kChunks = D / 8;  // 16-byte chunks per row
  static constexpr int kTileBytes = kRows * D * 2;
  static constexpr int kSmemBytes = kTileBytes * (1 + 2 * STAGES);
  // Q fragments stay in registers when a warp has few rows; with 32 rows they would cost 64
  // registers on top of the 128-register output, so they are re-read from shared memory.
  static constexpr bool kQInRegisters = MT == 1;
};

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile.
template <int D>
__device__ __forceinline__ std::uint32_t tile_offset(int row, int chunk) {
  return static_cast<std::uint32_t>(row * D * 2 + ((chunk ^ (row & 7)) << 4));
}

// Copies 64 token rows starting at `token0` of one head into a swizzled tile; rows at or past
// `tokens` become zeros. `head` points at token 0 of this (batch, head); rows are `stride` apart.
template <int D, int THREADS>
__device__ __forceinline__ void load_tile(std::uint32_t tile, const __nv_bfloat16* head,
                                          std::int64_t stride, std::int64_t token0,
                                          std::int64_t tokens, int tid) {
  constexpr int kChunks = D / 8;
  constexpr int kTotal = 64 * kChunks;
  static_assert(kTotal % THREADS == 0, "whole chunks per thread");
#pragma unroll
  for (int i = 0; i < kTotal / THREADS; ++i) {
    const int id = tid + i * THREADS;
    const int row = id / kChunks;
    const int chunk = id % kChunks;
    const std::int64_t token = token0 + row;
    const bool valid = token < tokens;
    // A masked row still passes an in-bounds address; cp.async reads 0 bytes from it.
    const __nv_bfloat16* src = head + (valid ? token : 0) * stride + chunk * 8;
    cp_async_16(tile + tile_offset<D>(row, chunk), src, valid);
  }
}

template <int D, int MT, int STAGES>
__global__ void __launch_bounds__(FlashConfig<D, MT, STAGES>::kThreads)
    flash_fwd_kernel(const FlashParams p, const float scale_log2) {
  using Cfg = FlashConfig<D, MT, STAGES>;
  constexpr int kThreads = Cfg::kThreads;
  extern __shared__ __align__(128) unsigned char smem[];

  const int q_block = blockIdx.x;
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;

  const FlashRow<D> fr(p, q_block, head, batch);
  const int count = fr.count;
  const std::int64_t stride = fr.stride;
  const auto* q = fr.at(p.q);
  const auto* k = fr.at(p.k);
  const auto* v = fr.at(p.v);

  const std::uint32_t s_q = smem_addr(smem);
  auto s_k = [&](int stage) { return s_q + Cfg::kTileBytes * (1 + stage); };
  auto s_v = [&](int stage) { return s_q + Cfg::kTileBytes * (1 + STAGES + stage); };
  auto load_kv = [&](int it) {
    const int stage = it % STAGES;
    const std::int64_t token0 = static_cast<std::int64_t>(fr.key_block(it)) * 64;
    load_tile<D, kThreads>(s_k(stage), k, stride, token0, p.tokens, tid);
    load_tile<D, kThreads>(s_v(stage), v, stride, token0, p.tokens, tid);
  };

  // Prologue: Q rides in the first commit group with the first K/V tile. Every stage commits a
  // group, empty or not, so wait_group<STAGES-2> always means "the tile for this iteration".
  load_tile<D, kThreads>(s_q, q, stride, static_cast<std::int64_t>(q_block) * 64, p.tokens, tid);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < count) load_kv(s);
    cp_async_commit();
  }

  const int warp_row0 = warp * 16 * MT;
  // ldmatrix lane roles: lane/8 picks one of four 8x8 matrices, lane%8 the row within it.
  const int a_row = (lane % 8) + ((lane / 8) & 1) * 8;  // A (Q): rows 0-15, chunk +lane/16
  const int a_chunk = lane / 16;
  const int b_row = (lane % 8) + (lane / 16) * 8;  // B from K: two n-tiles of 8 keys
  const int b_chunk = (lane / 8) & 1;
  const int v_row = (lane % 8) + ((lane / 8) & 1) * 8;  // B from V (transposed): 16 keys
  const int v_chunk = lane / 16;

  float o[MT][D / 8][4];
  float m[MT][2];
  float l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][dt][e] = 0.0f;
    }
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.0f;
  }

  std::uint32_t q_frag[Cfg::kQInRegisters ? D / 16 : 1][4];

  for (int it = 0; it < count; ++it) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile `it` visible to all; everyone is done with the stage refilled next
    if (it + STAGES - 1 < count) load_kv(it + STAGES - 1);
    cp_async_commit();

    if constexpr (Cfg::kQInRegisters) {
      if (it == 0) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          ldmatrix_x4(q_frag[kk], s_q + tile_offset<D>(warp_row0 + a_row, kk * 2 + a_chunk));
        }
      }
    }

    const int stage = it % STAGES;
    const int kb = fr.key_block(it);

    // S = Q K^T over head_dim, 16 at a time.
    float s[MT][8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.0f;
      }
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if constexpr (Cfg::kQInRegisters) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[mt][e] = q_frag[kk][e];
        } else {
          ldmatrix_x4(a[mt], s_q + tile_offset<D>(warp_row0 + mt * 16 + a_row, kk * 2 + a_chunk));
        }
      }
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        std::uint32_t b[4];
        ldmatrix_x4(b, s_k(stage) + tile_offset<D>(np * 16 + b_row, kk * 2 + b_chunk));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_bf16(s[mt][2 * np], a[mt], b[0], b[1]);
          mma_bf16(s[mt][2 * np + 1], a[mt], b[2], b[3]);
        }
      }
    }

    // Mask keys past the end (only the last, partial block has any).
    if (static_cast<std::int64_t>(kb + 1) * 64 > p.tokens) {
      const std::int64_t limit = p.tokens - static_cast<std::int64_t>(kb) * 64;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int col = nt * 8 + 2 * (lane % 4) + (e & 1);
            if (col >= limit) s[mt][nt][e] = -INFINITY;
          }
        }
      }
    }

    // Online softmax. Thread holds rows lane/4 (e = 0,1) and lane/4 + 8 (e = 2,3) of each m-tile;
    // the four lanes of a quad share a row, so row reductions are two xor-shuffles.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
          mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hr], s[mt][nt][2 * hr + 1]));
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m[mt][hr], mx * scale_log2);
        // A row with nothing unmasked yet keeps m = -inf; use 0 so exp2 gives 0, not NaN.
        const float m_use = m_new == -INFINITY ? 0.0f : m_new;
        const float correction = fast_exp2(m[mt][hr] - m_use);
        m[mt][hr] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
          for (int e = 2 * hr; e < 2 * hr + 2; ++e) {
            const float pr = fast_exp2(fmaf(s[mt][nt][e], scale_log2, -m_use));
            s[mt][nt][e] = pr;
            sum += pr;
          }
        }
        l[mt][hr] = l[mt][hr] * correction + sum;
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
          o[mt][dt][2 * hr] *= correction;
          o[mt][dt][2 * hr + 1] *= correction;
        }
      }
    }

    // O += P V: the S accumulator of n-tiles (2kk, 2kk+1) is exactly the A fragment of k-step kk.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      std::uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        std::uint32_t b[4];
        ldmatrix_x4_trans(b, s_v(stage) + tile_offset<D>(kk * 16 + v_row, dp * 2 + v_chunk));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_bf16(o[mt][2 * dp], a[mt], b[0], b[1]);
          mma_bf16(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();  // no copy may still target shared memory when the CTA exits

  // Epilogue: each thread holds rows lane/4 and lane/4 + 8 of each of its m-tiles.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      store_row<D>(p, fr, q_block, warp_row0 + mt * 16 + lane / 4 + hr * 8, l[mt][hr], lane,
                   [&](int dt, int j) { return o[mt][dt][2 * hr + j]; });
    }
  }
}

}  // namespace memplan::attention::detail
