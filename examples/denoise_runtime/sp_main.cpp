// The sequence-parallel path of main (see sp_main.hpp).
#include "sp_main.hpp"

#include <fmt/format.h>

#include <optional>

#include "sequence_parallel.hpp"
#include "sp_run.hpp"
#include "sp_summary.hpp"

namespace denoise {

int run_sequence_parallel_main(Config& config, bool gpu) {
  apply_preset(config, gpu);
  SequenceParallel::check_shape(config, config.ranks);
  fmt::print(
      "denoise_runtime sequence-parallel over {} ranks ({}): {} blocks, hidden {}, {} tokens x {} "
      "steps{}, {} heads ({} per rank), window {}-{}\n",
      config.ranks, gpu ? "GPUs, NCCL" : "CPU, host ranks", config.blocks, config.hidden(),
      config.tokens, config.steps,
      config.second_tokens != 0 ? fmt::format(", second pass {} tokens x {} steps",
                                              config.second_tokens, config.second_steps)
                                : std::string(),
      config.heads, config.heads / config.ranks, config.window_start, config.window_end);
  const std::vector<RankResults> ranks = run_sequence_parallel(config, gpu);
  std::optional<ModeResult> reference;
  if (config.reference && !config.modes.empty()) {
    fmt::print("\none-device reference: {} on {}\n", to_string(config.modes.front(), gpu),
               gpu ? "GPU 0" : "the CPU");
    reference = run_one_device(config, gpu, config.modes.front());
  }
  const SpCheck check = check_sequence_parallel(ranks, reference);
  print_sp_summary(config, ranks, reference, check, gpu);
  return check.ok() ? 0 : 1;
}

}  // namespace denoise
