// The CUDA VMM backend. Every driver call goes through check(), which names the call and the
// CUresult; CUDA_ERROR_OUT_OF_MEMORY becomes OutOfMemory so the arena can add its numbers.
#include "memplan/arena/cuda_vmm_backend.hpp"

#include "core/log.hpp"
#include "cuda_driver.hpp"
#include "memplan/error.hpp"

#include <fmt/format.h>

#include <vector>

namespace memplan::arena {
namespace {

using detail::CudaDriver;

CUmemAllocationProp chunk_properties(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  return prop;
}

CUdeviceptr dptr(void* va) { return reinterpret_cast<CUdeviceptr>(va); }

// A peer that is not another existing device, or cannot reach `device`, is refused by name.
void check_peer(const CudaDriver& d, int peer, CUdevice device, int count) {
  if (peer < 0 || peer >= count) {
    throw InvalidArgument(
        fmt::format("cuda-vmm backend: peer device {} does not exist ({} devices)", peer, count));
  }
  CUdevice peer_device = 0;
  d.check(d.DeviceGet(&peer_device, peer), "cuDeviceGet");
  if (peer_device == device) {
    throw InvalidArgument(
        fmt::format("cuda-vmm backend: device {} is listed as its own peer", peer));
  }
  int can = 0;
  d.check(d.DeviceCanAccessPeer(&can, peer_device, device), "cuDeviceCanAccessPeer");
  if (can == 0) {
    throw InvalidArgument(fmt::format(
        "cuda-vmm backend: device {} cannot access device {}'s memory (no peer-to-peer path)", peer,
        static_cast<int>(device)));
  }
}

}  // namespace

// With no context current, the device's stays current after the call (as the runtime would make
// it); with another device's current, that one comes back when the call is done.
class CudaVmmBackend::ContextScope {
 public:
  explicit ContextScope(const CudaVmmBackend& backend) {
    const CudaDriver& d = CudaDriver::get();
    CUcontext current = nullptr;
    d.check(d.CtxGetCurrent(&current), "cuCtxGetCurrent");
    const auto mine = static_cast<CUcontext>(backend.context_);
    if (current == mine) return;
    d.check(d.CtxSetCurrent(mine), "cuCtxSetCurrent");
    if (current != nullptr) restore_ = current;
  }
  ~ContextScope() {
    if (restore_ == nullptr) return;
    const CudaDriver& d = CudaDriver::get();
    if (d.CtxSetCurrent(restore_) != CUDA_SUCCESS) {
      logger().error("cuda-vmm backend: could not make the caller's context current again");
    }
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  CUcontext restore_ = nullptr;
};

bool CudaVmmBackend::available() noexcept {
  if (!CudaDriver::loaded()) return false;
  int count = 0;
  return CudaDriver::get().DeviceGetCount(&count) == CUDA_SUCCESS && count > 0;
}

CudaVmmBackend::CudaVmmBackend(CudaVmmOptions options) : options_(options) {
  const CudaDriver& d = CudaDriver::get();
  int count = 0;
  d.check(d.DeviceGetCount(&count), "cuDeviceGetCount");
  if (options_.device < 0 || options_.device >= count)
    throw InvalidArgument(fmt::format("cuda-vmm backend: device {} does not exist ({} devices)",
                                      options_.device, count));
  CUdevice dev = 0;
  d.check(d.DeviceGet(&dev, options_.device), "cuDeviceGet");
  CUcontext ctx = nullptr;
  d.check(d.DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  context_ = ctx;
  try {
    const ContextScope scope(*this);
    const CUmemAllocationProp prop = chunk_properties(options_.device);
    d.check(d.MemGetAllocationGranularity(&granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity");
    for (const int peer : options_.peer_devices) check_peer(d, peer, dev, count);
  } catch (...) {
    (void)d.DevicePrimaryCtxRelease(dev);  // best effort: the first error is the one to report
    throw;
  }
}

CudaVmmBackend::~CudaVmmBackend() {
  try {
    const CudaDriver& d = CudaDriver::get();
    CUdevice dev = 0;
    d.check(d.DeviceGet(&dev, options_.device), "cuDeviceGet");
    d.check(d.DevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  } catch (const std::exception& e) {
    logger().error("cuda-vmm backend: releasing the primary context of device {}: {}",
                   options_.device, e.what());
  }
}

void* CudaVmmBackend::do_reserve_va(std::size_t bytes) {
  const CudaDriver& d = CudaDriver::get();
  const ContextScope scope(*this);
  CUdeviceptr va = 0;
  d.check(d.MemAddressReserve(&va, bytes, granularity_, 0, 0), "cuMemAddressReserve");
  return reinterpret_cast<void*>(va);
}

void CudaVmmBackend::do_free_va(void* va, std::size_t bytes) {
  const CudaDriver& d = CudaDriver::get();
  d.check(d.MemAddressFree(dptr(va), bytes), "cuMemAddressFree");
}

ChunkHandle CudaVmmBackend::do_create_chunk(std::size_t bytes) {
  const CudaDriver& d = CudaDriver::get();
  const ContextScope scope(*this);
  const CUmemAllocationProp prop = chunk_properties(options_.device);
  CUmemGenericAllocationHandle handle = 0;
  d.check(d.MemCreate(&handle, bytes, &prop, 0), "cuMemCreate");
  return static_cast<ChunkHandle>(handle);
}

void CudaVmmBackend::do_release_chunk(ChunkHandle chunk) {
  const CudaDriver& d = CudaDriver::get();
  d.check(d.MemRelease(static_cast<CUmemGenericAllocationHandle>(chunk)), "cuMemRelease");
}

void CudaVmmBackend::do_map(void* va, std::size_t bytes, ChunkHandle chunk) {
  const CudaDriver& d = CudaDriver::get();
  d.check(d.MemMap(dptr(va), bytes, 0, static_cast<CUmemGenericAllocationHandle>(chunk), 0),
          "cuMemMap");
}

void CudaVmmBackend::do_set_access(void* va, std::size_t bytes) {
  const CudaDriver& d = CudaDriver::get();
  std::vector<CUmemAccessDesc> access(1 + options_.peer_devices.size());
  for (std::size_t i = 0; i < access.size(); ++i) {
    access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[i].location.id = i == 0 ? options_.device : options_.peer_devices[i - 1];
    access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  d.check(d.MemSetAccess(dptr(va), bytes, access.data(), access.size()), "cuMemSetAccess");
}

void CudaVmmBackend::do_unmap(void* va, std::size_t bytes) {
  const CudaDriver& d = CudaDriver::get();
  d.check(d.MemUnmap(dptr(va), bytes), "cuMemUnmap");
}

FenceHandle CudaVmmBackend::do_create_fence(StreamRef) {
  const CudaDriver& d = CudaDriver::get();
  const ContextScope scope(*this);
  CUevent event = nullptr;
  d.check(d.EventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return reinterpret_cast<FenceHandle>(event);
}

void CudaVmmBackend::do_record_fence(FenceHandle fence, StreamRef stream) {
  const CudaDriver& d = CudaDriver::get();
  d.check(d.EventRecord(reinterpret_cast<CUevent>(fence), static_cast<CUstream>(stream.native)),
          "cuEventRecord");
}

void CudaVmmBackend::do_wait_fence(FenceHandle fence) {
  const CudaDriver& d = CudaDriver::get();
  d.check(d.EventSynchronize(reinterpret_cast<CUevent>(fence)), "cuEventSynchronize");
}

void CudaVmmBackend::do_destroy_fence(FenceHandle fence) {
  const CudaDriver& d = CudaDriver::get();
  d.check(d.EventDestroy(reinterpret_cast<CUevent>(fence)), "cuEventDestroy");
}

bool CudaVmmBackend::do_fence_passed(FenceHandle fence) {
  const CudaDriver& d = CudaDriver::get();
  const CUresult status = d.EventQuery(reinterpret_cast<CUevent>(fence));
  if (status == CUDA_ERROR_NOT_READY) return false;
  d.check(status, "cuEventQuery");
  return true;
}

void CudaVmmBackend::do_fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) {
  const CudaDriver& d = CudaDriver::get();
  const ContextScope scope(*this);  // the default stream is the current context's
  d.check(d.MemsetD32Async(dptr(va), pattern, bytes / 4, static_cast<CUstream>(stream.native)),
          "cuMemsetD32Async");
}

std::size_t CudaVmmBackend::do_free_bytes() {
  const CudaDriver& d = CudaDriver::get();
  const ContextScope scope(*this);
  std::size_t free = 0;
  std::size_t total = 0;
  d.check(d.MemGetInfo(&free, &total), "cuMemGetInfo");
  return free;
}

}  // namespace memplan::arena
