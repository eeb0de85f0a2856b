// The host backend under a byte limit (arena::LimitingBackend), for the harness: the limit's used
// bytes are the physical bytes the compiler holds, to the byte, and a test can make memory run out
// by taking chunks from the same limit, as another user of the device would.
#pragma once

#include "memplan/arena/limiting_backend.hpp"
#include "step_program.hpp"

namespace memplan::testing {

// Each harness gets its own limit (its own accounts and call counts) over one host backend.
struct LimitedHostMemory : HostMemory {
  using Backend = arena::LimitingBackend;
  static constexpr std::size_t kLimitBytes = std::size_t{64} << 20;
  static std::unique_ptr<Backend> make_backend() {
    static arena::HostBackend host(arena::HostBackendOptions{.commit = false});
    return std::make_unique<Backend>(host, kLimitBytes);
  }
};

using LimitedHarness = BasicHarness<LimitedHostMemory>;

}  // namespace memplan::testing
