// Capture safety: selection + attention captured once in a CUDA Graph, replayed after new input
// values are written into the same buffers, must equal an eager launch on those values bit for
// bit (the kernels are deterministic). Covers a sparse and a dense (out-of-window) step, on the
// default path and on each Hopper kernel explicitly (the TMA kernel's tensor maps are kernel
// parameters, captured by value).
#include <gtest/gtest.h>

#include "gpu_case.hpp"
#include "kernel_choice.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

class Stream {
 public:
  Stream() { TEST_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

void replay_equals_eager(const AttentionPolicy& policy, double step_fraction) {
  const AttentionShape shape{2, 1000, 3, 128};
  GpuCase c(shape, 1.0f);
  GpuCase fresh(shape, 1.0f);  // the second set of input values
  SCOPED_TRACE(testing::Message() << "seeds " << c.seed << ", " << fresh.seed);
  DeviceBuffer workspace(workspace_bytes(shape, policy));
  Stream stream;

  cudaGraph_t graph = nullptr;
  TEST_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  launch_attention(shape, c.tensors(), policy, step_fraction, workspace.get(), workspace.bytes(),
                   stream.get());
  TEST_CUDA(cudaStreamEndCapture(stream.get(), &graph));
  cudaGraphExec_t exec = nullptr;
  TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));

  // Eager on the fresh values, in fresh's own buffers.
  launch_attention(shape, fresh.tensors(), policy, step_fraction, workspace.get(),
                   workspace.bytes(), stream.get());
  TEST_CUDA(cudaStreamSynchronize(stream.get()));
  const auto eager = fresh.output();

  // Replay on the same values copied into the captured buffers.
  c.dq->upload(fresh.q.bits);
  c.dk->upload(fresh.k.bits);
  c.dv->upload(fresh.v.bits);
  c.dout->poison();
  // The uploads and the poison run on the legacy stream, which `stream` (non-blocking) does not
  // wait for.
  TEST_CUDA(cudaDeviceSynchronize());
  TEST_CUDA(cudaGraphLaunch(exec, stream.get()));
  TEST_CUDA(cudaStreamSynchronize(stream.get()));
  const auto replayed = c.output();
  TEST_CUDA(cudaGraphExecDestroy(exec));
  TEST_CUDA(cudaGraphDestroy(graph));

  ASSERT_EQ(replayed.size(), eager.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < eager.size(); ++i) {
    differing += !(replayed[i] == eager[i]);  // NaN (unwritten) counts as differing
  }
  EXPECT_EQ(differing, 0u);
}

TEST(AttentionGraph, SparseReplayEqualsEager) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  AttentionPolicy policy;
  policy.mode = SparsityMode::Tau;
  policy.tau = 1.0f;
  policy.sink_keys = {0, 1};
  replay_equals_eager(policy, 0.5);
}

TEST(AttentionGraph, CoarseReplayEqualsEager) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  AttentionPolicy policy;
  policy.mode = SparsityMode::Coarse;
  policy.keep_percent = 15.0f;
  replay_equals_eager(policy, 0.5);
}

TEST(AttentionGraph, DenseStepReplayEqualsEager) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  AttentionPolicy policy;  // tau, but step 0.1 is before the default window: dense
  replay_equals_eager(policy, 0.1);
}

// Each Hopper kernel asked for explicitly (the default path above is the TMA kernel on a Hopper
// device), sparse rows, dense, and one list per pair of query blocks (on the TMA kernel a ring
// shared by the CTA's two blocks over a list; tau's pair lists visited rotated).
void topk_replay_equals_eager_on(const char* path) {
  const ScopedKernel kernel(path);
  AttentionPolicy policy;
  policy.mode = SparsityMode::TopK;
  policy.keep_percent = 20.0f;
  replay_equals_eager(policy, 0.5);  // sparse rows
  replay_equals_eager(policy, 0.1);  // dense: before the window
  policy.query_blocks_per_list = 2;
  replay_equals_eager(policy, 0.5);
  policy.mode = SparsityMode::Tau;  // pair lists visited rotated on the TMA kernel
  const ScopedRotation rotation("always");
  replay_equals_eager(policy, 0.5);
}

TEST(AttentionGraph, TmaKernelReplayEqualsEager) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  topk_replay_equals_eager_on("tma");
}

TEST(AttentionGraph, WgmmaKernelReplayEqualsEager) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  topk_replay_equals_eager_on("wgmma");
}

}  // namespace
}  // namespace memplan::attention::test
