// How the step program gets memory and launches work: one interface over the allocation modes.
// memplan modes go through the capture layer's StepContext (the compiler, and launches deferred
// when graphs are on); the baseline goes to cudaMallocAsync on a warm pool (GPU) or malloc (CPU)
// and launches at once.
#pragma once

#include <cstddef>
#include <string_view>

#include "memplan/capture/captured_step.hpp"

namespace denoise {

class StepMemory {
 public:
  StepMemory() = default;
  StepMemory(const StepMemory&) = delete;
  StepMemory& operator=(const StepMemory&) = delete;
  virtual ~StepMemory() = default;

  [[nodiscard]] virtual void* alloc(std::size_t bytes, std::string_view tag = {}) = 0;
  virtual void free(void* p) = 0;
  // A buffer that outlives the step (a cache): inside a pause scope when `paused`, else a plain
  // step allocation left live at the step's end (a rogue, for memplan).
  [[nodiscard]] virtual void* alloc_kept(std::size_t bytes, std::string_view tag, bool paused) = 0;
  virtual void depends_on(const void* p) = 0;
  virtual void launch(memplan::capture::Launch f) = 0;
};

}  // namespace denoise
