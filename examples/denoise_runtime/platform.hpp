// Where the runtime runs: the kernels (Ops), the stream, the physical-memory backend memplan maps
// from, the step capturer, and the baseline allocator the memplan modes are compared with
// (cudaMallocAsync on a warm pool on the GPU, malloc on the CPU).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memplan/arena/backend.hpp"
#include "memplan/capture/captured_step.hpp"
#include "memplan/stream/copy_engine.hpp"
#include "ops.hpp"
#include "span_timer.hpp"
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
  // The copy engine of streamed weights: a CUDA copy stream, or a host copy stream.
  [[nodiscard]] virtual std::unique_ptr<memplan::stream::CopyEngine> make_copy_engine() = 0;
  // Device memory in use now beyond what was in use when the platform was made (the context,
  // cuBLAS), measured with cudaMemGetInfo; nullopt on the CPU.
  [[nodiscard]] virtual std::optional<std::uint64_t> device_used_bytes() = 0;
  // Times spans on this platform's stream (see span_timer.hpp).
  [[nodiscard]] virtual std::unique_ptr<SpanTimer> make_span_timer() = 0;
};

[[nodiscard]] std::unique_ptr<Platform> make_cpu_platform();
// On `device`, whose memory `peer_devices` may also read and write (NCCL's peer-to-peer paths;
// those that cannot reach `device` are left out). The calling thread's current device becomes
// `device`: a platform is made, and used, on one thread. Throws memplan::CudaError when no GPU is
// usable; only in builds with CUDA.
[[nodiscard]] std::unique_ptr<Platform> make_gpu_platform(int device = 0,
                                                          std::vector<int> peer_devices = {});
// True when this build has CUDA and a device is usable.
[[nodiscard]] bool gpu_available();
// GPUs this process sees (0 without CUDA).
[[nodiscard]] int gpu_count();

}  // namespace denoise
