// Memory-compiler costs and sizes.
//  - Replayed allocate+free pairs (host backend, no device needed): the replay fast path.
//  - Peak bytes of whole steps on the GPU: memplan's mapped arena and plan against the high-water
//    marks of a cudaMallocAsync pool serving the same allocation sequence (skips without a GPU).
//  - Check mode's price per allocate+free pair: poison alone, and all checks (fresh pages).
//
//   compiler_bench --benchmark_format=json --benchmark_out=compiler_bench.json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "memplan/arena/host_backend.hpp"
#include "memplan/plan/csv.hpp"
#include "memplan/runtime/compiler.hpp"

#if defined(MEMPLAN_HAVE_CUDA_VMM)
#include <cuda_runtime.h>

#include "memplan/arena/cuda_vmm_backend.hpp"
#endif

namespace {

using memplan::Compiler;
using memplan::CompilerOptions;

CompilerOptions bench_options() {
  CompilerOptions o;
  o.reserve_bytes = std::size_t{8} << 30;
  o.pool_reserve_bytes = std::size_t{1} << 30;
  return o;
}

// One step of `pairs` allocate/free pairs of varied sizes (4 KiB + a multiple of 256 B), each
// allocation tagged `tag` (none when empty).
void run_pair_step(Compiler& compiler, std::size_t pairs, std::string_view tag = {}) {
  compiler.begin_step("bench");
  for (std::size_t i = 0; i < pairs; ++i) {
    void* p = compiler.allocate(4096 + 256 * (i % 7), memplan::StreamRef{}, tag);
    benchmark::DoNotOptimize(p);
    compiler.deallocate(p);
  }
  compiler.end_step();
}

// The measured loop: one pair step per iteration, with the backend calls and breaks it made.
void replay_pair_steps(benchmark::State& state, Compiler& compiler,
                       const memplan::arena::HostBackend& backend, std::size_t pairs) {
  const auto calls_before = backend.calls();
  for (auto _ : state) run_pair_step(compiler, pairs);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(pairs));
  state.counters["backend_calls"] = static_cast<double>((backend.calls() - calls_before).total());
  state.counters["breaks"] = static_cast<double>(compiler.stats().breaks);
}

// A step of `pairs` allocate/free pairs of varied sizes, recorded once, then replayed per
// iteration. items_per_second counts pairs: 1e9 / items_per_second is ns per pair, step
// begin/end included (amortised over the pairs).
// range(1) = 1: thread-safe compiler (the default); 0: one thread, no lock.
void BM_ReplayedPair(benchmark::State& state) {
  const auto pairs = static_cast<std::size_t>(state.range(0));
  memplan::arena::HostBackend backend(memplan::arena::HostBackendOptions{.commit = false});
  CompilerOptions options = bench_options();
  options.thread_safe = state.range(1) != 0;
  Compiler compiler(backend, options);
  run_pair_step(compiler, pairs);  // the recording
  replay_pair_steps(state, compiler, backend, pairs);
}
BENCHMARK(BM_ReplayedPair)->ArgsProduct({{64, 1024}, {1, 0}})->ArgNames({"pairs", "locked"});

// BM_ReplayedPair on a branch held by Compiler::trim_to while the window has a hole (another
// branch's 64 MiB, unmapped): each allocation leaves the inline fast path and checks its range is
// mapped (docs/compiler.md), with no backend call. What a StepRunner pays after trim().
void BM_ReplayedPairAfterTrimTo(benchmark::State& state) {
  const auto pairs = static_cast<std::size_t>(state.range(0));
  memplan::arena::HostBackend backend(memplan::arena::HostBackendOptions{.commit = false});
  Compiler compiler(backend, bench_options());
  run_pair_step(compiler, pairs);  // branch 0
  compiler.begin_step("bench");    // branch 1: one 64 MiB buffer
  compiler.deallocate(compiler.allocate(std::size_t{64} << 20));
  compiler.end_step();
  const memplan::BranchRef held{"bench", 0, 0};
  compiler.trim_to({&held, 1});
  replay_pair_steps(state, compiler, backend, pairs);
}
BENCHMARK(BM_ReplayedPairAfterTrimTo)->Arg(64)->Arg(1024)->ArgName("pairs");

// A PyTorch-style loop: each step makes `pairs` temporaries and one 1 MiB output that the caller
// keeps until the next step has ended (`out = model(x)`). range(1) = 1: period-two placement
// (the output planned in the arena, docs/compiler.md); 0: the output served from the pool at its
// learned site. items_per_second counts the temporaries' pairs.
void BM_ReplayedStepKeepingItsOutput(benchmark::State& state) {
  const auto pairs = static_cast<std::size_t>(state.range(0));
  memplan::arena::HostBackend backend(memplan::arena::HostBackendOptions{.commit = false});
  CompilerOptions options = bench_options();
  options.period_two_outputs = state.range(1) != 0;
  Compiler compiler(backend, options);
  void* kept = nullptr;
  auto step = [&] {
    compiler.begin_step("bench");
    void* out = nullptr;
    for (std::size_t i = 0; i < pairs; ++i) {
      void* p = compiler.allocate(4096 + 256 * (i % 7), memplan::StreamRef{});
      benchmark::DoNotOptimize(p);
      if (i == pairs / 2) out = compiler.allocate(std::size_t{1} << 20, memplan::StreamRef{});
      compiler.deallocate(p);
    }
    compiler.end_step();
    if (kept != nullptr) compiler.deallocate(kept);
    kept = out;
  };
  for (int i = 0; i < 4; ++i) step();  // recording, learning the site, the plans of both parities
  const auto calls_before = backend.calls();
  for (auto _ : state) step();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(pairs));
  state.counters["backend_calls"] = static_cast<double>((backend.calls() - calls_before).total());
  state.counters["breaks"] = static_cast<double>(compiler.stats().breaks);
  state.counters["period_two_outputs"] = static_cast<double>(compiler.stats().period_two_outputs);
  compiler.deallocate(kept);
}
BENCHMARK(BM_ReplayedStepKeepingItsOutput)
    ->ArgsProduct({{64, 1024}, {1, 0}})
    ->ArgNames({"pairs", "period_two"});

// BM_ReplayedPair with every allocation tagged (a 20-character tag, as a layer name would be):
// the price of a tag on a replayed allocation. Thread-safe compiler.
void BM_ReplayedTaggedPair(benchmark::State& state) {
  const auto pairs = static_cast<std::size_t>(state.range(0));
  constexpr std::string_view kTag = "blocks.7.attn.qkv_out";
  memplan::arena::HostBackend backend(memplan::arena::HostBackendOptions{.commit = false});
  Compiler compiler(backend, bench_options());
  run_pair_step(compiler, pairs, kTag);  // the recording
  for (auto _ : state) run_pair_step(compiler, pairs, kTag);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(pairs));
  state.counters["breaks"] = static_cast<double>(compiler.stats().breaks);
}
BENCHMARK(BM_ReplayedTaggedPair)->Arg(64)->Arg(1024)->ArgName("pairs");

// Check mode (CompilerOptions::check) per allocate+free pair of a step, after the recording:
// range(0) = 0: poison alone (two fills per pair on the planned memory); 1: poison, no reuse and
// guard gaps (a chunk mapped and released per pair). The sizes of BM_ReplayedPair, default stream.
CompilerOptions check_options(std::int64_t mode) {
  CompilerOptions o = bench_options();
  o.check = {.poison = true, .no_reuse = mode != 0, .guard_gaps = mode != 0};
  return o;
}
void run_check_pairs(benchmark::State& state, memplan::arena::PhysicalBackend& backend) {
  constexpr std::size_t kPairs = 64;
  Compiler compiler(backend, check_options(state.range(0)));
  run_pair_step(compiler, kPairs);
  const auto calls_before = backend.calls();
  for (auto _ : state) run_pair_step(compiler, kPairs);
  compiler.trim();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kPairs);
  const auto calls = backend.calls() - calls_before;
  state.counters["memory_calls_per_pair"] =
      static_cast<double>(calls.memory_calls()) / static_cast<double>(state.iterations() * kPairs);
}
void BM_CheckModePair(benchmark::State& state) {
  memplan::arena::HostBackend backend(memplan::arena::HostBackendOptions{.commit = false});
  run_check_pairs(state, backend);
}
BENCHMARK(BM_CheckModePair)->Arg(0)->Arg(1)->ArgName("fresh_pages");

// Nested lifetimes as in a transformer step: several buffers live at once, freed out of
// allocation order. Time per allocate+free pair.
void BM_ReplayedNestedStep(benchmark::State& state) {
  memplan::arena::HostBackend backend(memplan::arena::HostBackendOptions{.commit = false});
  Compiler compiler(backend, bench_options());
  constexpr int kBlocks = 48;
  const auto run_step = [&] {
    compiler.begin_step("dit");
    void* x = compiler.allocate(1 << 20);
    for (int b = 0; b < kBlocks; ++b) {
      void* qkv = compiler.allocate(3 << 20);
      void* attn = compiler.allocate(1 << 20);
      compiler.deallocate(qkv);
      void* mlp = compiler.allocate(4 << 20);
      compiler.deallocate(attn);
      compiler.deallocate(mlp);
    }
    compiler.deallocate(x);
    compiler.end_step();
  };
  run_step();
  for (auto _ : state) run_step();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * (1 + 3 * kBlocks));
}
BENCHMARK(BM_ReplayedNestedStep);

#if defined(MEMPLAN_HAVE_CUDA_VMM)

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Event {
  std::int64_t when;
  bool is_alloc;
  std::size_t buffer;
  friend bool operator<(const Event& a, const Event& b) {
    return std::tie(a.when, a.is_alloc, a.buffer) < std::tie(b.when, b.is_alloc, b.buffer);
  }
};

// The same allocation sequence served by memplan (VMM arena, replayed; range(0) = mapping chunk
// in MiB) and by a fresh cudaMallocAsync pool; reports both high-water marks. Not a timing:
// Iterations(1).
void BM_StepPeakBytes(benchmark::State& state, const std::string& trace) {
  if (!have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const auto problem = memplan::plan::read_csv_file(std::string(MEMPLAN_TEST_DATA_DIR) + trace);
  std::vector<Event> events;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    if (!problem.buffers[i].occupies()) continue;
    events.push_back({problem.buffers[i].lower, true, i});
    events.push_back({problem.buffers[i].upper, false, i});
  }
  std::sort(events.begin(), events.end());
  std::vector<void*> ptr(problem.buffers.size());
  const auto size_of = [&](std::size_t i) {
    return static_cast<std::size_t>(problem.buffers[i].size);
  };

  for (auto _ : state) {
    memplan::arena::CudaVmmBackend backend;
    CompilerOptions options;
    options.reserve_bytes = std::size_t{40} << 30;
    options.chunk_bytes = static_cast<std::size_t>(state.range(0)) << 20;
    options.pool_reserve_bytes = std::size_t{1} << 30;
    Compiler compiler(backend, options);
    for (int s = 0; s < 3; ++s) {
      compiler.begin_step("trace");
      for (const Event& e : events) {
        if (e.is_alloc)
          ptr[e.buffer] = compiler.allocate(size_of(e.buffer));
        else
          compiler.deallocate(ptr[e.buffer]);
      }
      compiler.end_step();
    }
    const memplan::Stats st = compiler.stats();
    state.counters["memplan_mapped_bytes"] = static_cast<double>(st.mapped_bytes);
    state.counters["memplan_plan_bytes"] = static_cast<double>(st.planned_peak_bytes);
    state.counters["lower_bound_bytes"] = static_cast<double>(st.lower_bound_bytes);
    state.counters["breaks"] = static_cast<double>(st.breaks);

    // cudaMallocAsync on its own pool, released between steps only as the driver decides.
    cudaMemPool_t pool = nullptr;
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
      state.SkipWithError("cudaMemPoolCreate failed");
      return;
    }
    std::uint64_t threshold = ~std::uint64_t{0};  // a warm pool: keep what it reserved
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    bool ok = true;
    for (int s = 0; s < 3 && ok; ++s) {
      for (const Event& e : events) {
        if (e.is_alloc)
          ok &= cudaMallocFromPoolAsync(&ptr[e.buffer], size_of(e.buffer), pool, stream) ==
                cudaSuccess;
        else
          ok &= cudaFreeAsync(ptr[e.buffer], stream) == cudaSuccess;
      }
      ok &= cudaStreamSynchronize(stream) == cudaSuccess;
    }
    std::uint64_t reserved_high = 0, used_high = 0;
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &reserved_high);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &used_high);
    cudaStreamDestroy(stream);
    cudaMemPoolDestroy(pool);
    if (!ok) {
      state.SkipWithError("cudaMallocAsync sequence failed");
      return;
    }
    state.counters["cuda_async_reserved_high_bytes"] = static_cast<double>(reserved_high);
    state.counters["cuda_async_used_high_bytes"] = static_cast<double>(used_high);
    state.counters["memplan_vs_async_reserved"] =
        static_cast<double>(st.mapped_bytes) / static_cast<double>(reserved_high);
  }
}
BENCHMARK_CAPTURE(BM_StepPeakBytes, resnet50, std::string("/traces/somas/resnet50.csv"))
    ->ArgName("chunk_MiB")
    ->Arg(2)
    ->Arg(64)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_StepPeakBytes, tiny_bert, std::string("/traces/somas/tiny_bert.csv"))
    ->ArgName("chunk_MiB")
    ->Arg(2)
    ->Arg(64)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_StepPeakBytes, bert_base, std::string("/traces/somas/bert_base.csv"))
    ->ArgName("chunk_MiB")
    ->Arg(2)
    ->Arg(64)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_StepPeakBytes, iopddl_G1, std::string("/traces/iopddl/G_1.csv"))
    ->ArgName("chunk_MiB")
    ->Arg(2)
    ->Arg(64)
    ->Iterations(1);

// Replayed pairs on the VMM arena: the same fast path, device addresses.
void BM_ReplayedPairVmm(benchmark::State& state) {
  if (!have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  memplan::arena::CudaVmmBackend backend;
  Compiler compiler(backend, bench_options());
  constexpr std::size_t kPairs = 1024;
  run_pair_step(compiler, kPairs);
  const auto calls_before = backend.calls();
  for (auto _ : state) run_pair_step(compiler, kPairs);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kPairs);
  state.counters["backend_calls"] = static_cast<double>((backend.calls() - calls_before).total());
}
BENCHMARK(BM_ReplayedPairVmm);

void BM_CheckModePairVmm(benchmark::State& state) {
  if (!have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  memplan::arena::CudaVmmBackend backend;
  run_check_pairs(state, backend);
}
BENCHMARK(BM_CheckModePairVmm)->Arg(0)->Arg(1)->ArgName("fresh_pages");

#endif

}  // namespace
BENCHMARK_MAIN();
