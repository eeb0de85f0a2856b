// CUDA Graph capture of one step: begin capture on the stream (thread-local mode, so another
// thread's unrelated CUDA calls are not disturbed), run the launches, end capture, instantiate
// once. Every call is checked; a throw during capture still ends it, so the stream is usable.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/log.hpp"
#include "memplan/capture/cuda_graph_capturer.hpp"
#include "memplan/cuda_check.hpp"
#include "memplan/error.hpp"

namespace memplan::capture {
namespace {

class CudaCapturedStep final : public CapturedStep {
 public:
  CudaCapturedStep(cudaGraphExec_t exec, std::size_t nodes) : exec_(exec), nodes_(nodes) {}
  ~CudaCapturedStep() override {
    const cudaError_t status = cudaGraphExecDestroy(exec_);
    if (status != cudaSuccess) {
      logger().error("cudaGraphExecDestroy failed: {}", cudaGetErrorString(status));
    }
  }
  void launch(StreamRef stream) override {
    check_cuda(cudaGraphLaunch(exec_, static_cast<cudaStream_t>(stream.native)), "cudaGraphLaunch");
  }
  [[nodiscard]] std::size_t nodes() const noexcept override { return nodes_; }

 private:
  cudaGraphExec_t exec_;
  std::size_t nodes_;
};

// Owns a cudaGraph_t until instantiation is done with it.
struct GraphOwner {
  cudaGraph_t graph = nullptr;
  GraphOwner() = default;
  GraphOwner(const GraphOwner&) = delete;
  GraphOwner& operator=(const GraphOwner&) = delete;
  ~GraphOwner() {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
};

}  // namespace

std::unique_ptr<CapturedStep> CudaGraphCapturer::capture(StreamRef stream,
                                                         std::span<const Launch> launches) {
  if (stream.native == nullptr) {
    throw InvalidArgument(
        "CUDA graph capture: the legacy default stream cannot be captured; "
        "pass a created stream");
  }
  auto* s = static_cast<cudaStream_t>(stream.native);
  check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  GraphOwner owner;
  try {
    for (const Launch& f : launches) f(stream);
  } catch (...) {
    (void)cudaStreamEndCapture(s, &owner.graph);  // leaves the stream usable; the error wins
    (void)cudaGetLastError();
    throw;
  }
  check_cuda(cudaStreamEndCapture(s, &owner.graph), "cudaStreamEndCapture");
  std::size_t nodes = 0;
  check_cuda(cudaGraphGetNodes(owner.graph, nullptr, &nodes), "cudaGraphGetNodes");
  cudaGraphExec_t exec = nullptr;
  check_cuda(cudaGraphInstantiate(&exec, owner.graph, 0), "cudaGraphInstantiate");
  return std::make_unique<CudaCapturedStep>(exec, nodes);
}

}  // namespace memplan::capture
