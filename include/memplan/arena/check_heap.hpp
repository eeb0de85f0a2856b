// The check heap: memory for debugging runs, where a buffer used after its free shows poison
// instead of another buffer's data, and an access outside any buffer faults.
//
// One large range of addresses is reserved once and consumed from the bottom up, never reused.
// Each allocation gets pages of its own: a chunk of its size rounded up to the backend's
// granularity, mapped at fresh addresses, with the buffer placed at the end of those pages (within
// its alignment) and, with guard gaps, one granule of never-mapped addresses between neighbours,
// so running off either end faults. On hand-out and on free the pages can be filled with a
// pattern (the free's fill on the freeing stream). A free records a fence on every user stream and
// keeps the pages mapped, poisoned, until all those fences have passed: queued work on a user
// stream that still reads the buffer sees the poison. Only then are the pages unmapped and the
// chunk released (checked without blocking at every later allocate/deallocate, and waited for in
// drain() and the destructor); from then on any access to those addresses faults.
//
// Costs: every allocation makes three backend calls (create, map, set access) and every release
// two (unmap, release) plus a fence per user stream; physical memory is never shared between
// buffers. Meant for debugging runs, not for production.
//
// Thread safety: none inside, like Arena; the owner serialises calls.
#pragma once

#include "memplan/arena/backend.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memplan::arena {

struct CheckHeapOptions {
  // Address space consumed by allocations (and their gaps) over the heap's whole life.
  std::size_t reserve_bytes = std::size_t{1} << 40;
  // One granule of unmapped addresses before every allocation's pages.
  bool guard_gaps = true;
  // Written to an allocation's pages when handed out (on the allocating stream) and when freed
  // (on the freeing stream).
  std::optional<std::uint32_t> fill_on_allocate;
  std::optional<std::uint32_t> fill_on_free;
  std::string name = "check heap";  // starts its logs and errors
};

// What an address of the heap's range is now.
enum class CheckRegion : std::uint8_t {
  Outside,   // not in the heap's reservation
  Gap,       // between allocations' pages (a guard gap or alignment padding): never mapped
  Unused,    // above every allocation made so far: never mapped
  Live,      // the pages of a live allocation
  Freed,     // the pages of a freed allocation, still mapped (poisoned) until its streams pass
  Released,  // the pages of a freed allocation, unmapped: an access faults
};
std::string_view to_string(CheckRegion region) noexcept;

struct CheckHeapStats {
  std::size_t allocations = 0;  // made so far
  std::size_t live = 0;         // not freed
  std::size_t live_bytes = 0;   // pages mapped for live allocations
  std::size_t pending = 0;      // freed, pages mapped until their streams pass the free
  std::size_t pending_bytes = 0;
  std::size_t released = 0;            // freed and unmapped
  std::size_t address_bytes_used = 0;  // of the reservation, gaps included; never reused
  std::size_t reserved_bytes = 0;
};

class CheckHeap {
 public:
  CheckHeap(PhysicalBackend& backend, CheckHeapOptions options);
  CheckHeap(const CheckHeap&) = delete;
  CheckHeap& operator=(const CheckHeap&) = delete;
  // Waits for every user stream, unmaps and releases everything, frees the addresses. Errors are
  // logged.
  ~CheckHeap();

  // `bytes` >= 1 at fresh addresses aligned to `alignment` (a power of two); `stream` becomes a
  // user and gets the hand-out fill. OutOfMemory when the reservation is used up (it is never
  // reused) or the backend has no memory left even after waiting for the pending frees; either
  // leaves the heap usable.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment, StreamRef stream);
  // Fills the pages (fill_on_free) on `stream`, records a fence on every user stream (`stream`
  // becomes one) and leaves the pages mapped until those fences pass. A pointer that is not the
  // start of a live allocation throws ForeignPointer, one already freed DoubleFree; neither
  // changes anything.
  void deallocate(void* p, StreamRef stream);

  // Streams whose work may touch this heap's memory: every free waits for all of them.
  void add_user(StreamRef stream);

  // Unmaps and releases the freed allocations whose fences have all passed; never blocks.
  // Returns how many were released.
  std::size_t collect();
  // Waits for the fences of every pending free, then releases them all.
  void drain();

  [[nodiscard]] CheckRegion region_of(const void* p) const noexcept;
  // The pointer allocate() returned for the allocation whose pages hold `p` (live or not), or
  // nullptr when no allocation's pages do.
  [[nodiscard]] void* allocation_at(const void* p) const noexcept;
  [[nodiscard]] bool contains(const void* p) const noexcept;
  [[nodiscard]] void* base() const noexcept { return reinterpret_cast<void*>(base_); }
  [[nodiscard]] CheckHeapStats stats() const noexcept;
  [[nodiscard]] const std::string& name() const noexcept { return options_.name; }
  [[nodiscard]] PhysicalBackend& backend() const noexcept { return backend_; }

 private:
  enum class State : std::uint8_t { Live, Freed, Released };
  struct Slot {
    std::uintptr_t begin = 0;  // the allocation's pages: [begin, begin + span)
    std::size_t span = 0;
    std::uintptr_t user = 0;  // what allocate() returned
    ChunkHandle chunk = 0;
    State state = State::Live;
  };
  struct PendingFree {
    std::size_t slot = 0;
    std::vector<FenceHandle> fences;  // one per user stream at the free
    std::size_t passed = 0;           // fences[0, passed) are known to have passed
  };

  [[nodiscard]] const Slot* slot_at(std::uintptr_t a) const noexcept;
  ChunkHandle create_chunk_or_drain(std::size_t bytes, std::size_t span);
  void release(Slot& slot);
  void release_front();
  FenceHandle take_fence(StreamRef stream);
  [[noreturn]] void throw_oom(std::size_t bytes, std::size_t span, const char* why);

  PhysicalBackend& backend_;
  CheckHeapOptions options_;
  std::size_t granularity_ = 0;
  std::uintptr_t base_ = 0;
  std::size_t reserved_ = 0;
  std::uintptr_t next_ = 0;      // where the next allocation's pages may start
  std::uintptr_t used_end_ = 0;  // end of the last allocation's pages
  std::vector<Slot> slots_;      // in address order: allocations only move upwards
  std::deque<PendingFree> pending_;
  std::vector<StreamRef> users_;
  std::vector<FenceHandle> spare_fences_;
  std::size_t live_ = 0;
  std::size_t live_bytes_ = 0;
  std::size_t pending_bytes_ = 0;
  std::size_t released_ = 0;
};

}  // namespace memplan::arena
