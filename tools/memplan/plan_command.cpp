// `memplan plan`: read traces, plan each, validate the result, print a table or JSON lines.
#include <fmt/core.h>

#include <charconv>
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

PlanArgs parse_args(std::span<const std::string_view> args) {
  PlanArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const auto value = [&]() -> std::string_view {
      if (i + 1 >= args.size()) throw InvalidArgument(fmt::format("{} needs a value", arg));
      return args[++i];
    };
    if (arg == "--budget-ms") {
      const std::string_view text = value();
      long long ms = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ms);
      if (error != std::errc{} || end != text.data() + text.size() || ms < 0) {
        throw InvalidArgument(fmt::format("--budget-ms '{}' is not a non-negative integer", text));
      }
      parsed.options.budget = std::chrono::milliseconds(ms);
    } else if (arg == "--greedy-only") {
      parsed.options.exact = false;
    } else if (arg == "--fixed-offsets") {
      parsed.csv.offsets_are_fixed = true;
    } else if (arg == "--out") {
      parsed.out = value();
    } else if (arg == "--json") {
      parsed.json = true;
    } else if (arg.starts_with("--")) {
      throw InvalidArgument(fmt::format("unknown option '{}'", arg));
    } else {
      parsed.files.emplace_back(arg);
    }
  }
  if (parsed.files.empty()) throw InvalidArgument("no trace file given (memplan plan FILE.csv)");
  if (!parsed.out.empty() && parsed.files.size() != 1) {
    throw InvalidArgument("--out takes the plan of exactly one trace");
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

}  // namespace

int plan_command(std::span<const std::string_view> args) {
  const PlanArgs parsed = parse_args(args);
  if (!parsed.json) {
    fmt::print(kRowFormat, "trace", "buffers", "lower bound", "arena size", "ratio", "algorithm",
               "proven", "time (ms)");
  }
  for (const auto& file : parsed.files) {
    const plan::Problem problem = plan::read_csv_file(file, parsed.csv);
    const plan::Solution solution = plan::plan(problem, parsed.options);
    plan::validate(problem, solution);  // never print a plan that is not valid
    if (parsed.json) {
      print_json(file, problem.buffers.size(), solution);
    } else {
      print_row(file, problem.buffers.size(), solution);
    }
    if (!parsed.out.empty()) plan::write_csv_file(parsed.out, problem, solution.offsets);
  }
  return kExitOk;
}

}  // namespace memplan::tool
