// A captured step: the launches of one step frozen into a graph that can be launched again on a
// stream, with every argument (pointers included) baked in. StepCapturer makes them: the CUDA one
// captures the launches with cudaStreamBeginCapture/EndCapture and instantiates a CUDA Graph; the
// host one keeps the launch closures and runs them in order, so the capture logic (when to capture,
// when a graph is stale) runs and is tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "memplan/arena/backend.hpp"

namespace memplan::capture {

// One launch of a step: enqueues work on the stream it is given (a cudaStream_t in
// StreamRef::native on CUDA). It must capture its arguments by value: a graph replays the values
// the launch had when it was captured, whatever the host state is later.
using Launch = std::function<void(StreamRef)>;

class CapturedStep {
 public:
  CapturedStep() = default;
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;
  virtual ~CapturedStep() = default;

  // Enqueues the whole captured step on `stream`. Throws CudaError when the launch fails.
  virtual void launch(StreamRef stream) = 0;
  // Work items in the graph (kernel and copy nodes on CUDA, closures on the host).
  [[nodiscard]] virtual std::size_t nodes() const noexcept = 0;
};

class StepCapturer {
 public:
  StepCapturer() = default;
  StepCapturer(const StepCapturer&) = delete;
  StepCapturer& operator=(const StepCapturer&) = delete;
  virtual ~StepCapturer() = default;

  // Captures `launches`, in order, on `stream` into a graph, without running them. On failure
  // nothing is left capturing and the error (CudaError, InvalidArgument) names the call.
  [[nodiscard]] virtual std::unique_ptr<CapturedStep> capture(StreamRef stream,
                                                              std::span<const Launch> launches) = 0;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
};

// The host capturer: a graph is the list of closures, replayed in order on the calling thread.
class HostStepCapturer final : public StepCapturer {
 public:
  [[nodiscard]] std::unique_ptr<CapturedStep> capture(StreamRef stream,
                                                      std::span<const Launch> launches) override;
  [[nodiscard]] std::string_view name() const noexcept override { return "host"; }
};

}  // namespace memplan::capture
