// The per-device registry of the C API: one memory compiler per device, each on its own backend,
// created by memplan_torch_init() or lazily by the first allocation on the device, with the options
// set by memplan_torch_configure(). Looking a device up is one atomic load (the allocation path);
// creating one takes a lock. Compilers are never destroyed: PyTorch frees tensors until the very
// end of the process, after static destructors would have run.
#pragma once

#include <memory>

#include "memplan/arena/backend.hpp"
#include "memplan/error.hpp"
#include "memplan/runtime/compiler.hpp"

namespace memplan::c_api {

// A control call on a device that has no compiler yet.
class NotInitialised : public Error {
 public:
  using Error::Error;
};

// A call this library was built without (attention in the host library).
class Unsupported : public Error {
 public:
  using Error::Error;
};

// The backend of this library: CUDA VMM on the device (backend_cuda.cpp) or host memory
// (backend_host.cpp); one of the two is compiled into each library.
[[nodiscard]] std::unique_ptr<arena::PhysicalBackend> make_backend(int device);
[[nodiscard]] const char* backend_name() noexcept;

// Options for compilers created from now on.
void set_default_options(const CompilerOptions& options);
[[nodiscard]] CompilerOptions default_options();

// Throws InvalidArgument naming the device when it is outside [0, MEMPLAN_TORCH_MAX_DEVICES).
void check_device(int device);
// The device's compiler, or null.
[[nodiscard]] Compiler* find_compiler(int device) noexcept;
// The device's compiler, created if needed.
[[nodiscard]] Compiler& compiler_for(int device);
// The device's compiler; throws NotInitialised naming the device when it has none.
[[nodiscard]] Compiler& existing_compiler(int device);

}  // namespace memplan::c_api
