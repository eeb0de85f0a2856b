// Planner benchmarks: every shipped trace through plan() with the default budget, synthetic
// problems of 60,000 and 1,000,000 buffers, wide live sets (every buffer alive at once), and
// generated model traces of 20,000 to 200,000 buffers (bench/traces: training and inference
// steps, compute graphs), with the greedy's indexes compared on one of them.
// Counters report the plan beside the lower bound, so the JSON output
// (--benchmark_format=json) is also the results table of docs/planner.md.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "memplan/plan/csv.hpp"
#include "memplan/plan/greedy.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/planner.hpp"
#include "trace_generators.hpp"

namespace {

using memplan::Bytes;
using memplan::plan::Buffer;
using memplan::plan::Problem;
using memplan::plan::Solution;

void report(benchmark::State& state, const Problem& problem, const Solution& solution) {
  state.counters["buffers"] = static_cast<double>(problem.buffers.size());
  state.counters["arena"] = static_cast<double>(solution.arena_size);
  state.counters["bound"] = static_cast<double>(solution.lower_bound);
  state.counters["ratio"] = solution.ratio_to_bound();
  state.counters["proven"] = solution.proven_optimal ? 1 : 0;
  state.SetLabel(solution.algorithm);
}

void plan_trace(benchmark::State& state, const Problem& problem) {
  Solution solution;
  for (auto _ : state) {
    solution = memplan::plan::plan(problem);
    benchmark::DoNotOptimize(solution.arena_size);
  }
  report(state, problem, solution);
}

// Random lifetimes and sizes shaped like a model's activations: most buffers short-lived, a
// few long-lived ones spanning many layers, sizes spread over six orders of magnitude.
Problem synthetic_problem(std::size_t buffers) {
  return memplan::plan::traces::random_trace(buffers, 20240601);
}

void plan_synthetic(benchmark::State& state) {
  const Problem problem = synthetic_problem(static_cast<std::size_t>(state.range(0)));
  plan_trace(state, problem);
}
BENCHMARK(plan_synthetic)->Arg(60000)->Arg(1000000)->Unit(benchmark::kMillisecond);

// Every buffer alive at once, sizes as in synthetic_problem: the widest live set there is. The
// other orders' runs cost O(n²) here, so the portfolio starts with the start order's sweep.
Problem all_live_problem(std::size_t buffers) {
  std::mt19937_64 random(20240602);
  std::uniform_real_distribution<double> log_size(6.0, 26.0);  // 64 B .. 64 MiB
  Problem problem;
  problem.buffers.reserve(buffers);
  for (std::size_t i = 0; i < buffers; ++i) {
    problem.buffers.push_back(
        Buffer{.id = std::to_string(i),
               .lower = 0,
               .upper = 1,
               .size = (static_cast<Bytes>(std::exp2(log_size(random))) + 255) / 256 * 256,
               .alignment = 256});
  }
  return problem;
}

void plan_all_live(benchmark::State& state) {
  plan_trace(state, all_live_problem(static_cast<std::size_t>(state.range(0))));
}
BENCHMARK(plan_all_live)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void greedy_synthetic(benchmark::State& state) {
  const Problem problem = synthetic_problem(static_cast<std::size_t>(state.range(0)));
  const Bytes bound = memplan::plan::lower_bound(problem);
  for (auto _ : state) {
    auto greedy = memplan::plan::greedy_portfolio(problem, bound);
    benchmark::DoNotOptimize(greedy.arena_size);
  }
}
BENCHMARK(greedy_synthetic)->Arg(60000)->Unit(benchmark::kMillisecond);

// The greedy's two neighbour indexes on one strategy (identical plans, different costs): the
// scan index wins on dense problems such as somas/bert_base, the graph on sparse ones.
void greedy_index(benchmark::State& state, const Problem& problem,
                  memplan::plan::GreedyIndex index) {
  for (auto _ : state) {
    auto plan = memplan::plan::greedy_plan(problem, memplan::plan::GreedyOrder::Size,
                                           memplan::plan::Fit::Best, index);
    benchmark::DoNotOptimize(plan.arena_size);
  }
}

void register_greedy_indexes(const std::string& stem, const Problem& problem) {
  const std::string name = "greedy_index/" + stem;
  benchmark::RegisterBenchmark((name + "/graph").c_str(), greedy_index, problem,
                               memplan::plan::GreedyIndex::Overlaps)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark((name + "/scan").c_str(), greedy_index, problem,
                               memplan::plan::GreedyIndex::Scan)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark((name + "/time_tree").c_str(), greedy_index, problem,
                               memplan::plan::GreedyIndex::TimeTree)
      ->Unit(benchmark::kMillisecond);
}

// plan_generated/<family>/<buffers>: seed 1, as `plan_trace_gen <family> <buffers> 1` writes it
// for `memplan plan`. greedy_index/training_20000: long-lived weights over short activations,
// where the overlap graph and the scan walk every long-lived buffer for every placement.
void register_generated() {
  namespace traces = memplan::plan::traces;
  for (const auto family : {traces::TraceFamily::Training, traces::TraceFamily::Inference,
                            traces::TraceFamily::Graph}) {
    for (const std::size_t buffers : {20000, 100000, 200000}) {
      const std::string name =
          fmt::format("plan_generated/{}/{}", traces::to_string(family), buffers);
      benchmark::RegisterBenchmark(name.c_str(), plan_trace, traces::generate(family, buffers, 1))
          ->Unit(benchmark::kMillisecond);
    }
  }
  register_greedy_indexes("training_20000", traces::training_trace(20000, 1));
}

void register_traces() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(MEMPLAN_TEST_DATA_DIR) / "traces")) {
    if (entry.is_regular_file() && entry.path().extension() == ".csv") files.push_back(entry);
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const std::string name =
        "plan_trace/" + file.parent_path().filename().string() + "/" + file.stem().string();
    benchmark::RegisterBenchmark(name.c_str(), plan_trace, memplan::plan::read_csv_file(file))
        ->Unit(benchmark::kMillisecond);
    if (file.parent_path().filename() == "somas") {
      register_greedy_indexes(file.stem().string(), memplan::plan::read_csv_file(file));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_traces();
  register_generated();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
