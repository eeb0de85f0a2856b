// The planned arena in the runtime's units. The runtime counts in Bytes (signed, as the planner
// and the allocation tree do); the arena, an allocator's interface, in std::size_t. This class is
// the one place where the two meet: offsets and sizes cross here as Bytes, and to_size() is the
// one conversion, checked (never negative), so the rest of the runtime has no casts.
#pragma once

#include <cassert>
#include <cstddef>
#include <span>

#include "memplan/arena/arena.hpp"
#include "memplan/types.hpp"

namespace memplan {

// Bytes handed to an allocator interface (the arena, the pool): never negative in the runtime.
[[nodiscard]] inline std::size_t to_size(Bytes bytes) noexcept {
  assert(bytes >= 0);
  return static_cast<std::size_t>(bytes);
}
// A request's size as Bytes. One past 2^63 wraps to a negative number, which matches no recorded
// key and fails every size check, so the hot path needs no test for it.
[[nodiscard]] constexpr Bytes to_bytes(std::size_t bytes) noexcept {
  return static_cast<Bytes>(bytes);
}

class PlannedArena {
 public:
  PlannedArena(arena::PhysicalBackend& backend, std::size_t reserve_bytes,
               arena::ArenaOptions options)
      : arena_(backend, reserve_bytes, std::move(options)) {}

  // The byte at `offset` from the base (the replay's hot path: no check beyond the arena's).
  [[nodiscard]] void* address(Bytes offset) const noexcept {
    return arena_.address(static_cast<std::size_t>(offset));
  }
  // A pointer's offset from the base.
  [[nodiscard]] Bytes offset_of(const void* p) const noexcept {
    return static_cast<const std::byte*>(p) - static_cast<const std::byte*>(arena_.base());
  }
  void ensure_mapped(Bytes offset, Bytes size) {
    arena_.ensure_mapped(to_size(offset), to_size(size));
  }
  [[nodiscard]] static arena::ByteRange range(Bytes offset, Bytes size) noexcept {
    return {to_size(offset), to_size(size)};
  }
  [[nodiscard]] Bytes reserved() const noexcept { return to_bytes(arena_.reserved_bytes()); }
  [[nodiscard]] Bytes chunk() const noexcept { return to_bytes(arena_.chunk_bytes()); }

  // Everything else in the arena's own units (streams, mapping state, reports).
  [[nodiscard]] arena::Arena& raw() noexcept { return arena_; }
  [[nodiscard]] const arena::Arena& raw() const noexcept { return arena_; }

 private:
  arena::Arena arena_;
};

}  // namespace memplan
