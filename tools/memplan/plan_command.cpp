// `memplan plan`: read traces, plan each, validate the result, print a table or JSON lines.
// Each file is planned on its own: one that fails is reported on stderr, naming the file (and
// the lines, where the error is about rows), and the others still run; the exit code then is 1.
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.hpp"
#include "memplan/error.hpp"
#include "memplan/plan/csv.hpp"
#include "memplan/plan/planner.hpp"
#include "memplan/plan/validator.hpp"

namespace memplan::tool {
namespace {

struct PlanArgs {
  std::vector<std::filesystem::path> files;
  plan::PlanOptions options;
  plan::CsvReadOptions csv;
  std::filesystem::path out;
  bool json = false;
};

// The longest --budget-ms accepted: 7 days. Far above any useful search, and far below where a
// deadline of now + budget overflows std::chrono's nanoseconds (~292 years).
constexpr long long kMaxBudgetMs = 7LL * 24 * 3600 * 1000;

std::chrono::milliseconds parse_budget(std::string_view text) {
  long long ms = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (text.empty() || end != text.data() + text.size() ||
      (error != std::errc{} && error != std::errc::result_out_of_range)) {
    throw UsageError(fmt::format("--budget-ms '{}' is not a non-negative integer", text));
  }
  if (error == std::errc::result_out_of_range || ms > kMaxBudgetMs || ms < 0) {
    throw UsageError(fmt::format("--budget-ms {} is outside [0, {}] (7 days)", text, kMaxBudgetMs));
  }
  return std::chrono::milliseconds(ms);
}

PlanArgs parse_args(std::span<const std::string_view> args) {
  PlanArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const auto value = [&]() -> std::string_view {
      if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", arg));
      return args[++i];
    };
    if (arg == "--budget-ms") {
      parsed.options.budget = parse_budget(value());
    } else if (arg == "--greedy-only") {
      parsed.options.exact = false;
    } else if (arg == "--fixed-offsets") {
      parsed.csv.offsets_are_fixed = true;
    } else if (arg == "--out") {
      const std::string_view out = value();
      if (out.empty()) throw UsageError("--out needs a file name, not an empty one");
      parsed.out = out;
    } else if (arg == "--json") {
      parsed.json = true;
    } else if (arg.size() > 1 && arg.starts_with("-")) {
      throw UsageError(fmt::format("unknown option '{}'", arg));
    } else if (arg.empty()) {
      throw UsageError("an empty trace file name");
    } else {
      parsed.files.emplace_back(arg);
    }
  }
  if (parsed.files.empty()) throw UsageError("no trace file given (memplan plan FILE.csv)");
  if (!parsed.out.empty() && parsed.files.size() != 1) {
    throw UsageError(
        fmt::format("--out takes the plan of exactly one trace, not {}", parsed.files.size()));
  }
  return parsed;
}

std::string json_string(std::string_view text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      quoted += fmt::format("\\u{:04x}", static_cast<int>(c));
      continue;
    }
    quoted += c;
  }
  return quoted + "\"";
}

void print_json(const std::filesystem::path& file, std::size_t buffers, const plan::Solution& s) {
  fmt::print(
      "{{\"file\": {}, \"buffers\": {}, \"lower_bound\": {}, \"arena_size\": {}, "
      "\"ratio\": {:.6f}, \"algorithm\": {}, \"proven_optimal\": {}, \"elapsed_ms\": {:.3f}}}\n",
      json_string(file.string()), buffers, s.lower_bound, s.arena_size, s.ratio_to_bound(),
      json_string(s.algorithm), s.proven_optimal, static_cast<double>(s.elapsed.count()) / 1e3);
}

constexpr std::string_view kRowFormat = "{:<28} {:>8} {:>14} {:>14} {:>8} {:<24} {:>6} {:>10}\n";

void print_row(const std::filesystem::path& file, std::size_t buffers, const plan::Solution& s) {
  fmt::print(kRowFormat, file.filename().string(), buffers, s.lower_bound, s.arena_size,
             fmt::format("{:.4f}", s.ratio_to_bound()), s.algorithm,
             s.proven_optimal ? "yes" : "no",
             fmt::format("{:.2f}", static_cast<double>(s.elapsed.count()) / 1e3));
}

struct Printer {
  bool json;
  bool header_printed = false;

  void print(const std::filesystem::path& file, std::size_t buffers, const plan::Solution& s) {
    if (json) return print_json(file, buffers, s);
    if (!header_printed) {
      fmt::print(kRowFormat, "trace", "buffers", "lower bound", "arena size", "ratio", "algorithm",
                 "proven", "time (ms)");
      header_printed = true;
    }
    print_row(file, buffers, s);
  }
};

void plan_file(const std::filesystem::path& file, const PlanArgs& parsed, Printer& printer) {
  const plan::CsvProblem read = plan::read_csv_file_with_lines(file, parsed.csv);
  plan::Solution solution;
  try {
    solution = plan::plan(read.problem, parsed.options);
    plan::validate(read.problem, solution);  // never print a plan that is not valid
  } catch (const Error& e) {
    // The planner's messages name buffers by index and id; the file names the trace.
    throw Error(fmt::format("{}: {}", file.string(), e.what()));
  }
  printer.print(file, read.problem.buffers.size(), solution);
  if (!parsed.out.empty()) plan::write_csv_file(parsed.out, read.problem, solution.offsets);
}

}  // namespace

int plan_command(std::span<const std::string_view> args) {
  const PlanArgs parsed = parse_args(args);
  Printer printer{parsed.json};
  int failed = 0;
  for (const auto& file : parsed.files) {
    try {
      plan_file(file, parsed, printer);
    } catch (const std::exception& e) {
      std::fflush(stdout);  // keep the order of rows and errors on a terminal
      fmt::print(stderr, "memplan plan: {}\n", e.what());
      ++failed;
    }
  }
  if (failed > 0 && parsed.files.size() > 1) {
    fmt::print(stderr, "memplan plan: {} of {} traces failed\n", failed, parsed.files.size());
  }
  return failed > 0 ? kExitError : kExitOk;
}

}  // namespace memplan::tool
