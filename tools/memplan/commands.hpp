// The subcommands of the memplan tool. Each add_* registers one subcommand on the CLI11 app: its
// options, its help, and a callback that runs it and stores the process exit code. A bad command
// line is CLI11's to report (exit code 2); an error from the library or a file is an input error
// (exit code 1), reported by the subcommand per file where it handles several.
#pragma once

#include <CLI/CLI.hpp>

namespace memplan::tool {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // an input, planning or output error
inline constexpr int kExitUsage = 2;  // a bad command line

void add_plan_command(CLI::App& app, int& exit_code);
void add_replay_command(CLI::App& app, int& exit_code);
void add_convert_command(CLI::App& app, int& exit_code);
void add_draw_command(CLI::App& app, int& exit_code);

}  // namespace memplan::tool
