// Workspace arithmetic: exact byte counts from the shape and policy, so a planner can place the
// workspace before any kernel runs. Host only.
#include "memplan/attention/workspace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "memplan/error.hpp"
#include "memplan/types.hpp"

namespace memplan::attention {

namespace {

// ceil(percent% of n), at least 1; computed in double so 10% of 1000 is exactly 100.
int percent_of(double percent, int n) {
  const double raw = std::ceil(percent / 100.0 * n - 1e-9);
  return std::clamp(static_cast<int>(raw), 1, n);
}

}  // namespace

int rule_blocks(const AttentionPolicy& policy, int blocks) {
  if (blocks < 1) throw InvalidArgument(fmt::format("attention: a row of {} key blocks", blocks));
  switch (traits(policy.mode).rule) {
    case SelectionRule::None:
      return 0;
    case SelectionRule::Threshold:
      return percent_of(policy.max_keep_percent, blocks);
    case SelectionRule::TopK:
      return percent_of(policy.keep_percent, blocks);
  }
  return 0;
}

int selected_blocks(const AttentionShape& shape, const AttentionPolicy& policy) {
  validate(shape);
  validate(policy);
  return rule_blocks(policy, shape.blocks());
}

int max_kept_blocks(const AttentionShape& shape, const AttentionPolicy& policy) {
  const int selected = selected_blocks(shape, policy);
  if (selected == 0) return 0;
  const int n = shape.blocks();
  // Forced blocks counted as if disjoint: an upper bound, so the row can never overflow. A list
  // shared by a pair of query blocks forces the union of their bands, one block wider.
  const int band = 2 * kDiagonalRadius + policy.query_blocks_per_list;
  const int forced = band + policy.sink_keys.size();
  return std::min(n, selected + forced);
}

WorkspaceLayout workspace_layout(const AttentionShape& shape, const AttentionPolicy& policy) {
  WorkspaceLayout layout;
  layout.max_k = max_kept_blocks(shape, policy);
  layout.query_blocks_per_list = policy.query_blocks_per_list;
  const ModeTraits& mode = traits(policy.mode);
  if (!mode.selects_blocks()) return layout;

  const auto rows = static_cast<std::size_t>(shape.rows());
  const std::size_t pooled = rows * static_cast<std::size_t>(shape.head_dim) * sizeof(float);
  layout.has_pooled_v = layout.has_coarse = mode.coarse_branch;

  std::size_t offset = 0;
  auto take = [&offset](std::size_t bytes) {
    const std::size_t at = offset;
    offset = align_up(offset + bytes, kWorkspaceAlignment);
    return at;
  };
  layout.pooled_q = take(pooled);
  layout.pooled_k = take(pooled);
  if (layout.has_pooled_v) layout.pooled_v = take(pooled);
  layout.kv_idx = take(rows * static_cast<std::size_t>(layout.max_k) * sizeof(int));
  layout.kv_count = take(rows * sizeof(int));
  if (layout.has_coarse) layout.coarse = take(pooled);
  layout.bytes = offset;
  return layout;
}

}  // namespace memplan::attention
