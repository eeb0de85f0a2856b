// The library's RoPE kernel (memplan/attention/rope.hpp) with and without writing sparse
// attention's pooled means (launch_rope / launch_rope_with_means, the means that
// launch_rope_attention and the denoise runtime have it write), for both pairings: what the means
// cost the producer, against what they save attention (its own pass over q and k;
// attention_bench's "means given" columns). [tokens, 24 heads, 128] bf16 q and k, tau's layout.
// Timing: CUDA events around each launch on the bench's own stream (manual time).
//   rope_means_bench --benchmark_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "memplan/attention/rope.hpp"
#include "memplan/cuda_check.hpp"

namespace {

using namespace memplan::attention;

struct Device {
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

void* device_alloc(std::size_t bytes, const char* what) {
  void* p = nullptr;
  memplan::check_cuda(cudaMalloc(&p, bytes), what);
  return p;
}

// state.range(0): tokens; range(1): 1 writes the means; range(2): 1 pairs of halves.
void BM_Rope(benchmark::State& state) {
  std::string why;
  Device* found = device(why);
  if (found == nullptr) {
    state.SkipWithError(("no GPU: " + why).c_str());
    return;
  }
  Device& dev = *found;
  const AttentionShape shape{1, state.range(0), 24, 128};
  const bool means = state.range(1) != 0;
  const RopePairs pairs = state.range(2) != 0 ? RopePairs::Halves : RopePairs::Interleaved;
  AttentionPolicy policy;  // tau: a layout with pooled Q and K, no pooled V
  const std::size_t ws_bytes = workspace_bytes(shape, policy);
  const auto bytes = static_cast<std::size_t>(shape.elements()) * 2;
  void* q = device_alloc(bytes, "cudaMalloc(q)");
  void* k = device_alloc(bytes, "cudaMalloc(k)");
  void* ws = device_alloc(ws_bytes, "cudaMalloc(workspace)");
  std::vector<float> table(static_cast<std::size_t>(shape.tokens) * shape.head_dim);
  for (std::size_t i = 0; i < table.size(); i += 2) {  // angle t * 10000^(-2j/d)
    const auto t = static_cast<double>(i / shape.head_dim);
    const auto j = static_cast<double>(i % shape.head_dim / 2);
    const double angle = t * std::pow(10000.0, -2.0 * j / shape.head_dim);
    table[i] = static_cast<float>(std::cos(angle));
    table[i + 1] = static_cast<float>(std::sin(angle));
  }
  auto* cos_sin = static_cast<float*>(device_alloc(table.size() * 4, "cudaMalloc(table)"));
  memplan::check_cuda(cudaMemcpy(cos_sin, table.data(), table.size() * 4, cudaMemcpyHostToDevice),
                      "cudaMemcpy(table)");
  memplan::check_cuda(cudaMemset(q, 0x3f, bytes), "cudaMemset(q)");  // bf16 0.747
  memplan::check_cuda(cudaMemset(k, 0x3e, bytes), "cudaMemset(k)");  // bf16 0.186
  memplan::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const RopeTable rope{cos_sin, pairs};
  auto launch = [&] {
    if (means) {
      launch_rope_with_means(shape, q, k, rope, policy, ws, ws_bytes, dev.stream);
    } else {
      launch_rope(shape, q, k, rope, dev.stream);
    }
  };
  for (int i = 0; i < 3; ++i) launch();  // warm-up
  for (auto _ : state) {
    memplan::check_cuda(cudaEventRecord(dev.start, dev.stream), "cudaEventRecord");
    launch();
    memplan::check_cuda(cudaEventRecord(dev.stop, dev.stream), "cudaEventRecord");
    memplan::check_cuda(cudaEventSynchronize(dev.stop), "cudaEventSynchronize");
    float ms = 0.0f;
    memplan::check_cuda(cudaEventElapsedTime(&ms, dev.start, dev.stop), "cudaEventElapsedTime");
    state.SetIterationTime(static_cast<double>(ms) * 1e-3);
  }
  // q and k read and written: the bytes a rope pass must move.
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * 2 * 2,
                                              benchmark::Counter::kIsIterationInvariantRate);
  (void)cudaFree(q);
  (void)cudaFree(k);
  (void)cudaFree(ws);
  (void)cudaFree(cos_sin);
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"tokens", "means", "halves"});
  for (const std::int64_t tokens : {32768, 75600, 169000})
    for (const int halves : {0, 1})
      for (const int means : {0, 1, 0, 1}) b->Args({tokens, means, halves});  // each twice
}

BENCHMARK(BM_Rope)->Apply(Shapes)->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.2);

}  // namespace

BENCHMARK_MAIN();
