// The memplan command line: dispatches to one subcommand, reports errors in one place.
#include <fmt/core.h>

#include <exception>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace {

constexpr std::string_view kUsage = R"(usage: memplan <command> [options]

commands:
  plan FILE.csv... [--budget-ms N] [--greedy-only] [--fixed-offsets] [--out OUT.csv] [--json]
      Place the buffers of MiniMalloc CSV traces in one arena and report the plan:
      buffers, lower bound, arena size, ratio to the bound, algorithm, proven optimality, time.
      Every file is planned; one that fails is reported on stderr and the exit code is 1.

exit codes: 0 ok, 1 an input, planning or output error, 2 a bad command line.

Set MEMPLAN_LOG=info (or debug) to see the library's log on stderr.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace memplan::tool;
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    fmt::print(args.empty() ? stderr : stdout, "{}", kUsage);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::span<const std::string_view> rest(args.data() + 1, args.size() - 1);
  try {
    if (args[0] == "plan") return plan_command(rest);
    fmt::print(stderr, "memplan: unknown command '{}'\n\n{}", args[0], kUsage);
    return kExitUsage;
  } catch (const UsageError& e) {
    fmt::print(stderr, "memplan {}: {}\n(memplan --help shows the usage)\n", args[0], e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "memplan {}: {}\n", args[0], e.what());
    return kExitError;
  }
}
