// The CUDA VMM backend: cuMemAddressReserve / cuMemCreate / cuMemMap / cuMemSetAccess /
// cuMemUnmap / cuMemRelease / cuMemAddressFree, with a CUevent per fence. The driver is reached
// through dlopen("libcuda.so.1") and cuGetProcAddress, so linking memplan never needs libcuda and
// its CPU parts run on machines without a driver; constructing this backend there throws
// CudaError("CUDA driver not available: ..."). Built only when memplan is built with CUDA
// (MEMPLAN_HAVE_CUDA_VMM is then defined); this header needs no CUDA header.
//
// Calls run in the device's primary context (the one the CUDA runtime uses): made current on the
// calling thread when no context is, and made current for the call (then the caller's restored)
// when another device's is. So one backend per device, driven from any thread, keeps its memory
// and its events on its own device. Streams passed to it must belong to its device.
#pragma once

#include <vector>

#include "memplan/arena/backend.hpp"

namespace memplan::arena {

struct CudaVmmOptions {
  int device = 0;
  // Other devices that may read and write this memory (peer copies, NCCL's peer-to-peer paths).
  // Each must be able to reach `device` (cuDeviceCanAccessPeer), else construction throws
  // InvalidArgument naming the pair.
  std::vector<int> peer_devices;
};

// Fences and fills: a StreamRef is a cudaStream_t / CUstream (nullptr: the legacy default stream).
class CudaVmmBackend final : public PhysicalBackend {
 public:
  explicit CudaVmmBackend(CudaVmmOptions options = {});
  ~CudaVmmBackend() override;

  int device() const noexcept { return options_.device; }
  // True when libcuda loads and reports a device: lets callers choose a backend without a throw.
  static bool available() noexcept;

 private:
  std::size_t do_granularity() const noexcept override { return granularity_; }
  std::string_view do_name() const noexcept override { return "cuda-vmm"; }
  void* do_reserve_va(std::size_t bytes) override;
  void do_free_va(void* va, std::size_t bytes) override;
  ChunkHandle do_create_chunk(std::size_t bytes) override;
  void do_release_chunk(ChunkHandle chunk) override;
  void do_map(void* va, std::size_t bytes, ChunkHandle chunk) override;
  void do_set_access(void* va, std::size_t bytes) override;
  void do_unmap(void* va, std::size_t bytes) override;
  FenceHandle do_create_fence(StreamRef stream) override;
  void do_record_fence(FenceHandle fence, StreamRef stream) override;
  void do_wait_fence(FenceHandle fence) override;
  void do_destroy_fence(FenceHandle fence) override;
  bool do_fence_passed(FenceHandle fence) override;
  std::size_t do_free_bytes() override;
  void do_fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) override;

  class ContextScope;  // the device's primary context current for one call

  CudaVmmOptions options_;
  std::size_t granularity_ = 0;
  void* context_ = nullptr;  // the retained primary CUcontext
};

}  // namespace memplan::arena
