// `memplan draw`: a picture of a plan. The input is a plan (a trace whose every buffer has an
// offset, as `memplan plan -o` writes it), drawn as it is after a check that it is valid; or a
// trace without offsets (or any trace, with --replan), planned first. The lower bound is drawn as a
// line either way.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "commands.hpp"
#include "memplan/draw/picture.hpp"
#include "memplan/error.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/planner.hpp"
#include "memplan/types.hpp"
#include "progress.hpp"
#include "trace_io.hpp"

namespace memplan::tool {
namespace {

struct DrawArgs {
  std::string file;
  std::string out;
  std::string title;
  double time_limit_ms = 1000;
  bool replan = false;
};

void run_draw(const DrawArgs& args) {
  const plan::CsvProblem trace = read_trace(args.file);
  const Progress progress(
      fmt::format("drawing {} ({} buffers)", args.file, trace.problem.buffers.size()));
  std::vector<Bytes> offsets = args.replan ? std::vector<Bytes>{} : trace.offsets;
  Bytes lower_bound = 0;
  std::string how;
  if (offsets.empty()) {
    plan::PlanOptions options;
    options.budget = std::chrono::milliseconds(static_cast<long long>(args.time_limit_ms));
    const plan::Solution solution = plan::plan(trace.problem, options);
    offsets = solution.offsets;
    lower_bound = solution.lower_bound;
    how = fmt::format("planned by memplan ({})", solution.algorithm);
  } else {
    lower_bound = plan::lower_bound(trace.problem);
    how = "the plan in the file";
  }
  const std::string title = args.title.empty() ? fmt::format("{}: {} buffers, {}", args.file,
                                                             trace.problem.buffers.size(), how)
                                               : args.title;
  draw::write_picture(args.out, trace.problem, offsets,
                      {.title = title, .lower_bound = lower_bound, .tags = trace.tags});
}

}  // namespace

void add_draw_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DrawArgs>();
  CLI::App* draw = app.add_subcommand(
      "draw",
      "Draw a plan: every buffer a rectangle over time and address, coloured by tag, the peak "
      "instant with the buffers live there, the lower bound and the arena size as lines. A "
      "trace without offsets is planned first.");
  draw->add_option("plan", args->file, "a plan or a trace (.csv, .json)")->required();
  draw->add_option("-o,--out", args->out, "the picture: .svg (static) or .html (hover, zoom)")
      ->required();
  draw->add_option("--title", args->title, "the picture's title (default: the file and how)");
  draw->add_option("-t,--time-limit", args->time_limit_ms,
                   "planning time for a trace without offsets, in milliseconds")
      ->check(CLI::Range(0.0, 7.0 * 24 * 3600 * 1000))
      ->capture_default_str();
  draw->add_flag("--replan", args->replan,
                 "plan the trace even when it has offsets (published suites carry another "
                 "planner's solution in their offset column)");
  draw->callback(reporting_errors("draw", exit_code, [args] { run_draw(*args); }));
}

}  // namespace memplan::tool
