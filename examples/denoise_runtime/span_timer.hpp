// Time spent inside marked spans of a step (the sequence-parallel collectives): CUDA events
// recorded on the stream around each span on the GPU, the host clock around each call on the CPU
// (where ops run at the call, so a collective's span there includes waiting for the slowest
// rank). Spans are marked only in steps that run eagerly: a captured graph holds no timing.
#pragma once

#include "ops.hpp"

namespace denoise {

class SpanTimer {
 public:
  SpanTimer() = default;
  SpanTimer(const SpanTimer&) = delete;
  SpanTimer& operator=(const SpanTimer&) = delete;
  virtual ~SpanTimer() = default;
  virtual void begin(Stream s) = 0;
  virtual void end(Stream s) = 0;
  // Milliseconds inside the spans marked since the last call, once the stream finished them.
  [[nodiscard]] virtual double take_ms() = 0;
};

}  // namespace denoise
