// Call counters of a physical-memory backend. Counting is part of the backend contract: every
// call that reaches the driver or the OS is counted, so a test can assert that replay made none.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memplan::arena {

// One entry per backend entry point. The first seven are memory calls (they change what is mapped
// or reserved); the fence calls only order host and streams; query_free only reads; fill writes
// bytes (check mode's poison), never mappings.
enum class Call : std::uint8_t {
  ReserveVa,
  FreeVa,
  CreateChunk,
  ReleaseChunk,
  Map,
  SetAccess,
  Unmap,
  CreateFence,
  RecordFence,
  WaitFence,
  DestroyFence,
  QueryFree,
  Fill,
  QueryFence,
};
inline constexpr std::size_t kCallKinds = 14;

std::string_view to_string(Call call) noexcept;

// A snapshot of counts, comparable and subtractable (counts after - counts before).
struct CallCounts {
  std::array<std::uint64_t, kCallKinds> n{};

  std::uint64_t operator[](Call call) const noexcept { return n[static_cast<std::size_t>(call)]; }
  std::uint64_t& operator[](Call call) noexcept { return n[static_cast<std::size_t>(call)]; }

  // Calls that reserve, create, map, protect, unmap, release or free: what "zero allocator calls
  // on replay" counts.
  std::uint64_t memory_calls() const noexcept {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i <= static_cast<std::size_t>(Call::Unmap); ++i) sum += n[i];
    return sum;
  }
  std::uint64_t total() const noexcept {
    std::uint64_t sum = 0;
    for (std::uint64_t v : n) sum += v;
    return sum;
  }

  friend bool operator==(const CallCounts&, const CallCounts&) = default;
  friend CallCounts operator-(CallCounts a, const CallCounts& b) noexcept {
    for (std::size_t i = 0; i < kCallKinds; ++i) a.n[i] -= b.n[i];
    return a;
  }
};

}  // namespace memplan::arena
