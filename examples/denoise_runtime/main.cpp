// denoise_runtime: a video-DiT-shaped model denoised for many steps, its activations and
// workspaces served by memplan (with and without CUDA Graphs) and by the baseline allocator, on
// the GPU when there is one and on the CPU (host backend) otherwise. It prints every step, a
// summary, checks that all modes produced the same latents, and prints the compiler's report.
// With --ranks N > 1 it runs sequence-parallel instead (sp_main.hpp).
// Exit status: 0 when the outputs match, 1 when they do not, 2 on an error.
#include <fmt/format.h>

#include <exception>

#include "config.hpp"
#include "memplan/error.hpp"
#include "memplan/types.hpp"
#include "model.hpp"
#include "platform.hpp"
#include "run_modes.hpp"
#include "sp_main.hpp"
#include "summary.hpp"
#include "weight_sources.hpp"

int main(int argc, char** argv) {
  using namespace denoise;
  try {
    Config config;
    if (const auto exit_code = parse_args(argc, argv, config)) return *exit_code;
    bool gpu = config.device == Device::Gpu || (config.device == Device::Auto && gpu_available());
    if (config.ranks > 1) return run_sequence_parallel_main(config, gpu);
    auto platform = gpu ? make_gpu_platform() : make_cpu_platform();
    apply_preset(config, gpu);
    fmt::print(
        "denoise_runtime on {} ({}): {} blocks, hidden {}, {} tokens x {} steps{}, window "
        "{}-{}, rope cache {}, pooled means by {}, weights {}{}\n",
        platform->device_name(), platform->ops().name(), config.blocks, config.hidden(),
        config.tokens, config.steps,
        config.second_tokens != 0 ? fmt::format(", second pass {} tokens x {} steps",
                                                config.second_tokens, config.second_steps)
                                  : std::string(),
        config.window_start, config.window_end, to_string(config.rope),
        platform->ops().rope_can_pool() ? to_string(config.pooled_means)
                                        : to_string(PooledMeansBy::Attention),
        to_string(config.weights),
        config.vram_budget != 0
            ? fmt::format(" under a budget of {}",
                          memplan::human_bytes(static_cast<memplan::Bytes>(config.vram_budget)))
            : std::string());
    Model model(config, platform->ops());
    platform->synchronize();
    double bandwidth = 0;  // bytes per second, measured when weights move
    if (config.weights != Weights::Resident) {
      bandwidth = measure_h2d_bandwidth(model, platform->ops());
      const double block = static_cast<double>(model.layout().bytes);
      fmt::print(
          "weights: {} blocks of {} in host memory{}; host-to-device bandwidth {:.2f} GB/s "
          "(measured: one block copied 5 times), {:.3f} ms per block\n",
          model.blocks(), memplan::human_bytes(static_cast<memplan::Bytes>(model.layout().bytes)),
          gpu ? " (pinned)" : "", bandwidth / 1e9, block / bandwidth * 1e3);
    }
    std::vector<ModeResult> results;
    for (Mode mode : config.modes) results.push_back(run_mode(mode, config, *platform, model));
    const OutputCheck check = compare_outputs(results);
    print_summary(config, results, check, gpu);
    if (bandwidth > 0 && !results.empty()) {
      const double copy_ms =
          static_cast<double>(results.front().streamed_bytes_per_step) / bandwidth * 1e3;
      fmt::print(
          "copy time per step at the measured bandwidth: {:.3f} ms (streamed bytes / bandwidth; "
          "the bound is max(compute-only step, this))\n",
          copy_ms);
    }
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
