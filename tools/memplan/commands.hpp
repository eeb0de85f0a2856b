// Subcommands of the memplan tool. Each takes its own arguments (after the subcommand name) and
// returns the process exit code; errors escape as memplan exceptions for main() to report.
#pragma once

#include <span>
#include <string_view>

namespace memplan::tool {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

int plan_command(std::span<const std::string_view> args);

}  // namespace memplan::tool
