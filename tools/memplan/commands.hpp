// The subcommands of the memplan tool. Each add_* registers one subcommand on the CLI11 app: its
// options, its help, and a callback that runs it and stores the process exit code. A bad command
// line is CLI11's to report (exit code 2); an error from the library or a file is an input error
// (exit code 1), reported by the subcommand per file where it handles several.
#pragma once

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <string_view>

#include "memplan/error.hpp"

namespace memplan::tool {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // an input, planning or output error
inline constexpr int kExitUsage = 2;  // a bad command line

// The callback of a subcommand that runs one job: a memplan error is reported on stderr as
// "memplan NAME: ..." and the exit code is 1; else it is 0.
template <class Run>
auto reporting_errors(std::string_view name, int& exit_code, Run run) {
  return [name, &exit_code, run] {
    try {
      run();
      exit_code = kExitOk;
    } catch (const Error& e) {
      fmt::print(stderr, "memplan {}: {}\n", name, e.what());
      exit_code = kExitError;
    }
  };
}

void add_plan_command(CLI::App& app, int& exit_code);
void add_replay_command(CLI::App& app, int& exit_code);
void add_convert_command(CLI::App& app, int& exit_code);
void add_draw_command(CLI::App& app, int& exit_code);

}  // namespace memplan::tool
