// How many score rows a selection CTA takes (select.cu). Host arithmetic only, so the CPU tests
// hold the choice to the H200 measurements it was fitted to (tests/attention/select_rows_test).
#pragma once

namespace memplan::attention::detail {

// Warps of a selection CTA; each takes one list, or two past kSelectWarps rows.
inline constexpr int kSelectWarps = 16;

// Of the `fit` rows whose scores fit a CTA's shared memory, how many it takes, for `score_rows`
// rows per head over `heads` (batch x heads) on `sms` multiprocessors; a pair's two rows side by
// side (`row_pairs`, the coarse branch) take all that fit.
int balanced_rows(int fit, int score_rows, int heads, int sms, bool row_pairs);

}  // namespace memplan::attention::detail
