// `memplan replay`: runs a trace through the memory compiler on the host backend, step after
// step, as a program would (allocate at a buffer's lower instant, free at its upper), and prints
// what the compiler did: which steps replayed, breaks, backend memory calls, mapped bytes, the
// plan against its lower bound, and on request the compiler's own report (the tags at each
// branch's peak, live and peak bytes). The analogue of RMM's replay benchmark, for memplan.
// The host backend maps real memory but nothing is written, so pages are never touched.
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "memplan/arena/host_backend.hpp"
#include "memplan/error.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/types.hpp"
#include "progress.hpp"
#include "trace_io.hpp"

namespace memplan::tool {
namespace {

using Json = nlohmann::ordered_json;

struct ReplayArgs {
  std::string file;
  int steps = 3;
  std::uint64_t chunk_bytes = std::uint64_t{2} << 20;
  std::uint64_t alignment = 256;
  bool json = false;
  bool report = false;
};

struct Event {
  plan::Time time;
  bool alloc;  // frees first at an instant: a buffer alive on [lower, upper) is gone at upper
  std::size_t buffer;
};

std::vector<Event> events_of(const plan::Problem& problem) {
  std::vector<Event> events;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    if (!problem.buffers[i].occupies()) continue;  // the compiler serves no empty buffer
    events.push_back({problem.buffers[i].lower, true, i});
    events.push_back({problem.buffers[i].upper, false, i});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.alloc != b.alloc) return !a.alloc;
    return a.buffer < b.buffer;
  });
  return events;
}

struct StepRow {
  int step = 0;
  bool replayed = false;
  std::uint64_t breaks = 0;
  std::uint64_t memory_calls = 0;
  std::uint64_t mapped = 0;
};

void run_replay(const ReplayArgs& args) {
  const plan::CsvProblem trace = read_trace(args.file);
  const plan::Problem& problem = trace.problem;
  const std::vector<Event> events = events_of(problem);
  // Bytes alive at the busiest instant: no allocator can do with less, so it sizes the reserve.
  const auto peak = static_cast<std::uint64_t>(plan::peak_live_bytes(problem));
  // Recording places buffers best fit, which can need more than the peak; 4x and 1 GiB spare
  // are addresses only (nothing is mapped until used).
  const std::uint64_t reserve =
      align_up<std::uint64_t>(4 * peak + (std::uint64_t{1} << 30), args.chunk_bytes);
  arena::HostBackend backend({.commit = false});
  Compiler compiler(backend, {.reserve_bytes = reserve,
                              .chunk_bytes = args.chunk_bytes,
                              .pool_reserve_bytes = reserve,
                              .default_alignment = args.alignment});
  std::vector<void*> pointers(problem.buffers.size(), nullptr);
  std::vector<StepRow> rows;
  const Progress progress(fmt::format("replaying {} ({} buffers, {} steps)", args.file,
                                      problem.buffers.size(), args.steps));
  for (int s = 0; s < args.steps; ++s) {
    const Stats before = compiler.stats();
    compiler.begin_step("replay");
    for (const Event& e : events) {
      const plan::Buffer& b = problem.buffers[e.buffer];
      if (e.alloc) {
        const std::string_view tag =
            trace.tags.empty() ? std::string_view() : std::string_view(trace.tags[e.buffer]);
        pointers[e.buffer] = compiler.allocate(static_cast<std::size_t>(b.size), {}, tag,
                                               static_cast<std::size_t>(b.alignment));
      } else {
        compiler.deallocate(pointers[e.buffer]);
      }
    }
    compiler.end_step();
    const Stats after = compiler.stats();
    rows.push_back({.step = s,
                    .replayed = after.steps_replayed > before.steps_replayed,
                    .breaks = after.breaks - before.breaks,
                    .memory_calls = (after.backend_calls - before.backend_calls).memory_calls(),
                    .mapped = after.mapped_bytes});
  }
  const Stats stats = compiler.stats();
  std::uint64_t replayed_calls = 0;
  for (const StepRow& r : rows) replayed_calls += r.replayed ? r.memory_calls : 0;

  if (args.json) {
    Json out;
    out["schema"] = "memplan.replay";
    out["schema_version"] = 1;
    out["file"] = args.file;
    out["buffers"] = problem.buffers.size();
    out["options"] = {
        {"steps", args.steps}, {"chunk_bytes", args.chunk_bytes}, {"alignment", args.alignment}};
    Json steps = Json::array();
    for (const StepRow& r : rows) {
      steps.push_back({{"step", r.step},
                       {"replayed", r.replayed},
                       {"breaks", r.breaks},
                       {"memory_calls", r.memory_calls},
                       {"mapped_bytes", r.mapped}});
    }
    out["steps"] = steps;
    out["peak_live_bytes"] = peak;
    out["planned_bytes"] = stats.planned_peak_bytes;
    out["lower_bound_bytes"] = stats.lower_bound_bytes;
    out["mapped_bytes"] = stats.mapped_bytes;
    out["breaks"] = stats.breaks;
    out["memory_calls_in_replayed_steps"] = replayed_calls;
    out["compiler"] = Json::parse(compiler.report_json());
    fmt::print("{}\n", out.dump());
    return;
  }
  fmt::print("{:>5}  {:<9} {:>7} {:>13} {:>11}\n", "step", "path", "breaks", "memory calls",
             "mapped");
  for (const StepRow& r : rows) {
    fmt::print("{:>5}  {:<9} {:>7} {:>13} {:>11}\n", r.step, r.replayed ? "replayed" : "recorded",
               r.breaks, r.memory_calls, human_bytes(static_cast<Bytes>(r.mapped)));
  }
  fmt::print(
      "\n{} buffers, aligned to {}: plan {} against a lower bound of {} (ratio {:.4f}); "
      "peak live {}; mapped {}; {} breaks; {} memory calls in replayed steps\n",
      problem.buffers.size(), human_bytes(static_cast<Bytes>(args.alignment)),
      human_bytes(static_cast<Bytes>(stats.planned_peak_bytes)),
      human_bytes(static_cast<Bytes>(stats.lower_bound_bytes)),
      stats.lower_bound_bytes == 0 ? 1.0
                                   : static_cast<double>(stats.planned_peak_bytes) /
                                         static_cast<double>(stats.lower_bound_bytes),
      human_bytes(static_cast<Bytes>(peak)), human_bytes(static_cast<Bytes>(stats.mapped_bytes)),
      stats.breaks, replayed_calls);
  if (args.report) fmt::print("\n{}", compiler.report());
}

}  // namespace

void add_replay_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Run a trace through the memory compiler on the host backend for a number of steps and "
      "print, per step, whether it replayed, its breaks, backend memory calls and mapped bytes; "
      "then the plan against its lower bound.");
  replay->add_option("trace", args->file, "the trace (.csv or .json)")->required();
  replay->add_option("-n,--steps", args->steps, "steps to run")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  replay->add_option("--chunk", args->chunk_bytes, "arena mapping granularity (e.g. 2MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->default_str("2MiB");
  replay
      ->add_option("--alignment", args->alignment,
                   "every pointer's alignment, as CompilerOptions::default_alignment")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  replay->add_flag("--json", args->json,
                   "one JSON object with exact bytes, the compiler's JSON report under 'compiler'");
  replay->add_flag("--report", args->report, "print the compiler's report after the table");
  replay->callback(reporting_errors("replay", exit_code, [args] { run_replay(*args); }));
}

}  // namespace memplan::tool
