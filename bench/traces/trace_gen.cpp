// plan_trace_gen FAMILY BUFFERS [SEED] OUT.csv: writes a generated trace (trace_generators.hpp)
// as MiniMalloc CSV, so that `memplan plan` can be timed on it.
#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <string>

#include "memplan/plan/csv.hpp"
#include "trace_generators.hpp"

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    fmt::print(stderr, "usage: {} training|inference|graph|random BUFFERS [SEED] OUT.csv\n",
               argv[0]);
    return 2;
  }
  try {
    namespace traces = memplan::plan::traces;
    const auto family = traces::trace_family_from(argv[1]);
    const std::size_t buffers = std::stoull(argv[2]);
    const std::uint64_t seed = argc == 5 ? std::stoull(argv[3]) : 1;
    const memplan::plan::Problem problem = traces::generate(family, buffers, seed);
    memplan::plan::write_csv_file(argv[argc - 1], problem);
    fmt::print("{} buffers of {} (seed {}) -> {}\n", problem.buffers.size(), argv[1], seed,
               argv[argc - 1]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
