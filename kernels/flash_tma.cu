// Block-sparse flash-attention forward for Hopper (sm_90a) with a TMA producer warp: the wgmma
// kernel's arithmetic (flash_wgmma.cu), with the loads taken off the warpgroups that compute.
//
// A CTA holds GROUPS consumer warpgroups, each on its own 64-row query block (GROUPS > 1 only
// for dense launches, where every row's key list is the same), and a producer warp (or a
// producer warpgroup that gives its registers to the consumers). The producer's first thread
// loads Q, then for each key tile (KEYS / 64 listed 64-token blocks side by side: any blocks of
// the row's list, each loaded on its own) K and V with bulk-tensor copies (cp.async.bulk.tensor,
// 128B swizzle: the layout the wgmma descriptors read) into a ring of STAGES stages. A list
// whose length is not a multiple of KEYS / 64 ends with a tile whose empty slots hold its first
// block again (finite values, fully masked): the bytes a stage expects never vary. How consumers
// overlap softmax with the products: see TmaConfig.
//
// Synchronisation: mbarriers in shared memory, no CTA barrier after set-up.
//   q_full        1 arrival (the producer's expect_tx) + the bytes of every group's Q.
//   k_full[s], v_full[s]    1 arrival + one tile's bytes; phase n = the n-th use of stage s.
//   k_empty[s], v_empty[s]  one arrival per consumer thread, after its warpgroup's wgmma that
//                           read the tile completed (wgmma.wait_group).
// Invariants: tile t lives in stage t % STAGES as that stage's use n = t / STAGES; consumers
// wait k_full / v_full with parity n & 1; the producer refills stage s for use n > 0 only after
// waiting k_empty / v_empty with parity (n - 1) & 1, i.e. after every consumer thread released
// use n - 1. So no barrier can run two phases ahead of a waiter (a consumer cannot release use
// n before use n was loaded, the producer cannot load use n + 1 before use n was released), and
// parity names the phase unambiguously. Every consumer thread arrives on each empty barrier
// exactly once per tile. No deadlock: consumer step t needs K(t) and V(t - 1) (P V of a tile
// runs in the step after its S); the producer issues K(j), V(j) in tile order and
// first waits for the release of K(j - STAGES) (step j - STAGES) or V(j - STAGES) (step
// j - STAGES + 1), steps that need only K and V of tiles before j, issued already. Ping-pong
// turns pass right after a group issued its products, never across an mbarrier wait, so it
// adds no cycle. Waits trap after 10 s (tma.cuh): a broken invariant fails the launch instead
// of hanging.
#include <cuda.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "flash_row.cuh"
#include "flash_tma.hpp"
#include "memplan/cuda_check.hpp"
#include "tensor_map.hpp"
#include "tma.cuh"
#include "wgmma_tile.cuh"

namespace memplan::attention::detail {

namespace {

// How consumers overlap softmax with the matrix products (both set-ups pipeline):
//   pipelined: S of tile t and P V of tile t - 1 go to the tensor cores together, so the softmax
//     of tile t overlaps P V;
//   ping-pong (two groups, dense): the groups take turns to issue their products, so one group's
//     softmax runs while the other's products occupy the tensor cores.
// PRODUCER_REGS > 0 makes the producer a whole warpgroup that hands its registers to the
// consumers (setmaxnreg): it keeps PRODUCER_REGS, each consumer thread gets kConsumerRegisters.
// Otherwise the producer is one warp and every thread keeps what it had at entry.
template <int GROUPS, int KEYS, int STAGES, int MIN_BLOCKS, int PRODUCER_REGS>
struct TmaConfig {
  static constexpr int kGroups = GROUPS;
  static constexpr int kKeys = KEYS;
  static constexpr int kBlocksPerTile = KEYS / 64;
  static constexpr int kStages = STAGES;
  static constexpr int kMinBlocks = MIN_BLOCKS;  // CTAs per SM the registers must allow
  static constexpr bool kPingPong = GROUPS == 2;
  static constexpr int kConsumers = 128 * GROUPS;
  static constexpr int kProducerRegisters = PRODUCER_REGS;
  static constexpr int kProducerThreads = PRODUCER_REGS > 0 ? 128 : 32;
  static constexpr int kThreads = kConsumers + kProducerThreads;
  // Registers a thread has at entry: the register file (64K) shared by the CTAs, in steps of 8.
  static constexpr int kEntryRegisters = 65536 / (kThreads * MIN_BLOCKS) / 8 * 8;
  static constexpr int kConsumerRegisters =
      PRODUCER_REGS > 0 ? (kEntryRegisters*(kThreads / 128) - PRODUCER_REGS) / GROUPS / 8 * 8
                        : kEntryRegisters;
  static constexpr int kTileBytes = kv_tile_bytes<KEYS>();
  static constexpr int kKOffset = kWgQBytes * GROUPS;              // K stages
  static constexpr int kVOffset = kKOffset + kTileBytes * STAGES;  // V stages
  static constexpr int kBarrierOffset = kVOffset + kTileBytes * STAGES;
  static constexpr int kBarriers = 1 + 4 * STAGES;
  static constexpr int kSmemBytes = kBarrierOffset + 8 * kBarriers;
  static_assert(KEYS == 64 || KEYS == 128 || KEYS == 192, "key tiles of 1-3 64-token blocks");
  static_assert(GROUPS == 1 || GROUPS == 2, "one group pipelines, two play ping-pong");
  static_assert(PRODUCER_REGS == 0 ||
                    (PRODUCER_REGS < kEntryRegisters && kConsumerRegisters > kEntryRegisters &&
                     kConsumerRegisters <= 256),
                "a producer warpgroup gives registers to the consumers, at most 256 a thread");
};

// The two 64-column halves of head_dim of 64 tokens of one head: two boxes of 64 x 128 bytes.
__device__ __forceinline__ void load_block(std::uint32_t dst, std::uint32_t half_stride,
                                           const CUtensorMap* map, std::uint32_t bar,
                                           std::int64_t token0, int head, int batch) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    tma_load_4d(dst + half * half_stride, map, bar, half * 64, head, static_cast<int>(token0),
                batch);
  }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    flash_tma_kernel(const __grid_constant__ CUtensorMap q_map,
                     const __grid_constant__ CUtensorMap k_map,
                     const __grid_constant__ CUtensorMap v_map, const FlashParams p,
                     const float scale_log2) {
  extern __shared__ __align__(1024) unsigned char smem[];
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // built for sm_90a only; never launched elsewhere
#else
  constexpr int kKeys = Cfg::kKeys;
  constexpr int kPerTile = Cfg::kBlocksPerTile;
  constexpr int kStages = Cfg::kStages;
  constexpr std::uint32_t kTileBytes = Cfg::kTileBytes;
  const std::uint32_t s_base = smem_addr(smem);
  if ((s_base & 1023u) != 0u) __trap();  // the 128B swizzle needs 1024-byte aligned tiles

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const int first_q_block = blockIdx.x * Cfg::kGroups;

  const std::uint32_t bars = s_base + Cfg::kBarrierOffset;
  const std::uint32_t q_full = bars;
  auto k_full = [&](int s) { return bars + 8 * (1 + s); };
  auto v_full = [&](int s) { return bars + 8 * (1 + kStages + s); };
  auto k_empty = [&](int s) { return bars + 8 * (1 + 2 * kStages + s); };
  auto v_empty = [&](int s) { return bars + 8 * (1 + 3 * kStages + s); };
  auto s_k = [&](int s) { return s_base + Cfg::kKOffset + kTileBytes * s; };
  auto s_v = [&](int s) { return s_base + Cfg::kVOffset + kTileBytes * s; };

  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), Cfg::kConsumers);
      mbar_init(v_empty(s), Cfg::kConsumers);
    }
    mbar_init_fence();
  }
  __syncthreads();  // the last CTA-wide barrier: from here on, only the mbarriers

  if (tid >= Cfg::kConsumers) {
    // The producer: its first thread issues every copy. With two groups every row is dense, so
    // the first group's list is everyone's. Q of every group first (a group past the last query
    // block loads rows past the end: zeros, never stored).
    if constexpr (Cfg::kProducerRegisters > 0) {
      warpgroup_release_registers<Cfg::kProducerRegisters>();
    }
    if (tid != Cfg::kConsumers) return;
    const FlashRow<kWgD> fr(p, first_q_block, head, batch);
    const int tiles = (fr.count + kPerTile - 1) / kPerTile;
    mbar_arrive_expect_tx(q_full, kWgQBytes * Cfg::kGroups);
    for (int g = 0; g < Cfg::kGroups; ++g) {
      load_block(s_base + kWgQBytes * g, kWgHalfBytes, &q_map, q_full,
                 static_cast<std::int64_t>(first_q_block + g) * 64, head, batch);
    }
    // K (or V) of tile t into its stage, once every consumer released the stage's previous use.
    auto load_kv = [&](bool is_v, int t) {
      const int stage = t % kStages;
      const int use = t / kStages;
      if (use > 0) mbar_wait(is_v ? v_empty(stage) : k_empty(stage), (use - 1) & 1);
      const std::uint32_t full = is_v ? v_full(stage) : k_full(stage);
      mbar_arrive_expect_tx(full, kTileBytes);
#pragma unroll
      for (int b = 0; b < kPerTile; ++b) {
        const int i = t * kPerTile + b;
        const std::int64_t token0 =
            static_cast<std::int64_t>(fr.key_block(i < fr.count ? i : t * kPerTile)) * 64;
        load_block((is_v ? s_v(stage) : s_k(stage)) + b * kWgHalfBytes, kKeys * 128,
                   is_v ? &v_map : &k_map, full, token0, head, batch);
      }
    };
    for (int t = 0; t < tiles; ++t) {  // K and V of each tile, in tile order
      load_kv(false, t);
      load_kv(true, t);
    }
    return;
  }

  // The consumers. The warpgroup index, broadcast from lane 0 so the compiler knows it is
  // warp-uniform.
  if constexpr (Cfg::kProducerRegisters > 0) {
    warpgroup_claim_registers<Cfg::kConsumerRegisters>();
  }
  const int group = Cfg::kGroups == 1 ? 0 : __shfl_sync(0xffffffffu, tid / 128, 0);
  const int warp = (tid % 128) / 32;
  const int q_block = first_q_block + group;
  const FlashRow<kWgD> fr(p, q_block, head, batch);
  const int tiles = (fr.count + kPerTile - 1) / kPerTile;
  const std::uint32_t s_q = s_base + kWgQBytes * group;

  // Keys of each block slot of tile t that exist: 64, fewer for the last block of the
  // sequence, 0 for a slot past the end of the list.
  auto valid_keys = [&](int t, int(&valid)[kPerTile]) {
#pragma unroll
    for (int b = 0; b < kPerTile; ++b) {
      const int i = t * kPerTile + b;
      valid[b] = i < fr.count
                     ? keys_in_block(static_cast<std::int64_t>(fr.key_block(i)) * 64, p.tokens)
                     : 0;
    }
  };

  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};
  float correction[2];

  // Ping-pong: the products of a step are issued between sync on the group's own named barrier
  // (1 + group) and arrive on the other's, so the groups alternate on the tensor cores while
  // the other one runs its softmax. Barrier counts (tiles + 1 steps, tiles > 0; with no tile
  // no barrier is touched): each group syncs its own barrier in every step; group 0 arrives
  // on group 1's in every step; group 1 arrives on group 0's once before its first step (group
  // 0 goes first) and in every step but the last. So each barrier completes tiles + 1 times,
  // with both groups' 128 threads each time. Both groups have the same tile count (two groups:
  // dense rows).
  auto take_turn = [&] {
    if constexpr (Cfg::kPingPong) named_barrier_sync<256>(1 + group);
  };
  auto pass_turn = [&] {
    if constexpr (Cfg::kPingPong) named_barrier_arrive<256>(2 - group);
  };
  auto last_pass = [&] {  // the last step's
    if (group == 0) pass_turn();
  };
  if constexpr (Cfg::kPingPong) {
    if (group == 1 && tiles > 0) named_barrier_arrive<256>(1);
  }
  // After setmaxnreg.inc a trap must be out of line (tma.cuh: trap_out_of_line).
  constexpr bool kRaised = Cfg::kProducerRegisters > 0;
  auto wait_k = [&](int t) { mbar_wait<kRaised>(k_full(t % kStages), (t / kStages) & 1); };
  auto wait_v = [&](int t) { mbar_wait<kRaised>(v_full(t % kStages), (t / kStages) & 1); };

  mbar_wait<kRaised>(q_full, 0);
  std::uint32_t a[kKeys / 16][4];  // P of the previous tile
  // Step t: S of tile t and P V of tile t - 1 on the tensor cores, then the softmax of tile t
  // while P V runs; step 0 has no P V, the last step (tiles) only P V. With ping-pong, a
  // group's turn covers the issue of both products.
  if (tiles > 0) {
    float s[kKeys / 2];
    int valid[kPerTile];
    valid_keys(0, valid);
    wait_k(0);
    take_turn();
    wgmma_fence();
    issue_s<kKeys>(s, s_q, s_k(0));
    pass_turn();
    wgmma_wait<0>();
    mbar_arrive(k_empty(0));
    softmax_step<kKeys>(s, m, l, correction, valid, scale_log2, lane);
    pack_p<kKeys>(a, s);
  }
  for (int t = 1; t < tiles; ++t) {
    const int stage = t % kStages;
    const int prev = (t - 1) % kStages;
    float s[kKeys / 2];  // declared per step: no value flows into the next step's S
    int valid[kPerTile];
    valid_keys(t, valid);
    wait_k(t);
    wait_v(t - 1);
    take_turn();
    wgmma_fence();
    issue_s<kKeys>(s, s_q, s_k(stage));
    issue_pv<kKeys>(o, a, s_v(prev));
    pass_turn();
    wgmma_wait<1>();  // S of tile t: its K stage is free
    mbar_arrive(k_empty(stage));
    softmax_step<kKeys>(s, m, l, correction, valid, scale_log2, lane);
    wgmma_wait<0>();  // P V of tile t - 1: O holds tiles up to t - 1, its V stage is free
    mbar_arrive(v_empty(prev));
    rescale(o, correction);
    pack_p<kKeys>(a, s);
  }
  if (tiles > 0) {
    const int last = tiles - 1;
    wait_v(last);
    take_turn();
    wgmma_fence();
    issue_pv<kKeys>(o, a, s_v(last % kStages));
    last_pass();
    wgmma_wait<0>();
    mbar_arrive(v_empty(last % kStages));
  }

  // Epilogue: each thread holds rows lane/4 and lane/4 + 8 of its warp's 16.
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    store_row<kWgD>(p, fr, q_block, warp * 16 + lane / 4 + hr * 8, l[hr], lane,
                    [&](int dt, int j) { return o[4 * dt + 2 * hr + j]; });
  }
#endif
}

// Dense: two consumer warpgroups on neighbouring query blocks share 192-key tiles (three listed
// blocks, S as wgmma m64n192k16; 2 stages, 224 KB, 1 CTA per SM), pipelined and in ping-pong;
// the producer a warpgroup at 24 registers, the consumers at 240 (S and P of a tile take 144).
// Sparse rows: one consumer warpgroup per CTA (rows differ), 64-key tiles, pipelined, 2 CTAs per
// SM (112 KB), a producer warp. The configurations measured against these on the H200 and
// removed are listed in docs/attention.md.
using DenseTma = TmaConfig<2, 192, 2, 1, 24>;
using SparseTma = TmaConfig<1, 64, 3, 2, 0>;
static_assert(DenseTma::kConsumerRegisters == 240);

template <class Cfg>
void launch(const FlashParams& params, cudaStream_t stream) {
  auto* kernel = &flash_tma_kernel<Cfg>;
  MEMPLAN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const CUtensorMap q_map = head_tensor_map("q", params.q, params);
  const CUtensorMap k_map = head_tensor_map("k", params.k, params);
  const CUtensorMap v_map = head_tensor_map("v", params.v, params);
  const dim3 grid(static_cast<unsigned>((params.blocks + Cfg::kGroups - 1) / Cfg::kGroups),
                  static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kWgD)) * M_LOG2E);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(q_map, k_map, v_map, params, scale_log2);
  check_launch("flash_tma_kernel");
}

}  // namespace

void run_flash_tma(const FlashParams& params, cudaStream_t stream) {
  if (params.kv_count == nullptr) {
    launch<DenseTma>(params, stream);
  } else {
    launch<SparseTma>(params, stream);
  }
}

}  // namespace memplan::attention::detail
