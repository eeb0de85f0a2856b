// An adaptor that caps the physical bytes held in chunks: create_chunk past the limit throws
// LimitReached (an OutOfMemory), as the driver would when the card is full. It gives "out of
// memory" a deterministic trigger on any machine, and lets a runtime budget a device it shares
// (the compiler's memory budget is one). It also keeps the high-water mark of the bytes held.
#pragma once

#include "memplan/arena/forwarding_backend.hpp"
#include "memplan/error.hpp"

#include <mutex>
#include <unordered_map>

namespace memplan::arena {

// The limit, not the device, refused the memory: the message names the limit, the bytes in use
// and the bytes asked.
class LimitReached : public OutOfMemory {
 public:
  using OutOfMemory::OutOfMemory;
};

class LimitingBackend final : public ForwardingBackend {
 public:
  LimitingBackend(PhysicalBackend& upstream, std::size_t limit_bytes)
      : ForwardingBackend(upstream), limit_(limit_bytes) {}

  std::size_t limit_bytes() const noexcept { return limit_; }
  std::size_t used_bytes() const;
  std::size_t peak_used_bytes() const;  // the most held at once
  // Chunks refused so far. Callers above an arena see the arena's own OutOfMemory (it rolls back
  // and rethrows with its context); a count that moved says the limit was the cause.
  std::uint64_t refusals() const;

 private:
  ChunkHandle do_create_chunk(std::size_t bytes) override;
  void do_release_chunk(ChunkHandle chunk) override;
  std::size_t do_free_bytes() override;

  std::size_t limit_;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;
  std::size_t peak_used_ = 0;
  std::uint64_t refusals_ = 0;
  std::unordered_map<ChunkHandle, std::size_t> sizes_;
};

}  // namespace memplan::arena
