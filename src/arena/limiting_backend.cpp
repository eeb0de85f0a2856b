#include "memplan/arena/limiting_backend.hpp"

#include "bytes.hpp"
#include "memplan/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace memplan::arena {

std::size_t LimitingBackend::used_bytes() const {
  std::lock_guard lock(mutex_);
  return used_;
}

std::uint64_t LimitingBackend::refusals() const {
  std::lock_guard lock(mutex_);
  return refusals_;
}

std::size_t LimitingBackend::peak_used_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_used_;
}

// The size map is keyed by the upstream's handle, and upstreams recycle handle numbers at once (a
// memfd is a file descriptor). So a handle's entry goes before the upstream releases it: from then
// on another thread may be handed the same number, and its entry must find the slot empty.
ChunkHandle LimitingBackend::do_create_chunk(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes > limit_ - std::min(used_, limit_)) {
    ++refusals_;
    throw LimitReached(fmt::format("limit of {} reached: {} in use, {} more asked",
                                   detail::pretty_bytes(limit_), detail::pretty_bytes(used_),
                                   detail::pretty_bytes(bytes)));
  }
  const ChunkHandle chunk = upstream().create_chunk(bytes);
  [[maybe_unused]] const bool fresh = sizes_.emplace(chunk, bytes).second;
  assert(fresh && "the upstream handed out a handle that is still live");
  used_ += bytes;
  peak_used_ = std::max(peak_used_, used_);
  return chunk;
}

void LimitingBackend::do_release_chunk(ChunkHandle chunk) {
  {
    std::lock_guard lock(mutex_);
    if (const auto it = sizes_.find(chunk); it != sizes_.end()) {
      used_ -= it->second;
      sizes_.erase(it);
    }
  }
  // Credited even if this fails: the arena forgets a chunk whose release failed, so nothing would
  // ever release it again, and its number may come back from the upstream.
  upstream().release_chunk(chunk);
}

std::size_t LimitingBackend::do_free_bytes() {
  const std::size_t upstream_free = upstream().free_bytes();
  std::lock_guard lock(mutex_);
  return std::min(upstream_free, limit_ - std::min(used_, limit_));
}

}  // namespace memplan::arena
