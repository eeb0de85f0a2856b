#include "cuda_driver.hpp"

#include "memplan/error.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <string>

namespace memplan::arena::detail {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

struct Loaded {
  CudaDriver driver;
  std::string error;  // empty when the driver is usable
};

template <class Fn>
void resolve(GetProcAddress get_proc, const char* symbol, Fn& fn) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  const CUresult r = get_proc(symbol, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || p == nullptr)
    throw CudaError(
        fmt::format("CUDA driver not available: cuGetProcAddress(\"{}\") failed (CUresult {}, "
                    "status {}); the driver may be older than CUDA {}.{}",
                    symbol, static_cast<int>(r), static_cast<int>(status), CUDA_VERSION / 1000,
                    CUDA_VERSION % 1000 / 10));
  fn = reinterpret_cast<Fn>(p);
}

Loaded load() {
  Loaded out;
  try {
    // Never closed: the driver stays for the life of the process, as with the runtime.
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = ::dlerror();
      throw CudaError(fmt::format("CUDA driver not available: dlopen(\"libcuda.so.1\") failed: {}",
                                  why != nullptr ? why : "unknown reason"));
    }
    auto get_proc = reinterpret_cast<GetProcAddress>(::dlsym(lib, "cuGetProcAddress_v2"));
    if (get_proc == nullptr)
      throw CudaError(
          "CUDA driver not available: libcuda.so.1 has no cuGetProcAddress_v2 (driver older than "
          "12.0)");
    CudaDriver& d = out.driver;
    resolve(get_proc, "cuGetErrorName", d.GetErrorName);
    resolve(get_proc, "cuInit", d.Init);
    resolve(get_proc, "cuDeviceGet", d.DeviceGet);
    resolve(get_proc, "cuDeviceGetCount", d.DeviceGetCount);
    resolve(get_proc, "cuDeviceCanAccessPeer", d.DeviceCanAccessPeer);
    resolve(get_proc, "cuDevicePrimaryCtxRetain", d.DevicePrimaryCtxRetain);
    resolve(get_proc, "cuDevicePrimaryCtxRelease", d.DevicePrimaryCtxRelease);
    resolve(get_proc, "cuCtxGetCurrent", d.CtxGetCurrent);
    resolve(get_proc, "cuCtxSetCurrent", d.CtxSetCurrent);
    resolve(get_proc, "cuMemGetAllocationGranularity", d.MemGetAllocationGranularity);
    resolve(get_proc, "cuMemAddressReserve", d.MemAddressReserve);
    resolve(get_proc, "cuMemAddressFree", d.MemAddressFree);
    resolve(get_proc, "cuMemCreate", d.MemCreate);
    resolve(get_proc, "cuMemRelease", d.MemRelease);
    resolve(get_proc, "cuMemMap", d.MemMap);
    resolve(get_proc, "cuMemUnmap", d.MemUnmap);
    resolve(get_proc, "cuMemSetAccess", d.MemSetAccess);
    resolve(get_proc, "cuMemGetInfo", d.MemGetInfo);
    resolve(get_proc, "cuEventCreate", d.EventCreate);
    resolve(get_proc, "cuEventRecord", d.EventRecord);
    resolve(get_proc, "cuEventSynchronize", d.EventSynchronize);
    resolve(get_proc, "cuEventDestroy", d.EventDestroy);
    resolve(get_proc, "cuEventQuery", d.EventQuery);
    resolve(get_proc, "cuMemsetD32Async", d.MemsetD32Async);
    const CUresult init = d.Init(0);
    if (init != CUDA_SUCCESS) {
      const char* name = nullptr;
      d.GetErrorName(init, &name);
      throw CudaError(fmt::format("CUDA driver not available: cuInit failed: {} ({})",
                                  name != nullptr ? name : "unknown", static_cast<int>(init)));
    }
  } catch (const CudaError& e) {
    out.error = e.what();
  }
  return out;
}

const Loaded& loaded_driver() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

const CudaDriver& CudaDriver::get() {
  const Loaded& l = loaded_driver();
  if (!l.error.empty()) throw CudaError(l.error);
  return l.driver;
}

bool CudaDriver::loaded() noexcept { return loaded_driver().error.empty(); }

void CudaDriver::check(CUresult result, const char* call) const {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (GetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown CUresult";
  const std::string message =
      fmt::format("{} failed: {} ({})", call, name, static_cast<int>(result));
  if (result == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfMemory(message);
  throw CudaError(message);
}

}  // namespace memplan::arena::detail
