// The denoise runtime's rope kernel with and without writing sparse attention's pooled means
// (PooledMeans::InWorkspace, memplan/attention/pooled_means.cuh): what the means cost the
// producer, against what they save attention (its own pass over q and k; attention_bench's
// "means given" columns). [tokens, 24 heads, 128] bf16 q and k, the runtime's sparse policy.
// Timing: CUDA events around each launch on the bench's own stream (manual time).
//   rope_means_bench --benchmark_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "memplan/cuda_check.hpp"
#include "ops.hpp"
#include "platform.hpp"

namespace {

struct Device {
  std::unique_ptr<denoise::Platform> platform = denoise::make_gpu_platform();
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  Device() {
    memplan::check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    memplan::check_cuda(cudaEventCreate(&start), "cudaEventCreate");
    memplan::check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~Device() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
    (void)cudaStreamDestroy(stream);
  }
};

// One per process; null (and the reason kept) without a usable GPU.
Device* device(std::string& why) {
  static std::string error;
  static Device* d = []() -> Device* {
    try {
      return new Device();  // never freed: teardown at exit would outlive the CUDA context
    } catch (const std::exception& e) {
      error = e.what();
      return nullptr;
    }
  }();
  why = error;
  return d;
}

// state.range(0): tokens; state.range(1): 1 writes the means.
void BM_Rope(benchmark::State& state) {
  std::string why;
  Device* found = device(why);
  if (found == nullptr) {
    state.SkipWithError(("no GPU: " + why).c_str());
    return;
  }
  Device& dev = *found;
  denoise::Ops& ops = dev.platform->ops();
  const denoise::Dims dims{state.range(0), 24, 128};
  const bool means = state.range(1) != 0;
  const auto elements = static_cast<std::size_t>(dims.tokens) * dims.hidden();
  const std::size_t ws_bytes = ops.attention_workspace(dims, denoise::Attn::Sparse);
  void* q = nullptr;
  void* k = nullptr;
  void* ws = nullptr;
  float* table = nullptr;
  memplan::check_cuda(cudaMalloc(&q, elements * 2), "cudaMalloc(q)");
  memplan::check_cuda(cudaMalloc(&k, elements * 2), "cudaMalloc(k)");
  memplan::check_cuda(cudaMalloc(&ws, ws_bytes), "cudaMalloc(workspace)");
  memplan::check_cuda(
      cudaMalloc(reinterpret_cast<void**>(&table), static_cast<std::size_t>(dims.tokens) * 128 * 4),
      "cudaMalloc(table)");
  const denoise::Stream s{dev.stream};
  ops.fill(q, static_cast<std::int64_t>(elements), 1, 1.0f, true, s);
  ops.fill(k, static_cast<std::int64_t>(elements), 2, 1.0f, true, s);
  ops.rope_table(table, dims.tokens, dims.head_dim, s);
  for (int i = 0; i < 3; ++i)  // warm-up
    ops.rope(q, k, table, dims, means ? ws : nullptr, denoise::Attn::Sparse, s);
  for (auto _ : state) {
    memplan::check_cuda(cudaEventRecord(dev.start, dev.stream), "cudaEventRecord");
    ops.rope(q, k, table, dims, means ? ws : nullptr, denoise::Attn::Sparse, s);
    memplan::check_cuda(cudaEventRecord(dev.stop, dev.stream), "cudaEventRecord");
    memplan::check_cuda(cudaEventSynchronize(dev.stop), "cudaEventSynchronize");
    float ms = 0.0f;
    memplan::check_cuda(cudaEventElapsedTime(&ms, dev.start, dev.stop), "cudaEventElapsedTime");
    state.SetIterationTime(static_cast<double>(ms) * 1e-3);
  }
  // q and k read and written: the bytes a rope pass must move.
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(elements) * 2 * 2 * 2,
                                              benchmark::Counter::kIsIterationInvariantRate);
  (void)cudaFree(q);
  (void)cudaFree(k);
  (void)cudaFree(ws);
  (void)cudaFree(table);
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"tokens", "means"});
  for (const std::int64_t tokens : {32768, 75600, 169000})
    for (const int means : {0, 1, 0, 1}) b->Args({tokens, means});  // each twice, alternated
}

BENCHMARK(BM_Rope)->Apply(Shapes)->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.3);

}  // namespace

BENCHMARK_MAIN();
