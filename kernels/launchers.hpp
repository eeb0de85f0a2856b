// Internal launchers of the device kernels, one per .cu file. The public API (launch.cpp) checks
// every argument first, so these assume valid input and only check the launch itself.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "memplan/attention/modes.hpp"

namespace memplan::attention::detail {

struct FlashParams {
  const void* q = nullptr;  // bf16 [batch, tokens, heads, head_dim]
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  int batch = 0, heads = 0, head_dim = 0, blocks = 0;
  std::int64_t tokens = 0;
  const int* kv_idx = nullptr;    // [rows, max_k]
  const int* kv_count = nullptr;  // [rows]; null: every row dense
  int max_k = 0;
  int query_blocks_per_list = 1;  // 2: rows 2i and 2i + 1 hold one list (BlockList)
  bool rotate_visits = false;     // BlockList's
  const float* coarse = nullptr;  // fp32 [rows, head_dim] or null
  float coarse_gate = 0.0f;
};
void run_flash_forward(const FlashParams& params, cudaStream_t stream);

// Mean of each 64-token block of `count` bf16 tensors into fp32 [batch, heads, blocks, head_dim];
// a tensor with split[i] is written as split bf16 words instead (pooled_means.cuh: same bytes).
struct PoolParams {
  const void* in[3] = {nullptr, nullptr, nullptr};
  void* out[3] = {nullptr, nullptr, nullptr};
  bool split[3] = {false, false, false};
  int count = 0;
  int batch = 0, heads = 0, head_dim = 0, blocks = 0;
  std::int64_t tokens = 0;
};
void run_pool(const PoolParams& params, cudaStream_t stream);

// RoPE on q and k in place (rope.cu); with q_means, also their pooled means (pooled_means.cuh).
struct RopeParams {
  void* q = nullptr;  // bf16 [batch, tokens, heads, head_dim]
  void* k = nullptr;
  const float* table = nullptr;  // fp32 [tokens, head_dim / 2, 2]: (cos, sin)
  bool halves = false;           // pairs (j, j + head_dim / 2), else (2j, 2j + 1)
  int batch = 0, heads = 0, head_dim = 0, blocks = 0;
  std::int64_t tokens = 0;
  float* q_means = nullptr;  // fp32 [batch, heads, blocks, head_dim], or null: no means
  void* k_means = nullptr;   // split words, likewise
};
void run_rope(const RopeParams& params, cudaStream_t stream);

struct SelectParams {
  const float* pooled_q = nullptr;       // fp32 [rows, head_dim]
  const void* pooled_k_split = nullptr;  // [rows, head_dim / 4] split words (pooled_means.cuh)
  const float* pooled_v = nullptr;       // coarse only
  int* kv_idx = nullptr;
  int* kv_count = nullptr;
  float* coarse = nullptr;  // null: no coarse output
  int rows = 0, blocks = 0, head_dim = 0, max_k = 0;
  int query_blocks_per_list = 1;  // 2: one list per pair of query blocks (policy.hpp)
  SelectionRule rule = SelectionRule::Threshold;  // Threshold or TopK
  float tau = 0.0f;
  int top_k = 0;  // topk: blocks chosen by score; threshold: cap on them
  int sink_key_begin = 0, sink_key_end = 0;
  int sink_query_begin = 0, sink_query_end = 0;
  float scale = 1.0f;  // 1/sqrt(head_dim)
};
void run_select(const SelectParams& params, cudaStream_t stream);
// Score rows one selection CTA takes (they fill its shared memory); 0 when a row is too long for
// a pair's two rows (query_blocks_per_list 2 with the coarse branch, past ~1.5 M tokens).
int select_rows_per_cta(int blocks, int head_dim, int query_blocks_per_list, bool coarse);

}  // namespace memplan::attention::detail
