// `memplan plan`: read traces, plan each, validate the result, print a table (human units, a
// totals row) or JSON lines (exact bytes). Each file is planned on its own: one that fails is
// reported on stderr, naming the file (and the line, where the error is about a row), and the
// others still run; the exit code then is 1.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "memplan/error.hpp"
#include "memplan/plan/planner.hpp"
#include "memplan/plan/validator.hpp"
#include "memplan/types.hpp"
#include "progress.hpp"
#include "trace_io.hpp"

namespace memplan::tool {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr int kPlanSchemaVersion = 1;
// The longest time limit accepted: 7 days. Far above any useful search, and far below where a
// deadline of now + limit overflows std::chrono's nanoseconds (~292 years).
constexpr double kMaxTimeLimitMs = 7.0 * 24 * 3600 * 1000;

struct PlanArgs {
  std::vector<std::string> files;
  double time_limit_ms = 1000;
  bool greedy_only = false;
  bool fixed_offsets = false;
  std::string out;
  std::string out_dir;
  bool json = false;
  bool offsets = false;
};

// How a plan ended, for people and scripts alike.
std::string_view status_of(const plan::Solution& s, const plan::PlanOptions& options) {
  if (s.proven_optimal) return "optimal";
  if (s.elapsed >= options.budget) return "time limit";  // the best plan found in time
  return options.exact ? "best found" : "greedy only";
}

struct Totals {
  std::size_t traces = 0, optimal = 0, buffers = 0;
  Bytes lower_bound = 0, arena = 0;
  double ms = 0;
};

class Printer {
 public:
  Printer(const PlanArgs& args, const plan::PlanOptions& options)
      : args_(args), options_(options) {}

  void print(const fs::path& file, const plan::Problem& problem, const plan::Solution& s) {
    const double ms = static_cast<double>(s.elapsed.count()) / 1e3;
    totals_.traces += 1;
    totals_.optimal += s.proven_optimal ? 1 : 0;
    totals_.buffers += problem.buffers.size();
    totals_.lower_bound += s.lower_bound;
    totals_.arena += s.arena_size;
    totals_.ms += ms;
    if (args_.json) return print_json(file, problem, s, ms);
    if (!header_printed_) {
      row("trace", "buffers", "lower bound", "arena", "gap", "ratio", "algorithm", "status",
          "time");
      header_printed_ = true;
    }
    row(file.filename().string(), fmt::to_string(problem.buffers.size()),
        human_bytes(s.lower_bound), human_bytes(s.arena_size),
        human_bytes(s.arena_size - s.lower_bound), fmt::format("{:.4f}", s.ratio_to_bound()),
        s.algorithm, status_of(s, options_), fmt::format("{:.2f} ms", ms));
  }

  // The totals row, after a rule, when more than one trace was planned as a table.
  void finish() const {
    if (args_.json || totals_.traces < 2) return;
    const double ratio = totals_.lower_bound == 0 ? 1.0
                                                  : static_cast<double>(totals_.arena) /
                                                        static_cast<double>(totals_.lower_bound);
    fmt::print("{:-<126}\n", "");
    row(fmt::format("total ({} traces)", totals_.traces), fmt::to_string(totals_.buffers),
        human_bytes(totals_.lower_bound), human_bytes(totals_.arena),
        human_bytes(totals_.arena - totals_.lower_bound), fmt::format("{:.4f}", ratio), "",
        fmt::format("{} optimal", totals_.optimal), fmt::format("{:.2f} ms", totals_.ms));
  }

 private:
  static void row(std::string_view trace, std::string_view buffers, std::string_view bound,
                  std::string_view arena, std::string_view gap, std::string_view ratio,
                  std::string_view algorithm, std::string_view status, std::string_view time) {
    fmt::print("{:<28} {:>8} {:>11} {:>11} {:>10} {:>7} {:<26} {:<11} {:>11}\n", trace, buffers,
               bound, arena, gap, ratio, algorithm, status, time);
  }

  void print_json(const fs::path& file, const plan::Problem& problem, const plan::Solution& s,
                  double ms) const {
    Json out;
    out["schema"] = "memplan.plan";
    out["schema_version"] = kPlanSchemaVersion;
    out["file"] = file.string();
    out["buffers"] = problem.buffers.size();
    out["lower_bound"] = s.lower_bound;
    out["arena_size"] = s.arena_size;
    out["gap_bytes"] = s.arena_size - s.lower_bound;
    out["ratio"] = s.ratio_to_bound();
    out["algorithm"] = s.algorithm;
    out["proven_optimal"] = s.proven_optimal;
    out["status"] = status_of(s, options_);
    out["elapsed_ms"] = ms;
    out["options"] = {{"time_limit_ms", args_.time_limit_ms},
                      {"exact", options_.exact},
                      {"fixed_offsets", args_.fixed_offsets},
                      {"stop_within_ratio", options_.stop_within_ratio}};
    if (args_.offsets) out["offsets"] = s.offsets;
    fmt::print("{}\n", out.dump());
  }

  const PlanArgs& args_;
  const plan::PlanOptions& options_;
  Totals totals_;
  bool header_printed_ = false;
};

fs::path output_of(const fs::path& file, const PlanArgs& args) {
  if (!args.out.empty()) return args.out;
  if (!args.out_dir.empty()) return fs::path(args.out_dir) / (file.stem().string() + ".plan.csv");
  return {};
}

void plan_file(const fs::path& file, const PlanArgs& args, const plan::PlanOptions& options,
               Printer& printer) {
  const plan::CsvProblem read =
      read_trace(file, plan::CsvReadOptions{.offsets_are_fixed = args.fixed_offsets});
  plan::Solution solution;
  try {
    const Progress progress(fmt::format("planning {} ({} buffers)", file.filename().string(),
                                        read.problem.buffers.size()));
    solution = plan::plan(read.problem, options);
    plan::validate(read.problem, solution);  // never print a plan that is not valid
  } catch (const Error& e) {
    // The planner's messages name buffers by index and id; the file names the trace.
    throw Error(fmt::format("{}: {}", file.string(), e.what()));
  }
  printer.print(file, read.problem, solution);
  if (const fs::path out = output_of(file, args); !out.empty()) {
    write_trace(out, read.problem, solution.offsets, read.tags);
  }
}

int run_plan(const PlanArgs& args) {
  if (!args.out.empty() && args.files.size() != 1) {
    throw CLI::ValidationError(
        "--out", fmt::format("takes the plan of exactly one trace, not {}; use --out-dir DIR for "
                             "several",
                             args.files.size()));
  }
  plan::PlanOptions options;
  options.budget = std::chrono::milliseconds(static_cast<long long>(args.time_limit_ms));
  options.exact = !args.greedy_only;
  Printer printer(args, options);
  std::size_t failed = 0;
  for (const std::string& file : args.files) {
    try {
      if (file.empty()) throw InvalidArgument("an empty trace file name");
      plan_file(file, args, options, printer);
    } catch (const std::exception& e) {
      std::fflush(stdout);  // keep the order of rows and errors on a terminal
      fmt::print(stderr, "memplan plan: {}\n", e.what());
      ++failed;
    }
  }
  printer.finish();
  if (failed > 0 && args.files.size() > 1) {
    fmt::print(stderr, "memplan plan: {} of {} traces failed\n", failed, args.files.size());
  }
  return failed > 0 ? kExitError : kExitOk;
}

// A time limit in milliseconds (after the unit is applied): a number in [0, 7 days].
CLI::Validator time_limit_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double ms = 0;
        if (!CLI::detail::lexical_cast(text, ms) || !(ms >= 0)) {
          return fmt::format("'{}' is not a non-negative number of milliseconds", text);
        }
        if (ms > kMaxTimeLimitMs) {
          return fmt::format("{} ms is past the longest time limit, 7 days ({} ms)", text,
                             kMaxTimeLimitMs);
        }
        return {};
      },
      "TIME");
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Place the buffers of each trace (MiniMalloc CSV or memplan JSON) in one arena and report "
      "the plan: lower bound, arena size, the gap between them, algorithm, status, time.");
  plan->add_option("traces", args->files, "trace files (.csv, .json)")->required();
  const std::map<std::string, double> kTimeUnits{{"ms", 1.0}, {"s", 1000.0}, {"min", 60000.0}};
  auto* limit =
      plan->add_option("-t,--time-limit", args->time_limit_ms,
                       "wall time for each trace's whole run, lower bound, greedy "
                       "portfolio and exact search included (e.g. 250ms, 2s; a plain "
                       "number is milliseconds); the best plan found by then is "
                       "returned with the status 'time limit'")
          ->transform(CLI::AsNumberWithUnit(kTimeUnits, CLI::AsNumberWithUnit::CASE_SENSITIVE))
          ->check(time_limit_check())
          ->default_str("1s");
  plan->add_option("--budget-ms", args->time_limit_ms,
                   "the time limit in milliseconds (older name)")
      ->check(time_limit_check())
      ->excludes(limit);
  plan->add_flag("--greedy-only", args->greedy_only, "the greedy portfolio only, no exact search");
  plan->add_flag("--fixed-offsets", args->fixed_offsets,
                 "keep the traces' offset column as fixed offsets (a plan to check or extend)");
  auto* out = plan->add_option("-o,--out", args->out,
                               "write the plan of the one trace here (.csv or .json, offsets and "
                               "tags included)")
                  ->check([](const std::string& path) {
                    return path.empty() ? std::string("needs a file name, not an empty one")
                                        : std::string();
                  });
  plan->add_option("--out-dir", args->out_dir, "write each trace's plan to DIR/<name>.plan.csv")
      ->check(CLI::ExistingDirectory)
      ->excludes(out);
  plan->add_flag("--json", args->json, "JSON lines with exact bytes instead of the table");
  plan->add_flag("--offsets", args->offsets, "with --json: every buffer's offset");
  plan->callback([args, &exit_code] { exit_code = run_plan(*args); });
}

}  // namespace memplan::tool
