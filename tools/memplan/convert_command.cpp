// `memplan convert`: a trace from one format to the other (MiniMalloc CSV <-> memplan JSON),
// keeping offsets and tags. PyTorch snapshots (pickles) convert with tools/torch_snapshot.py.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "commands.hpp"
#include "memplan/error.hpp"
#include "trace_io.hpp"

namespace memplan::tool {

void add_convert_command(CLI::App& app, int& exit_code) {
  struct Args {
    std::string in, out;
  };
  auto args = std::make_shared<Args>();
  CLI::App* convert = app.add_subcommand(
      "convert",
      "Convert a trace between MiniMalloc CSV and memplan JSON (by the files' extensions), "
      "keeping offsets and tags. A PyTorch memory snapshot converts with "
      "tools/torch_snapshot.py.");
  convert->add_option("input", args->in, "the trace to read (.csv or .json)")->required();
  convert->add_option("-o,--out", args->out, "the file to write (.csv or .json)")->required();
  convert->callback(reporting_errors("convert", exit_code, [args] {
    const plan::CsvProblem trace = read_trace(args->in);
    write_trace(args->out, trace.problem, trace.offsets, trace.tags);
  }));
}

}  // namespace memplan::tool
