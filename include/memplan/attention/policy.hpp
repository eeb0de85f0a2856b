// Block-sparse attention policy: which key blocks each query block visits, and when sparsity is on.
// The policy is plain host data. `effective_mode` turns it and the step's position in the denoise
// schedule into the mode actually launched, so a caller can capture one CUDA Graph per mode.
#pragma once

#include <cstdint>

#include "memplan/attention/modes.hpp"

namespace memplan::attention {

// Tokens per block, for queries and keys alike: the unit of selection and of the kernel's tiles.
inline constexpr int kBlockTokens = 64;
// The diagonal key block and this many neighbours on each side are always kept.
inline constexpr int kDiagonalRadius = 1;

// A half-open range [begin, end) of 64-token blocks; empty when begin == end.
struct BlockRange {
  int begin = 0;
  int end = 0;
  [[nodiscard]] constexpr bool empty() const { return end <= begin; }
  [[nodiscard]] constexpr bool contains(int block) const { return block >= begin && block < end; }
  [[nodiscard]] constexpr int size() const { return empty() ? 0 : end - begin; }
};

struct AttentionPolicy {
  SparsityMode mode = SparsityMode::Tau;
  float tau = 1.5f;                 // tau mode: threshold in standard deviations above the row mean
  float keep_percent = 10.0f;       // topk/coarse: percent of key blocks kept per query block
  float max_keep_percent = 100.0f;  // tau: cap on the selected percent (bounds the workspace)
  BlockRange sink_keys;             // key blocks every query block attends to (packed text tokens)
  BlockRange sink_queries;          // query blocks that attend densely to every key block
  double window_start = 0.2;        // sparse only for step fractions in [window_start, window_end]
  double window_end = 1.0;
  std::int64_t min_tokens = 0;  // below this many tokens, run dense
  float coarse_gate = 1.0f;     // coarse mode: output = fine + coarse_gate * coarse
  // Query blocks that share one key-block list: 1, a list per 64-token query block; 2, one list
  // per pair of query blocks (2i, 2i + 1), chosen from the pair's averaged scores with both
  // blocks' diagonal bands forced (the last block of an odd count alone). With 2 the Hopper
  // kernel loads each kept K/V tile once for both blocks of a pair, as dense does: half the
  // bytes a kept block costs, for a coarser selection.
  int query_blocks_per_list = 1;
};

// Throws InvalidArgument naming the field and its value when the policy makes no sense.
void validate(const AttentionPolicy& policy);

// The mode to launch for a step at `step_fraction` (0 = first step, 1 = last) over `tokens`
// tokens: dense outside the step window or below min_tokens, otherwise the policy's mode.
[[nodiscard]] SparsityMode effective_mode(const AttentionPolicy& policy, double step_fraction,
                                          std::int64_t tokens);

}  // namespace memplan::attention
