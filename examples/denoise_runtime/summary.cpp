// The summary table and output check (see summary.hpp).
#include "summary.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "memplan/error.hpp"
#include "memplan/types.hpp"

namespace denoise {
namespace {

std::string mib(std::uint64_t bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes) / (1 << 20));
}

// Step time, device memory and the weights' traffic per mode: what weight streaming is judged by.
void print_weights(const Config& config, const std::vector<ModeResult>& results) {
  fmt::print("\n== weights {}, budget {} ==\n", to_string(config.weights),
             config.vram_budget == 0
                 ? std::string("none")
                 : memplan::human_bytes(static_cast<memplan::Bytes>(config.vram_budget)));
  fmt::print(
      "| mode | median step ms | peak device memory | streamed per step | resident blocks | "
      "prefetch depth | final latents (FNV-1a) |\n");
  fmt::print("| --- | --: | --: | --: | --: | --: | --- |\n");
  for (const ModeResult& r : results) {
    std::vector<double> step;
    for (const StepRow& row : r.rows) step.push_back(row.step_ms);
    const auto& p = r.streaming;
    fmt::print("| {} | {:.3f} | {} ({}) | {} | {} | {} | {:016x} |\n", r.name, median(step),
               memplan::human_bytes(static_cast<memplan::Bytes>(r.device_peak_bytes)),
               r.device_peak_measured ? "measured" : "counted",
               memplan::human_bytes(static_cast<memplan::Bytes>(r.streamed_bytes_per_step)),
               p ? fmt::format("{} of {}", p->resident_blocks, p->blocks)
                 : (config.weights == Weights::Resident ? "all" : "0"),
               p ? std::to_string(p->depth) : "-", fingerprint(r.latents));
  }
  for (const ModeResult& r : results) {
    if (!r.streaming || config.vram_budget == 0) continue;
    fmt::print("(streaming plan: predicted peak {} for a budget of {}: {} resident, {} of slots)\n",
               memplan::human_bytes(static_cast<memplan::Bytes>(r.streaming->predicted_peak_bytes)),
               memplan::human_bytes(static_cast<memplan::Bytes>(config.vram_budget)),
               memplan::human_bytes(static_cast<memplan::Bytes>(r.streaming->resident_bytes)),
               memplan::human_bytes(static_cast<memplan::Bytes>(r.streaming->slot_bytes)));
    break;
  }
  fmt::print(
      "(peak device memory: measured = the high-water mark of cudaMemGetInfo's used bytes after "
      "each step, beyond those in use before the model; counted = the model's own bytes + arena "
      "and pool mapped, or the allocator's reserved high)\n");
}

}  // namespace

std::uint64_t fingerprint(const std::vector<float>& latents) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(latents.data());
  for (std::size_t i = 0; i < latents.size() * sizeof(float); ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

OutputCheck compare_outputs(const std::vector<ModeResult>& results) {
  OutputCheck c;
  if (results.empty()) return c;
  const auto& ref = results.front().latents;
  for (float v : ref) c.max_abs = std::max(c.max_abs, static_cast<double>(std::fabs(v)));
  for (std::size_t m = 1; m < results.size(); ++m) {
    const auto& other = results[m].latents;
    if (other.size() != ref.size()) {
      c.bitwise = c.within_tolerance = false;
      c.max_abs_diff = INFINITY;
      continue;
    }
    if (std::memcmp(other.data(), ref.data(), ref.size() * sizeof(float)) != 0) c.bitwise = false;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double d = std::fabs(static_cast<double>(other[i]) - ref[i]);
      if (!(d <= c.max_abs_diff))
        c.max_abs_diff = std::isnan(d) ? INFINITY : std::max(c.max_abs_diff, d);
    }
  }
  c.within_tolerance = c.bitwise || c.max_abs_diff <= 1e-2 * std::max(1.0, c.max_abs);
  return c;
}

void print_summary(const Config& config, const std::vector<ModeResult>& results,
                   const OutputCheck& check, bool gpu) {
  fmt::print(
      "\n== summary: {} blocks, {} tokens{}, {} heads x {}, {} + {} steps, window {}-{}, "
      "rope cache {} ==\n",
      config.blocks, config.tokens,
      config.second_tokens != 0 ? fmt::format(" then {}", config.second_tokens) : std::string(),
      config.heads, config.head_dim, config.steps,
      config.second_tokens != 0 ? config.second_steps : 0, config.window_start, config.window_end,
      to_string(config.rope));
  fmt::print(
      "| mode | median host ms/step | median step ms | peak step memory MiB | planned MiB | "
      "lower bound MiB | breaks | rogues | branches | captures | graph launches | "
      "invalidations | memory calls in replayed steps |\n");
  fmt::print("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n");
  for (const ModeResult& r : results) {
    std::vector<double> host, step;
    for (const StepRow& row : r.rows) {
      host.push_back(row.host_ms);
      step.push_back(row.step_ms);
    }
    const bool base = r.mode == Mode::Baseline;
    fmt::print(
        "| {} | {:.3f} | {:.3f} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.name,
        median(host), median(step), mib(r.peak_bytes), base ? "-" : mib(r.planned_bytes),
        base ? fmt::format("{} (live high)", mib(r.lower_bound)) : mib(r.lower_bound),
        base ? "-" : std::to_string(r.breaks), base ? "-" : std::to_string(r.rogues),
        base ? "-" : std::to_string(r.branches),
        r.mode == Mode::Graphs ? std::to_string(r.captures) : "-",
        r.mode == Mode::Graphs ? std::to_string(r.graph_launches) : "-",
        r.mode == Mode::Graphs ? std::to_string(r.invalidations) : "-", r.replayed_step_mem_calls);
  }
  fmt::print(
      "(peak step memory: memplan = physical memory mapped for the planned arena; {} = "
      "{}; memory calls: {} in replayed steps)\n",
      gpu ? "cudaMallocAsync" : "malloc",
      gpu ? "the pool's reserved high-water mark, lower bound column = its used high-water mark"
          : "the live-bytes high-water mark",
      gpu ? "CUDA VMM driver calls (memplan) or cudaMallocAsync/cudaFreeAsync calls (async)"
          : "host backend calls (memplan) or malloc/free calls");
  print_weights(config, results);
  if (results.size() > 1) {
    if (check.bitwise) {
      fmt::print("outputs: the {} modes' final latents are bitwise equal\n", results.size());
    } else {
      fmt::print("outputs: max |difference| {:.3g} (largest |latent| {:.3g}): {}\n",
                 check.max_abs_diff, check.max_abs,
                 check.within_tolerance ? "within bf16 tolerance" : "MISMATCH");
    }
  }
}

void write_csv(const std::string& path, const std::vector<ModeResult>& results) {
  std::ofstream out(path);
  if (!out) throw memplan::Error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  out << "mode,pass,step,attention,path,replayed,host_ms,step_ms,breaks,rogues,mapped_bytes,pool_"
         "bytes,memory_calls\n";
  for (const ModeResult& r : results)
    for (const StepRow& row : r.rows)
      out << fmt::format("{},{},{},{},{},{},{:.4f},{:.4f},{},{},{},{},{}\n", r.name, row.pass,
                         row.step, row.attn == Attn::Sparse ? "sparse" : "dense", row.path,
                         row.replayed ? 1 : 0, row.host_ms, row.step_ms, row.breaks, row.rogues,
                         row.mapped, row.pool, row.mem_calls);
}

}  // namespace denoise
