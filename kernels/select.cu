// Block selection on the device. A CTA of 16 warps takes up to 32 consecutive score rows of one
// (batch, head) and keeps all their scores in shared memory; how many rows, and which of the
// kernel's three builds runs, select_rows.hpp decides (below: LongRows, ShortRows, MidRows):
// 1. scores s_j = mean(Q_row) . mean(K_j) / sqrt(d) on the tensor cores (block_scores.cuh),
//    pooled K already split into the products' bf16 operands by the pooling kernel;
// 2. a warp per list, the row copied into registers (score_row.cuh) where the build has the
//    slots, else read from shared memory: mean and population std. A list belongs to one query
//    block, or to a pair (2i, 2i + 1) whose row is the mean of the two (query_blocks_per_list).
//    A pair's row is scored once, from the pair's mean pooled Q (scores are linear in it): half
//    the rows, so half the CTAs and half the reads of pooled K. Only the coarse branch, which
//    needs each block's own softmax, scores both rows and averages them;
// 3. the rule: threshold keeps s_j > mean + tau*std, capped at top_k; topk keeps the top_k. The
//    k-th best score comes from topk_cut.cuh (a value histogram, then the boundary bin's few
//    keys ranked exactly); ties at the boundary go to the lowest block index, so the result is
//    deterministic;
// 4. forced blocks (diagonal +-1, sink keys) are added; sink query rows keep every block;
// 5. ballots over ascending 32-block chunks compact the list, so it comes out sorted;
// 6. coarse mode: each row's softmax over its scores times pooled V, V tiles shared by the CTA.
// Both phases are latency-bound: the more warps an SM holds, the faster. The long build's CTA is
// alone on its SM (registers); the short and mid builds fit two. Fixed shapes, no allocation, no
// host sync: capture-safe.
#include <algorithm>
#include <cstddef>
#include <string>

#include "block_scores.cuh"
#include "launchers.hpp"
#include "memplan/attention/policy.hpp"
#include "memplan/cuda_check.hpp"
#include "memplan/error.hpp"
#include "score_row.cuh"
#include "select_rows.hpp"
#include "topk_cut.cuh"

namespace memplan::attention::detail {

namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kSelectWarps;
static_assert(kThreads == 32 * kWarps);
constexpr int kRowTile = scores::kRows;  // query rows per CTA (fewer when rows are long)
constexpr int kRowsPerWarp = kRowTile / kWarps;
constexpr int kKeyTile = 64;  // pooled V rows per shared tile (coarse)
constexpr int kBins = 256;    // histogram words per warp (topk_cut.cuh)
constexpr std::size_t kSmemLimit = 227 * 1024;

// The kernel's three builds, by register budget (select_rows.hpp picks). Long: a register row of
// 40 slots (rows up to 1,280 blocks; longer ones are read from shared memory) and the score pass
// prefetching the next keys, 120 registers a thread: one CTA per SM. Short: rows up to 512
// blocks, at most 16 rows a CTA, no coarse branch, no prefetch: 64 registers, two CTAs per SM,
// so one CTA's score pass (L2 and tensor latency) overlaps the other's selection (ALU and
// shuffles). Mid: the same with every row read from shared memory (kSlots 0), while two CTAs of
// 16 rows fit an SM's shared memory (up to 1,544 blocks).
struct LongRows {
  static constexpr int kSlots = 40;
  static constexpr bool kPrefetch = true;
  static constexpr int kCtasPerSm = 1;
  static constexpr int kMaxRows = kRowTile;
  static constexpr bool kCoarse = true;
};
struct ShortRows {
  static constexpr int kSlots = kShortRowBlocks / 32;
  static constexpr bool kPrefetch = false;
  static constexpr int kCtasPerSm = 2;
  static constexpr int kMaxRows = kTwoPerSmRows;
  static constexpr bool kCoarse = false;
};
struct MidRows {
  static constexpr int kSlots = 0;  // every row read from shared memory
  static constexpr bool kPrefetch = false;
  static constexpr int kCtasPerSm = 2;
  static constexpr int kMaxRows = kTwoPerSmRows;
  static constexpr bool kCoarse = false;
};

template <int D>
__host__ __device__ constexpr int v_stride() {
  return D + 4;  // V tile rows 4 banks apart
}

// The shared region before the score rows, used in turn by the Q fragments (step 1), the
// per-warp histograms (3) and the V tiles (6).
template <int D>
__host__ __device__ constexpr std::size_t fixed_smem_bytes(bool coarse) {
  const std::size_t fragments = scores::Shape<D>::kFragmentBytes;
  const std::size_t histograms = sizeof(unsigned) * kBins * kWarps;
  const std::size_t v_tile = coarse ? sizeof(float) * kKeyTile * v_stride<D>() : 0;
  const std::size_t most = fragments > histograms ? fragments : histograms;
  return most > v_tile ? most : v_tile;
}

// How a CTA's score rows map onto query blocks (step 2): `span` query blocks per score row (2:
// a pair scored from its mean pooled Q), or a pair's two rows side by side (`row_pairs`, the
// coarse branch's pairs).
struct RowLayout {
  int span = 1;
  bool row_pairs = false;

  __host__ __device__ static RowLayout of(int query_blocks_per_list, bool coarse) {
    const bool pairs = query_blocks_per_list == 2;
    return {pairs && !coarse ? 2 : 1, pairs && coarse};
  }
  [[nodiscard]] __host__ __device__ int rows(int blocks) const {
    return (blocks + span - 1) / span;
  }
};

// Pooled rows [first, first + ROWS) of one head, ROWS*D/4 float4 spread over the CTA; rows at or
// past `limit` are zeros. Loaded into registers, stored to the padded tile after a barrier.
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
      *reinterpret_cast<float4*>(tile + (id / kVec) * v_stride<D>() + 4 * (id % kVec)) = r[i];
    }
  }
};

// Steps 2-5 for one query block, whose scores `row` views (with its forced blocks): writes its
// list and count. Every lane of the warp calls it.
template <typename Row>
__device__ __forceinline__ void select_row(const SelectParams& p, const Row& row, bool dense_row,
                                           int candidates, std::int64_t list_row, int list_rows,
                                           unsigned* hist) {
  const int n = row.n;
  const int lane = threadIdx.x % 32;

  // 2-3. The threshold rule needs the row's mean and std (one pass over every score, shifted by
  //      the first against cancellation) and how many candidates pass it; top-k needs neither.
  //      Either way the rule ends as a cut: keep candidates scoring > cut, plus the first
  //      `ties` scoring exactly cut.
  bool ranked = p.rule == SelectionRule::TopK;
  float cut = INFINITY;
  int ties = 0;
  if (!ranked) {
    const float shift = row.first();
    float sum = 0.0f;
    float sq = 0.0f;
    row.each([&](const Column& col) {
      const float x = col.valid ? col.s - shift : 0.0f;
      sum += x;
      sq = fmaf(x, x, sq);
    });
    const float mean = warp_sum(sum) / static_cast<float>(n);
    const float var = fmaxf(warp_sum(sq) / static_cast<float>(n) - mean * mean, 0.0f);
    cut = shift + mean + p.tau * sqrtf(var);
    int above = 0;
    row.each([&](const Column& col) { above += col.candidate() && col.s > cut; });
    if (warp_sum(above) > p.top_k) ranked = true;
  }
  if (ranked) {
    cut = INFINITY;
    const int k = min(p.top_k, candidates);
    if (k > 0 && !dense_row) topk_cut(row, k, hist, cut, ties);
  }

  // 4-5. Ascending compaction by ballots: forced blocks, the rule's, every block of a dense row;
  //      written to `list_rows` consecutive rows from list_row (the query blocks of the list).
  int* list = p.kv_idx + list_row * p.max_k;
  const unsigned below_me = (1u << lane) - 1u;
  int written = 0;
  int ties_seen = 0;
  row.each([&](const Column& col) {
    const bool tie = col.candidate() && col.s == cut;
    const unsigned tie_mask = __ballot_sync(0xffffffffu, tie);
    const bool keep = col.valid && (dense_row || col.forced || (col.candidate() && col.s > cut) ||
                                    (tie && ties_seen + __popc(tie_mask & below_me) < ties));
    ties_seen += __popc(tie_mask);
    const unsigned keep_mask = __ballot_sync(0xffffffffu, keep);
    const int slot = written + __popc(keep_mask & below_me);
    if (keep && slot < p.max_k) {
      list[slot] = col.j;
      if (list_rows == 2) list[p.max_k + slot] = col.j;
    }
    written += __popc(keep_mask);
  });
  // A dense row reports every block (the attention kernel then ignores its list).
  if (lane < list_rows) p.kv_count[list_row + lane] = dense_row ? n : min(written, p.max_k);
}

template <int D, typename Fit>
__global__ void __launch_bounds__(kThreads, Fit::kCtasPerSm)
    select_kernel(const SelectParams p, const int rows) {
  constexpr int kSlots = Fit::kSlots;
  constexpr int kRowSlots = kSlots > 0 ? kSlots : 1;  // a RegisterRow type even where unused
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int S = v_stride<D>();
  const int n = p.blocks;
  // [rows][scores::row_stride(n)]
  float* scores_all = reinterpret_cast<float*>(smem + fixed_smem_bytes<D>(p.coarse != nullptr));
  const int stride = scores::row_stride(n);
  const RowLayout layout = RowLayout::of(p.query_blocks_per_list, p.coarse != nullptr);

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const std::int64_t head_row0 = static_cast<std::int64_t>(blockIdx.y) * n;
  const int q_first = blockIdx.x * rows;
  const int q_limit = min(q_first + rows, layout.rows(n));  // score rows: [q_first, q_limit)

  // 1. Scores.
  auto* fragments = reinterpret_cast<uint4*>(smem);
  scores::load_query_fragments<D, kThreads>(fragments, p.pooled_q + head_row0 * D, q_first, q_limit,
                                            layout.span, n);
  __syncthreads();
  const void* pooled_k = static_cast<const uint4*>(p.pooled_k_split) + head_row0 * (D / 4);
  if (Fit::kMaxRows > 16 && rows > 16) {
    scores::compute<D, kWarps, 2, Fit::kPrefetch>(fragments, pooled_k, n, rows, p.scale,
                                                  scores_all);
  } else {
    scores::compute<D, kWarps, 1, Fit::kPrefetch>(fragments, pooled_k, n, rows, p.scale,
                                                  scores_all);
  }
  __syncthreads();  // every score written; the fragments' space becomes the histograms

  // 2-5. A warp per list. A score row a list: the warp's rows are warp and warp + 16. A pair's
  //      two rows (row_pairs): the warp's rows are its pair, 2 * warp and 2 * warp + 1 (a CTA's
  //      first row is even, launch()), and the list is chosen once, on the first.
  const bool pairs = p.query_blocks_per_list == 2;
  const bool row_pairs = layout.row_pairs;
  auto row_of_slot = [&](int i) { return row_pairs ? 2 * warp + i : warp + kWarps * i; };
  unsigned* hist = reinterpret_cast<unsigned*>(smem) + warp * kBins;
  for (int i = lane; i < kBins; i += 32) hist[i] = 0u;
  __syncwarp();
  float inv_denominator[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = row_of_slot(i);
    inv_denominator[i] = 0.0f;
    if (q_first + r >= q_limit) continue;  // warp-uniform
    float* scores = scores_all + r * stride;
    const int q_block = layout.span * (q_first + r);  // the list's first query block
    if (!row_pairs || i == 0) {
      // The list's query blocks: q_block, and its pair's second when it has one.
      const int list_rows = pairs && q_block + 1 < n ? 2 : 1;
      const int last_block = q_block + list_rows - 1;
      const std::int64_t list_row = head_row0 + q_block;
      const int band_lo = max(0, q_block - kDiagonalRadius);
      const int band_hi = min(n, last_block + kDiagonalRadius + 1);
      auto forced = [&](int j) {
        return static_cast<unsigned>(j - band_lo) < static_cast<unsigned>(band_hi - band_lo) ||
               (j >= p.sink_key_begin && j < p.sink_key_end);
      };
      const bool dense_row = last_block >= p.sink_query_begin && q_block < p.sink_query_end;
      // Candidates = blocks not forced: n minus |diagonal band u sink range|, by interval sizes.
      const int overlap = max(0, min(band_hi, p.sink_key_end) - max(band_lo, p.sink_key_begin));
      const int candidates =
          n - (band_hi - band_lo) - (p.sink_key_end - p.sink_key_begin) + overlap;
      const float* partner = row_pairs && list_rows == 2 ? scores + stride : nullptr;
      if (kSlots > 0 && n <= 32 * kSlots) {
        select_row(p, RegisterRow<kRowSlots>(scores, partner, n, forced), dense_row, candidates,
                   list_row, list_rows, hist);
      } else {
        select_row(p, SharedRow<decltype(forced)>{scores, partner, n, forced}, dense_row,
                   candidates, list_row, list_rows, hist);
      }
    }

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
      inv_denominator[i] = 1.0f / warp_sum(denom);
    }
  }

  // 6. Coarse output: the warp's rows as above, lane owning D/32 consecutive dims.
  if (!Fit::kCoarse || p.coarse == nullptr) return;  // uniform across the CTA
  float* v_tile = reinterpret_cast<float*>(smem);
  constexpr int kPerLane = D / 32;
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
    v_load.store(v_tile);
    __syncthreads();
    const int count = min(kKeyTile, n - first);
    for (int jj = 0; jj < count; ++jj) {
      float v[kPerLane];
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) v[e] = v_tile[jj * S + lane * kPerLane + e];
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        const int r = row_of_slot(i);
        if (q_first + r >= q_limit) continue;
        const float w = scores_all[r * stride + first + jj];
#pragma unroll
        for (int e = 0; e < kPerLane; ++e) acc[i][e] = fmaf(w, v[e], acc[i][e]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = row_of_slot(i);
    if (q_first + r >= q_limit) continue;
    float* dst = p.coarse + (head_row0 + q_first + r) * D + lane * kPerLane;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) dst[e] = acc[i][e] * inv_denominator[i];
  }
}

// Shared bytes of one score row of `blocks` scores.
std::size_t score_row_bytes(int blocks) {
  return sizeof(float) * static_cast<std::size_t>(scores::row_stride(blocks));
}

// Score rows a CTA holds; 0 when a pair's two rows (row_pairs) do not fit.
template <int D>
int rows_per_cta(int blocks, int query_blocks_per_list, bool coarse) {
  static_assert(kRowsPerWarp * kWarps == kRowTile, "each warp owns whole rows");
  const std::size_t per_row = score_row_bytes(blocks);
  const int rows = static_cast<int>(
      std::min<std::size_t>((kSmemLimit - fixed_smem_bytes<D>(coarse)) / per_row, kRowTile));
  if (RowLayout::of(query_blocks_per_list, coarse).row_pairs) return rows - rows % 2;
  return std::max(rows, 1);
}

template <int D, typename Fit>
void start(const SelectParams& params, int rows, int score_rows, int heads_total,
           cudaStream_t stream) {
  const std::size_t smem =
      fixed_smem_bytes<D>(params.coarse != nullptr) + score_row_bytes(params.blocks) * rows;
  MEMPLAN_CUDA_CHECK(cudaFuncSetAttribute(
      &select_kernel<D, Fit>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>((score_rows + rows - 1) / rows),
                  static_cast<unsigned>(heads_total));
  select_kernel<D, Fit><<<grid, kThreads, smem, stream>>>(params, rows);
  check_launch("select_kernel");
}

template <int D>
void launch(const SelectParams& params, cudaStream_t stream) {
  const bool coarse = params.coarse != nullptr;
  const int fit = rows_per_cta<D>(params.blocks, params.query_blocks_per_list, coarse);
  if (fit < 1) {  // launch.cpp checks it first: select_rows_per_cta
    throw InvalidArgument("attention selection: a row of " + std::to_string(params.blocks) +
                          " blocks leaves no room for a pair's two rows");
  }
  const RowLayout layout = RowLayout::of(params.query_blocks_per_list, coarse);
  const int heads_total = params.rows / params.blocks;
  const int score_rows = layout.rows(params.blocks);
  switch (select_build(params.blocks, coarse, fixed_smem_bytes<D>(coarse),
                       score_row_bytes(params.blocks))) {
    case SelectBuild::Short:
      start<D, ShortRows>(params, std::min(fit, ShortRows::kMaxRows), score_rows, heads_total,
                          stream);
      return;
    case SelectBuild::Mid:
      start<D, MidRows>(params, std::min(fit, MidRows::kMaxRows), score_rows, heads_total, stream);
      return;
    case SelectBuild::Long:
      break;
  }
  int device = 0;
  int sms = 0;
  MEMPLAN_CUDA_CHECK(cudaGetDevice(&device));
  MEMPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  start<D, LongRows>(params, balanced_rows(fit, score_rows, heads_total, sms, layout.row_pairs),
                     score_rows, heads_total, stream);
}

}  // namespace

int select_rows_per_cta(int blocks, int head_dim, int query_blocks_per_list, bool coarse) {
  return head_dim == 64 ? rows_per_cta<64>(blocks, query_blocks_per_list, coarse)
                        : rows_per_cta<128>(blocks, query_blocks_per_list, coarse);
}

void run_select(const SelectParams& params, cudaStream_t stream) {
  if (params.head_dim == 64) {
    launch<64>(params, stream);
  } else {
    launch<128>(params, stream);
  }
}

}  // namespace memplan::attention::detail
