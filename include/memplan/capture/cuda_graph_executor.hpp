// The CUDA executor: captures a step's launches with cudaStreamBeginCapture (thread-local mode)
// and cudaStreamEndCapture, instantiates the graph once, and launches it with cudaGraphLaunch.
// Every CUDA call is checked; a failure throws CudaError naming the call and the error, and never
// leaves the stream capturing. Built only when memplan is built with CUDA (MEMPLAN_HAVE_CUDA).
#pragma once

#include "memplan/capture/step_graph.hpp"

namespace memplan::capture {

class CudaGraphExecutor final : public GraphExecutor {
 public:
  // `stream` given to capture() must be a created stream: the legacy default stream cannot capture.
  [[nodiscard]] std::unique_ptr<StepGraph> capture(arena::StreamRef stream,
                                                   std::span<const Launch> launches) override;
  [[nodiscard]] std::string_view name() const noexcept override { return "cuda-graph"; }
};

}  // namespace memplan::capture
