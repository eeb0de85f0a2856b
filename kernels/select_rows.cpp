// The selection CTA's row count (select_rows.hpp). A CTA lasts as long as its busiest warp, plus
// a fixed part (the Q fragments, streaming pooled K) of about 0.4 of a list: so 17-32 rows cost
// a CTA ~2.4 lists' time and 16 rows ~1.4, and whichever needs fewer (waves of CTAs) x (that)
// wins. Fitted to H200 timings (2026-12-02, 32k-169k tokens): 16 rows were 15-20 % faster at
// 169k tokens and for pairs at 32k, 32 rows 9-12 % faster for a list per block at 32k and 75.6k.
#include "select_rows.hpp"

namespace memplan::attention::detail {

// Two CTAs an SM beat one of twice the registers wherever they fit: at 32,768 and 75,600 tokens
// the selection took 9-13 % less time (H200, 2026-12-02). An SM has 228 KB of shared memory, 1 KB
// of it reserved per CTA.
SelectBuild select_build(int blocks, bool coarse, std::size_t fixed_bytes, std::size_t row_bytes) {
  if (coarse) return SelectBuild::Long;  // its V tiles and per-row outputs need the registers
  if (blocks <= kShortRowBlocks) return SelectBuild::Short;
  const std::size_t cta = fixed_bytes + row_bytes * kTwoPerSmRows + 1024;
  return 2 * cta <= 228 * 1024 ? SelectBuild::Mid : SelectBuild::Long;
}

int balanced_rows(int fit, int score_rows, int heads, int sms, bool row_pairs) {
  if (row_pairs || fit <= kSelectWarps) return fit;
  auto cost = [&](int rows, double per_cta) {
    const long long ctas = static_cast<long long>((score_rows + rows - 1) / rows) * heads;
    return static_cast<double>((ctas + sms - 1) / sms) * per_cta;
  };
  return cost(kSelectWarps, 1.4) < cost(fit, 2.4) ? kSelectWarps : fit;
}

}  // namespace memplan::attention::detail
