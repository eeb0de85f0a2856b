// The memplan command line: one CLI11 app with a subcommand per job. Help and version exit 0, a
// bad command line exits 2 with CLI11's message and a pointer to --help, an input error exits 1.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "commands.hpp"
#include "memplan/log.hpp"
#include "memplan/version.hpp"

int main(int argc, char** argv) {
  using namespace memplan::tool;
  CLI::App app{
      "memplan: plan, draw, replay and convert the memory traces of repeated GPU steps.\n"
      "Set MEMPLAN_LOG=info (or debug) to see the library's log on stderr.",
      "memplan"};
  app.set_version_flag("--version", "memplan " MEMPLAN_VERSION_STRING);
  app.require_subcommand(1);
  app.footer("exit codes: 0 ok, 1 an input, planning or output error, 2 a bad command line.");
  int exit_code = kExitOk;
  add_plan_command(app, exit_code);
  add_draw_command(app, exit_code);
  add_replay_command(app, exit_code);
  add_convert_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the usage of the (sub)command
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "memplan: {}\n", e.what());
    return kExitError;
  }
  return exit_code;
}
