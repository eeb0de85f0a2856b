// What only a GPU shows: kernels writing across chunk boundaries, release() while a kernel is
// queued (it must wait: run under compute-sanitizer), growth while a captured CUDA Graph over
// the first chunk keeps replaying, and check mode's stream-ordered fill. Each test skips without
// a GPU.
#include "gpu_kernels.hpp"
#include "memplan/arena/arena.hpp"
#include "memplan/arena/cuda_vmm_backend.hpp"
#include "memplan/error.hpp"
#include "support/gpu.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace memplan::arena::test {
namespace {

#define CUDA_OK(call) \
  ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

std::uint32_t* words_at(const Arena& arena, std::size_t offset) {
  return static_cast<std::uint32_t*>(arena.address(offset));
}

TEST(GpuArena, KernelWritesAcrossChunkBoundaries) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  CudaVmmBackend backend;
  const std::size_t chunk = backend.granularity();
  Arena arena(backend, 8 * chunk, ArenaOptions{chunk, "t"});
  arena.ensure_mapped(4 * chunk);
  const std::size_t words = 4 * chunk / 4;
  launch_iota(words_at(arena, 0), words, 7, nullptr);
  CUDA_OK(cudaGetLastError());
  // A second kernel reads and writes a window that straddles chunks 1|2.
  const std::size_t window = chunk / 4;
  std::uint32_t* mid = words_at(arena, 2 * chunk - window * 2);
  launch_increment(mid, window, nullptr);
  CUDA_OK(cudaDeviceSynchronize());

  std::vector<std::uint32_t> host(words);
  CUDA_OK(cudaMemcpy(host.data(), arena.base(), 4 * chunk, cudaMemcpyDeviceToHost));
  const std::size_t lo = (2 * chunk - window * 2) / 4;
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint32_t expect =
        7 + static_cast<std::uint32_t>(i) + (i >= lo && i < lo + window ? 1u : 0u);
    ASSERT_EQ(host[i], expect) << "word " << i << " (chunk " << i * 4 / chunk << ")";
  }
}

TEST(GpuArena, ReleaseWaitsForAQueuedKernel) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* done = nullptr;
  CUDA_OK(cudaMalloc(&done, sizeof(int)));
  CUDA_OK(cudaMemset(done, 0, sizeof(int)));
  {
    CudaVmmBackend backend;
    const std::size_t chunk = backend.granularity();
    Arena arena(backend, 4 * chunk, ArenaOptions{chunk, "t"});
    arena.add_user(StreamRef{stream});
    arena.ensure_mapped(2 * chunk);
    // ~200 ms of spinning, then stores into both chunks: still queued when release() starts.
    launch_spin_then_fill(words_at(arena, 0), 2 * chunk / 4, 0xC0FFEEu, 200'000'000, done, stream);
    CUDA_OK(cudaGetLastError());
    // Normally still spinning here; under compute-sanitizer launches may already be done.
    const bool queued = cudaStreamQuery(stream) == cudaErrorNotReady;
    RecordProperty("kernel_queued_at_release", queued ? "yes" : "no");
    if (!queued) std::printf("note: the kernel had finished before release() began\n");
    arena.release();
    // release() returned only after the kernel finished: the stream is idle and nothing faulted.
    EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);
    EXPECT_EQ(arena.calls()[Call::WaitFence], 1u);
    EXPECT_EQ(arena.mapped_bytes(), 0u);
    arena.remove_user(StreamRef{stream});
  }
  int flag = 0;
  CUDA_OK(cudaMemcpy(&flag, done, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(flag, 1);
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaFree(done));
  CUDA_OK(cudaStreamDestroy(stream));
}

TEST(GpuArena, CapturedGraphKeepsReplayingWhileTheArenaGrows) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CudaVmmBackend backend;
  const std::size_t chunk = backend.granularity();
  Arena arena(backend, 16 * chunk, ArenaOptions{chunk, "t"});
  arena.add_user(StreamRef{stream});
  arena.ensure_mapped(chunk);
  std::uint32_t* first = words_at(arena, 0);
  const std::size_t words = chunk / 4;
  CUDA_OK(cudaMemsetAsync(first, 0, chunk, stream));

  // The graph increments every word of the first chunk.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  launch_increment(first, words, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

  const int replays = 12;
  for (int step = 0; step < replays; ++step) {
    CUDA_OK(cudaGraphLaunch(exec, stream));
    // Grow while the replay may still run: new chunks land after the first, which does not move.
    arena.ensure_mapped(static_cast<std::size_t>(step + 2) * chunk);
    ASSERT_EQ(static_cast<void*>(first), arena.base());
    // Use the new chunk too, so growth is real memory, not just bookkeeping.
    launch_iota(words_at(arena, static_cast<std::size_t>(step + 1) * chunk), words,
                100u * static_cast<std::uint32_t>(step), stream);
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<std::uint32_t> host(words);
  CUDA_OK(cudaMemcpy(host.data(), first, chunk, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < words; ++i)
    ASSERT_EQ(host[i], static_cast<std::uint32_t>(replays)) << "word " << i;
  CUDA_OK(cudaMemcpy(host.data(), words_at(arena, 5 * chunk), chunk, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < words; ++i)
    ASSERT_EQ(host[i], 400u + static_cast<std::uint32_t>(i)) << "word " << i;
  EXPECT_EQ(arena.mapped_chunks(), static_cast<std::size_t>(replays + 1));

  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  arena.remove_user(StreamRef{stream});
  CUDA_OK(cudaStreamDestroy(stream));
}

// Check mode's backend calls: fill lands in stream order (after a queued kernel's stores), is
// captured as a memset node of a CUDA Graph, and fence_passed answers without waiting. Any device
// memory will do: cudaMalloc's here.
TEST(GpuArena, FillIsStreamOrderedAndCapturableAndFencesAreQueriedWithoutBlocking) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  CudaVmmBackend backend;
  const std::size_t words = std::size_t{1} << 20;
  std::uint32_t* data = nullptr;
  CUDA_OK(cudaMalloc(&data, 4 * words + sizeof(int)));
  auto* done = reinterpret_cast<int*>(data + words);  // the kernel's flag, unused here
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  launch_spin_then_fill(data, words, 0xC0FFEEu, 100'000'000, done, stream);
  CUDA_OK(cudaGetLastError());
  backend.fill(data, 4 * words, 0x7FFD7FFDu, StreamRef{stream});
  const FenceHandle fence = backend.create_fence(StreamRef{stream});
  backend.record_fence(fence, StreamRef{stream});
  const bool busy = !backend.fence_passed(fence);  // the kernel spins for 100 ms
  RecordProperty("fence_busy_while_kernel_spins", busy ? "yes" : "no");
  backend.wait_fence(fence);
  EXPECT_TRUE(backend.fence_passed(fence));
  std::vector<std::uint32_t> host(words);
  CUDA_OK(cudaMemcpy(host.data(), data, 4 * words, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < words; ++i) ASSERT_EQ(host[i], 0x7FFD7FFDu) << "word " << i;

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  backend.fill(data, 2 * words, 0x7FFA7FFAu, StreamRef{stream});
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  launch_iota(data, words, 0, stream);
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(host.data(), data, 4 * words, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < words; ++i) {
    ASSERT_EQ(host[i], i < words / 2 ? 0x7FFA7FFAu : static_cast<std::uint32_t>(i)) << "word " << i;
  }
  EXPECT_EQ(backend.calls()[Call::Fill], 2u);
  EXPECT_GE(backend.calls()[Call::QueryFence], 2u);
  EXPECT_THROW(backend.fill(data, 6, 0u, StreamRef{stream}), InvalidArgument);
  backend.destroy_fence(fence);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(data));
}

// The driver's own out of memory (not a configured limit): ask for more than the card has, in
// 1 GiB chunks. The error names the driver call and the numbers; the arena rolls back and works on.
TEST(GpuArena, DriverOutOfMemoryIsReportedAndRolledBack) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  CudaVmmBackend backend;
  Arena arena(backend, total_bytes + 8 * kGiB, ArenaOptions{kGiB, "t"});
  arena.ensure_mapped(kGiB);
  const CallCounts before = arena.calls();
  try {
    arena.ensure_mapped(total_bytes + 4 * kGiB);
    FAIL() << "mapped more than the device has";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuMemCreate"), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << what;
    for (const char* word : {"requested", "mapped", "reserved", "free"})
      EXPECT_NE(what.find(word), std::string::npos) << what;
  }
  const CallCounts d = arena.calls() - before;
  EXPECT_EQ(d[Call::CreateChunk], d[Call::Map] + 1);  // the last create failed
  EXPECT_EQ(d[Call::ReleaseChunk], d[Call::Map]);     // everything mapped was undone
  EXPECT_EQ(arena.mapped_bytes(), kGiB);
  std::size_t free_after = 0;
  CUDA_OK(cudaMemGetInfo(&free_after, &total_bytes));
  EXPECT_GE(free_after + 2 * kGiB, free_bytes);  // the rollback gave the memory back
  arena.ensure_mapped(2 * kGiB);
  launch_iota(words_at(arena, 0), 2 * kGiB / 4, 3, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  std::uint32_t probe[2] = {};
  CUDA_OK(cudaMemcpy(probe, words_at(arena, 2 * kGiB - 8), 8, cudaMemcpyDeviceToHost));
  EXPECT_EQ(probe[1], 3u + static_cast<std::uint32_t>(2 * kGiB / 4 - 1));
}

}  // namespace
}  // namespace memplan::arena::test
