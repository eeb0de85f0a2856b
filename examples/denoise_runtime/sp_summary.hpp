// What a sequence-parallel run prints at the end: per rank and mode, the step time, the share of
// it inside the collectives, peak step memory against its plan's lower bound, breaks and memory
// calls in replayed steps, and the latents' fingerprint; then whether the ranks and the modes
// agree, and the difference from the one-device run when it was made (--reference).
#pragma once

#include <optional>
#include <vector>

#include "config.hpp"
#include "run_modes.hpp"
#include "sp_run.hpp"
#include "summary.hpp"

namespace denoise {

struct SpCheck {
  bool ranks_agree = true;  // every rank's latents equal rank 0's, bit for bit, in every mode
  OutputCheck modes;        // rank 0's modes against each other
  std::optional<OutputCheck> reference;  // the one-device run against rank 0's first mode
  [[nodiscard]] bool ok() const {
    return ranks_agree && modes.within_tolerance && (!reference || reference->within_tolerance);
  }
};

[[nodiscard]] SpCheck check_sequence_parallel(const std::vector<RankResults>& ranks,
                                              const std::optional<ModeResult>& reference);
void print_sp_summary(const Config& config, const std::vector<RankResults>& ranks,
                      const std::optional<ModeResult>& reference, const SpCheck& check, bool gpu);

}  // namespace denoise
