// Quickstart, the planner: give every buffer of a trace a fixed offset in one arena, so that
// buffers alive at the same time never share a byte, and check the plan. No GPU, no files.
#include <cstdio>

#include "memplan/error.hpp"
#include "memplan/plan/planner.hpp"
#include "memplan/plan/problem.hpp"
#include "memplan/plan/validator.hpp"

int main() {
  using memplan::plan::Buffer;
  // Each buffer is alive on [lower, upper): here four tensors of one layer, in bytes.
  memplan::plan::Problem problem;
  problem.buffers = {
      Buffer{.id = "input", .lower = 0, .upper = 2, .size = 4096},
      Buffer{.id = "hidden", .lower = 1, .upper = 4, .size = 8192},
      Buffer{.id = "scratch", .lower = 2, .upper = 3, .size = 2048, .alignment = 256},
      Buffer{.id = "output", .lower = 3, .upper = 5, .size = 4096},
  };

  try {
    const memplan::plan::Solution plan =
        memplan::plan::plan(problem, {.budget = std::chrono::milliseconds(100)});
    memplan::plan::validate(problem, plan);  // throws if two live buffers overlap

    for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
      std::printf("%-8s offset %6lld  size %6lld\n", problem.buffers[i].id.c_str(),
                  static_cast<long long>(plan.offsets[i]),
                  static_cast<long long>(problem.buffers[i].size));
    }
    std::printf("arena %lld B, lower bound %lld B, %s, by %s\n",
                static_cast<long long>(plan.arena_size), static_cast<long long>(plan.lower_bound),
                plan.proven_optimal ? "optimal" : "not proven optimal", plan.algorithm.c_str());
  } catch (const memplan::Error& e) {  // every memplan error names the problem and its numbers
    std::fprintf(stderr, "planning failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
