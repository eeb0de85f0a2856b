// The backend calls that check their arguments before dispatching (the rest are inline).
#include "memplan/arena/backend.hpp"

#include "memplan/error.hpp"

#include <fmt/format.h>

namespace memplan::arena {

void PhysicalBackend::fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) {
  count(Call::Fill);
  if (reinterpret_cast<std::uintptr_t>(va) % 4 != 0 || bytes % 4 != 0) {
    throw InvalidArgument(
        fmt::format("{} backend: fill of {} B at {} is not whole 32-bit words", name(), bytes, va));
  }
  if (bytes != 0) do_fill(va, bytes, pattern, stream);
}

}  // namespace memplan::arena
