// Block-sparse flash-attention forward for Hopper (sm_90a) with a TMA producer: the wgmma
// kernel's arithmetic (flash_wgmma.cu), with the loads taken off the warpgroups that compute.
//
// A CTA holds one or two consumer warpgroups (groups), each on its own 64-row query block, and
// a producer warp (or a producer warpgroup that gives its registers to the consumers). The
// groups share one K/V ring (dense launches: every row's key list is the same) or have a ring
// each (block lists). The first thread of producer warp r loads the Q of ring r's groups, then
// for each key tile (KEYS / 64 listed 64-token blocks side by side: any blocks of the row's
// list, each loaded on its own) K and V with bulk-tensor copies (cp.async.bulk.tensor, 128B
// swizzle: the layout the wgmma descriptors read) into the ring's K_STAGES K and V_STAGES V
// stages. A list whose length is not a multiple of KEYS / 64 ends with a tile whose empty slots
// hold its first block again (finite values, fully masked): the bytes a stage expects never
// vary. How consumers overlap softmax with the products: see TmaConfig.
//
// Synchronisation: mbarriers in shared memory, per ring, no CTA barrier after set-up.
//   q_full        1 arrival (the producer's expect_tx) + the bytes of the ring's groups' Q.
//   k_full[s], v_full[s]    1 arrival + one tile's bytes; phase n = the n-th use of stage s.
//   k_empty[s], v_empty[s]  one arrival per consumer thread of the ring's groups, after its
//                           warpgroup's wgmma that read the tile completed (wgmma.wait_group).
// Invariants (STAGES is K_STAGES for K, V_STAGES for V): tile t lives in stage t % STAGES as
// that stage's use n = t / STAGES; consumers wait k_full / v_full with parity n & 1; the
// producer refills stage s for use n > 0 only after waiting k_empty / v_empty with parity
// (n - 1) & 1, i.e. after every consumer thread released use n - 1. So no barrier can run two
// phases ahead of a waiter (a consumer cannot release use n before use n was loaded, the
// producer cannot load use n + 1 before use n was released), and parity names the phase
// unambiguously. Every consumer thread arrives on each empty barrier of its ring exactly once
// per tile. No deadlock: consumer step t needs K(t) and V(t - 1) (P V of a tile runs in the step
// after its S); the producer issues K(j), V(j) in tile order and first waits for the release of
// K(j - K_STAGES) (step j - K_STAGES) or V(j - V_STAGES) (step j - V_STAGES + 1), steps that need
// only K and V of tiles before j, issued already. A ring's producer thread waits only for its
// own groups, so rings never wait for each other. Ping-pong turns pass right after a group
// issued its products, never across an mbarrier wait, and a group's mbarrier waits depend only
// on its own ring, so turns add no cycle. Waits trap after 10 s (tma.cuh): a broken invariant
// fails the launch instead of hanging.
#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
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

// How consumers overlap softmax with the matrix products (every set-up pipelines):
//   pipelined: S of tile t and P V of tile t - 1 go to the tensor cores together, so the softmax
//     of tile t overlaps P V;
//   ping-pong (two groups): the groups take turns to issue their products, so one group's
//     softmax runs while the other's products occupy the tensor cores.
// A set-up (the Setup of TmaConfig) names:
//   kGroups        consumer warpgroups, each on its own 64-row query block;
//   kSharedRing    one K/V ring for every group (dense: every row's list is the same), else one
//                  ring per group, each on its own row's list;
//   kKeys          keys per tile (1-3 listed 64-token blocks);
//   kKStages, kVStages   stages of each ring's K and V tiles;
//   kMinBlocks     CTAs per SM the registers must allow;
//   kProducerRegisters   > 0: the producer is a whole warpgroup that hands its registers to
//                  the consumers (setmaxnreg): it keeps these, each consumer thread gets
//                  kConsumerRegisters; 0: the producer is one warp and every thread keeps what it
//                  had at entry;
//   kPingPong      two groups take turns (with one ring each, for as many steps as the longer
//                  list needs: the group with fewer tiles only takes and passes its turns);
//   kQInRegisters  S reads Q from registers (wgmma with A from registers), not shared memory;
//   kPersistent    one group, Q in registers: a grid of as many CTAs as fit at once, each CTA
//                  running rows blockIdx.x, + gridDim.x, ... on one ring (the producer loads the
//                  next row's tiles while the consumers finish a row: no ring to refill per row,
//                  no tail of a last wave of whole rows); Q gets an empty barrier, released
//                  after a row's first S (which read Q from the registers);
//   kReleasePerWarp      a consumer warp releases a stage with one arrival (its lane 0, after
//                  the warp's wgmma.wait_group), not one per thread: 4 arrivals a group per tile
//                  instead of 128 on the same shared-memory word.
template <class Setup>
struct TmaConfig : Setup {
  using Setup::kGroups, Setup::kSharedRing, Setup::kKeys, Setup::kKStages, Setup::kVStages,
      Setup::kMinBlocks, Setup::kProducerRegisters, Setup::kPingPong, Setup::kPersistent;
  static constexpr int kRings = kSharedRing ? 1 : kGroups;
  static constexpr int kGroupsPerRing = kGroups / kRings;
  static constexpr int kBlocksPerTile = kKeys / 64;
  static constexpr int kConsumers = 128 * kGroups;
  // Arrivals that release a stage of a ring: per consumer thread or per consumer warp.
  static constexpr int kReleases = kGroupsPerRing * (Setup::kReleasePerWarp ? 4 : 128);
  static constexpr int kProducerThreads = kProducerRegisters > 0 ? 128 : 32;
  static constexpr int kThreads = kConsumers + kProducerThreads;
  // Registers a thread has at entry: the register file (64K) shared by the CTAs, in steps of 8.
  static constexpr int kEntryRegisters = 65536 / (kThreads * kMinBlocks) / 8 * 8;
  static constexpr int kConsumerRegisters =
      kProducerRegisters > 0
          ? (kEntryRegisters*(kThreads / 128) - kProducerRegisters) / kGroups / 8 * 8
          : kEntryRegisters;
  static constexpr int kTileBytes = kv_tile_bytes<kKeys>();
  static constexpr int kRingOffset = kWgQBytes * kGroups;  // the groups' Q blocks come first
  static constexpr int kRingBytes = kTileBytes * (kKStages + kVStages);  // K stages, V stages
  // Per ring: q_full, k_full[kKStages], v_full[kVStages], k_empty[kKStages], v_empty[kVStages].
  static constexpr int kBarriersPerRing = 1 + 2 * (kKStages + kVStages) + (kPersistent ? 1 : 0);
  // A ring's tile index matters modulo this (stage and phase parity of both K and V), once every
  // stage was used.
  static constexpr int kTilePeriod = 2 * kKStages * kVStages;
  static constexpr int kBarrierOffset = kRingOffset + kRingBytes * kRings;
  static constexpr int kSmemBytes = kBarrierOffset + 8 * kBarriersPerRing * kRings;
  static_assert(kKeys == 64 || kKeys == 128 || kKeys == 192, "key tiles of 1-3 64-token blocks");
  static_assert(kGroups == 1 || kGroups == 2, "one or two consumer warpgroups");
  static_assert(!kPingPong || kGroups == 2, "ping-pong takes two groups");
  static_assert(kRings <= kProducerThreads / 32, "one producer warp per ring");
  static_assert(!kPersistent || (kGroups == 1 && Setup::kQInRegisters),
                "persistent: one group, Q released once in registers");
  static_assert(kSmemBytes * kMinBlocks <= 228 * 1024 - 1024 * kMinBlocks,
                "shared memory of the CTAs an SM must hold");
  static_assert(kProducerRegisters == 0 ||
                    (kProducerRegisters < kEntryRegisters && kConsumerRegisters > kEntryRegisters &&
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
  constexpr int kKStages = Cfg::kKStages;
  constexpr int kVStages = Cfg::kVStages;
  constexpr std::uint32_t kTileBytes = Cfg::kTileBytes;
  const std::uint32_t s_base = smem_addr(smem);
  if ((s_base & 1023u) != 0u) __trap();  // the 128B swizzle needs 1024-byte aligned tiles

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  // The CTA's rows, without kPersistent.
  const int cta_head = blockIdx.y;
  const int cta_batch = blockIdx.z;
  const int first_q_block = blockIdx.x * Cfg::kGroups;

  // Ring r's barriers and stages.
  auto bar = [&](int r, int i) {
    return s_base + Cfg::kBarrierOffset + 8 * (r * Cfg::kBarriersPerRing + i);
  };
  auto q_full = [&](int r) { return bar(r, 0); };
  auto k_full = [&](int r, int s) { return bar(r, 1 + s); };
  auto v_full = [&](int r, int s) { return bar(r, 1 + kKStages + s); };
  auto k_empty = [&](int r, int s) { return bar(r, 1 + kKStages + kVStages + s); };
  auto v_empty = [&](int r, int s) { return bar(r, 1 + 2 * kKStages + kVStages + s); };
  auto q_empty = [&](int r) { return bar(r, 1 + 2 * (kKStages + kVStages)); };  // kPersistent
  auto ring_base = [&](int r) { return s_base + Cfg::kRingOffset + Cfg::kRingBytes * r; };
  auto s_k = [&](int r, int s) { return ring_base(r) + kTileBytes * s; };
  auto s_v = [&](int r, int s) { return ring_base(r) + kTileBytes * (kKStages + s); };
  // The row of query block `q_block` of (head, batch); a block past the last (an odd block count
  // leaves the second group of the last CTA without a row) gets the last block's, and no tile.
  // With a shared ring (dense) every group has the first group's list.
  auto row_of = [&](int q_block, int head, int batch) {
    return FlashRow<kWgD>(p, q_block < p.blocks ? q_block : p.blocks - 1, head, batch);
  };
  auto tiles_of = [&](int q_block, const FlashRow<kWgD>& fr) {
    if (!Cfg::kSharedRing && q_block >= p.blocks) return 0;
    return (fr.count + kPerTile - 1) / kPerTile;
  };
  // kPersistent: the CTA runs rows blockIdx.x, blockIdx.x + gridDim.x, ... of all batch x heads
  // x blocks rows (in FlashRow's order, so the CTAs at work are on neighbouring rows of one
  // head, whose K and V stay in L2); `visit(q_block, head, batch, i)` for the i-th.
  auto for_each_row = [&](auto visit) {
    const std::int64_t rows = static_cast<std::int64_t>(p.batch) * p.heads * p.blocks;
    int i = 0;
    for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x, ++i) {
      const std::int64_t head_row = r / p.blocks;
      visit(static_cast<int>(r % p.blocks), static_cast<int>(head_row % p.heads),
            static_cast<int>(head_row / p.heads), i);
    }
  };

  if (tid == 0) {
    for (int r = 0; r < Cfg::kRings; ++r) {
      mbar_init(q_full(r), 1);
      if constexpr (Cfg::kPersistent) mbar_init(q_empty(r), Cfg::kReleases);
      for (int s = 0; s < kKStages; ++s) {
        mbar_init(k_full(r, s), 1);
        mbar_init(k_empty(r, s), Cfg::kReleases);
      }
      for (int s = 0; s < kVStages; ++s) {
        mbar_init(v_full(r, s), 1);
        mbar_init(v_empty(r, s), Cfg::kReleases);
      }
    }
    mbar_init_fence();
  }
  __syncthreads();  // the last CTA-wide barrier: from here on, only the mbarriers

  if (tid >= Cfg::kConsumers) {
    // The producer: the first thread of producer warp r issues every copy of ring r, so one
    // ring never waits for another's consumers. A shared ring serves dense rows: the first
    // group's list is everyone's. Q of the ring's groups first (a group past the last query
    // block loads rows past the end: zeros, never stored).
    if constexpr (Cfg::kProducerRegisters > 0) {
      warpgroup_release_registers<Cfg::kProducerRegisters>();
    }
    const int producer_warp = (tid - Cfg::kConsumers) / 32;
    if (producer_warp >= Cfg::kRings || lane != 0) return;
    const int ring = Cfg::kRings == 1 ? 0 : producer_warp;
    const int first_group = ring * Cfg::kGroupsPerRing;
    // Q and the K and V tiles of one row (of the ring's first group's query block `q_block`);
    // its tiles are the ring's tiles tile0, tile0 + 1, ... (tile0 modulo kTilePeriod; `wrapped`:
    // the ring's tiles already went past kTilePeriod once, so every stage has a previous use).
    // Returns how many.
    auto produce_row = [&](int q_block, int head, int batch, int tile0, bool wrapped) {
      const FlashRow<kWgD> fr = row_of(q_block, head, batch);
      const int tiles = tiles_of(q_block, fr);
      mbar_arrive_expect_tx(q_full(ring), kWgQBytes * Cfg::kGroupsPerRing);
      for (int g = 0; g < Cfg::kGroupsPerRing; ++g) {
        load_block(s_base + kWgQBytes * (first_group + g), kWgHalfBytes, &q_map, q_full(ring),
                   static_cast<std::int64_t>(q_block + g) * 64, head, batch);
      }
      // K (or V) of tile t into its stage, once every consumer released the stage's previous
      // use.
      auto load_kv = [&](bool is_v, int t) {
        const int stages = is_v ? kVStages : kKStages;
        const int stage = (tile0 + t) % stages;
        const int use = (tile0 + t) / stages;
        if (use > 0 || wrapped) {
          mbar_wait(is_v ? v_empty(ring, stage) : k_empty(ring, stage), (use - 1) & 1);
        }
        const std::uint32_t full = is_v ? v_full(ring, stage) : k_full(ring, stage);
        mbar_arrive_expect_tx(full, kTileBytes);
#pragma unroll
        for (int b = 0; b < kPerTile; ++b) {
          const int i = t * kPerTile + b;
          const std::int64_t token0 =
              static_cast<std::int64_t>(fr.key_block(i < fr.count ? i : t * kPerTile)) * 64;
          load_block((is_v ? s_v(ring, stage) : s_k(ring, stage)) + b * kWgHalfBytes, kKeys * 128,
                     is_v ? &v_map : &k_map, full, token0, head, batch);
        }
      };
      for (int t = 0; t < tiles; ++t) {  // K and V of each tile, in tile order
        load_kv(false, t);
        load_kv(true, t);
      }
      return tiles;
    };
    if constexpr (Cfg::kPersistent) {
      // Row i's Q overwrites row i - 1's once every consumer warp has it in registers.
      int tile0 = 0;
      bool wrapped = false;
      for_each_row([&](int q_block, int head, int batch, int i) {
        if (i > 0) mbar_wait(q_empty(ring), (i - 1) & 1);
        const int end = tile0 + produce_row(q_block, head, batch, tile0, wrapped);
        wrapped = wrapped || end >= Cfg::kTilePeriod;
        tile0 = end % Cfg::kTilePeriod;
      });
    } else {
      produce_row(first_q_block + first_group, cta_head, cta_batch, 0, false);
    }
    return;
  }

  // The consumers. The warpgroup index, broadcast from lane 0 so the compiler knows it is
  // warp-uniform.
  if constexpr (Cfg::kProducerRegisters > 0) {
    warpgroup_claim_registers<Cfg::kConsumerRegisters>();
  }
  const int group = Cfg::kGroups == 1 ? 0 : __shfl_sync(0xffffffffu, tid / 128, 0);
  const int ring = Cfg::kSharedRing ? 0 : group;
  const int warp = (tid % 128) / 32;
  // After setmaxnreg.inc a trap must be out of line (tma.cuh: trap_out_of_line).
  constexpr bool kRaised = Cfg::kProducerRegisters > 0;
  // After the warpgroup's wgmma that read a stage completed (wgmma.wait_group, which the whole
  // warp executes), the stage is released.
  auto release = [&](std::uint32_t empty) {
    if (!Cfg::kReleasePerWarp || lane == 0) mbar_arrive(empty);
  };

  // The group's row: query block `q_block` of (head, batch), the i-th row of the CTA, its tiles
  // the ring's tiles tile0, tile0 + 1, ... Returns how many.
  auto consume_row = [&](int q_block, int head, int batch, int tile0, int row_index) {
    const FlashRow<kWgD> fr = row_of(q_block, head, batch);
    const int tiles = tiles_of(q_block, fr);
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

    // Ping-pong: the products of a step are issued between sync on the group's own named
    // barrier (1 + group) and arrive on the other's, so the groups alternate on the tensor cores
    // while the other one runs its softmax. A group's own steps: tiles + 1 (none without a
    // tile). Both groups take `turns` turns, the larger of the two groups' step counts (with a
    // shared ring both have the same): a group with fewer steps takes the rest as empty turns
    // (take, pass) after its own. Barrier counts: each group syncs its own barrier in every
    // turn; group 0 arrives on group 1's in every turn; group 1 arrives on group 0's once
    // before its first turn (group 0 goes first) and in every turn but the last. So each
    // barrier completes `turns` times, with both groups' 128 threads each time. No barrier is
    // touched when turns == 0.
    int empty_turns = 0;  // after the group's own steps
    int turns = tiles > 0 ? tiles + 1 : 0;
    if constexpr (Cfg::kPingPong && !Cfg::kSharedRing) {
      const int other_block = q_block + 1 - 2 * group;
      const int other_tiles = tiles_of(other_block, row_of(other_block, head, batch));
      const int most = tiles > other_tiles ? tiles : other_tiles;
      empty_turns = (most > 0 ? most + 1 : 0) - turns;
      turns += empty_turns;
    }
    auto take_turn = [&] {
      if constexpr (Cfg::kPingPong) named_barrier_sync<256>(1 + group);
    };
    auto pass_turn = [&] {
      if constexpr (Cfg::kPingPong) named_barrier_arrive<256>(2 - group);
    };
    auto last_pass = [&] {  // the last of the group's own steps
      if (group == 0 || empty_turns > 0) pass_turn();
    };
    if constexpr (Cfg::kPingPong) {
      if (group == 1 && turns > 0) named_barrier_arrive<256>(1);
    }
    auto wait_k = [&](int t) {
      mbar_wait<kRaised>(k_full(ring, (tile0 + t) % kKStages), ((tile0 + t) / kKStages) & 1);
    };
    auto wait_v = [&](int t) {
      mbar_wait<kRaised>(v_full(ring, (tile0 + t) % kVStages), ((tile0 + t) / kVStages) & 1);
    };
    auto k_stage = [&](int t) { return (tile0 + t) % kKStages; };
    auto v_stage = [&](int t) { return (tile0 + t) % kVStages; };

    mbar_wait<kRaised>(q_full(ring), row_index & 1);
    // Q as the A fragments of S (kQInRegisters), or read by every S from shared memory.
    std::uint32_t qa[Cfg::kQInRegisters ? kWgD / 16 : 1][4];
    if constexpr (Cfg::kQInRegisters) load_q_fragments(qa, s_q, warp, lane);
    // kPersistent: the next row's Q may land once Q is in every warp's registers for sure:
    // after the row's first S completed (it read them), or at once for a row without tiles.
    auto release_q = [&] {
      if constexpr (Cfg::kPersistent) release(q_empty(ring));
    };
    if (tiles == 0) release_q();
    auto issue_s_of = [&](float(&s)[kKeys / 2], int t) {
      if constexpr (Cfg::kQInRegisters) {
        issue_s_rs<kKeys>(s, qa, s_k(ring, k_stage(t)));
      } else {
        issue_s<kKeys>(s, s_q, s_k(ring, k_stage(t)));
      }
    };
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
      issue_s_of(s, 0);
      pass_turn();
      wgmma_wait<0>();
      release(k_empty(ring, k_stage(0)));
      release_q();
      softmax_step<kKeys>(s, m, l, correction, valid, scale_log2, lane);
      pack_p<kKeys>(a, s);
    }
    for (int t = 1; t < tiles; ++t) {
      float s[kKeys / 2];  // declared per step: no value flows into the next step's S
      int valid[kPerTile];
      valid_keys(t, valid);
      wait_k(t);
      wait_v(t - 1);
      take_turn();
      wgmma_fence();
      issue_s_of(s, t);
      issue_pv<kKeys>(o, a, s_v(ring, v_stage(t - 1)));
      pass_turn();
      wgmma_wait<1>();  // S of tile t: its K stage is free
      release(k_empty(ring, k_stage(t)));
      softmax_step<kKeys>(s, m, l, correction, valid, scale_log2, lane);
      wgmma_wait<0>();  // P V of tile t - 1: O holds tiles up to t - 1, its V stage is free
      release(v_empty(ring, v_stage(t - 1)));
      rescale(o, correction);
      pack_p<kKeys>(a, s);
    }
    if (tiles > 0) {
      const int last = tiles - 1;
      wait_v(last);
      take_turn();
      wgmma_fence();
      issue_pv<kKeys>(o, a, s_v(ring, v_stage(last)));
      last_pass();
      wgmma_wait<0>();
      release(v_empty(ring, v_stage(last)));
    }
    for (int e = 0; e < empty_turns; ++e) {
      take_turn();
      if (group == 0 || e + 1 < empty_turns) pass_turn();
    }
    if (Cfg::kSharedRing || q_block < p.blocks) {  // else no row (fr is a neighbour's)
      // Epilogue: each thread holds rows lane/4 and lane/4 + 8 of its warp's 16.
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        store_row<kWgD>(p, fr, q_block, warp * 16 + lane / 4 + hr * 8, l[hr], lane,
                        [&](int dt, int j) { return o[4 * dt + 2 * hr + j]; });
      }
    }
    return tiles;
  };
  if constexpr (Cfg::kPersistent) {
    int tile0 = 0;
    for_each_row([&](int q_block, int head, int batch, int i) {
      tile0 = (tile0 + consume_row(q_block, head, batch, tile0, i)) % Cfg::kTilePeriod;
    });
  } else {
    consume_row(first_q_block + group, cta_head, cta_batch, 0, 0);
  }
#endif
}

// Dense: two consumer warpgroups on neighbouring query blocks share 192-key tiles (three listed
// blocks, S as wgmma m64n192k16; 2 stages, 224 KB, 1 CTA per SM), in ping-pong; the producer a
// warpgroup at 24 registers, the consumers at 240 (S and P of a tile take 144).
struct DenseSetup {
  static constexpr int kGroups = 2;
  static constexpr bool kSharedRing = true;
  static constexpr int kKeys = 192;
  static constexpr int kKStages = 2, kVStages = 2;
  static constexpr int kMinBlocks = 1;
  static constexpr int kProducerRegisters = 24;
  static constexpr bool kPingPong = true;
  static constexpr bool kQInRegisters = false;
  static constexpr bool kReleasePerWarp = false;
  static constexpr bool kPersistent = false;
};
// Sparse rows, the default (`tma`): one consumer warpgroup per CTA (rows differ), 64-key tiles,
// 3 stages, 2 CTAs per SM (112 KB each), a producer warp.
struct SparseSetup {
  static constexpr int kGroups = 1;
  static constexpr bool kSharedRing = true;
  static constexpr int kKeys = 64;
  static constexpr int kKStages = 3, kVStages = 3;
  static constexpr int kMinBlocks = 2;
  static constexpr int kProducerRegisters = 0;
  static constexpr bool kPingPong = false;
  static constexpr bool kQInRegisters = false;
  static constexpr bool kReleasePerWarp = false;
  static constexpr bool kPersistent = false;
};
// The candidates for sparse rows, each selectable by name until measured against SparseSetup;
// all release stages per warp.
// `tma-sparse-wr`: SparseSetup releasing stages per warp, the only difference.
struct SparseWarpReleaseSetup : SparseSetup {
  static constexpr bool kReleasePerWarp = true;
};
// `tma-sparse-rq`: the same with Q in registers (S reads only K from shared memory: with
// 64-key tiles, S from shared memory reads as many Q bytes as K bytes). The 32 registers of Q
// do not fit in the 168 a thread of two 5-warp CTAs gets (ptxas spilled), so the producer is a
// warpgroup at 24 registers and the consumers get 232 (2 x 256 threads).
struct SparseQInRegistersSetup : SparseWarpReleaseSetup {
  static constexpr int kProducerRegisters = 24;
  static constexpr bool kQInRegisters = true;
};
// `tma-sparse-pair`: the dense set-up's CTA (two consumer warpgroups on neighbouring query blocks
// at 240 registers, a producer warpgroup at 24, ping-pong) with a ring per group, each on its
// own list (64-key tiles, 3 stages: 2 x 96 KB + two Q blocks, 224 KB, 1 CTA per SM); warp r of
// the producer issues ring r's copies.
struct SparsePairSetup : DenseSetup {
  static constexpr bool kSharedRing = false;
  static constexpr int kKeys = 64;
  static constexpr int kKStages = 3, kVStages = 3;
  static constexpr bool kReleasePerWarp = true;
};
// `tma-sparse-pair128`: the same on 128-key tiles, K one stage and V two per ring (96 KB a
// group): K(t + 1) is loaded as soon as S(t) read K(t), during the softmax of tile t and the
// other group's turn; V(t + 1) a step ahead, as before.
struct SparsePair128Setup : SparsePairSetup {
  static constexpr int kKeys = 128;
  static constexpr int kKStages = 1, kVStages = 2;
};
// `tma-sparse-pair-rq`, `tma-sparse-pair128-rq`: the pairs with Q in registers (the consumers
// have 240).
struct SparsePairQInRegistersSetup : SparsePairSetup {
  static constexpr bool kQInRegisters = true;
};
struct SparsePair128QInRegistersSetup : SparsePair128Setup {
  static constexpr bool kQInRegisters = true;
};
// `tma-sparse-persistent`: `tma-sparse-rq` (Q in registers, 2 CTAs per SM) on a persistent
// grid: 2 CTAs per SM, each running every (2 x SMs)-th row. The producer's row loop needs more
// than 24 registers (ptxas spilled 16 bytes), so it keeps 40 and the consumer gets 216.
struct SparsePersistentSetup : SparseQInRegistersSetup {
  static constexpr int kProducerRegisters = 40;
  static constexpr bool kPersistent = true;
};
// `tma-sparse-rq128`, `tma-sparse-persistent128`: the same two on 128-key tiles, K one stage
// and V two (Q 16 KB + 96 KB: still 2 CTAs per SM), as the 128-key pairs: the rescale of O, the
// row reductions and the barrier traffic once per 128 keys, Q read from registers, and the
// other CTA of the SM to cover what the single K stage leaves exposed. At 216 registers the
// persistent consumer spilled 32 bytes (and C7512), so its producer keeps 32 and it gets 224.
struct SparseQInRegisters128Setup : SparseQInRegistersSetup {
  static constexpr int kKeys = 128;
  static constexpr int kKStages = 1, kVStages = 2;
};
struct SparsePersistent128Setup : SparsePersistentSetup {
  static constexpr int kProducerRegisters = 32;
  static constexpr int kKeys = 128;
  static constexpr int kKStages = 1, kVStages = 2;
};
using DenseTma = TmaConfig<DenseSetup>;
static_assert(DenseTma::kConsumerRegisters == 240 && DenseTma::kSmemBytes <= 227 * 1024);
static_assert(TmaConfig<SparsePairSetup>::kSmemBytes <= 227 * 1024);
static_assert(TmaConfig<SparsePair128Setup>::kSmemBytes <= 227 * 1024);

template <class Cfg>
void launch(const FlashParams& params, cudaStream_t stream) {
  auto* kernel = &flash_tma_kernel<Cfg>;
  MEMPLAN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const CUtensorMap q_map = head_tensor_map("q", params.q, params);
  const CUtensorMap k_map = head_tensor_map("k", params.k, params);
  const CUtensorMap v_map = head_tensor_map("v", params.v, params);
  dim3 grid(static_cast<unsigned>((params.blocks + Cfg::kGroups - 1) / Cfg::kGroups),
            static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  if constexpr (Cfg::kPersistent) {  // as many CTAs as are resident at once, at most one a row
    int device = 0, sms = 0, per_sm = 0;
    MEMPLAN_CUDA_CHECK(cudaGetDevice(&device));
    MEMPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    MEMPLAN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Cfg::kThreads,
                                                                     Cfg::kSmemBytes));
    const std::int64_t rows =
        static_cast<std::int64_t>(params.batch) * params.heads * params.blocks;
    const std::int64_t resident = std::int64_t{sms} * std::max(per_sm, 1);
    grid = dim3(static_cast<unsigned>(std::min(rows, resident)));
  }
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kWgD)) * M_LOG2E);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(q_map, k_map, v_map, params, scale_log2);
  check_launch("flash_tma_kernel");
}

}  // namespace

void run_flash_tma(const FlashParams& params, TmaSparse sparse, cudaStream_t stream) {
  if (params.kv_count == nullptr) {
    launch<DenseTma>(params, stream);
    return;
  }
  switch (sparse) {
    case TmaSparse::OneGroup:
      launch<TmaConfig<SparseSetup>>(params, stream);
      break;
    case TmaSparse::WarpRelease:
      launch<TmaConfig<SparseWarpReleaseSetup>>(params, stream);
      break;
    case TmaSparse::QInRegisters:
      launch<TmaConfig<SparseQInRegistersSetup>>(params, stream);
      break;
    case TmaSparse::Pair:
      launch<TmaConfig<SparsePairSetup>>(params, stream);
      break;
    case TmaSparse::Pair128:
      launch<TmaConfig<SparsePair128Setup>>(params, stream);
      break;
    case TmaSparse::PairQInRegisters:
      launch<TmaConfig<SparsePairQInRegistersSetup>>(params, stream);
      break;
    case TmaSparse::Pair128QInRegisters:
      launch<TmaConfig<SparsePair128QInRegistersSetup>>(params, stream);
      break;
    case TmaSparse::Persistent:
      launch<TmaConfig<SparsePersistentSetup>>(params, stream);
      break;
    case TmaSparse::QInRegisters128:
      launch<TmaConfig<SparseQInRegisters128Setup>>(params, stream);
      break;
    case TmaSparse::Persistent128:
      launch<TmaConfig<SparsePersistent128Setup>>(params, stream);
      break;
  }
}

}  // namespace memplan::attention::detail
