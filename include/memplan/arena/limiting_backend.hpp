// An adaptor that caps the physical bytes held in chunks: create_chunk past the limit throws
// OutOfMemory, as the driver would when the card is full. It gives "out of memory" a
// deterministic trigger on any machine, and lets a runtime budget a device it shares.
#pragma once

#include "memplan/arena/backend.hpp"

#include <mutex>
#include <unordered_map>

namespace memplan::arena {

class LimitingBackend final : public PhysicalBackend {
 public:
  LimitingBackend(PhysicalBackend& upstream, std::size_t limit_bytes)
      : upstream_(upstream), limit_(limit_bytes) {}

  std::size_t limit_bytes() const noexcept { return limit_; }
  std::size_t used_bytes() const;

 private:
  std::size_t do_granularity() const noexcept override { return upstream_.granularity(); }
  std::string_view do_name() const noexcept override { return upstream_.name(); }
  void* do_reserve_va(std::size_t bytes) override { return upstream_.reserve_va(bytes); }
  void do_free_va(void* va, std::size_t bytes) override { upstream_.free_va(va, bytes); }
  ChunkHandle do_create_chunk(std::size_t bytes) override;
  void do_release_chunk(ChunkHandle chunk) override;
  void do_map(void* va, std::size_t bytes, ChunkHandle chunk) override { upstream_.map(va, bytes, chunk); }
  void do_set_access(void* va, std::size_t bytes) override { upstream_.set_access(va, bytes); }
  void do_unmap(void* va, std::size_t bytes) override { upstream_.unmap(va, bytes); }
  FenceHandle do_create_fence(StreamRef stream) override { return upstream_.create_fence(stream); }
  void do_record_fence(FenceHandle fence, StreamRef stream) override { upstream_.record_fence(fence, stream); }
  void do_wait_fence(FenceHandle fence) override { upstream_.wait_fence(fence); }
  void do_destroy_fence(FenceHandle fence) override { upstream_.destroy_fence(fence); }
  bool do_fence_passed(FenceHandle fence) override { return upstream_.fence_passed(fence); }
  std::size_t do_free_bytes() override;
  void do_fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) override {
    upstream_.fill(va, bytes, pattern, stream);
  }

  PhysicalBackend& upstream_;
  std::size_t limit_;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;
  std::unordered_map<ChunkHandle, std::size_t> sizes_;
};

}  // namespace memplan::arena
