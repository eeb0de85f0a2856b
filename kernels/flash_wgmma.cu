// Block-sparse flash-attention forward for Hopper (sm_90a): the mma.sync kernel's algorithm with
// the two matrix products on warpgroup MMA (wgmma), head_dim 128 only.
//
// Each warpgroup (4 warps, 128 threads) computes one 64-token query block of one
// (batch, head): the 64 query rows are exactly one wgmma M. Per listed key block:
//   S = Q K^T       8 x wgmma m64n64k16, Q and K read by the tensor cores from shared memory;
//   online softmax  exp2 domain, fp32 max/sum, each thread owning 2 rows x 16 columns of S;
//   O += P V        4 x wgmma m64n128k16, P straight from the S accumulators as register A
//                   fragments, V read from shared memory as the transposed (N-major) operand.
// Compared with mma.sync, each K/V tile is read from shared memory once per warpgroup instead of
// once per warp, which was that kernel's limit. K/V tiles stream through a cp.async ring (see
// WgConfig below: sparse rows one warpgroup per CTA, 3 stages, 2 CTAs per SM; dense launches two
// warpgroups on neighbouring query blocks sharing a 4-stage ring, with S of the next key block
// issued before the softmax of the current one). Tiles are stored as
// two 64-column halves of 64 rows x 128 bytes with 16-byte chunks XOR-swizzled by (row & 7): the
// 128-byte swizzle wgmma descriptors describe. Tails and lists are handled as in flash_fwd.cuh.
// Compiled for sm_90a only (CMakeLists.txt); flash_fwd.cu calls it when the device can run it.
#include <cuda_bf16.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "flash_row.cuh"
#include "flash_wgmma.hpp"
#include "memplan/cuda_check.hpp"
#include "mma.cuh"
#include "wgmma_tile.cuh"

namespace memplan::attention::detail {

namespace {

constexpr int kD = kWgD;
constexpr int kHalfBytes = kWgHalfBytes;    // 64 rows x 64 bf16
constexpr int kTileBytes = 2 * kHalfBytes;  // 64 rows x 128 bf16

// The online softmax of one 64-key block `kb` (keys past the end masked).
__device__ __forceinline__ void softmax_block(float (&s)[32], float (&m)[2], float (&l)[2],
                                              float (&correction)[2], int kb, std::int64_t tokens,
                                              float scale_log2, int lane) {
  const int valid[1] = {keys_in_block(static_cast<std::int64_t>(kb) * 64, tokens)};
  softmax_step<64>(s, m, l, correction, valid, scale_log2, lane);
}

// GROUPS warpgroups per CTA, each on its own 64-row query block, share one K/V ring of STAGES
// tiles each (GROUPS > 1 only when every row is dense, so the blocks' key lists agree).
template <int GROUPS, int STAGES, bool PIPE>
struct WgConfig {
  static constexpr int kGroups = GROUPS;
  static constexpr int kStages = STAGES;
  static constexpr bool kPipelined = PIPE;
  static constexpr int kThreads = 128 * GROUPS;
  static constexpr int kSmemBytes = kTileBytes * (GROUPS + 2 * STAGES);
};

// Copies 64-token tiles of one head into shared tiles, THREADS threads together: thread `tid`
// copies 16-byte chunk tid % 16 of rows tid / 16 + i * (THREADS / 16). That row step is a
// multiple of 8, so the swizzle of a thread's chunks is the same in every row it copies, and its
// offsets are computed once per CTA; rows at or past `tokens` become zeros.
template <int THREADS>
struct TileLoader {
  static constexpr int kRowStep = THREADS / 16;
  static constexpr int kCopies = 64 / kRowStep;
  static_assert(kRowStep % 8 == 0, "rows a thread copies must share their swizzle");

  std::uint32_t dst = 0;  // byte offset of the first chunk in a tile
  std::int64_t src = 0;   // element offset of the first chunk from a tile's first token
  std::int64_t step = 0;  // elements between a thread's rows
  std::int64_t stride = 0;
  int row = 0;

  __device__ TileLoader(std::int64_t token_stride, int tid)
      : dst(swizzled(tid / 16, tid % 16)),
        src(static_cast<std::int64_t>(tid / 16) * token_stride + (tid % 16) * 8),
        step(kRowStep * token_stride),
        stride(token_stride),
        row(tid / 16) {}

  // The tile of tokens token0.. of each of the N tensors `head` (the same rows) into `tile`.
  template <int N>
  __device__ __forceinline__ void load(const std::uint32_t (&tile)[N],
                                       const __nv_bfloat16* const (&head)[N], std::int64_t token0,
                                       std::int64_t tokens) const {
    const std::int64_t left = tokens - token0 - row;  // rows of this thread still in range
    const std::int64_t offset = token0 * stride + src;
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      const bool valid = i * kRowStep < left;
#pragma unroll
      for (int t = 0; t < N; ++t) {
        const __nv_bfloat16* from = head[t] + (valid ? offset + i * step : 0);
        cp_async_16(tile[t] + dst + i * kRowStep * 128, from, valid);
      }
    }
  }
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads)
    flash_wgmma_kernel(const FlashParams p, const float scale_log2) {
  extern __shared__ __align__(1024) unsigned char smem[];
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // built for sm_90a only; never launched elsewhere
#else
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kStages = Cfg::kStages;
  const std::uint32_t s_base = smem_addr(smem);
  if ((s_base & 1023u) != 0u) __trap();  // the swizzle needs 1024-byte aligned tiles

  const int tid = threadIdx.x;
  // The warpgroup index, broadcast from lane 0 so the compiler knows it is warp-uniform (the
  // FlashRow below and its loop bounds depend on it).
  const int group = Cfg::kGroups == 1 ? 0 : __shfl_sync(0xffffffffu, tid / 128, 0);
  const int warp = (tid % 128) / 32;
  const int lane = tid % 32;
  const int q_block = blockIdx.x * Cfg::kGroups + group;
  const int head = blockIdx.y;
  const int batch = blockIdx.z;

  // With several groups every row is dense: the key list of one is the list of all. A second
  // group past the last query block computes on zero rows and stores nothing.
  const FlashRow<kD> fr(p, q_block, head, batch);
  const int count = fr.count;
  const std::int64_t stride = fr.stride;
  const auto* q = fr.at(p.q);
  const auto* k = fr.at(p.k);
  const auto* v = fr.at(p.v);

  const std::uint32_t s_q = s_base + kTileBytes * group;
  auto s_k = [&](int i) { return s_base + kTileBytes * (Cfg::kGroups + i % kStages); };
  auto s_v = [&](int i) { return s_base + kTileBytes * (Cfg::kGroups + kStages + i % kStages); };
  auto token0 = [&](int i) { return static_cast<std::int64_t>(fr.key_block(i)) * 64; };

  // Q of every group rides in the first copy group.
  const TileLoader<kThreads> loader(stride, tid);
#pragma unroll
  for (int g = 0; g < Cfg::kGroups; ++g) {
    loader.template load<1>({s_base + kTileBytes * g}, {q},
                            static_cast<std::int64_t>(blockIdx.x * Cfg::kGroups + g) * 64,
                            p.tokens);
  }

  // Accumulator layout (per warp, as mma.sync's m16n8 C tiles side by side): element 4j + e is
  // row lane/4 + 8*(e/2) of the warp's 16, column 8j + 2*(lane%4) + e%2.
  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};
  float correction[2];

  if constexpr (!Cfg::kPipelined) {
    // K and V of block i share stage i % kStages; every stage commits a group, empty or not.
    auto load_kv = [&](int i) {
      loader.template load<2>({s_k(i), s_v(i)}, {k, v}, token0(i), p.tokens);
    };
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
      if (i < count) load_kv(i);
      cp_async_commit();
    }
    for (int it = 0; it < count; ++it) {
      const int kb = fr.key_block(it);
      cp_async_wait<kStages - 2>();
      fence_proxy_async();  // the tile's cp.async writes, before the tensor cores read them
      __syncthreads();      // tile `it` visible to all; every wgmma on the refilled stage is done
      if (it + kStages - 1 < count) load_kv(it + kStages - 1);
      cp_async_commit();

      float s[32];  // declared per step: no value flows into the next step's S
      std::uint32_t a[4][4];
      wgmma_fence();
      issue_s<64>(s, s_q, s_k(it));
      wgmma_wait<0>();
      softmax_block(s, m, l, correction, kb, p.tokens, scale_log2, lane);
      rescale(o, correction);
      pack_p<64>(a, s);
      wgmma_fence();
      issue_pv<64>(o, a, s_v(it));
      wgmma_wait<0>();
    }
  } else {
    // The copy group of step t (t < 0 in the prologue): K of block t+kStages-1 and V of block
    // t+kStages-2. Step t reads K of block t and V of block t-1, both in group t-kStages+1; the
    // stages group t refills held K of block t-1 and V of block t-2, done in step t-1.
    auto load_group = [&](int t) {
      const int kb = t + kStages - 1;
      const int vb = t + kStages - 2;
      if (kb < count) loader.template load<1>({s_k(kb)}, {k}, token0(kb), p.tokens);
      if (vb >= 0 && vb < count) loader.template load<1>({s_v(vb)}, {v}, token0(vb), p.tokens);
      cp_async_commit();
    };
    auto wait_tiles = [&] {
      cp_async_wait<kStages - 2>();
      fence_proxy_async();
      __syncthreads();
    };
#pragma unroll
    for (int t = -(kStages - 1); t < 0; ++t) load_group(t);

    // Step t issues S of block t and then P V of block t-1, so that the softmax of block t could
    // run while the tensor cores do P V of block t-1. In the machine code it does not: ptxas
    // hoists the wait for P V above the softmax (nvcc 13.0). Pinning it below, as flash_tma.cu
    // does (wgmma_wait_after), with a stale row max, made this kernel no faster (H200,
    // 2026-12-04); likely, not measured: the CTA's other warpgroup keeps the tensor cores busy
    // during this one's softmax.
    std::uint32_t a[4][4];  // P of the previous block
    if (count > 0) {
      float s[32];
      wait_tiles();
      wgmma_fence();
      issue_s<64>(s, s_q, s_k(0));
      load_group(0);
      wgmma_wait<0>();
      softmax_block(s, m, l, correction, fr.key_block(0), p.tokens, scale_log2, lane);
      pack_p<64>(a, s);
    }
    for (int t = 1; t < count; ++t) {
      const int kb = fr.key_block(t);
      float s[32];
      wait_tiles();
      wgmma_fence();
      issue_s<64>(s, s_q, s_k(t));
      issue_pv<64>(o, a, s_v(t - 1));
      load_group(t);
      wgmma_wait<1>();  // S of block t
      softmax_block(s, m, l, correction, kb, p.tokens, scale_log2, lane);
      wgmma_wait<0>();  // P V of block t-1: O holds blocks up to t-1, scaled by the old max
      rescale(o, correction);
      pack_p<64>(a, s);
    }
    if (count > 0) {
      wait_tiles();
      wgmma_fence();
      issue_pv<64>(o, a, s_v(count - 1));
      wgmma_wait<0>();
    }
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

// Sparse rows keep one warpgroup per CTA (2 CTAs per SM, 112 KB each): neighbouring query blocks
// have different lists. Dense launches pair query blocks on one K/V ring (1 CTA per SM, 160 KB),
// which halves the K/V traffic from L2 per query row, and pipeline S of block t with P V of t-1.
// H200, 24 heads, dense 32k tokens: 425 TFLOP/s; unpaired and unpipelined 401, paired without
// the pipeline 406, paired pipelined with 3 or 5 stages 385-391 (before the TileLoader change).
using SparseConfig = WgConfig<1, 3, false>;
using DenseConfig = WgConfig<2, 4, true>;

template <class Cfg>
void launch(const FlashParams& params, cudaStream_t stream) {
  auto* kernel = &flash_wgmma_kernel<Cfg>;
  MEMPLAN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const dim3 grid(static_cast<unsigned>((params.blocks + Cfg::kGroups - 1) / Cfg::kGroups),
                  static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kD)) * M_LOG2E);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params, scale_log2);
  check_launch("flash_wgmma_kernel");
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
    if (cudaFuncGetAttributes(&attributes, &flash_wgmma_kernel<SparseConfig>) != cudaSuccess) {
      ok = false;
      (void)cudaGetLastError();  // clear it, so the next launch check does not report it
    }
  }
  g_available[device].store(ok ? 2 : 1);
  return ok;
}

void run_flash_wgmma(const FlashParams& params, cudaStream_t stream) {
  if (params.kv_count == nullptr) {
    launch<DenseConfig>(params, stream);
  } else {
    launch<SparseConfig>(params, stream);
  }
}

}  // namespace memplan::attention::detail
