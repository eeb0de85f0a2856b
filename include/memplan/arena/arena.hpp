// The arena: one range of virtual addresses reserved once, backed by physical chunks mapped where
// they are needed - any set of chunk-sized slots, usually one run from the base. base() never
// moves, so pointers (and CUDA Graphs captured over them) stay valid. trim() and release() unmap
// chunks but keep the addresses; ensure_mapped() maps fresh chunks back at the same place (their
// old bytes are gone). remap() moves memory between slots without new physical memory where it
// can: a chunk leaving the kept set is mapped again at a slot entering it (the runtime moves its
// plans away from a rogue this way, paying for the rogue's chunk only).
//
// Unmapping is stream-safe: it first waits for the streams registered with add_user(), one fence
// each. ensure_mapped() on a range mapped by the last growth makes no backend call at all.
//
// A slot may borrow a chunk of another arena (borrow()): the persistent pool lends the planned
// arena the chunk its last bytes live in, so that the two do not each round up to a whole chunk.
// Such a slot maps the borrowed chunk whenever it is mapped, never releases it and never gives it
// to another slot; mapped_bytes() counts only the arena's own chunks.
//
// Thread safety: none inside; an arena belongs to one owner (the runtime's step thread) and is
// externally synchronised. The backend it uses may be shared.
#pragma once

#include "memplan/arena/backend.hpp"
#include "memplan/arena/stream_users.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace memplan::arena {

inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kGiB = std::size_t{1} << 30;
// More address space than any device has: a larger request is a bug (a negative size, say).
inline constexpr std::size_t kMaxReserveBytes = std::size_t{1} << 48;

// A range of the arena, as offsets from base().
struct ByteRange {
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

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

  // Maps fresh chunks at every unmapped slot of [0, bytes), or of [offset, offset + bytes). On
  // failure nothing new stays mapped and OutOfMemory names requested, mapped, reserved and free
  // bytes.
  void ensure_mapped(std::size_t bytes) { ensure_mapped(0, bytes); }
  void ensure_mapped(std::size_t offset, std::size_t bytes) {
    if (offset < covered_.offset || bytes > covered_.bytes ||
        offset - covered_.offset > covered_.bytes - bytes) {
      const ByteRange range{offset, bytes};
      map_slots({&range, 1}, /*reuse_others=*/false);
    }
  }
  // Unmaps (after waiting for the users) every chunk wholly above `keep_bytes`.
  void trim(std::size_t keep_bytes) {
    const ByteRange keep{0, keep_bytes};
    keep_only({&keep, 1});
  }
  // Unmaps (after waiting for the users) every chunk that touches none of `keep`.
  void keep_only(std::span<const ByteRange> keep);
  // Leaves exactly the chunks touching `keep` mapped. Slots of `keep` not yet mapped take the
  // physical chunks of slots outside it first (mapped at both places for a moment, so no bytes
  // are copied and no new memory is needed), fresh chunks only for the rest; then the slots
  // outside `keep` are unmapped. On failure the arena is as before.
  void remap(std::span<const ByteRange> keep) {
    map_slots(keep, /*reuse_others=*/true);
    keep_only(keep);
  }
  // Unmaps all physical memory; the addresses stay reserved.
  void release() { keep_only({}); }

  // The physical chunk mapped at the slot holding `offset` (InvalidArgument when none is).
  ChunkHandle chunk_at(std::size_t offset) const;
  // From now on the slot holding `offset` maps `chunk`, a chunk of another arena of the same chunk
  // size, whenever it is mapped: at once if it is mapped now (its own chunk goes, after waiting
  // for the users), else at the next ensure_mapped() or remap() that wants it. The owner must
  // keep `chunk` mapped (so alive) until end_borrow(); which bytes of it are whose is the
  // callers' business. One chunk per slot: a slot that borrows already throws InvalidState.
  void borrow(std::size_t offset, ChunkHandle chunk);
  // Unmaps the slot holding `offset` if it is mapped (after waiting for the users; the chunk is
  // not released) and stops borrowing there. No-op for a slot that does not borrow.
  void end_borrow(std::size_t offset);
  // Whether the slot holding `offset` borrows a chunk.
  bool borrows(std::size_t offset) const noexcept { return borrowed_.contains(offset / chunk_); }

  // Streams whose queued work may touch this arena; unmapping waits for them.
  void add_user(StreamRef stream) { users_.add(stream); }
  void remove_user(StreamRef stream) { users_.remove(stream); }
  const StreamUsers& users() const noexcept { return users_; }

  void* base() const noexcept { return base_; }
  void* address(std::size_t offset) const noexcept {
    return static_cast<std::byte*>(base_) + offset;
  }
  bool contains(const void* p) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const auto b = reinterpret_cast<std::uintptr_t>(base_);
    return a >= b && a - b < reserved_;
  }
  // The arena's own physical memory mapped: borrowed chunks are their owner's.
  std::size_t mapped_bytes() const noexcept { return mapped_; }
  std::size_t reserved_bytes() const noexcept { return reserved_; }
  std::size_t chunk_bytes() const noexcept { return chunk_; }
  // Mapped slots, borrowed ones included.
  std::size_t mapped_chunks() const noexcept { return slots_.size(); }
  // Whether the chunk holding `offset` is mapped.
  bool is_mapped(std::size_t offset) const noexcept { return slots_.contains(offset / chunk_); }
  // Whether every chunk touching [offset, offset + bytes) is mapped: no backend call, one test
  // inside the range of the last growth, else a walk over the range's chunks.
  bool mapped_throughout(std::size_t offset, std::size_t bytes) const noexcept;
  const std::string& name() const noexcept { return options_.name; }

  PhysicalBackend& backend() const noexcept { return backend_; }
  // The backend's counters (give each arena its own backend to count one arena alone).
  CallCounts calls() const noexcept { return backend_.calls(); }

 private:
  void map_slots(std::span<const ByteRange> ranges, bool reuse_others);
  void unmap_slots(const std::vector<std::size_t>& slots);
  void rollback(const std::vector<std::size_t>& slots) noexcept;
  void count_mapped() noexcept;
  [[noreturn]] void throw_oom(std::size_t requested, const char* why);

  PhysicalBackend& backend_;
  ArenaOptions options_;
  StreamUsers users_;
  std::size_t chunk_ = 0;
  void* base_ = nullptr;
  std::size_t reserved_ = 0;
  std::size_t mapped_ = 0;
  std::map<std::size_t, ChunkHandle> slots_;       // slot i (at base + i * chunk) -> its chunk
  std::unordered_map<ChunkHandle, int> mappings_;  // how many slots map each own chunk
  std::map<std::size_t, ChunkHandle> borrowed_;    // slot -> another arena's chunk (borrow())
  ByteRange covered_;  // mapped by the last growth: ensure_mapped inside it is a no-op
};

}  // namespace memplan::arena
