// denoise_runtime: a video-DiT-shaped model denoised for many steps, its activations and
// workspaces served by memplan (with and without CUDA Graphs) and by the baseline allocator, on
// the GPU when there is one and on the CPU (host backend) otherwise. It prints every step, a
// summary, checks that all modes produced the same latents, and prints the compiler's report.
// Exit status: 0 when the outputs match, 1 when they do not, 2 on an error.
#include <fmt/format.h>

#include <exception>

#include "config.hpp"
#include "memplan/error.hpp"
#include "memplan/types.hpp"
#include "model.hpp"
#include "platform.hpp"
#include "run_modes.hpp"
#include "summary.hpp"

int main(int argc, char** argv) {
  using namespace denoise;
  try {
    Config config;
    if (const auto exit_code = parse_args(argc, argv, config)) return *exit_code;
    bool gpu = config.device == Device::Gpu || (config.device == Device::Auto && gpu_available());
    auto platform = gpu ? make_gpu_platform() : make_cpu_platform();
    apply_preset(config, gpu);
    fmt::print(
        "denoise_runtime on {} ({}): {} blocks, hidden {}, {} tokens x {} steps{}, window "
        "{}-{}, rope cache {}, weights {}{}\n",
        platform->device_name(), platform->ops().name(), config.blocks, config.hidden(),
        config.tokens, config.steps,
        config.second_tokens != 0 ? fmt::format(", second pass {} tokens x {} steps",
                                                config.second_tokens, config.second_steps)
                                  : std::string(),
        config.window_start, config.window_end, to_string(config.rope), to_string(config.weights),
        config.vram_budget != 0
            ? fmt::format(" under a budget of {}",
                          memplan::human_bytes(static_cast<memplan::Bytes>(config.vram_budget)))
            : std::string());
    Model model(config, platform->ops());
    platform->synchronize();
    std::vector<ModeResult> results;
    for (Mode mode : config.modes) results.push_back(run_mode(mode, config, *platform, model));
    const OutputCheck check = compare_outputs(results);
    print_summary(config, results, check, gpu);
    for (const ModeResult& r : results) {
      if (!r.report.empty()) {
        fmt::print("\n== compiler report ({}) ==\n{}\n", r.name, r.report);
        break;
      }
    }
    if (!config.csv.empty()) write_csv(config.csv, results);
    return check.within_tolerance ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "denoise_runtime: {}\n", e.what());
    return 2;
  }
}
