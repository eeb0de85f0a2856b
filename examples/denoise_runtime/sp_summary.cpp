// The sequence-parallel summary (see sp_summary.hpp).
#include "sp_summary.hpp"

#include <fmt/format.h>

#include <cstring>

namespace denoise {
namespace {

std::string mib(std::uint64_t bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes) / (1 << 20));
}

double median_step_ms(const ModeResult& r) {
  std::vector<double> step;
  for (const StepRow& row : r.rows) step.push_back(row.step_ms);
  return median(step);
}

// "12.345 (4.2%)": the median per step inside collectives and its share of the median step.
std::string collective_share(const ModeResult& r) {
  std::vector<double> inside;
  for (const StepRow& row : r.rows)
    if (row.collective_ms >= 0) inside.push_back(row.collective_ms);
  if (inside.empty()) return "-";
  const double step_ms = median_step_ms(r);
  return fmt::format("{:.3f} ({:.1f}%)", median(inside),
                     step_ms > 0 ? 100.0 * median(inside) / step_ms : 0.0);
}

void print_check(const char* what, const OutputCheck& c) {
  if (c.bitwise) {
    fmt::print("{}: bitwise equal\n", what);
  } else {
    fmt::print("{}: max |difference| {:.3g} (largest |latent| {:.3g}): {}\n", what, c.max_abs_diff,
               c.max_abs, c.within_tolerance ? "within bf16 tolerance" : "MISMATCH");
  }
}

}  // namespace

SpCheck check_sequence_parallel(const std::vector<RankResults>& ranks,
                                const std::optional<ModeResult>& reference) {
  SpCheck c;
  if (ranks.empty()) return c;
  const std::vector<ModeResult>& first = ranks.front().modes;
  for (const RankResults& rank : ranks) {
    if (rank.modes.size() != first.size()) {
      c.ranks_agree = false;
      continue;
    }
    for (std::size_t m = 0; m < first.size(); ++m) {
      const auto& a = rank.modes[m].latents;
      const auto& b = first[m].latents;
      if (a.size() != b.size() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0)
        c.ranks_agree = false;
    }
  }
  c.modes = compare_outputs(first);
  if (reference && !first.empty()) c.reference = compare_outputs({first.front(), *reference});
  return c;
}

void print_sp_summary(const Config& config, const std::vector<RankResults>& ranks,
                      const std::optional<ModeResult>& reference, const SpCheck& check, bool gpu) {
  fmt::print(
      "\n== sequence parallel: {} ranks ({}), {} blocks, {} tokens{}, {} heads x {} ({} per "
      "rank), {} + {} steps, window {}-{} ==\n",
      config.ranks, gpu ? "GPUs 0..N-1, NCCL, one thread each" : "host ranks, one thread each",
      config.blocks, config.tokens,
      config.second_tokens != 0 ? fmt::format(" then {}", config.second_tokens) : std::string(),
      config.heads, config.head_dim, config.heads / config.ranks, config.steps,
      config.second_tokens != 0 ? config.second_steps : 0, config.window_start, config.window_end);
  fmt::print(
      "| rank | mode | median step ms | collectives ms/step (share) | peak step memory MiB | "
      "planned MiB | lower bound MiB | breaks | graph launches | memory calls in replayed "
      "steps | final latents (FNV-1a) |\n");
  fmt::print("| --: | --- | --: | --: | --: | --: | --: | --: | --: | --: | --- |\n");
  for (const RankResults& rank : ranks) {
    for (const ModeResult& r : rank.modes) {
      const bool base = r.mode == Mode::Baseline;
      fmt::print("| {} | {} | {:.3f} | {} | {} | {} | {} | {} | {} | {} | {:016x} |\n", rank.rank,
                 r.name, median_step_ms(r), collective_share(r), mib(r.peak_bytes),
                 base ? "-" : mib(r.planned_bytes),
                 base ? fmt::format("{} (live high)", mib(r.lower_bound)) : mib(r.lower_bound),
                 base ? "-" : std::to_string(r.breaks),
                 r.mode == Mode::Graphs ? std::to_string(r.graph_launches) : "-",
                 r.replayed_step_mem_calls, fingerprint(r.latents));
    }
  }
  fmt::print(
      "(collectives: {}, per step, median over the mode's steps; graphs: not timed, a captured "
      "step holds no timing)\n",
      gpu ? "CUDA events on the rank's stream around each all_to_all and the all_gather"
          : "the host clock around each collective call, waiting for the other ranks included");
  if (!ranks.empty()) fmt::print("rank 0 device: {}\n", ranks.front().device);
  fmt::print("ranks: the {} ranks' latents are {}\n", ranks.size(),
             check.ranks_agree ? "bitwise equal in every mode" : "NOT equal (MISMATCH)");
  if (!ranks.empty() && ranks.front().modes.size() > 1) print_check("modes (rank 0)", check.modes);
  if (reference && check.reference) {
    const double one_ms = median_step_ms(*reference);
    fmt::print(
        "one-device reference ({}, no exchange): median step {:.3f} ms, peak step memory {} MiB "
        "(lower bound {} MiB), final latents {:016x}\n",
        reference->name, one_ms, mib(reference->peak_bytes), mib(reference->lower_bound),
        fingerprint(reference->latents));
    for (const RankResults& rank : ranks) {
      if (rank.modes.empty()) continue;
      const double ms = median_step_ms(rank.modes.front());
      fmt::print("speed-up of rank {} ({}) over one device: {:.3f}x\n", rank.rank,
                 rank.modes.front().name, ms > 0 ? one_ms / ms : 0.0);
    }
    print_check("reference vs rank 0's first mode", *check.reference);
  }
}

}  // namespace denoise
