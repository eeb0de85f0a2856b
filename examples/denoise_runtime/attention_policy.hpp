// The attention policy both platforms run: memplan's tau rule (1.5 standard deviations, at most
// 30% of the key blocks) for a sparse step, every block for a dense one; a key-block list per
// query block or per pair of them (--query-blocks-per-list). The GPU launches it; the CPU twin
// selects with memplan's host reference selection under the same policy, so both platforms keep
// the same blocks for the same scores.
#pragma once

#include "memplan/attention/policy.hpp"
#include "ops.hpp"

namespace denoise {

inline memplan::attention::AttentionPolicy attention_policy(Attn attn, int query_blocks_per_list) {
  memplan::attention::AttentionPolicy p;
  p.mode = attn == Attn::Sparse ? memplan::attention::SparsityMode::Tau
                                : memplan::attention::SparsityMode::Dense;
  p.tau = 1.5f;
  p.max_keep_percent = 30.0f;  // bounds the block lists, so the workspace
  p.window_start = 0.0;        // the runtime decides the window; the kernel runs what it is told
  p.window_end = 1.0;
  p.query_blocks_per_list = query_blocks_per_list;
  return p;
}

}  // namespace denoise
