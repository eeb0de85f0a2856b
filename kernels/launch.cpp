// The public entry points (attention.hpp, rope.hpp): check every argument, then launch RoPE,
// pooling, selection and the flash kernel in stream order. All checks happen before the first
// launch, so bad input leaves nothing half-done on the stream.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <utility>

#include "launchers.hpp"
#include "memplan/attention/attention.hpp"
#include "memplan/attention/rope.hpp"
#include "memplan/error.hpp"

namespace memplan::attention {

namespace {

void check_pointer(const void* ptr, std::size_t alignment, const char* name) {
  if (ptr == nullptr) throw InvalidArgument(fmt::format("attention: {} is null", name));
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  if (address % alignment != 0) {
    throw InvalidArgument(
        fmt::format("attention: {} = {} is not {}-byte aligned", name, ptr, alignment));
  }
}

void check_tensors(const AttentionShape& shape, const AttentionTensors& tensors) {
  validate(shape);
  // 16-byte alignment: the kernel moves 16-byte chunks of each token's head.
  check_pointer(tensors.q, 16, "q");
  check_pointer(tensors.k, 16, "k");
  check_pointer(tensors.v, 16, "v");
  check_pointer(tensors.out, 16, "out");
  if (tensors.out == tensors.q || tensors.out == tensors.k || tensors.out == tensors.v) {
    throw InvalidArgument("attention: out aliases an input (the kernel reads Q/K/V while writing)");
  }
}

void check_sinks(const AttentionShape& shape, const AttentionPolicy& policy) {
  const int n = shape.blocks();
  for (const auto& [name, range] :
       {std::pair{"sink_keys", policy.sink_keys}, std::pair{"sink_queries", policy.sink_queries}}) {
    if (!range.empty() && range.end > n) {
      throw InvalidArgument(
          fmt::format("attention: {} = [{}, {}) exceeds the {} blocks of {} tokens", name,
                      range.begin, range.end, n, shape.tokens));
    }
  }
}

// With the coarse branch a pair's two score rows must fit one selection CTA's shared memory
// (each block's softmax needs its own row; without it a pair is one row, of its mean query).
void check_pairs_fit(const AttentionShape& shape, const AttentionPolicy& policy) {
  const bool coarse = traits(policy.mode).coarse_branch;
  if (policy.query_blocks_per_list == 2 && coarse &&
      detail::select_rows_per_cta(shape.blocks(), shape.head_dim, 2, coarse) < 2) {
    throw InvalidArgument(fmt::format(
        "attention: query_blocks_per_list = 2 in mode {} needs two rows of {} block scores in one "
        "selection CTA's shared memory, which {} tokens at head_dim {} exceed; use 1",
        traits(policy.mode).name, shape.blocks(), shape.tokens, shape.head_dim));
  }
}

void check_pooled(PooledMeans pooled) {
  if (pooled != PooledMeans::Compute && pooled != PooledMeans::InWorkspace) {
    throw InvalidArgument(fmt::format("attention: pooled = {} is neither Compute nor InWorkspace",
                                      static_cast<int>(pooled)));
  }
}

void check_workspace(const WorkspaceLayout& layout, const void* workspace, std::size_t size) {
  if (layout.bytes == 0) return;
  check_pointer(workspace, kWorkspaceAlignment, "workspace");
  if (size < layout.bytes) {
    throw InvalidArgument(fmt::format(
        "attention: workspace of {} bytes is smaller than the {} needed", size, layout.bytes));
  }
}

template <typename T>
T* at(void* base, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<unsigned char*>(base) + offset);
}

detail::FlashParams flash_params(const AttentionShape& shape, const AttentionTensors& tensors) {
  detail::FlashParams params;
  params.q = tensors.q;
  params.k = tensors.k;
  params.v = tensors.v;
  params.out = tensors.out;
  params.batch = shape.batch;
  params.heads = shape.heads;
  params.head_dim = shape.head_dim;
  params.blocks = shape.blocks();
  params.tokens = shape.tokens;
  return params;
}

// Selection, assuming every argument was checked.
void select_unchecked(const AttentionShape& shape, const AttentionTensors& tensors,
                      const AttentionPolicy& policy, const WorkspaceLayout& layout, void* workspace,
                      PooledMeans pooled, cudaStream_t stream) {
  detail::PoolParams pool;
  pool.in[0] = tensors.q;
  pool.in[1] = tensors.k;
  pool.in[2] = tensors.v;
  pool.out[0] = at<float>(workspace, layout.pooled_q);
  pool.out[1] = at<float>(workspace, layout.pooled_k);
  pool.split[1] = true;  // pooled K is only read as the score products' operand
  pool.out[2] = layout.has_pooled_v ? at<float>(workspace, layout.pooled_v) : nullptr;
  pool.count = layout.has_pooled_v ? 3 : 2;
  pool.batch = shape.batch;
  pool.heads = shape.heads;
  pool.head_dim = shape.head_dim;
  pool.blocks = shape.blocks();
  pool.tokens = shape.tokens;
  if (pooled == PooledMeans::Compute) detail::run_pool(pool, stream);

  detail::SelectParams select;
  select.pooled_q = static_cast<const float*>(pool.out[0]);
  select.pooled_k_split = pool.out[1];
  select.pooled_v = static_cast<const float*>(pool.out[2]);
  select.kv_idx = at<int>(workspace, layout.kv_idx);
  select.kv_count = at<int>(workspace, layout.kv_count);
  select.coarse = layout.has_coarse ? at<float>(workspace, layout.coarse) : nullptr;
  select.rows = static_cast<int>(shape.rows());
  select.blocks = shape.blocks();
  select.head_dim = shape.head_dim;
  select.max_k = layout.max_k;
  select.query_blocks_per_list = policy.query_blocks_per_list;
  // For the threshold rule, top_k is the cap; forced blocks come on top of it, within max_k by
  // construction. Callers checked that the mode selects (its rule is not None).
  select.rule = traits(policy.mode).rule;
  select.tau = policy.tau;
  select.top_k = selected_blocks(shape, policy);
  select.sink_key_begin = policy.sink_keys.begin;
  select.sink_key_end = policy.sink_keys.end;
  select.sink_query_begin = policy.sink_queries.begin;
  select.sink_query_end = policy.sink_queries.end;
  select.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
  detail::run_select(select, stream);
}

// What launch_attention found valid: the mode the step runs and the workspace's layout.
struct CheckedCall {
  SparsityMode mode;
  WorkspaceLayout layout;
};

CheckedCall check_attention(const AttentionShape& shape, const AttentionTensors& tensors,
                            const AttentionPolicy& policy, double step_fraction,
                            const void* workspace, std::size_t workspace_size, PooledMeans pooled) {
  check_tensors(shape, tensors);
  check_pooled(pooled);
  const CheckedCall call{effective_mode(policy, step_fraction, shape.tokens),
                         workspace_layout(shape, policy)};
  check_sinks(shape, policy);
  check_workspace(call.layout, workspace, workspace_size);
  if (shape.rows() > INT32_MAX) {
    throw InvalidArgument(
        fmt::format("attention: {} block rows exceed the grid limit", shape.rows()));
  }
  if (traits(call.mode).selects_blocks()) check_pairs_fit(shape, policy);
  return call;
}

// Selection (where the mode selects) and the flash kernel, assuming check_attention passed.
void attend_unchecked(const AttentionShape& shape, const AttentionTensors& tensors,
                      const AttentionPolicy& policy, const CheckedCall& call, void* workspace,
                      PooledMeans pooled, cudaStream_t stream) {
  detail::FlashParams params = flash_params(shape, tensors);
  if (traits(call.mode).selects_blocks()) {
    select_unchecked(shape, tensors, policy, call.layout, workspace, pooled, stream);
    const BlockList blocks = workspace_block_list(call.layout, workspace);
    params.kv_idx = blocks.kv_idx;
    params.kv_count = blocks.kv_count;
    params.max_k = blocks.max_k;
    params.query_blocks_per_list = blocks.query_blocks_per_list;
    // Tau's lists differ in length (BlockList::rotate_visits); top-k's are one length.
    params.rotate_visits = traits(call.mode).rule == SelectionRule::Threshold;
    if (call.layout.has_coarse) {
      params.coarse = at<const float>(workspace, call.layout.coarse);
      params.coarse_gate = policy.coarse_gate;
    }
  }
  detail::run_flash_forward(params, stream);
}

void check_rope(const void* q, const void* k, const RopeTable& table) {
  check_pointer(q, 16, "q");
  check_pointer(k, 16, "k");
  if (q == k) throw InvalidArgument("rope: q and k are one tensor (it would rotate twice)");
  // 16 bytes: a thread reads its pairs' (cos, sin) as float4s.
  check_pointer(table.cos_sin, 16, "rope table");
  if (table.pairs != RopePairs::Interleaved && table.pairs != RopePairs::Halves) {
    throw InvalidArgument(fmt::format("rope: pairs = {} is neither Interleaved nor Halves",
                                      static_cast<int>(table.pairs)));
  }
}

detail::RopeParams rope_params(const AttentionShape& shape, void* q, void* k,
                               const RopeTable& table) {
  if (shape.batch > 32767) {  // the grid's z: two CTAs a block and batch, at most 65,535
    throw InvalidArgument(fmt::format("rope: batch {} exceeds 32,767", shape.batch));
  }
  detail::RopeParams p;
  p.q = q;
  p.k = k;
  p.table = table.cos_sin;
  p.halves = table.pairs == RopePairs::Halves;
  p.batch = shape.batch;
  p.heads = shape.heads;
  p.head_dim = shape.head_dim;
  p.blocks = shape.blocks();
  p.tokens = shape.tokens;
  return p;
}

void write_means_to(detail::RopeParams& rope, const WorkspaceLayout& layout, void* workspace) {
  rope.q_means = at<float>(workspace, layout.pooled_q);
  rope.k_means = at<unsigned char>(workspace, layout.pooled_k);
}

}  // namespace

BlockList workspace_block_list(const WorkspaceLayout& layout, const void* workspace) {
  if (layout.bytes == 0) return {};
  const auto* base = static_cast<const unsigned char*>(workspace);
  return BlockList{reinterpret_cast<const int*>(base + layout.kv_idx),
                   reinterpret_cast<const int*>(base + layout.kv_count), layout.max_k,
                   layout.query_blocks_per_list};
}

void launch_selection(const AttentionShape& shape, const AttentionTensors& tensors,
                      const AttentionPolicy& policy, void* workspace, std::size_t workspace_size,
                      cudaStream_t stream, PooledMeans pooled) {
  check_tensors(shape, tensors);
  check_pooled(pooled);
  const WorkspaceLayout layout = workspace_layout(shape, policy);
  if (!traits(policy.mode).selects_blocks()) {
    throw InvalidArgument(
        fmt::format("attention: selection needs a sparse mode, not {}", to_string(policy.mode)));
  }
  check_sinks(shape, policy);
  check_pairs_fit(shape, policy);
  check_workspace(layout, workspace, workspace_size);
  if (shape.rows() > INT32_MAX) {
    throw InvalidArgument(
        fmt::format("attention: {} block rows exceed the grid limit", shape.rows()));
  }
  select_unchecked(shape, tensors, policy, layout, workspace, pooled, stream);
}

void launch_flash_forward(const AttentionShape& shape, const AttentionTensors& tensors,
                          const BlockList& blocks, const float* coarse, float coarse_gate,
                          cudaStream_t stream) {
  check_tensors(shape, tensors);
  if (blocks.kv_count != nullptr) {
    check_pointer(blocks.kv_count, alignof(int), "kv_count");
    check_pointer(blocks.kv_idx, alignof(int), "kv_idx");
    if (blocks.max_k <= 0 || blocks.max_k > shape.blocks()) {
      throw InvalidArgument(
          fmt::format("attention: max_k = {} is outside [1, {}]", blocks.max_k, shape.blocks()));
    }
    if (blocks.query_blocks_per_list != 1 && blocks.query_blocks_per_list != 2) {
      throw InvalidArgument(fmt::format("attention: query_blocks_per_list = {} is not 1 or 2",
                                        blocks.query_blocks_per_list));
    }
  }
  if (coarse != nullptr) check_pointer(coarse, alignof(float), "coarse");
  detail::FlashParams params = flash_params(shape, tensors);
  params.kv_idx = blocks.kv_idx;
  params.kv_count = blocks.kv_count;
  params.max_k = blocks.max_k;
  params.query_blocks_per_list = blocks.query_blocks_per_list;
  params.rotate_visits = blocks.rotate_visits;
  params.coarse = coarse;
  params.coarse_gate = coarse_gate;
  detail::run_flash_forward(params, stream);
}

SparsityMode launch_attention(const AttentionShape& shape, const AttentionTensors& tensors,
                              const AttentionPolicy& policy, double step_fraction, void* workspace,
                              std::size_t workspace_size, cudaStream_t stream, PooledMeans pooled) {
  const CheckedCall call =
      check_attention(shape, tensors, policy, step_fraction, workspace, workspace_size, pooled);
  attend_unchecked(shape, tensors, policy, call, workspace, pooled, stream);
  return call.mode;
}

void launch_rope(const AttentionShape& shape, void* q, void* k, const RopeTable& table,
                 cudaStream_t stream) {
  validate(shape);
  check_rope(q, k, table);
  detail::run_rope(rope_params(shape, q, k, table), stream);
}

void launch_rope_with_means(const AttentionShape& shape, void* q, void* k, const RopeTable& table,
                            const AttentionPolicy& policy, void* workspace,
                            std::size_t workspace_size, cudaStream_t stream) {
  validate(shape);
  check_rope(q, k, table);
  const WorkspaceLayout layout = workspace_layout(shape, policy);
  if (!traits(policy.mode).selects_blocks() || layout.has_pooled_v) {
    throw InvalidArgument(fmt::format(
        "rope: pooled means are for a mode that selects blocks without pooled V, not {}",
        to_string(policy.mode)));
  }
  check_workspace(layout, workspace, workspace_size);
  detail::RopeParams rope = rope_params(shape, q, k, table);
  write_means_to(rope, layout, workspace);
  detail::run_rope(rope, stream);
}

SparsityMode launch_rope_attention(const AttentionShape& shape, void* q, void* k, const void* v,
                                   void* out, const RopeTable& table, const AttentionPolicy& policy,
                                   double step_fraction, void* workspace,
                                   std::size_t workspace_size, cudaStream_t stream) {
  const AttentionTensors tensors{.q = q, .k = k, .v = v, .out = out};
  check_rope(q, k, table);
  if (v == q || v == k) throw InvalidArgument("attention: v is q or k, which RoPE rewrites");
  // Every check before the first launch: the RoPE kernel rewrites q and k.
  const CheckedCall call = check_attention(shape, tensors, policy, step_fraction, workspace,
                                           workspace_size, PooledMeans::InWorkspace);
  detail::RopeParams rope = rope_params(shape, q, k, table);
  // The coarse branch also pools V, which RoPE does not touch: attention pools all three then.
  const bool means = traits(call.mode).selects_blocks() && !call.layout.has_pooled_v;
  if (means) write_means_to(rope, call.layout, workspace);
  detail::run_rope(rope, stream);
  attend_unchecked(shape, tensors, policy, call, workspace,
                   means ? PooledMeans::InWorkspace : PooledMeans::Compute, stream);
  return call.mode;
}

}  // namespace memplan::attention
