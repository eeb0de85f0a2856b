// The per-device registry (registry.hpp): a fixed table of atomic pointers, filled under a lock.
#include "registry.hpp"

#include <array>
#include <atomic>
#include <mutex>

#include "core/log.hpp"
#include "memplan/c/memplan_torch.h"

#include <fmt/format.h>

namespace memplan::c_api {
namespace {

// The backend first: the compiler must be destroyed before it (it never is, see registry.hpp).
struct DeviceEntry {
  std::unique_ptr<arena::PhysicalBackend> backend;
  std::unique_ptr<Compiler> compiler;
};

struct Registry {
  std::mutex mutex;  // creation and the options
  CompilerOptions options;
  std::array<std::atomic<DeviceEntry*>, MEMPLAN_TORCH_MAX_DEVICES> devices{};
};

Registry& registry() {
  static auto* r = new Registry;  // never destroyed, as the compilers it holds
  return *r;
}

}  // namespace

void set_default_options(const CompilerOptions& options) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.options = options;
}

CompilerOptions default_options() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.options;
}

void check_device(int device) {
  if (device < 0 || device >= MEMPLAN_TORCH_MAX_DEVICES) {
    throw InvalidArgument(fmt::format("device {} is out of range: devices are 0..{}", device,
                                      MEMPLAN_TORCH_MAX_DEVICES - 1));
  }
}

Compiler* find_compiler(int device) noexcept {
  if (device < 0 || device >= MEMPLAN_TORCH_MAX_DEVICES) return nullptr;
  const DeviceEntry* entry = registry().devices[device].load(std::memory_order_acquire);
  return entry == nullptr ? nullptr : entry->compiler.get();
}

Compiler& compiler_for(int device) {
  if (Compiler* compiler = find_compiler(device)) [[likely]]
    return *compiler;
  check_device(device);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  auto& slot = r.devices[device];
  if (DeviceEntry* entry = slot.load(std::memory_order_acquire)) return *entry->compiler;
  auto entry = std::make_unique<DeviceEntry>();
  entry->backend = make_backend(device);
  entry->compiler = std::make_unique<Compiler>(*entry->backend, r.options);
  logger().info("C API: compiler for device {} on the {} backend", device, backend_name());
  slot.store(entry.get(), std::memory_order_release);
  return *entry.release()->compiler;
}

Compiler& existing_compiler(int device) {
  if (Compiler* compiler = find_compiler(device)) [[likely]]
    return *compiler;
  check_device(device);
  throw NotInitialised(fmt::format(
      "device {} has no memplan compiler (call memplan_torch_init({}) or allocate on it first)",
      device, device));
}

}  // namespace memplan::c_api
