// Block-sparse flash-attention forward for Hopper (sm_90a) with a TMA producer: the wgmma
// kernel's arithmetic (flash_wgmma.cu), with the loads taken off the warpgroups that compute.
//
// A CTA holds two consumer warpgroups (groups), each on its own 64-row query block, and a
// producer warpgroup that gives its registers to the consumers. The groups share one K/V ring
// when their key list is one (dense launches, and lists of a pair of query blocks: BlockList's
// query_blocks_per_list 2, where both read the first block's row) or have a ring each. The
// first thread of producer warp r loads the Q of ring r's groups, then for each key tile (KEYS /
// 64 listed 64-token blocks side by side: any blocks of the row's list, each loaded on its own)
// K and V with bulk-tensor copies (cp.async.bulk.tensor, 128B swizzle: the layout the wgmma
// descriptors read) into the ring's K_STAGES K and V_STAGES V stages. A list whose length is
// not a multiple of KEYS / 64 ends with a tile whose empty slots hold its first block again
// (finite values, fully masked): the bytes a stage expects never vary. How consumers overlap
// softmax with the products: see TmaConfig.
//
// Rotated visits (BlockList::rotate_visits): CTA c (in launch order) visits its list (each ring
// its own) from the first block at or past (c mod SMs) / SMs of the key blocks, wrapping around
// (first_visit.cuh). CTAs start about one SM's share of a CTA's time apart once their lists
// differ in length, so the CTAs that run together then read the same keys at a time, which stay
// in L2; visited from their first blocks, they read the whole head's K and V at once, which at
// 169,000 tokens (86 MB a head) outgrows L2 (Nsight Compute, H200, 2026-12-02, tau 1.5 "/2"
// with random inputs: L2 hit rate 48 % in list order, 78 % rotated; docs/attention.md). Lists of
// one length run in lockstep waves that start together at block 0, which rotation would
// scatter; dense launches never rotate.
//
// Synchronisation: mbarriers in shared memory, per ring, no CTA barrier after set-up. Named
// barriers among consumers only: 1 and 2 pass the groups' ping-pong turns; 3 + g orders group g's
// writes of its output to its Q stage before its first thread's TMA stores read them.
//   q_full        2 arrivals (the producer's expect_tx, and its publication of the first visit
//                 once its warp found it, while Q loads) + the bytes of the ring's groups' Q.
//   k_full[s], v_full[s]    1 arrival + one tile's bytes; phase n = the n-th use of stage s.
//   k_empty[s], v_empty[s]  one arrival per consumer thread (dense) or consumer warp (block
//                           lists) of the ring's groups, after its warpgroup's wgmma that read
//                           the tile completed (wgmma.wait_group).
// Invariants (STAGES is K_STAGES for K, V_STAGES for V): tile t lives in stage t % STAGES as
// that stage's use n = t / STAGES; consumers wait k_full / v_full with parity n & 1; the
// producer refills stage s for use n > 0 only after waiting k_empty / v_empty with parity
// (n - 1) & 1, i.e. after every consumer released use n - 1. So no barrier can run two phases
// ahead of a waiter (a consumer cannot release use n before use n was loaded, the producer
// cannot load use n + 1 before use n was released), and parity names the phase unambiguously.
// Every consumer thread (warp) arrives on each empty barrier of its ring exactly once per tile.
// No deadlock: consumer step t needs K(t) and V(t - 1) (P V of a tile runs in the step after
// its S); the producer issues K(j), V(j) in tile order and first waits for the release of
// K(j - K_STAGES) (step j - K_STAGES) or V(j - V_STAGES) (step j - V_STAGES + 1), steps that need
// only K and V of tiles before j, issued already. A ring's producer thread waits only for its
// own groups, so rings never wait for each other. Ping-pong turns pass right after a group
// issued its products, never across an mbarrier wait, and a group's mbarrier waits depend only
// on its own ring, so turns add no cycle. Waits trap after 10 s (tma.cuh): a broken invariant
// fails the launch instead of hanging.
#include <cuda.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "first_visit.cuh"
#include "flash_row.cuh"
#include "flash_tma.hpp"
#include "memplan/cuda_check.hpp"
#include "memplan/error.hpp"
#include "tensor_map.hpp"
#include "tma.cuh"
#include "wgmma_tile.cuh"

namespace memplan::attention::detail {

namespace {

// The CTA's place in launch order (x fastest, then y, then z).
__device__ __forceinline__ std::int64_t launch_order_index() {
  return blockIdx.x + static_cast<std::int64_t>(gridDim.x) *
                          (blockIdx.y + static_cast<std::int64_t>(gridDim.y) * blockIdx.z);
}

#ifdef MEMPLAN_FLASH_TIMELINE
// Diagnostics (cmake -DMEMPLAN_FLASH_TIMELINE=ON, read by attention_bench): the first thread of
// each consumer group stamps its CTA's phases with its SM's cycle counter, for the first
// kTimelineCtas CTAs of the last launch. Slots: 0 entry, 1 Q arrived, 2 K of the first tile
// arrived, 3 the first step's softmax done, 4 group 0's last P V done, 5 group 0's output
// stored, 6 group 1's output stored, 7 the SM's id << 32 | the tiles of group 0.
constexpr int kTimelineCtas = 1 << 16;
__device__ long long g_flash_timeline[kTimelineCtas][8];
#define MEMPLAN_TIMELINE(slot, value)                                                 \
  do {                                                                                \
    if (timeline_cta < kTimelineCtas) g_flash_timeline[timeline_cta][slot] = (value); \
  } while (0)
#else
#define MEMPLAN_TIMELINE(slot, value) \
  do {                                \
  } while (0)
#endif

// How consumers overlap softmax with the matrix products, in every set-up:
//   pipelined: S of tile t and P V of tile t - 1 go to the tensor cores together, so the softmax
//     of tile t overlaps P V (the wait for P V is pinned below the softmax: wgmma_wait_after);
//   ping-pong: the two groups take turns to issue their products, so one group's softmax runs
//     while the other's products occupy the tensor cores (with one ring each, for as many steps
//     as the longer list needs: the group with fewer tiles only takes and passes its turns).
// The softmax keeps a stale row max (wgmma_tile.cuh: kStaleMaxLog2), so a warp rescales its
// output only in the tiles where one of its rows' max grew past the kept one by 2^8: the
// instructions saved count because the H200 runs this kernel at its power limit (690 W of 700,
// SM clock 1.56-1.67 GHz of 1.98, 2026-12-03), where fewer instructions buy a higher clock.
// The producer warpgroup keeps kProducerRegisters registers a thread and hands the rest to the
// consumers (setmaxnreg), each consumer thread getting kConsumerRegisters.
// A set-up (the Setup of TmaConfig) names:
//   kSharedRing    one K/V ring for both groups (dense, or a pair's list: one list for both),
//                  else one ring per group, each on its own row's list;
//   kKeys          keys per tile (1-3 listed 64-token blocks);
//   kKStages, kVStages   stages of each ring's K and V tiles;
//   kQInRegisters  S reads Q from registers (wgmma with A from registers), not shared memory;
//   kReleasePerWarp      a consumer warp releases a stage with one arrival (its lane 0, after
//                  the warp's wgmma.wait_group), not one per thread: 4 arrivals a group per tile
//                  instead of 128 on the same shared-memory word.
template <class Setup>
struct TmaConfig : Setup {
  using Setup::kSharedRing, Setup::kKeys, Setup::kKStages, Setup::kVStages;
  static constexpr int kGroups = 2;
  static constexpr int kRings = kSharedRing ? 1 : kGroups;
  static constexpr int kGroupsPerRing = kGroups / kRings;
  static constexpr int kBlocksPerTile = kKeys / 64;
  static constexpr int kConsumers = 128 * kGroups;
  // Arrivals that release a stage of a ring: per consumer thread or per consumer warp.
  static constexpr int kReleases = kGroupsPerRing * (Setup::kReleasePerWarp ? 4 : 128);
  static constexpr int kProducerThreads = 128;
  static constexpr int kThreads = kConsumers + kProducerThreads;
  // One CTA per SM: registers a thread has at entry (the register file, 64K, in steps of 8), and
  // what the consumers get once the producer kept its share.
  static constexpr int kEntryRegisters = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegisters = 24;
  static constexpr int kConsumerRegisters =
      (kEntryRegisters * (kThreads / 128) - kProducerRegisters) / kGroups / 8 * 8;
  static constexpr int kTileBytes = kv_tile_bytes<kKeys>();
  static constexpr int kRingOffset = kWgQBytes * kGroups;  // the groups' Q blocks come first
  static constexpr int kRingBytes = kTileBytes * (kKStages + kVStages);  // K stages, V stages
  // Per ring: q_full, k_full[kKStages], v_full[kVStages], k_empty[kKStages], v_empty[kVStages].
  static constexpr int kBarriersPerRing = 1 + 2 * (kKStages + kVStages);
  static constexpr int kBarrierOffset = kRingOffset + kRingBytes * kRings;
  // Then each ring's first visit (an int; rotated visits, at the top of the file).
  static constexpr int kFirstVisitOffset = kBarrierOffset + 8 * kBarriersPerRing * kRings;
  // Then the word the never-run store of wgmma_wait_after would write (wgmma.cuh).
  static constexpr int kScratchOffset = kFirstVisitOffset + 4 * kRings;
  static constexpr int kSmemBytes = kScratchOffset + 4;
  static_assert(kKeys == 64 || kKeys == 128 || kKeys == 192, "key tiles of 1-3 64-token blocks");
  static_assert(kRings <= kProducerThreads / 32, "one producer warp per ring");
  static_assert(kSmemBytes <= 227 * 1024, "the shared memory of one CTA an SM holds");
  static_assert(kConsumerRegisters > kEntryRegisters && kConsumerRegisters <= 256,
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
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    flash_tma_kernel(const __grid_constant__ CUtensorMap q_map,
                     const __grid_constant__ CUtensorMap k_map,
                     const __grid_constant__ CUtensorMap v_map,
                     const __grid_constant__ CUtensorMap out_map, const FlashParams p,
                     const float scale_log2, const int rotation_period) {
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
#ifdef MEMPLAN_FLASH_TIMELINE
  const std::int64_t timeline_cta = launch_order_index();
  if (tid == 0) MEMPLAN_TIMELINE(0, clock64());
#endif
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

  if (tid == 0) {
    for (int r = 0; r < Cfg::kRings; ++r) {
      mbar_init(q_full(r), 2);  // Q's expect_tx, and the first visit's publication
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
  if (tid == Cfg::kConsumers) {  // the producer's thread fetches the maps while barriers initialise
    prefetch_tensor_map(&q_map);
    prefetch_tensor_map(&k_map);
    prefetch_tensor_map(&v_map);
    prefetch_tensor_map(&out_map);
  }
  // Each ring's list: its count and first entries come into L1 while the barriers initialise
  // (the entries' address does not depend on the count), so the producer's two dependent reads
  // before its first K are L1 hits.
  if (p.kv_count != nullptr && tid >= Cfg::kConsumers && tid % 32 == 0 &&
      (tid - Cfg::kConsumers) / 32 < Cfg::kRings) {
    const int q_block = first_q_block + (tid - Cfg::kConsumers) / 32 * Cfg::kGroupsPerRing;
    const std::int64_t row =
        FlashRow<kWgD>::index(p, q_block < p.blocks ? q_block : p.blocks - 1, cta_head, cta_batch);
    prefetch_l1(p.kv_count + row);
    prefetch_l1(p.kv_idx + row * p.max_k);
  }
  __syncthreads();  // the last CTA-wide barrier: from here on, only the mbarriers

  if (tid >= Cfg::kConsumers) {
    // The producer: the first thread of producer warp r issues every copy of ring r, so one
    // ring never waits for another's consumers. A shared ring serves dense rows: the first
    // group's list is everyone's. Q of the ring's groups first (a group past the last query
    // block loads rows past the end: zeros, never stored).
    warpgroup_release_registers<Cfg::kProducerRegisters>();
    const int producer_warp = (tid - Cfg::kConsumers) / 32;
    if (producer_warp >= Cfg::kRings) return;
    const int ring = Cfg::kRings == 1 ? 0 : producer_warp;
    const int first_group = ring * Cfg::kGroupsPerRing;
    // Q, then the K and V tiles of the row of the ring's first group's query block. Q's copies
    // go first: they need no list, whose reads (the row's count, then its entries) take two
    // round trips to memory before the first K can be asked for.
    const int q_block = first_q_block + first_group;
    if (lane == 0) {
      mbar_arrive_expect_tx(q_full(ring), kWgQBytes * Cfg::kGroupsPerRing);
      for (int g = 0; g < Cfg::kGroupsPerRing; ++g) {
        load_block(s_base + kWgQBytes * (first_group + g), kWgHalfBytes, &q_map, q_full(ring),
                   static_cast<std::int64_t>(q_block + g) * 64, cta_head, cta_batch);
      }
    }
    const FlashRow<kWgD> fr = row_of(q_block, cta_head, cta_batch);
    const int tiles = tiles_of(q_block, fr);
    // The first visit, found by the warp while Q loads, published by the second arrival on
    // q_full (a release; the consumers' wait acquires it).
    int first = 0;
    if (rotation_period > 0) {
      const std::int64_t cta = launch_order_index();
      const int start_block = static_cast<int>(cta % rotation_period * p.blocks / rotation_period);
      first = first_visit([&](int i) { return fr.key_block(i); }, fr.count, start_block, lane);
    }
    if (lane != 0) return;
    reinterpret_cast<volatile int*>(smem + Cfg::kFirstVisitOffset)[ring] = first;
    mbar_arrive(q_full(ring));
    // K (or V) of tile t into its stage, once every consumer released the stage's previous use.
    auto load_kv = [&](bool is_v, int t) {
      const int stages = is_v ? kVStages : kKStages;
      const int stage = t % stages;
      const int use = t / stages;
      if (use > 0) {
        mbar_wait(is_v ? v_empty(ring, stage) : k_empty(ring, stage), (use - 1) & 1);
      }
      const std::uint32_t full = is_v ? v_full(ring, stage) : k_full(ring, stage);
      mbar_arrive_expect_tx(full, kTileBytes);
#pragma unroll
      for (int b = 0; b < kPerTile; ++b) {
        const int visit = t * kPerTile + b < fr.count ? t * kPerTile + b : t * kPerTile;
        const std::int64_t token0 =
            static_cast<std::int64_t>(fr.key_block(rotated_entry(visit, first, fr.count))) * 64;
        load_block((is_v ? s_v(ring, stage) : s_k(ring, stage)) + b * kWgHalfBytes, kKeys * 128,
                   is_v ? &v_map : &k_map, full, token0, cta_head, cta_batch);
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
  warpgroup_claim_registers<Cfg::kConsumerRegisters>();
  const int group = __shfl_sync(0xffffffffu, tid / 128, 0);
  const int ring = Cfg::kSharedRing ? 0 : group;
  const int warp = (tid % 128) / 32;
  // After setmaxnreg.inc a trap must be out of line (tma.cuh: trap_out_of_line).
  constexpr bool kRaised = true;
  // After the warpgroup's wgmma that read a stage completed (wgmma.wait_group, which the whole
  // warp executes), the stage is released.
  auto release = [&](std::uint32_t empty) {
    if (!Cfg::kReleasePerWarp || lane == 0) mbar_arrive(empty);
  };

  // The group's row (query block first_q_block + group: its output, its coarse row), and the
  // list of the keys it visits: with a shared ring the ring's, the first group's row.
  const int q_block = first_q_block + group;
  const FlashRow<kWgD> fr = row_of(q_block, cta_head, cta_batch);
  const FlashRow<kWgD> keys = Cfg::kSharedRing ? row_of(first_q_block, cta_head, cta_batch) : fr;
  const int tiles = tiles_of(q_block, keys);
  const std::uint32_t s_q = s_base + kWgQBytes * group;

  // Keys of each block slot of tile t that exist: 64, fewer for the last block of the
  // sequence, 0 for a slot past the end of the list.
  int first = 0;  // the list's rotation, from the producer once Q arrived
  auto valid_keys = [&](int t, int(&valid)[kPerTile]) {
#pragma unroll
    for (int b = 0; b < kPerTile; ++b) {
      const int visit = t * kPerTile + b;
      const int entry = rotated_entry(visit, first, keys.count);
      valid[b] =
          visit < keys.count
              ? keys_in_block(static_cast<std::int64_t>(keys.key_block(entry)) * 64, p.tokens)
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
  if constexpr (!Cfg::kSharedRing) {
    const int other_block = q_block + 1 - 2 * group;
    const int other_tiles = tiles_of(other_block, row_of(other_block, cta_head, cta_batch));
    const int most = tiles > other_tiles ? tiles : other_tiles;
    empty_turns = (most > 0 ? most + 1 : 0) - turns;
    turns += empty_turns;
  }
  auto take_turn = [&] { named_barrier_sync<256>(1 + group); };
  auto pass_turn = [&] { named_barrier_arrive<256>(2 - group); };
  auto last_pass = [&] {  // the last of the group's own steps
    if (group == 0 || empty_turns > 0) pass_turn();
  };
  if (group == 1 && turns > 0) named_barrier_arrive<256>(1);
  auto wait_k = [&](int t) { mbar_wait<kRaised>(k_full(ring, t % kKStages), (t / kKStages) & 1); };
  auto wait_v = [&](int t) { mbar_wait<kRaised>(v_full(ring, t % kVStages), (t / kVStages) & 1); };
  auto k_stage = [&](int t) { return t % kKStages; };
  auto v_stage = [&](int t) { return t % kVStages; };

  mbar_wait<kRaised>(q_full(ring), 0);
  if (tid == 0) MEMPLAN_TIMELINE(1, clock64());
  first = reinterpret_cast<volatile int*>(smem + Cfg::kFirstVisitOffset)[ring];
  // Q as the A fragments of S (kQInRegisters), or read by every S from shared memory.
  std::uint32_t qa[Cfg::kQInRegisters ? kWgD / 16 : 1][4];
  if constexpr (Cfg::kQInRegisters) load_q_fragments(qa, s_q, warp, lane);
  auto issue_s_of = [&](float(&s)[kKeys / 2], int t) {
    if constexpr (Cfg::kQInRegisters) {
      issue_s_rs<kKeys>(s, qa, s_k(ring, k_stage(t)));
    } else {
      issue_s<kKeys>(s, s_q, s_k(ring, k_stage(t)));
    }
  };
  std::uint32_t a[kKeys / 16][4];  // P of the previous tile
  // Step t: S of tile t and P V of tile t - 1 on the tensor cores, then the softmax of tile t
  // while P V runs; step 0 has no P V, the last step (tiles) only P V. A group's turn covers
  // the issue of both products.
  if (tiles > 0) {
    float s[kKeys / 2];
    int valid[kPerTile];
    valid_keys(0, valid);
    wait_k(0);
    if (tid == 0) MEMPLAN_TIMELINE(2, clock64());
    take_turn();
    wgmma_fence();
    issue_s_of(s, 0);
    pass_turn();
    wgmma_wait<0>();
    release(k_empty(ring, k_stage(0)));
    softmax_step<kKeys, true>(s, m, l, correction, valid, scale_log2, lane);
    pack_p<kKeys>(a, s);
    if (tid == 0) MEMPLAN_TIMELINE(3, clock64());
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
    softmax_step<kKeys, true>(s, m, l, correction, valid, scale_log2, lane);
    // P V of tile t - 1: O holds tiles up to t - 1, its V stage is free. The wait stays below
    // the softmax, which the row sums l depend on.
    wgmma_wait_after<0>(l[0] + l[1], s_base + Cfg::kScratchOffset);
    release(v_empty(ring, v_stage(t - 1)));
    if (__any_sync(0xffffffffu, correction[0] != 1.0f || correction[1] != 1.0f)) {
      rescale(o, correction);  // a row of the warp has a new max (rare: kStaleMaxLog2)
    }
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
    if (tid == 0) MEMPLAN_TIMELINE(4, clock64());
  }
  for (int e = 0; e < empty_turns; ++e) {
    take_turn();
    if (group == 0 || e + 1 < empty_turns) pass_turn();
  }
  if (Cfg::kSharedRing || q_block < p.blocks) {  // else no row (fr is a neighbour's)
    // Epilogue: the group's output block goes to its Q stage (no product reads Q any more), in
    // the layout Q arrived in (two 64-column halves, 128B swizzle), and from there to memory by
    // the TMA unit: two box stores instead of 32 four-byte stores a thread, eight rows apart,
    // which cost the CTA about 0.8 of a tile's time (MEMPLAN_FLASH_TIMELINE, H200,
    // 2026-12-03). Rows past the last token are clipped by the store. Each thread holds rows
    // lane/4 and lane/4 + 8 of its warp's 16; for one dt a warp's 32 writes land in 8 rows and
    // 8 distinct swizzled chunks, so no two share a bank.
    const float* coarse = p.coarse != nullptr ? p.coarse + fr.row * kWgD : nullptr;
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int r = warp * 16 + lane / 4 + hr * 8;
      const float inv = inverse_row_sum(l[hr]);
#pragma unroll
      for (int dt = 0; dt < kWgD / 8; ++dt) {
        const int col = dt * 8 + 2 * (lane % 4);
        const __nv_bfloat162 pair =
            output_pair(p, coarse, col, inv, o[4 * dt + 2 * hr], o[4 * dt + 2 * hr + 1]);
        const std::uint32_t at = s_q + swizzled(r, dt) + 4 * (lane % 4);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at),
                     "r"(*reinterpret_cast<const std::uint32_t*>(&pair))
                     : "memory");
      }
    }
    fence_proxy_async_shared();
    named_barrier_sync<128>(3 + group);  // the group's writes, before its first thread's stores
    // A dense CTA's second group past the last query block (odd block count) stores nothing.
    if (tid % 128 == 0 && static_cast<std::int64_t>(q_block) * 64 < p.tokens) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        tma_store_4d(&out_map, s_q + half * kWgHalfBytes, half * 64, cta_head, q_block * 64,
                     cta_batch);
      }
      tma_store_wait_read();  // the stage is the CTA's until the stores have read it
    }
  }
#ifdef MEMPLAN_FLASH_TIMELINE
  if (tid % 128 == 0) MEMPLAN_TIMELINE(5 + group, clock64());
  if (tid == 0) {
    unsigned sm = 0;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    MEMPLAN_TIMELINE(7, (static_cast<long long>(sm) << 32) | tiles);
  }
#endif
#endif
}

// Dense, and block lists shared by the CTA's two query blocks (query_blocks_per_list 2): the
// groups share 192-key tiles (three listed blocks, S as wgmma m64n192k16; 2 stages, 224 KB), Q
// read from shared memory (S and P of a tile take 144 of the consumers' 240 registers). For
// pair lists it beat a shared 128-key ring with Q in registers and 2 or 3 stages (565-575
// kept-block TFLOP/s against 533-543 for top-k 10 % at 75,600 tokens, H200, 2026-12-02).
struct DenseSetup {
  static constexpr bool kSharedRing = true;
  static constexpr int kKeys = 192;
  static constexpr int kKStages = 2, kVStages = 2;
  static constexpr bool kQInRegisters = false;
  static constexpr bool kReleasePerWarp = false;
};
// Block lists: a ring per group, each on its own list, 128-key tiles with K one stage and V two
// (96 KB a group + two Q blocks): K(t + 1) is loaded as soon as S(t) read K(t), during the
// softmax of tile t and the other group's turn, V(t + 1) a step ahead; Q in registers; stages
// released per warp. Warp r of the producer issues ring r's copies. The fastest of the sparse
// set-ups measured (docs/attention.md).
struct SparseSetup {
  static constexpr bool kSharedRing = false;
  static constexpr int kKeys = 128;
  static constexpr int kKStages = 1, kVStages = 2;
  static constexpr bool kQInRegisters = true;
  static constexpr bool kReleasePerWarp = true;
};
using DenseTma = TmaConfig<DenseSetup>;
using SparseTma = TmaConfig<SparseSetup>;
static_assert(DenseTma::kConsumerRegisters == 240 && SparseTma::kConsumerRegisters == 240);

// MEMPLAN_ATTENTION_ROTATE, read at every launch: unset, empty or `auto` rotates the visits of
// lists that ask for it (BlockList::rotate_visits) where one head's K and V exceed half the L2
// (below that they stay in L2 whatever the order, and finding the first visit delays a CTA's
// first tile by about a microsecond: 4-9 % slower at 32,768 tokens with tau 2.0's short lists
// in one run, H200, 2026-12-02); `always` at any size (the tests' small shapes), `never` not at
// all.
enum class Rotation { Auto, Always, Never };
Rotation rotation_choice() {
  const char* value = std::getenv("MEMPLAN_ATTENTION_ROTATE");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) return Rotation::Auto;
  if (std::strcmp(value, "always") == 0) return Rotation::Always;
  if (std::strcmp(value, "never") == 0) return Rotation::Never;
  throw InvalidArgument(std::string("attention: MEMPLAN_ATTENTION_ROTATE=") + value +
                        " is none of auto, always, never");
}

// SMs of the device when the launch's lists are visited rotated, else 0.
template <class Cfg>
int rotation_period(const FlashParams& params) {
  if (!params.rotate_visits || params.kv_count == nullptr) return 0;
  const Rotation choice = rotation_choice();
  if (choice == Rotation::Never) return 0;
  int device = 0;
  int sms = 0;
  int l2_bytes = 0;
  MEMPLAN_CUDA_CHECK(cudaGetDevice(&device));
  MEMPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  MEMPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  const std::int64_t head_kv_bytes = 2 * params.tokens * kWgD * 2;  // K and V, bf16
  if (choice == Rotation::Auto && 2 * head_kv_bytes <= l2_bytes) return 0;
  return sms;
}

template <class Cfg>
void launch(const FlashParams& params, cudaStream_t stream) {
  auto* kernel = &flash_tma_kernel<Cfg>;
  MEMPLAN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const CUtensorMap q_map = head_tensor_map("q", params.q, params);
  const CUtensorMap k_map = head_tensor_map("k", params.k, params);
  const CUtensorMap v_map = head_tensor_map("v", params.v, params);
  const CUtensorMap out_map = head_tensor_map("out", params.out, params);
  const dim3 grid(static_cast<unsigned>((params.blocks + Cfg::kGroups - 1) / Cfg::kGroups),
                  static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kWgD)) * M_LOG2E);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
      q_map, k_map, v_map, out_map, params, scale_log2, rotation_period<Cfg>(params));
  check_launch("flash_tma_kernel");
}

}  // namespace

#ifdef MEMPLAN_FLASH_TIMELINE
std::vector<long long> flash_tma_timeline() {
  std::vector<long long> out(static_cast<std::size_t>(kTimelineCtas) * 8);
  MEMPLAN_CUDA_CHECK(cudaMemcpyFromSymbol(out.data(), g_flash_timeline, out.size() * 8));
  return out;
}
#endif

void run_flash_tma(const FlashParams& params, cudaStream_t stream) {
  if (params.kv_count == nullptr) {
    launch<DenseTma>(params, stream);
  } else if (params.query_blocks_per_list == 2) {
    // One list per pair of query blocks: the CTA's two groups share it, so dense's set-up (one
    // ring, 192-key tiles) serves it, each listed block loaded on its own.
    launch<DenseTma>(params, stream);
  } else {
    launch<SparseTma>(params, stream);
  }
}

}  // namespace memplan::attention::detail
