// Workspace of block-sparse attention: the caller owns it (so a memory planner can place it), and
// its size is exact arithmetic on the shape and policy, known before anything runs.
// Regions, each 256-byte aligned: pooled Q, K (and V for coarse) as fp32 [b,h,block,d]; the block
// list kv_idx [b,h,q_block,max_k] int32 and kv_count [b,h,q_block] int32; the coarse output fp32.
#pragma once

#include <cstddef>

#include "memplan/attention/policy.hpp"
#include "memplan/attention/shape.hpp"

namespace memplan::attention {

inline constexpr std::size_t kWorkspaceAlignment = 256;

struct WorkspaceLayout {
  int max_k = 0;                                         // capacity of one kv_idx row
  int query_blocks_per_list = 1;                         // the policy's (policy.hpp)
  std::size_t pooled_q = 0, pooled_k = 0, pooled_v = 0;  // byte offsets
  std::size_t kv_idx = 0, kv_count = 0, coarse = 0;
  std::size_t bytes = 0;  // total; 0 for dense
  bool has_pooled_v = false;
  bool has_coarse = false;
};

// Blocks chosen by score per row before the forced ones are added: ceil(keep_percent% * n) for
// topk/coarse, the cap ceil(max_keep_percent% * n) for tau; 0 for dense.
[[nodiscard]] int selected_blocks(const AttentionShape& shape, const AttentionPolicy& policy);

// The same count for a row of `blocks` key blocks, without checking a shape (the host selection
// serves any head_dim): ceil(percent% * blocks), at least 1 and at most blocks; 0 for dense.
[[nodiscard]] int rule_blocks(const AttentionPolicy& policy, int blocks);

// Capacity of a kv_idx row for the policy's sparse mode: the selected blocks plus the forced ones
// (diagonal band and sink keys), at most the block count. 0 for dense.
[[nodiscard]] int max_kept_blocks(const AttentionShape& shape, const AttentionPolicy& policy);

// The layout for the policy's own mode (dense needs none). Validates shape and policy.
[[nodiscard]] WorkspaceLayout workspace_layout(const AttentionShape& shape,
                                               const AttentionPolicy& policy);

[[nodiscard]] inline std::size_t workspace_bytes(const AttentionShape& shape,
                                                 const AttentionPolicy& policy) {
  return workspace_layout(shape, policy).bytes;
}

}  // namespace memplan::attention
