// The CUDA capturer: captures a step's launches with cudaStreamBeginCapture (thread-local mode)
// and cudaStreamEndCapture, instantiates the graph once, and launches it with cudaGraphLaunch.
// Every CUDA call is checked; a failure throws CudaError naming the call and the error, and never
// leaves the stream capturing. Built only when memplan is built with CUDA (MEMPLAN_HAVE_CUDA).
#pragma once

#include "memplan/capture/captured_step.hpp"

namespace memplan::capture {

class CudaGraphCapturer final : public StepCapturer {
 public:
  // `stream` given to capture() must be a created stream: the legacy default stream cannot capture.
  [[nodiscard]] std::unique_ptr<CapturedStep> capture(StreamRef stream,
                                                      std::span<const Launch> launches) override;
  [[nodiscard]] std::string_view name() const noexcept override { return "cuda-graph"; }
};

}  // namespace memplan::capture
