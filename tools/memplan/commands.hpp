// Subcommands of the memplan tool. Each takes its own arguments (after the subcommand name) and
// returns the process exit code; a bad command line escapes as UsageError, anything else as a
// memplan exception, for main() to report.
#pragma once

#include <span>
#include <stdexcept>
#include <string_view>

namespace memplan::tool {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // an input, planning or output error
inline constexpr int kExitUsage = 2;  // a bad command line

// A command line the subcommand cannot run: exit code 2. Errors from the library, including
// memplan::InvalidArgument for a problem it cannot plan, are input errors: exit code 1.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int plan_command(std::span<const std::string_view> args);

}  // namespace memplan::tool
