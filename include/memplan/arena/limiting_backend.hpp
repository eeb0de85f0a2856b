// An adaptor that caps the physical bytes held in chunks: create_chunk past the limit throws
// OutOfMemory, as the driver would when the card is full. It gives "out of memory" a
// deterministic trigger on any machine, and lets a runtime budget a device it shares.
#pragma once

#include "memplan/arena/forwarding_backend.hpp"

#include <mutex>
#include <unordered_map>

namespace memplan::arena {

class LimitingBackend final : public ForwardingBackend {
 public:
  LimitingBackend(PhysicalBackend& upstream, std::size_t limit_bytes)
      : ForwardingBackend(upstream), limit_(limit_bytes) {}

  std::size_t limit_bytes() const noexcept { return limit_; }
  std::size_t used_bytes() const;

 private:
  ChunkHandle do_create_chunk(std::size_t bytes) override;
  void do_release_chunk(ChunkHandle chunk) override;
  std::size_t do_free_bytes() override;

  std::size_t limit_;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;
  std::unordered_map<ChunkHandle, std::size_t> sizes_;
};

}  // namespace memplan::arena
