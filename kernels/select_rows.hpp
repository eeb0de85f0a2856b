// Which build of the select kernel runs and how many score rows its CTA takes (select.cu). Host
// arithmetic only, so the CPU tests hold the choices to the H200 measurements they were fitted
// to (tests/attention/select_rows_test).
#pragma once

#include <cstddef>

namespace memplan::attention::detail {

// Warps of a selection CTA; each takes one list, or two past kSelectWarps rows.
inline constexpr int kSelectWarps = 16;

// The select kernel's builds, by register budget (select.cu):
//   Short: rows up to kShortRowBlocks blocks held in registers, 16 score rows a CTA, 64
//          registers a thread: two CTAs an SM;
//   Mid:   the same with rows read from shared memory, while two CTAs of 16 rows fit an SM;
//   Long:  everything else (the coarse branch, longer rows): 120 registers, one CTA an SM, rows
//          as balanced_rows picks.
enum class SelectBuild { Short, Mid, Long };
inline constexpr int kShortRowBlocks = 512;  // 32,768 tokens
inline constexpr int kTwoPerSmRows = 16;
// `fixed_bytes`: a CTA's shared memory beside its score rows; `row_bytes`: one score row's.
SelectBuild select_build(int blocks, bool coarse, std::size_t fixed_bytes, std::size_t row_bytes);

// Of the `fit` rows whose scores fit a CTA's shared memory, how many it takes, for `score_rows`
// rows per head over `heads` (batch x heads) on `sms` multiprocessors; a pair's two rows side by
// side (`row_pairs`, the coarse branch) take all that fit.
int balanced_rows(int fit, int score_rows, int heads, int sms, bool row_pairs);

}  // namespace memplan::attention::detail
