// The vocabulary every layer shares: byte counts, rounding up to an alignment, and a stream
// handle. One header so that the planner's offsets, the arena's sizes and the capture layer's
// streams are the same types everywhere, with no casts between layers.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>

namespace memplan {

// Signed on purpose: a negative size or offset is an error to report, not a huge number. The
// planner, the allocation tree and the runtime count in Bytes; the arena, whose callers are
// allocators, takes std::size_t like every allocator interface. The runtime meets the arena in one
// place (src/runtime/planned_arena.hpp), with one checked conversion.
using Bytes = std::int64_t;

// `value` rounded up to a multiple of `alignment` (> 0; any value, not only powers of two). The
// caller keeps value + alignment within T: every layer bounds its sizes far below that.
template <std::integral T>
[[nodiscard]] constexpr T align_up(T value, T alignment) noexcept {
  return (value + alignment - 1) / alignment * alignment;
}

// Bytes for people, in binary units with three significant digits: "512 B", "1.36 GiB",
// "-2.00 MiB". Exact counts belong next to it where they matter (JSON carries bytes).
[[nodiscard]] std::string human_bytes(Bytes bytes);

// A stream that may use memplan memory: a cudaStream_t/CUstream on CUDA, an arena::HostStream* on
// the host backend; nullptr is the default stream (the legacy stream on CUDA, "already complete"
// on the host).
struct StreamRef {
  void* native = nullptr;
  friend bool operator==(const StreamRef&, const StreamRef&) = default;
};

}  // namespace memplan
