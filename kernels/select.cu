// Block selection on the device. A CTA takes up to 8 consecutive query blocks of one (batch,
// head), one warp per query block ("row"), so each tile of pooled K read from L2 into shared
// memory serves every row of the CTA (a CTA per row would re-read the head's whole pooled K once
// per row: 17 GB of L2 traffic at 75,600 tokens).
// 1. scores s_j = mean(Q_row) . mean(K_j) / sqrt(d): tiles of 32 key blocks, lane j of a warp
//    owns key j of the tile; the row's scores stay in shared memory;
// 2. mean and population std of the row (two passes, warp shuffles);
// 3. the rule: threshold keeps s_j > mean + tau*std, capped at top_k; topk keeps the top_k. The
//    k-th best score is found by a 32-pass radix select over order-preserving keys; ties at the
//    boundary go to the lowest block index, so the result is deterministic;
// 4. forced blocks (diagonal +-1, sink keys) are added; sink query rows keep every block;
// 5. ballots over ascending 32-block chunks compact the list, so it comes out sorted;
// 6. coarse mode: the row's softmax over scores times pooled V, with V tiles shared like K.
// Fixed shapes, no allocation, no host sync: capture-safe.
#include <cstddef>

#include "cuda_check.hpp"
#include "launchers.hpp"
#include "memplan/attention/policy.hpp"

namespace memplan::attention::detail {

namespace {

constexpr int kMaxRowsPerCta = 8;
constexpr int kTile = 32;                       // key blocks per shared tile
constexpr std::size_t kSmemBudget = 200 * 1024;  // leaves room for the static part

template <int D>
__host__ __device__ constexpr int tile_stride() {
  return D + 4;  // float4 rows; lanes j..j+7 of a phase land 4 banks apart
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ int warp_sum(int v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Smaller key = higher score (order-preserving map of the float, inverted).
__device__ __forceinline__ unsigned rank_key(float score) {
  const unsigned bits = __float_as_uint(score);
  return ~((bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u));
}

// Loads pooled rows [first, first + 32) of one head into a padded tile; rows past n are zeros.
template <int D>
__device__ void load_tile(float* tile, const float* pooled, int first, int n) {
  constexpr int kVec = D / 4;
  for (int i = threadIdx.x; i < kTile * kVec; i += blockDim.x) {
    const int r = i / kVec;
    const int c = i % kVec;
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (first + r < n) x = reinterpret_cast<const float4*>(pooled + (first + r) * D)[c];
    reinterpret_cast<float4*>(tile + r * tile_stride<D>())[c] = x;
  }
}

template <int D>
__global__ void __launch_bounds__(kMaxRowsPerCta * 32) select_kernel(const SelectParams p) {
  extern __shared__ __align__(16) float smem[];
  const int rows_per_cta = blockDim.x / 32;
  const int n = p.blocks;
  float* tile = smem;                                  // [32][D+4]
  float* qbar = tile + kTile * tile_stride<D>();       // [rows_per_cta][D]
  float* scores_all = qbar + rows_per_cta * D;         // [rows_per_cta][n]

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const std::int64_t head_row0 = static_cast<std::int64_t>(blockIdx.y) * n;
  const int q_block = blockIdx.x * rows_per_cta + warp;
  const bool active = q_block < n;  // idle warps still join the CTA's barriers
  const std::int64_t row = head_row0 + q_block;
  float* scores = scores_all + warp * n;

  if (active) {
    for (int d = lane; d < D; d += 32) qbar[warp * D + d] = p.pooled_q[row * D + d];
  }

  // 1. Scores, one 32-block tile of pooled K at a time.
  const float* kbar = p.pooled_k + head_row0 * D;
  for (int first = 0; first < n; first += kTile) {
    __syncthreads();  // the previous tile is consumed (and qbar written, the first time)
    load_tile<D>(tile, kbar, first, n);
    __syncthreads();
    if (active) {
      const float4* q4 = reinterpret_cast<const float4*>(qbar + warp * D);
      const float4* k4 = reinterpret_cast<const float4*>(tile + lane * tile_stride<D>());
      float acc = 0.0f;
#pragma unroll 8
      for (int c = 0; c < D / 4; ++c) {
        const float4 a = q4[c];
        const float4 b = k4[c];
        acc = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, acc))));
      }
      if (first + lane < n) scores[first + lane] = acc * p.scale;
    }
  }
  __syncwarp();

  float row_max = 0.0f;
  if (active) {
    // 2. Row statistics.
    float sum = 0.0f;
    for (int j = lane; j < n; j += 32) sum += scores[j];
    const float mean = warp_sum(sum) / static_cast<float>(n);
    float sq = 0.0f;
    for (int j = lane; j < n; j += 32) {
      const float diff = scores[j] - mean;
      sq = fmaf(diff, diff, sq);
    }
    const float threshold = mean + p.tau * sqrtf(warp_sum(sq) / static_cast<float>(n));

    auto forced = [&](int j) {
      const int gap = j > q_block ? j - q_block : q_block - j;
      return gap <= kDiagonalRadius || (j >= p.sink_key_begin && j < p.sink_key_end);
    };
    const bool dense_row = q_block >= p.sink_query_begin && q_block < p.sink_query_end;

    // 3. Decide the rule for this row: plain threshold, or the top `k` by rank.
    bool ranked = p.rule == SelectRule::topk;
    int candidates = 0;
    int above = 0;
    for (int j = lane; j < n; j += 32) {
      if (forced(j)) continue;
      ++candidates;
      above += scores[j] > threshold;
    }
    candidates = warp_sum(candidates);
    above = warp_sum(above);
    if (p.rule == SelectRule::threshold && above > p.top_k) ranked = true;
    const int k = min(p.top_k, candidates);
    unsigned cut = 0;  // keys below `cut` are kept, and the first `ties` keys equal to it
    int ties = 0;
    if (ranked && k > 0) {
      int remaining = k;
      for (int bit = 31; bit >= 0; --bit) {
        const unsigned high = ~0u << bit;
        int c = 0;
        for (int j = lane; j < n; j += 32) {
          c += !forced(j) && (rank_key(scores[j]) & high) == cut;
        }
        c = warp_sum(c);
        if (c < remaining) {
          remaining -= c;
          cut |= 1u << bit;
        }
      }
      ties = remaining;
    }

    // 4-5. Ascending compaction by ballots.
    int* list = p.kv_idx + row * p.max_k;
    const unsigned below_me = (1u << lane) - 1u;
    int written = 0;
    int ties_seen = 0;
    for (int base = 0; base < n; base += 32) {
      const int j = base + lane;
      bool keep = false;
      bool tie = false;
      if (j < n) {
        if (dense_row || forced(j)) {
          keep = true;
        } else if (!ranked) {
          keep = scores[j] > threshold;
        } else if (k > 0) {
          const unsigned key = rank_key(scores[j]);
          keep = key < cut;
          tie = key == cut;
        }
      }
      if (ranked) {  // warp-uniform, so every lane takes part in the ballot
        const unsigned tie_mask = __ballot_sync(0xffffffffu, tie);
        if (tie) keep = ties_seen + __popc(tie_mask & below_me) < ties;
        ties_seen += __popc(tie_mask);
      }
      const unsigned keep_mask = __ballot_sync(0xffffffffu, keep);
      const int slot = written + __popc(keep_mask & below_me);
      if (keep && slot < p.max_k) list[slot] = j;
      written += __popc(keep_mask);
    }
    // A dense row reports every block (the attention kernel then ignores its list).
    if (lane == 0) p.kv_count[row] = dense_row ? n : min(written, p.max_k);
    if (p.coarse != nullptr) {
      float m = -INFINITY;
      for (int j = lane; j < n; j += 32) m = fmaxf(m, scores[j]);
      row_max = warp_max(m);
    }
  }

  // 6. Coarse output: softmax weights in place of the scores, then tiles of pooled V.
  if (p.coarse == nullptr) return;  // uniform across the CTA
  float denom = 0.0f;
  if (active) {
    for (int j = lane; j < n; j += 32) {
      const float w = __expf(scores[j] - row_max);
      scores[j] = w;
      denom += w;
    }
    denom = warp_sum(denom);
  }
  constexpr int kPerLane = D / 32;
  float acc[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) acc[i] = 0.0f;
  const float* vbar = p.pooled_v + head_row0 * D;
  for (int first = 0; first < n; first += kTile) {
    __syncthreads();
    load_tile<D>(tile, vbar, first, n);
    __syncthreads();
    if (active) {
      const int count = min(kTile, n - first);
      for (int jj = 0; jj < count; ++jj) {
        const float w = scores[first + jj];
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) {
          acc[i] = fmaf(w, tile[jj * tile_stride<D>() + lane + 32 * i], acc[i]);
        }
      }
    }
  }
  if (active) {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) p.coarse[row * D + lane + 32 * i] = acc[i] / denom;
  }
}

template <int D>
void launch(const SelectParams& params, cudaStream_t stream) {
  const std::size_t fixed = sizeof(float) * kTile * tile_stride<D>();
  const std::size_t per_row = sizeof(float) * (D + static_cast<std::size_t>(params.blocks));
  int rows = static_cast<int>((kSmemBudget - fixed) / per_row);
  rows = rows < 1 ? 1 : (rows > kMaxRowsPerCta ? kMaxRowsPerCta : rows);
  const std::size_t smem = fixed + per_row * static_cast<std::size_t>(rows);
  MEMPLAN_CUDA_CHECK(cudaFuncSetAttribute(&select_kernel<D>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
  const int heads_total = params.rows / params.blocks;
  const dim3 grid(static_cast<unsigned>((params.blocks + rows - 1) / rows),
                  static_cast<unsigned>(heads_total));
  select_kernel<D><<<grid, rows * 32, smem, stream>>>(params);
  check_launch("select_kernel");
}

}  // namespace

void run_select(const SelectParams& params, cudaStream_t stream) {
  if (params.head_dim == 64) {
    launch<64>(params, stream);
  } else {
    launch<128>(params, stream);
  }
}

}  // namespace memplan::attention::detail
