// What the TMA flash kernels share (flash_tma.cu: one CTA per pair of query blocks;
// flash_tma_persistent.cu: a persistent grid of CTAs looping over such pairs): the set-ups and
// the configuration derived from them (threads, registers, shared-memory layout), and the load of
// one 64-token block. The synchronisation invariants are written at the top of flash_tma.cu.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "tma.cuh"
#include "wgmma_tile.cuh"

namespace memplan::attention::detail {

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
//                  items (flash_tma_persistent.cu); else one CTA per item;
//   kDynamic       persistent: the items come from a global counter, one at a time, passed on to
//                  the CTA's other threads through two slots in shared memory; else a static
//                  stride.
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
  // kDynamic: item_full[2], item_empty[2] and the two item slots after the rings' barriers.
  static constexpr int kScheduleOffset = kBarrierOffset + 8 * kBarriersPerRing * kRings;
  static constexpr int kSmemBytes = kScheduleOffset + (Setup::kDynamic ? 8 * 4 + 4 * 2 : 0);
  static_assert(kKeys == 64 || kKeys == 128 || kKeys == 192, "key tiles of 1-3 64-token blocks");
  static_assert(!kPersistent ||
                    ((kKStages & (kKStages - 1)) == 0 && (kVStages & (kVStages - 1)) == 0),
                "persistent: a 32-bit tile counter that wraps needs power-of-two stages");
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
  static constexpr bool kDynamic = false;
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
  static constexpr bool kDynamic = false;
};
// `tma-persistent`: a set-up on a persistent grid, its rings running on across work items; with
// DYNAMIC (`tma-persistent-dynamic`), items taken from a global counter.
template <class Setup, bool DYNAMIC>
struct PersistentSetup : Setup {
  static constexpr bool kPersistent = true;
  static constexpr bool kDynamic = DYNAMIC;
};

}  // namespace memplan::attention::detail
