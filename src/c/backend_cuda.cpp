// The CUDA library's backend (libmemplan_torch.so): CUDA VMM on the device of that ordinal.
#include "memplan/arena/cuda_vmm_backend.hpp"
#include "registry.hpp"

namespace memplan::c_api {

std::unique_ptr<arena::PhysicalBackend> make_backend(int device) {
  return std::make_unique<arena::CudaVmmBackend>(arena::CudaVmmOptions{.device = device});
}

const char* backend_name() noexcept { return "cuda-vmm"; }

}  // namespace memplan::c_api
