// Block selection on the device: one CTA per (batch, head, query block) row.
// 1. scores s_j = mean(Q_block) . mean(K_j) / sqrt(d) for every key block j (a warp per block);
// 2. row statistics (mean, population std) through cub::BlockReduce;
// 3. the rule: threshold keeps s_j > mean + tau*std, capped at top_k blocks; topk keeps the
//    top_k highest. Ranking is a bitonic sort in shared memory of (score, index) keys, so ties
//    break towards the lower block index and the result is deterministic;
// 4. forced blocks (diagonal +-1, sink keys) are added; sink query rows keep every block;
// 5. compaction to an ascending list with cub::BlockScan;
// 6. coarse mode: softmax over the row's scores applied to the pooled V gives the coarse output.
// Fixed shapes, no allocation, no host sync: capture-safe.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>

#include "cuda_check.hpp"
#include "launchers.hpp"
#include "memplan/attention/policy.hpp"

namespace memplan::attention::detail {

namespace {

constexpr int kSelectThreads = 256;
constexpr int kSelectWarps = kSelectThreads / 32;
constexpr unsigned long long kNoKey = ~0ull;

using BlockReduce = cub::BlockReduce<float, kSelectThreads>;
using BlockScan = cub::BlockScan<int, kSelectThreads>;

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Sorting these ascending orders by score descending, then by block index ascending.
__device__ unsigned long long rank_key(float score, int index) {
  const unsigned bits = __float_as_uint(score);
  const unsigned ascending = (bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u);
  return (static_cast<unsigned long long>(~ascending) << 32) | static_cast<unsigned>(index);
}

__device__ void bitonic_sort(unsigned long long* keys, int n_pow2) {
  for (int size = 2; size <= n_pow2; size <<= 1) {
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < n_pow2; i += kSelectThreads) {
        const int j = i ^ stride;
        if (j > i) {
          const bool ascending = (i & size) == 0;
          const unsigned long long a = keys[i];
          const unsigned long long b = keys[j];
          if ((a > b) == ascending) {
            keys[i] = b;
            keys[j] = a;
          }
        }
      }
      __syncthreads();
    }
  }
}

__global__ void __launch_bounds__(kSelectThreads) select_kernel(const SelectParams p, int n_pow2) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto* keys = reinterpret_cast<unsigned long long*>(smem);
  auto* scores = reinterpret_cast<float*>(keys + n_pow2);
  float* qbar = scores + p.blocks;
  auto* flags = reinterpret_cast<unsigned char*>(qbar + p.head_dim);
  __shared__ union {
    BlockReduce::TempStorage reduce;
    BlockScan::TempStorage scan;
  } temp;
  __shared__ float broadcast;
  __shared__ int above;
  __shared__ float coarse_part[kSelectThreads];

  const int n = p.blocks;
  const int d_model = p.head_dim;
  const int tid = threadIdx.x;
  const int row = blockIdx.x;
  const int q_block = row % n;
  const std::int64_t head_row0 = static_cast<std::int64_t>(row / n) * n;

  for (int d = tid; d < d_model; d += kSelectThreads) {
    qbar[d] = p.pooled_q[static_cast<std::int64_t>(row) * d_model + d];
  }
  if (tid == 0) above = 0;
  __syncthreads();

  // 1. Scores: warp w takes blocks w, w+8, ...; lanes stride head_dim so loads coalesce.
  const float* kbar = p.pooled_k + head_row0 * d_model;
  for (int j = tid / 32; j < n; j += kSelectWarps) {
    float acc = 0.0f;
    for (int d = tid % 32; d < d_model; d += 32) acc = fmaf(qbar[d], kbar[j * d_model + d], acc);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (tid % 32 == 0) scores[j] = acc * p.scale;
  }
  __syncthreads();

  // 2. Mean, then the spread around it (two passes: no cancellation).
  float local = 0.0f;
  for (int j = tid; j < n; j += kSelectThreads) local += scores[j];
  float total = BlockReduce(temp.reduce).Sum(local);
  if (tid == 0) broadcast = total / static_cast<float>(n);
  __syncthreads();
  const float mean = broadcast;
  local = 0.0f;
  for (int j = tid; j < n; j += kSelectThreads) {
    const float diff = scores[j] - mean;
    local = fmaf(diff, diff, local);
  }
  total = BlockReduce(temp.reduce).Sum(local);
  if (tid == 0) broadcast = sqrtf(total / static_cast<float>(n));
  __syncthreads();
  const float threshold = mean + p.tau * broadcast;

  auto forced = [&](int j) {
    const int gap = j > q_block ? j - q_block : q_block - j;
    return gap <= kDiagonalRadius || (j >= p.sink_key_begin && j < p.sink_key_end);
  };
  const bool dense_row = q_block >= p.sink_query_begin && q_block < p.sink_query_end;

  // 3-4. Flags of kept blocks.
  bool rank = p.rule == SelectRule::topk;
  if (!dense_row && p.rule == SelectRule::threshold) {
    int mine = 0;
    for (int j = tid; j < n; j += kSelectThreads) mine += !forced(j) && scores[j] > threshold;
    if (mine > 0) atomicAdd(&above, mine);
    __syncthreads();
    rank = above > p.top_k;  // over the cap: keep the top_k highest instead
  }
  if (dense_row) {
    for (int j = tid; j < n; j += kSelectThreads) flags[j] = 1;
  } else if (!rank) {
    for (int j = tid; j < n; j += kSelectThreads) flags[j] = forced(j) || scores[j] > threshold;
  } else {
    for (int i = tid; i < n_pow2; i += kSelectThreads) {
      keys[i] = i < n && !forced(i) ? rank_key(scores[i], i) : kNoKey;
    }
    for (int j = tid; j < n; j += kSelectThreads) flags[j] = forced(j);
    __syncthreads();
    bitonic_sort(keys, n_pow2);
    for (int i = tid; i < p.top_k && i < n_pow2; i += kSelectThreads) {
      if (keys[i] != kNoKey) flags[static_cast<unsigned>(keys[i] & 0xffffffffu)] = 1;
    }
  }
  __syncthreads();

  // 5. Compaction: each thread owns a contiguous run of blocks, so the list comes out ascending.
  const int per_thread = (n + kSelectThreads - 1) / kSelectThreads;
  const int begin = min(n, tid * per_thread);
  const int end = min(n, begin + per_thread);
  int mine = 0;
  for (int j = begin; j < end; ++j) mine += flags[j];
  int offset = 0;
  int kept = 0;
  BlockScan(temp.scan).ExclusiveSum(mine, offset, kept);
  int* list = p.kv_idx + static_cast<std::int64_t>(row) * p.max_k;
  for (int j = begin; j < end; ++j) {
    if (flags[j] != 0) {
      if (offset < p.max_k) list[offset] = j;
      ++offset;
    }
  }
  // A dense row reports every block (the attention kernel then ignores its list).
  if (tid == 0) p.kv_count[row] = dense_row ? n : min(kept, p.max_k);

  // 6. Coarse output: attention between the pooled query block and all pooled key blocks.
  if (p.coarse == nullptr) return;
  __syncthreads();  // temp storage is reused
  local = -INFINITY;
  for (int j = tid; j < n; j += kSelectThreads) local = fmaxf(local, scores[j]);
  const float row_max = BlockReduce(temp.reduce).Reduce(local, MaxOp{});
  if (tid == 0) broadcast = row_max;
  __syncthreads();
  const float mx = broadcast;
  local = 0.0f;
  for (int j = tid; j < n; j += kSelectThreads) local += __expf(scores[j] - mx);
  __syncthreads();
  total = BlockReduce(temp.reduce).Sum(local);
  if (tid == 0) broadcast = total;
  const int parts = kSelectThreads / d_model;
  const int d = tid % d_model;
  const int part = tid / d_model;
  const float* vbar = p.pooled_v + head_row0 * d_model;
  float acc = 0.0f;
  for (int j = part; j < n; j += parts) acc = fmaf(__expf(scores[j] - mx), vbar[j * d_model + d], acc);
  coarse_part[tid] = acc;
  __syncthreads();
  if (tid < d_model) {
    float sum = 0.0f;
    for (int q = 0; q < parts; ++q) sum += coarse_part[q * d_model + tid];
    p.coarse[static_cast<std::int64_t>(row) * d_model + tid] = sum / broadcast;
  }
}

int next_pow2(int n) {
  int v = 1;
  while (v < n) v *= 2;
  return v;
}

}  // namespace

void run_select(const SelectParams& params, cudaStream_t stream) {
  const int n_pow2 = next_pow2(params.blocks);
  const std::size_t smem = static_cast<std::size_t>(n_pow2) * 8 +
                           static_cast<std::size_t>(params.blocks) * 5 +
                           static_cast<std::size_t>(params.head_dim) * 4;
  MEMPLAN_CUDA_CHECK(cudaFuncSetAttribute(&select_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
  select_kernel<<<static_cast<unsigned>(params.rows), kSelectThreads, smem, stream>>>(params,
                                                                                       n_pow2);
  check_launch("select_kernel");
}

}  // namespace memplan::attention::detail
