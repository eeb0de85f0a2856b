// Block-sparse flash-attention forward for Hopper (sm_90a) with a TMA producer: the wgmma
// kernel's arithmetic (flash_wgmma.cu), with the loads taken off the warpgroups that compute.
//
// A CTA holds two consumer warpgroups (groups), each on its own 64-row query block, and a
// producer warpgroup that gives its registers to the consumers. The groups share one K/V ring
// (dense launches: every row's key list is the same) or have a ring each (block lists). The
// first thread of producer warp r loads the Q of ring r's groups, then for each key tile (KEYS /
// 64 listed 64-token blocks side by side: any blocks of the row's list, each loaded on its own)
// K and V with bulk-tensor copies (cp.async.bulk.tensor, 128B swizzle: the layout the wgmma
// descriptors read) into the ring's K_STAGES K and V_STAGES V stages. A list whose length is
// not a multiple of KEYS / 64 ends with a tile whose empty slots hold its first block again
// (finite values, fully masked): the bytes a stage expects never vary. How consumers overlap
// softmax with the products: see TmaConfig.
//
// Synchronisation: mbarriers in shared memory, per ring, no CTA barrier after set-up.
//   q_full        1 arrival (the producer's expect_tx) + the bytes of the ring's groups' Q.
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
//
// Persistent set-ups (kPersistent, `tma-persistent`): a grid of as many CTAs as are resident at
// once; CTA c runs work items c, c + gridDim.x, ... (an item: a pair of neighbouring query blocks
// of one (batch, head), in FlashRow's order, so the CTAs at work share one head's K and V in L2).
// The rings run on across items: a ring's tiles are numbered over the CTA's life (tile t of item
// n is the ring's tile `base(n) + t`, base(n) the tiles of the ring's earlier items), so the
// invariants above hold as written with that number. The counter is 32-bit and may wrap: stages
// are powers of two, so stage and parity stay right modulo 2^32. The producer's first wait on a
// stage (use 0) names parity 1, the phase before a fresh barrier's first, which counts as
// completed (PTX ISA, mbarrier.try_wait.parity), so it does not wait. The producer loads item
// n + 1's Q and first tiles while the consumers finish item n (last P V, epilogue, store): Q has
// an empty barrier too (q_empty: one release per consumer thread or warp of the ring's groups),
// released once Q was read for the last time (Q in registers: after the item's first S; Q in
// shared memory: after its last S; no tile: at once); q_full's phase n is item n. Ping-pong turns
// run on across items too: both groups take max(steps of the two rows) turns per item, group 1
// arrives on group 0's barrier once before its first item and after every turn, group 0 syncs its
// barrier once more after its last item, so both barriers are balanced at exit.
#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "flash_row.cuh"
#include "flash_tma.hpp"
#include "memplan/cuda_check.hpp"
#include "tensor_map.hpp"
#include "tma.cuh"
#include "wgmma_tile.cuh"

namespace memplan::attention::detail {

namespace {

// How consumers overlap softmax with the matrix products, in every set-up:
//   pipelined: S of tile t and P V of tile t - 1 go to the tensor cores together, so the softmax
//     of tile t overlaps P V;
//   ping-pong: the two groups take turns to issue their products, so one group's softmax runs
//     while the other's products occupy the tensor cores (with one ring each, for as many steps
//     as the longer list needs: the group with fewer tiles only takes and passes its turns).
// The producer warpgroup keeps kProducerRegisters registers a thread and hands the rest to the
// consumers (setmaxnreg), each consumer thread getting kConsumerRegisters.
// A set-up (the Setup of TmaConfig) names:
//   kSharedRing    one K/V ring for both groups (dense: every row's list is the same), else one
//                  ring per group, each on its own row's list;
//   kKeys          keys per tile (1-3 listed 64-token blocks);
//   kKStages, kVStages   stages of each ring's K and V tiles;
//   kQInRegisters  S reads Q from registers (wgmma with A from registers), not shared memory;
//   kReleasePerWarp      a consumer warp releases a stage with one arrival (its lane 0, after
//                  the warp's wgmma.wait_group), not one per thread: 4 arrivals a group per tile
//                  instead of 128 on the same shared-memory word;
//   kPersistent    a grid of resident CTAs looping over work items, the rings running on across
//                  items (see the top of the file); else one CTA per item.
template <class Setup>
struct TmaConfig : Setup {
  using Setup::kSharedRing, Setup::kKeys, Setup::kKStages, Setup::kVStages, Setup::kPersistent;
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
  // Per ring: q_full, k_full[kKStages], v_full[kVStages], k_empty[kKStages], v_empty[kVStages],
  // and persistent set-ups q_empty.
  static constexpr int kBarriersPerRing = 1 + 2 * (kKStages + kVStages) + (kPersistent ? 1 : 0);
  static constexpr int kBarrierOffset = kRingOffset + kRingBytes * kRings;
  static constexpr int kSmemBytes = kBarrierOffset + 8 * kBarriersPerRing * kRings;
  static_assert(kKeys == 64 || kKeys == 128 || kKeys == 192, "key tiles of 1-3 64-token blocks");
  static_assert(!kPersistent ||
                    ((kKStages & (kKStages - 1)) == 0 && (kVStages & (kVStages - 1)) == 0),
                "persistent: a 32-bit tile counter that wraps needs power-of-two stages");
  static_assert(kRings <= kProducerThreads / 32, "one producer warp per ring");
  static_assert(kSmemBytes <= 227 * 1024, "the shared memory of one CTA an SM holds");
  static_assert(kConsumerRegisters > kEntryRegisters && kConsumerRegisters <= 256,
                "a producer warpgroup gives registers to the consumers, at most 256 a thread");
};

// A row's key blocks as the producer reads them.
struct ListedBlocks {
  const int* list = nullptr;  // null: a dense row, visit i is block i
  int count = 0;
  ListedBlocks() = default;
  __device__ explicit ListedBlocks(const FlashRow<kWgD>& fr) : list(fr.list), count(fr.count) {}
  [[nodiscard]] __device__ int key_block(int i) const {
    return list == nullptr ? i : __ldg(list + i);
  }
};

// FlashRow's list for the persistent producer at 24 registers: a shared ring serves only dense
// launches (no list to read), and the row index is 32-bit (the launch checked that the rows fit
// in an int), widened only for the list's offset, so no 64-bit value stays live across the loop.
// A block past the last has the last block's row (as row_of).
__device__ __forceinline__ ListedBlocks listed_blocks(const FlashParams& p, bool dense, int q_block,
                                                      int head, int batch) {
  ListedBlocks blocks;
  blocks.count = p.blocks;
  if (dense) return blocks;
  const unsigned row = (static_cast<unsigned>(batch) * p.heads + head) * p.blocks +
                       (q_block < p.blocks ? q_block : p.blocks - 1);
  const int listed = p.kv_count[row];
  if (listed < p.blocks) {
    blocks.count = listed;
    blocks.list = p.kv_idx + static_cast<unsigned long long>(row) * static_cast<unsigned>(p.max_k);
  }
  return blocks;
}

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
  // Work items: a pair of neighbouring query blocks of one (batch, head). One CTA per item, or
  // (kPersistent) items blockIdx.x, blockIdx.x + gridDim.x, ... in FlashRow's order (the launch
  // checked that the rows, and so the items, fit in an int).
  struct Item {
    int first_q_block, head, batch;
  };
  const int pairs = (p.blocks + Cfg::kGroups - 1) / Cfg::kGroups;
  const unsigned items = static_cast<unsigned>(p.batch * p.heads * pairs);
  // visit(item, n) for the CTA's n-th item.
  auto for_each_item = [&](auto visit) {
    if constexpr (Cfg::kPersistent) {
      int n = 0;
      for (unsigned i = blockIdx.x; i < items; i += gridDim.x, ++n) {
        const int head_row = static_cast<int>(i) / pairs;
        visit(Item{static_cast<int>(i) % pairs * Cfg::kGroups, head_row % p.heads,
                   head_row / p.heads},
              n);
      }
    } else {
      visit(Item{static_cast<int>(blockIdx.x) * Cfg::kGroups, static_cast<int>(blockIdx.y),
                 static_cast<int>(blockIdx.z)},
            0);
    }
  };

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
    warpgroup_release_registers<Cfg::kProducerRegisters>();
    const int producer_warp = (tid - Cfg::kConsumers) / 32;
    if (producer_warp >= Cfg::kRings || lane != 0) return;
    // The ring as a constant: its stage and barrier addresses become immediates (the persistent
    // loop keeps more values live than the 24 registers hold otherwise).
    auto produce = [&](auto ring_constant) {
      constexpr int ring = decltype(ring_constant)::value;
      constexpr int first_group = ring * Cfg::kGroupsPerRing;
      std::uint32_t ring_tile = 0;  // the ring's tiles issued so far
      for_each_item([&](const Item& item, int n) {
        // Q, then the K and V tiles of the row of the ring's first group's query block.
        const int q_block = item.first_q_block + first_group;
        const ListedBlocks fr =
            Cfg::kPersistent ? listed_blocks(p, Cfg::kSharedRing, q_block, item.head, item.batch)
                             : ListedBlocks(row_of(q_block, item.head, item.batch));
        const int listed = Cfg::kSharedRing || q_block < p.blocks ? fr.count : 0;
        // The previous item's Q is read for the last time.
        if (Cfg::kPersistent && n > 0) mbar_wait(q_empty(ring), (n - 1) & 1);
        mbar_arrive_expect_tx(q_full(ring), kWgQBytes * Cfg::kGroupsPerRing);
        for (int g = 0; g < Cfg::kGroupsPerRing; ++g) {
          load_block(s_base + kWgQBytes * (first_group + g), kWgHalfBytes, &q_map, q_full(ring),
                     static_cast<std::int64_t>(q_block + g) * 64, item.head, item.batch);
        }
        // K (or V) of the ring's tile `tile`, the listed blocks from `first` on, into its stage,
        // once every consumer released the stage's previous use (persistent: use 0 waits for
        // parity 1, complete on a fresh barrier).
        auto load_kv = [&](bool is_v, std::uint32_t tile, int first) {
          const std::uint32_t stages = is_v ? kVStages : kKStages;
          const std::uint32_t stage = tile % stages;
          const std::uint32_t use = tile / stages;
          if (Cfg::kPersistent || use > 0) {
            mbar_wait(is_v ? v_empty(ring, stage) : k_empty(ring, stage), (use - 1) & 1);
          }
          const std::uint32_t full = is_v ? v_full(ring, stage) : k_full(ring, stage);
          mbar_arrive_expect_tx(full, kTileBytes);
#pragma unroll
          for (int b = 0; b < kPerTile; ++b) {
            const int i = first + b;
            const std::int64_t token0 =
                static_cast<std::int64_t>(fr.key_block(i < listed ? i : first)) * 64;
            load_block((is_v ? s_v(ring, stage) : s_k(ring, stage)) + b * kWgHalfBytes, kKeys * 128,
                       is_v ? &v_map : &k_map, full, token0, item.head, item.batch);
          }
        };
        // K and V of each tile, in tile order.
        for (int first = 0; first < listed; first += kPerTile, ++ring_tile) {
          load_kv(false, ring_tile, first);
          load_kv(true, ring_tile, first);
        }
      });
    };
    if (Cfg::kRings == 1 || producer_warp == 0) {
      produce(std::integral_constant<int, 0>{});
    } else {
      produce(std::integral_constant<int, Cfg::kRings - 1>{});
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
  // Ping-pong: the products of a step are issued between sync on the group's own named barrier
  // (1 + group) and arrive on the other's, so the groups alternate on the tensor cores while the
  // other one runs its softmax. Persistent: turns run on across items (the top of the file);
  // group 1 opens the first item's turns here and group 0 closes the last item's at the end.
  auto take_turn = [&] { named_barrier_sync<256>(1 + group); };
  auto pass_turn = [&] { named_barrier_arrive<256>(2 - group); };
  const bool has_items = !Cfg::kPersistent || blockIdx.x < items;
  if (Cfg::kPersistent && group == 1 && has_items) named_barrier_arrive<256>(1);

  std::uint32_t ring_tile = 0;  // the ring's tiles consumed before the item's first
  for_each_item([&](const Item& item, int n) {
    // The group's row: query block item.first_q_block + group.
    const int q_block = item.first_q_block + group;
    const FlashRow<kWgD> fr = row_of(q_block, item.head, item.batch);
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

    // A group's own steps: tiles + 1 (none without a tile). Both groups take `turns` turns, the
    // larger of the two groups' step counts (with a shared ring both have the same): a group
    // with fewer steps takes the rest as empty turns (take, pass) after its own. Barrier counts
    // (one CTA per item): each group syncs its own barrier in every turn; group 0 arrives on
    // group 1's in every turn; group 1 arrives on group 0's once before its first turn (group 0
    // goes first) and in every turn but the last. So each barrier completes `turns` times, with
    // both groups' 128 threads each time. No barrier is touched when turns == 0. Persistent:
    // every turn passes (see above).
    int empty_turns = 0;  // after the group's own steps
    int turns = tiles > 0 ? tiles + 1 : 0;
    if constexpr (!Cfg::kSharedRing) {
      const int other_block = q_block + 1 - 2 * group;
      const int other_tiles = tiles_of(other_block, row_of(other_block, item.head, item.batch));
      const int most = tiles > other_tiles ? tiles : other_tiles;
      empty_turns = (most > 0 ? most + 1 : 0) - turns;
      turns += empty_turns;
    }
    auto last_pass = [&] {  // the last of the group's own steps
      if (Cfg::kPersistent || group == 0 || empty_turns > 0) pass_turn();
    };
    if (!Cfg::kPersistent && group == 1 && turns > 0) named_barrier_arrive<256>(1);
    auto k_stage = [&](int t) { return (ring_tile + t) % kKStages; };
    auto v_stage = [&](int t) { return (ring_tile + t) % kVStages; };
    auto wait_k = [&](int t) {
      mbar_wait<kRaised>(k_full(ring, k_stage(t)), ((ring_tile + t) / kKStages) & 1);
    };
    auto wait_v = [&](int t) {
      mbar_wait<kRaised>(v_full(ring, v_stage(t)), ((ring_tile + t) / kVStages) & 1);
    };

    mbar_wait<kRaised>(q_full(ring), n & 1);
    // Persistent: the next item's Q may land once this one's was read for the last time.
    auto release_q = [&] {
      if constexpr (Cfg::kPersistent) release(q_empty(ring));
    };
    // Whether S of tile t is the last product that reads Q (from registers or shared memory).
    auto last_q_read = [&](int t) { return Cfg::kQInRegisters ? t == 0 : t == tiles - 1; };
    if (tiles == 0) release_q();
    // Q as the A fragments of S (kQInRegisters), or read by every S from shared memory.
    std::uint32_t qa[Cfg::kQInRegisters ? kWgD / 16 : 1][4];
    if constexpr (Cfg::kQInRegisters) {
      if (!Cfg::kPersistent || tiles > 0) load_q_fragments(qa, s_q, warp, lane);
    }
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
      take_turn();
      wgmma_fence();
      issue_s_of(s, 0);
      pass_turn();
      wgmma_wait<0>();
      release(k_empty(ring, k_stage(0)));
      if (last_q_read(0)) release_q();
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
      if (last_q_read(t)) release_q();
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
      if (Cfg::kPersistent || group == 0 || e + 1 < empty_turns) pass_turn();
    }
    ring_tile += tiles;
    if (Cfg::kSharedRing || q_block < p.blocks) {  // else no row (fr is a neighbour's)
      // Epilogue: each thread holds rows lane/4 and lane/4 + 8 of its warp's 16.
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        store_row<kWgD>(p, fr, q_block, warp * 16 + lane / 4 + hr * 8, l[hr], lane,
                        [&](int dt, int j) { return o[4 * dt + 2 * hr + j]; });
      }
    }
  });
  // Persistent: group 1's arrival after its last turn (or its opening one, if no item had a
  // turn) completes group 0's barrier once more.
  if (Cfg::kPersistent && group == 0 && has_items) take_turn();
#endif
}

// Dense: the groups share 192-key tiles (three listed blocks, S as wgmma m64n192k16; 2 stages,
// 224 KB), Q read from shared memory (S and P of a tile take 144 of the consumers' 240
// registers).
struct DenseSetup {
  static constexpr bool kSharedRing = true;
  static constexpr int kKeys = 192;
  static constexpr int kKStages = 2, kVStages = 2;
  static constexpr bool kQInRegisters = false;
  static constexpr bool kReleasePerWarp = false;
  static constexpr bool kPersistent = false;
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
  static constexpr bool kPersistent = false;
};
// `tma-persistent`: a set-up on a persistent grid, its rings running on across work items.
template <class Setup>
struct PersistentSetup : Setup {
  static constexpr bool kPersistent = true;
};
using DenseTma = TmaConfig<DenseSetup>;
using SparseTma = TmaConfig<SparseSetup>;
using PersistentDenseTma = TmaConfig<PersistentSetup<DenseSetup>>;
using PersistentSparseTma = TmaConfig<PersistentSetup<SparseSetup>>;
static_assert(DenseTma::kConsumerRegisters == 240 && SparseTma::kConsumerRegisters == 240);
static_assert(PersistentDenseTma::kConsumerRegisters == 240 &&
              PersistentSparseTma::kConsumerRegisters == 240);

// CTAs of `kernel` the device holds at once (SMs x CTAs an SM holds). Host queries only, no
// stream work: legal during capture.
template <class Kernel>
std::int64_t resident_ctas(Kernel* kernel, int threads, int smem_bytes) {
  int device = 0;
  int sms = 0;
  int per_sm = 0;
  MEMPLAN_CUDA_CHECK(cudaGetDevice(&device));
  MEMPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  MEMPLAN_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes));
  if (per_sm < 1) {
    // Plain string building: fmt's compile-time checks do not survive nvcc (cuda_check.hpp).
    throw CudaError("attention: flash_tma_kernel (" + std::to_string(threads) + " threads, " +
                    std::to_string(smem_bytes) + " bytes of shared memory) fits no SM");
  }
  return static_cast<std::int64_t>(sms) * per_sm;
}

// MEMPLAN_ATTENTION_PERSISTENT_CTAS: at most this many CTAs in a persistent grid (read at every
// launch; the tests run small shapes on a few CTAs, many work items each); unset or empty: no cap.
std::int64_t persistent_cta_cap() {
  const char* value = std::getenv("MEMPLAN_ATTENTION_PERSISTENT_CTAS");
  if (value == nullptr || *value == '\0') return INT64_MAX;
  char* end = nullptr;
  const long long cap = std::strtoll(value, &end, 10);
  if (*end != '\0' || cap < 1) {
    throw InvalidArgument(std::string("attention: MEMPLAN_ATTENTION_PERSISTENT_CTAS=") + value +
                          " is not a positive number of CTAs");
  }
  return cap;
}

template <class Cfg>
void launch(const FlashParams& params, cudaStream_t stream) {
  auto* kernel = &flash_tma_kernel<Cfg>;
  MEMPLAN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const CUtensorMap q_map = head_tensor_map("q", params.q, params);
  const CUtensorMap k_map = head_tensor_map("k", params.k, params);
  const CUtensorMap v_map = head_tensor_map("v", params.v, params);
  const int pairs = (params.blocks + Cfg::kGroups - 1) / Cfg::kGroups;
  dim3 grid(static_cast<unsigned>(pairs), static_cast<unsigned>(params.heads),
            static_cast<unsigned>(params.batch));
  if constexpr (Cfg::kPersistent) {  // as many CTAs as are resident at once, at most one an item
    // The kernel numbers rows and items in 32 bits.
    const std::int64_t rows =
        static_cast<std::int64_t>(params.batch) * params.heads * params.blocks;
    if (rows > INT32_MAX) {
      throw InvalidArgument("attention: " + std::to_string(rows) +
                            " block rows exceed the persistent TMA kernel's 32-bit row numbers");
    }
    const std::int64_t items = static_cast<std::int64_t>(params.batch) * params.heads * pairs;
    grid = dim3(static_cast<unsigned>(std::min(
        {resident_ctas(kernel, Cfg::kThreads, Cfg::kSmemBytes), items, persistent_cta_cap()})));
  }
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kWgD)) * M_LOG2E);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(q_map, k_map, v_map, params, scale_log2);
  check_launch("flash_tma_kernel");
}

}  // namespace

void run_flash_tma(const FlashParams& params, bool persistent, cudaStream_t stream) {
  const bool dense = params.kv_count == nullptr;
  if (persistent) {
    dense ? launch<PersistentDenseTma>(params, stream)
          : launch<PersistentSparseTma>(params, stream);
  } else {
    dense ? launch<DenseTma>(params, stream) : launch<SparseTma>(params, stream);
  }
}

}  // namespace memplan::attention::detail
