// The base of backend adaptors: every call goes to the upstream backend unchanged, so an adaptor
// overrides only the calls it is about (LimitingBackend: three), as RMM's adaptors do. The
// upstream's counters count what reaches it; the adaptor's own count what reached the adaptor.
#pragma once

#include "memplan/arena/backend.hpp"

namespace memplan::arena {

class ForwardingBackend : public PhysicalBackend {
 public:
  explicit ForwardingBackend(PhysicalBackend& upstream) : upstream_(upstream) {}
  PhysicalBackend& upstream() const noexcept { return upstream_; }

 protected:
  std::size_t do_granularity() const noexcept override { return upstream_.granularity(); }
  std::string_view do_name() const noexcept override { return upstream_.name(); }
  void* do_reserve_va(std::size_t bytes) override { return upstream_.reserve_va(bytes); }
  void do_free_va(void* va, std::size_t bytes) override { upstream_.free_va(va, bytes); }
  ChunkHandle do_create_chunk(std::size_t bytes) override { return upstream_.create_chunk(bytes); }
  void do_release_chunk(ChunkHandle chunk) override { upstream_.release_chunk(chunk); }
  void do_map(void* va, std::size_t bytes, ChunkHandle chunk) override {
    upstream_.map(va, bytes, chunk);
  }
  void do_set_access(void* va, std::size_t bytes) override { upstream_.set_access(va, bytes); }
  void do_unmap(void* va, std::size_t bytes) override { upstream_.unmap(va, bytes); }
  FenceHandle do_create_fence(StreamRef stream) override { return upstream_.create_fence(stream); }
  void do_record_fence(FenceHandle fence, StreamRef stream) override {
    upstream_.record_fence(fence, stream);
  }
  void do_wait_fence(FenceHandle fence) override { upstream_.wait_fence(fence); }
  void do_destroy_fence(FenceHandle fence) override { upstream_.destroy_fence(fence); }
  bool do_fence_passed(FenceHandle fence) override { return upstream_.fence_passed(fence); }
  std::size_t do_free_bytes() override { return upstream_.free_bytes(); }
  void do_fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) override {
    upstream_.fill(va, bytes, pattern, stream);
  }

 private:
  PhysicalBackend& upstream_;
};

}  // namespace memplan::arena
