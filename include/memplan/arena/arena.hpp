// The arena: one range of virtual addresses reserved once, backed by physical chunks mapped as a
// prefix of it. Growth maps more chunks after the last one, so base() never moves and pointers
// (and CUDA Graphs captured over them) stay valid. trim() and release() unmap chunks but keep the
// addresses; ensure_mapped() maps fresh chunks back at the same place (their old bytes are gone).
//
// Unmapping is stream-safe: it first waits for the streams registered with add_user(), one fence
// each. ensure_mapped() on an already mapped size makes no backend call at all.
//
// Thread safety: none inside; an arena belongs to one owner (the runtime's step thread) and is
// externally synchronised. The backend it uses may be shared.
#pragma once

#include "memplan/arena/backend.hpp"
#include "memplan/arena/stream_users.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memplan::arena {

inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kGiB = std::size_t{1} << 30;
// More address space than any device has: a larger request is a bug (a negative size, say).
inline constexpr std::size_t kMaxReserveBytes = std::size_t{1} << 48;

struct ArenaOptions {
  // Physical memory is mapped in chunks of this size (rounded up to the backend's granularity).
  // Large chunks map much faster per byte (see docs/arena.md); 64 MiB is the default.
  std::size_t chunk_bytes = 64 * kMiB;
  std::string name = "arena";  // in logs and errors
};

class Arena {
 public:
  explicit Arena(PhysicalBackend& backend, ArenaOptions options = {});
  // Constructs and reserves in one go.
  Arena(PhysicalBackend& backend, std::size_t reserve_bytes, ArenaOptions options = {});
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  // Waits for the users, unmaps and releases every chunk, frees the addresses. Errors are logged.
  ~Arena();

  // Reserves `bytes` (rounded up to whole chunks) of address space, once.
  void reserve(std::size_t bytes);

  // Maps chunks until at least `bytes` from base() are mapped. On failure nothing new stays mapped
  // and OutOfMemory names requested, mapped, reserved and free bytes.
  void ensure_mapped(std::size_t bytes) {
    if (bytes > mapped_) grow(bytes);
  }
  // Unmaps (after waiting for the users) every chunk wholly above `keep_bytes`.
  void trim(std::size_t keep_bytes);
  // Unmaps all physical memory; the addresses stay reserved.
  void release() { trim(0); }

  // Streams whose queued work may touch this arena; unmapping waits for them.
  void add_user(StreamRef stream) { users_.add(stream); }
  void remove_user(StreamRef stream) { users_.remove(stream); }
  const StreamUsers& users() const noexcept { return users_; }

  void* base() const noexcept { return base_; }
  void* address(std::size_t offset) const noexcept { return static_cast<std::byte*>(base_) + offset; }
  bool contains(const void* p) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const auto b = reinterpret_cast<std::uintptr_t>(base_);
    return a >= b && a - b < reserved_;
  }
  std::size_t mapped_bytes() const noexcept { return mapped_; }
  std::size_t reserved_bytes() const noexcept { return reserved_; }
  std::size_t chunk_bytes() const noexcept { return chunk_; }
  std::size_t mapped_chunks() const noexcept { return chunks_.size(); }
  const std::string& name() const noexcept { return options_.name; }

  PhysicalBackend& backend() const noexcept { return backend_; }
  // The backend's counters (give each arena its own backend to count one arena alone).
  CallCounts calls() const noexcept { return backend_.calls(); }

 private:
  void grow(std::size_t bytes);
  void unmap_from(std::size_t first_chunk);
  void rollback_to(std::size_t chunks) noexcept;
  [[noreturn]] void throw_oom(std::size_t requested, const char* why);

  PhysicalBackend& backend_;
  ArenaOptions options_;
  StreamUsers users_;
  std::size_t chunk_ = 0;
  void* base_ = nullptr;
  std::size_t reserved_ = 0;
  std::size_t mapped_ = 0;
  std::vector<ChunkHandle> chunks_;  // chunks_[i] is mapped at base + i * chunk
};

}  // namespace memplan::arena
