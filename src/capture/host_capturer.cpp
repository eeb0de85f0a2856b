// The host "graph": the step's launch closures kept in order and run again on each launch. It has
// the semantics of a CUDA Graph that matter to the runner (capture does not run anything; a launch
// replays the captured arguments), so the capture policy is tested on any machine.
#include <utility>
#include <vector>

#include "memplan/capture/captured_step.hpp"

namespace memplan::capture {
namespace {

class HostCapturedStep final : public CapturedStep {
 public:
  explicit HostCapturedStep(std::vector<Launch> launches) : launches_(std::move(launches)) {}
  void launch(StreamRef stream) override {
    for (const Launch& f : launches_) f(stream);
  }
  [[nodiscard]] std::size_t nodes() const noexcept override { return launches_.size(); }

 private:
  std::vector<Launch> launches_;
};

}  // namespace

std::unique_ptr<CapturedStep> HostStepCapturer::capture(StreamRef /*stream*/,
                                                        std::span<const Launch> launches) {
  return std::make_unique<HostCapturedStep>(std::vector<Launch>(launches.begin(), launches.end()));
}

}  // namespace memplan::capture
