// Block selection on the host, in double precision: pooled block means, block scores, and each
// key-block list under the rule of the policy's mode (modes.hpp), chosen as the device selection
// (select.cu) chooses them: one list per query block, or per pair of query blocks
// (AttentionPolicy::query_blocks_per_list). One reference for everyone: the tests hold the device
// lists to it, and the example runtime's CPU twin selects with it. Loops, no GPU, no speed.
#pragma once

#include <span>
#include <vector>

#include "memplan/attention/policy.hpp"
#include "memplan/attention/shape.hpp"

namespace memplan::attention {

// Mean of each 64-token block (the last may be partial) of `x`, a [batch, tokens, heads,
// head_dim] tensor: [batch, heads, blocks, head_dim], one row per block-list row.
[[nodiscard]] std::vector<double> pool_blocks(const AttentionShape& shape,
                                              std::span<const float> x);

// Block scores [rows, blocks]: each row's pooled query block against every pooled key block of
// its (batch, head), scaled by 1/sqrt(head_dim).
[[nodiscard]] std::vector<double> block_scores(const AttentionShape& shape,
                                               std::span<const double> pooled_q,
                                               std::span<const double> pooled_k);

// The query blocks that share query block `q_block`'s key-block list in a row of `blocks`: the
// block alone for query_blocks_per_list 1; for 2 its pair (2i, 2i + 1), the last block of an odd
// count alone. Throws InvalidArgument for an invalid policy or a block outside [0, blocks).
[[nodiscard]] BlockRange list_queries(const AttentionPolicy& policy, int q_block, int blocks);

// Whether query block `q_block` keeps key block `key` whatever the scores: the diagonal band
// (kDiagonalRadius each side) and the sink keys.
[[nodiscard]] bool forced_block(const AttentionPolicy& policy, int q_block, int key);
// The same for a list shared by `queries`: the union of their bands, and the sink keys.
[[nodiscard]] bool forced_block(const AttentionPolicy& policy, BlockRange queries, int key);

// The scores a list shared by `queries` is chosen from: the mean of their rows of `head_scores`
// (one (batch, head)'s [blocks, blocks] block scores), which is the score of their mean pooled
// query. A single query block's list gets its own row.
[[nodiscard]] std::vector<double> list_scores(std::span<const double> head_scores,
                                              BlockRange queries);

// Mean and population standard deviation of a row of scores (the threshold rule's statistics).
struct RowStats {
  double mean = 0.0;
  double std = 0.0;
};
[[nodiscard]] RowStats row_stats(std::span<const double> scores);

// The key blocks query block `q_block` keeps, ascending, given its scores over every key block:
// every block for a sink query row or a mode without selection; else the forced blocks plus the
// rule's choice among the others (rule_blocks of them at most; ties go to the lower index).
[[nodiscard]] std::vector<int> select_row(const AttentionPolicy& policy, int q_block,
                                          std::span<const double> scores);
// The same for the list shared by `queries`, given its scores (list_scores): every block when any
// of them is a sink query; else their forced blocks (forced_block) plus the rule's choice, the
// threshold's statistics taken over `scores`.
[[nodiscard]] std::vector<int> select_list(const AttentionPolicy& policy, BlockRange queries,
                                           std::span<const double> scores);

// The same rule with the forced blocks given (`forced`: ascending, within the row): `forced` plus
// the rule's choice among the other blocks, ascending; every block for a mode without selection.
// For a list shared by several query blocks, whose forced set is the union of theirs (select_row
// is this with one query block's). Throws InvalidArgument when `forced` is not ascending or
// leaves the row.
[[nodiscard]] std::vector<int> select_with_forced(const AttentionPolicy& policy,
                                                  std::span<const double> scores,
                                                  std::span<const int> forced);

// Every row's list from `scores` ([rows, blocks]) into a block list as the workspace holds one:
// idx [rows, max_k], count [rows], a row per query block. With query_blocks_per_list 2 the rows of
// a pair hold the same list, select_list of the pair on its list_scores. A row of every block (a
// sink query row) counts them all and lists the first max_k. Throws InvalidArgument for an
// invalid policy, when any other row keeps more than max_k blocks, or a span is too small.
void select_blocks(const AttentionShape& shape, const AttentionPolicy& policy,
                   std::span<const double> scores, std::span<int> idx, std::span<int> count,
                   int max_k);

}  // namespace memplan::attention
