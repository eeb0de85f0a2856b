// An adaptor that logs every backend call (with sizes and addresses) through memplan::logger() at
// debug level, then forwards it upstream. Statistics live in the interface's counters; logging is
// opt-in, as in RMM's logging_resource_adaptor.
#pragma once

#include "memplan/arena/forwarding_backend.hpp"

namespace memplan::arena {

// Every call is logged, so every call is overridden; the base forwards granularity and name.
class LoggingBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;

 private:
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
};

}  // namespace memplan::arena
