// Runs the model's passes in one allocation mode and collects what the runtime prints: a row per
// step (time, path, breaks, rogues, memory, allocator calls) and a summary per mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "memplan/stream/streaming_plan.hpp"
#include "model.hpp"
#include "platform.hpp"
#include "sequence_parallel.hpp"

namespace denoise {

struct StepRow {
  int pass = 0;
  int step = 0;
  Attn attn = Attn::Dense;
  std::string_view path = "-";  // eager / capture / graph (memplan modes), "-" for the baseline
  bool replayed = false;        // memplan: the compiler replayed the whole step
  double host_ms = 0;           // time to issue the step (the host's part)
  double step_ms = 0;           // until the stream finished it
  std::uint64_t breaks = 0;     // cumulative
  std::uint64_t rogues = 0;     // cumulative
  std::uint64_t mapped = 0;     // planned arena (memplan) or pool reserved (baseline)
  std::uint64_t pool = 0;       // persistent pool mapped (memplan)
  std::uint64_t mem_calls = 0;  // memory calls made during this step
  double collective_ms = -1;    // sequence parallel, eager steps: inside collectives (span_timer)
};

struct ModeResult {
  Mode mode = Mode::Eager;
  std::string name;
  std::vector<StepRow> rows;
  std::vector<float> latents;       // the last pass's result
  std::uint64_t peak_bytes = 0;     // memplan: arena mapped high; baseline: pool reserved high
  std::uint64_t planned_bytes = 0;  // memplan: largest plan
  std::uint64_t lower_bound = 0;    // memplan: that plan's lower bound; baseline: live high
  std::uint64_t breaks = 0, rogues = 0, branches = 0;
  std::uint64_t steps_replayed = 0;
  std::uint64_t captures = 0, graph_launches = 0, invalidations = 0;
  std::uint64_t replayed_step_mem_calls = 0;  // memory calls summed over replayed steps
  std::string report;                         // the compiler's report (memplan modes)
  // Device memory: the high-water mark of what the run used beyond the platform's start,
  // measured after every step (cudaMemGetInfo) on the GPU; on the CPU counted: the model's
  // fixed bytes + arena and pool mapped (memplan) or the allocator's reserved high (baseline).
  std::uint64_t device_peak_bytes = 0;
  bool device_peak_measured = false;
  std::uint64_t streamed_bytes_per_step = 0;  // weights copied host to device in each step
  std::optional<memplan::stream::StreamingPlan> streaming;  // --weights=streamed
};

// With `sp`, as one sequence-parallel rank (every rank of the group runs the same call on its
// thread); the collectives are timed in every mode but graphs.
[[nodiscard]] ModeResult run_mode(Mode mode, const Config& config, Platform& platform, Model& model,
                                  SequenceParallel* sp = nullptr);

[[nodiscard]] double median(std::vector<double> values);

}  // namespace denoise
