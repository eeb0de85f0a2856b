// CUDA Graph capture through the step runner on the H200 (skips without a GPU): graphs are
// captured once a branch is stable, launched with no driver memory call, dropped when a break
// changes the branch, and keep working while the arena grows under them for another branch.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "gpu_capture_kernels.hpp"
#include "memplan/arena/cuda_vmm_backend.hpp"
#include "memplan/capture/cuda_graph_capturer.hpp"
#include "memplan/capture/step_runner.hpp"
#include "support/gpu.hpp"

namespace memplan::capture {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

struct GpuCapture : ::testing::Test {
  void SetUp() override {
    MEMPLAN_SKIP_WITHOUT_GPU();
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&result, kInts * sizeof(int)));
    backend = std::make_unique<arena::CudaVmmBackend>();
    CompilerOptions o;
    o.reserve_bytes = std::size_t{8} << 30;
    o.chunk_bytes = std::size_t{2} << 20;
    o.pool_reserve_bytes = std::size_t{1} << 30;
    o.pool_chunk_bytes = std::size_t{2} << 20;
    o.plan_budget = std::chrono::milliseconds(20);
    compiler = std::make_unique<Compiler>(*backend, o);
  }
  void TearDown() override {
    compiler.reset();
    backend.reset();
    if (result != nullptr) cudaFree(result);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  // a = iota(base); [workspace of extra_bytes]; result = a + 1.
  StepRunner::Body body(int base, std::size_t extra_bytes = 0) {
    return [this, base, extra_bytes](StepContext& ctx) {
      auto* a = static_cast<int*>(ctx.allocate(kInts * sizeof(int)));
      void* ws = extra_bytes != 0 ? ctx.allocate(extra_bytes, "workspace") : nullptr;
      auto* b = static_cast<int*>(ctx.allocate(kInts * sizeof(int)));
      int* out = result;
      ctx.depends_on(out);
      ctx.launch([a, base](StreamRef s) {
        testing::launch_iota(a, kInts, base, static_cast<cudaStream_t>(s.native));
      });
      if (ws != nullptr) {
        auto* w = static_cast<int*>(ws);
        ctx.launch([w](StreamRef s) {  // touch the workspace's last int too
          testing::launch_iota(w, 1, 0, static_cast<cudaStream_t>(s.native));
        });
      }
      ctx.launch([a, b](StreamRef s) {
        testing::launch_add(b, a, kInts, 1, static_cast<cudaStream_t>(s.native));
      });
      ctx.launch([b, out](StreamRef s) {
        testing::launch_add(out, b, kInts, 0, static_cast<cudaStream_t>(s.native));
      });
      ctx.deallocate(a);
      if (ws != nullptr) ctx.deallocate(ws);
      ctx.deallocate(b);
    };
  }

  void expect_result(int base) {
    std::vector<int> host(kInts);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(host.data(), result, kInts * sizeof(int), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int i = 0; i < kInts; i += 997) ASSERT_EQ(host[i], base + i + 1) << "at " << i;
    ASSERT_EQ(host[kInts - 1], base + kInts);
  }

  StreamRef ref() const { return StreamRef{stream}; }

  static constexpr int kInts = 1 << 20;
  cudaStream_t stream = nullptr;
  int* result = nullptr;
  std::unique_ptr<arena::CudaVmmBackend> backend;
  std::unique_ptr<Compiler> compiler;
  CudaGraphCapturer capturer;
};

TEST_F(GpuCapture, StableBranchIsCapturedAndLaunchedWithoutDriverMemoryCalls) {
  StepRunner runner(*compiler, capturer, ref(), {.capture_after = 2});
  EXPECT_EQ(runner.run("denoise", "k", body(3)), StepPath::Eager);
  EXPECT_EQ(runner.run("denoise", "k", body(3)), StepPath::Eager);
  EXPECT_EQ(runner.run("denoise", "k", body(3)), StepPath::Captured);
  expect_result(3);
  CUDA_OK(cudaMemset(result, 0, kInts * sizeof(int)));
  const auto calls = backend->calls();
  for (int s = 0; s < 10; ++s) EXPECT_EQ(runner.run("denoise", "k", body(3)), StepPath::Graph);
  expect_result(3);
  EXPECT_EQ((backend->calls() - calls).memory_calls(), 0u);
  EXPECT_EQ(runner.stats().captures, 1u);
  EXPECT_EQ(runner.stats().graph_launches, 11u);
}

TEST_F(GpuCapture, ABreakInvalidatesTheGraphAndTheNewBranchIsCaptured) {
  StepRunner runner(*compiler, capturer, ref(), {.capture_after = 1});
  for (int s = 0; s < 3; ++s) runner.run("denoise", "k", body(5));
  ASSERT_EQ(runner.stats().live_graphs, 1u);
  // The same key now needs a workspace between its buffers: a break, new offsets.
  EXPECT_EQ(runner.run("denoise", "k", body(6, 4 << 20)), StepPath::Eager);
  expect_result(6);
  EXPECT_EQ(runner.stats().invalidations, 1u);
  EXPECT_EQ(compiler->stats().breaks, 1u);
  EXPECT_EQ(runner.run("denoise", "k", body(6, 4 << 20)), StepPath::Captured);
  EXPECT_EQ(runner.run("denoise", "k", body(6, 4 << 20)), StepPath::Graph);
  expect_result(6);
}

TEST_F(GpuCapture, AGraphKeepsReplayingWhileTheArenaGrowsForAnotherBranch) {
  StepRunner runner(*compiler, capturer, ref(), {.capture_after = 1});
  for (int s = 0; s < 3; ++s) runner.run("denoise", "small", body(1));
  ASSERT_EQ(runner.stats().live_graphs, 1u);
  const auto mapped = compiler->stats().mapped_bytes;
  for (int grow = 1; grow <= 4; ++grow) {
    // A larger branch each time: the arena maps more chunks at the same base.
    runner.run("denoise", "big" + std::to_string(grow), body(2, std::size_t(grow) << 26));
    expect_result(2);
    EXPECT_EQ(runner.run("denoise", "small", body(1)), StepPath::Graph);
    expect_result(1);
  }
  EXPECT_GT(compiler->stats().mapped_bytes, mapped + (std::size_t{3} << 26));
  EXPECT_EQ(runner.stats().invalidations, 0u);
}

TEST_F(GpuCapture, TheDefaultStreamIsRejectedBeforeAnythingIsCaptured) {
  std::vector<Launch> none;
  EXPECT_THROW((void)capturer.capture(StreamRef{}, none), InvalidArgument);
}

}  // namespace
}  // namespace memplan::capture
