// What the runtime prints at the end: one summary row per mode, the output check across modes,
// the compiler's report, and (optionally) every step as CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run_modes.hpp"

namespace denoise {

struct OutputCheck {
  bool bitwise = true;  // every mode's latents equal the first mode's, bit for bit
  double max_abs_diff = 0;
  double max_abs = 0;            // the largest |latent|, for scale
  bool within_tolerance = true;  // max_abs_diff <= 1e-2 * max(1, max_abs) (bf16 rounding)
};

[[nodiscard]] OutputCheck compare_outputs(const std::vector<ModeResult>& results);
// FNV-1a over the latents' bits: separate runs compare their outputs bit for bit by it.
[[nodiscard]] std::uint64_t fingerprint(const std::vector<float>& latents);
void print_summary(const Config& config, const std::vector<ModeResult>& results,
                   const OutputCheck& check, bool gpu);
void write_csv(const std::string& path, const std::vector<ModeResult>& results);

}  // namespace denoise
