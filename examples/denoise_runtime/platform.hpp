// Where the runtime runs: the kernels (Ops), the stream, the physical-memory backend memplan maps
// from, the step capturer, and the baseline allocator the memplan modes are compared with
// (cudaMallocAsync on a warm pool on the GPU, malloc on the CPU).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "memplan/arena/backend.hpp"
#include "memplan/capture/captured_step.hpp"
#include "ops.hpp"
#include "step_memory.hpp"

namespace denoise {

class BaselineMemory : public StepMemory {
 public:
  // Frees a kept buffer (outside any step).
  virtual void free_kept(void* p) = 0;
  // High-water mark of the memory the allocator held for step buffers (a pool's reserved bytes).
  [[nodiscard]] virtual std::uint64_t reserved_high_bytes() const = 0;
  // High-water mark of the bytes actually live.
  [[nodiscard]] virtual std::uint64_t used_high_bytes() const = 0;
  // Allocator calls made so far (allocations and frees).
  [[nodiscard]] virtual std::uint64_t calls() const = 0;
};

class Platform {
 public:
  Platform() = default;
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;
  virtual ~Platform() = default;

  [[nodiscard]] virtual bool gpu() const = 0;
  [[nodiscard]] virtual std::string device_name() const = 0;
  [[nodiscard]] virtual Ops& ops() = 0;
  [[nodiscard]] virtual Stream stream() = 0;
  virtual void synchronize() = 0;
  [[nodiscard]] virtual std::unique_ptr<memplan::arena::PhysicalBackend> make_backend() = 0;
  [[nodiscard]] virtual memplan::capture::StepCapturer& capturer() = 0;
  [[nodiscard]] virtual std::unique_ptr<BaselineMemory> make_baseline() = 0;
};

[[nodiscard]] std::unique_ptr<Platform> make_cpu_platform();
// Throws memplan::CudaError when no GPU is usable; only in builds with CUDA.
[[nodiscard]] std::unique_ptr<Platform> make_gpu_platform();
// True when this build has CUDA and a device is usable.
[[nodiscard]] bool gpu_available();

}  // namespace denoise
