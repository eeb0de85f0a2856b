// How long drawing takes: to_svg and to_html on valid plans of 1,000 to 100,000 buffers (stacked
// in lanes, as tests/draw builds them). With MEMPLAN_DRAW_PAGE=FILE.html it also writes the
// 100,000-buffer page, which bench/draw_browser.sh times in headless Chromium.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <random>

#include "memplan/draw/picture.hpp"

namespace {

struct Plan {
  memplan::plan::Problem problem;
  std::vector<memplan::Bytes> offsets;
  std::vector<std::string> tags;
};

Plan lanes_plan(std::size_t count) {
  static const char* const kTags[] = {"attention", "mlp", "kv cache", "activations", "workspace"};
  std::mt19937_64 random(5);
  constexpr std::size_t kLanes = 200;
  constexpr memplan::Bytes kLaneBytes = 1 << 20;
  std::vector<memplan::plan::Time> lane_time(kLanes, 0);
  Plan out;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t lane = random() % kLanes;
    const auto length = static_cast<memplan::plan::Time>(1 + random() % 50);
    out.problem.buffers.push_back({.id = "buffer_" + std::to_string(i),
                                   .lower = lane_time[lane],
                                   .upper = lane_time[lane] + length,
                                   .size = static_cast<memplan::Bytes>(1 + random() % kLaneBytes)});
    out.offsets.push_back(static_cast<memplan::Bytes>(lane) * kLaneBytes);
    out.tags.emplace_back(kTags[random() % std::size(kTags)]);
    lane_time[lane] += length + static_cast<memplan::plan::Time>(random() % 5);
  }
  return out;
}

void BM_ToSvg(benchmark::State& state) {
  const Plan p = lanes_plan(static_cast<std::size_t>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes = memplan::draw::to_svg(p.problem, p.offsets, {.tags = p.tags}).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["file_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ToSvg)->Arg(1000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_ToHtml(benchmark::State& state) {
  const Plan p = lanes_plan(static_cast<std::size_t>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes = memplan::draw::to_html(p.problem, p.offsets, {.tags = p.tags}).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["file_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ToHtml)->Arg(1000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (const char* page = std::getenv("MEMPLAN_DRAW_PAGE")) {
    const Plan p = lanes_plan(100'000);
    memplan::draw::write_picture(page, p.problem, p.offsets,
                                 {.title = "100,000 buffers", .tags = p.tags});
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
