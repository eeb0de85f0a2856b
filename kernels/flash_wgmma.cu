// Block-sparse flash-attention forward for Hopper (sm_90a): the mma.sync kernel's algorithm with
// the two matrix products on warpgroup MMA (wgmma), head_dim 128 only.
//
// One CTA is one warpgroup (4 warps, 128 threads) and computes one 64-token query block of one
// (batch, head): the 64 query rows are exactly one wgmma M. Per listed key block:
//   S = Q K^T       8 x wgmma m64n64k16, Q and K read by the tensor cores from shared memory;
//   online softmax  exp2 domain, fp32 max/sum, each thread owning 2 rows x 16 columns of S;
//   O += P V        4 x wgmma m64n128k16, P straight from the S accumulators as register A
//                   fragments, V read from shared memory as the transposed (N-major) operand.
// Compared with mma.sync, each K/V tile is read from shared memory once per warpgroup instead of
// once per warp, which was that kernel's limit. K/V tiles stream through a 3-stage cp.async ring
// (2 CTAs per SM, so one CTA's softmax overlaps the other's matrix products). Tiles are stored as
// two 64-column halves of 64 rows x 128 bytes with 16-byte chunks XOR-swizzled by (row & 7): the
// 128-byte swizzle wgmma descriptors describe. Tails and lists are handled as in flash_fwd.cuh.
// Compiled for sm_90a only (CMakeLists.txt); flash_fwd.cu calls it when the device can run it.
#include <cuda_bf16.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "cuda_check.hpp"
#include "flash_row.cuh"
#include "flash_wgmma.hpp"
#include "mma.cuh"
#include "wgmma.cuh"

namespace memplan::attention::detail {

namespace {

constexpr int kD = 128;
constexpr int kThreads = 128;
constexpr int kStages = 3;
constexpr int kHalfBytes = 64 * 128;            // 64 rows x 64 bf16
constexpr int kTileBytes = 2 * kHalfBytes;      // 64 rows x 128 bf16
constexpr int kSmemBytes = kTileBytes * (1 + 2 * kStages);

// Byte offset of 16-byte chunk `chunk` (0-15) of row `row` in a tile.
__device__ __forceinline__ std::uint32_t swizzled(int row, int chunk) {
  return static_cast<std::uint32_t>((chunk / 8) * kHalfBytes + row * 128 +
                                    (((chunk % 8) ^ (row & 7)) << 4));
}

// 64 token rows from `token0` of one head into a tile; rows at or past `tokens` become zeros.
__device__ __forceinline__ void load_tile(std::uint32_t tile, const __nv_bfloat16* head,
                                          std::int64_t stride, std::int64_t token0,
                                          std::int64_t tokens, int tid) {
#pragma unroll
  for (int i = 0; i < 64 * 16 / kThreads; ++i) {
    const int id = tid + i * kThreads;
    const int row = id / 16;
    const int chunk = id % 16;
    const std::int64_t token = token0 + row;
    const bool valid = token < tokens;
    const __nv_bfloat16* src = head + (valid ? token : 0) * stride + chunk * 8;
    cp_async_16(tile + swizzled(row, chunk), src, valid);
  }
}

__global__ void __launch_bounds__(kThreads)
    flash_wgmma_kernel(const FlashParams p, const float scale_log2) {
  extern __shared__ __align__(1024) unsigned char smem[];
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // built for sm_90a only; never launched elsewhere
#else
  const std::uint32_t s_q = smem_addr(smem);
  if ((s_q & 1023u) != 0u) __trap();  // the swizzle needs 1024-byte aligned tiles

  const int q_block = blockIdx.x;
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;

  const FlashRow<kD> fr(p, q_block, head, batch);
  const int count = fr.count;
  const std::int64_t stride = fr.stride;
  const auto* q = fr.at(p.q);
  const auto* k = fr.at(p.k);
  const auto* v = fr.at(p.v);

  auto s_k = [&](int stage) { return s_q + kTileBytes * (1 + stage); };
  auto s_v = [&](int stage) { return s_q + kTileBytes * (1 + kStages + stage); };
  auto load_kv = [&](int it) {
    const int stage = it % kStages;
    const std::int64_t token0 = static_cast<std::int64_t>(fr.key_block(it)) * 64;
    load_tile(s_k(stage), k, stride, token0, p.tokens, tid);
    load_tile(s_v(stage), v, stride, token0, p.tokens, tid);
  };

  // Prologue: Q rides in the first commit group; every stage commits a group, empty or not.
  load_tile(s_q, q, stride, static_cast<std::int64_t>(q_block) * 64, p.tokens, tid);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < count) load_kv(s);
    cp_async_commit();
  }

  // Accumulator layout (per warp, as mma.sync's m16n8 C tiles side by side): element 4j + e is
  // row lane/4 + 8*(e/2) of the warp's 16, column 8j + 2*(lane%4) + e%2.
  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};

  for (int it = 0; it < count; ++it) {
    cp_async_wait<kStages - 2>();
    fence_proxy_async();  // the tile's cp.async writes, before the tensor cores read them
    __syncthreads();      // tile `it` visible to all; every wgmma on the refilled stage is done
    if (it + kStages - 1 < count) load_kv(it + kStages - 1);
    cp_async_commit();

    const int stage = it % kStages;
    const int kb = fr.key_block(it);

    // S = Q K^T: k-step kk covers columns 16kk.. of head_dim: half kk/4, 32 bytes per step.
    float s[32];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const std::uint32_t offset = (kk / 4) * kHalfBytes + (kk % 4) * 32;
      wgmma_m64n64k16_ss(s, wgmma_desc(s_q + offset, 16, 1024),
                         wgmma_desc(s_k(stage) + offset, 16, 1024), kk > 0 ? 1 : 0);
    }
    wgmma_commit();
    wgmma_wait<0>();

    // Mask keys past the end (only the last, partial block has any).
    if (static_cast<std::int64_t>(kb + 1) * 64 > p.tokens) {
      const std::int64_t limit = p.tokens - static_cast<std::int64_t>(kb) * 64;
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const int col = (i / 4) * 8 + 2 * (lane % 4) + (i & 1);
        if (col >= limit) s[i] = -INFINITY;
      }
    }

    // Online softmax; the four lanes of a quad share a row.
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        mx = fmaxf(mx, fmaxf(s[4 * nt + 2 * hr], s[4 * nt + 2 * hr + 1]));
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m[hr], mx * scale_log2);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // all masked so far: exp2 -> 0
      const float correction = fast_exp2(m[hr] - m_use);
      m[hr] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int e = 2 * hr; e < 2 * hr + 2; ++e) {
          const float pr = fast_exp2(fmaf(s[4 * nt + e], scale_log2, -m_use));
          s[4 * nt + e] = pr;
          sum += pr;
        }
      }
      l[hr] = l[hr] * correction + sum;
#pragma unroll
      for (int dt = 0; dt < kD / 8; ++dt) {
        o[4 * dt + 2 * hr] *= correction;
        o[4 * dt + 2 * hr + 1] *= correction;
      }
    }

    // O += P V: S columns 16kk..16kk+15 are the A fragment of k-step kk; V rows 16kk.. start
    // 16 rows * 128 bytes further; the two head_dim halves are the N-direction atoms.
    std::uint32_t a[4][4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      a[kk][0] = pack_bf16(s[8 * kk + 0], s[8 * kk + 1]);
      a[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
      a[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
      a[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
    }
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      wgmma_m64n128k16_rs_tb(o, a[kk], wgmma_desc(s_v(stage) + kk * 16 * 128, kHalfBytes, 1024));
    }
    wgmma_commit();
    wgmma_wait<0>();
  }
  cp_async_wait<0>();  // no copy may still target shared memory when the CTA exits

  // Epilogue: each thread holds rows lane/4 and lane/4 + 8 of its warp's 16.
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    store_row<kD>(p, fr, q_block, warp * 16 + lane / 4 + hr * 8, l[hr], lane,
                  [&](int dt, int j) { return o[4 * dt + 2 * hr + j]; });
  }
#endif
}

// Per device: 0 not asked yet, 1 no, 2 yes.
std::atomic<int> g_available[64];

}  // namespace

bool flash_wgmma_available() {
  int device = 0;
  MEMPLAN_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= 64) return false;
  const int known = g_available[device].load();
  if (known != 0) return known == 2;
  int major = 0;
  int minor = 0;
  MEMPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  MEMPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  bool ok = major == 9 && minor == 0;
  if (ok) {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, &flash_wgmma_kernel) != cudaSuccess) {
      ok = false;
      (void)cudaGetLastError();  // clear it, so the next launch check does not report it
    }
  }
  g_available[device].store(ok ? 2 : 1);
  return ok;
}

void run_flash_wgmma(const FlashParams& params, cudaStream_t stream) {
  MEMPLAN_CUDA_CHECK(cudaFuncSetAttribute(&flash_wgmma_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const dim3 grid(static_cast<unsigned>(params.blocks), static_cast<unsigned>(params.heads),
                  static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kD)) * M_LOG2E);
  flash_wgmma_kernel<<<grid, kThreads, kSmemBytes, stream>>>(params, scale_log2);
  check_launch("flash_wgmma_kernel");
}

}  // namespace memplan::attention::detail
