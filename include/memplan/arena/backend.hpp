// The physical-memory backend: the one small interface the arena needs (reserve VA, create a
// physical chunk, map, set access, unmap, release, free VA, stream fences, and a stream-ordered
// fill for check mode's poison), in the manner of RMM's device_memory_resource. Public calls are
// non-virtual: they count the call, then dispatch to the private do_* hook, so no implementation
// can forget to count.
//
// Thread safety: the counters are atomic and the backends shipped here keep no other mutable
// state (the limiting adaptor locks its own), so one backend may serve several threads.
#pragma once

#include "memplan/arena/call_counts.hpp"
#include "memplan/types.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memplan::arena {

// A physical chunk: a CUmemGenericAllocationHandle, or a memfd on the host.
using ChunkHandle = std::uint64_t;
// A fence on one stream: a CUevent, or a host-stream ticket.
using FenceHandle = std::uint64_t;

class PhysicalBackend {
 public:
  PhysicalBackend() = default;
  PhysicalBackend(const PhysicalBackend&) = delete;
  PhysicalBackend& operator=(const PhysicalBackend&) = delete;
  virtual ~PhysicalBackend() = default;

  // Alignment of every address and size given to map/unmap; read once at construction, not a call.
  std::size_t granularity() const noexcept { return do_granularity(); }
  std::string_view name() const noexcept { return do_name(); }

  // Reserves `bytes` of address space, inaccessible until mapped.
  void* reserve_va(std::size_t bytes) {
    count(Call::ReserveVa);
    return do_reserve_va(bytes);
  }
  void free_va(void* va, std::size_t bytes) {
    count(Call::FreeVa);
    do_free_va(va, bytes);
  }
  // Physical memory of `bytes`; throws OutOfMemory when there is none.
  ChunkHandle create_chunk(std::size_t bytes) {
    count(Call::CreateChunk);
    return do_create_chunk(bytes);
  }
  // Drops the handle; the memory is freed once no mapping refers to it (as cuMemRelease).
  void release_chunk(ChunkHandle chunk) {
    count(Call::ReleaseChunk);
    do_release_chunk(chunk);
  }
  // Maps the whole chunk at `va`; not accessible until set_access. One chunk may be mapped at
  // several addresses, which then alias.
  void map(void* va, std::size_t bytes, ChunkHandle chunk) {
    count(Call::Map);
    do_map(va, bytes, chunk);
  }
  // Makes a mapped range (possibly spanning several chunks) readable and writable.
  void set_access(void* va, std::size_t bytes) {
    count(Call::SetAccess);
    do_set_access(va, bytes);
  }
  // Unmaps a mapped range (possibly spanning several chunks); the addresses stay reserved.
  void unmap(void* va, std::size_t bytes) {
    count(Call::Unmap);
    do_unmap(va, bytes);
  }

  FenceHandle create_fence(StreamRef stream) {
    count(Call::CreateFence);
    return do_create_fence(stream);
  }
  // Marks the point, in `stream`, after all work queued so far.
  void record_fence(FenceHandle fence, StreamRef stream) {
    count(Call::RecordFence);
    do_record_fence(fence, stream);
  }
  // Blocks the host until the work before the recorded point is complete.
  void wait_fence(FenceHandle fence) {
    count(Call::WaitFence);
    do_wait_fence(fence);
  }
  // Whether the work before the recorded point is complete, without blocking (a fence never
  // recorded has passed).
  bool fence_passed(FenceHandle fence) {
    count(Call::QueryFence);
    return do_fence_passed(fence);
  }
  void destroy_fence(FenceHandle fence) {
    count(Call::DestroyFence);
    do_destroy_fence(fence);
  }

  // Physical bytes still free where chunks come from (for error messages).
  std::size_t free_bytes() {
    count(Call::QueryFree);
    return do_free_bytes();
  }

  // Writes `pattern` to every 32-bit word of [va, va + bytes) in the order of `stream`: after the
  // work queued there so far, before the work queued later (cuMemsetD32Async; inside a CUDA stream
  // capture it becomes a memset node). The range must be mapped and accessible until it has run.
  // `va` and `bytes` must be multiples of 4 (InvalidArgument otherwise).
  void fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream);

  CallCounts calls() const noexcept {
    CallCounts out;
    for (std::size_t i = 0; i < kCallKinds; ++i)
      out.n[i] = counts_[i].load(std::memory_order_relaxed);
    return out;
  }

 private:
  void count(Call call) noexcept {
    counts_[static_cast<std::size_t>(call)].fetch_add(1, std::memory_order_relaxed);
  }

  virtual std::size_t do_granularity() const noexcept = 0;
  virtual std::string_view do_name() const noexcept = 0;
  virtual void* do_reserve_va(std::size_t bytes) = 0;
  virtual void do_free_va(void* va, std::size_t bytes) = 0;
  virtual ChunkHandle do_create_chunk(std::size_t bytes) = 0;
  virtual void do_release_chunk(ChunkHandle chunk) = 0;
  virtual void do_map(void* va, std::size_t bytes, ChunkHandle chunk) = 0;
  virtual void do_set_access(void* va, std::size_t bytes) = 0;
  virtual void do_unmap(void* va, std::size_t bytes) = 0;
  virtual FenceHandle do_create_fence(StreamRef stream) = 0;
  virtual void do_record_fence(FenceHandle fence, StreamRef stream) = 0;
  virtual void do_wait_fence(FenceHandle fence) = 0;
  virtual void do_destroy_fence(FenceHandle fence) = 0;
  virtual bool do_fence_passed(FenceHandle fence) = 0;
  virtual std::size_t do_free_bytes() = 0;
  virtual void do_fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) = 0;

  std::array<std::atomic<std::uint64_t>, kCallKinds> counts_{};
};

}  // namespace memplan::arena
