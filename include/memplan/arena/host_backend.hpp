// The host backend: the VMM model on plain Linux. mmap(PROT_NONE) reserves addresses, a memfd is a
// physical chunk, mmap(MAP_FIXED|MAP_SHARED) maps it and mprotect grants access. Mapping one memfd
// at two addresses aliases exactly as two cuMemMap of one handle do, so every arena behaviour is
// tested on machines without a GPU, and CPU runtimes can use the arena too.
#pragma once

#include "memplan/arena/backend.hpp"

namespace memplan::arena {

struct HostBackendOptions {
  // Allocate the chunk's pages at create time (fallocate), as cuMemCreate does; when false, pages
  // appear on first touch and a host out of memory shows up as SIGBUS instead of OutOfMemory.
  bool commit = true;
};

// Fences and fills: a StreamRef is a HostStream* (or nullptr: nothing queued, always complete; a
// fill there happens at once).
class HostBackend final : public PhysicalBackend {
 public:
  explicit HostBackend(HostBackendOptions options = {});

 private:
  std::size_t do_granularity() const noexcept override { return page_; }
  std::string_view do_name() const noexcept override { return "host"; }
  void* do_reserve_va(std::size_t bytes) override;
  void do_free_va(void* va, std::size_t bytes) override;
  ChunkHandle do_create_chunk(std::size_t bytes) override;
  void do_release_chunk(ChunkHandle chunk) override;
  void do_map(void* va, std::size_t bytes, ChunkHandle chunk) override;
  void do_set_access(void* va, std::size_t bytes) override;
  void do_unmap(void* va, std::size_t bytes) override;
  FenceHandle do_create_fence(StreamRef stream) override;
  void do_record_fence(FenceHandle fence, StreamRef stream) override;
  void do_wait_fence(FenceHandle fence) override;
  void do_destroy_fence(FenceHandle fence) override;
  bool do_fence_passed(FenceHandle fence) override;
  std::size_t do_free_bytes() override;
  void do_fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) override;

  HostBackendOptions options_;
  std::size_t page_;
};

}  // namespace memplan::arena
