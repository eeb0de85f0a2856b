// Block selection on the device. A CTA of 16 warps takes up to 32 consecutive query blocks
// ("rows") of one (batch, head) and keeps all their scores in shared memory:
// 1. scores s_j = mean(Q_row) . mean(K_j) / sqrt(d), as a small fp32 GEMM: pooled K streams
//    through shared memory in 64-key tiles (the next tile prefetched into registers while the
//    current one is used), and each thread accumulates a 2-row x 2-key register tile whose
//    loads a warp shares (8 rows x 4 keys: one wavefront each). The scores of 32 rows fill most
//    of shared memory, so a CTA is alone on its SM: 16 warps (128 registers each) rather than 8
//    hide the latency of both phases (ncu on 8 warps: 5.4 cycles per issued instruction);
// 2. a warp per row: mean and population std (two passes, warp shuffles);
// 3. the rule: threshold keeps s_j > mean + tau*std, capped at top_k; topk keeps the top_k. The
//    k-th best score comes from topk_cut.cuh (a value histogram, then the boundary bin's few
//    keys ranked exactly); ties at the boundary go to the lowest block index, so the result is
//    deterministic;
// 4. forced blocks (diagonal +-1, sink keys) are added; sink query rows keep every block;
// 5. ballots over ascending 32-block chunks compact the list, so it comes out sorted;
// 6. coarse mode: each row's softmax over its scores times pooled V, V tiles shared like K.
// Fixed shapes, no allocation, no host sync: capture-safe.
#include <cstddef>

#include "cuda_check.hpp"
#include "launchers.hpp"
#include "memplan/attention/policy.hpp"
#include "topk_cut.cuh"

namespace memplan::attention::detail {

namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kRowTile = 32;   // query rows computed per CTA (rows past the CTA's count: unused)
constexpr int kKeyTile = 64;   // key blocks per shared tile
constexpr int kBins = 256;     // histogram words per warp (topk_cut.cuh)
constexpr std::size_t kSmemLimit = 227 * 1024;

template <int D>
__host__ __device__ constexpr int row_stride() {
  return D + 4;  // rows 4 banks apart: 8 consecutive rows' float4 loads cover all 32 banks
}

template <int D>
__host__ __device__ constexpr std::size_t fixed_smem_floats() {
  return static_cast<std::size_t>(kKeyTile + kRowTile) * row_stride<D>();
}

// Pooled rows [first, first + ROWS) of one head, ROWS*D/4 float4 spread over the CTA; rows at or
// past `limit` are zeros. Loaded into registers, stored to the padded tile later.
template <int D, int ROWS>
struct TileLoad {
  static constexpr int kVec = D / 4;
  static constexpr int kPerThread = ROWS * kVec / kThreads;
  static_assert(ROWS * kVec % kThreads == 0, "whole float4s per thread");
  float4 r[kPerThread];

  __device__ __forceinline__ void load(const float* pooled, int first, int limit) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int id = threadIdx.x + i * kThreads;
      const int row = first + id / kVec;
      r[i] = row < limit ? __ldg(reinterpret_cast<const float4*>(pooled) +
                                 static_cast<std::int64_t>(row) * kVec + id % kVec)
                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
  __device__ __forceinline__ void store(float* tile) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int id = threadIdx.x + i * kThreads;
      *reinterpret_cast<float4*>(tile + (id / kVec) * row_stride<D>() + 4 * (id % kVec)) = r[i];
    }
  }
};

template <int D>
__global__ void __launch_bounds__(kThreads, 1) select_kernel(const SelectParams p, const int rows) {
  extern __shared__ __align__(16) float smem[];
  constexpr int S = row_stride<D>();
  const int n = p.blocks;
  float* k_tile = smem;                            // [64][S]; later histograms, then V tiles
  float* q_tile = k_tile + kKeyTile * S;           // [32][S]
  float* scores_all = q_tile + kRowTile * S;       // [rows][n]

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const std::int64_t head_row0 = static_cast<std::int64_t>(blockIdx.y) * n;
  const int q_first = blockIdx.x * rows;
  const int q_limit = min(q_first + rows, n);  // rows of this CTA: [q_first, q_limit)

  // 1. Scores. Thread tile: rows wr*16 + rg + 8i, keys wk*8 + kg + 4j (i, j < 2), so a warp's
  //    float4 loads touch 8 consecutive rows or 4 consecutive keys: one wavefront each.
  {
    TileLoad<D, kRowTile> q_load;
    q_load.load(p.pooled_q + head_row0 * D, q_first, q_limit);
    q_load.store(q_tile);
    TileLoad<D, kKeyTile> k_load;
    const float* kbar = p.pooled_k + head_row0 * D;
    k_load.load(kbar, 0, n);
    const int row0 = (warp / 8) * 16 + lane / 4;
    const int key0 = (warp % 8) * 8 + lane % 4;
    for (int first = 0; first < n; first += kKeyTile) {
      __syncthreads();  // the previous tile is consumed
      k_load.store(k_tile);
      __syncthreads();
      if (first + kKeyTile < n) k_load.load(kbar, first + kKeyTile, n);
      float acc[2][2];
#pragma unroll
      for (int i = 0; i < 2; ++i) acc[i][0] = acc[i][1] = 0.0f;
#pragma unroll 8
      for (int c = 0; c < D / 4; ++c) {
        float4 a[2];
        float4 b[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          a[i] = *reinterpret_cast<const float4*>(q_tile + (row0 + 8 * i) * S + 4 * c);
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          b[j] = *reinterpret_cast<const float4*>(k_tile + (key0 + 4 * j) * S + 4 * c);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            acc[i][j] = fmaf(a[i].x, b[j].x, acc[i][j]);
            acc[i][j] = fmaf(a[i].y, b[j].y, acc[i][j]);
            acc[i][j] = fmaf(a[i].z, b[j].z, acc[i][j]);
            acc[i][j] = fmaf(a[i].w, b[j].w, acc[i][j]);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int r = row0 + 8 * i;
        if (r >= rows) continue;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int key = first + key0 + 4 * j;
          if (key < n) scores_all[r * n + key] = acc[i][j] * p.scale;
        }
      }
    }
  }
  __syncthreads();  // every score written; the K tile becomes the histograms

  // 2-5. A warp per row.
  unsigned* hist = reinterpret_cast<unsigned*>(k_tile) + warp * kBins;
  for (int i = lane; i < kBins; i += 32) hist[i] = 0u;
  __syncwarp();
  for (int r = warp; q_first + r < q_limit; r += kWarps) {
    const int q_block = q_first + r;
    const std::int64_t row = head_row0 + q_block;
    float* scores = scores_all + r * n;

    auto forced = [&](int j) {
      const int gap = j > q_block ? j - q_block : q_block - j;
      return gap <= kDiagonalRadius || (j >= p.sink_key_begin && j < p.sink_key_end);
    };
    const bool dense_row = q_block >= p.sink_query_begin && q_block < p.sink_query_end;
    // Candidates = blocks not forced: n minus |diagonal band u sink range|, by interval sizes.
    const int band_lo = max(0, q_block - kDiagonalRadius);
    const int band_hi = min(n, q_block + kDiagonalRadius + 1);
    const int overlap = max(0, min(band_hi, p.sink_key_end) - max(band_lo, p.sink_key_begin));
    const int candidates =
        n - (band_hi - band_lo) - (p.sink_key_end - p.sink_key_begin) + overlap;

    // 2-3. The threshold rule needs the row's mean and std (one pass, shifted by the first score
    //      against cancellation) and how many candidates pass it; the top-k rule needs neither.
    bool ranked = p.rule == SelectRule::topk;
    float threshold = 0.0f;
    if (!ranked) {
      const float shift = scores[0];
      float sum = 0.0f;
      float sq = 0.0f;
#pragma unroll 4
      for (int j = lane; j < n; j += 32) {
        const float x = scores[j] - shift;
        sum += x;
        sq = fmaf(x, x, sq);
      }
      const float mean = warp_sum(sum) / static_cast<float>(n);
      const float var = fmaxf(warp_sum(sq) / static_cast<float>(n) - mean * mean, 0.0f);
      threshold = shift + mean + p.tau * sqrtf(var);
      int above = 0;
#pragma unroll 4
      for (int j = lane; j < n; j += 32) above += !forced(j) && scores[j] > threshold;
      if (warp_sum(above) > p.top_k) ranked = true;
    }
    const int k = min(p.top_k, candidates);
    unsigned cut = 0;  // keys below `cut` are kept, and the first `ties` keys equal to it
    int ties = 0;
    if (ranked && k > 0 && !dense_row) topk_cut(scores, n, k, forced, hist, cut, ties);

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

    if (p.coarse != nullptr) {  // softmax weights in place of the scores, for step 6
      float m = -INFINITY;
      for (int j = lane; j < n; j += 32) m = fmaxf(m, scores[j]);
      m = warp_max(m);
      float denom = 0.0f;
      for (int j = lane; j < n; j += 32) {
        const float w = __expf(scores[j] - m);
        scores[j] = w;
        denom += w;
      }
      denom = warp_sum(denom);
      if (lane == 0) q_tile[r] = 1.0f / denom;  // the Q tile is free now
    }
  }

  // 6. Coarse output: the warp's rows r = warp + 8i, lane owning D/32 consecutive dims.
  if (p.coarse == nullptr) return;  // uniform across the CTA
  constexpr int kPerLane = D / 32;
  constexpr int kRowsPerWarp = kRowTile / kWarps;
  float acc[kRowsPerWarp][kPerLane];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) acc[i][e] = 0.0f;
  }
  const float* vbar = p.pooled_v + head_row0 * D;
  TileLoad<D, kKeyTile> v_load;
  for (int first = 0; first < n; first += kKeyTile) {
    v_load.load(vbar, first, n);
    __syncthreads();  // histograms / the previous V tile are done with
    v_load.store(k_tile);
    __syncthreads();
    const int count = min(kKeyTile, n - first);
    for (int jj = 0; jj < count; ++jj) {
      float v[kPerLane];
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) v[e] = k_tile[jj * S + lane * kPerLane + e];
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        const int r = warp + kWarps * i;
        if (q_first + r >= q_limit) continue;
        const float w = scores_all[r * n + first + jj];
#pragma unroll
        for (int e = 0; e < kPerLane; ++e) acc[i][e] = fmaf(w, v[e], acc[i][e]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = warp + kWarps * i;
    if (q_first + r >= q_limit) continue;
    const float inv = q_tile[r];
    float* dst = p.coarse + (head_row0 + q_first + r) * D + lane * kPerLane;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) dst[e] = acc[i][e] * inv;
  }
}

template <int D>
void launch(const SelectParams& params, cudaStream_t stream) {
  const std::size_t fixed = sizeof(float) * fixed_smem_floats<D>();
  static_assert(sizeof(float) * kKeyTile * row_stride<D>() >= sizeof(unsigned) * kBins * kWarps,
                "the histograms fit in the K tile");
  const std::size_t per_row = sizeof(float) * static_cast<std::size_t>(params.blocks);
  int rows = static_cast<int>((kSmemLimit - fixed) / per_row);
  rows = rows < 1 ? 1 : (rows > kRowTile ? kRowTile : rows);
  const std::size_t smem = fixed + per_row * static_cast<std::size_t>(rows);
  MEMPLAN_CUDA_CHECK(cudaFuncSetAttribute(&select_kernel<D>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
  const int heads_total = params.rows / params.blocks;
  const dim3 grid(static_cast<unsigned>((params.blocks + rows - 1) / rows),
                  static_cast<unsigned>(heads_total));
  select_kernel<D><<<grid, kThreads, smem, stream>>>(params, rows);
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
