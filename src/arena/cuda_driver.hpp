// The CUDA driver API as a table of function pointers, loaded once with dlopen("libcuda.so.1") and
// cuGetProcAddress. Nothing links libcuda: on a machine without a driver, get() throws
// CudaError("CUDA driver not available: ...") and the rest of memplan is unaffected.
#pragma once

#include <cuda.h>

namespace memplan::arena::detail {

struct CudaDriver {
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceCanAccessPeer) DeviceCanAccessPeer = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease = nullptr;
  decltype(&::cuCtxGetCurrent) CtxGetCurrent = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuMemGetAllocationGranularity) MemGetAllocationGranularity = nullptr;
  decltype(&::cuMemAddressReserve) MemAddressReserve = nullptr;
  decltype(&::cuMemAddressFree) MemAddressFree = nullptr;
  decltype(&::cuMemCreate) MemCreate = nullptr;
  decltype(&::cuMemRelease) MemRelease = nullptr;
  decltype(&::cuMemMap) MemMap = nullptr;
  decltype(&::cuMemUnmap) MemUnmap = nullptr;
  decltype(&::cuMemSetAccess) MemSetAccess = nullptr;
  decltype(&::cuMemGetInfo) MemGetInfo = nullptr;
  decltype(&::cuEventCreate) EventCreate = nullptr;
  decltype(&::cuEventRecord) EventRecord = nullptr;
  decltype(&::cuEventSynchronize) EventSynchronize = nullptr;
  decltype(&::cuEventDestroy) EventDestroy = nullptr;
  decltype(&::cuEventQuery) EventQuery = nullptr;
  decltype(&::cuMemsetD32Async) MemsetD32Async = nullptr;

  // The loaded driver, cuInit done; throws CudaError when there is none (every call, same text).
  static const CudaDriver& get();
  // Whether get() would succeed; never throws.
  static bool loaded() noexcept;

  // Throws CudaError (OutOfMemory for CUDA_ERROR_OUT_OF_MEMORY) naming `call` and the CUresult.
  void check(CUresult result, const char* call) const;
};

}  // namespace memplan::arena::detail
