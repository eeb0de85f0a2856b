// The TMA flash kernel (flash_tma.cu) on a persistent grid, `tma-persistent` (a candidate beside
// `tma`): the same set-ups (flash_tma.cuh), the same arithmetic and the same synchronisation
// invariants (the top of flash_tma.cu), but a grid of as many CTAs as are resident at once, each
// looping over work items, so the pipeline does not drain between rows: the producer loads the
// next item's Q and first K/V tiles while the consumers finish the current item (last P V,
// normalisation, store).
//
// Work items: what one CTA of flash_tma.cu does, a pair of neighbouring query blocks of one
// (batch, head), numbered in FlashRow's order. `tma-persistent`: CTA c runs items c, c +
// gridDim.x, ... (a static stride, so the CTAs at work share one head's K and V in L2, and no
// counter to reset). `tma-persistent-dynamic` (block lists with a work counter, which the
// workspace holds): each CTA takes the next item from a global counter (atomicAdd; the launch
// zeroes it first with a memset, a graph node when captured) when it starts one, so CTAs whose
// items were short take more (tau's lists differ in length). The item is passed on through two
// slots in shared memory: the fetcher (producer ring 0's thread) waits until every reader
// (producer ring 1's thread, each consumer warp) read the slot's previous item (item_empty),
// writes the item (-1: none left) and arrives on item_full; readers wait for item_full, read and
// release. No cycle: the fetcher waits only for readers of item n - 2, who read it once they
// finished item n - 3, which needs only tiles issued before the fetcher took item n - 1.
// Across items:
//   tiles   a ring's tiles are numbered over the CTA's life (tile t of item n is the ring's tile
//           base(n) + t, base(n) the tiles of the ring's earlier items), so flash_tma.cu's
//           invariants hold as written with that number. The counter is 32-bit and may wrap:
//           stages are powers of two, so stage and parity stay right modulo 2^32. The producer's
//           first wait on a stage (use 0) names parity 1, the phase before a fresh barrier's
//           first, which counts as completed (PTX ISA, mbarrier.try_wait.parity), so it passes.
//   Q       q_full's phase n is item n. Q has an empty barrier too (q_empty: one release per
//           consumer thread or warp of the ring's groups, as the stages), released once the item
//           read Q for the last time (Q in registers: after its first S; Q in shared memory:
//           after its last S; no tile: at once); the producer loads item n's Q after waiting
//           q_empty's phase n - 1. No cycle: a consumer releases item n's Q after products that
//           need only tiles the producer issued before it waits for that release.
//   turns   the ping-pong runs on across items: both groups take max(steps of the two rows)
//           turns per item, every turn passes, group 1 arrives on group 0's barrier once before
//           its first item and group 0 syncs its barrier once more after its last item, so both
//           named barriers complete equally often and nothing is pending at exit.
// Every wait keeps the 10 s trap (tma.cuh; out of line in the consumers, which raised their
// registers).
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
#include "flash_tma.cuh"
#include "flash_tma.hpp"
#include "memplan/cuda_check.hpp"
#include "tensor_map.hpp"

namespace memplan::attention::detail {

namespace {

// The producer's view of a row's key blocks, at 24 registers: a shared ring serves only dense
// launches (no list to read), and the row index is 32-bit (the launch checked that the rows fit
// in an int), widened only for the list's offset, so no 64-bit value stays live across the item
// loop. A block past the last has the last block's row (as FlashRow's users in flash_tma.cu).
struct ListedBlocks {
  const int* list = nullptr;  // null: a dense row, visit i is block i
  int count = 0;

  __device__ ListedBlocks(const FlashParams& p, bool dense, int q_block, int head, int batch)
      : count(p.blocks) {
    if (dense) return;
    const unsigned row = (static_cast<unsigned>(batch) * p.heads + head) * p.blocks +
                         (q_block < p.blocks ? q_block : p.blocks - 1);
    const int listed = p.kv_count[row];
    if (listed < p.blocks) {
      count = listed;
      list = p.kv_idx + static_cast<unsigned long long>(row) * static_cast<unsigned>(p.max_k);
    }
  }
  [[nodiscard]] __device__ int key_block(int i) const {
    return list == nullptr ? i : __ldg(list + i);
  }
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    flash_tma_persistent_kernel(const __grid_constant__ CUtensorMap q_map,
                                const __grid_constant__ CUtensorMap k_map,
                                const __grid_constant__ CUtensorMap v_map, const FlashParams p,
                                const float scale_log2) {
  static_assert(Cfg::kPersistent, "a persistent set-up: q_empty and power-of-two stages");
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
  // The work items (the launch checked that the rows, and so the items, fit in an int).
  struct Item {
    int first_q_block, head, batch;
  };
  const int pairs = (p.blocks + Cfg::kGroups - 1) / Cfg::kGroups;
  const unsigned items = static_cast<unsigned>(p.batch * p.heads * pairs);
  auto item_of = [&](unsigned i) {
    const int head_row = static_cast<int>(i) / pairs;
    return Item{static_cast<int>(i) % pairs * Cfg::kGroups, head_row % p.heads, head_row / p.heads};
  };
  // kDynamic: the slots' barriers and the slots.
  auto item_full = [&](int slot) { return s_base + Cfg::kScheduleOffset + 8 * slot; };
  auto item_empty = [&](int slot) { return s_base + Cfg::kScheduleOffset + 16 + 8 * slot; };
  volatile int* const slots = reinterpret_cast<volatile int*>(smem + Cfg::kScheduleOffset + 32);
  // visit(item, n) for the CTA's n-th item (the top of the file). `consumer_warp` (a
  // std::bool_constant): the caller is a consumer warp, which raised its registers (its waits
  // trap out of line) and releases a slot once per warp; `fetcher`: producer ring 0's thread.
  auto for_each_item = [&](auto visit, auto consumer_warp, bool fetcher) {
    if constexpr (!Cfg::kDynamic) {
      int n = 0;
      for (unsigned i = blockIdx.x; i < items; i += gridDim.x, ++n) visit(item_of(i), n);
    } else {
      constexpr bool kConsumerWarp = decltype(consumer_warp)::value;
      for (int n = 0;; ++n) {
        const int slot = n & 1;
        const std::uint32_t use = static_cast<std::uint32_t>(n) >> 1;
        int i = -1;
        if (fetcher) {  // use 0 waits for parity 1: complete on a fresh barrier
          mbar_wait(item_empty(slot), (use - 1) & 1);
          const unsigned taken = atomicAdd(p.work_counter, 1u);
          i = taken < items ? static_cast<int>(taken) : -1;
          slots[slot] = i;
          mbar_arrive(item_full(slot));
        } else {
          mbar_wait<kConsumerWarp>(item_full(slot), use & 1);
          i = slots[slot];
          if constexpr (kConsumerWarp) __syncwarp();  // every lane read it
          if (!kConsumerWarp || lane == 0) mbar_arrive(item_empty(slot));
        }
        if (i < 0) return;
        visit(item_of(static_cast<unsigned>(i)), n);
      }
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
  auto q_empty = [&](int r) { return bar(r, 1 + 2 * (kKStages + kVStages)); };
  auto ring_base = [&](int r) { return s_base + Cfg::kRingOffset + Cfg::kRingBytes * r; };
  auto s_k = [&](int r, int s) { return ring_base(r) + kTileBytes * s; };
  auto s_v = [&](int r, int s) { return ring_base(r) + kTileBytes * (kKStages + s); };
  // The row of query block `q_block` of (head, batch); a block past the last (an odd block count
  // leaves the second group of the last item of a head without a row) gets the last block's, and
  // no tile. With a shared ring (dense) every group has the first group's list.
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
      mbar_init(q_empty(r), Cfg::kReleases);
      for (int s = 0; s < kKStages; ++s) {
        mbar_init(k_full(r, s), 1);
        mbar_init(k_empty(r, s), Cfg::kReleases);
      }
      for (int s = 0; s < kVStages; ++s) {
        mbar_init(v_full(r, s), 1);
        mbar_init(v_empty(r, s), Cfg::kReleases);
      }
    }
    if constexpr (Cfg::kDynamic) {
      for (int slot = 0; slot < 2; ++slot) {
        mbar_init(item_full(slot), 1);
        mbar_init(item_empty(slot), (Cfg::kRings - 1) + Cfg::kConsumers / 32);
      }
    }
    mbar_init_fence();
  }
  __syncthreads();  // the last CTA-wide barrier: from here on, only the mbarriers

  if (tid >= Cfg::kConsumers) {
    // The producer: the first thread of producer warp r issues every copy of ring r, item after
    // item (a group past the last query block loads Q rows past the end: zeros, never stored).
    warpgroup_release_registers<Cfg::kProducerRegisters>();
    const int producer_warp = (tid - Cfg::kConsumers) / 32;
    if (producer_warp >= Cfg::kRings || lane != 0) return;
    // The ring as a constant: its stage and barrier addresses become immediates (with a runtime
    // ring the item loop keeps more values live than 24 registers hold: ptxas spilled).
    auto produce = [&](auto ring_constant) {
      constexpr int ring = decltype(ring_constant)::value;
      constexpr int first_group = ring * Cfg::kGroupsPerRing;
      std::uint32_t ring_tile = 0;  // the ring's tiles issued so far
      for_each_item(
          [&](const Item& item, int n) {
            // Q, then the K and V tiles of the row of the ring's first group's query block.
            const int q_block = item.first_q_block + first_group;
            const ListedBlocks fr(p, Cfg::kSharedRing, q_block, item.head, item.batch);
            const int listed = Cfg::kSharedRing || q_block < p.blocks ? fr.count : 0;
            if (n > 0) mbar_wait(q_empty(ring), (n - 1) & 1);  // item n - 1 read its Q
            mbar_arrive_expect_tx(q_full(ring), kWgQBytes * Cfg::kGroupsPerRing);
            for (int g = 0; g < Cfg::kGroupsPerRing; ++g) {
              load_block(s_base + kWgQBytes * (first_group + g), kWgHalfBytes, &q_map, q_full(ring),
                         static_cast<std::int64_t>(q_block + g) * 64, item.head, item.batch);
            }
            // K (or V) of the ring's tile `tile`, the listed blocks from `first` on, into its
            // stage, once every consumer released the stage's previous use (use 0: parity 1, the
            // phase before a fresh barrier's first, complete).
            auto load_kv = [&](bool is_v, std::uint32_t tile, int first) {
              const std::uint32_t stages = is_v ? kVStages : kKStages;
              const std::uint32_t stage = tile % stages;
              const std::uint32_t use = tile / stages;
              mbar_wait(is_v ? v_empty(ring, stage) : k_empty(ring, stage), (use - 1) & 1);
              const std::uint32_t full = is_v ? v_full(ring, stage) : k_full(ring, stage);
              mbar_arrive_expect_tx(full, kTileBytes);
#pragma unroll
              for (int b = 0; b < kPerTile; ++b) {
                const int i = first + b;
                const std::int64_t token0 =
                    static_cast<std::int64_t>(fr.key_block(i < listed ? i : first)) * 64;
                load_block((is_v ? s_v(ring, stage) : s_k(ring, stage)) + b * kWgHalfBytes,
                           kKeys * 128, is_v ? &v_map : &k_map, full, token0, item.head,
                           item.batch);
              }
            };
            // K and V of each tile, in tile order.
            for (int first = 0; first < listed; first += kPerTile, ++ring_tile) {
              load_kv(false, ring_tile, first);
              load_kv(true, ring_tile, first);
            }
          },
          std::false_type{}, ring == 0);
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
  // other one runs its softmax. Turns run on across items (the top of the file): group 1 opens
  // the first item's turns and group 0 closes the last item's at the end.
  auto take_turn = [&] { named_barrier_sync<256>(1 + group); };
  auto pass_turn = [&] { named_barrier_arrive<256>(2 - group); };
  bool had_items = false;

  std::uint32_t ring_tile = 0;  // the ring's tiles consumed before the item's first
  for_each_item(
      [&](const Item& item, int n) {
        if (group == 1 && n == 0) named_barrier_arrive<256>(1);
        had_items = true;
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
            valid[b] = i < fr.count ? keys_in_block(static_cast<std::int64_t>(fr.key_block(i)) * 64,
                                                    p.tokens)
                                    : 0;
          }
        };

        float o[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) o[i] = 0.0f;
        float m[2] = {-INFINITY, -INFINITY};
        float l[2] = {0.0f, 0.0f};
        float correction[2];

        // A group's own steps: tiles + 1 (none without a tile). Both groups take as many turns as
        // the larger of the two groups' step counts (with a shared ring both have the same): a
        // group with fewer steps takes the rest as empty turns (take, pass) after its own. Every
        // turn passes (see above).
        int empty_turns = 0;  // after the group's own steps
        if constexpr (!Cfg::kSharedRing) {
          const int other_block = q_block + 1 - 2 * group;
          const int other_tiles = tiles_of(other_block, row_of(other_block, item.head, item.batch));
          const int most = tiles > other_tiles ? tiles : other_tiles;
          empty_turns = (most > 0 ? most + 1 : 0) - (tiles > 0 ? tiles + 1 : 0);
        }
        auto k_stage = [&](int t) { return (ring_tile + t) % kKStages; };
        auto v_stage = [&](int t) { return (ring_tile + t) % kVStages; };
        auto wait_k = [&](int t) {
          mbar_wait<kRaised>(k_full(ring, k_stage(t)), ((ring_tile + t) / kKStages) & 1);
        };
        auto wait_v = [&](int t) {
          mbar_wait<kRaised>(v_full(ring, v_stage(t)), ((ring_tile + t) / kVStages) & 1);
        };

        mbar_wait<kRaised>(q_full(ring), n & 1);
        // The next item's Q may land once this one's was read for the last time.
        auto release_q = [&] { release(q_empty(ring)); };
        // Whether S of tile t is the last product that reads Q (from registers or shared memory).
        auto last_q_read = [&](int t) { return Cfg::kQInRegisters ? t == 0 : t == tiles - 1; };
        if (tiles == 0) release_q();
        // Q as the A fragments of S (kQInRegisters), or read by every S from shared memory.
        std::uint32_t qa[Cfg::kQInRegisters ? kWgD / 16 : 1][4];
        if constexpr (Cfg::kQInRegisters) {
          if (tiles > 0) load_q_fragments(qa, s_q, warp, lane);
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
          pass_turn();
          wgmma_wait<0>();
          release(v_empty(ring, v_stage(last)));
        }
        for (int e = 0; e < empty_turns; ++e) {
          take_turn();
          pass_turn();
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
      },
      std::true_type{}, false);
  // Group 1's arrival after its last turn (or its opening one, if no item had a turn) completes
  // group 0's barrier once more.
  if (group == 0 && had_items) take_turn();
#endif
}

using PersistentDenseTma = TmaConfig<PersistentSetup<DenseSetup, false>>;
using PersistentSparseTma = TmaConfig<PersistentSetup<SparseSetup, false>>;
using DynamicSparseTma = TmaConfig<PersistentSetup<SparseSetup, true>>;
static_assert(PersistentDenseTma::kConsumerRegisters == 240 &&
              PersistentSparseTma::kConsumerRegisters == 240 &&
              DynamicSparseTma::kConsumerRegisters == 240);

// The SMs of the current device: the grid of a set-up whose CTA fills an SM (one CTA per SM, by
// its shared memory and its registers). A query, no stream work: legal during capture.
int multiprocessors() {
  int device = 0;
  int sms = 0;
  MEMPLAN_CUDA_CHECK(cudaGetDevice(&device));
  MEMPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// MEMPLAN_ATTENTION_PERSISTENT_CTAS: at most this many CTAs in the grid (read at every launch;
// the tests run small shapes on a few CTAs, many work items each); unset or empty: no cap.
std::int64_t cta_cap() {
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
  // The kernel numbers rows and items in 32 bits.
  const std::int64_t rows = static_cast<std::int64_t>(params.batch) * params.heads * params.blocks;
  if (rows > INT32_MAX) {
    throw InvalidArgument("attention: " + std::to_string(rows) +
                          " block rows exceed the persistent TMA kernel's 32-bit row numbers");
  }
  auto* kernel = &flash_tma_persistent_kernel<Cfg>;
  MEMPLAN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const CUtensorMap q_map = head_tensor_map("q", params.q, params);
  const CUtensorMap k_map = head_tensor_map("k", params.k, params);
  const CUtensorMap v_map = head_tensor_map("v", params.v, params);
  // As many CTAs as are resident at once (one per SM), at most one an item.
  const std::int64_t items = static_cast<std::int64_t>(params.batch) * params.heads *
                             ((params.blocks + Cfg::kGroups - 1) / Cfg::kGroups);
  static_assert(
      2 * Cfg::kSmemBytes > 228 * 1024 && 2 * Cfg::kThreads * Cfg::kEntryRegisters > 65536,
      "one CTA per SM");
  const auto ctas = std::min({static_cast<std::int64_t>(multiprocessors()), items, cta_cap()});
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kWgD)) * M_LOG2E);
  if constexpr (Cfg::kDynamic) {  // items are taken from 0 on
    MEMPLAN_CUDA_CHECK(cudaMemsetAsync(params.work_counter, 0, sizeof(unsigned), stream));
  }
  kernel<<<static_cast<unsigned>(ctas), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
      q_map, k_map, v_map, params, scale_log2);
  check_launch("flash_tma_persistent_kernel");
}

}  // namespace

void run_flash_tma_persistent(const FlashParams& params, bool dynamic, cudaStream_t stream) {
  if (params.kv_count == nullptr) {
    launch<PersistentDenseTma>(params, stream);  // every item alike: the static stride
  } else if (dynamic && params.work_counter != nullptr) {
    launch<DynamicSparseTma>(params, stream);
  } else {
    launch<PersistentSparseTma>(params, stream);
  }
}

}  // namespace memplan::attention::detail
