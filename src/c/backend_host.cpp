// The host library's backend (libmemplan_c_host.so): CPU memory, so the C API and the Python
// package are tested on machines without a GPU. Every device index gets its own host backend.
#include "memplan/arena/host_backend.hpp"
#include "registry.hpp"

namespace memplan::c_api {

std::unique_ptr<arena::PhysicalBackend> make_backend(int /*device*/) {
  return std::make_unique<arena::HostBackend>();
}

const char* backend_name() noexcept { return "host"; }

}  // namespace memplan::c_api
