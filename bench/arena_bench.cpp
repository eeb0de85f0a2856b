// Arena and persistent-pool costs: mapping cost per GiB by chunk size (host and CUDA VMM), and
// persistent-pool allocate/free pairs against cudaMallocAsync/cudaFreeAsync on a warm pool.
// GPU benchmarks report an error (SkipWithError) on machines without a GPU.
//
//   arena_bench --benchmark_format=json --benchmark_out=arena_bench.json
#include "memplan/arena/arena.hpp"
#include "memplan/arena/host_backend.hpp"
#include "memplan/arena/persistent_pool.hpp"

#if defined(MEMPLAN_HAVE_CUDA_VMM)
#include "memplan/arena/cuda_vmm_backend.hpp"

#include <cuda_runtime.h>
#endif

#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace memplan::arena;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Maps `total` bytes in chunks of range(0) MiB, then releases; the map is timed, the unmap and
// release are reported as a counter. Both are per GiB.
void map_cost(benchmark::State& state, PhysicalBackend& backend, std::size_t total) {
  const std::size_t chunk = static_cast<std::size_t>(state.range(0)) * kMiB;
  Arena arena(backend, total, ArenaOptions{chunk, "bench"});
  const double gib = static_cast<double>(total) / static_cast<double>(kGiB);
  double unmap_s = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    arena.ensure_mapped(total);
    state.SetIterationTime(seconds_since(t0) / gib);
    const auto t1 = Clock::now();
    arena.release();
    unmap_s += seconds_since(t1);
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["unmap_release_ms_per_GiB"] = 1e3 * unmap_s / n / gib;
  state.counters["chunks"] = static_cast<double>(total / chunk);
}

void BM_MapHost(benchmark::State& state) {
  HostBackend backend;
  map_cost(state, backend, 1 * kGiB);
}
BENCHMARK(BM_MapHost)
    ->Arg(2)
    ->Arg(8)
    ->Arg(32)
    ->Arg(64)
    ->Arg(256)
    ->Arg(1024)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

// One warm pool, allocate/free of one size: the steady state of a pause scope.
void pool_pair(benchmark::State& state, PhysicalBackend& backend) {
  PersistentPool pool(backend, PoolOptions{16 * kGiB, 64 * kMiB, "bench"});
  const auto bytes = static_cast<std::size_t>(state.range(0));
  pool.deallocate(pool.allocate(bytes));  // warm: the chunk is mapped
  for (auto _ : state) {
    void* p = pool.allocate(bytes);
    benchmark::DoNotOptimize(p);
    pool.deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
}

// 1024 live allocations of random sizes; each pair frees a random one and allocates anew.
void pool_churn(benchmark::State& state, PhysicalBackend& backend) {
  PersistentPool pool(backend, PoolOptions{16 * kGiB, 64 * kMiB, "bench"});
  std::mt19937_64 rng(1);
  std::vector<std::size_t> sizes(4096);
  for (auto& s : sizes) s = 256 + rng() % (1 << 20);
  std::vector<void*> live(1024);
  for (std::size_t i = 0; i < live.size(); ++i) live[i] = pool.allocate(sizes[i]);
  std::size_t k = 0;
  for (auto _ : state) {
    const std::size_t slot =
        (k * 7919) & (live.size() - 1);  // sizes are powers of two: no division
    pool.deallocate(live[slot]);
    live[slot] = pool.allocate(sizes[k & (sizes.size() - 1)]);
    benchmark::DoNotOptimize(live[slot]);
    ++k;
  }
  const PoolStats s = pool.stats();
  state.counters["mapped_MiB"] = static_cast<double>(s.mapped_bytes) / kMiB;
  state.counters["live_MiB"] = static_cast<double>(s.allocated_bytes) / kMiB;
  state.counters["blocks"] = static_cast<double>(s.blocks);
  for (void* p : live) pool.deallocate(p);
  state.SetItemsProcessed(state.iterations());
}

void BM_PoolPairHost(benchmark::State& state) {
  HostBackend backend;
  pool_pair(state, backend);
}
BENCHMARK(BM_PoolPairHost)->Arg(256)->Arg(64 << 10)->Arg(4 << 20);

void BM_PoolChurnHost(benchmark::State& state) {
  HostBackend backend;
  pool_churn(state, backend);
}
BENCHMARK(BM_PoolChurnHost);

#if defined(MEMPLAN_HAVE_CUDA_VMM)

bool have_gpu(benchmark::State& state) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0 || !CudaVmmBackend::available()) {
    state.SkipWithError("no CUDA device");
    return false;
  }
  cudaSetDevice(0);
  return true;
}

void BM_MapVmm(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CudaVmmBackend backend;
  map_cost(state, backend, 1 * kGiB);
}
BENCHMARK(BM_MapVmm)
    ->Arg(2)
    ->Arg(8)
    ->Arg(32)
    ->Arg(64)
    ->Arg(256)
    ->Arg(1024)
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

void BM_PoolPairVmm(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CudaVmmBackend backend;
  pool_pair(state, backend);
}
BENCHMARK(BM_PoolPairVmm)->Arg(256)->Arg(64 << 10)->Arg(4 << 20);

void BM_PoolChurnVmm(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CudaVmmBackend backend;
  pool_churn(state, backend);
}
BENCHMARK(BM_PoolChurnVmm);

// The reference: the CUDA stream-ordered allocator with its pool kept warm (release threshold max).
cudaStream_t warm_async_pool() {
  cudaMemPool_t mempool = nullptr;
  cudaDeviceGetDefaultMemPool(&mempool, 0);
  std::uint64_t threshold = UINT64_MAX;
  cudaMemPoolSetAttribute(mempool, cudaMemPoolAttrReleaseThreshold, &threshold);
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  return stream;
}

void BM_CudaMallocAsyncPair(benchmark::State& state) {
  if (!have_gpu(state)) return;
  cudaStream_t stream = warm_async_pool();
  const auto bytes = static_cast<std::size_t>(state.range(0));
  void* p = nullptr;
  cudaMallocAsync(&p, bytes, stream);
  cudaFreeAsync(p, stream);
  cudaStreamSynchronize(stream);
  for (auto _ : state) {
    cudaMallocAsync(&p, bytes, stream);
    benchmark::DoNotOptimize(p);
    cudaFreeAsync(p, stream);
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CudaMallocAsyncPair)->Arg(256)->Arg(64 << 10)->Arg(4 << 20);

void BM_CudaMallocAsyncChurn(benchmark::State& state) {
  if (!have_gpu(state)) return;
  cudaStream_t stream = warm_async_pool();
  std::mt19937_64 rng(1);
  std::vector<std::size_t> sizes(4096);
  for (auto& s : sizes) s = 256 + rng() % (1 << 20);
  std::vector<void*> live(1024);
  for (std::size_t i = 0; i < live.size(); ++i) cudaMallocAsync(&live[i], sizes[i], stream);
  std::size_t k = 0;
  for (auto _ : state) {
    const std::size_t slot =
        (k * 7919) & (live.size() - 1);  // sizes are powers of two: no division
    cudaFreeAsync(live[slot], stream);
    cudaMallocAsync(&live[slot], sizes[k & (sizes.size() - 1)], stream);
    benchmark::DoNotOptimize(live[slot]);
    ++k;
  }
  for (void* p : live) cudaFreeAsync(p, stream);
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CudaMallocAsyncChurn);

#endif  // MEMPLAN_HAVE_CUDA_VMM

}  // namespace
BENCHMARK_MAIN();
